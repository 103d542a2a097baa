package metrics

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/api"
	rollup "github.com/permafrost-dev/permafrost/internal/metrics"
)

// The series plumbing of the v2 routes whose series are not a chain's (staking,
// L1 fees, ICM): exact integer points, a time range without a page token's
// binding, and the interval window of such a series. See v2.go for the rest.

// ValuePoint is a MetricsValue whose value is an exact integer (counts, nAVAX,
// weights), written as a JSON number without rounding.
type ValuePoint struct {
	Timestamp int64       `json:"timestamp"`
	Value     json.Number `json:"value"`
}

// SeriesResponse is the document's MetricsApiResponse.
type SeriesResponse struct {
	NextPageToken string       `json:"nextPageToken,omitempty"`
	Results       []ValuePoint `json:"results"`
}

func valuePoints(pts []rollup.ValuePoint) []ValuePoint {
	out := make([]ValuePoint, len(pts))
	for i, p := range pts {
		out[i] = ValuePoint{Timestamp: p.Timestamp, Value: json.Number(p.Value)}
	}
	return out
}

// timeRange reads startTimestamp and endTimestamp (-1 when absent).
func timeRange(p *api.Params) (start, end int64) {
	start = p.Int("startTimestamp", -1, 0, maxTimestamp)
	end = p.Int("endTimestamp", -1, 0, maxTimestamp)
	if start >= 0 && end >= 0 && end < start {
		p.Fail("endTimestamp (%d) must not be before startTimestamp (%d)", end, start)
	}
	return start, end
}

// seriesWindow returns the starts of the oldest (lo) and newest (hi)
// intervals of a series running from time first to time last that overlap
// [start, end] (-1: unbounded); ok is false when none does.
func seriesWindow(iv rollup.Interval, first, last, start, end int64) (lo, hi int64, ok bool) {
	if start >= 0 && start > first {
		first = start
	}
	if end >= 0 && end < last {
		last = end
	}
	if first > last {
		return 0, 0, false
	}
	return iv.Floor(first), iv.Floor(last), true
}

// pathEnum checks a path parameter against its enum.
func pathEnum(p *api.Params, name, v string, allowed ...string) string {
	if !slices.Contains(allowed, v) {
		p.Fail("%s must be one of %s, got %q", name, strings.Join(allowed, ", "), short(v))
	}
	return v
}
