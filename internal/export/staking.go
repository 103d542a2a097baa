package export

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// StakingHeader is the header of TRANSACTION_EXPORT_PRIMARY_NETWORK_STAKING
// files: P-chain staking in the date range — one STAKE row per validator or
// delegator transaction (AddValidatorTx, AddDelegatorTx,
// AddPermissionlessValidatorTx, AddPermissionlessDelegatorTx) accepted in
// the range that touches one of the addresses (input, output, or reward
// owner), and one REWARD row per reward UTXO created in the range owned by
// one of them (without addresses: all of them). Rows are ordered by time,
// then block.
//
//	record_type      STAKE or REWARD
//	tx_hash          STAKE: the staker tx; REWARD: the RewardValidatorTx that paid it
//	tx_type          the tx's type
//	block_height     P-chain height of tx_hash
//	block_timestamp  unix seconds (REWARD: when the reward UTXO was created)
//	datetime_utc     RFC 3339, UTC
//	staker_tx_hash   the validator's or delegator's staker tx
//	staker_kind      VALIDATOR or DELEGATOR
//	subnet_id        cb58 (the primary network: 11111111111111111111111111111111LpoYY)
//	node_id          NodeID-...
//	start_time       unix seconds the staking period starts
//	end_time         unix seconds it ends
//	asset_id         the staked or paid asset (AVAX on the primary network)
//	amount           STAKE: the amount staked; REWARD: the amount paid (smallest unit)
//	reward_type      REWARD: VALIDATOR, DELEGATOR or VALIDATOR_FEE (delegation fee)
//	addresses        STAKE: the reward owner's addresses; REWARD: the UTXO's owners (space-separated)
//	utxo_id          REWARD: the reward UTXO
var StakingHeader = []string{"record_type", "tx_hash", "tx_type", "block_height", "block_timestamp",
	"datetime_utc", "staker_tx_hash", "staker_kind", "subnet_id", "node_id", "start_time", "end_time", "asset_id",
	"amount", "reward_type", "addresses", "utxo_id"}

type stakingSource struct {
	db      *store.DB
	tipTime int64
	query   string
	args    []any
}

func newStakingSource(db *store.DB, tipTime int64, addrs []string) *stakingSource {
	n := len(addrs)
	stakeFilter, rewardFilter := "", ""
	args := make([]any, 0, 2*n)
	if n > 0 {
		stakeFilter = ` AND EXISTS (SELECT 1 FROM px_tx_addresses a WHERE a.address IN (` + placeholders(4, n) + `)
			AND a.chain_key = 'P' AND a.timestamp = t.timestamp AND a.tx_id = t.tx_id)`
		rewardFilter = ` AND EXISTS (SELECT 1 FROM utxo_addresses ua WHERE ua.address IN (` + placeholders(4+n, n) + `)
			AND ua.chain_key = 'P' AND ua.utxo_id = u.utxo_id)`
		for range 2 {
			for _, a := range addrs {
				args = append(args, a)
			}
		}
	}
	q := `SELECT 0, t.timestamp, t.height, t.tx_index, s.tx_id, s.tx_type, s.kind, s.subnet_id, s.node_id,
			s.start_time, s.end_time,
			CASE WHEN s.stake_asset <> '' THEN s.stake_asset
				ELSE COALESCE((SELECT MIN(o.asset_id) FROM utxos o WHERE o.tx_id = s.tx_id AND o.staked), '') END,
			s.stake_amount, '', CASE WHEN s.kind = 'DELEGATOR' THEN s.reward_owner ELSE s.validation_reward_owner END,
			'', s.tx_id
		FROM p_stakers s JOIN px_txs t ON t.tx_id = s.tx_id
		WHERE t.chain_key = 'P' AND t.timestamp >= $1 AND t.timestamp < $2 AND t.timestamp <= $3
			AND s.kind IN ('VALIDATOR', 'DELEGATOR')` + stakeFilter + `
	UNION ALL
		SELECT 1, u.created_time, u.created_height, 0, COALESCE(s.removal_tx_id, ''), 'RewardValidatorTx',
			COALESCE(s.kind, ''), COALESCE(s.subnet_id, ''), COALESCE(s.node_id, ''), COALESCE(s.start_time, 0),
			COALESCE(s.end_time, 0), u.asset_id, u.amount, u.reward_type, u.addresses, u.utxo_id, u.tx_id
		FROM utxos u LEFT JOIN p_stakers s ON s.tx_id = u.tx_id
		WHERE u.reward_type <> '' AND u.created_chain = 'P' AND u.created_time >= $1 AND u.created_time < $2
			AND u.created_time <= $3` + rewardFilter + `
	ORDER BY 2, 3, 4, 1, 17, 16`
	return &stakingSource{db: db, tipTime: tipTime, query: q, args: args}
}

func (s *stakingSource) next(ctx context.Context, from int64) (int64, bool, error) {
	return nextTx(ctx, s.db, "P", from, s.tipTime)
}

func (s *stakingSource) day(ctx context.Context, lo, hi int64, emit func([]string) error) error {
	rows, err := s.db.QueryContext(ctx, s.query, append([]any{lo, hi, s.tipTime}, s.args...)...)
	if err != nil {
		return fmt.Errorf("export: read staking rows: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind, ts, height, index, start, end int64
		var tx, typ, stakerKind, subnet, node, asset, amount, reward, owners, utxo, staker string
		if err := rows.Scan(&kind, &ts, &height, &index, &tx, &typ, &stakerKind, &subnet, &node, &start, &end,
			&asset, &amount, &reward, &owners, &utxo, &staker); err != nil {
			return fmt.Errorf("export: read staking rows: %w", err)
		}
		record := "STAKE"
		if kind == 1 {
			record = "REWARD"
		}
		if err := emit([]string{record, tx, typ, strconv.FormatInt(height, 10), strconv.FormatInt(ts, 10),
			datetime(ts), staker, stakerKind, subnet, node, strconv.FormatInt(start, 10), strconv.FormatInt(end, 10),
			asset, unpad(amount), reward, ownerList(owners), utxo}); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export: read staking rows: %w", err)
	}
	return nil
}

// ownerList reads an owner ({"addresses":[...]}) or an address list
// (JSON array) as space-separated addresses.
func ownerList(v string) string {
	if v == "" {
		return ""
	}
	var list []string
	if json.Unmarshal([]byte(v), &list) == nil {
		return strings.Join(list, " ")
	}
	var o struct {
		Addresses []string `json:"addresses"`
	}
	if json.Unmarshal([]byte(v), &o) == nil {
		return strings.Join(o.Addresses, " ")
	}
	return ""
}
