// Package ingest drives one pipeline per chain: fetch raw blocks from a source,
// hand each to the chain's Indexer inside one store transaction together with
// the raw block and the checkpoint, commit, repeat.
package ingest

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// RawBlock is a block as fetched: P/X codec bytes (no hex checksum), or for EVM
// chains the JSON {"block":...,"receipts":[...]}.
type RawBlock struct {
	Height    uint64
	Hash      string
	Bytes     []byte
	Timestamp int64
	// Stored is Bytes as raw_blocks keeps it, when Encoding is not RawPlain
	// (set by the pipeline's fetch stage).
	Stored   []byte
	Encoding RawEncoding
	// Prepared is what the chain's Preparer made of the block ahead of
	// Apply (nil if it has none, or could not); an EVM chain's source sets
	// it when the indexer decoded the block in the fetch (chains.EVMSource),
	// and Prepare leaves it.
	Prepared any
}

// stored is the body to write to raw_blocks.
func (b *RawBlock) stored() []byte {
	if b.Encoding != RawPlain {
		return b.Stored
	}
	return b.Bytes
}

// Indexer maps one raw block to rows. Apply is called in height order, exactly
// once per height, inside tx; height 0 (genesis) also loads genesis state.
type Indexer interface {
	Apply(ctx context.Context, tx *store.Tx, b RawBlock) error
	// DerivedTables lists the tables Apply writes, so reindex can clear them
	// and replay the stored raw blocks.
	DerivedTables() []string
}

// Batcher is an Indexer that defers part of its writes to the end of a batch
// (blocks written in one transaction), to write once per key what every block
// of the batch changed: rollup counters, holder counts.
type Batcher interface {
	// Flush writes what Apply deferred since the last Flush or Discard. It is
	// called once per batch, inside the batch's transaction, after the last
	// Apply and before the checkpoint.
	Flush(ctx context.Context, tx *store.Tx) error
	// Discard forgets what Apply deferred: the batch's transaction is being
	// abandoned (it will be applied again).
	Discard()
}

// Preparer is an Indexer that does the part of Apply that needs no store
// (decoding) ahead, on the fetch stage's goroutine, while earlier blocks are
// written: the writer is the pipeline's critical path. Prepare runs in height
// order, concurrently with Apply of earlier blocks, never with another
// Prepare; it leaves its result in b.Prepared for Apply. Apply must still
// accept a block that was not prepared (reindex, a failed Prepare).
type Preparer interface {
	Prepare(b *RawBlock)
}

// Collector is a Preparer with a second stage whose result is too big to
// hold for every chunk between the fetch and the writer (a block's rows):
// Collect runs on a goroutine of its own, within the chunk the writer is
// applying (ApplyBlocks), on a block Prepare left in b.Prepared, never twice
// at once. It needs no store; Apply does itself what Collect did not (a
// block not collected, or one Collect failed on).
type Collector interface {
	Collect(b *RawBlock)
}

// Decorator is an Indexer that wraps another and adds writes of its own
// (metrics rollups, webhook events). Prepare and ApplyBlocks find the
// Preparer and Collector through decorators (Unwrap), so a decorator need not
// forward those stages: the production wiring wraps the EVM indexer twice,
// and a wrapper that forwarded Prepare but not Collect had left every block's
// Collect to the writer (docs/benchmarks.md "Fifteenth session").
type Decorator interface {
	Unwrap() Indexer
}

// stage returns the outermost indexer of ix's decorator chain that
// implements T.
func stage[T any](ix Indexer) (T, bool) {
	for ix != nil {
		if s, ok := any(ix).(T); ok {
			return s, true
		}
		d, ok := ix.(Decorator)
		if !ok {
			break
		}
		ix = d.Unwrap()
	}
	var none T
	return none, false
}

// Prepare runs the Prepare of ix (or of the indexer it decorates) on each
// block if it is a Preparer, and the first block's Collect if it is a
// Collector (ApplyBlocks' collector starts at the second block: the writer
// applies the first at once).
func Prepare(ix Indexer, blocks []RawBlock) {
	if p, ok := stage[Preparer](ix); ok {
		for i := range blocks {
			p.Prepare(&blocks[i])
		}
	}
	if c, ok := stage[Collector](ix); ok && len(blocks) > 0 {
		c.Collect(&blocks[0])
	}
}

// ApplyBlocks applies blocks in order, in tx. If ix is a Collector, a
// goroutine collects the blocks after the first, in order, while the writer,
// the pipeline's critical path, applies them: the writer is left with what
// depends on its state and the statements (docs/benchmarks.md "Tenth
// session"). Each block is claimed once, by the collector or by the writer
// (whose Apply then does the collecting): the writer never waits for a
// collector that has not got a core, only for one in the middle of the
// block it wants. A goroutine per block, waited for, ran mostly on the
// writer's own core once both were busy, after the writer blocked on it
// (docs/benchmarks.md "Fifteenth session").
func ApplyBlocks(ctx context.Context, tx *store.Tx, ix Indexer, blocks []RawBlock) error {
	c, collects := stage[Collector](ix)
	if !collects || len(blocks) < 2 {
		return applyEach(ctx, tx, ix, blocks, nil)
	}
	claims := make([]atomic.Int32, len(blocks))
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i < len(blocks) && !stop.Load(); i++ {
			if claims[i].CompareAndSwap(unclaimed, collecting) {
				c.Collect(&blocks[i])
				claims[i].Store(collected)
			}
		}
	}()
	defer func() {
		stop.Store(true)
		<-done // nothing outlives the call: the caller may Discard
	}()
	return applyEach(ctx, tx, ix, blocks, func(i int) {
		if i == 0 || claims[i].CompareAndSwap(unclaimed, applying) {
			return
		}
		for claims[i].Load() != collected {
			runtime.Gosched() // the collector is in the middle of this block
		}
	})
}

// A block's claim in ApplyBlocks.
const (
	unclaimed int32 = iota
	collecting
	collected
	applying
)

// applyEach applies blocks in order, each after claim(i) (if not nil).
func applyEach(ctx context.Context, tx *store.Tx, ix Indexer, blocks []RawBlock, claim func(int)) error {
	for i := range blocks {
		if claim != nil {
			claim(i)
		}
		if err := ix.Apply(ctx, tx, blocks[i]); err != nil {
			return fmt.Errorf("index block %d: %w", blocks[i].Height, err)
		}
	}
	return nil
}

// Flush runs ix's Flush if it is a Batcher.
func Flush(ctx context.Context, ix Indexer, tx *store.Tx) error {
	if b, ok := ix.(Batcher); ok {
		return b.Flush(ctx, tx)
	}
	return nil
}

// Discard runs ix's Discard if it is a Batcher.
func Discard(ix Indexer) {
	if b, ok := ix.(Batcher); ok {
		b.Discard()
	}
}

// History is a chain's history from before its first block that the node
// serves apart from its blocks (the X-chain's DAG before the Cortina
// linearization). The pipeline ingests it before the chain's blocks;
// Reindex replays it before their raw blocks.
type History interface {
	// Ingest fetches and indexes what is not indexed yet, each batch with
	// its stored containers (its checkpoint) in one transaction, and
	// returns when it reached the node's end. A node that does not serve
	// the history is not an error (Notice says so).
	Ingest(ctx context.Context, db *store.DB) error
	// Replay indexes the stored history again, without fetching.
	Replay(ctx context.Context, db StoreDB) error
	// DerivedTables are the tables Replay rebuilds beyond the indexer's.
	DerivedTables() []string
}
