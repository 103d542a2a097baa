package export

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/decode/catomic"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// PrimaryHeader is the header of TRANSACTION_EXPORT_PRIMARY_NETWORK files:
// one row per transaction of the included chains (P, X, and the C-chain's
// atomic imports and exports) in the date range that touches one of the
// addresses — as owner of an input or an output, signer, or staking or
// subnet owner, as the index links them — or, for cChainEvmAddresses, as the
// EVM account of a C-chain atomic tx. Without any address, every transaction
// of the chains. Rows are ordered by day, then chain in request order, then
// block and position.
//
//	chain              p-chain, x-chain or c-chain
//	blockchain_id      cb58
//	tx_hash            cb58
//	tx_type            PrimaryNetworkTxType (BaseTx, ImportTx, AddPermissionlessValidatorTx, ...)
//	block_height       decimal (genesis transactions: 0)
//	block_hash         cb58 (C-chain: the EVM block's 0x-hex hash)
//	block_timestamp    unix seconds
//	datetime_utc       RFC 3339, UTC
//	memo               0x-hex
//	source_chain       imports: blockchain id the funds come from
//	destination_chain  exports: blockchain id the funds go to
//	amount_unlocked    what the tx consumed, per asset: "assetId:amount" items joined by ";"
//	                   (amounts in the asset's smallest unit; C-chain exports: the EVM inputs)
//	amount_created     what the tx created, per asset, same form (stake outputs included;
//	                   RewardValidatorTx: the reward UTXOs; C-chain imports: the EVM outputs)
//	amount_sent        the part of amount_unlocked owned by the addresses (empty without addresses)
//	amount_received    the part of amount_created owned by the addresses (empty without addresses)
var PrimaryHeader = []string{"chain", "blockchain_id", "tx_hash", "tx_type", "block_height", "block_hash",
	"block_timestamp", "datetime_utc", "memo", "source_chain", "destination_chain", "amount_unlocked",
	"amount_created", "amount_sent", "amount_received"}

// SimpleHeader is the header of TRANSACTION_EXPORT_PRIMARY_NETWORK_SIMPLE
// files: the transactions of a PRIMARY_NETWORK export (same selection and
// order), one row per asset the addresses sent or received (without
// addresses: per asset the tx consumed or created); a transaction that moved
// nothing of theirs has one row with the asset columns empty.
//
//	chain, tx_hash, tx_type, block_timestamp, datetime_utc   as in PRIMARY_NETWORK
//	asset_id            cb58
//	asset_symbol        the asset's symbol when known
//	asset_denomination  decimal places of the asset
//	amount_sent         smallest unit (without addresses: consumed)
//	amount_received     smallest unit (without addresses: created)
var SimpleHeader = []string{"chain", "tx_hash", "tx_type", "block_timestamp", "datetime_utc", "asset_id",
	"asset_symbol", "asset_denomination", "amount_sent", "amount_received"}

// pxBatch bounds how many transactions' UTXOs are loaded at once.
const pxBatch = 200

type pxTx struct {
	id, blockID, typ, memo, src, dst, staker string
	height, index, time                      int64
	raw                                      []byte // C-chain only
	// Amounts per asset.
	unlocked, created, sent, received amounts
}

type amounts map[string]*big.Int

func (a *amounts) add(asset, v string) {
	n, ok := new(big.Int).SetString(v, 10)
	if !ok {
		return
	}
	if *a == nil {
		*a = amounts{}
	}
	if cur := (*a)[asset]; cur != nil {
		cur.Add(cur, n)
		return
	}
	(*a)[asset] = n
}

func (a amounts) String() string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(k + ":" + a[k].String())
	}
	return b.String()
}

// pxSource is the transactions of one primary-network chain.
type pxSource struct {
	db           *store.DB
	chain        string // P, X or C
	chainName    string // p-chain, ...
	blockchainID string
	simple       bool
	tipTime      int64
	addrs        []string
	addrSet      map[string]bool
	evmSet       map[string]bool // C only
	assets       *assetCache
	genesisBlock *string
}

func newPXSource(db *store.DB, chain, blockchainID string, simple bool, tipTime int64, addrs, evm []string, assets *assetCache) *pxSource {
	s := &pxSource{db: db, chain: chain, chainName: strings.ToLower(chain) + "-chain", blockchainID: blockchainID,
		simple: simple, tipTime: tipTime, addrs: addrs, addrSet: map[string]bool{}, assets: assets}
	for _, a := range addrs {
		s.addrSet[a] = true
	}
	if chain == "C" && len(evm) > 0 {
		s.evmSet = map[string]bool{}
		for _, a := range evm {
			s.evmSet[a] = true
		}
	}
	return s
}

func (s *pxSource) filtered() bool { return len(s.addrs) > 0 || len(s.evmSet) > 0 }

func (s *pxSource) next(ctx context.Context, from int64) (int64, bool, error) {
	return nextTx(ctx, s.db, s.chain, from, s.tipTime)
}

func nextTx(ctx context.Context, db *store.DB, chain string, from, tip int64) (int64, bool, error) {
	var t int64
	err := db.QueryRowContext(ctx, `SELECT timestamp FROM px_txs WHERE chain_key = $1 AND timestamp >= $2
		AND timestamp <= $3 ORDER BY timestamp LIMIT 1`, chain, from, tip).Scan(&t)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("export: next tx of %s: %w", chain, err)
	}
	return t, true, nil
}

const pxColumns = `t.tx_id, t.block_id, t.tx_type, t.memo, t.source_chain, t.destination_chain, t.reward_staker_tx,
	t.height, t.tx_index, t.timestamp`

func (s *pxSource) day(ctx context.Context, lo, hi int64, emit func([]string) error) error {
	args := []any{s.chain, lo, hi, s.tipTime}
	for _, a := range s.addrs {
		args = append(args, a)
	}
	in := placeholders(5, len(s.addrs))
	var q string
	switch {
	case s.evmSet != nil:
		// EVM accounts are inside the atomic txs' bytes: read the day's
		// C-chain atomic txs (few) and match them here. (Placeholders are
		// numbered in order of appearance, as SQLite binds them.)
		hit := "FALSE"
		n := len(s.addrs)
		if n > 0 {
			hit = `EXISTS (SELECT 1 FROM px_tx_addresses a WHERE a.address IN (` + placeholders(1, n) + `)
				AND a.chain_key = t.chain_key AND a.timestamp = t.timestamp AND a.tx_id = t.tx_id)`
		}
		args = append(args[4:], args[:4]...)
		q = fmt.Sprintf(`SELECT `+pxColumns+`, t.tx_bytes, `+hit+` FROM px_txs t WHERE t.chain_key = $%d
			AND t.timestamp >= $%d AND t.timestamp < $%d AND t.timestamp <= $%d
			ORDER BY t.timestamp, t.height, t.tx_index, t.tx_id`, n+1, n+2, n+3, n+4)
	case len(s.addrs) > 0:
		q = `SELECT ` + pxColumns + `, t.tx_bytes, TRUE FROM px_tx_addresses a JOIN px_txs t ON t.tx_id = a.tx_id
			WHERE a.chain_key = $1 AND a.timestamp >= $2 AND a.timestamp < $3 AND a.timestamp <= $4
			AND a.address IN (` + in + `) ORDER BY t.timestamp, t.height, t.tx_index, t.tx_id`
	default:
		q = `SELECT ` + pxColumns + `, t.tx_bytes, TRUE FROM px_txs t WHERE t.chain_key = $1 AND t.timestamp >= $2
			AND t.timestamp < $3 AND t.timestamp <= $4 ORDER BY t.timestamp, t.height, t.tx_index, t.tx_id`
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("export: read %s txs: %w", s.chain, err)
	}
	defer rows.Close()
	batch := make([]*pxTx, 0, pxBatch)
	prev := ""
	for rows.Next() {
		t := &pxTx{}
		var raw []byte
		var hit bool
		if err := rows.Scan(&t.id, &t.blockID, &t.typ, &t.memo, &t.src, &t.dst, &t.staker, &t.height, &t.index,
			&t.time, &raw, &hit); err != nil {
			return fmt.Errorf("export: read %s txs: %w", s.chain, err)
		}
		if t.id == prev {
			continue // linked through a second address
		}
		prev = t.id
		if s.chain == "C" {
			t.raw = raw
		}
		if s.evmSet != nil && !hit && !s.evmMatch(raw) {
			continue
		}
		batch = append(batch, t)
		if len(batch) == pxBatch {
			if err := s.flush(ctx, batch, emit); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export: read %s txs: %w", s.chain, err)
	}
	return s.flush(ctx, batch, emit)
}

// evmMatch reports whether a C-chain atomic tx moves funds of an EVM address.
func (s *pxSource) evmMatch(raw []byte) bool {
	ins, outs := evmSides(raw)
	for _, x := range append(ins, outs...) {
		if s.evmSet[x.addr] {
			return true
		}
	}
	return false
}

type evmSide struct{ addr, asset, amount string }

// evmSides decodes the EVM inputs (exports) and outputs (imports) of a
// C-chain atomic tx; nil for bytes that do not decode.
func evmSides(raw []byte) (ins, outs []evmSide) {
	txs, err := catomic.DecodeExtraData(raw, false)
	if err != nil || len(txs) != 1 {
		return nil, nil
	}
	switch u := txs[0].UnsignedAtomicTx.(type) {
	case *catomic.UnsignedImportTx:
		for _, o := range u.Outs {
			outs = append(outs, evmSide{strings.ToLower(o.Address.Hex()), o.AssetID.String(), strconv.FormatUint(o.Amount, 10)})
		}
	case *catomic.UnsignedExportTx:
		for _, in := range u.Ins {
			ins = append(ins, evmSide{strings.ToLower(in.Address.Hex()), in.AssetID.String(), strconv.FormatUint(in.Amount, 10)})
		}
	}
	return ins, outs
}

// flush loads the amounts of a batch of txs and emits their rows.
func (s *pxSource) flush(ctx context.Context, batch []*pxTx, emit func([]string) error) error {
	if len(batch) == 0 {
		return nil
	}
	byID := make(map[string]*pxTx, len(batch))
	byStaker := map[string]*pxTx{}
	ids := make([]any, 0, 2*len(batch))
	for _, t := range batch {
		byID[t.id] = t
		ids = append(ids, t.id)
	}
	n := len(ids)
	for _, t := range batch {
		if t.staker != "" {
			byStaker[t.staker] = t
			ids = append(ids, t.staker)
		}
	}
	// Consumed UTXOs.
	rows, err := s.db.QueryContext(ctx, `SELECT consumed_tx, asset_id, amount, addresses FROM utxos
		WHERE consumed_tx IN (`+placeholders(1, n)+`)`, ids[:n]...)
	if err != nil {
		return fmt.Errorf("export: read consumed utxos: %w", err)
	}
	for rows.Next() {
		var tx, asset, amount, owners string
		if err := rows.Scan(&tx, &asset, &amount, &owners); err != nil {
			rows.Close()
			return fmt.Errorf("export: read consumed utxos: %w", err)
		}
		if t := byID[tx]; t != nil {
			v := unpad(amount)
			t.unlocked.add(asset, v)
			if s.owned(owners) {
				t.sent.add(asset, v)
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export: read consumed utxos: %w", err)
	}
	// Created UTXOs: a tx's own outputs, and for a RewardValidatorTx the
	// reward UTXOs, which carry the staker tx's id (as the node names them).
	args := append([]any{s.chain}, ids...)
	rows, err = s.db.QueryContext(ctx, `SELECT tx_id, asset_id, amount, addresses, reward_type FROM utxos
		WHERE created_chain = $1 AND tx_id IN (`+placeholders(2, len(ids))+`)`, args...)
	if err != nil {
		return fmt.Errorf("export: read created utxos: %w", err)
	}
	for rows.Next() {
		var tx, asset, amount, owners, reward string
		if err := rows.Scan(&tx, &asset, &amount, &owners, &reward); err != nil {
			rows.Close()
			return fmt.Errorf("export: read created utxos: %w", err)
		}
		t := byID[tx]
		if reward != "" {
			t = byStaker[tx]
		}
		if t != nil {
			v := unpad(amount)
			t.created.add(asset, v)
			if s.owned(owners) {
				t.received.add(asset, v)
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export: read created utxos: %w", err)
	}
	for _, t := range batch {
		if s.chain == "C" {
			ins, outs := evmSides(t.raw)
			for _, x := range ins {
				t.unlocked.add(x.asset, x.amount)
				if s.evmSet[x.addr] {
					t.sent.add(x.asset, x.amount)
				}
			}
			for _, x := range outs {
				t.created.add(x.asset, x.amount)
				if s.evmSet[x.addr] {
					t.received.add(x.asset, x.amount)
				}
			}
		}
		if err := s.emitTx(ctx, t, emit); err != nil {
			return err
		}
	}
	return nil
}

// owned reports whether a UTXO's owners (JSON array) include an address.
func (s *pxSource) owned(owners string) bool {
	if len(s.addrSet) == 0 || owners == "" {
		return false
	}
	var list []string
	if err := json.Unmarshal([]byte(owners), &list); err != nil {
		return false
	}
	for _, a := range list {
		if s.addrSet[a] {
			return true
		}
	}
	return false
}

func (s *pxSource) emitTx(ctx context.Context, t *pxTx, emit func([]string) error) error {
	height, block := t.height, t.blockID
	if height < 0 {
		// Genesis txs are in no block: they are the genesis block's state.
		g, err := s.genesis(ctx)
		if err != nil {
			return err
		}
		height, block = 0, g
	}
	ts := strconv.FormatInt(t.time, 10)
	if !s.simple {
		sent, received := "", ""
		if s.filtered() {
			sent, received = t.sent.String(), t.received.String()
		}
		return emit([]string{s.chainName, s.blockchainID, t.id, t.typ, strconv.FormatInt(height, 10), block, ts,
			datetime(t.time), t.memo, t.src, t.dst, t.unlocked.String(), t.created.String(), sent, received})
	}
	out, in := t.sent, t.received
	if !s.filtered() {
		out, in = t.unlocked, t.created
	}
	set := map[string]bool{}
	for k := range out {
		set[k] = true
	}
	for k := range in {
		set[k] = true
	}
	if len(set) == 0 {
		return emit([]string{s.chainName, t.id, t.typ, ts, datetime(t.time), "", "", "", "", ""})
	}
	for _, asset := range sortedKeys(set) {
		sym, den, err := s.assets.get(ctx, asset)
		if err != nil {
			return err
		}
		if err := emit([]string{s.chainName, t.id, t.typ, ts, datetime(t.time), asset, sanitizeText(sym), den,
			bigOrZero(out[asset]), bigOrZero(in[asset])}); err != nil {
			return err
		}
	}
	return nil
}

func (s *pxSource) genesis(ctx context.Context) (string, error) {
	if s.genesisBlock != nil {
		return *s.genesisBlock, nil
	}
	var id string
	err := s.db.QueryRowContext(ctx, `SELECT block_id FROM px_blocks WHERE chain_key = $1 AND height = 0`, s.chain).Scan(&id)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("export: genesis block of %s: %w", s.chain, err)
	}
	s.genesisBlock = &id
	return id, nil
}

func bigOrZero(v *big.Int) string {
	if v == nil {
		return "0"
	}
	return v.String()
}

func unpad(s string) string {
	t := strings.TrimLeft(s, "0")
	if t == "" {
		return "0"
	}
	return t
}

// assetCache remembers asset symbols and denominations (bounded).
type assetCache struct {
	db *store.DB
	m  map[string][2]string
}

func newAssetCache(db *store.DB) *assetCache { return &assetCache{db: db, m: map[string][2]string{}} }

func (c *assetCache) get(ctx context.Context, id string) (string, string, error) {
	if v, ok := c.m[id]; ok {
		return v[0], v[1], nil
	}
	var sym string
	var den int64
	err := c.db.QueryRowContext(ctx, `SELECT symbol, denomination FROM assets WHERE asset_id = $1`, id).Scan(&sym, &den)
	v := [2]string{sym, strconv.FormatInt(den, 10)}
	if errors.Is(err, sql.ErrNoRows) {
		v = [2]string{"", ""}
	} else if err != nil {
		return "", "", fmt.Errorf("export: asset %s: %w", id, err)
	}
	if len(c.m) >= 10000 {
		clear(c.m)
	}
	c.m[id] = v
	return v[0], v[1], nil
}
