package metrics

// The shared plumbing of the metrics service's time-series routes (avg_tps
// and the Metrics API v2 routes): one parser for timeInterval,
// startTimestamp, endTimestamp and pageSize, one page token format bound to
// its query, and one way to register a v2 route. A new series route:
//
//	q := readSeries(p, "day", v2DefaultPageSize, v2MaxPageSize) // collects 400s in p
//	if err := p.Err(); err != nil { ... }
//	// resolve the path (404s), then:
//	if err := h.continueSeries(ctx, p, route, &q, chain.Key, metric); err != nil { ... }
//	lo, from, ok := q.window(firstTime, tipTime)
//	pts, next, more, err := ...page of q.Size points from `from` down to `lo`...
//	tok, err := h.nextToken(ctx, route, q, next, more)
//
// Errors are the metrics shape (api.MessageArray: message an array of
// strings); an unknown or expired page token restarts from the first page,
// a token of another route, or repeated with other parameters, is a 400.

import (
	"context"

	"github.com/permafrost-dev/permafrost/internal/api"
	rollup "github.com/permafrost-dev/permafrost/internal/metrics"
)

// The v2 series routes' page sizes (the published document's pageSize:
// default 100, 1..2160).
const (
	v2DefaultPageSize = 100
	v2MaxPageSize     = rollup.MaxPoints
)

// seriesCursor is a series page token's stored state: the listing's query
// and where the next page starts. Its JSON is also avg_tps's token format.
type seriesCursor struct {
	Chain    string `json:"c"`
	Metric   string `json:"m,omitempty"`
	Interval string `json:"i"`
	Start    int64  `json:"s"` // -1 when not given
	End      int64  `json:"e"` // -1 when not given
	Next     int64  `json:"n"` // start of the next (older) interval
}

// seriesQuery is a parsed series request.
type seriesQuery struct {
	seriesCursor
	Size     int
	Iv       rollup.Interval
	found    bool     // continues a page token
	interval bool     // timeInterval was given
	keys     []string // the chains an aggregate series folds (nil: Chain alone)
}

// readSeries reads timeInterval (default defIv), startTimestamp,
// endTimestamp and pageSize, recording every problem in p.
func readSeries(p *api.Params, defIv string, defSize, maxSize int) seriesQuery {
	q := seriesQuery{
		seriesCursor: seriesCursor{
			Interval: p.Enum("timeInterval", defIv, rollup.Intervals...),
		},
		Size:     p.PageSize(defSize, 1, maxSize),
		interval: p.Has("timeInterval"),
	}
	q.Start, q.End = timeRange(p)
	return q
}

// continueSeries binds q to its chain and metric and, with a pageToken,
// continues the listing it was issued for: parameters repeated with the
// token must agree with the first page's.
func (h *handlers) continueSeries(ctx context.Context, p *api.Params, route string, q *seriesQuery, chain, metric string) error {
	var cur seriesCursor
	found, err := h.d.Tokens.Load(ctx, p.String("pageToken"), route, &cur)
	if err != nil {
		return err
	}
	if found {
		switch {
		case cur.Chain != chain:
			return errQueryChanged("chainId")
		case cur.Metric != metric:
			return errQueryChanged("metric")
		case q.interval && q.Interval != cur.Interval:
			return errQueryChanged("timeInterval")
		case p.Has("startTimestamp") && q.Start != cur.Start:
			return errQueryChanged("startTimestamp")
		case p.Has("endTimestamp") && q.End != cur.End:
			return errQueryChanged("endTimestamp")
		}
		q.seriesCursor, q.found = cur, true
	}
	q.Chain, q.Metric = chain, metric
	iv, err := rollup.ParseInterval(q.Interval)
	if err != nil {
		return api.BadRequest("timeInterval: " + err.Error())
	}
	q.Iv = iv
	return nil
}

// window returns the interval starts the page runs over, from (newest) down
// to lo, for a series whose data spans [first, last] (unix seconds): the
// intervals overlapping the requested range, continued where a token left
// off. ok is false when nothing is left.
func (q *seriesQuery) window(first, last int64) (lo, from int64, ok bool) {
	lo, from, ok = seriesWindow(q.Iv, first, last, q.Start, q.End)
	if !ok {
		return 0, 0, false
	}
	if q.found {
		from = min(q.Next, from)
	}
	return lo, from, from >= lo
}

// nextToken saves the cursor of the page after this one ("" when more is
// false).
func (h *handlers) nextToken(ctx context.Context, route string, q seriesQuery, next int64, more bool) (string, error) {
	if !more {
		return "", nil
	}
	c := q.seriesCursor
	c.Next = next
	return h.d.Tokens.Save(ctx, route, c)
}

// pageFunc computes a page of points from `from` down to `lo` (interval
// starts) of a chain whose rollups span span; next and more are where the
// following page starts and whether there is one.
type pageFunc func(span rollup.ChainSpan, lo, from int64) (pts []rollup.Point, next int64, more bool, err error)

// seriesPage answers a series request q of route with page: no points
// before the chain's first indexed block or when q's range holds no
// interval, else the page and the token of the next. span is the chain's
// (zero before its first block).
func (h *handlers) seriesPage(ctx context.Context, route string, q seriesQuery, page pageFunc) (pts []Point, token string, span rollup.ChainSpan, err error) {
	pts = []Point{}
	keys := q.keys
	if keys == nil {
		keys = []string{q.Chain}
	}
	span, ok, err := rollup.LoadSpan(ctx, h.d.DB, keys...)
	if err != nil || !ok {
		return pts, "", span, err
	}
	lo, from, ok := q.window(span.FirstTime, span.TipTime)
	if !ok {
		return pts, "", span, nil
	}
	got, next, more, err := page(span, lo, from)
	if err != nil {
		return nil, "", span, err
	}
	for _, pt := range got {
		pts = append(pts, Point{Timestamp: pt.Timestamp, Value: pt.Value})
	}
	token, err = h.nextToken(ctx, route, q, next, more)
	return pts, token, span, err
}

// handleV2 registers a Metrics API v2 route: rate limited per client IP at
// the document's execution weight, errors in the metrics shape.
func handleV2(mux *api.Mux, route string, w api.Weight, h api.Handler) {
	mux.HandleGuarded(route, api.RouteOpts{Weight: w, PerIP: true}, api.MessageArray, h)
}

// v2Chain resolves a v2 chainId to an indexed EVM chain (an EVM chain id, or
// a blockchain id, or c-chain). The document's aggregates (total, mainnet,
// testnet) are served by the chain metrics routes only (metricChains).
func (h *handlers) v2Chain(id string) (api.ChainRef, error) {
	if isAggregate(id) {
		return api.ChainRef{}, api.NotFound("chainId %s: an aggregate over chains is served by /v2/chains/{chainId}/metrics and /rollingWindowMetrics only; ask per chain (GET /v2/chains lists them)", id)
	}
	return h.d.Network.EVMChain(id)
}

// isAggregate says whether a v2 chainId is one of the document's aggregate
// chain ids.
func isAggregate(id string) bool { return id == "total" || id == "mainnet" || id == "testnet" }

// metricChains resolves the chainId of the chain metrics routes: one chain
// (key its chain key), or an aggregate (key the id itself): total = every
// indexed EVM chain, mainnet or testnet = those of that network. This index
// follows one network, so the other network's aggregate has no chain and
// answers as a chain without blocks (no points). How each metric folds over
// chains: docs/metrics.md.
func (h *handlers) metricChains(id string) (key string, keys []string, err error) {
	if !isAggregate(id) {
		c, err := h.d.Network.EVMChain(id)
		if err != nil {
			return "", nil, err
		}
		return c.Key, []string{c.Key}, nil
	}
	keys = []string{}
	if id == "total" || id == h.networkType() {
		for _, c := range h.d.Network.EVMChains() {
			keys = append(keys, c.Key)
		}
	}
	return id, keys, nil
}
