// Package primary writes the rows shared by the primary-network chains: UTXOs
// (created, consumed, by address) and the tx/asset/address links. The P, X and
// C-atomic indexers all go through it, so an atomic UTXO exported on one chain
// and imported on another is one row whichever chain is indexed first.
package primary

import (
	"context"
	"encoding/hex"
	"encoding/json"
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
	var consumed string
	if err := tx.QueryRow(ctx, `SELECT consumed_tx FROM utxos WHERE utxo_id = $1`, utxoID).Scan(&consumed); err != nil {
		return fmt.Errorf("primary: read back utxo %s: %w", utxoID, err)
	}
	// asset_id and reward_type are copied here for the data API's filtered
	// listings (0015_utxo_address_filters.sql); plain marks what balances
	// sum from the index alone (0042_plain_utxo_balances.sql, same rule).
	plain := f.FxType == "secp256k1fx.TransferOutput" && threshold == 1 && len(addrs) == 1 && locktime == 0 &&
		c.UTXOType != "STAKE" && !c.Staked && c.CreatedChain == c.ChainKey
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
	if _, err := tx.Exec(ctx, `UPDATE utxo_addresses SET spent = $1 WHERE utxo_id = $2`, true, utxoID); err != nil {
		return fmt.Errorf("primary: mark utxo %s spent: %w", utxoID, err)
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
var DerivedTables = []string{"utxos", "utxo_addresses", "px_tx_assets", "px_tx_addresses", "px_txs", "px_blocks", "assets",
	"c_atomic_evm_io"}
