package indextest_test

import (
	"context"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/decode/xchain"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/devnet/indextest"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// The recorded X-chain, applied in batches of 7 through the real indexer,
// ends at the recorded tip.
func TestApplyXBlocks(t *testing.T) {
	g := indextest.Genesis(t)
	if g.HRP != devnet.LoadNetwork(t).HRP {
		t.Fatalf("genesis HRP %q", g.HRP)
	}
	blocks := indextest.XBlocks(t)
	ix, err := xchain.NewIndexer(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.Open(t, storetest.SQLiteDSN(t))
	indextest.Apply(t, db, ix, blocks, 7)
	var n int
	var tip string
	if err := db.QueryRowContext(context.Background(), `SELECT COUNT(*), MAX(CASE WHEN height = 19 THEN block_id END)
		FROM px_blocks WHERE chain_key = 'X'`).Scan(&n, &tip); err != nil {
		t.Fatal(err)
	}
	if n != len(blocks) || tip != devnet.LoadNetwork(t).Tips.X.BlockID {
		t.Errorf("indexed %d X blocks, tip %s; want %d, %s", n, tip, len(blocks), devnet.LoadNetwork(t).Tips.X.BlockID)
	}
}
