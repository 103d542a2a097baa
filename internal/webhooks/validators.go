package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// validator_activity (P-chain blocks). As for primary-network events the
// document defines no payload: the envelope is WebhookAddressActivityResponse's
// and event.eventType names the sub-event (ValidatorActivitySubEvents):
//
//   - validator_stake / delegator_stake: a staker of the node (subnet) was
//     added ("action": "added", its staker tx accepted) or left the set
//     ("action": "ended", with "removal": REWARDED, NOT_REWARDED, REMOVED or
//     EXPIRED, at the block that decided it);
//   - reward_distribution: a staker of the node (subnet) was paid (the
//     reward UTXOs as HistoricalReward);
//   - l1_validator_balance_increased, l1_validator_disabled (a
//     DisableL1ValidatorTx, or deactivated for lack of balance),
//     l1_validator_removed (weight set to 0): an L1 validator's change;
//   - l1_validator_balance_threshold: an active L1 validator's remaining
//     balance fell below metadata.l1ValidatorFeeBalanceThreshold in this
//     block (at or above it after the block before).

// valEvent is one validator event of the block, before matching webhooks.
type valEvent struct {
	sub, nodeID, subnetID string
	fields                map[string]any
}

func (e *Emitter) validatorEvents(ctx context.Context, tx *store.Tx, rb ingest.RawBlock) error {
	hooks, err := activeHooks(ctx, tx, e.chain, EventValidatorActivity, int64(rb.Height))
	if err != nil || len(hooks) == 0 {
		return err
	}
	h := int64(rb.Height)
	var blockID string
	var blockTime int64
	if err := tx.QueryRow(ctx, `SELECT block_id, timestamp FROM px_blocks WHERE chain_key = 'P' AND height = $1`, h).Scan(&blockID, &blockTime); err != nil {
		return fmt.Errorf("read block: %w", err)
	}
	evs, err := stakerEvents(ctx, tx, h)
	if err != nil {
		return err
	}
	l1, err := l1Events(ctx, tx, h)
	if err != nil {
		return err
	}
	evs = append(evs, l1...)
	thresholds, err := l1Balances(ctx, tx, h)
	if err != nil {
		return err
	}
	var keys []string
	for _, ev := range evs {
		keys = append(keys, ev.nodeID, ev.subnetID)
	}
	for _, b := range thresholds {
		keys = append(keys, b.nodeID, b.subnetID)
	}
	slices.Sort(keys)
	watchers, err := watching(ctx, tx, hooks, slices.Compact(keys))
	if err != nil || len(watchers) == 0 {
		return err
	}
	for _, hk := range hooks {
		var meta ValidatorMetadata
		if err := json.Unmarshal(hk.metadata, &meta); err != nil {
			return fmt.Errorf("webhook %s metadata: %w", hk.id, err)
		}
		var subs []string
		if meta.SubEvents != nil {
			subs = meta.SubEvents.ValidatorActivitySubEvents
		}
		// Keys are one node or one subnet; nodeIds and subnetIds narrow.
		matches := func(nodeID, subnetID string) bool {
			if !slices.Contains(watchers[nodeID], hk.id) && !slices.Contains(watchers[subnetID], hk.id) {
				return false
			}
			return (len(meta.NodeIDs) == 0 || slices.Contains(meta.NodeIDs, nodeID)) &&
				(len(meta.SubnetIDs) == 0 || slices.Contains(meta.SubnetIDs, subnetID))
		}
		position := 0
		write := func(sub, nodeID, subnetID string, fields map[string]any) error {
			ev := map[string]any{"eventType": sub, "network": hk.network, "nodeId": nodeID, "subnetId": subnetID,
				"blockHeight": rb.Height, "blockHash": blockID, "blockTimestamp": blockTime}
			for k, v := range fields {
				ev[k] = v
			}
			if err := e.writeEvent(ctx, tx, hk.id, EventValidatorActivity, rb.Height, position, ev); err != nil {
				return err
			}
			position++
			return nil
		}
		for _, ev := range evs {
			if slices.Contains(subs, ev.sub) && matches(ev.nodeID, ev.subnetID) {
				if err := write(ev.sub, ev.nodeID, ev.subnetID, ev.fields); err != nil {
					return err
				}
			}
		}
		if meta.L1ValidatorFeeBalanceThreshold == "" || !slices.Contains(subs, "l1_validator_balance_threshold") {
			continue
		}
		limit, ok := new(big.Int).SetString(meta.L1ValidatorFeeBalanceThreshold, 10)
		if !ok {
			continue
		}
		for _, b := range thresholds {
			if b.before.Cmp(limit) >= 0 && b.after.Cmp(limit) < 0 && matches(b.nodeID, b.subnetID) {
				if err := write("l1_validator_balance_threshold", b.nodeID, b.subnetID, map[string]any{"validationId": b.validationID,
					"l1ValidatorFeeBalanceThreshold": limit.String(), "balanceBefore": b.before.String(), "balance": b.after.String()}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func unpadAmount(s string) string {
	if s = strings.TrimLeft(s, "0"); s == "" {
		return "0"
	}
	return s
}

// stakerEvents are the stakers the block at h added (their staker tx is in
// it) and removed (the block decided their end), with the rewards paid.
func stakerEvents(ctx context.Context, tx *store.Tx, h int64) ([]valEvent, error) {
	rows, err := tx.Query(ctx, `SELECT s.tx_id, s.tx_type, s.kind, s.node_id, s.subnet_id, s.weight, s.start_time, s.end_time,
		s.added_height, s.removed_height, s.removal, s.removal_tx_id, s.stake_amount, COALESCE(x.tx_index, -1)
		FROM p_stakers s LEFT JOIN px_txs x ON x.tx_id = s.tx_id
		WHERE s.tx_id IN (SELECT tx_id FROM px_txs WHERE chain_key = 'P' AND height = $1) OR s.removed_height = $1
		ORDER BY s.removed_height = $1, COALESCE(x.tx_index, -1), s.tx_id`, h)
	if err != nil {
		return nil, fmt.Errorf("read stakers: %w", err)
	}
	type staker struct {
		txID, txType, kind, nodeID, subnetID, weight, removal, removalTx, staked string
		start, end, added, removed                                               int64
		index                                                                    int
	}
	var ss []staker
	for rows.Next() {
		var s staker
		if err := rows.Scan(&s.txID, &s.txType, &s.kind, &s.nodeID, &s.subnetID, &s.weight, &s.start, &s.end,
			&s.added, &s.removed, &s.removal, &s.removalTx, &s.staked, &s.index); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read stakers: %w", err)
		}
		ss = append(ss, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read stakers: %w", err)
	}
	var out []valEvent
	for _, s := range ss {
		sub := "validator_stake"
		if s.kind == "DELEGATOR" {
			sub = "delegator_stake"
		}
		base := map[string]any{"stakingTxHash": s.txID, "txType": s.txType, "weight": unpadAmount(s.weight),
			"amountStaked": unpadAmount(s.staked), "startTimestamp": s.start, "endTimestamp": s.end}
		if s.added == h {
			f := clone(base)
			f["action"], f["txHash"] = "added", s.txID
			out = append(out, valEvent{sub, s.nodeID, s.subnetID, f})
		}
		if s.removed != h {
			continue
		}
		f := clone(base)
		f["action"], f["removal"], f["txHash"] = "ended", s.removal, s.removalTx
		out = append(out, valEvent{sub, s.nodeID, s.subnetID, f})
		if s.removal != "REWARDED" {
			continue
		}
		rewards, err := stakerRewards(ctx, tx, s.txID, s.nodeID, s.staked, s.start, s.end, s.removalTx)
		if err != nil {
			return nil, err
		}
		if len(rewards) > 0 {
			out = append(out, valEvent{"reward_distribution", s.nodeID, s.subnetID, map[string]any{
				"stakingTxHash": s.txID, "txHash": s.removalTx, "rewards": rewards}})
		}
	}
	return out, nil
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// stakerRewards are the reward UTXOs paid for staker tx as HistoricalReward.
func stakerRewards(ctx context.Context, tx *store.Tx, stakerTx, nodeID, staked string, start, end int64, rewardTx string) ([]map[string]any, error) {
	rows, err := tx.Query(ctx, `SELECT utxo_id, output_index, asset_id, amount, addresses, reward_type FROM utxos
		WHERE tx_id = $1 AND created_chain = 'P' AND reward_type <> '' ORDER BY output_index`, stakerTx)
	if err != nil {
		return nil, fmt.Errorf("read rewards: %w", err)
	}
	defer rows.Close()
	type reward struct {
		id, asset, amount, owners, typ string
		index                          int64
	}
	var rs []reward
	var assets []string
	for rows.Next() {
		var r reward
		if err := rows.Scan(&r.id, &r.index, &r.asset, &r.amount, &r.owners, &r.typ); err != nil {
			return nil, fmt.Errorf("read rewards: %w", err)
		}
		rs = append(rs, r)
		assets = append(assets, r.asset)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read rewards: %w", err)
	}
	rows.Close()
	if len(rs) == 0 {
		return nil, nil
	}
	slices.Sort(assets)
	ci, err := loadChainInfo(ctx, tx, slices.Compact(assets))
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, r := range rs {
		var owners []string
		if err := json.Unmarshal([]byte(r.owners), &owners); err != nil {
			return nil, fmt.Errorf("reward %s owners: %w", r.id, err)
		}
		out = append(out, map[string]any{"addresses": owners, "txHash": stakerTx, "amountStaked": unpadAmount(staked), "nodeId": nodeID,
			"startTimestamp": start, "endTimestamp": end, "rewardType": r.typ, "utxoId": r.id, "outputIndex": r.index,
			"reward": ci.amount(r.asset, unpadAmount(r.amount)), "rewardTxHash": rewardTx})
	}
	return out, nil
}

// l1SubEvents maps p_l1_validator_history events to sub-events (the
// others, CONVERT, REGISTER and SET_WEIGHT to a non-zero weight, have none
// in the document's enum).
var l1SubEvents = map[string]string{
	"INCREASE_BALANCE": "l1_validator_balance_increased",
	"DISABLE":          "l1_validator_disabled",
	"DEACTIVATE":       "l1_validator_disabled",
	"REMOVE":           "l1_validator_removed",
}

// l1Events are the L1 validator changes of the block at h.
func l1Events(ctx context.Context, tx *store.Tx, h int64) ([]valEvent, error) {
	rows, err := tx.Query(ctx, `SELECT hi.validation_id, hi.tx_id, hi.event, hi.weight, hi.balance, v.node_id, v.subnet_id,
		COALESCE(x.tx_type, '') FROM p_l1_validator_history hi JOIN p_l1_validators v ON v.validation_id = hi.validation_id
		LEFT JOIN px_txs x ON x.tx_id = hi.tx_id WHERE hi.height = $1 ORDER BY hi.seq, hi.validation_id`, h)
	if err != nil {
		return nil, fmt.Errorf("read L1 validator changes: %w", err)
	}
	defer rows.Close()
	var out []valEvent
	for rows.Next() {
		var id, txID, event, weight, balance, nodeID, subnetID, txType string
		if err := rows.Scan(&id, &txID, &event, &weight, &balance, &nodeID, &subnetID, &txType); err != nil {
			return nil, fmt.Errorf("read L1 validator changes: %w", err)
		}
		sub, ok := l1SubEvents[event]
		if !ok {
			continue
		}
		out = append(out, valEvent{sub, nodeID, subnetID, map[string]any{"validationId": id, "txHash": txID, "txType": txType,
			"weight": unpadAmount(weight), "balance": unpadAmount(balance)}})
	}
	return out, rows.Err()
}

// l1Balance is an L1 validator's remaining balance after the block before
// and after this one, while it stays active.
type l1Balance struct {
	validationID, nodeID, subnetID string
	before, after                  *big.Int
}

// l1Balances are the balances of the L1 validators active after blocks
// h-1 and h: end_accumulated_fee (as of each) minus the fees accrued by
// then (p_block_state).
func l1Balances(ctx context.Context, tx *store.Tx, h int64) ([]l1Balance, error) {
	var accBefore, accAfter string
	if err := tx.QueryRow(ctx, `SELECT
		COALESCE((SELECT l1_accrued_fees FROM p_block_state WHERE height = $1), ''),
		COALESCE((SELECT l1_accrued_fees FROM p_block_state WHERE height = $2), '')`, h-1, h).Scan(&accBefore, &accAfter); err != nil {
		return nil, fmt.Errorf("read accrued fees: %w", err)
	}
	if accBefore == "" || accAfter == "" {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT v.validation_id, v.node_id, v.subnet_id,
		(SELECT hi.end_accumulated_fee FROM p_l1_validator_history hi WHERE hi.validation_id = v.validation_id AND hi.height < $1
			ORDER BY hi.height DESC, hi.seq DESC LIMIT 1),
		(SELECT hi.end_accumulated_fee FROM p_l1_validator_history hi WHERE hi.validation_id = v.validation_id AND hi.height <= $1
			ORDER BY hi.height DESC, hi.seq DESC LIMIT 1)
		FROM p_l1_validators v WHERE v.removed_height < 0 OR v.removed_height > $1 ORDER BY v.validation_id`, h)
	if err != nil {
		return nil, fmt.Errorf("read L1 validators: %w", err)
	}
	defer rows.Close()
	num := func(s string) *big.Int {
		v, _ := new(big.Int).SetString(unpadAmount(s), 10)
		return v
	}
	var out []l1Balance
	for rows.Next() {
		var b l1Balance
		var feeBefore, feeAfter *string
		if err := rows.Scan(&b.validationID, &b.nodeID, &b.subnetID, &feeBefore, &feeAfter); err != nil {
			return nil, fmt.Errorf("read L1 validators: %w", err)
		}
		if feeBefore == nil || feeAfter == nil || num(*feeBefore).Sign() == 0 || num(*feeAfter).Sign() == 0 {
			continue // not active on both sides of the block
		}
		b.before = new(big.Int).Sub(num(*feeBefore), num(accBefore))
		b.after = new(big.Int).Sub(num(*feeAfter), num(accAfter))
		out = append(out, b)
	}
	return out, rows.Err()
}
