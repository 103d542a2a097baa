package primary

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// AssetAmount is the OpenAPI AssetAmount (also AssetWithPriceInfo, whose
// historicalPrice is price enrichment this index does not do: left out).
type AssetAmount struct {
	AssetID      string `json:"assetId"`
	Name         string `json:"name"`
	Symbol       string `json:"symbol"`
	Denomination int    `json:"denomination"`
	Type         string `json:"type"`
	Amount       string `json:"amount"`
}

// Credential is UtxoCredential: a signature and its recovered public key (base64).
type Credential struct {
	Signature string `json:"signature"`
	PublicKey string `json:"publicKey"`
}

// Utxo is the OpenAPI Utxo: a UTXO of the X-chain, or an atomic UTXO of the C-chain.
type Utxo struct {
	Addresses            []string     `json:"addresses"`
	Asset                AssetAmount  `json:"asset"`
	ConsumedOnChainID    string       `json:"consumedOnChainId"`
	ConsumingTxHash      string       `json:"consumingTxHash,omitempty"`
	CreatedOnChainID     string       `json:"createdOnChainId"`
	UtxoID               string       `json:"utxoId"`
	UtxoBytes            string       `json:"utxoBytes,omitempty"`
	ConsumingTxTimestamp *int64       `json:"consumingTxTimestamp,omitempty"`
	CreationTxHash       string       `json:"creationTxHash"`
	Credentials          []Credential `json:"credentials,omitempty"`
	GroupID              *int64       `json:"groupId,omitempty"`
	Locktime             int64        `json:"locktime"`
	OutputIndex          string       `json:"outputIndex"`
	Payload              string       `json:"payload,omitempty"`
	Threshold            int64        `json:"threshold"`
	Timestamp            int64        `json:"timestamp"`
	UtxoType             string       `json:"utxoType"`
}

// PChainUtxo is the OpenAPI PChainUtxo.
type PChainUtxo struct {
	Addresses               []string    `json:"addresses"`
	Asset                   AssetAmount `json:"asset"`
	ConsumedOnChainID       string      `json:"consumedOnChainId"`
	ConsumingTxHash         string      `json:"consumingTxHash,omitempty"`
	CreatedOnChainID        string      `json:"createdOnChainId"`
	UtxoID                  string      `json:"utxoId"`
	UtxoBytes               string      `json:"utxoBytes,omitempty"`
	Amount                  string      `json:"amount"`
	AssetID                 string      `json:"assetId"`
	BlockNumber             string      `json:"blockNumber"`
	BlockTimestamp          int64       `json:"blockTimestamp"`
	ConsumingBlockNumber    string      `json:"consumingBlockNumber,omitempty"`
	ConsumingBlockTimestamp *int64      `json:"consumingBlockTimestamp,omitempty"`
	PlatformLocktime        int64       `json:"platformLocktime"`
	OutputIndex             int64       `json:"outputIndex"`
	RewardType              string      `json:"rewardType,omitempty"`
	StakeableLocktime       *int64      `json:"stakeableLocktime,omitempty"`
	Staked                  bool        `json:"staked"`
	Threshold               int64       `json:"threshold"`
	TxHash                  string      `json:"txHash"`
	UtxoEndTimestamp        *int64      `json:"utxoEndTimestamp,omitempty"`
	UtxoStartTimestamp      *int64      `json:"utxoStartTimestamp,omitempty"`
	UtxoType                string      `json:"utxoType"`
}

// utxoRow is one row of utxos.
type utxoRow struct {
	ID, TxID                  string
	OutputIndex               int64
	CreatedChain, ChainKey    string
	AssetID, Amount           string // Amount unpadded decimal
	FxType, UTXOType          string
	Addresses                 []string
	Threshold, Locktime       int64
	StakeableLocktime         int64
	GroupID                   int64
	Payload                   string
	Staked                    bool
	StakeStart, StakeEnd      int64
	RewardType                string
	Bytes                     []byte
	CreatedHeight             int64
	CreatedTime               int64
	ConsumedTx, ConsumedChain string
	ConsumedHeight            int64
	ConsumedTime              int64
	ConsumedInput             int64
	StakeLocked               bool
}

const utxoColumns = `utxo_id, tx_id, output_index, created_chain, chain_key, asset_id, amount, fx_type, utxo_type,
	addresses, threshold, locktime, stakeable_locktime, group_id, payload, staked, stake_start, stake_end, reward_type,
	utxo_bytes, created_height, created_time, consumed_tx, consumed_chain, consumed_height, consumed_time,
	consumed_input_index, stake_locked`

type scanner interface{ Scan(dest ...any) error }

func scanUTXO(s scanner) (*utxoRow, error) {
	var u utxoRow
	var addrs string
	if err := s.Scan(&u.ID, &u.TxID, &u.OutputIndex, &u.CreatedChain, &u.ChainKey, &u.AssetID, &u.Amount, &u.FxType,
		&u.UTXOType, &addrs, &u.Threshold, &u.Locktime, &u.StakeableLocktime, &u.GroupID, &u.Payload, &u.Staked,
		&u.StakeStart, &u.StakeEnd, &u.RewardType, &u.Bytes, &u.CreatedHeight, &u.CreatedTime, &u.ConsumedTx,
		&u.ConsumedChain, &u.ConsumedHeight, &u.ConsumedTime, &u.ConsumedInput, &u.StakeLocked); err != nil {
		return nil, fmt.Errorf("scan utxo: %w", err)
	}
	u.Amount = unpad(u.Amount)
	if err := json.Unmarshal([]byte(addrs), &u.Addresses); err != nil {
		return nil, fmt.Errorf("utxo %s addresses: %w", u.ID, err)
	}
	if u.Addresses == nil {
		u.Addresses = []string{}
	}
	return &u, nil
}

// queryUTXOs runs a query selecting utxoColumns.
func queryUTXOs(ctx context.Context, db *store.DB, q string, args ...any) ([]*utxoRow, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("query utxos: %w", err)
	}
	defer rows.Close()
	var out []*utxoRow
	for rows.Next() {
		u, err := scanUTXO(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query utxos: %w", err)
	}
	return out, nil
}

// unpad turns a stored 20-digit amount into its decimal form.
func unpad(s string) string {
	t := strings.TrimLeft(s, "0")
	if t == "" {
		return "0"
	}
	return t
}

// pad renders an amount in the stored 20-digit form (text order = numeric order).
func pad(v uint64) string { return fmt.Sprintf("%020d", v) }

// assetInfo is a row of assets.
type assetInfo struct {
	ID, Name, Symbol string
	Denomination     int
	Type, Cap        string
	CreatedTime      int64
}

// assets loads and caches asset descriptions for one request.
type assets struct {
	db *store.DB
	m  map[string]*assetInfo
}

func newAssets(db *store.DB) *assets { return &assets{db: db, m: map[string]*assetInfo{}} }

// load fetches the given asset ids not yet cached.
func (a *assets) load(ctx context.Context, ids ...string) error {
	var need []any
	seen := map[string]bool{}
	for _, id := range ids {
		if _, ok := a.m[id]; !ok && !seen[id] {
			seen[id] = true
			need = append(need, id)
		}
	}
	if len(need) == 0 {
		return nil
	}
	rows, err := a.db.QueryContext(ctx, `SELECT asset_id, name, symbol, denomination, asset_type, cap, created_time
		FROM assets WHERE asset_id IN (`+placeholders(1, len(need))+`)`, need...)
	if err != nil {
		return fmt.Errorf("load assets: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var x assetInfo
		if err := rows.Scan(&x.ID, &x.Name, &x.Symbol, &x.Denomination, &x.Type, &x.Cap, &x.CreatedTime); err != nil {
			return fmt.Errorf("load assets: %w", err)
		}
		a.m[x.ID] = &x
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load assets: %w", err)
	}
	for _, id := range need {
		if _, ok := a.m[id.(string)]; !ok {
			// An asset whose creation is not indexed (its chain is not
			// indexed yet): known by id only; fungible is the only kind an
			// atomic or P-chain output can hold.
			a.m[id.(string)] = &assetInfo{ID: id.(string), Type: "secp256k1"}
		}
	}
	return nil
}

// amount describes amt of an asset (load must have fetched it).
func (a *assets) amount(id, amt string) AssetAmount {
	x := a.m[id]
	if x == nil {
		x = &assetInfo{ID: id, Type: "secp256k1"}
	}
	return AssetAmount{AssetID: id, Name: x.Name, Symbol: x.Symbol, Denomination: x.Denomination, Type: x.Type, Amount: amt}
}

// credentials loads the stored credentials of txs (per input index).
func credentials(ctx context.Context, db *store.DB, txIDs []string) (map[string][][]Credential, error) {
	out := map[string][][]Credential{}
	if len(txIDs) == 0 {
		return out, nil
	}
	args := make([]any, len(txIDs))
	for i, id := range txIDs {
		args[i] = id
	}
	rows, err := db.QueryContext(ctx, `SELECT tx_id, credentials FROM px_txs WHERE tx_id IN (`+placeholders(1, len(txIDs))+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("load credentials: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, js string
		if err := rows.Scan(&id, &js); err != nil {
			return nil, fmt.Errorf("load credentials: %w", err)
		}
		var c [][]Credential
		if err := json.Unmarshal([]byte(js), &c); err != nil {
			return nil, fmt.Errorf("credentials of %s: %w", id, err)
		}
		out[id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load credentials: %w", err)
	}
	return out, nil
}

// shaper turns utxo rows into the response shapes of one request.
type shaper struct {
	h      *handlers
	assets *assets
	creds  map[string][][]Credential
}

// prepare loads what shaping rows needs: their assets and the credentials
// of the txs consuming them.
func (h *handlers) prepare(ctx context.Context, a *assets, rows []*utxoRow) (*shaper, error) {
	var assetIDs, consumers []string
	seen := map[string]bool{}
	for _, u := range rows {
		assetIDs = append(assetIDs, u.AssetID)
		if u.ConsumedTx != "" && !seen[u.ConsumedTx] {
			seen[u.ConsumedTx] = true
			consumers = append(consumers, u.ConsumedTx)
		}
	}
	if err := a.load(ctx, assetIDs...); err != nil {
		return nil, err
	}
	creds, err := credentials(ctx, h.d.DB, consumers)
	if err != nil {
		return nil, err
	}
	return &shaper{h: h, assets: a, creds: creds}, nil
}

// blockchainID is the cb58 id of a chain key ("" when unknown).
func (h *handlers) blockchainID(key string) string {
	if c, ok := h.d.Network.Chain[key]; ok {
		return c.BlockchainID
	}
	return ""
}

func hexBytes(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return "0x" + hex.EncodeToString(b)
}

// consumedOn is where a UTXO was consumed, or else where it can be.
func (h *handlers) consumedOn(u *utxoRow) string {
	if u.ConsumedTx != "" && u.ConsumedChain != "" {
		return h.blockchainID(u.ConsumedChain)
	}
	return h.blockchainID(u.ChainKey)
}

// utxo shapes a row as the X/C-chain Utxo.
func (s *shaper) utxo(u *utxoRow) Utxo {
	out := Utxo{
		Addresses:         u.Addresses,
		Asset:             s.assets.amount(u.AssetID, u.Amount),
		ConsumedOnChainID: s.h.consumedOn(u),
		CreatedOnChainID:  s.h.blockchainID(u.CreatedChain),
		UtxoID:            u.ID,
		UtxoBytes:         hexBytes(u.Bytes),
		CreationTxHash:    u.TxID,
		Locktime:          u.Locktime,
		OutputIndex:       strconv.FormatInt(u.OutputIndex, 10),
		Payload:           u.Payload,
		Threshold:         u.Threshold,
		Timestamp:         u.CreatedTime,
		UtxoType:          u.UTXOType,
	}
	if strings.HasPrefix(u.FxType, "nftfx.") {
		g := u.GroupID
		out.GroupID = &g
	}
	if u.ConsumedTx != "" {
		out.ConsumingTxHash = u.ConsumedTx
		t := u.ConsumedTime
		out.ConsumingTxTimestamp = &t
		if c := s.creds[u.ConsumedTx]; u.ConsumedInput >= 0 && int(u.ConsumedInput) < len(c) {
			out.Credentials = c[u.ConsumedInput]
		}
	}
	return out
}

// pUTXO shapes a row as the PChainUtxo. staked is the state at the tip:
// the stake is locked by its staker.
func (s *shaper) pUTXO(u *utxoRow) PChainUtxo {
	typ := "TRANSFER"
	if u.UTXOType == "STAKE" {
		typ = "STAKE"
	}
	out := PChainUtxo{
		Addresses:         u.Addresses,
		Asset:             s.assets.amount(u.AssetID, u.Amount),
		ConsumedOnChainID: s.h.consumedOn(u),
		CreatedOnChainID:  s.h.blockchainID(u.CreatedChain),
		UtxoID:            u.ID,
		UtxoBytes:         hexBytes(u.Bytes),
		Amount:            u.Amount,
		AssetID:           u.AssetID,
		BlockNumber:       strconv.FormatInt(max(u.CreatedHeight, 0), 10),
		BlockTimestamp:    u.CreatedTime,
		PlatformLocktime:  u.Locktime,
		OutputIndex:       u.OutputIndex,
		RewardType:        u.RewardType,
		Staked:            u.StakeLocked,
		Threshold:         u.Threshold,
		TxHash:            u.TxID,
		UtxoType:          typ,
	}
	if u.FxType == "stakeable.LockOut" {
		l := u.StakeableLocktime
		out.StakeableLocktime = &l
	}
	if u.Staked {
		start, end := u.StakeStart, u.StakeEnd
		out.UtxoStartTimestamp, out.UtxoEndTimestamp = &start, &end
	}
	if u.ConsumedTx != "" {
		out.ConsumingTxHash = u.ConsumedTx
		out.ConsumingBlockNumber = strconv.FormatInt(max(u.ConsumedHeight, 0), 10)
		t := u.ConsumedTime
		out.ConsumingBlockTimestamp = &t
	}
	return out
}
