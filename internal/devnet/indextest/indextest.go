// Package indextest feeds the devnet-a recording (package devnet) through
// indexers the way the ingest driver does, for the tests of the decode
// packages. It is apart from devnet because it needs the ingest, store and
// genesis packages, which devnet, a leaf every package's tests can import,
// must not.
package indextest

import (
	"context"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Genesis loads the recorded network's genesis.json.
func Genesis(t testing.TB) *genesis.Genesis {
	t.Helper()
	g, err := genesis.Load(devnet.LoadNetwork(t).NetworkID, devnet.Path(t, "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// XBlocks returns X-chain blocks 0..19 as the ingest driver hands them to
// the indexer (devnet.XBlocks).
func XBlocks(t testing.TB) []ingest.RawBlock {
	t.Helper()
	var out []ingest.RawBlock
	for _, b := range devnet.XBlocks(t) {
		out = append(out, ingest.RawBlock{Height: b.Height, Hash: b.Hash, Bytes: b.Bytes, Timestamp: b.Timestamp})
	}
	return out
}

// Apply applies blocks in order through ix, batch blocks per store
// transaction, as the ingest driver's batches do.
func Apply(t testing.TB, db *store.DB, ix ingest.Indexer, blocks []ingest.RawBlock, batch int) {
	t.Helper()
	if batch < 1 {
		t.Fatalf("indextest: batch %d", batch)
	}
	ctx := context.Background()
	for i := 0; i < len(blocks); i += batch {
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks[i:min(i+batch, len(blocks))] {
			if err := ix.Apply(ctx, tx, b); err != nil {
				tx.Rollback()
				t.Fatalf("apply height %d: %v", b.Height, err)
			}
		}
		if err := ingest.Flush(ctx, ix, tx); err != nil {
			tx.Rollback()
			t.Fatalf("flush: %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// PBlocks returns the recorded P-chain blocks 0..tip (devnet.PBlocks) as the
// ingest driver hands them to the indexer.
func PBlocks(t testing.TB) []ingest.RawBlock {
	t.Helper()
	byHeight := devnet.PBlocks(t, devnet.LoadRPC(t, devnet.P))
	out := make([]ingest.RawBlock, len(byHeight))
	for h, b := range byHeight {
		if h >= uint64(len(out)) {
			t.Fatalf("indextest: gap in the recorded P heights at %d", h)
		}
		out[h] = ingest.RawBlock{Height: h, Bytes: b.Bytes()}
	}
	return out
}
