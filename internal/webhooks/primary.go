package webhooks

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/formatting/address"

	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// primary_network_address_activity (P, X and the C-chain's atomic txs).
//
// The published document defines the registration of these webhooks but no
// payload; the hosted service's documentation shows the envelope of
// WebhookAddressActivityResponse ({webhookId, eventType, messageId, event})
// with event.eventType naming the sub-event and event.addresses the watched
// addresses concerned, whose combined balance the event reports. The parts
// of the event are the document's own schemas (PChainBalance,
// XChainBalances, CChainAtomicBalances, HistoricalReward), so a client can
// decode them with the SDK's models; docs/operations.md lists every field.

// hook is an active webhook of one chain and event type.
type hook struct {
	id, network, chainID string
	// hrp is the network's, read from the first hook's first key (a
	// primary-network address) by activeHooks.
	hrp      string
	metadata []byte
}

// activeHooks are the webhooks of eventType on chain that raise events for
// the block at height (active, created before the block was indexed).
func activeHooks(ctx context.Context, tx *store.Tx, chain, eventType string, height int64) ([]hook, error) {
	rows, err := tx.Query(ctx, `SELECT id, network, chain_id, metadata FROM webhooks
		WHERE chain_key = $1 AND event_type = $2 AND status = 'active' AND start_height < $3 ORDER BY id`, chain, eventType, height)
	if err != nil {
		return nil, fmt.Errorf("read webhooks: %w", err)
	}
	defer rows.Close()
	var out []hook
	for rows.Next() {
		var h hook
		var md string
		if err := rows.Scan(&h.id, &h.network, &h.chainID, &md); err != nil {
			return nil, fmt.Errorf("read webhooks: %w", err)
		}
		h.metadata = []byte(md)
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	if eventType == EventPrimaryAddressActivity && len(out) > 0 {
		var key string
		if err := tx.QueryRow(ctx, `SELECT key FROM webhook_keys WHERE webhook_id = $1 LIMIT 1`, out[0].id).Scan(&key); err == nil {
			out[0].hrp, _, _ = address.ParseBech32(key)
		}
	}
	return out, nil
}

// signers are the addresses of the keys that signed input i of a tx
// (px_txs.credentials): the owners of a UTXO whose creation is not indexed
// yet (a threshold-1 UTXO's owner; the signing owners of a multisig one).
func signers(hrp, credentials string, i int) ([]string, error) {
	var creds [][]struct {
		PublicKey string `json:"publicKey"`
	}
	if err := json.Unmarshal([]byte(credentials), &creds); err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	if i < 0 || i >= len(creds) {
		return nil, nil
	}
	var out []string
	for _, c := range creds[i] {
		b, err := base64.StdEncoding.DecodeString(c.PublicKey)
		if err != nil {
			return nil, fmt.Errorf("credentials: %w", err)
		}
		pk, err := secp256k1.ToPublicKey(b)
		if err != nil {
			return nil, fmt.Errorf("credentials: %w", err)
		}
		addr := pk.Address()
		s, err := address.FormatBech32(hrp, addr[:])
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// watching maps each of keys to the ids of hooks watching it.
func watching(ctx context.Context, tx *store.Tx, hooks []hook, keys []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(keys) == 0 || len(hooks) == 0 {
		return out, nil
	}
	ids := map[string]bool{}
	for _, h := range hooks {
		ids[h.id] = true
	}
	all, _, err := keyWatchers(ctx, tx, keys)
	if err != nil {
		return nil, err
	}
	for k, ws := range all {
		for _, id := range ws {
			if ids[id] {
				out[k] = append(out[k], id)
			}
		}
	}
	return out, nil
}

// writeEvent adds one event of webhook id to the block's outbox rows,
// written by writeEvents.
func (e *Emitter) writeEvent(ctx context.Context, tx *store.Tx, id, eventType string, height uint64, position int, event any) error {
	body, err := Canonical(event)
	if err != nil {
		return err
	}
	e.writeCanonical(id, eventType, height, position, body)
	return nil
}

// writeCanonical adds the event whose canonical JSON is event: the
// envelope is written around it with its keys in canonical order (event,
// eventType, messageId, webhookId), so an event several webhooks receive is
// canonicalised once. The envelope's strings (UUIDs, an event type) need no
// escaping.
func (e *Emitter) writeCanonical(id, eventType string, height uint64, position int, event []byte) {
	msgID := MessageID(id, e.chain, height, position)
	body := make([]byte, 0, len(event)+len(eventType)+len(msgID)+len(id)+64)
	body = append(append(append(body, `{"event":`...), event...), `,"eventType":"`...)
	body = append(append(append(body, eventType...), `","messageId":"`...), msgID...)
	body = append(append(append(body, `","webhookId":"`...), id...), `"}`...)
	e.rows = append(e.rows, []any{id, int64(height), position, msgID, e.chain, string(body), e.now().UnixMilli()})
}

// writeEvents writes the block's events to the outbox, many rows per
// statement, and counts the new ones for their queues; an event already
// there (the block applied again by reindex) is skipped.
func (e *Emitter) writeEvents(ctx context.Context, tx *store.Tx) error {
	defer func() { e.rows = e.rows[:0] }()
	for rows := e.rows; len(rows) > 0; {
		chunk := rows[:min(len(rows), 200)]
		rows = rows[len(chunk):]
		values := make([]string, len(chunk))
		args := make([]any, 0, 7*len(chunk))
		for i, r := range chunk {
			values[i] = "(" + placeholders(7*i+1, 7) + ")"
			args = append(args, r...)
		}
		res, err := tx.Query(ctx, `INSERT INTO webhook_outbox (webhook_id, block_height, position, message_id, chain_key, payload, created_at)
			VALUES `+strings.Join(values, ", ")+` ON CONFLICT DO NOTHING RETURNING webhook_id`, args...)
		if err != nil {
			return fmt.Errorf("write events: %w", err)
		}
		for res.Next() {
			var id string
			if err := res.Scan(&id); err != nil {
				res.Close()
				return fmt.Errorf("write events: %w", err)
			}
			// Queued in Flush, once per webhook and batch.
			e.queued[id]++
		}
		res.Close()
		if err := res.Err(); err != nil {
			return fmt.Errorf("write events: %w", err)
		}
	}
	return nil
}

// pTx is one tx a block decides: on P the txs of the block and, in an
// option block, the proposal tx of its parent (rewards happen there).
type pTx struct {
	id, typ, stakerTx string
	index             int
	credentials       string // JSON: per input index, [{signature, publicKey}]
}

// pBlock is what a P, X or C block did to the primary network's UTXOs.
type pBlock struct {
	chain, blockID string
	hrp            string // the network's, for addresses of signers
	height         uint64
	time           int64
	txs            []pTx
	utxos          map[string]*bUTXO // the UTXOs it touched and those of the addresses concerned
	touched        []*bUTXO          // in order of their txs
}

// bUTXO is a fungible UTXO as the block sees it: which of its txs created
// (-1: before the block) and consumed it (len(txs): not in this block), and
// which released its stake.
type bUTXO struct {
	id, txID, asset, amount, createdChain, utxoType, rewardType string
	outputIndex                                                 int64
	locktime, stakeableLocktime                                 int64
	stakeLocked                                                 bool
	owners                                                      []string
	threshold                                                   int
	created, consumed, unstaked                                 int
}

const utxoCols = `utxo_id, tx_id, asset_id, amount, created_chain, utxo_type, reward_type, output_index, locktime,
	stakeable_locktime, stake_locked, addresses, threshold, created_height, consumed_tx, consumed_chain, consumed_height,
	consumed_input_index`

// fungible restricts to the outputs balances count (as avalanchego's
// getBalance: transfer and stakeable-lock outputs).
const fungible = ` AND fx_type IN ('secp256k1fx.TransferOutput', 'stakeable.LockOut')`

// loadPBlock reads the txs of chain's block at height and the fungible
// UTXOs they consumed and produced on that chain (stake outputs and rewards
// of the stakers a reward tx removes included). ok is false when the block
// decides no tx.
func loadPBlock(ctx context.Context, tx *store.Tx, chain, hrp string, height uint64) (*pBlock, bool, error) {
	b := &pBlock{chain: chain, hrp: hrp, height: height, utxos: map[string]*bUTXO{}}
	q := `SELECT tx_id, tx_type, reward_staker_tx, tx_index, block_id, timestamp, credentials FROM px_txs WHERE chain_key = $1 AND height = $2 ORDER BY tx_index`
	args := []any{chain, int64(height)}
	if chain == "P" {
		// A proposal tx is decided by the option block after it.
		q = `SELECT x.tx_id, x.tx_type, x.reward_staker_tx, x.tx_index, x.block_id, x.timestamp, x.credentials FROM px_txs x JOIN p_txs t ON t.tx_id = x.tx_id
			WHERE x.chain_key = 'P' AND x.height IN ($1, $2) AND t.decided_height = $2 ORDER BY x.height, x.tx_index`
		args = []any{int64(height) - 1, int64(height)}
	}
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, false, fmt.Errorf("read txs: %w", err)
	}
	for rows.Next() {
		var t pTx
		var blockID string
		var ts int64
		if err := rows.Scan(&t.id, &t.typ, &t.stakerTx, &t.index, &blockID, &ts, &t.credentials); err != nil {
			rows.Close()
			return nil, false, fmt.Errorf("read txs: %w", err)
		}
		b.txs = append(b.txs, t)
		b.blockID, b.time = blockID, ts
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("read txs: %w", err)
	}
	if len(b.txs) == 0 {
		return nil, false, nil
	}
	if chain != "C" {
		// The block's own id and time (an option block's time is its parent's).
		if err := tx.QueryRow(ctx, `SELECT block_id, timestamp FROM px_blocks WHERE chain_key = $1 AND height = $2`,
			chain, int64(height)).Scan(&b.blockID, &b.time); err != nil {
			return nil, false, fmt.Errorf("read block: %w", err)
		}
	}
	var ids, stakers []any
	for _, t := range b.txs {
		ids = append(ids, t.id)
		if t.stakerTx != "" {
			stakers = append(stakers, t.stakerTx)
		}
	}
	in := placeholders(2, len(ids))
	qs := []string{
		// fx_type '': an import indexed before its export (the other
		// chain is behind); signers() tells its owners.
		`SELECT ` + utxoCols + ` FROM utxos WHERE consumed_chain = $1 AND consumed_tx IN (` + in + `)
			AND (fx_type = '' OR fx_type IN ('secp256k1fx.TransferOutput', 'stakeable.LockOut'))`,
		`SELECT ` + utxoCols + ` FROM utxos WHERE created_chain = $1 AND chain_key = $1 AND tx_id IN (` + in + `)` + fungible,
	}
	argss := [][]any{append([]any{chain}, ids...), append([]any{chain}, ids...)}
	if len(stakers) > 0 {
		qs = append(qs, `SELECT `+utxoCols+` FROM utxos WHERE created_chain = $1 AND tx_id IN (`+placeholders(2, len(stakers))+`)
			AND (reward_type <> '' OR utxo_type = 'STAKE')`+fungible)
		argss = append(argss, append([]any{chain}, stakers...))
	}
	for i, q := range qs {
		us, err := b.scanUTXOs(ctx, tx, q, argss[i]...)
		if err != nil {
			return nil, false, err
		}
		for _, u := range us {
			if b.utxos[u.id] == nil {
				b.utxos[u.id] = u
				b.touched = append(b.touched, u)
			}
		}
	}
	return b, true, nil
}

// scanUTXOs reads UTXO rows, placing them in the block's tx order.
func (b *pBlock) scanUTXOs(ctx context.Context, tx *store.Tx, q string, args ...any) ([]*bUTXO, error) {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read utxos: %w", err)
	}
	defer rows.Close()
	pos := map[string]int{}
	unstakes := map[string]int{}
	for i, t := range b.txs {
		pos[t.id] = i
		if t.stakerTx != "" {
			unstakes[t.stakerTx] = i
		}
	}
	var out []*bUTXO
	for rows.Next() {
		var u bUTXO
		var amount, owners, consumedTx, consumedChain string
		var createdHeight, consumedHeight int64
		var input int
		if err := rows.Scan(&u.id, &u.txID, &u.asset, &amount, &u.createdChain, &u.utxoType, &u.rewardType, &u.outputIndex,
			&u.locktime, &u.stakeableLocktime, &u.stakeLocked, &owners, &u.threshold, &createdHeight, &consumedTx, &consumedChain, &consumedHeight,
			&input); err != nil {
			return nil, fmt.Errorf("read utxos: %w", err)
		}
		u.amount = strings.TrimLeft(amount, "0")
		if u.amount == "" {
			u.amount = "0"
		}
		if err := json.Unmarshal([]byte(owners), &u.owners); err != nil {
			return nil, fmt.Errorf("utxo %s owners: %w", u.id, err)
		}
		n := len(b.txs)
		u.created, u.consumed, u.unstaked = -1, n, n
		if i, ok := pos[u.txID]; ok && u.createdChain == b.chain && u.rewardType == "" {
			u.created = i
		}
		if i, ok := unstakes[u.txID]; ok && b.chain == "P" {
			if u.rewardType != "" {
				u.created = i // reward outputs appear when the staker leaves
			} else if u.utxoType == "STAKE" {
				u.unstaked = i
			}
		}
		if i, ok := pos[consumedTx]; ok && consumedChain == b.chain {
			u.consumed = i
			if len(u.owners) == 0 && b.hrp != "" {
				if u.owners, err = signers(b.hrp, b.txs[i].credentials, input); err != nil {
					return nil, fmt.Errorf("utxo %s: %w", u.id, err)
				}
				u.threshold = 1
			}
		}
		if u.utxoType == "STAKE" && u.createdChain == "P" && !u.stakeLocked && u.unstaked == n && u.consumed == n {
			// Unlocked before this block (or never locked).
			u.unstaked = -1
		}
		out = append(out, &u)
	}
	return out, rows.Err()
}

// loadHoldings adds the UTXOs of addrs on the block's chain that existed
// before or after the block: unspent now, or consumed by this block.
func (b *pBlock) loadHoldings(ctx context.Context, tx *store.Tx, addrs []string) error {
	args := []any{b.chain, int64(b.height)}
	for _, a := range addrs {
		args = append(args, a)
	}
	us, err := b.scanUTXOs(ctx, tx, `SELECT `+utxoCols+` FROM utxos WHERE chain_key = $1
		AND (consumed_height < 0 OR (consumed_chain = $1 AND consumed_height = $2)) AND utxo_id IN (
		SELECT utxo_id FROM utxo_addresses WHERE chain_key = $1 AND address IN (`+placeholders(3, len(addrs))+`))`+fungible, args...)
	if err != nil {
		return err
	}
	for _, u := range us {
		if b.utxos[u.id] == nil {
			b.utxos[u.id] = u
		}
	}
	return nil
}

// ownedBy reports whether one of u's owners is in addrs.
func (u *bUTXO) ownedBy(addrs map[string]bool) bool {
	return slices.ContainsFunc(u.owners, func(a string) bool { return addrs[a] })
}

// balanceType is the CommonBalanceType u counts under on chain at time now
// after tx i of the block ("" when u does not count for addrs), as the
// balances operation classifies UTXOs.
func (b *pBlock) balanceType(u *bUTXO, i int, addrs map[string]bool) string {
	now := b.time
	if u.created > i || u.consumed <= i {
		return ""
	}
	if u.createdChain != b.chain {
		if u.locktime > now {
			return "atomicMemoryLocked"
		}
		return "atomicMemoryUnlocked"
	}
	switch b.chain {
	case "P":
		staked := u.utxoType == "STAKE" && u.unstaked > i
		switch {
		case staked && u.stakeableLocktime > now:
			return "lockedStaked"
		case staked:
			return "unlockedStaked"
		case u.locktime > now:
			return "lockedPlatform"
		case u.stakeableLocktime > now:
			return "lockedStakeable"
		}
		return "unlockedUnstaked"
	case "X":
		// As avm.getAllBalances: a multisig UTXO the addresses cannot
		// spend alone is no balance of theirs.
		n := 0
		for _, a := range u.owners {
			if addrs[a] {
				n++
			}
		}
		if n < u.threshold {
			return ""
		}
		if u.locktime > now {
			return "locked"
		}
		return "unlocked"
	}
	return "" // the C-chain's own balance is EVM state, not UTXOs
}

// balances are the combined balances of addrs after tx i (before the
// block's first tx with i = -1): per balance type, per asset (and source
// chain for atomic memory), the amount and UTXO count.
func (b *pBlock) balances(addrs map[string]bool, i int) map[string]map[string]*aggregate {
	out := map[string]map[string]*aggregate{}
	for _, u := range b.utxos {
		if !u.ownedBy(addrs) {
			continue
		}
		t := b.balanceType(u, i, addrs)
		if t == "" {
			continue
		}
		key := u.asset
		if strings.HasPrefix(t, "atomicMemory") {
			key += "|" + u.createdChain
		}
		if out[t] == nil {
			out[t] = map[string]*aggregate{}
		}
		a := out[t][key]
		if a == nil {
			a = &aggregate{amount: new(big.Int)}
			out[t][key] = a
		}
		v, _ := new(big.Int).SetString(u.amount, 10)
		a.amount.Add(a.amount, v)
		a.count++
	}
	return out
}

type aggregate struct {
	amount *big.Int
	count  int64
}

// assetInfo is an asset as AssetAmount shows it.
type assetInfo struct {
	name, symbol, typ string
	denomination      int
}

// chainInfo is what payloads name chains and assets by.
type chainInfo struct {
	assets       map[string]assetInfo
	blockchainID map[string]string // chain key -> blockchain id
}

func loadChainInfo(ctx context.Context, tx *store.Tx, assets []string) (*chainInfo, error) {
	ci := &chainInfo{assets: map[string]assetInfo{}, blockchainID: map[string]string{"P": "11111111111111111111111111111111LpoYY"}}
	rows, err := tx.Query(ctx, `SELECT blockchain_id, chain_key FROM p_blockchains WHERE chain_key <> ''`)
	if err != nil {
		return nil, fmt.Errorf("read chains: %w", err)
	}
	for rows.Next() {
		var id, key string
		if err := rows.Scan(&id, &key); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read chains: %w", err)
		}
		ci.blockchainID[key] = id
	}
	rows.Close()
	if len(assets) == 0 {
		return ci, rows.Err()
	}
	args := make([]any, len(assets))
	for i, a := range assets {
		args[i] = a
	}
	rows, err = tx.Query(ctx, `SELECT asset_id, name, symbol, denomination, asset_type FROM assets WHERE asset_id IN (`+placeholders(1, len(assets))+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read assets: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var a assetInfo
		if err := rows.Scan(&id, &a.name, &a.symbol, &a.denomination, &a.typ); err != nil {
			return nil, fmt.Errorf("read assets: %w", err)
		}
		ci.assets[id] = a
	}
	return ci, rows.Err()
}

// amount is an AssetAmount.
func (ci *chainInfo) amount(asset, amount string) map[string]any {
	a, ok := ci.assets[asset]
	if !ok {
		a.typ = "secp256k1"
	}
	return map[string]any{"assetId": asset, "name": a.name, "symbol": a.symbol, "denomination": a.denomination, "type": a.typ, "amount": amount}
}

// balanceTypes are the chain's balance object's fields, in the document's
// order (PChainBalance, XChainBalances, CChainAtomicBalances).
var balanceTypes = map[string][]string{
	"P": {"unlockedUnstaked", "unlockedStaked", "lockedPlatform", "lockedStakeable", "lockedStaked", "pendingStaked", "atomicMemoryUnlocked", "atomicMemoryLocked"},
	"X": {"locked", "unlocked", "atomicMemoryUnlocked", "atomicMemoryLocked"},
	"C": {"atomicMemoryUnlocked", "atomicMemoryLocked"},
}

// render is the chain's balance object of bs.
func (ci *chainInfo) render(chain string, bs map[string]map[string]*aggregate) map[string]any {
	out := map[string]any{}
	for _, t := range balanceTypes[chain] {
		items := []map[string]any{}
		for _, key := range slices.Sorted(maps.Keys(bs[t])) {
			a := bs[t][key]
			asset, from, _ := strings.Cut(key, "|")
			item := ci.amount(asset, a.amount.String())
			item["utxoCount"] = a.count
			if from != "" {
				item["sharedWithChainId"] = ci.blockchainID[from]
				if chain == "P" {
					item["status"] = "pendingImport"
				}
			}
			items = append(items, item)
		}
		out[t] = items
	}
	return out
}

// primaryEvents writes the primary_network_address_activity events of the
// block: per tx and webhook watching an owner of a UTXO the tx consumed or
// produced on this chain, a balance_change, a balance_threshold when the
// webhook's balance fell below its threshold, and a reward_distribution for
// the reward UTXOs paid to watched addresses.
func (e *Emitter) primaryEvents(ctx context.Context, tx *store.Tx, rb ingest.RawBlock) error {
	hooks, err := activeHooks(ctx, tx, e.chain, EventPrimaryAddressActivity, int64(rb.Height))
	if err != nil || len(hooks) == 0 {
		return err
	}
	b, ok, err := loadPBlock(ctx, tx, e.chain, hooks[0].hrp, rb.Height)
	if err != nil || !ok {
		return err
	}
	var owners []string
	for _, u := range b.touched {
		owners = append(owners, u.owners...)
	}
	slices.Sort(owners)
	owners = slices.Compact(owners)
	watchers, err := watching(ctx, tx, hooks, owners)
	if err != nil || len(watchers) == 0 {
		return err
	}
	// Per webhook and tx: the watched owners of the tx's UTXOs.
	concerned := map[string]map[int]map[string]bool{}
	var addrs []string
	for _, u := range b.touched {
		for _, a := range u.owners {
			for _, id := range watchers[a] {
				for _, i := range []int{u.created, u.consumed, u.unstaked} {
					if i < 0 || i >= len(b.txs) {
						continue
					}
					if concerned[id] == nil {
						concerned[id] = map[int]map[string]bool{}
					}
					if concerned[id][i] == nil {
						concerned[id][i] = map[string]bool{}
					}
					concerned[id][i][a] = true
				}
			}
			if len(watchers[a]) > 0 {
				addrs = append(addrs, a)
			}
		}
	}
	if len(concerned) == 0 {
		return nil
	}
	slices.Sort(addrs)
	if err := b.loadHoldings(ctx, tx, slices.Compact(addrs)); err != nil {
		return err
	}
	var assets []string
	for _, u := range b.utxos {
		assets = append(assets, u.asset)
	}
	slices.Sort(assets)
	ci, err := loadChainInfo(ctx, tx, slices.Compact(assets))
	if err != nil {
		return err
	}
	for _, h := range hooks {
		if concerned[h.id] == nil {
			continue
		}
		var meta PrimaryMetadata
		if err := json.Unmarshal(h.metadata, &meta); err != nil {
			return fmt.Errorf("webhook %s metadata: %w", h.id, err)
		}
		var subs []string
		if meta.SubEvents != nil {
			subs = meta.SubEvents.AddressActivitySubEvents
		}
		position := 0
		for i, t := range b.txs {
			set := concerned[h.id][i]
			if len(set) == 0 {
				continue
			}
			addrList := slices.Sorted(maps.Keys(set))
			base := func(sub string) map[string]any {
				return map[string]any{"eventType": sub, "network": h.network, "chainId": h.chainID, "addresses": addrList,
					"txHash": t.id, "txType": t.typ, "blockHeight": b.height, "blockHash": b.blockID, "blockTimestamp": b.time}
			}
			after := b.balances(set, i)
			for _, sub := range subs {
				var ev map[string]any
				switch sub {
				case "balance_change":
					ev = base(sub)
					ev["balanceChanges"] = b.changes(ci, set, i)
					ev["balances"] = ci.render(b.chain, after)
				case "balance_threshold":
					f := meta.BalanceThresholdFilter
					if f == nil {
						continue
					}
					before := total(b.balances(set, i-1)[f.BalanceType])
					now := total(after[f.BalanceType])
					limit, _ := new(big.Int).SetString(f.BalanceThreshold, 10)
					// Fired on the way down only: at or above before, below after.
					if limit == nil || before.Cmp(limit) < 0 || now.Cmp(limit) >= 0 {
						continue
					}
					ev = base(sub)
					ev["balanceThresholdFilter"] = f
					ev["balanceBefore"], ev["balanceAfter"] = before.String(), now.String()
					ev["balances"] = ci.render(b.chain, after)
				case "reward_distribution":
					rewards, err := b.rewards(ctx, tx, ci, set, i)
					if err != nil {
						return err
					}
					if len(rewards) == 0 {
						continue
					}
					ev = base(sub)
					ev["rewards"] = rewards
				default:
					continue
				}
				if err := e.writeEvent(ctx, tx, h.id, EventPrimaryAddressActivity, b.height, position, ev); err != nil {
					return err
				}
				position++
			}
		}
	}
	return nil
}

// total sums a balance type's amounts over its assets and source chains
// (thresholds are in nAVAX: the primary network holds AVAX in practice;
// other assets count at face value).
func total(m map[string]*aggregate) *big.Int {
	s := new(big.Int)
	for _, a := range m {
		s.Add(s, a.amount)
	}
	return s
}

// changes are tx i's effects on addrs' UTXOs: per address and asset, the
// amount its consumed UTXOs held (spent) and its new ones hold (received),
// a stake output released counting as received back.
func (b *pBlock) changes(ci *chainInfo, addrs map[string]bool, i int) []map[string]any {
	type key struct{ addr, asset string }
	spent, received := map[key]*big.Int{}, map[key]*big.Int{}
	add := func(m map[key]*big.Int, k key, amount string) {
		if m[k] == nil {
			m[k] = new(big.Int)
		}
		v, _ := new(big.Int).SetString(amount, 10)
		m[k].Add(m[k], v)
	}
	var keys []key
	for _, u := range b.touched {
		for _, a := range u.owners {
			if !addrs[a] {
				continue
			}
			k := key{a, u.asset}
			switch i {
			case u.consumed:
				add(spent, k, u.amount)
			case u.created, u.unstaked:
				add(received, k, u.amount)
			default:
				continue
			}
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(x, y int) bool {
		if keys[x].addr != keys[y].addr {
			return keys[x].addr < keys[y].addr
		}
		return keys[x].asset < keys[y].asset
	})
	keys = slices.Compact(keys)
	out := []map[string]any{}
	zero := new(big.Int)
	for _, k := range keys {
		s, r := spent[k], received[k]
		if s == nil {
			s = zero
		}
		if r == nil {
			r = zero
		}
		out = append(out, map[string]any{"address": k.addr, "asset": ci.amount(k.asset, new(big.Int).Sub(r, s).String()),
			"spent": s.String(), "received": r.String()})
	}
	return out
}

// rewards are the reward UTXOs tx i paid to addrs, as HistoricalReward.
func (b *pBlock) rewards(ctx context.Context, tx *store.Tx, ci *chainInfo, addrs map[string]bool, i int) ([]map[string]any, error) {
	t := b.txs[i]
	if t.stakerTx == "" {
		return nil, nil
	}
	var staked, nodeID string
	var start, end int64
	err := tx.QueryRow(ctx, `SELECT stake_amount, node_id, start_time, end_time FROM p_stakers WHERE tx_id = $1`, t.stakerTx).
		Scan(&staked, &nodeID, &start, &end)
	if err != nil {
		return nil, fmt.Errorf("read staker %s: %w", t.stakerTx, err)
	}
	staked = strings.TrimLeft(staked, "0")
	if staked == "" {
		staked = "0"
	}
	var out []map[string]any
	for _, u := range b.touched {
		if u.rewardType == "" || u.created != i || !u.ownedBy(addrs) {
			continue
		}
		out = append(out, map[string]any{"addresses": u.owners, "txHash": t.stakerTx, "amountStaked": staked, "nodeId": nodeID,
			"startTimestamp": start, "endTimestamp": end, "rewardType": u.rewardType, "utxoId": u.id, "outputIndex": u.outputIndex,
			"reward": ci.amount(u.asset, u.amount), "rewardTxHash": t.id})
	}
	sort.Slice(out, func(x, y int) bool { return out[x]["utxoId"].(string) < out[y]["utxoId"].(string) })
	return out, nil
}

// placeholders is "$first, ..., $(first+n-1)".
func placeholders(first, n int) string {
	ph := make([]string, n)
	for i := range ph {
		ph[i] = "$" + strconv.Itoa(first+i)
	}
	return strings.Join(ph, ", ")
}
