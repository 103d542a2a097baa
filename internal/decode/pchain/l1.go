package pchain

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/utils/math"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/components/gas"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/message"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	validatorfee "github.com/ava-labs/avalanchego/vms/platformvm/validators/fee"

	"github.com/permafrost-dev/permafrost/internal/decode/primary"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// L1 validator history events (p_l1_validator_history.event).
const (
	L1Convert         = "CONVERT"
	L1Register        = "REGISTER"
	L1SetWeight       = "SET_WEIGHT"
	L1Remove          = "REMOVE"
	L1IncreaseBalance = "INCREASE_BALANCE"
	L1Disable         = "DISABLE"
	L1Deactivate      = "DEACTIVATE"
)

var zeroPad = primary.PadAmount(0)

// l1Row is an L1 validator as the state machine needs it.
type l1Row struct {
	id       ids.ID
	subnet   ids.ID
	node     ids.NodeID
	weight   uint64
	minNonce uint64
	eaf      uint64 // EndAccumulatedFee; 0 = inactive
	rbOwner  string // remaining balance owner JSON
}

func (r l1Row) balance(accrued uint64) uint64 {
	if r.eaf > accrued {
		return r.eaf - accrued
	}
	return 0
}

func loadL1(ctx context.Context, db *store.Tx, id ids.ID) (l1Row, bool, error) {
	var (
		r                                = l1Row{id: id}
		subnet, node, weight, nonce, eaf string
	)
	err := db.QueryRow(ctx, `SELECT subnet_id, node_id, weight, min_nonce, end_accumulated_fee, remaining_balance_owner
		FROM p_l1_validators WHERE validation_id = $1 AND removed_height = -1`, id.String()).
		Scan(&subnet, &node, &weight, &nonce, &eaf, &r.rbOwner)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("pchain: L1 validator %s: %w", id, err)
	}
	var e1, e2, e3, e4, e5 error
	r.subnet, e1 = ids.FromString(subnet)
	r.node, e2 = ids.NodeIDFromString(node)
	r.weight, e3 = parseUint(weight)
	r.minNonce, e4 = parseUint(nonce)
	r.eaf, e5 = parseUint(eaf)
	if err := errors.Join(e1, e2, e3, e4, e5); err != nil {
		return r, false, fmt.Errorf("pchain: stored L1 validator %s: %w", id, err)
	}
	return r, true, nil
}

func saveL1(ctx context.Context, db *store.Tx, r l1Row) error {
	if _, err := db.Exec(ctx, `UPDATE p_l1_validators SET weight = $1, min_nonce = $2, end_accumulated_fee = $3
		WHERE validation_id = $4`, primary.PadAmount(r.weight), primary.PadAmount(r.minNonce), primary.PadAmount(r.eaf), r.id.String()); err != nil {
		return fmt.Errorf("pchain: update L1 validator %s: %w", r.id, err)
	}
	return nil
}

func (ix *Indexer) l1History(ctx context.Context, db *store.Tx, bc *blockCtx, r l1Row, txID, event string, t int64) error {
	bc.seq++
	if _, err := db.Exec(ctx, `INSERT INTO p_l1_validator_history (validation_id, height, seq, tx_id, event, weight, balance,
		end_accumulated_fee, active, min_nonce, timestamp) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)`,
		r.id.String(), int64(bc.eff), bc.seq, txID, event, primary.PadAmount(r.weight), primary.PadAmount(r.balance(bc.st.Accrued)),
		primary.PadAmount(r.eaf), r.eaf != 0, primary.PadAmount(r.minNonce), t); err != nil {
		return fmt.Errorf("pchain: L1 validator history %s: %w", r.id, err)
	}
	return nil
}

// l1Changed refreshes the set entries an L1 validator change touches: its own
// node and the subnet's inactive aggregate.
func (ix *Indexer) l1Changed(ctx context.Context, db *store.Tx, eff uint64, r l1Row) error {
	if err := ix.refreshSet(ctx, db, eff, r.subnet, r.node); err != nil {
		return err
	}
	return ix.refreshSet(ctx, db, eff, r.subnet, ids.EmptyNodeID)
}

func countActiveL1(ctx context.Context, db *store.Tx) (int, error) {
	var n int
	if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM p_l1_validators WHERE removed_height = -1 AND end_accumulated_fee <> $1`,
		zeroPad).Scan(&n); err != nil {
		return 0, fmt.Errorf("pchain: count active L1 validators: %w", err)
	}
	return n, nil
}

// insertL1 stores a new L1 validator.
func (e *executor) insertL1(r l1Row, key string, rb, do Owner, convIndex int) error {
	if _, err := e.db.Exec(e.ctx, `INSERT INTO p_l1_validators (validation_id, subnet_id, node_id, public_key, weight,
		min_nonce, end_accumulated_fee, remaining_balance_owner, deactivation_owner, start_time, conversion_index,
		created_height, created_tx_id) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)`,
		r.id.String(), r.subnet.String(), r.node.String(), key, primary.PadAmount(r.weight), primary.PadAmount(r.minNonce),
		primary.PadAmount(r.eaf), jsonString(rb), jsonString(do), e.bc.st.Time, convIndex, int64(e.bc.eff), e.id.String()); err != nil {
		return fmt.Errorf("pchain: insert L1 validator %s: %w", r.id, err)
	}
	e.addOwner(rb)
	e.addOwner(do)
	return nil
}

// activate gives a new validator its balance: EndAccumulatedFee = balance +
// fees accrued so far (0 stays inactive).
func (e *executor) activate(r *l1Row, balance uint64) error {
	if balance == 0 {
		return nil
	}
	eaf, err := math.Add(balance, e.bc.st.Accrued)
	if err != nil {
		return fmt.Errorf("pchain: L1 balance overflow")
	}
	r.eaf = eaf
	e.locked += balance
	return nil
}

// convertSubnet mirrors standardTxExecutor.ConvertSubnetToL1Tx: validation ID
// of validator i is subnetID.Append(i); the conversion ID hashes the
// conversion data (ACP-77).
func (e *executor) convertSubnet(tx *txs.ConvertSubnetToL1Tx) error {
	data := message.SubnetToL1ConversionData{
		SubnetID:       tx.Subnet,
		ManagerChainID: tx.ChainID,
		ManagerAddress: tx.Address,
		Validators:     make([]message.SubnetToL1ConversionValidatorData, len(tx.Validators)),
	}
	rows := make([]l1Row, len(tx.Validators))
	for i, v := range tx.Validators {
		node, err := ids.ToNodeID(v.NodeID)
		if err != nil {
			return fmt.Errorf("pchain: conversion validator %d: %w", i, err)
		}
		r := l1Row{id: tx.Subnet.Append(uint32(i)), subnet: tx.Subnet, node: node, weight: v.Weight}
		if err := e.activate(&r, v.Balance); err != nil {
			return err
		}
		rb, err := e.ix.pchainOwner(v.RemainingBalanceOwner)
		if err != nil {
			return err
		}
		do, err := e.ix.pchainOwner(v.DeactivationOwner)
		if err != nil {
			return err
		}
		if err := e.insertL1(r, hexOrEmpty(v.Signer.PublicKey[:]), rb, do, i); err != nil {
			return err
		}
		if err := e.ix.l1History(e.ctx, e.db, e.bc, r, e.id.String(), L1Convert, e.time); err != nil {
			return err
		}
		rows[i] = r
		data.Validators[i] = message.SubnetToL1ConversionValidatorData{
			NodeID: v.NodeID, BLSPublicKey: v.Signer.PublicKey, Weight: v.Weight,
		}
	}
	conversionID, err := message.SubnetToL1ConversionID(data)
	if err != nil {
		return fmt.Errorf("pchain: conversion id: %w", err)
	}
	if _, err := e.db.Exec(e.ctx, `UPDATE p_subnets SET conversion_tx_id = $1, conversion_id = $2, manager_chain_id = $3,
		manager_address = $4, converted_height = $5, converted_time = $6 WHERE subnet_id = $7`,
		e.id.String(), conversionID.String(), tx.ChainID.String(), hexOrEmpty(tx.Address), int64(e.bc.eff), e.time,
		tx.Subnet.String()); err != nil {
		return fmt.Errorf("pchain: convert subnet %s: %w", tx.Subnet, err)
	}
	for _, r := range rows {
		if err := e.ix.l1Changed(e.ctx, e.db, e.bc.eff, r); err != nil {
			return err
		}
	}
	return nil
}

func (e *executor) registerL1(tx *txs.RegisterL1ValidatorTx) error {
	msg := e.info.register
	node, err := ids.ToNodeID(msg.NodeID)
	if err != nil {
		return fmt.Errorf("pchain: register node id: %w", err)
	}
	r := l1Row{id: msg.ValidationID(), subnet: msg.SubnetID, node: node, weight: msg.Weight}
	if err := e.activate(&r, tx.Balance); err != nil {
		return err
	}
	rb, err := e.ix.pchainOwner(msg.RemainingBalanceOwner)
	if err != nil {
		return err
	}
	do, err := e.ix.pchainOwner(msg.DisableOwner)
	if err != nil {
		return err
	}
	if err := e.insertL1(r, hexOrEmpty(msg.BLSPublicKey[:]), rb, do, -1); err != nil {
		return err
	}
	if err := e.ix.l1History(e.ctx, e.db, e.bc, r, e.id.String(), L1Register, e.time); err != nil {
		return err
	}
	return e.ix.l1Changed(e.ctx, e.db, e.bc.eff, r)
}

// refund returns an L1 validator's remaining balance as output outsLen of this
// tx (SetL1ValidatorWeightTx removal, DisableL1ValidatorTx).
func (e *executor) refund(r l1Row, outsLen int) error {
	remaining := r.balance(e.bc.st.Accrued)
	if remaining == 0 {
		e.ix.Log.Error("pchain: active L1 validator without balance", "tx", e.id, "validation", r.id)
		return nil
	}
	e.bc.supply.L1Refunds += int64(remaining)
	var o Owner
	if err := json.Unmarshal([]byte(r.rbOwner), &o); err != nil {
		return fmt.Errorf("pchain: stored owner of %s: %w", r.id, err)
	}
	addrs := make([]ids.ShortID, 0, len(o.Addresses))
	for _, a := range o.Addresses {
		_, b, err := address.ParseBech32(a)
		if err != nil {
			return fmt.Errorf("pchain: stored owner address %q: %w", a, err)
		}
		id, err := ids.ToShortID(b)
		if err != nil {
			return fmt.Errorf("pchain: stored owner address %q: %w", a, err)
		}
		addrs = append(addrs, id)
	}
	u := &avax.UTXO{
		UTXOID: avax.UTXOID{TxID: e.id, OutputIndex: uint32(outsLen)},
		Asset:  avax.Asset{ID: e.ix.avax},
		Out: &secp256k1fx.TransferOutput{Amt: remaining, OutputOwners: secp256k1fx.OutputOwners{
			Threshold: o.Threshold, Addrs: addrs,
		}},
	}
	return e.putUTXO(u, e.created("TRANSFER"), false)
}

func (e *executor) setL1Weight(outsLen int) error {
	msg := e.info.weight
	r, ok, err := loadL1(e.ctx, e.db, msg.ValidationID)
	if err != nil {
		return err
	}
	if !ok {
		e.ix.Log.Error("pchain: weight change of an unknown L1 validator", "tx", e.id, "validation", msg.ValidationID)
		return nil
	}
	// The nonce wraps like avalanchego's when a removal carries MaxUint64.
	r.minNonce = msg.Nonce + 1
	if msg.Weight != 0 {
		r.weight = msg.Weight
		if err := saveL1(e.ctx, e.db, r); err != nil {
			return err
		}
		if err := e.ix.l1History(e.ctx, e.db, e.bc, r, e.id.String(), L1SetWeight, e.time); err != nil {
			return err
		}
		return e.ix.l1Changed(e.ctx, e.db, e.bc.eff, r)
	}
	if r.eaf != 0 {
		if err := e.refund(r, outsLen); err != nil {
			return err
		}
	}
	r.weight, r.eaf = 0, 0
	if err := saveL1(e.ctx, e.db, r); err != nil {
		return err
	}
	if err := e.ix.l1History(e.ctx, e.db, e.bc, r, e.id.String(), L1Remove, e.time); err != nil {
		return err
	}
	if _, err := e.db.Exec(e.ctx, `UPDATE p_l1_validators SET removed_height = $1, removed_tx_id = $2 WHERE validation_id = $3`,
		int64(e.bc.eff), e.id.String(), r.id.String()); err != nil {
		return fmt.Errorf("pchain: remove L1 validator %s: %w", r.id, err)
	}
	return e.ix.l1Changed(e.ctx, e.db, e.bc.eff, r)
}

func (e *executor) increaseL1Balance(tx *txs.IncreaseL1ValidatorBalanceTx) error {
	r, ok, err := loadL1(e.ctx, e.db, tx.ValidationID)
	if err != nil {
		return err
	}
	if !ok {
		e.ix.Log.Error("pchain: balance increase of an unknown L1 validator", "tx", e.id, "validation", tx.ValidationID)
		return nil
	}
	if r.eaf == 0 {
		r.eaf = e.bc.st.Accrued // reactivation
	}
	if r.eaf, err = math.Add(r.eaf, tx.Balance); err != nil {
		return fmt.Errorf("pchain: L1 balance overflow")
	}
	e.locked += tx.Balance
	if err := saveL1(e.ctx, e.db, r); err != nil {
		return err
	}
	if err := e.ix.l1History(e.ctx, e.db, e.bc, r, e.id.String(), L1IncreaseBalance, e.time); err != nil {
		return err
	}
	return e.ix.l1Changed(e.ctx, e.db, e.bc.eff, r)
}

func (e *executor) disableL1(id ids.ID, outsLen int) error {
	r, ok, err := loadL1(e.ctx, e.db, id)
	if err != nil {
		return err
	}
	if !ok {
		e.ix.Log.Error("pchain: disable of an unknown L1 validator", "tx", e.id, "validation", id)
		return nil
	}
	if r.eaf == 0 {
		return nil // already inactive
	}
	if err := e.refund(r, outsLen); err != nil {
		return err
	}
	r.eaf = 0
	if err := saveL1(e.ctx, e.db, r); err != nil {
		return err
	}
	if err := e.ix.l1History(e.ctx, e.db, e.bc, r, e.id.String(), L1Disable, e.time); err != nil {
		return err
	}
	return e.ix.l1Changed(e.ctx, e.db, e.bc.eff, r)
}

// deactivate turns off the active L1 validators whose EndAccumulatedFee is
// below limit (strict) or at most limit (orEqual).
func (ix *Indexer) deactivate(ctx context.Context, db *store.Tx, bc *blockCtx, limit uint64, orEqual bool, t int64) error {
	op := "<"
	if orEqual {
		op = "<="
	}
	rows, err := db.Query(ctx, `SELECT validation_id FROM p_l1_validators WHERE removed_height = -1
		AND end_accumulated_fee <> $1 AND end_accumulated_fee `+op+` $2`, zeroPad, primary.PadAmount(limit))
	if err != nil {
		return fmt.Errorf("pchain: L1 validators to deactivate: %w", err)
	}
	var list []ids.ID
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return fmt.Errorf("pchain: L1 validators to deactivate: %w", err)
		}
		id, err := ids.FromString(s)
		if err != nil {
			rows.Close()
			return fmt.Errorf("pchain: stored validation id %q: %w", s, err)
		}
		list = append(list, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pchain: L1 validators to deactivate: %w", err)
	}
	for _, id := range list {
		r, ok, err := loadL1(ctx, db, id)
		if err != nil || !ok {
			return fmt.Errorf("pchain: reload L1 validator %s: %w", id, err)
		}
		r.eaf = 0
		if err := saveL1(ctx, db, r); err != nil {
			return err
		}
		if err := ix.l1History(ctx, db, bc, r, "", L1Deactivate, t); err != nil {
			return err
		}
		if err := ix.l1Changed(ctx, db, bc.eff, r); err != nil {
			return err
		}
	}
	return nil
}

// advanceValidatorFees mirrors executor.advanceValidatorFeeState.
func (ix *Indexer) advanceValidatorFees(ctx context.Context, db *store.Tx, bc *blockCtx, seconds uint64, t int64) error {
	n, err := countActiveL1(ctx, db)
	if err != nil {
		return err
	}
	cfg := ix.Params.ValidatorFee
	s := validatorfee.State{Current: gas.Gas(n), Excess: bc.st.L1Excess}
	accrued, err := math.Add(bc.st.Accrued, s.CostOf(cfg, seconds))
	if err != nil {
		return errors.New("pchain: accrued L1 fees overflow")
	}
	bc.st.Accrued = accrued
	if err := ix.deactivate(ctx, db, bc, accrued, true, t); err != nil {
		return err
	}
	bc.st.L1Excess = s.AdvanceTime(cfg.Target, seconds).Excess
	return nil
}

// deactivateLowBalance mirrors verifier's deactivateLowBalanceL1Validators:
// after a block's txs, validators that cannot pay for the next second stop.
func (ix *Indexer) deactivateLowBalance(ctx context.Context, db *store.Tx, bc *blockCtx) error {
	n, err := countActiveL1(ctx, db)
	if err != nil || n == 0 {
		return err
	}
	s := validatorfee.State{Current: gas.Gas(n), Excess: bc.st.L1Excess}
	limit, err := math.Add(bc.st.Accrued, s.CostOf(ix.Params.ValidatorFee, 1))
	if err != nil {
		return errors.New("pchain: accrued L1 fees overflow")
	}
	return ix.deactivate(ctx, db, bc, limit, false, bc.time)
}
