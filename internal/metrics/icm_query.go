package metrics

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// ICMPair is a counted (source, destination) key with its message count: a
// blockchain pair, or an aggregate over every source or destination (that
// side "").
type ICMPair struct {
	Src, Dst string
	Messages int64
}

// ICMPairs lists the keys with at least one counted message at a level: per
// source blockchain when bySrc (else every source together), per destination
// when byDst; src and dst filter those sides ("" for any). Ordered by source,
// then destination.
func ICMPairs(ctx context.Context, db *store.DB, bySrc, byDst bool, src, dst string) ([]ICMPair, error) {
	rows, err := db.QueryContext(ctx, `SELECT src, dst, messages FROM metrics_icm_pairs
		WHERE messages > 0 AND (CASE WHEN $1 THEN src <> '' AND ($2 = '' OR src = $2) ELSE src = '' END)
		AND (CASE WHEN $3 THEN dst <> '' AND ($4 = '' OR dst = $4) ELSE dst = '' END) ORDER BY src, dst`, bySrc, src, byDst, dst)
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

// ICMCounts reads a key's message counts per bucket in [from, to): hourly
// rows for hour intervals (hourly is true), daily rows otherwise. It returns
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

// ICMWindowSums sums a key's hourly counts from each of hourFroms and its
// daily counts from each of dayFroms (ascending interval starts) up to
// hourTo and dayTo (exclusive), in the database: one aggregate range read a
// table, whatever the windows.
func ICMWindowSums(ctx context.Context, db *store.DB, p ICMPair, hourFroms []int64, hourTo int64, dayFroms []int64, dayTo int64) (hours, days []int64, err error) {
	if hours, err = icmWindowSums(ctx, db, "metrics_icm_hourly", p, hourFroms, hourTo); err != nil {
		return nil, nil, err
	}
	if days, err = icmWindowSums(ctx, db, "metrics_icm_daily", p, dayFroms, dayTo); err != nil {
		return nil, nil, err
	}
	return hours, days, nil
}

func icmWindowSums(ctx context.Context, db *store.DB, table string, p ICMPair, froms []int64, to int64) ([]int64, error) {
	if len(froms) == 0 {
		return nil, nil
	}
	// Placeholders numbered in text order (the SQLite rule of the migrations).
	q := "SELECT "
	var args []any
	for i, from := range froms {
		if i > 0 {
			q += ", "
		}
		args = append(args, from)
		q += fmt.Sprintf("SUM(CASE WHEN bucket >= $%d THEN messages ELSE 0 END)", len(args))
	}
	n := len(args)
	q += fmt.Sprintf(" FROM %s WHERE src = $%d AND dst = $%d AND bucket >= $%d AND bucket < $%d", table, n+1, n+2, n+3, n+4)
	args = append(args, p.Src, p.Dst, froms[0], to)
	sums := make([]sql.NullInt64, len(froms))
	dst := make([]any, len(sums))
	for i := range sums {
		dst[i] = &sums[i]
	}
	if err := db.QueryRowContext(ctx, q, args...).Scan(dst...); err != nil {
		return nil, fmt.Errorf("metrics: icm %s -> %s: %w", p.Src, p.Dst, err)
	}
	out := make([]int64, len(sums))
	for i, s := range sums {
		out[i] = s.Int64
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
