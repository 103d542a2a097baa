package metrics

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"

	"github.com/ava-labs/avalanchego/utils/constants"

	"github.com/permafrost-dev/permafrost/internal/api"
	rollup "github.com/permafrost-dev/permafrost/internal/metrics"
)

// RouteStaking is the staking metrics route (getStakingMetrics).
const RouteStaking = "GET /v2/networks/{network}/metrics/{metric}"

// stakingCursor is a staking page token's stored state: the query and the
// day the next page starts at.
type stakingCursor struct {
	Subnet string `json:"s"`
	Metric string `json:"m"`
	Start  int64  `json:"a"` // -1 when not given
	End    int64  `json:"b"` // -1 when not given
	Next   int64  `json:"n"`
}

// staking answers GET /v2/networks/{network}/metrics/{metric}: a subnet's
// (subnetId, default the primary network) validator or delegator count or
// weight at the end of each UTC day, newest first, from the day of the
// P-chain's oldest indexed block to the day of its newest (the index's tip,
// never the wall clock). Validators are the P-chain's current validators
// (primary network, elastic and permissioned subnets) and an L1's registered
// L1 validators; weights are their sums (nAVAX where staked). The document
// has no timeInterval here: the points are days.
func (h *handlers) staking(r *http.Request) (any, error) {
	ctx := r.Context()
	p := api.NewParams(r)
	metric := pathEnum(p, "metric", r.PathValue("metric"), rollup.StakingMetrics...)
	start, end := timeRange(p)
	size := p.PageSize(v2DefaultPageSize, 1, v2MaxPageSize)
	subnet := constants.PrimaryNetworkID.String()
	if p.Has("subnetId") {
		id, err := api.ParseCB58ID(p.String("subnetId"))
		if err != nil {
			p.Fail("subnetId: %s", err.Error())
		}
		subnet = id.String()
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	if err := h.d.Network.CheckNetwork(r.PathValue("network")); err != nil {
		return nil, err
	}
	if err := h.knownSubnet(ctx, subnet); err != nil {
		return nil, err
	}
	var cur stakingCursor
	found, err := h.d.Tokens.Load(ctx, p.String("pageToken"), RouteStaking, &cur)
	if err != nil {
		return nil, err
	}
	if found {
		switch {
		case cur.Metric != metric:
			return nil, errQueryChanged("metric")
		case cur.Subnet != subnet && p.Has("subnetId"):
			return nil, errQueryChanged("subnetId")
		case p.Has("startTimestamp") && start != cur.Start:
			return nil, errQueryChanged("startTimestamp")
		case p.Has("endTimestamp") && end != cur.End:
			return nil, errQueryChanged("endTimestamp")
		}
		subnet, start, end = cur.Subnet, cur.Start, cur.End
	}
	resp := &SeriesResponse{Results: []ValuePoint{}}
	span, ok, err := rollup.LoadSpan(ctx, h.d.DB, "P")
	if err != nil || !ok {
		return resp, err
	}
	lo, from, ok := seriesWindow(rollup.Day, span.FirstTime, span.TipTime, start, end)
	if !ok {
		return resp, nil
	}
	if found {
		from = min(cur.Next, from)
	}
	pts, next, more, err := rollup.StakingPage(ctx, h.d.DB, subnet, metric, lo, from, size)
	if err != nil {
		return nil, err
	}
	resp.Results = valuePoints(pts)
	if more {
		if resp.NextPageToken, err = h.d.Tokens.Save(ctx, RouteStaking,
			stakingCursor{Subnet: subnet, Metric: metric, Start: start, End: end, Next: next}); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// knownSubnet is a 404 for a subnet the P-chain index does not know.
func (h *handlers) knownSubnet(ctx context.Context, subnet string) error {
	var one int
	err := h.d.DB.QueryRowContext(ctx, `SELECT 1 FROM p_subnets WHERE subnet_id = $1`, subnet).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return api.NotFound("subnet %s is not known on network %s", subnet, h.d.Network.Name)
	}
	if err != nil {
		return fmt.Errorf("read subnet %s: %w", subnet, err)
	}
	return nil
}
