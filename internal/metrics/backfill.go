package metrics

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// BackfillEVM writes the chain metrics (metrics_evm_buckets,
// metrics_evm_seen) of an EVM chain whose blocks were indexed before those
// rollups existed (an index made before migration 0120, or a dataset written
// by the bare EVM indexer), from the rows already indexed: the same rollup
// as ingestion, batch blocks at a time, in block order, in one store
// transaction. It does
// nothing when the chain already has chain-metrics rows, and adds the
// chain's span to metrics_chains when it has none. It must not run while
// the chain is being indexed (`permafrost reindex` rebuilds everything
// instead). It returns the number of blocks rolled up.
func BackfillEVM(ctx context.Context, db *store.DB, chain string, batch int) (int64, error) {
	if batch <= 0 {
		batch = 256
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM metrics_evm_buckets WHERE chain_key = $1 LIMIT 1) x`, chain).Scan(&n); err != nil {
		return 0, fmt.Errorf("metrics %s: backfill: %w", chain, err)
	}
	if n > 0 {
		return 0, nil // the chain has its rollups: the usual start
	}
	// The span from the first and last blocks' own rows (block times grow
	// with the height): primary-key reads, where MIN/MAX(timestamp) would
	// read every block.
	var lo, hi, first, tip sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MIN(number), MAX(number) FROM evm_blocks WHERE chain_key = $1`, chain).
		Scan(&lo, &hi); err != nil {
		return 0, fmt.Errorf("metrics %s: backfill: %w", chain, err)
	}
	if !hi.Valid {
		return 0, nil
	}
	if err := db.QueryRowContext(ctx, `SELECT (SELECT timestamp FROM evm_blocks WHERE chain_key = $1 AND number = $2),
		(SELECT timestamp FROM evm_blocks WHERE chain_key = $1 AND number = $3)`, chain, lo.Int64, hi.Int64).
		Scan(&first, &tip); err != nil {
		return 0, fmt.Errorf("metrics %s: backfill: %w", chain, err)
	}
	// One transaction: an interrupted backfill leaves no rows, so the next
	// start backfills again (a partial one would look complete).
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, err
	}
	var e evmRollup
	for from := lo.Int64; from <= hi.Int64; from += int64(batch) {
		to := min(from+int64(batch)-1, hi.Int64)
		for h := from; h <= to; h++ {
			e.note(h)
		}
		err = e.flush(ctx, tx, chain)
		e.reset()
		if err != nil {
			tx.Rollback()
			return 0, fmt.Errorf("metrics %s: backfill blocks %d..%d: %w", chain, from, to, err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO metrics_chains (chain_key, first_time, tip_time, tip_height, updated_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (chain_key) DO NOTHING`, chain, first.Int64, tip.Int64, hi.Int64, time.Now().Unix()); err != nil {
		tx.Rollback()
		return 0, fmt.Errorf("metrics %s: backfill span: %w", chain, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("metrics %s: backfill: %w", chain, err)
	}
	return hi.Int64 - lo.Int64 + 1, nil
}
