package metrics

import (
	"net/http"

	"github.com/permafrost-dev/permafrost/internal/api"
	rollup "github.com/permafrost-dev/permafrost/internal/metrics"
)

// tpsCursor is an avg_tps page token's stored state: the listing's query
// and where the next page starts.
type tpsCursor struct {
	Chain    string `json:"c"`
	Interval string `json:"i"`
	Start    int64  `json:"s"` // -1 when not given
	End      int64  `json:"e"` // -1 when not given
	Next     int64  `json:"n"` // start of the next (older) interval
}

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
	ivName := p.Enum("timeInterval", "day", rollup.Intervals...)
	start := p.Int("startTimestamp", -1, 0, maxTimestamp)
	end := p.Int("endTimestamp", -1, 0, maxTimestamp)
	size := p.PageSize(tpsDefaultPageSize, 1, tpsMaxPageSize)
	if start >= 0 && end >= 0 && end < start {
		p.Fail("endTimestamp (%d) must not be before startTimestamp (%d)", end, start)
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	chain, err := h.tpsChain(r.PathValue("chainId"))
	if err != nil {
		return nil, err
	}
	var cur tpsCursor
	found, err := h.d.Tokens.Load(ctx, p.String("pageToken"), RouteAvgTPS, &cur)
	if err != nil {
		return nil, err
	}
	if found {
		// The token carries its query; parameters repeated with it must agree.
		switch {
		case cur.Chain != chain.Key:
			return nil, errQueryChanged("chainId")
		case p.Has("timeInterval") && ivName != cur.Interval:
			return nil, errQueryChanged("timeInterval")
		case p.Has("startTimestamp") && start != cur.Start:
			return nil, errQueryChanged("startTimestamp")
		case p.Has("endTimestamp") && end != cur.End:
			return nil, errQueryChanged("endTimestamp")
		}
		ivName, start, end = cur.Interval, cur.Start, cur.End
	}
	iv, err := rollup.ParseInterval(ivName)
	if err != nil {
		return nil, api.BadRequest("timeInterval: " + err.Error())
	}

	resp := &TPSResponse{Results: []Point{}, Status: http.StatusOK}
	span, ok, err := rollup.LoadSpan(ctx, h.d.DB, chain.Key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return resp, nil // nothing indexed yet
	}
	resp.LastRun = span.UpdatedAt
	first, last := span.FirstTime, span.TipTime
	if start >= 0 && start > first {
		first = start
	}
	if end >= 0 && end < last {
		last = end
	}
	if first > last {
		return resp, nil
	}
	lo, from := iv.Floor(first), iv.Floor(last)
	if found {
		from = min(cur.Next, from)
	}
	pts, next, more, err := rollup.TPSPage(ctx, h.d.DB, chain.Key, iv, span, lo, from, size)
	if err != nil {
		return nil, err
	}
	for _, pt := range pts {
		resp.Results = append(resp.Results, Point{Timestamp: pt.Timestamp, Value: pt.Value})
	}
	if more {
		tok, err := h.d.Tokens.Save(ctx, RouteAvgTPS, tpsCursor{Chain: chain.Key, Interval: ivName, Start: start, End: end, Next: next})
		if err != nil {
			return nil, err
		}
		resp.NextPageToken = tok
	}
	return resp, nil
}
