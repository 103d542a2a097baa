package metrics

import (
	"context"
	"fmt"
	"math/big"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// StakingMetrics are the staking metrics' names (the document's NetworkMetric).
var StakingMetrics = []string{"validatorCount", "validatorWeight", "delegatorCount", "delegatorWeight"}

// Value returns metric of the totals as a decimal integer: validators count
// p_stakers validators and L1 validators alike, weights are their sums (nAVAX
// for the primary network and elastic subnets, the subnet's own unit for
// permissioned subnets and L1s).
func (s *StakeTotals) Value(metric string) string {
	switch metric {
	case "validatorCount":
		return fmt.Sprint(s.Validators + s.L1Validators)
	case "validatorWeight":
		return new(big.Int).Add(s.ValidatorWeight, s.L1Weight).String()
	case "delegatorCount":
		return fmt.Sprint(s.Delegators)
	case "delegatorWeight":
		return s.DelegatorWeight.String()
	}
	return "0"
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
	// The last row before the page carries into its first days; then the
	// page's own rows, ascending.
	q := `SELECT bucket, validators, validator_weight, l1_validators, l1_weight, delegators, delegator_weight FROM (
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
		t      *StakeTotals
	}
	var got []dayRow
	for rows.Next() {
		var r dayRow
		r.t, err = scanStakeTotals(rowScanner{rows, &r.bucket})
		if err != nil {
			return nil, 0, false, fmt.Errorf("metrics: staking of %s: %w", subnet, err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, false, fmt.Errorf("metrics: staking of %s: %w", subnet, err)
	}
	pts = make([]ValuePoint, len(days))
	cur, j := newStakeTotals(), 0
	for i := len(days) - 1; i >= 0; i-- {
		for j < len(got) && got[j].bucket <= days[i] {
			cur = got[j].t
			j++
		}
		pts[i] = ValuePoint{Timestamp: days[i], Value: cur.Value(metric)}
	}
	next = Day.Prev(oldest)
	return pts, next, next >= lo, nil
}

// rowScanner scans a leading column into first, then the rest as asked.
type rowScanner struct {
	rows  interface{ Scan(...any) error }
	first *int64
}

func (r rowScanner) Scan(dst ...any) error {
	return r.rows.Scan(append([]any{r.first}, dst...)...)
}
