// Package ingest drives one pipeline per chain: fetch raw blocks from a source,
// hand each to the chain's Indexer inside one store transaction together with
// the raw block and the checkpoint, commit, repeat.
package ingest

import (
	"context"
	"fmt"

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
// hold for a whole chunk of blocks (a block's rows): Collect runs on a
// goroutine of its own, at most one block ahead of Apply (ApplyBlocks), on a
// block Prepare left in b.Prepared. It needs no store; Apply does itself what
// Collect did not (a block not collected, or one Collect failed on).
type Collector interface {
	Collect(b *RawBlock)
}

// Prepare runs ix's Prepare on each block if it is a Preparer, and the
// first block's Collect if it is a Collector (ApplyBlocks collects each next
// block while one is applied: the first has no block before it).
func Prepare(ix Indexer, blocks []RawBlock) {
	if p, ok := ix.(Preparer); ok {
		for i := range blocks {
			p.Prepare(&blocks[i])
		}
	}
	if c, ok := ix.(Collector); ok && len(blocks) > 0 {
		c.Collect(&blocks[0])
	}
}

// ApplyBlocks applies blocks in order, in tx. If ix is a Collector, each
// block's Collect runs on a goroutine of its own while the block before it
// is applied: the writer, the pipeline's critical path, is left with what
// depends on its state and the statements (docs/benchmarks.md "Tenth
// session").
func ApplyBlocks(ctx context.Context, tx *store.Tx, ix Indexer, blocks []RawBlock) error {
	c, collects := ix.(Collector)
	var ahead chan struct{}
	defer func() {
		if ahead != nil {
			<-ahead // nothing outlives the call: the caller may Discard
		}
	}()
	for i := range blocks {
		if ahead != nil {
			<-ahead
			ahead = nil
		}
		if collects && i+1 < len(blocks) {
			done := make(chan struct{})
			go func(b *RawBlock) {
				defer close(done)
				c.Collect(b)
			}(&blocks[i+1])
			ahead = done
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
