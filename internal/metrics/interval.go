package metrics

import (
	"fmt"
	"time"
)

// Interval is the granularity of a metrics series. Every interval starts at
// 0:00 UTC of its hour, day, Monday of its week, or first day of its month,
// as the published metrics API documents.
type Interval int

const (
	Hour Interval = iota + 1
	Day
	Week
	Month
)

const (
	secondsPerHour = 3600
	secondsPerDay  = 86400
)

// Intervals lists the accepted timeInterval values.
var Intervals = []string{"hour", "day", "week", "month"}

// ParseInterval reads a timeInterval value.
func ParseInterval(s string) (Interval, error) {
	switch s {
	case "hour":
		return Hour, nil
	case "day":
		return Day, nil
	case "week":
		return Week, nil
	case "month":
		return Month, nil
	}
	return 0, fmt.Errorf("unknown interval %q", s)
}

func (iv Interval) String() string {
	switch iv {
	case Hour:
		return "hour"
	case Day:
		return "day"
	case Week:
		return "week"
	case Month:
		return "month"
	}
	return "unknown"
}

// floorDiv is division rounding toward minus infinity (timestamps before 1970
// still land in the right interval).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Floor returns the start of the interval holding ts.
func (iv Interval) Floor(ts int64) int64 {
	switch iv {
	case Hour:
		return floorDiv(ts, secondsPerHour) * secondsPerHour
	case Day:
		return floorDiv(ts, secondsPerDay) * secondsPerDay
	case Week:
		days := floorDiv(ts, secondsPerDay)
		// Day 0 (1970-01-01) was a Thursday: 3 days after a Monday.
		sinceMonday := days + 3 - floorDiv(days+3, 7)*7
		return (days - sinceMonday) * secondsPerDay
	case Month:
		t := time.Unix(ts, 0).UTC()
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC).Unix()
	}
	return ts
}

// Next returns the start of the interval after the one starting at start.
func (iv Interval) Next(start int64) int64 {
	switch iv {
	case Hour:
		return start + secondsPerHour
	case Day:
		return start + secondsPerDay
	case Week:
		return start + 7*secondsPerDay
	case Month:
		return time.Unix(start, 0).UTC().AddDate(0, 1, 0).Unix()
	}
	return start + 1
}

// Prev returns the start of the interval before the one starting at start.
func (iv Interval) Prev(start int64) int64 {
	switch iv {
	case Hour:
		return start - secondsPerHour
	case Day:
		return start - secondsPerDay
	case Week:
		return start - 7*secondsPerDay
	case Month:
		// start is the 1st of a month, so AddDate never normalises across months.
		return time.Unix(start, 0).UTC().AddDate(0, -1, 0).Unix()
	}
	return start - 1
}
