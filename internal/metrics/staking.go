package metrics

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// StakeTotals is a subnet's current stakers after a block: p_stakers
// validators (primary network, elastic and permissioned subnets), L1
// validators registered and not removed, and delegators, with their weights.
type StakeTotals struct {
	Validators      int64
	ValidatorWeight *big.Int
	L1Validators    int64
	L1Weight        *big.Int
	Delegators      int64
	DelegatorWeight *big.Int
}

func newStakeTotals() *StakeTotals {
	return &StakeTotals{ValidatorWeight: new(big.Int), L1Weight: new(big.Int), DelegatorWeight: new(big.Int)}
}

func (s *StakeTotals) clone() *StakeTotals {
	return &StakeTotals{s.Validators, new(big.Int).Set(s.ValidatorWeight), s.L1Validators, new(big.Int).Set(s.L1Weight),
		s.Delegators, new(big.Int).Set(s.DelegatorWeight)}
}

// stakingRollup follows the P-chain's staker set block by block: the stakers
// that joined the current set or left it at the block (p_stakers
// current_height / removed_height) change the running totals by their count
// and weight; a subnet whose L1 validators changed at the block has its L1
// totals recounted (L1 sets are small). The totals at the end of each day a
// subnet changed are written once per batch.
type stakingRollup struct {
	totals  map[string]*StakeTotals           // subnet -> running totals (loaded lazily per batch)
	pending map[int64]map[string]*StakeTotals // day -> subnet -> totals at the day's last change
}

const (
	selStakersJoined = `SELECT subnet_id, kind, weight FROM p_stakers WHERE current_height = $1`
	selStakersLeft   = `SELECT subnet_id, kind, weight FROM p_stakers WHERE removed_height = $1 AND current_height >= 0`
	// Weight changes, registrations and removals; a deactivation (balance
	// spent) or a balance increase leaves the validator in the set.
	selL1Touched = `SELECT DISTINCT v.subnet_id FROM p_l1_validator_history h
		JOIN p_l1_validators v ON v.validation_id = h.validation_id
		WHERE h.height = $1 AND h.event IN ('CONVERT', 'REGISTER', 'SET_WEIGHT', 'REMOVE')`
	selL1Set     = `SELECT weight FROM p_l1_validators WHERE subnet_id = $1 AND removed_height = -1`
	selStakeLast = `SELECT validators, validator_weight, l1_validators, l1_weight, delegators, delegator_weight
		FROM metrics_staking_daily WHERE subnet_id = $1 ORDER BY bucket DESC LIMIT 1`
	upStaking = `INSERT INTO metrics_staking_daily (subnet_id, bucket, validators, validator_weight, l1_validators, l1_weight,
		delegators, delegator_weight) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)
		ON CONFLICT (subnet_id, bucket) DO UPDATE SET validators = excluded.validators, validator_weight = excluded.validator_weight,
		l1_validators = excluded.l1_validators, l1_weight = excluded.l1_weight, delegators = excluded.delegators,
		delegator_weight = excluded.delegator_weight`
)

// Staker kinds as the P-chain indexer stores them (p_stakers.kind).
const kindDelegator = "DELEGATOR"

// apply adds P-chain block height (time ts) to the running totals.
func (s *stakingRollup) apply(ctx context.Context, tx *store.Tx, height, ts int64) error {
	touched := map[string]bool{}
	for _, q := range []struct {
		sql  string
		sign int64
	}{{selStakersJoined, 1}, {selStakersLeft, -1}} {
		changes, err := stakerChanges(ctx, tx, q.sql, height)
		if err != nil {
			return err
		}
		for _, c := range changes {
			t, err := s.load(ctx, tx, c.subnet)
			if err != nil {
				return err
			}
			w := new(big.Int).SetUint64(c.weight)
			if q.sign < 0 {
				w.Neg(w)
			}
			if c.kind == kindDelegator {
				t.Delegators += q.sign
				t.DelegatorWeight.Add(t.DelegatorWeight, w)
			} else {
				t.Validators += q.sign
				t.ValidatorWeight.Add(t.ValidatorWeight, w)
			}
			touched[c.subnet] = true
		}
	}
	subnets, err := queryStrings(ctx, tx, selL1Touched, height)
	if err != nil {
		return fmt.Errorf("L1 validator changes: %w", err)
	}
	for _, subnet := range subnets {
		t, err := s.load(ctx, tx, subnet)
		if err != nil {
			return err
		}
		weights, err := queryStrings(ctx, tx, selL1Set, subnet)
		if err != nil {
			return fmt.Errorf("L1 validators of %s: %w", subnet, err)
		}
		t.L1Validators, t.L1Weight = int64(len(weights)), new(big.Int)
		for _, w := range weights {
			v, ok := new(big.Int).SetString(w, 10)
			if !ok {
				return fmt.Errorf("L1 validator weight %q of %s", w, subnet)
			}
			t.L1Weight.Add(t.L1Weight, v)
		}
		touched[subnet] = true
	}
	if len(touched) == 0 {
		return nil
	}
	if s.pending == nil {
		s.pending = map[int64]map[string]*StakeTotals{}
	}
	day := Day.Floor(ts)
	if s.pending[day] == nil {
		s.pending[day] = map[string]*StakeTotals{}
	}
	for subnet := range touched {
		s.pending[day][subnet] = s.totals[subnet].clone()
	}
	return nil
}

type stakerChange struct {
	subnet, kind string
	weight       uint64
}

func stakerChanges(ctx context.Context, tx *store.Tx, q string, height int64) ([]stakerChange, error) {
	rows, err := tx.Query(ctx, q, height)
	if err != nil {
		return nil, fmt.Errorf("staker changes at %d: %w", height, err)
	}
	defer rows.Close()
	var out []stakerChange
	for rows.Next() {
		var c stakerChange
		var w string
		if err := rows.Scan(&c.subnet, &c.kind, &w); err != nil {
			return nil, fmt.Errorf("staker changes at %d: %w", height, err)
		}
		v, ok := new(big.Int).SetString(w, 10)
		if !ok || !v.IsUint64() {
			return nil, fmt.Errorf("staker weight %q at %d", w, height)
		}
		c.weight = v.Uint64()
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("staker changes at %d: %w", height, err)
	}
	return out, nil
}

// load returns a subnet's running totals, read from its newest daily row on
// first use in the batch (zero for a subnet without one).
func (s *stakingRollup) load(ctx context.Context, tx *store.Tx, subnet string) (*StakeTotals, error) {
	if t, ok := s.totals[subnet]; ok {
		return t, nil
	}
	if s.totals == nil {
		s.totals = map[string]*StakeTotals{}
	}
	t, err := scanStakeTotals(tx.QueryRow(ctx, selStakeLast, subnet))
	if errors.Is(err, sql.ErrNoRows) {
		t, err = newStakeTotals(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("staking totals of %s: %w", subnet, err)
	}
	s.totals[subnet] = t
	return t, nil
}

func scanStakeTotals(row interface{ Scan(...any) error }) (*StakeTotals, error) {
	t := newStakeTotals()
	var vw, lw, dw string
	if err := row.Scan(&t.Validators, &vw, &t.L1Validators, &lw, &t.Delegators, &dw); err != nil {
		return nil, err
	}
	for _, p := range []struct {
		dst *big.Int
		s   string
	}{{t.ValidatorWeight, vw}, {t.L1Weight, lw}, {t.DelegatorWeight, dw}} {
		if _, ok := p.dst.SetString(p.s, 10); !ok {
			return nil, fmt.Errorf("stored weight %q", p.s)
		}
	}
	return t, nil
}

// flush writes the totals of every (day, subnet) changed since the last flush.
func (s *stakingRollup) flush(ctx context.Context, tx *store.Tx) error {
	defer s.discard()
	for _, day := range slices.Sorted(maps.Keys(s.pending)) {
		for _, subnet := range slices.Sorted(maps.Keys(s.pending[day])) {
			t := s.pending[day][subnet]
			if _, err := tx.Exec(ctx, upStaking, subnet, day, t.Validators, t.ValidatorWeight.String(), t.L1Validators,
				t.L1Weight.String(), t.Delegators, t.DelegatorWeight.String()); err != nil {
				return fmt.Errorf("staking rollup of %s: %w", subnet, err)
			}
		}
	}
	return nil
}

// discard forgets the batch's changes and the running totals read in it
// (the next batch reads them back from what was committed).
func (s *stakingRollup) discard() {
	clear(s.totals)
	clear(s.pending)
}

func queryStrings(ctx context.Context, tx *store.Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
