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
// source blockchain when BySrc (else every source together), per destination
// when ByDst; Src and Dst filter those sides ("" for any). Ordered by source,
// then destination.
func ICMPairs(ctx context.Context, db *store.DB, l ICMLevel) ([]ICMPair, error) {
	cond, args := l.cond(1)
	rows, err := db.QueryContext(ctx, `SELECT src, dst, messages FROM metrics_icm_pairs
		WHERE messages > 0 AND `+cond+` ORDER BY src, dst`, args...)
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

// ICMLevel is a query's level and filters (see ICMPairs); Key, when set,
// narrows it to that one key (read by its primary key range).
type ICMLevel struct {
	BySrc, ByDst bool
	Src, Dst     string
	Key          *ICMPair
}

// cond is the condition selecting the level's keys, its arguments numbered
// from n.
func (l ICMLevel) cond(n int) (string, []any) {
	if l.Key != nil {
		return fmt.Sprintf("src = $%d AND dst = $%d", n, n+1), []any{l.Key.Src, l.Key.Dst}
	}
	return fmt.Sprintf(`(CASE WHEN $%d THEN src <> '' AND ($%d = '' OR src = $%d) ELSE src = '' END)
		AND (CASE WHEN $%d THEN dst <> '' AND ($%d = '' OR dst = $%d) ELSE dst = '' END)`, n, n+1, n+1, n+2, n+3, n+3),
		[]any{l.BySrc, l.Src, l.ByDst, l.Dst}
}

// ICMLevelCounts reads the counts of every key of a level per bucket in
// [from, to) (hourly rows when hourly, else daily) in one time-range read, for
// queries answering many groups: key -> (bucket, messages) ascending.
func ICMLevelCounts(ctx context.Context, db *store.DB, l ICMLevel, hourly bool, from, to int64) (map[[2]string][][2]int64, error) {
	table := "metrics_icm_daily"
	if hourly {
		table = "metrics_icm_hourly"
	}
	cond, args := l.cond(3)
	rows, err := db.QueryContext(ctx, `SELECT src, dst, bucket, messages FROM `+table+`
		WHERE bucket >= $1 AND bucket < $2 AND `+cond+` ORDER BY bucket`, append([]any{from, to}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("metrics: read %s: %w", table, err)
	}
	defer rows.Close()
	out := map[[2]string][][2]int64{}
	for rows.Next() {
		var k [2]string
		var c [2]int64
		if err := rows.Scan(&k[0], &k[1], &c[0], &c[1]); err != nil {
			return nil, fmt.Errorf("metrics: read %s: %w", table, err)
		}
		out[k] = append(out[k], c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: read %s: %w", table, err)
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

// ICMWindowSums sums, for every key of a level, its hourly counts from each
// of hourFroms up to hourTo (exclusive; one aggregate time-range read of the
// hourly rows) and its messages from each of dayFroms up to dayTo (day
// starts): the differences of two running totals (metrics_icm_daily_totals),
// point reads per key whatever the windows' lengths.
func ICMWindowSums(ctx context.Context, db *store.DB, l ICMLevel, hourFroms []int64, hourTo int64, dayFroms []int64, dayTo int64) (hours, days map[[2]string][]int64, err error) {
	if hours, err = icmWindowSums(ctx, db, "metrics_icm_hourly", l, hourFroms, hourTo); err != nil {
		return nil, nil, err
	}
	if days, err = icmDayWindows(ctx, db, l, dayFroms, dayTo); err != nil {
		return nil, nil, err
	}
	return hours, days, nil
}

func icmWindowSums(ctx context.Context, db *store.DB, table string, l ICMLevel, froms []int64, to int64) (map[[2]string][]int64, error) {
	// Placeholders numbered in text order (the SQLite rule of the migrations).
	// A group has rows, so its sums are never NULL.
	q := "SELECT src, dst"
	var args []any
	for _, from := range froms {
		args = append(args, from)
		q += fmt.Sprintf(", SUM(CASE WHEN bucket >= $%d THEN messages ELSE 0 END)", len(args))
	}
	n := len(args)
	cond, cargs := l.cond(n + 3)
	q += fmt.Sprintf(" FROM %s WHERE bucket >= $%d AND bucket < $%d AND %s GROUP BY src, dst", table, n+1, n+2, cond)
	args = append(append(args, froms[0], to), cargs...)
	return icmKeyed(ctx, db, q, args, len(froms))
}

// icmDayWindows reads, for every key of a level, the running totals before
// dayTo and before each of froms, and returns the windows' counts.
func icmDayWindows(ctx context.Context, db *store.DB, l ICMLevel, froms []int64, to int64) (map[[2]string][]int64, error) {
	q := "SELECT k.src, k.dst"
	var args []any
	for _, t := range append([]int64{to}, froms...) {
		args = append(args, t)
		q += fmt.Sprintf(`, COALESCE((SELECT t.messages FROM metrics_icm_daily_totals t WHERE t.src = k.src AND t.dst = k.dst
			AND t.bucket < $%d ORDER BY t.bucket DESC LIMIT 1), 0)`, len(args))
	}
	cond, cargs := l.cond(len(args) + 1)
	totals, err := icmKeyed(ctx, db, q+" FROM metrics_icm_pairs k WHERE "+cond, append(args, cargs...), len(args))
	if err != nil {
		return nil, err
	}
	out := make(map[[2]string][]int64, len(totals))
	for k, v := range totals {
		w := make([]int64, len(froms))
		for i := range froms {
			w[i] = v[0] - v[i+1]
		}
		out[k] = w
	}
	return out, nil
}

// icmKeyed runs a query of rows (src, dst, n integers) and returns them by
// key.
func icmKeyed(ctx context.Context, db *store.DB, q string, args []any, n int) (map[[2]string][]int64, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("metrics: icm windows: %w", err)
	}
	defer rows.Close()
	out := map[[2]string][]int64{}
	for rows.Next() {
		var k [2]string
		v := make([]int64, n)
		dst := []any{&k[0], &k[1]}
		for i := range v {
			dst = append(dst, &v[i])
		}
		if err := rows.Scan(dst...); err != nil {
			return nil, fmt.Errorf("metrics: icm windows: %w", err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: icm windows: %w", err)
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
