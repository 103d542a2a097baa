package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"sort"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// Reindex rebuilds every derived table from the stored raw blocks, without
// fetching anything: it clears the tables the chains' indexers write, then
// replays each chain's raw blocks in height order, one transaction per batch.
// Interrupted, it leaves the derived tables partial; run it again to finish
// (ingestion must not run meanwhile).
func Reindex(ctx context.Context, db StoreDB, chains []Chain, batch int, log *slog.Logger) error {
	if batch <= 0 {
		batch = 256
	}
	tables := map[string]bool{}
	for _, c := range chains {
		for _, t := range c.Indexer.DerivedTables() {
			tables[t] = true
		}
		if c.History != nil {
			for _, t := range c.History.DerivedTables() {
				tables[t] = true
			}
		}
	}
	names := make([]string, 0, len(tables))
	for t := range tables {
		names = append(names, t)
	}
	sort.Strings(names)
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	for _, t := range names {
		if _, err := tx.Exec(ctx, "DELETE FROM "+t); err != nil {
			tx.Rollback()
			return fmt.Errorf("reindex: clear %s: %w", t, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	log.Info("reindex: cleared derived tables", "tables", names)
	for _, c := range chains {
		if c.History != nil {
			if err := c.History.Replay(ctx, db); err != nil {
				return fmt.Errorf("reindex %s: history: %w", c.Key, err)
			}
		}
		next := int64(0)
		total := 0
		for {
			blocks, err := readRaw(ctx, db, c.Key, next, batch)
			if err != nil {
				return err
			}
			if len(blocks) == 0 {
				break
			}
			tx, err := db.Begin(ctx)
			if err != nil {
				return err
			}
			if err := reapply(ctx, tx, c, blocks, next); err != nil {
				tx.Rollback()
				Discard(c.Indexer)
				return err
			}
			next += int64(len(blocks))
			if err := tx.Commit(); err != nil {
				return err
			}
			total += len(blocks)
		}
		log.Info("reindex: chain done", "chain", c.Key, "blocks", total)
	}
	return nil
}

// reapply indexes stored blocks again, from height next on, inside tx.
func reapply(ctx context.Context, tx *store.Tx, c Chain, blocks []RawBlock, next int64) error {
	for _, b := range blocks {
		if int64(b.Height) != next {
			return fmt.Errorf("reindex %s: raw block %d missing", c.Key, next)
		}
		if err := c.Indexer.Apply(ctx, tx, b); err != nil {
			return fmt.Errorf("reindex %s: block %d: %w", c.Key, b.Height, err)
		}
		next++
	}
	if err := Flush(ctx, c.Indexer, tx); err != nil {
		return fmt.Errorf("reindex %s: %w", c.Key, err)
	}
	return nil
}

func readRaw(ctx context.Context, db StoreDB, chain string, from int64, limit int) ([]RawBlock, error) {
	rows, err := db.QueryContext(ctx, `SELECT height, hash, block_time, body, encoding FROM raw_blocks
		WHERE chain_key = $1 AND height >= $2 ORDER BY height LIMIT $3`, chain, from, limit)
	if err != nil {
		return nil, fmt.Errorf("reindex: read raw blocks of %s: %w", chain, err)
	}
	defer rows.Close()
	var out []RawBlock
	for rows.Next() {
		var b RawBlock
		var h int64
		var body []byte
		var enc RawEncoding
		if err := rows.Scan(&h, &b.Hash, &b.Timestamp, &body, &enc); err != nil {
			return nil, fmt.Errorf("reindex: read raw blocks of %s: %w", chain, err)
		}
		var err error
		if b.Bytes, err = RawBody(body, enc); err != nil {
			return nil, fmt.Errorf("reindex: %s block %d: %w", chain, h, err)
		}
		b.Height = uint64(h)
		out = append(out, b)
	}
	return out, rows.Err()
}
