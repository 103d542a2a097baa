package metrics

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// ICMPair is a (source, destination) blockchain pair with its message count.
type ICMPair struct {
	Src, Dst string
	Messages int64
}

// ICMPairs lists the pairs with at least one counted message, filtered by
// source and destination ("" for any), ordered by source, then destination.
func ICMPairs(ctx context.Context, db *store.DB, src, dst string) ([]ICMPair, error) {
	rows, err := db.QueryContext(ctx, `SELECT src, dst, messages FROM metrics_icm_pairs
		WHERE messages > 0 AND ($1 = '' OR src = $1) AND ($2 = '' OR dst = $2) ORDER BY src, dst`, src, dst)
	if err != nil {
		return nil, fmt.Errorf("metrics: icm pairs: %w", err)
	}
	defer rows.Close()
	var out []ICMPair
	for rows.Next() {
		var p ICMPair
		if err := rows.Scan(&p.Src, &p.Dst, &p.Messages); err != nil {
			return nil, fmt.Errorf("metrics: icm pairs: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: icm pairs: %w", err)
	}
	return out, nil
}

// ICMFirst is the start of the hour of the oldest counted message of pair.
func ICMFirst(ctx context.Context, db *store.DB, p ICMPair) (int64, error) {
	var first sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MIN(bucket) FROM metrics_icm_hourly WHERE src = $1 AND dst = $2 AND messages > 0`,
		p.Src, p.Dst).Scan(&first); err != nil {
		return 0, fmt.Errorf("metrics: icm %s -> %s: %w", p.Src, p.Dst, err)
	}
	return first.Int64, nil
}

// ICMCounts sums pair's message counts per bucket in [from, to): hourly rows
// for hour intervals (hourly is true), daily rows otherwise. It returns
// (bucket start, messages) ascending.
func ICMCounts(ctx context.Context, db *store.DB, p ICMPair, hourly bool, from, to int64) ([][2]int64, error) {
	table := "metrics_icm_daily"
	if hourly {
		table = "metrics_icm_hourly"
	}
	rows, err := db.QueryContext(ctx, `SELECT bucket, messages FROM `+table+`
		WHERE src = $1 AND dst = $2 AND bucket >= $3 AND bucket < $4 ORDER BY bucket`, p.Src, p.Dst, from, to)
	if err != nil {
		return nil, fmt.Errorf("metrics: read %s: %w", table, err)
	}
	defer rows.Close()
	var out [][2]int64
	for rows.Next() {
		var c [2]int64
		if err := rows.Scan(&c[0], &c[1]); err != nil {
			return nil, fmt.Errorf("metrics: read %s: %w", table, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: read %s: %w", table, err)
	}
	return out, nil
}

// ICMTipTime is the time of the newest indexed block of the EVM chains (the
// chains ICM messages are sent and received on): the end of the ICM series
// and of the summary's windows. ok is false before any EVM block is indexed.
func ICMTipTime(ctx context.Context, db *store.DB) (int64, bool, error) {
	var tip sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MAX(tip_time) FROM metrics_chains WHERE chain_key NOT IN ('P', 'X')`).Scan(&tip); err != nil {
		return 0, false, fmt.Errorf("metrics: icm tip: %w", err)
	}
	return tip.Int64, tip.Valid, nil
}
