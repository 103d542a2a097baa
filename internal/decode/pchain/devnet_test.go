package pchain

import (
	"context"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/devnet/indextest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// TestDevnetA indexes the recorded devnet-a P-chain (heights 0..41) once per
// backend and checks the derived state against the node's recorded answers.
func TestDevnetA(t *testing.T) {
	rec := devnet.LoadRPC(t, devnet.P)
	net := devnet.LoadNetwork(t)
	g := indextest.Genesis(t)
	blocks := recordedBlocks(t, rec)
	if len(blocks) != 42 {
		t.Fatalf("recorded blocks = %d, want 42", len(blocks))
	}
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ix, err := NewIndexer(g)
		if err != nil {
			t.Fatal(err)
		}
		indextest.Apply(t, db, ix, blocks, 5)
		c := &checker{t: t, db: db, rec: rec, net: net, ctx: context.Background()}
		var tipTime int64
		if err := db.QueryRowContext(c.ctx, `SELECT chain_time FROM p_block_state WHERE height = 41`).Scan(&tipTime); err != nil {
			t.Fatal(err)
		}
		t.Run("blocks", c.blocksAndTxs)
		t.Run("txBytesAndStatus", c.txBytesAndStatus)
		t.Run("blockTimes", c.blockTimes)
		t.Run("utxoSets", c.utxoSets)
		t.Run("balances", func(t *testing.T) { c.balances(t, tipTime) })
		t.Run("rewardUTXOs", c.rewardUTXOs)
		t.Run("supply", c.supply)
		t.Run("validatorsAt", c.validatorsAt)
		st, err := StateAt(c.ctx, db, 41)
		if err != nil {
			t.Fatal(err)
		}
		t.Run("currentValidators", func(t *testing.T) { c.currentValidators(t, tipTime, st.L1AccruedFees) })
		t.Run("l1Validators", func(t *testing.T) { c.l1Validators(t, st.L1AccruedFees) })
		t.Run("subnetsAndChains", c.subnetsAndChains)
		t.Run("feeStates", func(t *testing.T) { c.feeStates(t, st) })
		t.Run("stakes", c.stakes)
		t.Run("stakerLifecycle", c.stakerLifecycle)
		t.Run("credentialsAndLinks", c.credentialsAndLinks)
		t.Run("fees", c.fees)
		t.Run("atomics", c.atomics)
		t.Run("delegationSums", c.delegationSums)
		t.Run("rewardOwners", c.rewardOwners)
		t.Run("derivedTables", func(t *testing.T) { c.derivedTables(t, ix) })
		// Last: it extends the chain.
		t.Run("extension", func(t *testing.T) { c.extension(t, ix) })
	})
}

type checker struct {
	t   *testing.T
	db  *store.DB
	rec devnet.Calls
	net *devnet.Network
	ctx context.Context
}
