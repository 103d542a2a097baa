// Package metrics keeps the metrics service's rollups as blocks are indexed
// and reads them back: transactions per hour and per day of every chain
// (average TPS), the current holders of every NFT contract of EVM chains
// with their token counts (nfts:listHolders), and the EVM chain metrics of
// the Metrics API v2 per hour, day, week and month with exact distinct
// address counts (evmrollup.go, evmquery.go; docs/metrics.md).
//
// The rollups are written by a decorator around each chain's indexer, inside
// the block's own store transaction: they are derived tables like any other,
// never ahead of or behind the blocks, and rebuilt by reindex.
package metrics

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Chain kinds, as in ingest.Chain.Kind.
const (
	KindP   = "P"
	KindX   = "X"
	KindEVM = "EVM"
)

// Option adjusts a rollup decorator.
type Option func(*Rollup)

// WithClock sets the clock of updated_at (the API's lastRun); tests inject one.
func WithClock(now func() time.Time) Option {
	return func(r *Rollup) {
		if now != nil {
			r.now = now
		}
	}
}

// Rollup is an ingest.Indexer that runs inner and then adds the block to the
// metrics rollups: its transaction count to the hourly and daily buckets of
// its timestamp, the chain's span, and (EVM chains) the NFT holder counts
// its token transfers changed. It is an ingest.Batcher: the rollup rows are
// written once per batch (Flush), whatever the number of blocks in it.
type Rollup struct {
	chain   string
	kind    string
	inner   ingest.Indexer
	now     func() time.Time
	nft     holderWriter
	evm     evmRollup
	pending pendingCounts
	// evmApplied counts the EVM blocks applied since the last Flush, whose
	// block rows and NFT transfers Flush reads back in one range each
	// (their heights are evm's lo..hi).
	evmApplied int64
	// Metrics API v2 (issue #21 part B): P-chain staking and L1 fees, EVM
	// chains' ICM message counts.
	staking stakingRollup
	fees    feeRollup
	icm     icmRollup
}

// pendingCounts are the rollup changes of the blocks applied since the last
// Flush.
type pendingCounts struct {
	hourly, daily map[int64]int64 // bucket start -> transactions
	blocks        int
	first, tip    int64 // block times
	height        int64 // last block's height
}

func (p *pendingCounts) add(ts, n, height int64) {
	if p.hourly == nil {
		p.hourly, p.daily = map[int64]int64{}, map[int64]int64{}
	}
	p.hourly[Hour.Floor(ts)] += n
	p.daily[Day.Floor(ts)] += n
	if p.blocks == 0 || ts < p.first {
		p.first = ts
	}
	if p.blocks == 0 || ts > p.tip {
		p.tip = ts
	}
	p.height = height
	p.blocks++
}

func (p *pendingCounts) reset() {
	clear(p.hourly)
	clear(p.daily)
	p.blocks = 0
}

var (
	_ ingest.Indexer   = (*Rollup)(nil)
	_ ingest.Batcher   = (*Rollup)(nil)
	_ ingest.Decorator = (*Rollup)(nil)
)

// WithRollup wraps the indexer of chain chainKey of kind (P, X or EVM):
//
//	ix = metrics.WithRollup(c.Key, c.Kind, ix)
//
// The transaction count and time of a block are read back from the row the
// inner indexer wrote for it (px_blocks for P and X: the block's own txs, not
// the genesis txs; evm_blocks for EVM chains: the EVM transactions, not the
// C-chain's atomic txs), so the metrics count exactly what the index shows.
func WithRollup(chainKey, kind string, inner ingest.Indexer, opts ...Option) ingest.Indexer {
	r := &Rollup{chain: chainKey, kind: kind, inner: inner, now: time.Now}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Tables the decorator writes for every chain, and for EVM chains.
var (
	rollupTables = []string{"metrics_chains", "metrics_tx_hourly", "metrics_tx_daily"}
	nftTables    = []string{"metrics_nft_holders", "metrics_nft_collections"}
	pTables      = []string{"metrics_staking_daily", "metrics_l1_fees_daily", "metrics_l1_fees_subnet_daily", "metrics_l1_fees_total_daily"}
	icmTables    = []string{"metrics_icm_messages", "metrics_icm_hourly", "metrics_icm_daily", "metrics_icm_pairs",
		"metrics_icm_daily_totals", "metrics_icm_totals_lock"}
)

// DerivedTables is the inner indexer's tables plus the rollups.
func (r *Rollup) DerivedTables() []string {
	out := append([]string(nil), r.inner.DerivedTables()...)
	out = append(out, rollupTables...)
	switch r.kind {
	case KindEVM:
		out = append(out, nftTables...)
		out = append(out, evmTables...)
		out = append(out, icmTables...)
	case KindP:
		out = append(out, pTables...)
	}
	return out
}

const (
	selPXBlock       = `SELECT timestamp, tx_count FROM px_blocks WHERE chain_key = $1 AND height = $2`
	selEVMBlockRange = `SELECT number, timestamp, tx_count FROM evm_blocks
		WHERE chain_key = $1 AND number >= $2 AND number <= $3 ORDER BY number`

	upHourly = `INSERT INTO metrics_tx_hourly (chain_key, bucket, tx_count) VALUES ($1, $2, $3)
		ON CONFLICT (chain_key, bucket) DO UPDATE SET tx_count = metrics_tx_hourly.tx_count + excluded.tx_count`
	upDaily = `INSERT INTO metrics_tx_daily (chain_key, bucket, tx_count) VALUES ($1, $2, $3)
		ON CONFLICT (chain_key, bucket) DO UPDATE SET tx_count = metrics_tx_daily.tx_count + excluded.tx_count`
	// CASE rather than LEAST/GREATEST or min/max: the one form both backends have.
	upChain = `INSERT INTO metrics_chains (chain_key, first_time, tip_time, tip_height, updated_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (chain_key) DO UPDATE SET
		first_time = CASE WHEN excluded.first_time < metrics_chains.first_time THEN excluded.first_time ELSE metrics_chains.first_time END,
		tip_time = CASE WHEN excluded.tip_time > metrics_chains.tip_time THEN excluded.tip_time ELSE metrics_chains.tip_time END,
		tip_height = excluded.tip_height, updated_at = excluded.updated_at`
)

// Unwrap is the inner indexer (ingest.Decorator: the pipeline prepares and
// collects blocks with it ahead of Apply).
func (r *Rollup) Unwrap() ingest.Indexer { return r.inner }

// Apply indexes b with the inner indexer, then notes its rollup changes
// (written by Flush, in the same transaction).
func (r *Rollup) Apply(ctx context.Context, tx *store.Tx, b ingest.RawBlock) error {
	if r.kind == KindP {
		if err := r.fees.before(ctx, tx, int64(b.Height)); err != nil {
			return fmt.Errorf("metrics %s: block %d: L1 fees: %w", r.chain, b.Height, err)
		}
	}
	if err := r.inner.Apply(ctx, tx, b); err != nil {
		return err
	}
	var q string
	switch r.kind {
	case KindP, KindX:
		q = selPXBlock
	case KindEVM:
		// Read back at Flush, once per batch: the EVM indexer writes
		// some of its rows only then (PostgreSQL), and two reads per
		// block were a tenth of the statements (issue #22).
		r.evm.note(int64(b.Height))
		r.icm.add(int64(b.Height))
		r.evmApplied++
		return nil
	default:
		return fmt.Errorf("metrics %s: unknown chain kind %q", r.chain, r.kind)
	}
	var ts, n int64
	err := tx.QueryRow(ctx, q, r.chain, int64(b.Height)).Scan(&ts, &n)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("metrics %s: block %d: the indexer wrote no block row", r.chain, b.Height)
	}
	if err != nil {
		return fmt.Errorf("metrics %s: block %d: read block row: %w", r.chain, b.Height, err)
	}
	r.pending.add(ts, n, int64(b.Height))
	if r.kind == KindP {
		if err := r.staking.apply(ctx, tx, int64(b.Height), ts); err != nil {
			return fmt.Errorf("metrics %s: block %d: staking: %w", r.chain, b.Height, err)
		}
		if err := r.fees.after(ctx, tx, int64(b.Height), ts); err != nil {
			return fmt.Errorf("metrics %s: block %d: L1 fees: %w", r.chain, b.Height, err)
		}
	}
	return nil
}

// readEVMBatch reads back the block rows and the NFT transfers of the EVM
// blocks applied since the last Flush (heights lo..hi), after the inner
// indexer's Flush wrote them.
func (r *Rollup) readEVMBatch(ctx context.Context, tx *store.Tx) error {
	n := r.evmApplied
	r.evmApplied = 0
	if n == 0 {
		return nil
	}
	lo, hi := r.evm.lo, r.evm.hi
	rows, err := tx.Query(ctx, selEVMBlockRange, r.chain, lo, hi)
	if err != nil {
		return fmt.Errorf("metrics %s: read block rows: %w", r.chain, err)
	}
	defer rows.Close()
	var got int64
	for rows.Next() {
		var h, ts, txs int64
		if err := rows.Scan(&h, &ts, &txs); err != nil {
			return fmt.Errorf("metrics %s: read block rows: %w", r.chain, err)
		}
		r.pending.add(ts, txs, h)
		got++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("metrics %s: read block rows: %w", r.chain, err)
	}
	if got != n || hi-lo+1 != n {
		return fmt.Errorf("metrics %s: blocks %d-%d: %d blocks applied, %d block rows written", r.chain, lo, hi, n, got)
	}
	if err := r.nft.touchRange(ctx, tx, r.chain, lo, hi); err != nil {
		return fmt.Errorf("metrics %s: blocks %d-%d: nft holders: %w", r.chain, lo, hi, err)
	}
	return nil
}

// Flush writes the inner indexer's deferred rows, then the rollup changes of
// the blocks applied since the last Flush: one upsert per hour and day
// bucket, one for the chain's span, and the holder counts of the (contract,
// holder) pairs those blocks touched, recomputed from the balances at the end
// of the batch.
func (r *Rollup) Flush(ctx context.Context, tx *store.Tx) error {
	if err := ingest.Flush(ctx, r.inner, tx); err != nil {
		return err
	}
	defer r.pending.reset()
	if err := r.readEVMBatch(ctx, tx); err != nil {
		return err
	}
	p := &r.pending
	if p.blocks == 0 {
		return nil
	}
	for _, bucket := range slices.Sorted(maps.Keys(p.hourly)) {
		if _, err := tx.Exec(ctx, upHourly, r.chain, bucket, p.hourly[bucket]); err != nil {
			return fmt.Errorf("metrics %s: hourly rollup: %w", r.chain, err)
		}
	}
	for _, bucket := range slices.Sorted(maps.Keys(p.daily)) {
		if _, err := tx.Exec(ctx, upDaily, r.chain, bucket, p.daily[bucket]); err != nil {
			return fmt.Errorf("metrics %s: daily rollup: %w", r.chain, err)
		}
	}
	if _, err := tx.Exec(ctx, upChain, r.chain, p.first, p.tip, p.height, r.now().Unix()); err != nil {
		return fmt.Errorf("metrics %s: block %d: chain span: %w", r.chain, p.height, err)
	}
	switch r.kind {
	case KindEVM:
		if err := r.nft.flush(ctx, tx, r.chain); err != nil {
			return fmt.Errorf("metrics %s: block %d: nft holders: %w", r.chain, p.height, err)
		}
		defer r.evm.reset()
		if err := r.evm.flush(ctx, tx, r.chain); err != nil {
			return fmt.Errorf("metrics %s: block %d: chain metrics: %w", r.chain, p.height, err)
		}
		if err := r.icm.flush(ctx, tx, r.chain); err != nil {
			return fmt.Errorf("metrics %s: block %d: icm: %w", r.chain, p.height, err)
		}
	case KindP:
		if err := r.staking.flush(ctx, tx); err != nil {
			return fmt.Errorf("metrics %s: block %d: %w", r.chain, p.height, err)
		}
		if err := r.fees.flush(ctx, tx); err != nil {
			return fmt.Errorf("metrics %s: block %d: %w", r.chain, p.height, err)
		}
	}
	return nil
}

// Discard forgets the changes of the blocks applied since the last Flush
// (their transaction is abandoned), and the inner indexer's.
func (r *Rollup) Discard() {
	r.pending.reset()
	r.evmApplied = 0
	r.nft.discard()
	r.evm.reset()
	r.evm.known.forget()
	r.staking.discard()
	r.fees.discard()
	r.icm.discard()
	ingest.Discard(r.inner)
}
