package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Emitter wraps a chain's indexer: after the inner indexer applied a block
// inside the block's transaction (an EVM block: at the batch's Flush, after
// the inner indexer's), it reads back what the block wrote for the
// addresses active webhooks watch and writes their events to the outbox, in
// the same transaction. So an event exists exactly when its block is
// indexed, and a crash loses neither.
//
// EVM address_activity (txs whose sender, recipient, created contract, an
// ERC-20/721/1155 transfer's party or, with includeInternalTxs, an internal
// tx's party is watched; logs with includeLogs, filtered by
// eventSignatures), primary_network_address_activity on P, X and the
// C-chain's atomic txs (primary.go) and validator_activity on P
// (validators.go).
type Emitter struct {
	chain, kind string
	inner       ingest.Indexer
	now         func() time.Time
	// queued counts the events written since the last Flush per webhook:
	// their queues' pending counts are raised once per batch, at its end,
	// so the batch's transaction holds the queue rows (which deliverers
	// update) only while it commits.
	queued map[string]int64
	rows   [][]any // the block's outbox rows (writeEvent, writeEvents)
	// applied are the heights of the EVM blocks applied since the last
	// Flush, whose events Flush writes: the EVM indexer writes some of the
	// rows they are read from only at its own Flush (PostgreSQL's batch
	// COPY). Their bodies are read back from raw_blocks for the few blocks
	// a webhook wants (evmBlock): kept here, a 2,000-block catch-up batch's
	// took ~40 MB (docs/benchmarks.md "Fifteenth session").
	applied []uint64
}

// WithEvents wraps the indexer of chain chainKey of kind (P, X or EVM):
//
//	ix = webhooks.WithEvents(c.Key, c.Kind, ix)
func WithEvents(chainKey, kind string, inner ingest.Indexer) ingest.Indexer {
	return &Emitter{chain: chainKey, kind: kind, inner: inner, now: time.Now, queued: map[string]int64{}}
}

var (
	_ ingest.Indexer   = (*Emitter)(nil)
	_ ingest.Batcher   = (*Emitter)(nil)
	_ ingest.Decorator = (*Emitter)(nil)
)

// DerivedTables is the inner indexer's: the outbox is not derived, so a
// reindex keeps it (and the delivery state of its rows); the events a
// reindex raises again have the same message ids and are skipped.
func (e *Emitter) DerivedTables() []string { return e.inner.DerivedTables() }

// Unwrap is the inner indexer (ingest.Decorator: the pipeline prepares and
// collects blocks with it ahead of Apply).
func (e *Emitter) Unwrap() ingest.Indexer { return e.inner }

// Flush writes the events of the EVM blocks applied since the last Flush
// (flushEVM), then raises the pending counts of the queues of the events
// written since the last Flush, after the inner indexer's Flush: one statement per
// 500 queues, its rows in webhook id order (concurrent writers lock queue
// rows in one order), so the batch holds the rows deliverers update only
// while it commits.
func (e *Emitter) Flush(ctx context.Context, tx *store.Tx) error {
	if err := ingest.Flush(ctx, e.inner, tx); err != nil {
		return err
	}
	if err := e.flushEVM(ctx, tx); err != nil {
		return err
	}
	ids := slices.Sorted(maps.Keys(e.queued))
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 500)]
		ids = ids[len(chunk):]
		values := make([]string, len(chunk))
		args := make([]any, 0, 2*len(chunk))
		for i, id := range chunk {
			values[i] = fmt.Sprintf("($%d, CAST($%d AS BIGINT))", 2*i+1, 2*i+2)
			args = append(args, id, e.queued[id])
		}
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_queues (webhook_id, pending) VALUES `+strings.Join(values, ", ")+`
			ON CONFLICT (webhook_id) DO UPDATE SET pending = webhook_queues.pending + excluded.pending`, args...); err != nil {
			return fmt.Errorf("webhooks %s: queue events: %w", e.chain, err)
		}
	}
	clear(e.queued)
	return nil
}

// Discard forgets the batch's counts (its transaction is abandoned) and
// lets the inner indexer discard.
func (e *Emitter) Discard() {
	clear(e.queued)
	e.applied = e.applied[:0]
	ingest.Discard(e.inner)
}

// Apply indexes b with the inner indexer, then writes b's events (an EVM
// block's at Flush).
func (e *Emitter) Apply(ctx context.Context, tx *store.Tx, b ingest.RawBlock) error {
	if err := e.inner.Apply(ctx, tx, b); err != nil {
		return err
	}
	if e.kind == "EVM" {
		e.applied = append(e.applied, b.Height)
		return nil
	}
	return e.blockEvents(ctx, tx, b)
}

// flushEVM writes the events of the EVM blocks applied since the last
// Flush, block by block in height order, after the inner indexer's Flush
// wrote their rows: still in the batch's transaction, so an event exists
// exactly when its block is indexed. One probe for the batch first: most
// batches of most chains concern no webhook.
func (e *Emitter) flushEVM(ctx context.Context, tx *store.Tx) error {
	heights := e.applied
	defer func() { e.applied = heights[:0] }()
	if len(heights) == 0 {
		return nil
	}
	var n int64
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM webhooks WHERE chain_key = $1 AND status = 'active'
		AND event_type IN ($2, $3) AND start_height < $4`, e.chain, EventAddressActivity, EventPrimaryAddressActivity,
		int64(heights[len(heights)-1])).Scan(&n); err != nil {
		return fmt.Errorf("webhooks %s: probe webhooks: %w", e.chain, err)
	}
	if n == 0 {
		return nil
	}
	for _, h := range heights {
		if err := e.blockEvents(ctx, tx, ingest.RawBlock{Height: h}); err != nil {
			return err
		}
	}
	return nil
}

// evmBlock parses EVM block height as raw_blocks keeps it: written by the
// pipeline in the batch's transaction (on PostgreSQL a queued COPY, which
// a query of the transaction waits for), or there already (reindex).
func (e *Emitter) evmBlock(ctx context.Context, tx *store.Tx, height uint64) (*evmRaw, error) {
	var body []byte
	var enc ingest.RawEncoding
	err := tx.QueryRow(ctx, `SELECT body, encoding FROM raw_blocks WHERE chain_key = $1 AND height = $2`,
		e.chain, int64(height)).Scan(&body, &enc)
	if err != nil {
		return nil, fmt.Errorf("read raw block: %w", err)
	}
	if body, err = ingest.RawBody(body, enc); err != nil {
		return nil, err
	}
	return parseEVMBlock(body)
}

// blockEvents writes the events of block b, applied by the inner indexer.
func (e *Emitter) blockEvents(ctx context.Context, tx *store.Tx, b ingest.RawBlock) error {
	var err error
	switch e.kind {
	case "EVM":
		if err = e.evmEvents(ctx, tx, b); err == nil && e.chain == "C" {
			err = e.primaryEvents(ctx, tx, b) // the C-chain's atomic txs
		}
	case "P":
		if err = e.primaryEvents(ctx, tx, b); err == nil {
			err = e.validatorEvents(ctx, tx, b)
		}
	case "X":
		err = e.primaryEvents(ctx, tx, b)
	}
	if err == nil {
		err = e.writeEvents(ctx, tx)
	}
	e.rows = e.rows[:0]
	if err != nil {
		return fmt.Errorf("webhooks %s: block %d: %w", e.chain, b.Height, err)
	}
	return nil
}

// evmHook is an active address_activity webhook of this chain.
type evmHook struct {
	id              string
	includeLogs     bool
	includeInternal bool
	signatures      map[string]bool // topic0 filter of the logs; empty: all
}

// evmParties reads the block's parties as the EVM indexer wrote them: per
// tx, the sender, recipient and created contract (evm_txs), both parties of
// each ERC transfer (evm_transfers) and, apart, of each internal tx
// (evm_internal_txs), as 0x-lowercase hex.
func evmParties(ctx context.Context, tx *store.Tx, chain string, height int64) (direct, internal map[int][]string, err error) {
	direct, internal = map[int][]string{}, map[int][]string{}
	for _, q := range []struct {
		sql string
		out map[int][]string
	}{
		{`SELECT tx_index, from_addr, to_addr, contract_address FROM evm_txs WHERE chain_key = $1 AND block_number = $2`, direct},
		{`SELECT tx_index, from_addr, to_addr, NULL FROM evm_transfers WHERE chain_key = $1 AND block_number = $2`, direct},
		{`SELECT tx_index, from_addr, to_addr, NULL FROM evm_internal_txs WHERE chain_key = $1 AND block_number = $2`, internal},
	} {
		rows, err := tx.Query(ctx, q.sql, chain, height)
		if err != nil {
			return nil, nil, fmt.Errorf("read parties: %w", err)
		}
		for rows.Next() {
			var i int
			var a [3]string
			if err := rows.Scan(&i, store.ScanHex(&a[0]), store.ScanHex(&a[1]), store.ScanHex(&a[2])); err != nil {
				rows.Close()
				return nil, nil, fmt.Errorf("read parties: %w", err)
			}
			for _, x := range a {
				if x != "" {
					q.out[i] = append(q.out[i], x)
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, fmt.Errorf("read parties: %w", err)
		}
	}
	return direct, internal, nil
}

// evmEvents writes an address_activity event per tx of the block and
// webhook watching one of its parties (an internal tx's party only for
// webhooks with includeInternalTxs). The block's parties are looked up in
// webhook_keys (an index lookup per address), then the few webhooks found
// are read: the cost follows the block, not the number of webhooks.
func (e *Emitter) evmEvents(ctx context.Context, tx *store.Tx, b ingest.RawBlock) error {
	// Most blocks of most chains concern no webhook: one indexed probe first.
	var n int64
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM webhooks WHERE chain_key = $1 AND event_type = 'address_activity'
		AND status = 'active' AND start_height < $2`, e.chain, int64(b.Height)).Scan(&n); err != nil {
		return fmt.Errorf("probe webhooks: %w", err)
	}
	if n == 0 {
		return nil
	}
	direct, internal, err := evmParties(ctx, tx, e.chain, int64(b.Height))
	if err != nil {
		return err
	}
	var addrs []string
	for _, m := range []map[int][]string{direct, internal} {
		for _, as := range m {
			addrs = append(addrs, as...)
		}
	}
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	keyHooks, ids, err := keyWatchers(ctx, tx, addrs)
	if err != nil || len(ids) == 0 {
		return err
	}
	hooks, err := evmHooks(ctx, tx, e.chain, int64(b.Height), ids)
	if err != nil || len(hooks) == 0 {
		return err
	}
	type match struct {
		hook evmHook
		tx   int
	}
	var matches []match
	var txs []int
	for i := range direct {
		txs = append(txs, i)
	}
	for i := range internal {
		txs = append(txs, i)
	}
	slices.Sort(txs)
	for _, i := range slices.Compact(txs) {
		hit := map[string]bool{}
		for _, a := range direct[i] {
			for _, id := range keyHooks[a] {
				hit[id] = true
			}
		}
		for _, a := range internal[i] {
			for _, id := range keyHooks[a] {
				if h, ok := hooks[id]; ok && h.includeInternal {
					hit[id] = true
				}
			}
		}
		for _, id := range slices.Sorted(maps.Keys(hit)) {
			if h, ok := hooks[id]; ok {
				matches = append(matches, match{h, i})
			}
		}
	}
	if len(matches) == 0 {
		return nil
	}
	blk, err := e.evmBlock(ctx, tx, b.Height)
	if err != nil {
		return err
	}
	transfers, err := blockTransfers(ctx, tx, e.chain, int64(b.Height))
	if err != nil {
		return err
	}
	internals, err := blockInternals(ctx, tx, e.chain, int64(b.Height))
	if err != nil {
		return err
	}
	// Webhooks with the same options receive the same event of a tx: it is
	// built and canonicalised once.
	events := map[string][]byte{}
	for _, m := range matches {
		if m.tx < 0 || m.tx >= len(blk.Block.Transactions) || m.tx >= len(blk.Receipts) {
			return fmt.Errorf("tx %d is not in the raw block", m.tx)
		}
		k := m.hook.eventKey(m.tx)
		body, ok := events[k]
		if !ok {
			if body, err = Canonical(blk.transactionEvent(m.tx, e.chainID(blk), transfers[m.tx], internals[m.tx], m.hook)); err != nil {
				return err
			}
			events[k] = body
		}
		e.writeCanonical(m.hook.id, EventAddressActivity, b.Height, m.tx, body)
	}
	return nil
}

// eventKey names the event of tx i as h receives it: what transactionEvent
// reads of h (the options, and the logs filter: nil is every log).
func (h evmHook) eventKey(i int) string {
	return fmt.Sprintf("%d|%t|%t|%t|%s", i, h.includeInternal, h.includeLogs, h.signatures == nil,
		strings.Join(slices.Sorted(maps.Keys(h.signatures)), ","))
}

// chainID is the EVM chain id of the block's txs (legacy txs may lack it).
func (e *Emitter) chainID(blk *evmRaw) string {
	for _, t := range blk.Block.Transactions {
		if t.ChainID != "" {
			return decimal(t.ChainID)
		}
	}
	return e.chain
}

// messageNS is the namespace of message ids (a fixed random UUID).
var messageNS = uuid.MustParse("6f1d3c0e-5b8a-4f0e-9a47-2c7d5e3b9f10")

// MessageID is the id of the event at (chain, height, position) for
// webhook: the same whenever the block is applied again, different per
// webhook (unique per event and endpoint).
func MessageID(webhookID, chain string, height uint64, position int) string {
	return uuid.NewSHA1(messageNS, []byte(webhookID+"|"+chain+"|"+strconv.FormatUint(height, 10)+"|"+strconv.Itoa(position))).String()
}

// Canonical is v as canonical JSON (JCS for the values payloads hold: sorted
// keys, no whitespace, no HTML escaping): the body signed and sent.
func Canonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// Round-trip through generic values so every object's keys are sorted.
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var g any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&g); err != nil {
		return nil, err
	}
	if err := enc.Encode(g); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// evmRaw is the part of a raw EVM block ({"block":..., "receipts":[...]},
// as the source fetched it) a payload shows.
type evmRaw struct {
	Block struct {
		Hash         string  `json:"hash"`
		Number       string  `json:"number"`
		Timestamp    string  `json:"timestamp"`
		ReceiptsRoot string  `json:"receiptsRoot"`
		Transactions []rawTx `json:"transactions"`
	} `json:"block"`
	Receipts []rawReceipt `json:"receipts"`
}

type rawTx struct {
	Hash                 string          `json:"hash"`
	From                 string          `json:"from"`
	To                   *string         `json:"to"`
	Gas                  string          `json:"gas"`
	GasPrice             string          `json:"gasPrice"`
	MaxFeePerGas         string          `json:"maxFeePerGas"`
	MaxPriorityFeePerGas string          `json:"maxPriorityFeePerGas"`
	Input                string          `json:"input"`
	Nonce                string          `json:"nonce"`
	Value                string          `json:"value"`
	Type                 string          `json:"type"`
	ChainID              string          `json:"chainId"`
	TransactionIndex     string          `json:"transactionIndex"`
	AccessList           json.RawMessage `json:"accessList"`
}

type rawReceipt struct {
	Status            string   `json:"status"`
	CumulativeGasUsed string   `json:"cumulativeGasUsed"`
	GasUsed           string   `json:"gasUsed"`
	EffectiveGasPrice string   `json:"effectiveGasPrice"`
	ContractAddress   *string  `json:"contractAddress"`
	Logs              []rawLog `json:"logs"`
}

type rawLog struct {
	Address          string   `json:"address"`
	Topics           []string `json:"topics"`
	Data             string   `json:"data"`
	TransactionIndex string   `json:"transactionIndex"`
	LogIndex         string   `json:"logIndex"`
	Removed          bool     `json:"removed"`
}

func parseEVMBlock(raw []byte) (*evmRaw, error) {
	var b evmRaw
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("parse raw block: %w", err)
	}
	return &b, nil
}

// decimal renders a 0x quantity in decimal ("" stays "").
func decimal(q string) string {
	if q == "" {
		return ""
	}
	v, ok := new(big.Int).SetString(strings.TrimPrefix(strings.TrimPrefix(q, "0x"), "0X"), 16)
	if !ok {
		return q
	}
	return v.String()
}

func number(q string) int64 {
	v, _ := strconv.ParseInt(decimal(q), 10, 64)
	return v
}

// transfer is one ERC transfer row as a payload's ERCTransfer.
type transfer struct {
	TransactionHash string `json:"transactionHash"`
	Type            string `json:"type"`
	From            string `json:"from"`
	To              string `json:"to"`
	Value           string `json:"value"`
	TokenID         string `json:"tokenId,omitempty"`
	BlockTimestamp  int64  `json:"blockTimestamp"`
	LogIndex        int64  `json:"logIndex"`
	ercType         string
}

// blockTransfers reads the block's ERC transfers (evm_transfers, as the EVM
// indexer decoded them) by tx index.
func blockTransfers(ctx context.Context, tx *store.Tx, chain string, height int64) (map[int][]transfer, error) {
	rows, err := tx.Query(ctx, `SELECT tx_index, tx_hash, erc_type, from_addr, to_addr, token_id, value, block_time, log_index
		FROM evm_transfers WHERE chain_key = $1 AND block_number = $2 ORDER BY log_index, batch_index`, chain, height)
	if err != nil {
		return nil, fmt.Errorf("read transfers: %w", err)
	}
	defer rows.Close()
	out := map[int][]transfer{}
	for rows.Next() {
		var t transfer
		var i int
		if err := rows.Scan(&i, store.ScanHex(&t.TransactionHash), &t.ercType, store.ScanHex(&t.From), store.ScanHex(&t.To),
			&t.TokenID, &t.Value, &t.BlockTimestamp, &t.LogIndex); err != nil {
			return nil, fmt.Errorf("read transfers: %w", err)
		}
		t.Type = strings.ReplaceAll(t.ercType, "-", "")
		out[i] = append(out[i], t)
	}
	return out, rows.Err()
}

// transactionEvent is the TransactionEvent of tx i for hook.
func (b *evmRaw) transactionEvent(i int, chainID string, transfers []transfer, internals []internalTx, hook evmHook) map[string]any {
	t, r := b.Block.Transactions[i], b.Receipts[i]
	to := ""
	if t.To != nil {
		to = *t.To
	}
	tr := map[string]any{
		"blockHash": b.Block.Hash, "blockNumber": decimal(b.Block.Number), "from": t.From, "gas": decimal(t.Gas),
		"gasPrice": decimal(t.GasPrice), "maxFeePerGas": decimal(t.MaxFeePerGas), "maxPriorityFeePerGas": decimal(t.MaxPriorityFeePerGas),
		"txHash": t.Hash, "txStatus": decimal(r.Status), "input": t.Input, "nonce": decimal(t.Nonce), "to": to,
		"transactionIndex": i, "value": decimal(t.Value), "type": number(t.Type), "chainId": chainID,
		"receiptCumulativeGasUsed": decimal(r.CumulativeGasUsed), "receiptGasUsed": decimal(r.GasUsed),
		"receiptEffectiveGasPrice": decimal(r.EffectiveGasPrice), "receiptRoot": b.Block.ReceiptsRoot,
		"blockTimestamp": number(b.Block.Timestamp),
	}
	// Legacy txs carry no fee caps: their cap is the gas price.
	if tr["maxFeePerGas"] == "" {
		tr["maxFeePerGas"] = tr["gasPrice"]
	}
	if tr["maxPriorityFeePerGas"] == "" {
		tr["maxPriorityFeePerGas"] = tr["gasPrice"]
	}
	if r.ContractAddress != nil && *r.ContractAddress != "" {
		tr["contractAddress"] = *r.ContractAddress
	}
	// AccessListData names the address accessAddresses.
	if len(t.AccessList) > 0 {
		var al []struct {
			Address     string   `json:"address"`
			StorageKeys []string `json:"storageKeys"`
		}
		if json.Unmarshal(t.AccessList, &al) == nil && len(al) > 0 {
			out := make([]map[string]any, len(al))
			for k, a := range al {
				keys := a.StorageKeys
				if keys == nil {
					keys = []string{}
				}
				out[k] = map[string]any{"accessAddresses": a.Address, "storageKeys": keys}
			}
			tr["accessList"] = out
		}
	}
	byType := map[string][]transfer{"ERC-20": {}, "ERC-721": {}, "ERC-1155": {}}
	for _, x := range transfers {
		byType[x.ercType] = append(byType[x.ercType], x)
	}
	tr["erc20Transfers"], tr["erc721Transfers"], tr["erc1155Transfers"] = byType["ERC-20"], byType["ERC-721"], byType["ERC-1155"]
	if hook.includeInternal {
		if internals == nil {
			internals = []internalTx{}
		}
		tr["internalTransactions"] = internals
	}
	event := map[string]any{"transaction": tr}
	if hook.includeLogs {
		logs := []map[string]any{}
		for _, l := range r.Logs {
			topic := func(k int) string {
				if k < len(l.Topics) {
					return l.Topics[k]
				}
				return ""
			}
			if hook.signatures != nil && !hook.signatures[strings.ToLower(topic(0))] {
				continue
			}
			lm := map[string]any{"address": l.Address, "topic0": topic(0), "data": l.Data,
				"transactionIndex": number(l.TransactionIndex), "logIndex": number(l.LogIndex), "removed": l.Removed}
			for k := 1; k < 4; k++ {
				if s := topic(k); s != "" {
					lm["topic"+strconv.Itoa(k)] = s
				}
			}
			logs = append(logs, lm)
		}
		event["logs"] = logs
	}
	return event
}

// internalTx is one evm_internal_txs row as WebhookInternalTransaction.
type internalTx struct {
	From            string `json:"from"`
	To              string `json:"to"`
	InternalTxType  string `json:"internalTxType"`
	Value           string `json:"value"`
	GasUsed         string `json:"gasUsed"`
	GasLimit        string `json:"gasLimit"`
	TransactionHash string `json:"transactionHash"`
}

// blockInternals reads the block's internal txs (evm_internal_txs, as the
// EVM indexer decoded the call traces) by tx index, in trace order.
func blockInternals(ctx context.Context, tx *store.Tx, chain string, height int64) (map[int][]internalTx, error) {
	rows, err := tx.Query(ctx, `SELECT tx_index, tx_hash, call_type, from_addr, to_addr, value, gas, gas_used
		FROM evm_internal_txs WHERE chain_key = $1 AND block_number = $2 ORDER BY tx_index, trace_index`, chain, height)
	if err != nil {
		return nil, fmt.Errorf("read internal txs: %w", err)
	}
	defer rows.Close()
	out := map[int][]internalTx{}
	for rows.Next() {
		var t internalTx
		var i int
		var gas, used int64
		if err := rows.Scan(&i, store.ScanHex(&t.TransactionHash), &t.InternalTxType, store.ScanHex(&t.From), store.ScanHex(&t.To),
			&t.Value, &gas, &used); err != nil {
			return nil, fmt.Errorf("read internal txs: %w", err)
		}
		t.InternalTxType = strings.ToLower(t.InternalTxType)
		t.GasLimit, t.GasUsed = strconv.FormatInt(gas, 10), strconv.FormatInt(used, 10)
		out[i] = append(out[i], t)
	}
	return out, rows.Err()
}

// keyWatchers maps each of keys to the webhooks watching it, and lists
// those webhooks.
func keyWatchers(ctx context.Context, tx *store.Tx, keys []string) (map[string][]string, []string, error) {
	out := map[string][]string{}
	var ids []string
	for len(keys) > 0 {
		// Bounded IN lists (SQLite's variable limit).
		chunk := keys[:min(len(keys), 500)]
		keys = keys[len(chunk):]
		args := make([]any, len(chunk))
		for i, k := range chunk {
			args[i] = k
		}
		rows, err := tx.Query(ctx, `SELECT key, webhook_id FROM webhook_keys WHERE key IN (`+placeholders(1, len(chunk))+`)`, args...)
		if err != nil {
			return nil, nil, fmt.Errorf("match keys: %w", err)
		}
		for rows.Next() {
			var k, id string
			if err := rows.Scan(&k, &id); err != nil {
				rows.Close()
				return nil, nil, fmt.Errorf("match keys: %w", err)
			}
			out[k] = append(out[k], id)
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, fmt.Errorf("match keys: %w", err)
		}
	}
	slices.Sort(ids)
	return out, slices.Compact(ids), nil
}

// evmHooks reads the address_activity webhooks among ids that raise events
// for the block at height of chain.
func evmHooks(ctx context.Context, tx *store.Tx, chain string, height int64, ids []string) (map[string]evmHook, error) {
	out := map[string]evmHook{}
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 500)]
		ids = ids[len(chunk):]
		args := []any{chain, height}
		for _, id := range chunk {
			args = append(args, id)
		}
		rows, err := tx.Query(ctx, `SELECT id, include_logs, include_internal_txs, metadata FROM webhooks
			WHERE chain_key = $1 AND start_height < $2 AND event_type = 'address_activity' AND status = 'active'
			AND id IN (`+placeholders(3, len(chunk))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("read webhooks: %w", err)
		}
		for rows.Next() {
			var h evmHook
			var md string
			if err := rows.Scan(&h.id, &h.includeLogs, &h.includeInternal, &md); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read webhooks: %w", err)
			}
			var meta EVMMetadata
			if err := json.Unmarshal([]byte(md), &meta); err != nil {
				rows.Close()
				return nil, fmt.Errorf("webhook %s metadata: %w", h.id, err)
			}
			if len(meta.EventSignatures) > 0 {
				h.signatures = map[string]bool{}
				for _, sig := range meta.EventSignatures {
					h.signatures[sig] = true
				}
			}
			out[h.id] = h
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read webhooks: %w", err)
		}
	}
	return out, nil
}
