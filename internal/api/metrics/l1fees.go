package metrics

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"

	"github.com/permafrost-dev/permafrost/internal/api"
	rollup "github.com/permafrost-dev/permafrost/internal/metrics"
)

// The L1 validator fee routes (getMetricsBySubnetId, getMetricsByValidationId,
// getMetricsByNodeId, getTotalL1ValidatorMetrics).
const (
	RouteSubnetFees     = "GET /v2/subnet/{subnetId}/metrics/{metric}"
	RouteValidationFees = "GET /v2/validation/{l1ValidationId}/metrics/{metric}"
	RouteNodeFees       = "GET /v2/validator/{nodeId}/metrics/{metric}"
	RouteTotalFees      = "GET /v2/validators/metrics/{metric}"
)

// feeMetric is one metric name of the fee routes' enums.
type feeMetric struct {
	name  string
	value rollup.FeeValue
}

// The document's metric enums, per route.
var (
	subnetFeeMetrics = []feeMetric{{"perSubnetDailyFeesPaid", rollup.FeesDaily},
		{"perSubnetCumulativeFeesPaid", rollup.FeesCumulative}, {"perSubnetPayingValidators", rollup.PayingDaily}}
	validationFeeMetrics = []feeMetric{{"validationFeesDaily", rollup.FeesDaily},
		{"validationCumulativeFeesDaily", rollup.FeesCumulative}}
	nodeFeeMetrics = []feeMetric{{"perNodeDailyFeesPaid", rollup.FeesDaily},
		{"perNodeCumulativeFeesPaid", rollup.FeesCumulative}}
	totalFeeMetrics = []feeMetric{{"totalValidatorFeesDaily", rollup.FeesDaily},
		{"totalCumulativeFeesDaily", rollup.FeesCumulative}, {"totalPayingValidatorsDaily", rollup.PayingDaily}}
)

// feeScopeParam is the path parameter naming a fee scope's key.
var feeScopeParam = map[rollup.FeeScope]string{
	rollup.FeeSubnet: "subnetId", rollup.FeeValidation: "l1ValidationId", rollup.FeeNode: "nodeId",
}

// feeSeries answers the four L1 fee routes: a daily series, newest first,
// from the day the scope's first L1 validator started (a validation's
// start, a node's first validation, a subnet's conversion to an L1, the
// network's first conversion) to the day of the P-chain's newest indexed
// block, bounded by startTimestamp/endTimestamp. Fees are nAVAX of continuous
// fee paid (the balance decrease the P-chain charged), counted on the day of
// the block that charged them; paying validators are the validations that
// paid a fee that day. The document gives these routes no paging: the whole
// series is one answer.
func (h *handlers) feeSeries(r *http.Request, scope rollup.FeeScope, metrics []feeMetric) (any, error) {
	ctx := r.Context()
	p := api.NewParams(r)
	names := make([]string, len(metrics))
	for i, m := range metrics {
		names[i] = m.name
	}
	name := pathEnum(p, "metric", r.PathValue("metric"), names...)
	start, end := timeRange(p)
	key := ""
	if param, ok := feeScopeParam[scope]; ok {
		parse := func(v string) (string, error) {
			id, err := api.ParseCB58ID(v)
			return id.String(), err
		}
		if scope == rollup.FeeNode {
			parse = func(v string) (string, error) {
				id, err := api.ParseNodeID(v)
				return id.String(), err
			}
		}
		var err error
		if key, err = parse(r.PathValue(param)); err != nil {
			p.Fail("%s: %s", param, err.Error())
		}
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	var value rollup.FeeValue
	for _, m := range metrics {
		if m.name == name {
			value = m.value
		}
	}
	first, ok, err := h.feeStart(ctx, scope, key)
	if err != nil {
		return nil, err
	}
	resp := &SeriesResponse{Results: []ValuePoint{}}
	if !ok {
		return resp, nil
	}
	span, ok, err := rollup.LoadSpan(ctx, h.d.DB, "P")
	if err != nil || !ok {
		return resp, err
	}
	lo, hi, ok := seriesWindow(rollup.Day, first, span.TipTime, start, end)
	if !ok {
		return resp, nil
	}
	pts, err := rollup.FeeSeries(ctx, h.d.DB, scope, key, value, lo, hi)
	if err != nil {
		return nil, err
	}
	resp.Results = valuePoints(pts)
	return resp, nil
}

// feeStart is when a fee series starts (see feeSeries); ok is false for a
// known scope without L1 validators (a subnet not converted). A validation
// or node that never validated an L1, or an unknown subnet, is a 404.
func (h *handlers) feeStart(ctx context.Context, scope rollup.FeeScope, key string) (first int64, ok bool, err error) {
	var t sql.NullInt64
	var what string
	switch scope {
	case rollup.FeeValidation:
		what = "L1 validation " + key
		err = h.d.DB.QueryRowContext(ctx, `SELECT start_time FROM p_l1_validators WHERE validation_id = $1`, key).Scan(&t)
	case rollup.FeeNode:
		what = "L1 validator node " + key
		err = h.d.DB.QueryRowContext(ctx, `SELECT MIN(start_time) FROM p_l1_validators WHERE node_id = $1`, key).Scan(&t)
	case rollup.FeeSubnet:
		what = "subnet " + key
		var converted int64
		err = h.d.DB.QueryRowContext(ctx, `SELECT converted_height, converted_time FROM p_subnets WHERE subnet_id = $1`, key).Scan(&converted, &t)
		if err == nil && converted < 0 {
			return 0, false, nil
		}
	case rollup.FeeTotal:
		err = h.d.DB.QueryRowContext(ctx, `SELECT MIN(converted_time) FROM p_subnets WHERE converted_height >= 0`).Scan(&t)
		if err == nil && !t.Valid {
			return 0, false, nil
		}
	}
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !t.Valid) {
		return 0, false, api.NotFound("%s is not known on network %s", what, h.d.Network.Name)
	}
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", what, err)
	}
	return t.Int64, true, nil
}

func (h *handlers) subnetFees(r *http.Request) (any, error) {
	return h.feeSeries(r, rollup.FeeSubnet, subnetFeeMetrics)
}

func (h *handlers) validationFees(r *http.Request) (any, error) {
	return h.feeSeries(r, rollup.FeeValidation, validationFeeMetrics)
}

func (h *handlers) nodeFees(r *http.Request) (any, error) {
	return h.feeSeries(r, rollup.FeeNode, nodeFeeMetrics)
}

func (h *handlers) totalFees(r *http.Request) (any, error) {
	return h.feeSeries(r, rollup.FeeTotal, totalFeeMetrics)
}
