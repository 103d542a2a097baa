package pchain

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"sort"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/math"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/platformvm/fx"
	"github.com/ava-labs/avalanchego/vms/platformvm/reward"
	"github.com/ava-labs/avalanchego/vms/platformvm/signer"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	"github.com/permafrost-dev/permafrost/internal/decode/primary"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Staker kinds (p_stakers.kind).
const (
	KindValidator       = "VALIDATOR"
	KindDelegator       = "DELEGATOR"
	KindSubnetValidator = "SUBNET_VALIDATOR"
)

// Removal reasons (p_stakers.removal).
const (
	RemovalRewarded    = "REWARDED"
	RemovalNotRewarded = "NOT_REWARDED"
	RemovalRemoved     = "REMOVED"
	RemovalExpired     = "EXPIRED"
)

// stakerRow is the part of p_stakers the state machine needs.
type stakerRow struct {
	txID        ids.ID
	kind        string
	subnet      ids.ID
	node        ids.NodeID
	weight      uint64
	start, end  int64
	potential   uint64
	accrued     uint64
	validatorTx string
	feePaid     uint64
}

const stakerCols = `tx_id, kind, subnet_id, node_id, weight, start_time, end_time, potential_reward,
	accrued_delegatee_reward, validator_tx_id, delegation_fee_amount`

func scanStaker(sc interface{ Scan(...any) error }) (stakerRow, error) {
	var (
		s                                             stakerRow
		txID, subnet, node, weight, pot, acc, feePaid string
	)
	if err := sc.Scan(&txID, &s.kind, &subnet, &node, &weight, &s.start, &s.end, &pot, &acc, &s.validatorTx, &feePaid); err != nil {
		return s, err
	}
	var err error
	if s.txID, err = ids.FromString(txID); err != nil {
		return s, fmt.Errorf("pchain: stored staker id %q: %w", txID, err)
	}
	if s.subnet, err = ids.FromString(subnet); err != nil {
		return s, fmt.Errorf("pchain: stored subnet id %q: %w", subnet, err)
	}
	if s.node, err = ids.NodeIDFromString(node); err != nil {
		return s, fmt.Errorf("pchain: stored node id %q: %w", node, err)
	}
	for _, p := range []struct {
		dst *uint64
		s   string
	}{{&s.weight, weight}, {&s.potential, pot}, {&s.accrued, acc}, {&s.feePaid, feePaid}} {
		if *p.dst, err = parseUint(p.s); err != nil {
			return s, err
		}
	}
	return s, nil
}

func loadStaker(ctx context.Context, db *store.Tx, txID string) (stakerRow, error) {
	return scanStaker(db.QueryRow(ctx, `SELECT `+stakerCols+` FROM p_stakers WHERE tx_id = $1`, txID))
}

// supplyOf is the current supply of the primary network or an elastic subnet.
func (ix *Indexer) supplyOf(ctx context.Context, db *store.Tx, bc *blockCtx, subnetID ids.ID) (uint64, error) {
	if subnetID == constants.PrimaryNetworkID {
		return bc.st.Supply, nil
	}
	var s string
	if err := db.QueryRow(ctx, `SELECT current_supply FROM p_subnets WHERE subnet_id = $1`, subnetID.String()).Scan(&s); err != nil {
		return 0, fmt.Errorf("pchain: supply of subnet %s: %w", subnetID, err)
	}
	if s == "" {
		return 0, fmt.Errorf("pchain: subnet %s is not elastic", subnetID)
	}
	return parseUint(s)
}

func (ix *Indexer) setSupply(ctx context.Context, db *store.Tx, bc *blockCtx, subnetID ids.ID, v uint64) error {
	if subnetID == constants.PrimaryNetworkID {
		bc.st.Supply = v
		return nil
	}
	if _, err := db.Exec(ctx, `UPDATE p_subnets SET current_supply = $1 WHERE subnet_id = $2`, primary.PadAmount(v), subnetID.String()); err != nil {
		return fmt.Errorf("pchain: set supply of %s: %w", subnetID, err)
	}
	return nil
}

// rewardCalculator mirrors executor.GetRewardsCalculator.
func (ix *Indexer) rewardCalculator(ctx context.Context, db *store.Tx, subnetID ids.ID) (reward.Calculator, error) {
	if subnetID == constants.PrimaryNetworkID {
		return reward.NewCalculator(ix.Params.Reward), nil
	}
	var txID string
	if err := db.QueryRow(ctx, `SELECT transform_tx_id FROM p_subnets WHERE subnet_id = $1`, subnetID.String()).Scan(&txID); err != nil {
		return nil, fmt.Errorf("pchain: subnet %s: %w", subnetID, err)
	}
	stx, err := loadTx(ctx, db, txID)
	if err != nil {
		return nil, err
	}
	tr, ok := stx.Unsigned.(*txs.TransformSubnetTx)
	if !ok {
		return nil, fmt.Errorf("pchain: subnet %s transform tx is a %T", subnetID, stx.Unsigned)
	}
	return reward.NewCalculator(reward.Config{
		MaxConsumptionRate: tr.MaxConsumptionRate,
		MinConsumptionRate: tr.MinConsumptionRate,
		MintingPeriod:      ix.Params.Reward.MintingPeriod,
		SupplyCap:          tr.MaximumSupply,
	}), nil
}

// loadTx re-reads an indexed tx (genesis txs included).
func loadTx(ctx context.Context, db *store.Tx, txID string) (*txs.Tx, error) {
	var raw []byte
	if err := db.QueryRow(ctx, `SELECT tx_bytes FROM px_txs WHERE tx_id = $1`, txID).Scan(&raw); err != nil {
		return nil, fmt.Errorf("pchain: tx %s: %w", txID, err)
	}
	// The genesis codec accepts everything the block codec does, and genesis
	// txs can be larger.
	stx, err := txs.Parse(txs.GenesisCodec, raw)
	if err != nil {
		return nil, fmt.Errorf("pchain: reparse tx %s: %w", txID, err)
	}
	return stx, nil
}

func stakeSum(stake []*avax.TransferableOutput) (ids.ID, uint64, error) {
	var (
		asset ids.ID
		sum   uint64
		err   error
	)
	for i, out := range stake {
		if i == 0 {
			asset = out.AssetID()
		}
		if sum, err = math.Add(sum, out.Out.Amount()); err != nil {
			return asset, 0, errors.New("pchain: stake overflow")
		}
	}
	return asset, sum, nil
}

// putStaker mirrors standardTxExecutor.putStaker (and genesis loading when
// genesis is set): pre-Durango stakers wait in the pending set until their
// start time, later ones start now with their potential reward minted into
// the supply.
func (e *executor) putStaker(st txs.Staker, outsLen int, stake []*avax.TransferableOutput) error {
	return e.ix.putStaker(e.ctx, e.db, e.bc, e, st, outsLen, stake, false)
}

func (ix *Indexer) putStaker(ctx context.Context, db *store.Tx, bc *blockCtx, e *executor, st txs.Staker, outsLen int, stake []*avax.TransferableOutput, genesis bool) error {
	var (
		end       = st.EndTime().Unix()
		weight    = st.Weight()
		subnet    = st.SubnetID()
		chainTime = bc.st.Time
		start     int64
		pending   bool
		potential uint64
		priority  txs.Priority
	)
	durango := ix.Params.Upgrades.IsDurangoActivated(time.Unix(chainTime, 0))
	if genesis || !durango {
		sched, ok := st.(txs.ScheduledStaker)
		if !ok {
			return fmt.Errorf("pchain: pre-Durango staker %s without a start time (%T)", e.id, st)
		}
		start, priority, pending = sched.StartTime().Unix(), sched.PendingPriority(), !genesis
	} else {
		start, priority = chainTime, st.CurrentPriority()
	}
	if !pending && !st.CurrentPriority().IsPermissionedValidator() {
		// Genesis validators and post-Durango stakers get their reward now.
		supply, err := ix.supplyOf(ctx, db, bc, subnet)
		if err != nil {
			return err
		}
		calc, err := ix.rewardCalculator(ctx, db, subnet)
		if err != nil {
			return err
		}
		potential = calc.Calculate(time.Duration(end-start)*time.Second, weight, supply)
		if err := ix.setSupply(ctx, db, bc, subnet, supply+potential); err != nil {
			return err
		}
	}

	kind := KindSubnetValidator
	var (
		blsKey, blsPop                  string
		vOwner, dOwner, rOwner, valTxID string
		shares                          uint32
		rewardAddrs                     []string // p_staker_reward_owners
	)
	switch t := st.(type) {
	case txs.ValidatorTx:
		kind, shares = KindValidator, t.Shares()
		vo, err := ix.ownerOf(t.ValidationRewardsOwner())
		if err != nil {
			return err
		}
		do, err := ix.ownerOf(t.DelegationRewardsOwner())
		if err != nil {
			return err
		}
		e.addOwner(vo)
		e.addOwner(do)
		vOwner, dOwner = jsonString(vo), jsonString(do)
		rewardAddrs = vo.Addresses
		if pv, ok := t.(*txs.AddPermissionlessValidatorTx); ok {
			if pop, ok := pv.Signer.(*signer.ProofOfPossession); ok {
				blsKey, blsPop = hexOrEmpty(pop.PublicKey[:]), hexOrEmpty(pop.ProofOfPossession[:])
			}
		}
	case txs.DelegatorTx:
		kind = KindDelegator
		ro, err := ix.ownerOf(t.RewardsOwner())
		if err != nil {
			return err
		}
		e.addOwner(ro)
		rOwner = jsonString(ro)
		rewardAddrs = ro.Addresses
		err = db.QueryRow(ctx, `SELECT tx_id FROM p_stakers WHERE subnet_id = $1 AND node_id = $2 AND kind = $3
			AND removed_height = -1 ORDER BY added_height DESC LIMIT 1`,
			subnet.String(), st.NodeID().String(), KindValidator).Scan(&valTxID)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("pchain: validator of delegator %s: %w", e.id, err)
		}
		if valTxID == "" {
			ix.Log.Error("pchain: delegator without an indexed validator", "tx", e.id, "node", st.NodeID())
		}
	}

	asset, amount, err := stakeSum(stake)
	if err != nil {
		return err
	}
	assetStr := ""
	if len(stake) > 0 {
		assetStr = asset.String()
	}
	current := int64(-1)
	if !pending {
		current = int64(bc.eff)
	}
	if _, err := db.Exec(ctx, `INSERT INTO p_stakers (tx_id, tx_type, kind, subnet_id, node_id, weight, stake_asset,
		stake_amount, start_time, end_time, delegation_shares, bls_public_key, bls_pop, validation_reward_owner,
		delegation_reward_owner, reward_owner, validator_tx_id, potential_reward, accrued_delegatee_reward, priority,
		added_height, added_time, current_height, reward_amount, delegation_fee_amount)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$24)`,
		e.id.String(), typeName(st), kind, subnet.String(), st.NodeID().String(), primary.PadAmount(weight), assetStr,
		primary.PadAmount(amount), start, end, int64(shares), blsKey, blsPop, vOwner, dOwner, rOwner, valTxID,
		primary.PadAmount(potential), primary.PadAmount(0), int(priority), int64(e.height), e.time, current,
		primary.PadAmount(0)); err != nil {
		return fmt.Errorf("pchain: insert staker %s: %w", e.id, err)
	}
	if err := PutRewardOwners(ctx, db, e.id.String(), start, rewardAddrs); err != nil {
		return err
	}

	c := e.created("STAKE")
	c.Staked, c.StakeStart, c.StakeEnd = true, start, end
	if err := e.produce(e.id, stake, outsLen, c, true); err != nil {
		return err
	}
	if kind == KindDelegator {
		joined := int64(1)
		if pending {
			joined = 0
		}
		if err := DelegationsChanged(ctx, db, e.id.String(), 1, joined); err != nil {
			return err
		}
	}
	if pending {
		return nil
	}
	return ix.stakerChanged(ctx, db, bc.eff, kind, subnet, st.NodeID())
}

// stakerChanged refreshes the validator-set entries a staker change touches.
func (ix *Indexer) stakerChanged(ctx context.Context, db *store.Tx, eff uint64, kind string, subnet ids.ID, node ids.NodeID) error {
	if err := ix.refreshSet(ctx, db, eff, subnet, node); err != nil {
		return err
	}
	if kind == KindValidator && subnet == constants.PrimaryNetworkID {
		// Subnet entries carry the node's primary-network BLS key.
		return ix.refreshNodeSubnets(ctx, db, eff, node)
	}
	return nil
}

// removeSubnetValidator mirrors RemoveSubnetValidatorTx (current or pending).
func (e *executor) removeSubnetValidator(subnet ids.ID, node ids.NodeID) error {
	var (
		txID    string
		current int64
	)
	err := e.db.QueryRow(e.ctx, `SELECT tx_id, current_height FROM p_stakers WHERE subnet_id = $1 AND node_id = $2
		AND kind = $3 AND removed_height = -1 ORDER BY added_height DESC LIMIT 1`,
		subnet.String(), node.String(), KindSubnetValidator).Scan(&txID, &current)
	if errors.Is(err, sql.ErrNoRows) {
		e.ix.Log.Error("pchain: RemoveSubnetValidatorTx of an unknown validator", "tx", e.id, "subnet", subnet, "node", node)
		return nil
	}
	if err != nil {
		return fmt.Errorf("pchain: subnet validator %s/%s: %w", subnet, node, err)
	}
	if err := endStaker(e.ctx, e.db, txID, e.bc.eff, e.time, RemovalRemoved, e.id.String()); err != nil {
		return err
	}
	if current < 0 {
		return nil
	}
	return e.ix.refreshSet(e.ctx, e.db, e.bc.eff, subnet, node)
}

// delegationsChanged keeps a validator's delegation sums on its row (0113,
// read by the data API's /validators): all (+1 when a delegator is
// accepted) and current (+1 when it joins the current set, -1 when it is
// rewarded) change the all-time and the current count and stake; the
// current ones also carry the validator's share of the delegator's
// potential reward (exact floor, as the API computed it per request).
func DelegationsChanged(ctx context.Context, db *store.Tx, delegatorTxID string, all, current int64) error {
	var (
		valTx, amount, potential string
		shares                   int64
	)
	err := db.QueryRow(ctx, `SELECT d.validator_tx_id, d.stake_amount, d.potential_reward, v.delegation_shares
		FROM p_stakers d JOIN p_stakers v ON v.tx_id = d.validator_tx_id WHERE d.tx_id = $1`, delegatorTxID).
		Scan(&valTx, &amount, &potential, &shares)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // no indexed validator (logged when the delegator was added)
	}
	if err != nil {
		return fmt.Errorf("pchain: validator of delegator %s: %w", delegatorTxID, err)
	}
	a, err1 := parseUint(amount)
	p, err2 := parseUint(potential)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	const maxShares = reward.PercentDenominator
	hi, lo := bits.Mul64(p, maxShares-uint64(shares))
	rest, _ := bits.Div64(hi, lo, maxShares) // hi < maxShares: no overflow
	fee := p - rest
	const half = 10_000_000_000
	if _, err := db.Exec(ctx, `UPDATE p_stakers SET all_delegators = all_delegators + $1,
		all_delegated_hi = all_delegated_hi + $2, all_delegated_lo = all_delegated_lo + $3,
		cur_delegators = cur_delegators + $4, cur_delegated_hi = cur_delegated_hi + $5,
		cur_delegated_lo = cur_delegated_lo + $6, cur_delegatee_hi = cur_delegatee_hi + $7,
		cur_delegatee_lo = cur_delegatee_lo + $8 WHERE tx_id = $9`,
		all, all*int64(a/half), all*int64(a%half), current, current*int64(a/half), current*int64(a%half),
		current*int64(fee/half), current*int64(fee%half), valTx); err != nil {
		return fmt.Errorf("pchain: delegations of validator %s: %w", valTx, err)
	}
	return nil
}

func endStaker(ctx context.Context, db *store.Tx, txID string, height uint64, t int64, removal, byTx string) error {
	if _, err := db.Exec(ctx, `UPDATE p_stakers SET removed_height = $1, removed_time = $2, removal = $3, removal_tx_id = $4
		WHERE tx_id = $5`, int64(height), t, removal, byTx, txID); err != nil {
		return fmt.Errorf("pchain: end staker %s: %w", txID, err)
	}
	return nil
}

// rewardStaker mirrors proposalTxExecutor.RewardValidatorTx: the stake comes
// back (same UTXO IDs as the stake outputs), rewards are paid on commit, the
// validator's accrued delegation fees are paid either way, and on abort the
// potential reward leaves the supply.
func (e *executor) rewardStaker(stakerTxID ids.ID, commit bool) error {
	s, err := loadStaker(e.ctx, e.db, stakerTxID.String())
	if errors.Is(err, sql.ErrNoRows) {
		e.ix.Log.Error("pchain: reward of an unknown staker", "tx", e.id, "staker", stakerTxID)
		return nil
	}
	if err != nil {
		return err
	}
	stx, err := loadTx(e.ctx, e.db, stakerTxID.String())
	if err != nil {
		return err
	}
	ps, ok := stx.Unsigned.(txs.PermissionlessStaker)
	if !ok {
		e.ix.Log.Error("pchain: reward of a permissioned staker", "tx", e.id, "staker", stakerTxID)
		return nil
	}
	outs, stake := ps.Outputs(), ps.Stake()
	for i := range stake {
		id := (&avax.UTXOID{TxID: stakerTxID, OutputIndex: uint32(len(outs) + i)}).InputID()
		if err := e.ix.w.UnlockStake(e.ctx, e.db, id.String()); err != nil {
			return err
		}
		if stake[i].AssetID() == e.ix.avax {
			e.bc.supply.Staked -= int64(stake[i].Out.Amount())
		}
		if f, err := primary.OutputFields(stake[i].Out); err == nil {
			if addrs, err := primary.Addresses(e.ix.hrp, f.Owners); err == nil {
				for _, a := range addrs {
					e.addrs[a] = struct{}{}
				}
			}
		}
		e.assets[stake[i].AssetID()] = struct{}{}
	}
	asset := e.ix.avax
	if len(stake) > 0 {
		asset = stake[0].AssetID()
	}
	base := uint32(len(outs) + len(stake))

	var paid uint64
	switch u := stx.Unsigned.(type) {
	case txs.ValidatorTx:
		paid, err = e.rewardValidator(u, s, commit, stakerTxID, asset, base)
	case txs.DelegatorTx:
		paid, err = e.rewardDelegator(u, s, commit, stakerTxID, asset, base)
	default:
		err = fmt.Errorf("pchain: staker %s is a %T", stakerTxID, stx.Unsigned)
	}
	if err != nil {
		return err
	}
	if !commit {
		supply, err := e.ix.supplyOf(e.ctx, e.db, e.bc, s.subnet)
		if err != nil {
			return err
		}
		if supply < s.potential {
			return fmt.Errorf("pchain: supply %d below potential reward %d of %s", supply, s.potential, stakerTxID)
		}
		if err := e.ix.setSupply(e.ctx, e.db, e.bc, s.subnet, supply-s.potential); err != nil {
			return err
		}
	}
	if s.kind == KindDelegator {
		if err := DelegationsChanged(e.ctx, e.db, stakerTxID.String(), 0, -1); err != nil {
			return err
		}
	}
	removal := RemovalNotRewarded
	if commit {
		removal = RemovalRewarded
	}
	if _, err := e.db.Exec(e.ctx, `UPDATE p_stakers SET removed_height = $1, removed_time = $2, removal = $3,
		removal_tx_id = $4, reward_amount = $5 WHERE tx_id = $6`,
		int64(e.bc.eff), e.time, removal, e.id.String(), primary.PadAmount(paid), stakerTxID.String()); err != nil {
		return fmt.Errorf("pchain: end staker %s: %w", stakerTxID, err)
	}
	return e.ix.stakerChanged(e.ctx, e.db, e.bc.eff, s.kind, s.subnet, s.node)
}

// payReward writes a reward UTXO of the staker tx.
func (e *executor) payReward(stakerTxID, asset ids.ID, index uint32, amount uint64, owner fx.Owner, rewardType string) error {
	oo, ok := owner.(*secp256k1fx.OutputOwners)
	if !ok {
		return fmt.Errorf("pchain: reward owner of %s is a %T", stakerTxID, owner)
	}
	u := &avax.UTXO{
		UTXOID: avax.UTXOID{TxID: stakerTxID, OutputIndex: index},
		Asset:  avax.Asset{ID: asset},
		Out:    &secp256k1fx.TransferOutput{Amt: amount, OutputOwners: *oo},
	}
	c := e.created("TRANSFER")
	c.RewardType = rewardType
	if asset == e.ix.avax {
		e.bc.supply.Rewards += int64(amount) // minted: the potential reward was only counted in the supply
	}
	return e.putUTXO(u, c, false)
}

func (e *executor) rewardValidator(u txs.ValidatorTx, s stakerRow, commit bool, txID, asset ids.ID, base uint32) (uint64, error) {
	var paid uint64
	offset := uint32(0)
	if commit && s.potential > 0 {
		if err := e.payReward(txID, asset, base, s.potential, u.ValidationRewardsOwner(), "VALIDATOR"); err != nil {
			return 0, err
		}
		paid, offset = s.potential, 1
	}
	if s.accrued == 0 {
		return paid, nil
	}
	// Accrued delegation fees are paid on abort too, right after the stake.
	if !commit {
		offset = 0
	}
	if err := e.payReward(txID, asset, base+offset, s.accrued, u.DelegationRewardsOwner(), "VALIDATOR_FEE"); err != nil {
		return 0, err
	}
	fee, err := math.Add(s.feePaid, s.accrued)
	if err != nil {
		return 0, err
	}
	if _, err := e.db.Exec(e.ctx, `UPDATE p_stakers SET delegation_fee_amount = $1 WHERE tx_id = $2`,
		primary.PadAmount(fee), txID.String()); err != nil {
		return 0, fmt.Errorf("pchain: delegation fee of %s: %w", txID, err)
	}
	return paid, nil
}

func (e *executor) rewardDelegator(u txs.DelegatorTx, s stakerRow, commit bool, txID, asset ids.ID, base uint32) (uint64, error) {
	if !commit {
		return 0, nil
	}
	if s.validatorTx == "" {
		e.ix.Log.Error("pchain: delegator reward without a validator", "staker", txID)
		return 0, nil
	}
	v, err := loadStaker(e.ctx, e.db, s.validatorTx)
	if err != nil {
		return 0, fmt.Errorf("pchain: validator %s of delegator %s: %w", s.validatorTx, txID, err)
	}
	vtx, err := loadTx(e.ctx, e.db, s.validatorTx)
	if err != nil {
		return 0, err
	}
	vdr, ok := vtx.Unsigned.(txs.ValidatorTx)
	if !ok {
		return 0, fmt.Errorf("pchain: validator tx %s is a %T", s.validatorTx, vtx.Unsigned)
	}
	delegateeReward, delegatorReward := reward.Split(s.potential, vdr.Shares())
	var paid uint64
	offset := uint32(0)
	if delegatorReward > 0 {
		if err := e.payReward(txID, asset, base, delegatorReward, u.RewardsOwner(), "DELEGATOR"); err != nil {
			return 0, err
		}
		paid, offset = delegatorReward, 1
	}
	if delegateeReward == 0 {
		return paid, nil
	}
	if e.ix.Params.Upgrades.IsCortinaActivated(time.Unix(v.start, 0)) {
		// Deferred until the validator leaves (staking info DelegateeReward).
		acc, err := math.Add(v.accrued, delegateeReward)
		if err != nil {
			return 0, err
		}
		if _, err := e.db.Exec(e.ctx, `UPDATE p_stakers SET accrued_delegatee_reward = $1 WHERE tx_id = $2`,
			primary.PadAmount(acc), s.validatorTx); err != nil {
			return 0, fmt.Errorf("pchain: accrue delegatee reward of %s: %w", s.validatorTx, err)
		}
		return paid, nil
	}
	// Before Cortina the validator's cut is paid at once, as a UTXO of the
	// delegator tx.
	if err := e.payReward(txID, asset, base+offset, delegateeReward, vdr.DelegationRewardsOwner(), "VALIDATOR_FEE"); err != nil {
		return 0, err
	}
	fee, err := math.Add(v.feePaid, delegateeReward)
	if err != nil {
		return 0, err
	}
	if _, err := e.db.Exec(e.ctx, `UPDATE p_stakers SET delegation_fee_amount = $1 WHERE tx_id = $2`,
		primary.PadAmount(fee), s.validatorTx); err != nil {
		return 0, fmt.Errorf("pchain: delegation fee of %s: %w", s.validatorTx, err)
	}
	return paid, nil
}

// advanceTime mirrors executor.advanceTimeTo: promote pending stakers, drop
// expired permissioned subnet validators, and (Etna) advance both fee states,
// deactivating L1 validators that ran out of balance.
func (ix *Indexer) advanceTime(ctx context.Context, db *store.Tx, bc *blockCtx, newTime int64) error {
	if err := ix.promotePending(ctx, db, bc, newTime); err != nil {
		return err
	}
	rows, err := db.Query(ctx, `SELECT tx_id, subnet_id, node_id FROM p_stakers WHERE kind = $1 AND current_height >= 0
		AND removed_height = -1 AND end_time <= $2`, KindSubnetValidator, newTime)
	if err != nil {
		return fmt.Errorf("pchain: expired subnet validators: %w", err)
	}
	type expired struct{ txID, subnet, node string }
	var list []expired
	for rows.Next() {
		var x expired
		if err := rows.Scan(&x.txID, &x.subnet, &x.node); err != nil {
			rows.Close()
			return fmt.Errorf("pchain: expired subnet validators: %w", err)
		}
		list = append(list, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pchain: expired subnet validators: %w", err)
	}
	for _, x := range list {
		if err := endStaker(ctx, db, x.txID, bc.eff, newTime, RemovalExpired, ""); err != nil {
			return err
		}
		subnet, err1 := ids.FromString(x.subnet)
		node, err2 := ids.NodeIDFromString(x.node)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("pchain: stored staker %s: %w", x.txID, err)
		}
		if err := ix.refreshSet(ctx, db, bc.eff, subnet, node); err != nil {
			return err
		}
	}

	if ix.Params.Upgrades.IsEtnaActivated(time.Unix(newTime, 0)) && newTime > bc.st.Time {
		seconds := uint64(newTime - bc.st.Time)
		cfg := ix.Params.DynamicFee
		bc.st.Fee = bc.st.Fee.AdvanceTime(cfg.MaxCapacity, cfg.MaxPerSecond, cfg.TargetPerSecond, seconds)
		if err := ix.advanceValidatorFees(ctx, db, bc, seconds, newTime); err != nil {
			return err
		}
	}
	bc.st.Time = newTime
	bc.time = newTime
	return nil
}

// promotePending moves pending stakers whose start time has come into the
// current set, in avalanchego's order (start time, priority, tx ID), minting
// each one's potential reward.
func (ix *Indexer) promotePending(ctx context.Context, db *store.Tx, bc *blockCtx, newTime int64) error {
	rows, err := db.Query(ctx, `SELECT `+stakerCols+`, priority FROM p_stakers WHERE current_height = -1
		AND removed_height = -1 AND start_time <= $1`, newTime)
	if err != nil {
		return fmt.Errorf("pchain: pending stakers: %w", err)
	}
	type pend struct {
		stakerRow
		priority int
	}
	var list []pend
	for rows.Next() {
		var p pend
		var (
			txID, subnet, node, weight, pot, acc, feePaid string
		)
		if err := rows.Scan(&txID, &p.kind, &subnet, &node, &weight, &p.start, &p.end, &pot, &acc, &p.validatorTx, &feePaid, &p.priority); err != nil {
			rows.Close()
			return fmt.Errorf("pchain: pending stakers: %w", err)
		}
		var e1, e2, e3, e4, e5 error
		p.txID, e1 = ids.FromString(txID)
		p.subnet, e2 = ids.FromString(subnet)
		p.node, e3 = ids.NodeIDFromString(node)
		p.weight, e4 = parseUint(weight)
		p.potential, e5 = parseUint(pot)
		if err := errors.Join(e1, e2, e3, e4, e5); err != nil {
			rows.Close()
			return fmt.Errorf("pchain: stored pending staker %s: %w", txID, err)
		}
		list = append(list, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pchain: pending stakers: %w", err)
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.start != b.start {
			return a.start < b.start
		}
		if a.priority != b.priority {
			return a.priority < b.priority
		}
		return bytes.Compare(a.txID[:], b.txID[:]) < 0
	})
	for _, p := range list {
		var potential uint64
		if txs.Priority(p.priority) != txs.SubnetPermissionedValidatorPendingPriority {
			supply, err := ix.supplyOf(ctx, db, bc, p.subnet)
			if err != nil {
				return err
			}
			calc, err := ix.rewardCalculator(ctx, db, p.subnet)
			if err != nil {
				return err
			}
			potential = calc.Calculate(time.Duration(p.end-p.start)*time.Second, p.weight, supply)
			if err := ix.setSupply(ctx, db, bc, p.subnet, supply+potential); err != nil {
				return err
			}
		}
		if _, err := db.Exec(ctx, `UPDATE p_stakers SET current_height = $1, potential_reward = $2 WHERE tx_id = $3`,
			int64(bc.eff), primary.PadAmount(potential), p.txID.String()); err != nil {
			return fmt.Errorf("pchain: promote %s: %w", p.txID, err)
		}
		if p.kind == KindDelegator {
			if err := DelegationsChanged(ctx, db, p.txID.String(), 0, 1); err != nil {
				return err
			}
		}
		if err := ix.stakerChanged(ctx, db, bc.eff, p.kind, p.subnet, p.node); err != nil {
			return err
		}
	}
	return nil
}

// putBlockchain records a CreateChainTx (genesis chains included).
func (ix *Indexer) putBlockchain(ctx context.Context, db *store.Tx, id ids.ID, tx *txs.CreateChainTx, height uint64, t int64) error {
	fxIDs := make([]string, len(tx.FxIDs))
	for i, f := range tx.FxIDs {
		fxIDs[i] = f.String()
	}
	key := ix.chainKeys[id]
	gen := tx.GenesisData
	if gen == nil {
		gen = []byte{}
	}
	if _, err := db.Exec(ctx, `INSERT INTO p_blockchains (blockchain_id, name, subnet_id, vm_id, fx_ids, genesis_data,
		chain_key, created_height, created_time) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)`,
		id.String(), tx.ChainName, tx.SubnetID.String(), tx.VMID.String(), jsonString(fxIDs), gen, key, int64(height), t); err != nil {
		return fmt.Errorf("pchain: insert blockchain %s: %w", id, err)
	}
	return nil
}
