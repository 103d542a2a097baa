package metrics

import (
	"context"
	"fmt"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// FeeScope is what an L1 fee series sums: one validation, every validation of
// a node, of a subnet, or of the network.
type FeeScope int

const (
	FeeValidation FeeScope = iota + 1
	FeeNode
	FeeSubnet
	FeeTotal
)

// FeeValue is what a point of an L1 fee series is.
type FeeValue int

const (
	FeesDaily      FeeValue = iota + 1 // nAVAX paid in the day
	FeesCumulative                     // nAVAX paid up to the end of the day
	PayingDaily                        // validations that paid a fee in the day
)

// feeDays reads (day, fees, paying) rows of a scope up to day hi, ascending.
func feeDays(ctx context.Context, db *store.DB, scope FeeScope, key string, hi int64) ([][3]int64, error) {
	var q string
	args := []any{key, hi}
	switch scope {
	case FeeValidation:
		q = `SELECT bucket, fees, 1 FROM metrics_l1_fees_daily WHERE validation_id = $1 AND bucket <= $2 ORDER BY bucket`
	case FeeNode:
		q = `SELECT bucket, SUM(fees), COUNT(*) FROM metrics_l1_fees_daily WHERE node_id = $1 AND bucket <= $2 GROUP BY bucket ORDER BY bucket`
	case FeeSubnet:
		q = `SELECT bucket, fees, paying FROM metrics_l1_fees_subnet_daily WHERE subnet_id = $1 AND bucket <= $2 ORDER BY bucket`
	case FeeTotal:
		q, args = `SELECT bucket, fees, paying FROM metrics_l1_fees_total_daily WHERE bucket <= $1 ORDER BY bucket`, []any{hi}
	default:
		return nil, fmt.Errorf("metrics: fee scope %d", scope)
	}
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("metrics: L1 fees of %q: %w", key, err)
	}
	defer rows.Close()
	var out [][3]int64
	for rows.Next() {
		var r [3]int64
		if err := rows.Scan(&r[0], &r[1], &r[2]); err != nil {
			return nil, fmt.Errorf("metrics: L1 fees of %q: %w", key, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: L1 fees of %q: %w", key, err)
	}
	return out, nil
}

// FeeSeries returns a daily L1 fee series for the days lo..hi (day starts),
// newest first; days without a fee are 0 (a cumulative series keeps its sum).
func FeeSeries(ctx context.Context, db *store.DB, scope FeeScope, key string, v FeeValue, lo, hi int64) ([]ValuePoint, error) {
	if hi < lo {
		return []ValuePoint{}, nil
	}
	rows, err := feeDays(ctx, db, scope, key, hi)
	if err != nil {
		return nil, err
	}
	var days []int64
	for d := lo; d <= hi; d = Day.Next(d) {
		days = append(days, d)
	}
	out := make([]ValuePoint, len(days))
	var sum int64
	j := 0
	for i, d := range days {
		var fees, paying int64
		for ; j < len(rows) && rows[j][0] <= d; j++ {
			sum += rows[j][1]
			if rows[j][0] == d {
				fees, paying = rows[j][1], rows[j][2]
			}
		}
		val := fees
		switch v {
		case FeesCumulative:
			val = sum
		case PayingDaily:
			val = paying
		}
		out[len(days)-1-i] = ValuePoint{Timestamp: d, Value: fmt.Sprint(val)}
	}
	return out, nil
}
