package metrics

import (
	"net/http"

	"github.com/permafrost-dev/permafrost/internal/api"
	rollup "github.com/permafrost-dev/permafrost/internal/metrics"
)

// tpsChain resolves an avg_tps chainId: an indexed EVM chain by EVM chain id,
// blockchain id or key, or a primary-network chain by blockchain id or alias
// (p-chain, x-chain, c-chain).
func (h *handlers) tpsChain(id string) (api.ChainRef, error) {
	if c, err := h.d.Network.EVMChain(id); err == nil {
		return c, nil
	}
	if c, err := h.d.Network.Blockchain(id); err == nil {
		return c, nil
	}
	return api.ChainRef{}, api.NotFound("chain %q is not indexed by this server (use an EVM chain id, a blockchain id, or p-chain, x-chain, c-chain)", short(id))
}

// avgTPS answers GET /v1/avg_tps/{chainId}: the chain's average transactions
// per second per interval (timeInterval hour, day (default), week, month),
// newest first. Each point is a whole interval (0:00 UTC of the hour, day,
// Monday, or 1st of the month); startTimestamp and endTimestamp select the
// intervals that overlap [startTimestamp, endTimestamp]. The series runs
// from the interval of the chain's oldest indexed block to that of its newest
// indexed block; value = transactions in the interval / seconds in the
// interval, except for the interval holding the newest indexed block, which is
// divided by the seconds from its start to that block's time (at least 1):
// the index's tip, never the wall clock, so a replayed index answers the same.
// lastRun is when the chain's rollups (so the newest point) were last written.
func (h *handlers) avgTPS(r *http.Request) (any, error) {
	ctx := r.Context()
	p := api.NewParams(r)
	q := readSeries(p, "day", tpsDefaultPageSize, tpsMaxPageSize)
	if err := p.Err(); err != nil {
		return nil, err
	}
	chain, err := h.tpsChain(r.PathValue("chainId"))
	if err != nil {
		return nil, err
	}
	if err := h.continueSeries(ctx, p, RouteAvgTPS, &q, chain.Key, ""); err != nil {
		return nil, err
	}

	pts, tok, span, err := h.seriesPage(ctx, RouteAvgTPS, q, func(span rollup.ChainSpan, lo, from int64) ([]rollup.Point, int64, bool, error) {
		return rollup.TPSPage(ctx, h.d.DB, chain.Key, q.Iv, span, lo, from, q.Size)
	})
	if err != nil {
		return nil, err
	}
	return &TPSResponse{Results: pts, Status: http.StatusOK, LastRun: span.UpdatedAt, NextPageToken: tok}, nil
}
