package pchain

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/math"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"

	"github.com/permafrost-dev/permafrost/internal/decode/catomic"
	"github.com/permafrost-dev/permafrost/internal/decode/primary"
	"github.com/permafrost-dev/permafrost/internal/store"
)

type execMode int

const (
	modeStandard execMode = iota // decision tx, applied in its block
	modeCommit                   // proposal tx, its option block committed
	modeAbort                    // proposal tx, its option block aborted
)

// executor is the txs.Visitor that applies a tx to the indexed state, the way
// avalanchego's standardTxExecutor / proposalTxExecutor change the chain state.
// The context lives in the struct because visitor methods take none.
type executor struct {
	ix   *Indexer
	ctx  context.Context
	db   *store.Tx
	bc   *blockCtx
	stx  *txs.Tx
	info *txInfo
	id   ids.ID
	// height and time of the block holding the tx (the proposal block for
	// proposal txs); state effects take effect at bc.eff.
	height uint64
	time   int64
	mode   execMode

	addrs  map[string]struct{}
	assets map[ids.ID]struct{}
	inAVAX uint64
	locked uint64 // AVAX moved into L1 validator balances
}

var _ txs.Visitor = (*executor)(nil)

func (ix *Indexer) newExecutor(ctx context.Context, db *store.Tx, bc *blockCtx, stx *txs.Tx, info *txInfo, height uint64, time int64, mode execMode) *executor {
	return &executor{
		ix: ix, ctx: ctx, db: db, bc: bc, stx: stx, info: info, id: stx.ID(), height: height, time: time, mode: mode,
		addrs: map[string]struct{}{}, assets: map[ids.ID]struct{}{},
	}
}

// run executes the tx and writes its links and fee.
func (e *executor) run() error {
	if err := e.stx.Unsigned.Visit(e); err != nil {
		return err
	}
	return e.finish()
}

// finish records the fee burned and the tx's asset and address links.
func (e *executor) finish() error {
	// Fee = AVAX in - AVAX out (outputs, stake, exports) - L1 balances.
	spent := e.locked
	for _, out := range e.info.outs {
		if out.AssetID() != e.ix.avax {
			continue
		}
		var err error
		if spent, err = math.Add(spent, out.Out.Amount()); err != nil {
			return fmt.Errorf("pchain: tx %s outputs overflow", e.id)
		}
	}
	burned := uint64(0)
	if e.inAVAX >= spent {
		burned = e.inAVAX - spent
	}
	e.bc.burned += burned
	e.bc.supply.L1Deposits += int64(e.locked)
	if _, err := e.db.Exec(e.ctx, `UPDATE p_txs SET burned = $1 WHERE tx_id = $2`, primary.PadAmount(burned), e.id.String()); err != nil {
		return fmt.Errorf("pchain: tx %s fee: %w", e.id, err)
	}
	assets := make([]ids.ID, 0, len(e.assets))
	for a := range e.assets {
		assets = append(assets, a)
	}
	addrs := make([]string, 0, len(e.addrs))
	for a := range e.addrs {
		addrs = append(addrs, a)
	}
	return e.ix.w.LinkTx(e.ctx, e.db, "P", e.id.String(), e.time, assets, addrs)
}

// linkSubnetOwner links a subnet-authorized tx to the subnet's owner as it
// was when the tx was issued: its signers authorized the tx.
func (e *executor) linkSubnetOwner(subnetID ids.ID) error {
	var raw string
	err := e.db.QueryRow(e.ctx, `SELECT owner_addresses FROM p_subnets WHERE subnet_id = $1`, subnetID.String()).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // unknown subnet: the tx was invalid on the node; nothing to link
	}
	if err != nil {
		return fmt.Errorf("pchain: owner of subnet %s: %w", subnetID, err)
	}
	var addrs []string
	if err := json.Unmarshal([]byte(raw), &addrs); err != nil {
		return fmt.Errorf("pchain: owner of subnet %s: %w", subnetID, err)
	}
	e.addOwner(Owner{Addresses: addrs})
	return nil
}

func (e *executor) addOwner(o Owner) {
	for _, a := range o.Addresses {
		e.addrs[a] = struct{}{}
	}
}

// consume spends inputs; offset is the index of the first one among the tx's
// inputs (credentials are in the same order).
func (e *executor) consume(ins []*avax.TransferableInput, offset int) error {
	for i, in := range ins {
		amt := in.In.Amount()
		utxoID := in.InputID().String()
		var addrJSON string
		err := e.db.QueryRow(e.ctx, `SELECT addresses FROM utxos WHERE utxo_id = $1`, utxoID).Scan(&addrJSON)
		switch {
		case err == nil:
			var list []string
			if json.Unmarshal([]byte(addrJSON), &list) == nil {
				for _, a := range list {
					e.addrs[a] = struct{}{}
				}
			}
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("pchain: read utxo %s: %w", utxoID, err)
		}
		if err := e.ix.w.SpendUTXO(e.ctx, e.db, &in.UTXOID, primary.Spent{
			TxID: e.id.String(), ChainKey: "P", Height: e.height, Time: e.time, InputIndex: offset + i,
			AssetID: in.AssetID().String(), Amount: amt,
		}); err != nil {
			return err
		}
		e.assets[in.AssetID()] = struct{}{}
		if in.AssetID() == e.ix.avax {
			if e.inAVAX, err = math.Add(e.inAVAX, amt); err != nil {
				return fmt.Errorf("pchain: tx %s inputs overflow", e.id)
			}
		}
	}
	return nil
}

// created fills the common creation facts of a UTXO made by this tx.
func (e *executor) created(utxoType string) primary.Created {
	return primary.Created{CreatedChain: "P", ChainKey: "P", Height: e.height, Time: e.time, UTXOType: utxoType}
}

// produce writes outputs of txID (this tx unless a staker tx is given) from
// index first on.
func (e *executor) produce(txID ids.ID, outs []*avax.TransferableOutput, first int, c primary.Created, locked bool) error {
	for i, out := range outs {
		u := &avax.UTXO{
			UTXOID: avax.UTXOID{TxID: txID, OutputIndex: uint32(first + i)},
			Asset:  avax.Asset{ID: out.AssetID()},
			Out:    out.Out,
		}
		if err := e.putUTXO(u, c, locked); err != nil {
			return err
		}
	}
	return nil
}

func (e *executor) putUTXO(u *avax.UTXO, c primary.Created, locked bool) error {
	b, err := txs.Codec.Marshal(txs.CodecVersion, u)
	if err != nil {
		return fmt.Errorf("pchain: marshal utxo %s: %w", u.InputID(), err)
	}
	if err := e.ix.w.PutUTXO(e.ctx, e.db, u, b, c); err != nil {
		return err
	}
	if locked {
		if err := e.ix.w.LockStake(e.ctx, e.db, u.InputID().String()); err != nil {
			return err
		}
		if out, ok := u.Out.(avax.TransferableOut); ok && u.AssetID() == e.ix.avax {
			e.bc.supply.Staked += int64(out.Amount())
		}
	}
	f, err := primary.OutputFields(u.Out)
	if err != nil {
		return err
	}
	addrs, err := primary.Addresses(e.ix.hrp, f.Owners)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		e.addrs[a] = struct{}{}
	}
	e.assets[u.AssetID()] = struct{}{}
	return nil
}

// spendAndPay is the common BaseTx part: consume Ins, produce Outs.
func (e *executor) spendAndPay(tx *txs.BaseTx) error {
	if err := e.consume(tx.Ins, 0); err != nil {
		return err
	}
	return e.produce(e.id, tx.Outs, 0, e.created("TRANSFER"), false)
}

func (e *executor) BaseTx(tx *txs.BaseTx) error { return e.spendAndPay(tx) }

func (e *executor) ImportTx(tx *txs.ImportTx) error {
	if err := e.consume(tx.Ins, 0); err != nil {
		return err
	}
	if err := e.consume(tx.ImportedInputs, len(tx.Ins)); err != nil {
		return err
	}
	return e.produce(e.id, tx.Outs, 0, e.created("TRANSFER"), false)
}

func (e *executor) ExportTx(tx *txs.ExportTx) error {
	if err := e.spendAndPay(&tx.BaseTx); err != nil {
		return err
	}
	// Exported outputs (secp256k1fx transfers) are listed on X or C, in
	// their vocabulary: "transfer", as the outputs those chains make.
	c := e.created(catomic.UTXOTypeTransfer)
	c.ChainKey = e.ix.chainKey(tx.DestinationChain)
	if _, ok := e.ix.chainKeys[tx.DestinationChain]; !ok {
		e.ix.Log.Warn("pchain: export to an unknown chain", "tx", e.id, "chain", tx.DestinationChain)
	}
	return e.produce(e.id, tx.ExportedOutputs, len(tx.Outs), c, false)
}

func (e *executor) CreateChainTx(tx *txs.CreateChainTx) error {
	if err := e.linkSubnetOwner(tx.SubnetID); err != nil {
		return err
	}
	if err := e.spendAndPay(&tx.BaseTx); err != nil {
		return err
	}
	return e.ix.putBlockchain(e.ctx, e.db, e.id, tx, e.height, e.time)
}

func (e *executor) CreateSubnetTx(tx *txs.CreateSubnetTx) error {
	if err := e.spendAndPay(&tx.BaseTx); err != nil {
		return err
	}
	o, err := e.ix.ownerOf(tx.Owner)
	if err != nil {
		return err
	}
	e.addOwner(o)
	if _, err := e.db.Exec(e.ctx, `INSERT INTO p_subnets (subnet_id, created_tx_id, created_height, created_time,
		owner_threshold, owner_locktime, owner_addresses, owner_height) VALUES ($1,$1,$2,$3,$4,$5,$6,$2)`,
		e.id.String(), int64(e.height), e.time, int64(o.Threshold), int64(o.Locktime), jsonString(o.Addresses)); err != nil {
		return fmt.Errorf("pchain: insert subnet %s: %w", e.id, err)
	}
	return e.ownerHistory(e.id, o)
}

func (e *executor) ownerHistory(subnetID ids.ID, o Owner) error {
	if _, err := e.db.Exec(e.ctx, `INSERT INTO p_subnet_owners (subnet_id, height, tx_id, threshold, locktime, addresses)
		VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT DO NOTHING`,
		subnetID.String(), int64(e.height), e.id.String(), int64(o.Threshold), int64(o.Locktime), jsonString(o.Addresses)); err != nil {
		return fmt.Errorf("pchain: subnet owner history %s: %w", subnetID, err)
	}
	return nil
}

func (e *executor) TransferSubnetOwnershipTx(tx *txs.TransferSubnetOwnershipTx) error {
	if err := e.linkSubnetOwner(tx.Subnet); err != nil {
		return err
	}
	if err := e.spendAndPay(&tx.BaseTx); err != nil {
		return err
	}
	o, err := e.ix.ownerOf(tx.Owner)
	if err != nil {
		return err
	}
	e.addOwner(o)
	if _, err := e.db.Exec(e.ctx, `UPDATE p_subnets SET owner_threshold = $1, owner_locktime = $2, owner_addresses = $3,
		owner_height = $4 WHERE subnet_id = $5`,
		int64(o.Threshold), int64(o.Locktime), jsonString(o.Addresses), int64(e.height), tx.Subnet.String()); err != nil {
		return fmt.Errorf("pchain: transfer subnet %s: %w", tx.Subnet, err)
	}
	return e.ownerHistory(tx.Subnet, o)
}

func (e *executor) TransformSubnetTx(tx *txs.TransformSubnetTx) error {
	if err := e.spendAndPay(&tx.BaseTx); err != nil {
		return err
	}
	if _, err := e.db.Exec(e.ctx, `UPDATE p_subnets SET transform_tx_id = $1, current_supply = $2 WHERE subnet_id = $3`,
		e.id.String(), primary.PadAmount(tx.InitialSupply), tx.Subnet.String()); err != nil {
		return fmt.Errorf("pchain: transform subnet %s: %w", tx.Subnet, err)
	}
	return nil
}

// Staker txs. Before Banff the add-staker txs were proposals: on abort their
// inputs are still consumed and their stake comes back as plain outputs
// (proposalTxExecutor.AddValidatorTx's onAbortOuts).

func (e *executor) AddValidatorTx(tx *txs.AddValidatorTx) error {
	return e.addStakerTx(&tx.BaseTx, tx, tx.StakeOuts, true)
}

func (e *executor) AddDelegatorTx(tx *txs.AddDelegatorTx) error {
	return e.addStakerTx(&tx.BaseTx, tx, tx.StakeOuts, true)
}

func (e *executor) AddSubnetValidatorTx(tx *txs.AddSubnetValidatorTx) error {
	if err := e.linkSubnetOwner(tx.SubnetValidator.Subnet); err != nil {
		return err
	}
	return e.addStakerTx(&tx.BaseTx, tx, nil, false)
}

func (e *executor) AddPermissionlessValidatorTx(tx *txs.AddPermissionlessValidatorTx) error {
	return e.addStakerTx(&tx.BaseTx, tx, tx.StakeOuts, true)
}

func (e *executor) AddPermissionlessDelegatorTx(tx *txs.AddPermissionlessDelegatorTx) error {
	return e.addStakerTx(&tx.BaseTx, tx, tx.StakeOuts, true)
}

func (e *executor) addStakerTx(base *txs.BaseTx, staker txs.Staker, stake []*avax.TransferableOutput, abortReturnsStake bool) error {
	if err := e.spendAndPay(base); err != nil {
		return err
	}
	if e.mode == modeAbort {
		if abortReturnsStake {
			return e.produce(e.id, stake, len(base.Outs), e.created("TRANSFER"), false)
		}
		return nil
	}
	return e.putStaker(staker, len(base.Outs), stake)
}

func (e *executor) RemoveSubnetValidatorTx(tx *txs.RemoveSubnetValidatorTx) error {
	if err := e.linkSubnetOwner(tx.Subnet); err != nil {
		return err
	}
	if err := e.spendAndPay(&tx.BaseTx); err != nil {
		return err
	}
	return e.removeSubnetValidator(tx.Subnet, tx.NodeID)
}

func (e *executor) AdvanceTimeTx(tx *txs.AdvanceTimeTx) error {
	if e.mode != modeCommit {
		return nil // the state does not change when it is aborted
	}
	t := tx.Timestamp().Unix()
	if t < e.bc.st.Time {
		e.ix.Log.Error("pchain: AdvanceTimeTx moves time backwards", "tx", e.id, "time", t, "chainTime", e.bc.st.Time)
		return nil
	}
	if err := e.ix.advanceTime(e.ctx, e.db, e.bc, t); err != nil {
		return err
	}
	return nil
}

func (e *executor) RewardValidatorTx(tx *txs.RewardValidatorTx) error {
	if e.mode == modeStandard {
		e.ix.Log.Error("pchain: RewardValidatorTx outside a proposal block", "tx", e.id)
		return nil
	}
	return e.rewardStaker(tx.TxID, e.mode == modeCommit)
}

func (e *executor) ConvertSubnetToL1Tx(tx *txs.ConvertSubnetToL1Tx) error {
	if err := e.linkSubnetOwner(tx.Subnet); err != nil {
		return err
	}
	if err := e.spendAndPay(&tx.BaseTx); err != nil {
		return err
	}
	return e.convertSubnet(tx)
}

func (e *executor) RegisterL1ValidatorTx(tx *txs.RegisterL1ValidatorTx) error {
	if err := e.spendAndPay(&tx.BaseTx); err != nil {
		return err
	}
	return e.registerL1(tx)
}

func (e *executor) SetL1ValidatorWeightTx(tx *txs.SetL1ValidatorWeightTx) error {
	if err := e.spendAndPay(&tx.BaseTx); err != nil {
		return err
	}
	return e.setL1Weight(len(tx.Outs))
}

func (e *executor) IncreaseL1ValidatorBalanceTx(tx *txs.IncreaseL1ValidatorBalanceTx) error {
	if err := e.spendAndPay(&tx.BaseTx); err != nil {
		return err
	}
	return e.increaseL1Balance(tx)
}

func (e *executor) DisableL1ValidatorTx(tx *txs.DisableL1ValidatorTx) error {
	if err := e.spendAndPay(&tx.BaseTx); err != nil {
		return err
	}
	return e.disableL1(tx.ValidationID, len(tx.Outs))
}

// applyTxs executes decision txs of a block; first is the index of the first.
func (ix *Indexer) applyTxs(ctx context.Context, db *store.Tx, bc *blockCtx, list []*txs.Tx, first int) error {
	for i, stx := range list {
		index := first + i
		info, err := describe(stx)
		if err != nil {
			if err := ix.storeUnknown(ctx, db, bc, stx, index, err); err != nil {
				return err
			}
			continue
		}
		if err := insertTxRow(ctx, db, ix.newTxRow(stx, info, bc, index, "Committed")); err != nil {
			return err
		}
		if err := ix.newExecutor(ctx, db, bc, stx, info, bc.height, bc.time, modeStandard).run(); err != nil {
			return fmt.Errorf("tx %s: %w", stx.ID(), err)
		}
	}
	return nil
}

// proposeTx records a proposal tx; its option block applies it.
func (ix *Indexer) proposeTx(ctx context.Context, db *store.Tx, bc *blockCtx, stx *txs.Tx, index int) error {
	info, err := describe(stx)
	if err != nil {
		return ix.storeUnknown(ctx, db, bc, stx, index, err)
	}
	if err := insertTxRow(ctx, db, ix.newTxRow(stx, info, bc, index, "Processing")); err != nil {
		return err
	}
	if _, err := db.Exec(ctx, `INSERT INTO p_pending_proposals (proposal_height, proposal_block_id, tx_id, tx_index, block_time)
		VALUES ($1,$2,$3,$4,$5)`, int64(bc.height), bc.blockID.String(), stx.ID().String(), index, bc.time); err != nil {
		return fmt.Errorf("pchain: record proposal %s: %w", stx.ID(), err)
	}
	return nil
}

// settleProposal applies the proposal of the parent block as the option block
// (commit or abort) decides.
func (ix *Indexer) settleProposal(ctx context.Context, db *store.Tx, bc *blockCtx, commit bool) error {
	var (
		txID, blockID string
		index         int
		blockTime     int64
	)
	err := db.QueryRow(ctx, `SELECT tx_id, proposal_block_id, tx_index, block_time FROM p_pending_proposals
		WHERE proposal_height = $1`, int64(bc.height-1)).Scan(&txID, &blockID, &index, &blockTime)
	if errors.Is(err, sql.ErrNoRows) {
		ix.Log.Warn("pchain: option block without an indexed proposal", "height", bc.height)
		return nil
	}
	if err != nil {
		return fmt.Errorf("pchain: pending proposal: %w", err)
	}
	var raw []byte
	if err := db.QueryRow(ctx, `SELECT tx_bytes FROM px_txs WHERE tx_id = $1`, txID).Scan(&raw); err != nil {
		return fmt.Errorf("pchain: proposal tx %s: %w", txID, err)
	}
	stx, err := txs.Parse(txs.Codec, raw)
	if err != nil {
		return fmt.Errorf("pchain: reparse proposal tx %s: %w", txID, err)
	}
	info, err := describe(stx)
	if err != nil {
		return fmt.Errorf("pchain: proposal tx %s: %w", txID, err)
	}
	mode, status := modeAbort, "Aborted"
	if commit {
		mode, status = modeCommit, "Committed"
	}
	if err := ix.newExecutor(ctx, db, bc, stx, info, bc.height-1, blockTime, mode).run(); err != nil {
		return fmt.Errorf("tx %s: %w", txID, err)
	}
	if _, err := db.Exec(ctx, `UPDATE p_txs SET status = $1, decided_height = $2 WHERE tx_id = $3`, status, int64(bc.height), txID); err != nil {
		return fmt.Errorf("pchain: settle %s: %w", txID, err)
	}
	if info.typ == "RewardValidatorTx" {
		if _, err := db.Exec(ctx, `UPDATE px_txs SET rewarded = $1 WHERE tx_id = $2`, commit, txID); err != nil {
			return fmt.Errorf("pchain: settle %s: %w", txID, err)
		}
	}
	if _, err := db.Exec(ctx, `DELETE FROM p_pending_proposals WHERE proposal_height = $1`, int64(bc.height-1)); err != nil {
		return fmt.Errorf("pchain: clear proposal: %w", err)
	}
	return nil
}
