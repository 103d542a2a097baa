// Package primary writes the rows shared by the primary-network chains: UTXOs
// (created, consumed, by address) and the tx/asset/address links. The P, X and
// C-atomic indexers all go through it, so an atomic UTXO exported on one chain
// and imported on another is one row whichever chain is indexed first.
package primary

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/nftfx"
	"github.com/ava-labs/avalanchego/vms/platformvm/stakeable"
	"github.com/ava-labs/avalanchego/vms/propertyfx"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// PadAmount renders an amount as 20 zero-padded digits, so text order equals
// numeric order in both backends (uint64 does not fit BIGINT).
func PadAmount(v uint64) string { return fmt.Sprintf("%020d", v) }

// UnpadAmount turns a stored amount back into its decimal form.
func UnpadAmount(s string) string {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return s
	}
	return strconv.FormatUint(v, 10)
}

// Created describes where and when a UTXO came to be, and how it is classified.
type Created struct {
	CreatedChain string // chain key of the creating tx: P, X, C
	ChainKey     string // chain key where the UTXO is spendable (export destination)
	Height       uint64
	Time         int64
	UTXOType     string // P: TRANSFER or STAKE; X: see FxType
	Staked       bool
	StakeStart   int64
	StakeEnd     int64
	RewardType   string // VALIDATOR, DELEGATOR, VALIDATOR_FEE for reward UTXOs
}

// Fields are the per-fx facts of an output.
type Fields struct {
	FxType            string
	Amount            uint64
	Owners            *secp256k1fx.OutputOwners
	StakeableLocktime uint64
	GroupID           uint32
	Payload           []byte
}

// OutputFields extracts the facts of any output type the primary network defines.
func OutputFields(out any) (Fields, error) {
	switch o := out.(type) {
	case *secp256k1fx.TransferOutput:
		return Fields{FxType: "secp256k1fx.TransferOutput", Amount: o.Amt, Owners: &o.OutputOwners}, nil
	case *stakeable.LockOut:
		inner, err := OutputFields(o.TransferableOut)
		if err != nil {
			return Fields{}, err
		}
		inner.FxType = "stakeable.LockOut"
		inner.StakeableLocktime = o.Locktime
		return inner, nil
	case *secp256k1fx.MintOutput:
		return Fields{FxType: "secp256k1fx.MintOutput", Owners: &o.OutputOwners}, nil
	case *nftfx.MintOutput:
		return Fields{FxType: "nftfx.MintOutput", Owners: &o.OutputOwners, GroupID: o.GroupID}, nil
	case *nftfx.TransferOutput:
		return Fields{FxType: "nftfx.TransferOutput", Owners: &o.OutputOwners, GroupID: o.GroupID, Payload: o.Payload}, nil
	case *propertyfx.MintOutput:
		return Fields{FxType: "propertyfx.MintOutput", Owners: &o.OutputOwners}, nil
	case *propertyfx.OwnedOutput:
		return Fields{FxType: "propertyfx.OwnedOutput", Owners: &o.OutputOwners}, nil
	}
	return Fields{}, fmt.Errorf("primary: unsupported output type %T", out)
}

// Addresses formats owners as bech32 without chain prefix (e.g. "custom1..."), sorted.
func Addresses(hrp string, owners *secp256k1fx.OutputOwners) ([]string, error) {
	if owners == nil {
		return []string{}, nil
	}
	out := make([]string, 0, len(owners.Addrs))
	for _, a := range owners.Addrs {
		s, err := address.FormatBech32(hrp, a.Bytes())
		if err != nil {
			return nil, fmt.Errorf("primary: format address: %w", err)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out, nil
}

// Writer writes primary-network rows for one network (its HRP).
type Writer struct{ HRP string }

// PutUTXO records a created UTXO. utxoBytes are the codec bytes of avax.UTXO.
// If the spend was indexed first (an import seen before its export), the row
// already exists with its consumed fields, which are kept.
func (w Writer) PutUTXO(ctx context.Context, tx *store.Tx, u *avax.UTXO, utxoBytes []byte, c Created) error {
	f, err := OutputFields(u.Out)
	if err != nil {
		return err
	}
	addrs, err := Addresses(w.HRP, f.Owners)
	if err != nil {
		return err
	}
	addrJSON, _ := json.Marshal(addrs)
	var threshold uint32
	var locktime uint64
	if f.Owners != nil {
		threshold, locktime = f.Owners.Threshold, f.Owners.Locktime
	}
	payload := ""
	if len(f.Payload) > 0 {
		payload = "0x" + hex.EncodeToString(f.Payload)
	}
	utxoID := u.InputID().String()
	amount := PadAmount(f.Amount)
	if _, err := tx.Exec(ctx, `INSERT INTO utxos (utxo_id, tx_id, output_index, created_chain, chain_key, asset_id, amount,
		fx_type, utxo_type, addresses, threshold, locktime, stakeable_locktime, group_id, payload, staked, stake_start,
		stake_end, reward_type, utxo_bytes, created_height, created_time)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22)
		ON CONFLICT (utxo_id) DO UPDATE SET tx_id=excluded.tx_id, output_index=excluded.output_index,
		created_chain=excluded.created_chain, chain_key=excluded.chain_key, asset_id=excluded.asset_id,
		amount=excluded.amount, fx_type=excluded.fx_type, utxo_type=excluded.utxo_type, addresses=excluded.addresses,
		threshold=excluded.threshold, locktime=excluded.locktime, stakeable_locktime=excluded.stakeable_locktime,
		group_id=excluded.group_id, payload=excluded.payload, staked=excluded.staked, stake_start=excluded.stake_start,
		stake_end=excluded.stake_end, reward_type=excluded.reward_type, utxo_bytes=excluded.utxo_bytes,
		created_height=excluded.created_height, created_time=excluded.created_time`,
		utxoID, u.TxID.String(), u.OutputIndex, c.CreatedChain, c.ChainKey, u.AssetID().String(), amount,
		f.FxType, c.UTXOType, string(addrJSON), threshold, int64(locktime), int64(f.StakeableLocktime), f.GroupID, payload,
		c.Staked, c.StakeStart, c.StakeEnd, c.RewardType, utxoBytes, int64(c.Height), c.Time); err != nil {
		return fmt.Errorf("primary: put utxo %s: %w", utxoID, err)
	}
	// Read after the upsert: on PostgreSQL a concurrent import on another
	// chain that spent it first is committed by now (the upsert waited for
	// its row), so its consuming tx is seen.
	var consumed string
	if err := tx.QueryRow(ctx, `SELECT consumed_tx FROM utxos WHERE utxo_id = $1`, utxoID).Scan(&consumed); err != nil {
		return fmt.Errorf("primary: read back utxo %s: %w", utxoID, err)
	}
	// asset_id and reward_type are copied here for the data API's filtered
	// listings (0015_utxo_address_filters.sql); plain marks what balances
	// sum from the index alone (0042_plain_utxo_balances.sql, same rule).
	plain := plainRule(f.FxType, threshold, len(addrs), locktime, c.CreatedChain, c.ChainKey) && c.UTXOType != "STAKE" && !c.Staked
	for _, a := range addrs {
		if _, err := tx.Exec(ctx, `INSERT INTO utxo_addresses (address, chain_key, spent, created_time, amount, utxo_id,
			asset_id, reward_type, plain)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9) ON CONFLICT (address, chain_key, utxo_id) DO UPDATE SET spent=excluded.spent,
			created_time=excluded.created_time, amount=excluded.amount, asset_id=excluded.asset_id,
			reward_type=excluded.reward_type, plain=excluded.plain`,
			a, c.ChainKey, consumed != "", c.Time, amount, utxoID, u.AssetID().String(), c.RewardType, plain); err != nil {
			return fmt.Errorf("primary: index utxo %s by address: %w", utxoID, err)
		}
	}
	// A plain UTXO is spent on the chain that created it, so after it is
	// put (and a UTXO is put once: reindex starts from empty tables).
	if plain && consumed == "" {
		return addPlainBalance(ctx, tx, addrs[0], c.ChainKey, u.AssetID().String(), amount, 1)
	}
	return nil
}

// plainRule is what makes a UTXO plain besides its staking state: a
// secp256k1 transfer output of one owner, threshold 1, no locktime,
// spendable on the chain that created it. A stake output is plain once its
// staker left (UnlockStake): its balance bucket no longer changes.
func plainRule(fxType string, threshold uint32, owners int, locktime uint64, createdChain, chainKey string) bool {
	return fxType == "secp256k1fx.TransferOutput" && threshold == 1 && owners == 1 && locktime == 0 &&
		createdChain == chainKey
}

// LockStake marks a stake output locked while its staker is in the
// validator set. One whose balance bucket cannot change until it is
// unlocked (plainRule, and a start not after its block's time, so never
// pending at the tip: every staker since Durango) is flagged plain and
// summed into its owner's utxo_stake_balances row
// (0185_utxo_stake_balances.sql): a busy staker's address holds thousands.
func (w Writer) LockStake(ctx context.Context, tx *store.Tx, utxoID string) error {
	var (
		fxType, owners, createdChain, chainKey, assetID, amount string
		threshold                                               uint32
		locktime, consumedHeight, start, created                int64
	)
	err := tx.QueryRow(ctx, `UPDATE utxos SET stake_locked = $1 WHERE utxo_id = $2
		RETURNING fx_type, addresses, threshold, locktime, created_chain, chain_key, asset_id, amount, consumed_height,
		stake_start, created_time`, true, utxoID).Scan(&fxType, &owners, &threshold, &locktime, &createdChain, &chainKey,
		&assetID, &amount, &consumedHeight, &start, &created)
	if err != nil {
		return fmt.Errorf("primary: lock stake %s: %w", utxoID, err)
	}
	var addrs []string
	if err := json.Unmarshal([]byte(owners), &addrs); err != nil {
		return fmt.Errorf("primary: lock stake %s: owners: %w", utxoID, err)
	}
	if !plainRule(fxType, threshold, len(addrs), uint64(locktime), createdChain, chainKey) || start > created || consumedHeight >= 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE utxo_addresses SET plain = $1 WHERE utxo_id = $2`, true, utxoID); err != nil {
		return fmt.Errorf("primary: lock stake %s: %w", utxoID, err)
	}
	return addBalance(ctx, tx, stakeBalances, addrs[0], chainKey, assetID, amount, 1)
}

// UnlockStake marks a stake output returned to its owner (its staker left
// the validator set): spendable again, and plain when plainRule holds. A
// stake LockStake summed moves from utxo_stake_balances to
// utxo_plain_balances.
func (w Writer) UnlockStake(ctx context.Context, tx *store.Tx, utxoID string) error {
	var (
		fxType, owners, createdChain, chainKey, assetID, amount string
		threshold                                               uint32
		locktime, consumedHeight                                int64
	)
	err := tx.QueryRow(ctx, `UPDATE utxos SET stake_locked = $1 WHERE utxo_id = $2 AND stake_locked = $3
		RETURNING fx_type, addresses, threshold, locktime, created_chain, chain_key, asset_id, amount, consumed_height`,
		false, utxoID, true).Scan(&fxType, &owners, &threshold, &locktime, &createdChain, &chainKey, &assetID, &amount, &consumedHeight)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // not indexed, or unlocked already: nothing to unlock
	}
	if err != nil {
		return fmt.Errorf("primary: unlock stake %s: %w", utxoID, err)
	}
	var addrs []string
	if err := json.Unmarshal([]byte(owners), &addrs); err != nil {
		return fmt.Errorf("primary: unlock stake %s: owners: %w", utxoID, err)
	}
	if !plainRule(fxType, threshold, len(addrs), uint64(locktime), createdChain, chainKey) {
		return nil
	}
	// Plain already: summed as a locked stake (LockStake), unspent.
	var summed bool
	if err := tx.QueryRow(ctx, `SELECT plain FROM utxo_addresses WHERE utxo_id = $1`, utxoID).Scan(&summed); err != nil &&
		!errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("primary: unlock stake %s: %w", utxoID, err)
	}
	if summed {
		if err := addBalance(ctx, tx, stakeBalances, addrs[0], chainKey, assetID, amount, -1); err != nil {
			return err
		}
	} else if _, err := tx.Exec(ctx, `UPDATE utxo_addresses SET plain = $1 WHERE utxo_id = $2`, true, utxoID); err != nil {
		return fmt.Errorf("primary: unlock stake %s: %w", utxoID, err)
	}
	if consumedHeight >= 0 {
		return nil // spent (only after it was unlocked: never here in order)
	}
	return addPlainBalance(ctx, tx, addrs[0], chainKey, assetID, amount, 1)
}

// The balance rows addBalance keeps: plain UTXOs (0110) and locked stakes
// (0185), the same columns.
const (
	plainBalances = "utxo_plain_balances"
	stakeBalances = "utxo_stake_balances"
)

// addPlainBalance adds one plain UTXO (sign 1) to its owner's balance row,
// or takes it away (-1), as the two digit halves of its padded amount
// (0110_utxo_plain_balances.sql).
func addPlainBalance(ctx context.Context, tx *store.Tx, address, chainKey, assetID, padded string, sign int64) error {
	return addBalance(ctx, tx, plainBalances, address, chainKey, assetID, padded, sign)
}

// addBalance adds one UTXO (sign 1) to its owner's row of table, or takes
// it away (-1).
func addBalance(ctx context.Context, tx *store.Tx, table, address, chainKey, assetID, padded string, sign int64) error {
	hi, errHi := strconv.ParseInt(padded[:min(10, len(padded))], 10, 64)
	lo, errLo := strconv.ParseInt(padded[min(10, len(padded)):], 10, 64)
	if len(padded) != 20 || errHi != nil || errLo != nil {
		return fmt.Errorf("primary: balance of %s: amount %q is not 20 digits", address, padded)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (address, chain_key, asset_id, amount_hi, amount_lo, utxo_count)
		VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT (address, chain_key, asset_id) DO UPDATE SET
		amount_hi = `+table+`.amount_hi + excluded.amount_hi,
		amount_lo = `+table+`.amount_lo + excluded.amount_lo,
		utxo_count = `+table+`.utxo_count + excluded.utxo_count`,
		address, chainKey, assetID, sign*hi, sign*lo, sign); err != nil {
		return fmt.Errorf("primary: balance of %s: %w", address, err)
	}
	return nil
}

// Spent describes the consumption of a UTXO.
type Spent struct {
	TxID       string
	ChainKey   string // chain key of the consuming tx
	Height     uint64
	Time       int64
	InputIndex int // index of the input in the consuming tx (its credential)
	// What the input itself says, used when the creation is not indexed yet.
	AssetID string
	Amount  uint64
}

// SpendUTXO marks a UTXO consumed. If its creation is not indexed yet (an
// import indexed before the export on the other chain), a row holding what the
// input tells is inserted; PutUTXO fills the rest later.
func (w Writer) SpendUTXO(ctx context.Context, tx *store.Tx, in *avax.UTXOID, s Spent) error {
	utxoID := in.InputID().String()
	txID, idx := in.InputSource()
	if _, err := tx.Exec(ctx, `INSERT INTO utxos (utxo_id, tx_id, output_index, created_chain, chain_key, asset_id, amount,
		fx_type, utxo_type, addresses, threshold, locktime, utxo_bytes, created_height, created_time,
		consumed_tx, consumed_chain, consumed_height, consumed_time, consumed_input_index)
		VALUES ($1,$2,$3,'',$4,$5,$6,'','','[]',0,0,$7,-1,0,$8,$4,$9,$10,$11)
		ON CONFLICT (utxo_id) DO UPDATE SET consumed_tx=excluded.consumed_tx, consumed_chain=excluded.consumed_chain,
		consumed_height=excluded.consumed_height, consumed_time=excluded.consumed_time,
		consumed_input_index=excluded.consumed_input_index`,
		utxoID, txID.String(), idx, s.ChainKey, s.AssetID, PadAmount(s.Amount), []byte{},
		s.TxID, int64(s.Height), s.Time, s.InputIndex); err != nil {
		return fmt.Errorf("primary: spend utxo %s: %w", utxoID, err)
	}
	// The rows that were unspent: a plain one leaves its owner's balance.
	rows, err := tx.Query(ctx, `UPDATE utxo_addresses SET spent = $1 WHERE utxo_id = $2 AND spent = $3
		RETURNING address, chain_key, asset_id, amount, plain`, true, utxoID, false)
	if err != nil {
		return fmt.Errorf("primary: mark utxo %s spent: %w", utxoID, err)
	}
	type plainRow struct{ address, chainKey, assetID, amount string }
	var left []plainRow
	for rows.Next() {
		var r plainRow
		var plain bool
		if err := rows.Scan(&r.address, &r.chainKey, &r.assetID, &r.amount, &plain); err != nil {
			rows.Close()
			return fmt.Errorf("primary: mark utxo %s spent: %w", utxoID, err)
		}
		if plain {
			left = append(left, r)
		}
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("primary: mark utxo %s spent: %w", utxoID, err)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("primary: mark utxo %s spent: %w", utxoID, err)
	}
	for _, r := range left {
		if err := addPlainBalance(ctx, tx, r.address, r.chainKey, r.assetID, r.amount, -1); err != nil {
			return err
		}
	}
	return nil
}

// LinkTx records that txID touches an asset and addresses (deduplicated by the primary keys).
func (w Writer) LinkTx(ctx context.Context, tx *store.Tx, chainKey, txID string, time int64, assets []ids.ID, addrs []string) error {
	for _, a := range assets {
		if _, err := tx.Exec(ctx, `INSERT INTO px_tx_assets (asset_id, chain_key, timestamp, tx_id) VALUES ($1,$2,$3,$4)
			ON CONFLICT DO NOTHING`, a.String(), chainKey, time, txID); err != nil {
			return fmt.Errorf("primary: link tx %s to asset: %w", txID, err)
		}
	}
	for _, a := range addrs {
		if _, err := tx.Exec(ctx, `INSERT INTO px_tx_addresses (address, chain_key, timestamp, tx_id) VALUES ($1,$2,$3,$4)
			ON CONFLICT DO NOTHING`, a, chainKey, time, txID); err != nil {
			return fmt.Errorf("primary: link tx %s to address: %w", txID, err)
		}
	}
	return nil
}

// DerivedTables are the tables this writer fills.
// c_atomic_evm_io is the C-chain atomic side's (internal/decode/catomic),
// listed here with px_txs, whose rows it details.
var DerivedTables = []string{"utxos", "utxo_addresses", "utxo_plain_balances", "utxo_stake_balances", "avax_supply", "px_tx_assets", "px_tx_addresses", "px_txs", "px_blocks", "assets",
	"c_atomic_evm_io"}

// Supply is a change of one chain's AVAX totals (0111_avax_supply.sql), in
// nAVAX.
type Supply struct {
	GenesisSupply, Burned, Rewards, Staked, L1Deposits, L1Refunds int64
}

// AddSupply adds s to chainKey's AVAX totals (nothing for a zero change).
func (w Writer) AddSupply(ctx context.Context, tx *store.Tx, chainKey string, s Supply) error {
	if s == (Supply{}) {
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO avax_supply (chain_key, genesis_supply, burned, rewards, staked, l1_deposits, l1_refunds)
		VALUES ($1,$2,$3,$4,$5,$6,$7) ON CONFLICT (chain_key) DO UPDATE SET
		genesis_supply = avax_supply.genesis_supply + excluded.genesis_supply, burned = avax_supply.burned + excluded.burned,
		rewards = avax_supply.rewards + excluded.rewards, staked = avax_supply.staked + excluded.staked,
		l1_deposits = avax_supply.l1_deposits + excluded.l1_deposits, l1_refunds = avax_supply.l1_refunds + excluded.l1_refunds`,
		chainKey, s.GenesisSupply, s.Burned, s.Rewards, s.Staked, s.L1Deposits, s.L1Refunds); err != nil {
		return fmt.Errorf("primary: AVAX totals of %s: %w", chainKey, err)
	}
	return nil
}
