package metrics

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// ChainSpan is what the rollups know of a chain: the times of its oldest and
// newest indexed blocks and when its rollups were last written.
type ChainSpan struct {
	FirstTime int64
	TipTime   int64
	TipHeight int64
	UpdatedAt int64
}

// LoadSpan reads a chain's span; ok is false before its first block is indexed.
// Several chains (an aggregate) span from the oldest first block to the
// newest tip of any of them; ok is false while none has a block.
func LoadSpan(ctx context.Context, db *store.DB, chains ...string) (span ChainSpan, ok bool, err error) {
	if len(chains) != 1 {
		return loadSpans(ctx, db, chains)
	}
	err = db.QueryRowContext(ctx, `SELECT first_time, tip_time, tip_height, updated_at FROM metrics_chains WHERE chain_key = $1`, chains[0]).
		Scan(&span.FirstTime, &span.TipTime, &span.TipHeight, &span.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return ChainSpan{}, false, nil
	}
	if err != nil {
		return ChainSpan{}, false, fmt.Errorf("metrics: read span of %s: %w", chains[0], err)
	}
	return span, true, nil
}

func loadSpans(ctx context.Context, db *store.DB, chains []string) (span ChainSpan, ok bool, err error) {
	if len(chains) == 0 {
		return ChainSpan{}, false, nil
	}
	in, args := chainsIn(chains, 1)
	var first, tip, height, updated sql.NullInt64
	err = db.QueryRowContext(ctx, `SELECT MIN(first_time), MAX(tip_time), MAX(tip_height), MAX(updated_at) FROM metrics_chains WHERE `+in, args...).
		Scan(&first, &tip, &height, &updated)
	if err != nil {
		return ChainSpan{}, false, fmt.Errorf("metrics: read span of %v: %w", chains, err)
	}
	if !first.Valid {
		return ChainSpan{}, false, nil
	}
	return ChainSpan{FirstTime: first.Int64, TipTime: tip.Int64, TipHeight: height.Int64, UpdatedAt: updated.Int64}, true, nil
}

// Point is one value of a series at the start of its interval.
type Point struct {
	Timestamp int64
	Value     float64
}

// MaxPoints bounds one page of a series (the API's largest pageSize).
const MaxPoints = 2160

// TPSPage computes up to n points of a chain's average-TPS series at
// interval iv, newest first, for the intervals starting at or before from and
// at or after lo (both interval starts), given the chain's span.
//
// A point's value is the transactions of the blocks whose time falls in the
// interval divided by the interval's length in seconds; for the interval
// holding the chain's newest indexed block, by the seconds from its start to
// that block's time (at least 1). The index's tip, not the wall clock, ends the
// series, so the same index always gives the same answer. Intervals with no
// block are 0.
//
// next is the start of the interval after the last returned one (older), and
// more says whether it is still >= lo.
func TPSPage(ctx context.Context, db *store.DB, chain string, iv Interval, span ChainSpan, lo, from int64, n int) (pts []Point, next int64, more bool, err error) {
	starts, err := intervalStarts(iv, lo, from, n)
	if err != nil || len(starts) == 0 {
		return []Point{}, 0, false, err
	}
	oldest, newest := starts[len(starts)-1], starts[0]
	counts, err := bucketCounts(ctx, db, chain, iv, oldest, iv.Next(newest))
	if err != nil {
		return nil, 0, false, err
	}
	// counts is ascending by bucket; fold the buckets into the intervals
	// (one bucket per interval for hour and day, several for week and month).
	tipStart := iv.Floor(span.TipTime)
	sums := make([]int64, len(starts))
	j := len(starts) - 1 // interval index, oldest first
	for _, c := range counts {
		for j > 0 && c.bucket >= starts[j-1] {
			j--
		}
		sums[j] += c.count
	}
	pts = make([]Point, len(starts))
	for i, s := range starts {
		secs := iv.Next(s) - s
		if s == tipStart {
			secs = max(span.TipTime-s, 1)
		}
		pts[i] = Point{Timestamp: s, Value: float64(sums[i]) / float64(secs)}
	}
	next = iv.Prev(oldest)
	return pts, next, next >= lo, nil
}

// intervalStarts lists up to n (1..MaxPoints) interval starts from from
// down to lo, newest first.
func intervalStarts(iv Interval, lo, from int64, n int) ([]int64, error) {
	if n <= 0 || n > MaxPoints {
		return nil, fmt.Errorf("metrics: page of %d points", n)
	}
	starts := make([]int64, 0, min(n, 256))
	for t := from; t >= lo && len(starts) < n; t = iv.Prev(t) {
		starts = append(starts, t)
	}
	return starts, nil
}

type bucketCount struct {
	bucket, count int64
}

// bucketCounts reads the rollup buckets in [from, to), ascending: hourly rows
// for hour intervals, daily rows for the others.
func bucketCounts(ctx context.Context, db *store.DB, chain string, iv Interval, from, to int64) ([]bucketCount, error) {
	table := "metrics_tx_daily"
	if iv == Hour {
		table = "metrics_tx_hourly"
	}
	rows, err := db.QueryContext(ctx, `SELECT bucket, tx_count FROM `+table+`
		WHERE chain_key = $1 AND bucket >= $2 AND bucket < $3 ORDER BY bucket`, chain, from, to)
	if err != nil {
		return nil, fmt.Errorf("metrics: read %s: %w", table, err)
	}
	defer rows.Close()
	var out []bucketCount
	for rows.Next() {
		var c bucketCount
		if err := rows.Scan(&c.bucket, &c.count); err != nil {
			return nil, fmt.Errorf("metrics: read %s: %w", table, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: read %s: %w", table, err)
	}
	return out, nil
}

// Collection is an NFT contract's holder totals.
type Collection struct {
	Holders int64
	Units   string // decimal
}

// LoadCollection reads a contract's totals (zero when it has no holder).
func LoadCollection(ctx context.Context, db *store.DB, chain, token string) (Collection, error) {
	var c Collection
	err := db.QueryRowContext(ctx, `SELECT holders, units FROM metrics_nft_collections WHERE chain_key = $1 AND token = $2`, chain, token).
		Scan(&c.Holders, &c.Units)
	if errors.Is(err, sql.ErrNoRows) {
		return Collection{Units: "0"}, nil
	}
	if err != nil {
		return Collection{}, fmt.Errorf("metrics: read collection %s: %w", token, err)
	}
	return c, nil
}

// Holder is one current holder of an NFT contract.
type Holder struct {
	Address string
	Units   string // decimal token count
	Key     string // UnitsKey form, for cursors
}

// HolderCursor is the last holder of a page: the next page starts after it in
// the order units descending, then address ascending.
type HolderCursor struct {
	Key     string `json:"k"`
	Address string `json:"a"`
}

// Holders returns up to n holders of a contract after cur (nil: from the
// top), ordered by token count descending, then address. Both steps are range
// scans of metrics_nft_holders_rank: the holders tied with the cursor's count
// after its address, then the holders with smaller counts.
func Holders(ctx context.Context, db *store.DB, chain, token string, cur *HolderCursor, n int) ([]Holder, error) {
	out := make([]Holder, 0, n)
	if cur != nil {
		if _, err := ParseUnitsKey(cur.Key); err != nil {
			return nil, fmt.Errorf("metrics: holder cursor: %w", err)
		}
		var err error
		out, err = scanHolders(ctx, db, out, `SELECT holder, units_key FROM metrics_nft_holders
			WHERE chain_key = $1 AND token = $2 AND units_key = $3 AND holder > $4
			ORDER BY units_key DESC, holder LIMIT $5`, chain, token, cur.Key, cur.Address, n)
		if err != nil || len(out) == n {
			return out, err
		}
		return scanHolders(ctx, db, out, `SELECT holder, units_key FROM metrics_nft_holders
			WHERE chain_key = $1 AND token = $2 AND units_key < $3
			ORDER BY units_key DESC, holder LIMIT $4`, chain, token, cur.Key, n-len(out))
	}
	return scanHolders(ctx, db, out, `SELECT holder, units_key FROM metrics_nft_holders
		WHERE chain_key = $1 AND token = $2 ORDER BY units_key DESC, holder LIMIT $3`, chain, token, n)
}

func scanHolders(ctx context.Context, db *store.DB, out []Holder, q string, args ...any) ([]Holder, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("metrics: read holders: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h Holder
		if err := rows.Scan(&h.Address, &h.Key); err != nil {
			return nil, fmt.Errorf("metrics: read holders: %w", err)
		}
		if h.Units, err = ParseUnitsKey(h.Key); err != nil {
			return nil, fmt.Errorf("metrics: holder %s: %w", h.Address, err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: read holders: %w", err)
	}
	return out, nil
}
