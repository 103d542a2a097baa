// Package ingest drives one pipeline per chain: fetch raw blocks from a source,
// hand each to the chain's Indexer inside one store transaction together with
// the raw block and the checkpoint, commit, repeat.
package ingest

import (
	"context"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// RawBlock is a block as fetched: P/X codec bytes (no hex checksum), or for EVM
// chains the JSON {"block":...,"receipts":[...]}.
type RawBlock struct {
	Height    uint64
	Hash      string
	Bytes     []byte
	Timestamp int64
}

// Indexer maps one raw block to rows. Apply is called in height order, exactly
// once per height, inside tx; height 0 (genesis) also loads genesis state.
type Indexer interface {
	Apply(ctx context.Context, tx *store.Tx, b RawBlock) error
	// DerivedTables lists the tables Apply writes, so reindex can clear them
	// and replay the stored raw blocks.
	DerivedTables() []string
}
