package metrics

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/permafrost-dev/permafrost/internal/decode/primary"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// feeRollup counts the continuous fee (ACP-77) every L1 validation pays. The
// P-chain charges it when a block advances the chain time: the fee per
// validator of the elapsed seconds is added to the accrued-fee counter, and a
// validator whose EndAccumulatedFee the counter reaches is deactivated, having
// spent its whole balance (avalanchego's validators/fee CostOf, which the
// P-chain indexer applies and stores as p_block_state.l1_accrued_fees). So at
// block h a validator active after block h-1 paid
//
//	min(EndAccumulatedFee, accrued(h)) - accrued(h-1)
//
// nAVAX: exactly its balance decrease, as platform.getL1Validator shows it.
// The active set and accrued(h-1) are read before the block is applied.
type feeRollup struct {
	active  []activeL1
	accrued uint64
	pending map[feeKey]*feeRow
}

type activeL1 struct {
	validation, subnet, node string
	eaf                      uint64
}

type feeKey struct {
	validation string
	day        int64
}

type feeRow struct {
	subnet, node string
	fees         uint64
}

const (
	selFeeState = `SELECT l1_accrued_fees, active_l1_validators FROM p_block_state WHERE height = $1`
	selActiveL1 = `SELECT validation_id, subnet_id, node_id, end_accumulated_fee FROM p_l1_validators
		WHERE removed_height = -1 AND end_accumulated_fee <> $1`
	selFeeDay = `SELECT fees FROM metrics_l1_fees_daily WHERE validation_id = $1 AND bucket = $2`
	upFeeDay  = `INSERT INTO metrics_l1_fees_daily (validation_id, bucket, subnet_id, node_id, fees) VALUES ($1,$2,$3,$4,$5)
		ON CONFLICT (validation_id, bucket) DO UPDATE SET fees = metrics_l1_fees_daily.fees + excluded.fees`
	upFeeSubnet = `INSERT INTO metrics_l1_fees_subnet_daily (subnet_id, bucket, fees, paying) VALUES ($1,$2,$3,$4)
		ON CONFLICT (subnet_id, bucket) DO UPDATE SET fees = metrics_l1_fees_subnet_daily.fees + excluded.fees,
		paying = metrics_l1_fees_subnet_daily.paying + excluded.paying`
	upFeeTotal = `INSERT INTO metrics_l1_fees_total_daily (bucket, fees, paying) VALUES ($1,$2,$3)
		ON CONFLICT (bucket) DO UPDATE SET fees = metrics_l1_fees_total_daily.fees + excluded.fees,
		paying = metrics_l1_fees_total_daily.paying + excluded.paying`
)

// zeroAmount is p_l1_validators.end_accumulated_fee of an inactive validator.
var zeroAmount = primary.PadAmount(0)

// before reads the state block height starts from: the accrued fees and the
// validators active after block height-1.
func (f *feeRollup) before(ctx context.Context, tx *store.Tx, height int64) error {
	f.active, f.accrued = f.active[:0], 0
	if height == 0 {
		return nil
	}
	accrued, active, err := feeState(ctx, tx, height-1)
	if err != nil || active == 0 {
		f.accrued = accrued
		return err
	}
	f.accrued = accrued
	rows, err := tx.Query(ctx, selActiveL1, zeroAmount)
	if err != nil {
		return fmt.Errorf("active L1 validators: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a activeL1
		var eaf string
		if err := rows.Scan(&a.validation, &a.subnet, &a.node, &eaf); err != nil {
			return fmt.Errorf("active L1 validators: %w", err)
		}
		if a.eaf, err = strconv.ParseUint(eaf, 10, 64); err != nil {
			return fmt.Errorf("L1 validator %s: end accumulated fee %q: %w", a.validation, eaf, err)
		}
		f.active = append(f.active, a)
	}
	return rows.Err()
}

func feeState(ctx context.Context, tx *store.Tx, height int64) (accrued uint64, active int64, err error) {
	var s string
	err = tx.QueryRow(ctx, selFeeState, height).Scan(&s, &active)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, fmt.Errorf("no P-chain state at height %d", height)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("P-chain state at %d: %w", height, err)
	}
	if accrued, err = strconv.ParseUint(s, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("P-chain accrued fees %q at %d: %w", s, height, err)
	}
	return accrued, active, nil
}

// after charges the validators read by before with the fees block height
// (time ts) accrued.
func (f *feeRollup) after(ctx context.Context, tx *store.Tx, height, ts int64) error {
	if len(f.active) == 0 {
		return nil
	}
	accrued, _, err := feeState(ctx, tx, height)
	if err != nil {
		return err
	}
	if accrued <= f.accrued {
		return nil // no time passed
	}
	day := Day.Floor(ts)
	for _, a := range f.active {
		if a.eaf <= f.accrued {
			continue
		}
		paid := min(a.eaf, accrued) - f.accrued
		if f.pending == nil {
			f.pending = map[feeKey]*feeRow{}
		}
		k := feeKey{a.validation, day}
		r := f.pending[k]
		if r == nil {
			r = &feeRow{subnet: a.subnet, node: a.node}
			f.pending[k] = r
		}
		if r.fees+paid < r.fees || r.fees+paid > math.MaxInt64 {
			return fmt.Errorf("L1 validator %s: fees of day %d overflow", a.validation, day)
		}
		r.fees += paid
	}
	f.active = f.active[:0]
	return nil
}

type feeSum struct {
	fees, paying int64
}

// flush adds the batch's fees to the daily rows of each validation, and to
// its subnet's and the total's (paying counts a validation once a day: when
// its day row is first written).
func (f *feeRollup) flush(ctx context.Context, tx *store.Tx) error {
	defer f.discard()
	if len(f.pending) == 0 {
		return nil
	}
	keys := slices.SortedFunc(maps.Keys(f.pending), func(a, b feeKey) int {
		return cmp.Or(cmp.Compare(a.day, b.day), cmp.Compare(a.validation, b.validation))
	})
	type subnetDay struct {
		subnet string
		day    int64
	}
	subnets := map[subnetDay]*feeSum{}
	totals := map[int64]*feeSum{}
	for _, k := range keys {
		r := f.pending[k]
		var old int64
		err := tx.QueryRow(ctx, selFeeDay, k.validation, k.day).Scan(&old)
		first := errors.Is(err, sql.ErrNoRows)
		if err != nil && !first {
			return fmt.Errorf("L1 fees of %s: %w", k.validation, err)
		}
		if old+int64(r.fees) < old {
			return fmt.Errorf("L1 fees of %s: overflow", k.validation)
		}
		if _, err := tx.Exec(ctx, upFeeDay, k.validation, k.day, r.subnet, r.node, int64(r.fees)); err != nil {
			return fmt.Errorf("L1 fees of %s: %w", k.validation, err)
		}
		sd := subnetDay{r.subnet, k.day}
		if subnets[sd] == nil {
			subnets[sd] = &feeSum{}
		}
		if totals[k.day] == nil {
			totals[k.day] = &feeSum{}
		}
		for _, s := range []*feeSum{subnets[sd], totals[k.day]} {
			s.fees += int64(r.fees)
			if first {
				s.paying++
			}
		}
	}
	for _, sd := range slices.SortedFunc(maps.Keys(subnets), func(a, b subnetDay) int {
		return cmp.Or(cmp.Compare(a.day, b.day), cmp.Compare(a.subnet, b.subnet))
	}) {
		s := subnets[sd]
		if _, err := tx.Exec(ctx, upFeeSubnet, sd.subnet, sd.day, s.fees, s.paying); err != nil {
			return fmt.Errorf("L1 fees of subnet %s: %w", sd.subnet, err)
		}
	}
	for _, day := range slices.Sorted(maps.Keys(totals)) {
		s := totals[day]
		if _, err := tx.Exec(ctx, upFeeTotal, day, s.fees, s.paying); err != nil {
			return fmt.Errorf("L1 fee totals: %w", err)
		}
	}
	return nil
}

func (f *feeRollup) discard() {
	f.active = f.active[:0]
	clear(f.pending)
}
