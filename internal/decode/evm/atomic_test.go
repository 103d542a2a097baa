package evm

import (
	"context"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/decode/catomic"
	"github.com/permafrost-dev/permafrost/internal/devnet/indextest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// catomicApplier adapts the C-chain atomic-tx indexer to AtomicApplier, as
// the lead wires it: AVAX effects (Wei) change native balances; other assets
// are coreth multicoin balances, which this index does not keep.
type catomicApplier struct{ a *catomic.Applier }

func (c catomicApplier) ApplyAtomic(ctx context.Context, tx *store.Tx, height uint64, time int64, hash string, extra []byte) ([]BalanceDelta, error) {
	changes, err := c.a.ApplyBlock(ctx, tx, catomic.Block{Height: height, Hash: hash, Time: time}, extra)
	if err != nil {
		return nil, err
	}
	out := make([]BalanceDelta, 0, len(changes))
	for _, ch := range changes {
		if ch.Wei != nil {
			out = append(out, BalanceDelta{Address: ch.Address, Delta: ch.Wei})
		}
	}
	return out, nil
}

// TestRecordedCChainWithAtomic indexes the recording with the atomic txs
// applied: every recorded eth_getBalance then matches, including the
// addresses that imported and exported AVAX.
func TestRecordedCChainWithAtomic(t *testing.T) {
	rec := loadRecording(t)
	blocks := rec.rawBlocks(t)
	work := loadWorkload(t)
	net := loadNetwork(t)
	g := indextest.Genesis(t)
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		a, err := catomic.New(g, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := CChainConfig(g)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Atomic = catomicApplier{a}
		ix, err := NewIndexer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		indextest.Apply(t, db, ix, blocks, 10)
		checkRecordedChain(t, db, rec, work, net, nil)
		var n int
		if err := db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM px_txs WHERE chain_key = 'C'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 5 {
			t.Errorf("atomic txs indexed = %d, want 5", n)
		}
	})
}
