package metrics

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"

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
func EVMPage(ctx context.Context, db *store.DB, chain, metric string, iv Interval, lo, from int64, n int) (pts []Point, next int64, more bool, err error) {
	starts, err := intervalStarts(iv, lo, from, n)
	if err != nil || len(starts) == 0 {
		return []Point{}, 0, false, err
	}
	oldest, newest := starts[len(starts)-1], starts[0]
	before, rows, err := readBuckets(ctx, db, chain, iv, oldest, iv.Next(newest))
	if err != nil {
		return nil, 0, false, err
	}
	cum := &EVMBucket{}
	if before != nil {
		cum = before
	}
	pts = make([]Point, len(starts))
	j := 0 // next row, ascending
	for i := len(starts) - 1; i >= 0; i-- {
		s := starts[i]
		b := &EVMBucket{Bucket: s}
		if j < len(rows) && rows[j].Bucket == s {
			b = &rows[j]
			cum = b
			j++
		}
		pts[i] = Point{Timestamp: s, Value: EVMValue(metric, b, s, cum)}
	}
	next = iv.Prev(oldest)
	return pts, next, next >= lo, nil
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

// EVMRolling computes metric over the rolling windows ending at the chain's
// newest indexed block (tipTime, unix seconds), and over all time from
// firstTime. Windows a metric has no value for are absent.
func EVMRolling(ctx context.Context, db *store.DB, chain, metric string, firstTime, tipTime int64) (map[string]float64, error) {
	out := map[string]float64{}
	byKind := map[Interval][]EVMBucket{}
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
		byKind[k] = rows
	}
	_, all, err := readBuckets(ctx, db, chain, Month, Month.Floor(firstTime), Month.Next(Month.Floor(tipTime)))
	if err != nil {
		return nil, err
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
		v, err := windowValue(ctx, db, chain, metric, w.Kind, start, in)
		if err != nil {
			return nil, err
		}
		out[w.Name] = v
	}
	if distinctWindows(metric) == len(rollingWindows) {
		v, err := windowValue(ctx, db, chain, metric, Month, firstTime, all)
		if err != nil {
			return nil, err
		}
		out["allTime"] = v
	}
	return out, nil
}

// windowValue folds the rows of a window starting at start into metric's
// value. Distinct-address metrics count the distinct addresses of the rows'
// intervals (one row needs no counting).
func windowValue(ctx context.Context, db *store.DB, chain, metric string, k Interval, start int64, rows []EVMBucket) (float64, error) {
	var t EVMBucket
	for i := range rows {
		b := &rows[i]
		t.add(b)
		// One row's distinct counts are the window's; more are counted below.
		t.Active, t.Senders, t.Deployers = b.Active, b.Senders, b.Deployers
		t.CumDeployers = b.CumDeployers
	}
	role := 0
	switch metric {
	case "activeAddresses":
		role = roleActive
	case "activeSenders":
		role = roleSender
	case "deployers":
		role = roleDeployer
		if k == Month { // all time: every deployer ever
			return float64(t.CumDeployers), nil
		}
	}
	if role != 0 && len(rows) > 1 {
		n, err := countDistinct(ctx, db, chain, role, start)
		if err != nil {
			return 0, err
		}
		t.Active, t.Senders, t.Deployers = n, n, n
	}
	return EVMValue(metric, &t, start, &t), nil
}

// countDistinct counts the distinct addresses in role since start (unix
// seconds): those whose newest time is at or after it, the chain's newest
// block being the window's end.
func countDistinct(ctx context.Context, db *store.DB, chain string, role int, start int64) (int64, error) {
	var n int64
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM metrics_evm_last
		WHERE chain_key = $1 AND role = $2 AND last_ms >= $3`, chain, role, start*1000).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("metrics: count distinct addresses: %w", err)
	}
	return n, nil
}
