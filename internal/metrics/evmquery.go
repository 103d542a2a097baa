package metrics

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// EVMMetrics are the chain metrics of GET /v2/chains/{chainId}/metrics/{metric}
// (the published document's ChainMetric enum, in its order).
var EVMMetrics = []string{
	"activeAddresses", "activeSenders", "cumulativeTxCount", "cumulativeAddresses", "cumulativeContracts",
	"cumulativeDeployers", "contracts", "deployers", "gasUsed", "txCount", "avgGps", "maxGps", "avgTps", "maxTps",
	"avgGasPrice", "maxGasPrice", "feesPaid",
}

// RollingMetrics are the metrics of GET /v2/chains/{chainId}/rollingWindowMetrics/{metric}
// (ChainRollingWindowMetric, in its order).
var RollingMetrics = []string{
	"gasUsed", "txCount", "avgGps", "maxGps", "avgTps", "maxTps", "avgGasPrice", "maxGasPrice", "feesPaid",
	"contracts", "deployers", "activeAddresses", "activeSenders",
}

// EVMValue is metric's value for the interval starting at start whose row is
// b (a zero row with Bucket = start when the interval has no block); cum
// holds the cumulative totals through the interval (b's own, or the previous
// row's when the interval has no block). Definitions: docs/metrics.md.
func EVMValue(metric string, b *EVMBucket, start int64, cum *EVMBucket) float64 {
	switch metric {
	case "activeAddresses":
		return float64(b.Active)
	case "activeSenders":
		return float64(b.Senders)
	case "cumulativeTxCount":
		return float64(cum.CumTxs)
	case "cumulativeAddresses":
		return float64(cum.CumAddresses)
	case "cumulativeContracts":
		return float64(cum.CumContracts)
	case "cumulativeDeployers":
		return float64(cum.CumDeployers)
	case "contracts":
		return float64(b.Contracts)
	case "deployers":
		return float64(b.Deployers)
	case "gasUsed":
		return float64(b.GasUsed)
	case "txCount":
		return float64(b.Txs)
	case "avgGps":
		return PerSecond(b.GasUsed, start, b.LastMs)
	case "maxGps":
		return b.MaxGPS
	case "avgTps":
		return PerSecond(b.Txs, start, b.LastMs)
	case "maxTps":
		return b.MaxTPS
	case "avgGasPrice":
		return Ratio(&b.PriceSum, b.Txs)
	case "maxGasPrice":
		return Float(&b.MaxPrice)
	case "feesPaid":
		return Float(&b.Fees)
	}
	return 0
}

// PerSecond is n over the seconds from start (unix seconds) to the newest
// block's time lastMs (unix milliseconds), at least one second: the average
// rate of an interval or window, its unfinished part excluded.
func PerSecond(n, start, lastMs int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(n) / max(float64(lastMs-start*1000)/1000, 1)
}

// Ratio is sum / n as a float (0 when n is 0).
func Ratio(sum *big.Int, n int64) float64 {
	if n == 0 {
		return 0
	}
	f, _ := new(big.Rat).SetFrac(sum, big.NewInt(n)).Float64()
	return f
}

// Float is v as the nearest float64.
func Float(v *big.Int) float64 {
	f, _ := new(big.Float).SetInt(v).Float64()
	return f
}

// readBuckets reads chain's rows of kind k with from <= bucket < to,
// ascending, and the newest row before from (nil when none).
func readBuckets(ctx context.Context, db *store.DB, chain string, k Interval, from, to int64) (before *EVMBucket, rows []EVMBucket, err error) {
	b, err := ScanEVMBucket(db.QueryRowContext(ctx, `SELECT `+evmBucketColumns+` FROM metrics_evm_buckets
		WHERE chain_key = $1 AND kind = $2 AND bucket < $3 ORDER BY bucket DESC LIMIT 1`, chain, int(k), from))
	switch {
	case err == nil:
		before = &b
	case !errors.Is(err, sql.ErrNoRows):
		return nil, nil, fmt.Errorf("metrics: read %s rollup: %w", k, err)
	}
	rs, err := db.QueryContext(ctx, `SELECT `+evmBucketColumns+` FROM metrics_evm_buckets
		WHERE chain_key = $1 AND kind = $2 AND bucket >= $3 AND bucket < $4 ORDER BY bucket`, chain, int(k), from, to)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: read %s rollup: %w", k, err)
	}
	defer rs.Close()
	for rs.Next() {
		b, err := ScanEVMBucket(rs)
		if err != nil {
			return nil, nil, fmt.Errorf("metrics: read %s rollup: %w", k, err)
		}
		rows = append(rows, b)
	}
	if err := rs.Err(); err != nil {
		return nil, nil, fmt.Errorf("metrics: read %s rollup: %w", k, err)
	}
	return before, rows, nil
}

// EVMPage computes up to n points of an EVM chain metric at interval iv,
// newest first, for the intervals starting at or before from and at or after
// lo (both interval starts). Intervals without a block are 0 (cumulative
// metrics: the total so far). next and more are as for TPSPage.
//
// Over several chains (the document's aggregate chain ids) each chain's rows
// are folded as one chain's intervals are (sums, maxima, the newest block's
// time; cumulative totals summed), and the distinct-address metrics are
// counted across the chains from metrics_evm_seen: an address active on two
// chains counts once. Definitions: docs/metrics.md.
func EVMPage(ctx context.Context, db *store.DB, chains []string, metric string, iv Interval, lo, from int64, n int) (pts []Point, next int64, more bool, err error) {
	starts, err := intervalStarts(iv, lo, from, n)
	if err != nil || len(starts) == 0 {
		return []Point{}, 0, false, err
	}
	oldest, newest := starts[len(starts)-1], starts[0]
	vals := make([]EVMBucket, len(starts)) // per start, newest first
	for _, chain := range chains {
		before, rows, err := readBuckets(ctx, db, chain, iv, oldest, iv.Next(newest))
		if err != nil {
			return nil, 0, false, err
		}
		cum := &EVMBucket{}
		if before != nil {
			cum = before
		}
		j := 0 // next row, ascending
		for i := len(starts) - 1; i >= 0; i-- {
			b := &EVMBucket{}
			if j < len(rows) && rows[j].Bucket == starts[i] {
				b = &rows[j]
				cum = b
				j++
			}
			vals[i].fold(b, cum)
		}
	}
	if len(chains) > 1 {
		if err := distinctAcross(ctx, db, chains, metric, iv, starts, vals); err != nil {
			return nil, 0, false, err
		}
	}
	pts = make([]Point, len(starts))
	for i, s := range starts {
		pts[i] = Point{Timestamp: s, Value: EVMValue(metric, &vals[i], s, &vals[i])}
	}
	next = iv.Prev(oldest)
	return pts, next, next >= lo, nil
}

// fold adds a chain's interval row b and its cumulative totals cum (through
// the interval) into v, an interval summed over chains: distinct counts add
// up here, exact for one chain only (distinctAcross counts several).
func (v *EVMBucket) fold(b, cum *EVMBucket) {
	v.add(b)
	v.Active += b.Active
	v.Senders += b.Senders
	v.Deployers += b.Deployers
	v.CumTxs += cum.CumTxs
	v.CumAddresses += cum.CumAddresses
	v.CumContracts += cum.CumContracts
	v.CumDeployers += cum.CumDeployers
}

// distinctRole is the metrics_evm_seen role a distinct-address metric counts,
// and whether it counts from the chain's first block (0 for other metrics).
func distinctRole(metric string) (role int, cumulative bool) {
	switch metric {
	case "activeAddresses":
		return roleActive, false
	case "activeSenders":
		return roleSender, false
	case "deployers":
		return roleDeployer, false
	case "cumulativeAddresses":
		return roleActive, true
	case "cumulativeDeployers":
		return roleDeployer, true
	}
	return 0, false
}

// chainsIn is "chain_key IN ($first, ...)" for chains, and its arguments.
func chainsIn(chains []string, first int) (string, []any) {
	var b strings.Builder
	args := make([]any, len(chains))
	b.WriteString("chain_key IN (")
	for i, c := range chains {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ph(first + i))
		args[i] = c
	}
	b.WriteString(")")
	return b.String(), args
}

// distinctAcross replaces vals' distinct count of metric (per interval
// start of starts, newest first) by the distinct addresses across chains: per
// interval, the addresses seen in it on any chain; cumulative, the addresses
// whose first interval on any chain is at or before it.
func distinctAcross(ctx context.Context, db *store.DB, chains []string, metric string, iv Interval, starts []int64, vals []EVMBucket) error {
	role, cumulative := distinctRole(metric)
	if role == 0 {
		return nil
	}
	in, args := chainsIn(chains, 1)
	n := len(args)
	q := `SELECT bucket, COUNT(DISTINCT address) FROM metrics_evm_seen WHERE ` + in + ` AND role = ` + ph(n+1) +
		` AND kind = ` + ph(n+2) + ` AND bucket >= ` + ph(n+3) + ` AND bucket < ` + ph(n+4) + ` GROUP BY bucket ORDER BY bucket`
	args = append(args, role, int(iv), starts[len(starts)-1], iv.Next(starts[0]))
	if cumulative {
		// Each address once, at its first interval on any chain.
		q = `SELECT first, COUNT(*) FROM (SELECT MIN(bucket) AS first FROM metrics_evm_seen WHERE ` + in +
			` AND role = ` + ph(n+1) + ` AND kind = ` + ph(n+2) + ` AND bucket < ` + ph(n+3) + ` GROUP BY address) f GROUP BY first ORDER BY first`
		args = append(args[:n], role, int(iv), iv.Next(starts[0]))
	}
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("metrics: distinct addresses of %s across chains: %w", metric, err)
	}
	defer rows.Close()
	counts := map[int64]int64{}
	var total int64 // cumulative: addresses first seen before the page's oldest interval
	for rows.Next() {
		var bucket, c int64
		if err := rows.Scan(&bucket, &c); err != nil {
			return fmt.Errorf("metrics: distinct addresses of %s across chains: %w", metric, err)
		}
		if cumulative && bucket < starts[len(starts)-1] {
			total += c
			continue
		}
		counts[bucket] = c
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("metrics: distinct addresses of %s across chains: %w", metric, err)
	}
	for i := len(starts) - 1; i >= 0; i-- {
		v, c := &vals[i], counts[starts[i]]
		switch metric {
		case "activeAddresses":
			v.Active = c
		case "activeSenders":
			v.Senders = c
		case "deployers":
			v.Deployers = c
		case "cumulativeAddresses":
			total += c
			v.CumAddresses = total
		case "cumulativeDeployers":
			total += c
			v.CumDeployers = total
		}
	}
	return nil
}

// Rolling windows, newest first: each is the whole intervals of a kind
// ending with the one holding the chain's newest indexed block.
var rollingWindows = []struct {
	Name string
	Kind Interval
	N    int
}{
	{"lastHour", Hour, 1}, {"lastDay", Hour, 24}, {"lastWeek", Day, 7}, {"lastMonth", Day, 30},
	{"last90Days", Day, 90}, {"lastYear", Day, 365},
}

// distinctWindows is how many windows (from the first) the distinct-address
// metrics answer: the document gives activeAddresses and activeSenders for the
// last hour, day and week only.
func distinctWindows(metric string) int {
	switch metric {
	case "activeAddresses", "activeSenders":
		return 3
	}
	return len(rollingWindows)
}

// EVMRolling computes metric over the rolling windows ending at the newest
// indexed block of chains (tipTime, unix seconds), and over all time from
// firstTime. Windows a metric has no value for are absent. Over several
// chains the windows end at the newest block of any of them, and the
// distinct-address metrics count each address once across the chains; over
// none (an aggregate without chains) every window is 0.
func EVMRolling(ctx context.Context, db *store.DB, chains []string, metric string, firstTime, tipTime int64) (map[string]float64, error) {
	out := map[string]float64{}
	byKind := map[Interval][]EVMBucket{}
	var all []EVMBucket
	for _, chain := range chains {
		for _, k := range []Interval{Hour, Day} {
			n := 0
			for _, w := range rollingWindows {
				if w.Kind == k {
					n = max(n, w.N)
				}
			}
			from := k.Floor(tipTime)
			for range n - 1 {
				from = k.Prev(from)
			}
			_, rows, err := readBuckets(ctx, db, chain, k, from, k.Next(k.Floor(tipTime)))
			if err != nil {
				return nil, err
			}
			byKind[k] = append(byKind[k], rows...)
		}
		_, rows, err := readBuckets(ctx, db, chain, Month, Month.Floor(firstTime), Month.Next(Month.Floor(tipTime)))
		if err != nil {
			return nil, err
		}
		all = append(all, rows...)
	}
	for i, w := range rollingWindows {
		if i >= distinctWindows(metric) {
			break
		}
		start := w.Kind.Floor(tipTime)
		for range w.N - 1 {
			start = w.Kind.Prev(start)
		}
		var in []EVMBucket
		for _, b := range byKind[w.Kind] {
			if b.Bucket >= start {
				in = append(in, b)
			}
		}
		v, err := windowValue(ctx, db, chains, metric, w.Kind, start, in)
		if err != nil {
			return nil, err
		}
		out[w.Name] = v
	}
	if distinctWindows(metric) == len(rollingWindows) {
		v, err := windowValue(ctx, db, chains, metric, Month, firstTime, all)
		if err != nil {
			return nil, err
		}
		out["allTime"] = v
	}
	return out, nil
}

// windowValue folds the rows (of chains) of a window starting at start into
// metric's value. Distinct-address metrics count the distinct addresses of
// the rows' intervals (one row of one chain needs no counting).
func windowValue(ctx context.Context, db *store.DB, chains []string, metric string, k Interval, start int64, rows []EVMBucket) (float64, error) {
	var t EVMBucket
	for i := range rows {
		b := &rows[i]
		t.add(b)
		// One row's distinct counts are the window's; more are counted below.
		t.Active, t.Senders, t.Deployers = b.Active, b.Senders, b.Deployers
		t.CumDeployers = b.CumDeployers
	}
	role, _ := distinctRole(metric)
	if role == 0 || len(chains) == 0 || (len(rows) <= 1 && len(chains) == 1) {
		return EVMValue(metric, &t, start, &t), nil
	}
	var n int64
	var err error
	if role == roleDeployer && k == Month { // all time: every deployer ever
		if len(chains) == 1 {
			return float64(t.CumDeployers), nil
		}
		n, err = countEver(ctx, db, chains, role)
	} else {
		n, err = countDistinct(ctx, db, chains, role, start)
	}
	if err != nil {
		return 0, err
	}
	t.Active, t.Senders, t.Deployers = n, n, n
	return EVMValue(metric, &t, start, &t), nil
}

// countDistinct counts the distinct addresses in role on chains since start
// (unix seconds): those whose newest time is at or after it, the chains'
// newest block being the window's end.
func countDistinct(ctx context.Context, db *store.DB, chains []string, role int, start int64) (int64, error) {
	in, args := chainsIn(chains, 1)
	count := "COUNT(*)" // one chain: one row per address
	if len(chains) > 1 {
		count = "COUNT(DISTINCT address)"
	}
	var n int64
	err := db.QueryRowContext(ctx, `SELECT `+count+` FROM metrics_evm_last
		WHERE `+in+` AND role = `+ph(len(args)+1)+` AND last_ms >= `+ph(len(args)+2), append(args, role, start*1000)...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("metrics: count distinct addresses: %w", err)
	}
	return n, nil
}

// countEver counts the distinct addresses that ever played role on any of
// chains (the "ever" rows of metrics_evm_seen: kind 0, bucket 0).
func countEver(ctx context.Context, db *store.DB, chains []string, role int) (int64, error) {
	in, args := chainsIn(chains, 1)
	var n int64
	err := db.QueryRowContext(ctx, `SELECT COUNT(DISTINCT address) FROM metrics_evm_seen
		WHERE `+in+` AND role = `+ph(len(args)+1)+` AND kind = 0 AND bucket = 0`, append(args, role)...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("metrics: count addresses ever: %w", err)
	}
	return n, nil
}
