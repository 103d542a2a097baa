package pchain

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ava-labs/avalanchego/ids"
)

// Querier is what the read helpers need; *store.DB, *sql.DB and *sql.Tx fit.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Validator is one entry of a validator set at a height.
type Validator struct {
	NodeID    ids.NodeID
	PublicKey []byte // compressed BLS public key; nil when the entry has none
	Weight    uint64
}

// ValidatorSetAt returns the validator set of subnetID after P block height,
// as platform.getValidatorsAt answers it: for the primary network each
// validator's stake plus its delegators'; for a permissioned subnet the subnet
// validators with their primary-network keys; for an L1 its active validators
// plus, if any, the summed weight of inactive ones under the empty node ID
// (no key). Sorted by node ID. Heights above the indexed tip answer the tip's
// set; callers check the tip.
func ValidatorSetAt(ctx context.Context, q Querier, subnetID ids.ID, height uint64) ([]Validator, error) {
	if height > math.MaxInt64 {
		return nil, fmt.Errorf("pchain: height %d out of range", height)
	}
	rows, err := q.QueryContext(ctx, `SELECT node_id, public_key, weight FROM p_validator_set
		WHERE subnet_id = $1 AND to_height > $2 AND from_height <= $2`, subnetID.String(), int64(height))
	if err != nil {
		return nil, fmt.Errorf("pchain: validator set of %s at %d: %w", subnetID, height, err)
	}
	defer rows.Close()
	var out []Validator
	for rows.Next() {
		var node, key, weight string
		if err := rows.Scan(&node, &key, &weight); err != nil {
			return nil, fmt.Errorf("pchain: validator set: %w", err)
		}
		v := Validator{}
		if v.NodeID, err = ids.NodeIDFromString(node); err != nil {
			return nil, fmt.Errorf("pchain: stored node id %q: %w", node, err)
		}
		if key != "" {
			if v.PublicKey, err = hex.DecodeString(strings.TrimPrefix(key, "0x")); err != nil {
				return nil, fmt.Errorf("pchain: stored key of %s: %w", node, err)
			}
		}
		if v.Weight, err = parseUint(weight); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pchain: validator set: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodeID.Compare(out[j].NodeID) < 0 })
	return out, nil
}

// State is the P-chain state after a block (p_block_state).
type State struct {
	Height             uint64
	BlockID            ids.ID
	Time               int64  // chain time, unix seconds
	CurrentSupply      uint64 // primary network
	FeeCapacity        uint64 // ACP-103 gas state
	FeeExcess          uint64
	L1Excess           uint64 // ACP-77 validator fee state
	L1AccruedFees      uint64 // an active L1 validator's balance is end_accumulated_fee - this
	ActiveL1Validators int
	GasConsumed        uint64
	Burned             uint64 // tx fees burned in the block
}

// StateAt reads the state after P block height; sql.ErrNoRows when the
// height is not indexed.
func StateAt(ctx context.Context, q Querier, height uint64) (State, error) {
	st := State{Height: height}
	if height > math.MaxInt64 {
		return st, fmt.Errorf("pchain: height %d out of range", height)
	}
	rows, err := q.QueryContext(ctx, `SELECT block_id, chain_time, current_supply, fee_capacity, fee_excess, l1_excess,
		l1_accrued_fees, active_l1_validators, gas_consumed, burned FROM p_block_state WHERE height = $1`, int64(height))
	if err != nil {
		return st, fmt.Errorf("pchain: state at %d: %w", height, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return st, fmt.Errorf("pchain: state at %d: %w", height, err)
		}
		return st, sql.ErrNoRows
	}
	var blockID, supply, capacity, excess, l1Excess, accrued, gasUsed, burned string
	if err := rows.Scan(&blockID, &st.Time, &supply, &capacity, &excess, &l1Excess, &accrued, &st.ActiveL1Validators,
		&gasUsed, &burned); err != nil {
		return st, fmt.Errorf("pchain: state at %d: %w", height, err)
	}
	if st.BlockID, err = ids.FromString(blockID); err != nil {
		return st, fmt.Errorf("pchain: stored block id %q: %w", blockID, err)
	}
	for _, p := range []struct {
		dst *uint64
		s   string
	}{{&st.CurrentSupply, supply}, {&st.FeeCapacity, capacity}, {&st.FeeExcess, excess}, {&st.L1Excess, l1Excess},
		{&st.L1AccruedFees, accrued}, {&st.GasConsumed, gasUsed}, {&st.Burned, burned}} {
		if *p.dst, err = parseUint(p.s); err != nil {
			return st, err
		}
	}
	return st, nil
}
