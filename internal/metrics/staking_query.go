package metrics

import (
	"context"
	"fmt"
	"math/big"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// StakingMetrics are the staking metrics' names (the document's NetworkMetric).
var StakingMetrics = []string{"validatorCount", "validatorWeight", "delegatorCount", "delegatorWeight"}

// stakingColumns are the two columns a staking metric adds (weights are
// decimal sums of uint64s: added here, exactly); validators count p_stakers
// validators and L1 validators alike.
var stakingColumns = map[string]string{
	"validatorCount":  "validators + l1_validators, '0'",
	"validatorWeight": "validator_weight, l1_weight",
	"delegatorCount":  "delegators, '0'",
	"delegatorWeight": "delegator_weight, '0'",
}

// ValuePoint is a point whose value is an exact decimal integer.
type ValuePoint struct {
	Timestamp int64
	Value     string
}

// StakingPage returns the staking metric of subnet for each day from day
// from back to day lo (day starts), at most n, newest first: the subnet's
// stakers at the end of that day (the last P-chain block of the day, or
// of the last earlier day with a change; 0 before the first).
func StakingPage(ctx context.Context, db *store.DB, subnet, metric string, lo, from int64, n int) (pts []ValuePoint, next int64, more bool, err error) {
	if n <= 0 || n > MaxPoints {
		return nil, 0, false, fmt.Errorf("metrics: page of %d points", n)
	}
	days := make([]int64, 0, n)
	for d := from; d >= lo && len(days) < n; d = Day.Prev(d) {
		days = append(days, d)
	}
	if len(days) == 0 {
		return []ValuePoint{}, 0, false, nil
	}
	oldest := days[len(days)-1]
	cols, ok := stakingColumns[metric]
	if !ok {
		return nil, 0, false, fmt.Errorf("metrics: unknown staking metric %q", metric)
	}
	// The last row before the page carries into its first days; then the
	// page's own rows, ascending.
	q := `SELECT bucket, ` + cols + ` FROM (
		SELECT * FROM (SELECT * FROM metrics_staking_daily WHERE subnet_id = $1 AND bucket < $2 ORDER BY bucket DESC LIMIT 1) prev
		UNION ALL
		SELECT * FROM metrics_staking_daily WHERE subnet_id = $1 AND bucket >= $2 AND bucket <= $3) r ORDER BY bucket`
	rows, err := db.QueryContext(ctx, q, subnet, oldest, days[0])
	if err != nil {
		return nil, 0, false, fmt.Errorf("metrics: staking of %s: %w", subnet, err)
	}
	defer rows.Close()
	type dayRow struct {
		bucket int64
		value  string
	}
	var got []dayRow
	for rows.Next() {
		var r dayRow
		var a, b string
		if err := rows.Scan(&r.bucket, &a, &b); err != nil {
			return nil, 0, false, fmt.Errorf("metrics: staking of %s: %w", subnet, err)
		}
		r.value = a
		if b != "0" {
			x, okA := new(big.Int).SetString(a, 10)
			y, okB := new(big.Int).SetString(b, 10)
			if !okA || !okB {
				return nil, 0, false, fmt.Errorf("metrics: staking of %s: stored weights %q, %q", subnet, a, b)
			}
			r.value = x.Add(x, y).String()
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, false, fmt.Errorf("metrics: staking of %s: %w", subnet, err)
	}
	pts = make([]ValuePoint, len(days))
	cur, j := "0", 0
	for i := len(days) - 1; i >= 0; i-- {
		for j < len(got) && got[j].bucket <= days[i] {
			cur = got[j].value
			j++
		}
		pts[i] = ValuePoint{Timestamp: days[i], Value: cur}
	}
	next = Day.Prev(oldest)
	return pts, next, next >= lo, nil
}
