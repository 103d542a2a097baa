package pchain

import (
	"context"
	"fmt"

	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"

	"github.com/permafrost-dev/permafrost/internal/decode/primary"
	"github.com/permafrost-dev/permafrost/internal/store"
)

func (ix *Indexer) genesisCreated() primary.Created {
	return primary.Created{CreatedChain: "P", ChainKey: "P", Height: 0, Time: int64(ix.g.P.Timestamp), UTXOType: "TRANSFER"}
}

// applyGenesis mirrors state.syncGenesis: the genesis UTXOs, the genesis
// validators (current from their start time, potential rewards minted in
// order), the genesis chains and the initial supply. The genesis txs are in
// no block; they are stored at height 0 with the genesis time so tx lookups
// find them.
func (ix *Indexer) applyGenesis(ctx context.Context, db *store.Tx, bc *blockCtx) error {
	g := ix.g.P
	bc.st = chainState{Time: int64(g.Timestamp), Supply: g.InitialSupply}
	bc.supply.GenesisSupply = int64(g.InitialSupply)
	bc.time = bc.st.Time
	if g.Timestamp > 1<<62 {
		return fmt.Errorf("pchain: genesis timestamp %d out of range", g.Timestamp)
	}

	if _, err := db.Exec(ctx, `INSERT INTO p_subnets (subnet_id, created_tx_id, created_height, created_time,
		owner_threshold, owner_locktime, owner_addresses, owner_height) VALUES ($1,'',0,$2,0,0,'[]',0)`,
		constants.PrimaryNetworkID.String(), bc.time); err != nil {
		return fmt.Errorf("pchain: insert primary network: %w", err)
	}

	for i, u := range g.UTXOs {
		utxo := u.UTXO
		b, err := txs.GenesisCodec.Marshal(txs.CodecVersion, &utxo)
		if err != nil {
			return fmt.Errorf("pchain: genesis utxo %d: %w", i, err)
		}
		if err := ix.w.PutUTXO(ctx, db, &utxo, b, ix.genesisCreated()); err != nil {
			return fmt.Errorf("pchain: genesis utxo %d: %w", i, err)
		}
	}

	index := 0
	for _, vtx := range g.Validators {
		info, err := describe(vtx)
		if err != nil {
			if err := ix.storeUnknown(ctx, db, bc, vtx, index, err); err != nil {
				return err
			}
			index++
			continue
		}
		if err := insertTxRow(ctx, db, ix.newTxRow(vtx, info, bc, index, "Committed")); err != nil {
			return err
		}
		index++
		ps, ok := vtx.Unsigned.(txs.PermissionlessStaker)
		if !ok {
			ix.Log.Error("pchain: genesis validator is not a staker", "tx", vtx.ID(), "type", info.typ)
			continue
		}
		// Genesis validator txs are not executed: only the staker and its
		// stake exist (the stake comes back as UTXOs when it is rewarded).
		e := ix.newExecutor(ctx, db, bc, vtx, info, 0, bc.time, modeStandard)
		if err := ix.putStaker(ctx, db, bc, e, ps, len(ps.Outputs()), ps.Stake(), true); err != nil {
			return fmt.Errorf("pchain: genesis validator %s: %w", vtx.ID(), err)
		}
		e.info = &txInfo{} // no fee: nothing was spent
		if err := e.finish(); err != nil {
			return err
		}
	}

	for _, chainTx := range g.Chains {
		info, err := describe(chainTx)
		if err != nil {
			if err := ix.storeUnknown(ctx, db, bc, chainTx, index, err); err != nil {
				return err
			}
			index++
			continue
		}
		if err := insertTxRow(ctx, db, ix.newTxRow(chainTx, info, bc, index, "Committed")); err != nil {
			return err
		}
		index++
		cc, ok := chainTx.Unsigned.(*txs.CreateChainTx)
		if !ok {
			ix.Log.Error("pchain: genesis chain is not a CreateChainTx", "tx", chainTx.ID(), "type", info.typ)
			continue
		}
		if err := ix.putBlockchain(ctx, db, chainTx.ID(), cc, 0, bc.time); err != nil {
			return err
		}
	}
	return nil
}
