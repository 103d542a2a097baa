package metrics

import (
	"cmp"
	"context"
	"net/http"

	"github.com/permafrost-dev/permafrost/internal/api"
	rollup "github.com/permafrost-dev/permafrost/internal/metrics"
)

// The ICM metrics routes (getICMTimeseries, getICMSummary).
const (
	RouteICMTimeseries = "GET /v2/icm/timeseries"
	RouteICMSummary    = "GET /v2/icm/summary"
)

// icmAll stands for "every blockchain" in a value's srcBlockchainId or
// destBlockchainId when the query neither filters nor groups by it (the
// document requires both fields and names no value for an aggregate).
const icmAll = "all"

// icmGroupBys is the document's groupBy enum.
var icmGroupBys = []string{"srcBlockchainId", "destBlockchainId", "srcBlockchainId,destBlockchainId"}

// ICMValue is the document's ICMMetricsValue.
type ICMValue struct {
	Value            int64  `json:"value"`
	Timestamp        int64  `json:"timestamp"`
	SrcBlockchainID  string `json:"srcBlockchainId"`
	DestBlockchainID string `json:"destBlockchainId"`
}

// ICMSeriesResponse is the document's ICMMetricsApiResponse.
type ICMSeriesResponse struct {
	NextPageToken string     `json:"nextPageToken,omitempty"`
	Results       []ICMValue `json:"results"`
}

// ICMWindows is the document's ICMRollingWindowMetricsValue.
type ICMWindows struct {
	LastHour         int64  `json:"lastHour"`
	LastDay          int64  `json:"lastDay"`
	LastWeek         int64  `json:"lastWeek"`
	LastMonth        int64  `json:"lastMonth"`
	Last90Days       int64  `json:"last90Days"`
	LastYear         int64  `json:"lastYear"`
	AllTime          int64  `json:"allTime"`
	SrcBlockchainID  string `json:"srcBlockchainId"`
	DestBlockchainID string `json:"destBlockchainId"`
}

// icmQuery is an ICM metrics query: its filters and grouping.
type icmQuery struct {
	Src      string `json:"s"`
	Dst      string `json:"d"`
	GroupBy  string `json:"g"`
	Interval string `json:"i"`
	Start    int64  `json:"a"`
	End      int64  `json:"b"`
}

// icmCursor is a timeseries page token's stored state: the query, the
// interval the next page starts at and how many of its groups were served.
type icmCursor struct {
	Q    icmQuery `json:"q"`
	Next int64    `json:"n"`
	Skip int      `json:"k"`
}

// bySrc and byDst say at which level a query reads the counts: per source
// blockchain when it filters or groups by the source, else every source
// together; likewise for the destination.
func (q icmQuery) bySrc() bool {
	return q.Src != "" || q.GroupBy == "srcBlockchainId" || q.GroupBy == "srcBlockchainId,destBlockchainId"
}

func (q icmQuery) byDst() bool {
	return q.Dst != "" || q.GroupBy == "destBlockchainId" || q.GroupBy == "srcBlockchainId,destBlockchainId"
}

// icmFewGroups: up to this many groups, their counts are read key by key
// (primary-key ranges); more, in one time-range read of the whole level
// (every grouped query; devnet-d's tests cover both reads).
const icmFewGroups = 1

// reads returns the reads answering groups: one per group when they are
// few, else one for the level.
func (q icmQuery) reads(groups []rollup.ICMPair) []rollup.ICMLevel {
	l := rollup.ICMLevel{BySrc: q.bySrc(), ByDst: q.byDst(), Src: q.Src, Dst: q.Dst}
	if len(groups) > icmFewGroups {
		return []rollup.ICMLevel{l}
	}
	out := make([]rollup.ICMLevel, len(groups))
	for i := range groups {
		out[i] = rollup.ICMLevel{Key: &groups[i]}
	}
	return out
}

// group is the (src, dst) a counted key is reported under ("all" for a side
// aggregated over every blockchain).
func group(p rollup.ICMPair) [2]string {
	return [2]string{cmp.Or(p.Src, icmAll), cmp.Or(p.Dst, icmAll)}
}

// icmParams reads the filters and groupBy both routes take; a well-formed
// blockchain id that is neither a chain of the index nor an end of a counted
// message is a 404.
func (h *handlers) icmParams(r *http.Request, p *api.Params) (icmQuery, error) {
	var q icmQuery
	for _, f := range []struct {
		name string
		dst  *string
	}{{"srcBlockchainId", &q.Src}, {"destBlockchainId", &q.Dst}} {
		if !p.Has(f.name) {
			continue
		}
		id, err := api.ParseCB58ID(p.String(f.name))
		if err != nil {
			p.Fail("%s: %s", f.name, err.Error())
			continue
		}
		*f.dst = id.String()
	}
	q.GroupBy = p.Enum("groupBy", "", icmGroupBys...)
	network := p.Enum("network", "", "mainnet", "fuji", "testnet")
	if err := p.Err(); err != nil {
		return q, err
	}
	if network != "" {
		if err := h.d.Network.CheckNetwork(network); err != nil {
			return q, err
		}
	}
	for _, id := range []string{q.Src, q.Dst} {
		if id == "" {
			continue
		}
		if err := h.knownBlockchain(r.Context(), id); err != nil {
			return q, err
		}
	}
	return q, nil
}

func (h *handlers) knownBlockchain(ctx context.Context, id string) error {
	var n int
	if err := h.d.DB.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM p_blockchains WHERE blockchain_id = $1)
		+ (SELECT COUNT(*) FROM metrics_icm_pairs WHERE src = $1 OR dst = $1)`, id).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return api.NotFound("blockchain %s is not known on network %s", id, h.d.Network.Name)
	}
	return nil
}

// icmGroups lists the query's groups: the counted keys at its level, in
// answer order (source, then destination).
func (h *handlers) icmGroups(ctx context.Context, q icmQuery) ([]rollup.ICMPair, error) {
	return rollup.ICMPairs(ctx, h.d.DB, rollup.ICMLevel{BySrc: q.bySrc(), ByDst: q.byDst(), Src: q.Src, Dst: q.Dst})
}

// icmTimeseries answers GET /v2/icm/timeseries: ICM messages per interval
// (timeInterval hour, day (default), week, month) and group, newest interval
// first, groups in id order. Every group with a counted message has a point in
// every interval from that of the oldest message of the query to that of the
// newest indexed EVM block (0 when none).
func (h *handlers) icmTimeseries(r *http.Request) (any, error) {
	ctx := r.Context()
	p := api.NewParams(r)
	ivName := p.Enum("timeInterval", "day", rollup.Intervals...)
	start, end := timeRange(p)
	size := p.PageSize(v2DefaultPageSize, 1, v2MaxPageSize)
	q, err := h.icmParams(r, p)
	if err != nil {
		return nil, err
	}
	q.Interval, q.Start, q.End = ivName, start, end
	var cur icmCursor
	found, err := h.d.Tokens.Load(ctx, p.String("pageToken"), RouteICMTimeseries, &cur)
	if err != nil {
		return nil, err
	}
	if found {
		if !sameICMQuery(p, cur.Q, q) {
			return nil, errQueryChanged("the filters, groupBy, timeInterval or time range")
		}
		q = cur.Q
	}
	iv, err := rollup.ParseInterval(q.Interval)
	if err != nil {
		return nil, api.BadRequest("timeInterval: " + err.Error())
	}
	resp := &ICMSeriesResponse{Results: []ICMValue{}}
	groups, err := h.icmGroups(ctx, q)
	if err != nil || len(groups) == 0 {
		return resp, err
	}
	tip, ok, err := rollup.ICMTipTime(ctx, h.d.DB)
	if err != nil || !ok {
		return resp, err
	}
	first := tip
	for _, pr := range groups {
		f, err := rollup.ICMFirst(ctx, h.d.DB, pr)
		if err != nil {
			return nil, err
		}
		first = min(first, f)
	}
	lo, from, ok := seriesWindow(iv, first, tip, q.Start, q.End)
	if !ok {
		return resp, nil
	}
	skip := 0
	if found {
		from, skip = min(cur.Next, from), cur.Skip
	}
	// The intervals this page needs, newest first.
	var starts []int64
	for t, need := from, skip+size; t >= lo && need > 0; t, need = iv.Prev(t), need-len(groups) {
		starts = append(starts, t)
	}
	if len(starts) == 0 {
		return resp, nil
	}
	oldest := starts[len(starts)-1]
	index := map[[2]string]int{}
	for i, g := range groups {
		index[[2]string{g.Src, g.Dst}] = i
	}
	sums := map[int64][]int64{} // interval start -> count per group
	for _, l := range q.reads(groups) {
		counts, err := rollup.ICMLevelCounts(ctx, h.d.DB, l, iv == rollup.Hour, oldest, iv.Next(from))
		if err != nil {
			return nil, err
		}
		for k, cs := range counts {
			gi, ok := index[k]
			if !ok {
				continue // a key without messages now (its count moved away)
			}
			for _, c := range cs {
				s := iv.Floor(c[0])
				if sums[s] == nil {
					sums[s] = make([]int64, len(groups))
				}
				sums[s][gi] += c[1]
			}
		}
	}
	// Fill the page; it stops inside an interval (more of its groups to
	// serve) or after the last interval it needed.
	next, nextSkip, more := int64(0), 0, false
fill:
	for _, s := range starts {
		for i := skip; i < len(groups); i++ {
			if len(resp.Results) == size {
				next, nextSkip, more = s, i, true
				break fill
			}
			g, n := group(groups[i]), int64(0)
			if sums[s] != nil {
				n = sums[s][i]
			}
			resp.Results = append(resp.Results, ICMValue{Value: n, Timestamp: s, SrcBlockchainID: g[0], DestBlockchainID: g[1]})
		}
		skip = 0
	}
	if !more {
		next = iv.Prev(oldest)
		more = next >= lo
	}
	if more {
		if resp.NextPageToken, err = h.d.Tokens.Save(ctx, RouteICMTimeseries, icmCursor{Q: q, Next: next, Skip: nextSkip}); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// sameICMQuery says whether the parameters given with a page token agree with
// the token's query (those not given are taken from the token).
func sameICMQuery(p *api.Params, tok, got icmQuery) bool {
	return (!p.Has("srcBlockchainId") || tok.Src == got.Src) &&
		(!p.Has("destBlockchainId") || tok.Dst == got.Dst) &&
		(!p.Has("groupBy") || tok.GroupBy == got.GroupBy) &&
		(!p.Has("timeInterval") || tok.Interval == got.Interval) &&
		(!p.Has("startTimestamp") || tok.Start == got.Start) &&
		(!p.Has("endTimestamp") || tok.End == got.End)
}

// ICMSummaryResponse is the document's ICMRollingWindowMetricsApiResponse:
// result is one ICMWindows for a query without groupBy (the document's
// schema), and a list of them, one per group, with groupBy (the document's
// breakdown examples, which its single-object schema cannot hold).
type ICMSummaryResponse struct {
	Result any `json:"result"`
}

// Window lengths of the summary, in hours (lastHour, lastDay) and days.
const (
	daysPerWeek  = 7
	daysPerMonth = 30
	days90       = 90
	daysPerYear  = 365
)

// icmSummary answers GET /v2/icm/summary: message counts over windows that
// end at the newest indexed EVM block's time T: lastHour is T's UTC hour,
// lastDay the 24 hours ending with it; lastWeek, lastMonth, last90Days and
// lastYear the 7, 30, 90 and 365 UTC days ending with T's day; allTime every
// counted message.
func (h *handlers) icmSummary(r *http.Request) (any, error) {
	ctx := r.Context()
	p := api.NewParams(r)
	q, err := h.icmParams(r, p)
	if err != nil {
		return nil, err
	}
	groups, err := h.icmGroups(ctx, q)
	if err != nil {
		return nil, err
	}
	tip, ok, err := rollup.ICMTipTime(ctx, h.d.DB)
	if err != nil {
		return nil, err
	}
	hour, day := rollup.Hour.Floor(tip), rollup.Day.Floor(tip)
	var dayFroms []int64 // year, 90 days, month, week: ascending starts
	for _, n := range []int64{daysPerYear, days90, daysPerMonth, daysPerWeek} {
		dayFroms = append(dayFroms, day-(n-1)*86400)
	}
	list := make([]*ICMWindows, len(groups))
	index := map[[2]string]*ICMWindows{}
	for i, pr := range groups {
		g := group(pr)
		list[i] = &ICMWindows{AllTime: pr.Messages, SrcBlockchainID: g[0], DestBlockchainID: g[1]}
		index[[2]string{pr.Src, pr.Dst}] = list[i]
	}
	for _, l := range q.reads(groups) {
		if !ok {
			break
		}
		hours, days, err := rollup.ICMWindowSums(ctx, h.d.DB, l, []int64{hour - 23*3600, hour}, hour+3600, dayFroms, day+86400)
		if err != nil {
			return nil, err
		}
		for k, w := range index {
			if v, found := hours[k]; found {
				w.LastDay, w.LastHour = v[0], v[1]
			}
			if v, found := days[k]; found {
				w.LastYear, w.Last90Days, w.LastMonth, w.LastWeek = v[0], v[1], v[2], v[3]
			}
		}
	}
	if q.GroupBy == "" {
		if len(list) == 1 {
			return &ICMSummaryResponse{Result: list[0]}, nil
		}
		return &ICMSummaryResponse{Result: &ICMWindows{SrcBlockchainID: cmp.Or(q.Src, icmAll), DestBlockchainID: cmp.Or(q.Dst, icmAll)}}, nil
	}
	return &ICMSummaryResponse{Result: list}, nil
}
