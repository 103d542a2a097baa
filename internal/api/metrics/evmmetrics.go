package metrics

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/api"
	rollup "github.com/permafrost-dev/permafrost/internal/metrics"
)

// MetricsResponse is the document's MetricsApiResponse.
type MetricsResponse struct {
	NextPageToken string  `json:"nextPageToken,omitempty"`
	Results       []Point `json:"results"`
}

// RollingWindowValues is the document's ChainRollingWindowMetricsValue: a
// window the metric has no value for is absent.
type RollingWindowValues struct {
	LastHour   *float64 `json:"lastHour,omitempty"`
	LastDay    *float64 `json:"lastDay,omitempty"`
	LastWeek   *float64 `json:"lastWeek,omitempty"`
	LastMonth  *float64 `json:"lastMonth,omitempty"`
	Last90Days *float64 `json:"last90Days,omitempty"`
	LastYear   *float64 `json:"lastYear,omitempty"`
	AllTime    *float64 `json:"allTime,omitempty"`
}

// RollingWindowResponse is the document's RollingWindowMetricsApiResponse.
type RollingWindowResponse struct {
	Result RollingWindowValues `json:"result"`
}

// pathMetric reads the {metric} path value, one of allowed.
func pathMetric(r *http.Request, p *api.Params, allowed []string) string {
	m := r.PathValue("metric")
	if !slices.Contains(allowed, m) {
		p.Fail("metric must be one of %s, got %q", strings.Join(allowed, ", "), short(m))
	}
	return m
}

// evmMetrics answers GET /v2/chains/{chainId}/metrics/{metric}: the metric
// per interval (timeInterval hour, day (default), week, month; UTC, weeks
// from Monday), newest first, for the intervals overlapping
// [startTimestamp, endTimestamp], from the interval of the chain's oldest
// indexed block to that of its newest. Every metric is served at every
// interval (the document restricts some to day; the rollups are exact at
// all four). chainId may be an aggregate (total, mainnet, testnet:
// metricChains). Definitions: docs/metrics.md.
func (h *handlers) evmMetrics(r *http.Request) (any, error) {
	ctx := r.Context()
	p := api.NewParams(r)
	metric := pathMetric(r, p, rollup.EVMMetrics)
	q := readSeries(p, "day", v2DefaultPageSize, v2MaxPageSize)
	if err := p.Err(); err != nil {
		return nil, err
	}
	key, keys, err := h.metricChains(r.PathValue("chainId"))
	if err != nil {
		return nil, err
	}
	if err := h.continueSeries(ctx, p, RouteEVMMetrics, &q, key, metric); err != nil {
		return nil, err
	}
	q.keys = keys
	pts, tok, _, err := h.seriesPage(ctx, RouteEVMMetrics, q, func(_ rollup.ChainSpan, lo, from int64) ([]rollup.Point, int64, bool, error) {
		return rollup.EVMPage(ctx, h.d.DB, keys, metric, q.Iv, lo, from, q.Size)
	})
	if err != nil {
		return nil, err
	}
	return &MetricsResponse{Results: pts, NextPageToken: tok}, nil
}

// rollingMetrics answers GET /v2/chains/{chainId}/rollingWindowMetrics/{metric}:
// the metric over the windows ending at the chain's newest indexed block
// (never the wall clock): lastHour is the hour holding it, lastDay the 24
// hours up to it, lastWeek, lastMonth, last90Days and lastYear the 7, 30, 90
// and 365 days up to it, allTime everything from the chain's first block.
// activeAddresses and activeSenders have the hour, day and week windows only,
// as the document says. chainId may be an aggregate (metricChains).
func (h *handlers) rollingMetrics(r *http.Request) (any, error) {
	ctx := r.Context()
	p := api.NewParams(r)
	metric := pathMetric(r, p, rollup.RollingMetrics)
	if err := p.Err(); err != nil {
		return nil, err
	}
	key, keys, err := h.metricChains(r.PathValue("chainId"))
	if err != nil {
		return nil, err
	}
	resp := &RollingWindowResponse{}
	span, ok, err := rollup.LoadSpan(ctx, h.d.DB, keys...)
	if err != nil {
		return nil, err
	}
	if !ok && len(keys) > 0 {
		return resp, nil // no block yet
	}
	// An aggregate of no chain (the other network's) is 0 in every window.
	vals, err := rollup.EVMRolling(ctx, h.d.DB, keys, metric, span.FirstTime, span.TipTime)
	if err != nil {
		return nil, fmt.Errorf("rolling %s of %s: %w", metric, key, err)
	}
	res := &resp.Result
	for name, dst := range map[string]**float64{
		"lastHour": &res.LastHour, "lastDay": &res.LastDay, "lastWeek": &res.LastWeek, "lastMonth": &res.LastMonth,
		"last90Days": &res.Last90Days, "lastYear": &res.LastYear, "allTime": &res.AllTime,
	} {
		if v, ok := vals[name]; ok {
			*dst = &v
		}
	}
	return resp, nil
}
