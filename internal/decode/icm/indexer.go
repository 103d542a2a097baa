package icm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// ChainInfo identifies the EVM chain whose logs are applied.
type ChainInfo struct {
	Key          string // chain_key: "C" or the L1's EVM chain id
	BlockchainID ids.ID // the Avalanche blockchain ID (what Warp and Teleporter use)
	EVMChainID   string // decimal
}

// BlockInfo is the block the logs belong to.
type BlockInfo struct {
	Number uint64
	Hash   common.Hash
	Time   int64 // unix seconds
}

// Log is one receipt log with what ICM needs of its transaction. The indexer
// does not keep Data or Topics after ApplyLogs returns, so callers may reuse them.
type Log struct {
	Address   common.Address
	Topics    []common.Hash
	Data      []byte
	LogIndex  uint64 // position in the block
	TxHash    common.Hash
	TxIndex   uint64
	TxFrom    common.Address
	TxGasUsed uint64 // the receipt's gasUsed
}

// Config chooses the TeleporterMessenger contracts to index. By default any
// contract is a messenger once it proves it (see icm_messengers): later
// Teleporter versions and private deployments live at other addresses than
// the canonical v1 one, and their messages carry icmContractAddress.
type Config struct {
	// Allow, when not empty, limits indexing to these contracts (on every
	// chain); Deny excludes contracts.
	Allow, Deny []common.Address
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Indexer turns TeleporterMessenger logs into ICM rows. It holds its
// configuration and a cache of recognised messengers (rows of
// icm_messengers, only ever added), so one Indexer serves every chain and
// concurrent calls.
type Indexer struct {
	allow, deny map[common.Address]bool
	events      map[common.Hash]bool // topic0 of every TeleporterMessenger event
	log         *slog.Logger

	mu         sync.Mutex
	messengers map[messengerKey]bool
}

type messengerKey struct {
	chain string
	addr  common.Address
}

// NewIndexer checks cfg and the embedded ABI.
func NewIndexer(cfg Config) (*Indexer, error) {
	a, err := loadABI()
	if err != nil {
		return nil, err
	}
	set := func(as []common.Address) map[common.Address]bool {
		m := make(map[common.Address]bool, len(as))
		for _, a := range as {
			m[a] = true
		}
		return m
	}
	ix := &Indexer{allow: set(cfg.Allow), deny: set(cfg.Deny), events: map[common.Hash]bool{}, log: cfg.Logger,
		messengers: map[messengerKey]bool{}}
	for _, ev := range a.Events {
		ix.events[ev.ID] = true
	}
	if ix.log == nil {
		ix.log = slog.Default()
	}
	return ix, nil
}

// DerivedTables lists the tables ApplyLogs writes; the EVM indexer adds them
// to its own so reindex clears and rebuilds them.
func (ix *Indexer) DerivedTables() []string {
	return []string{"icm_events", "icm_messages", "icm_address_messages", "icm_reward_redemptions", "icm_message_locks", "icm_messengers"}
}

// Wants reports whether a log emitted by addr with topics may be a
// messenger's: a TeleporterMessenger event from a contract the
// configuration does not exclude. Callers use it to skip building Log values
// for other logs.
func (ix *Indexer) Wants(addr common.Address, topics []common.Hash) bool {
	if len(topics) == 0 || !ix.events[topics[0]] || ix.deny[addr] {
		return false
	}
	return len(ix.allow) == 0 || ix.allow[addr]
}

// carriesMessage: the events whose message ID the contract derives from its
// own address and the message, which verify checks.
func carriesMessage(name string) bool {
	return name == EventSendCrossChainMessage || name == EventReceiveCrossChainMessage || name == EventMessageExecutionFailed
}

// isMessenger reports whether addr proved itself a messenger on chain before.
func (ix *Indexer) isMessenger(ctx context.Context, tx *store.Tx, chain string, addr common.Address) (bool, error) {
	k := messengerKey{chain, addr}
	ix.mu.Lock()
	known := ix.messengers[k]
	ix.mu.Unlock()
	if known {
		return true, nil
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM icm_messengers WHERE chain_key = $1 AND contract_address = $2`,
		chain, lower(addr)).Scan(&n); err != nil {
		return false, err
	}
	if n > 0 {
		ix.mu.Lock()
		ix.messengers[k] = true
		ix.mu.Unlock()
	}
	return n > 0, nil
}

// recognise records addr as a messenger of chain.
func (ix *Indexer) recognise(ctx context.Context, tx *store.Tx, chain string, addr common.Address, block int64, logIndex int64) error {
	if _, err := tx.Exec(ctx, `INSERT INTO icm_messengers (chain_key, contract_address, first_block, first_log_index)
		VALUES ($1,$2,$3,$4) ON CONFLICT (chain_key, contract_address) DO NOTHING`, chain, lower(addr), block, logIndex); err != nil {
		return err
	}
	ix.mu.Lock()
	ix.messengers[messengerKey{chain, addr}] = true
	ix.mu.Unlock()
	return nil
}

// ApplyLogs indexes the TeleporterMessenger logs among logs (one block of
// chain, in log order), inside the ingest transaction. Logs of other
// contracts are ignored. A messenger log that does not decode, or whose
// message ID does not match its content, is skipped with a warning (the chain
// must keep indexing); only store errors are returned.
func (ix *Indexer) ApplyLogs(ctx context.Context, tx *store.Tx, chain ChainInfo, blk BlockInfo, logs []Log) error {
	if blk.Number > math.MaxInt64 {
		return fmt.Errorf("icm %s: block number %d out of range", chain.Key, blk.Number)
	}
	var touched []common.Hash
	seen := map[common.Hash]bool{}
	for i := range logs {
		l := &logs[i]
		if !ix.Wants(l.Address, l.Topics) {
			continue
		}
		ev, err := DecodeEvent(l.Topics, l.Data)
		if errors.Is(err, ErrNotTeleporter) {
			continue
		}
		if err == nil && ev.Name == EventBlockchainIDInitialized {
			continue
		}
		if err == nil && carriesMessage(ev.Name) {
			err = verify(l.Address, chain.BlockchainID, ev)
		}
		if err != nil {
			ix.log.Warn("icm: skipping messenger log", "chain", chain.Key, "block", blk.Number,
				"log_index", l.LogIndex, "tx", l.TxHash.Hex(), "contract", l.Address.Hex(), "err", err)
			continue
		}
		if l.LogIndex > math.MaxInt32 || l.TxIndex > math.MaxInt32 || l.TxGasUsed > math.MaxInt64 {
			ix.log.Warn("icm: skipping messenger log with out-of-range index or gas", "chain", chain.Key, "block", blk.Number)
			continue
		}
		if carriesMessage(ev.Name) {
			if err := ix.recognise(ctx, tx, chain.Key, l.Address, int64(blk.Number), int64(l.LogIndex)); err != nil {
				return fmt.Errorf("icm %s: block %d: %w", chain.Key, blk.Number, err)
			}
		} else if ok, err := ix.isMessenger(ctx, tx, chain.Key, l.Address); err != nil {
			return fmt.Errorf("icm %s: block %d: %w", chain.Key, blk.Number, err)
		} else if !ok {
			// Look-alike events of a contract that never proved itself a
			// messenger: not ICM.
			continue
		}
		switch ev.Name {
		case EventRelayerRewardsRedeemed:
			if _, err := tx.Exec(ctx, `INSERT INTO icm_reward_redemptions
				(chain_key, block_number, log_index, contract_address, block_time, tx_hash, redeemer, asset, amount)
				VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9) ON CONFLICT (chain_key, block_number, log_index) DO NOTHING`,
				chain.Key, int64(blk.Number), int64(l.LogIndex), lower(l.Address), blk.Time, hashHex(l.TxHash),
				lower(ev.Redeemer), lower(ev.Asset), ev.Amount.String()); err != nil {
				return fmt.Errorf("icm %s: block %d: %w", chain.Key, blk.Number, err)
			}
			continue
		}
		topics := make([]string, len(l.Topics))
		for j, t := range l.Topics {
			topics[j] = hashHex(t)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO icm_events
			(chain_key, block_number, log_index, message_id, event, chain_blockchain_id, contract_address,
			 block_time, tx_index, tx_hash, tx_from, tx_gas_used, topics, data)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14)
			ON CONFLICT (chain_key, block_number, log_index) DO NOTHING`,
			chain.Key, int64(blk.Number), int64(l.LogIndex), hashHex(ev.MessageID), ev.Name, chain.BlockchainID.String(),
			lower(l.Address), blk.Time, int64(l.TxIndex), hashHex(l.TxHash), lower(l.TxFrom), int64(l.TxGasUsed),
			strings.Join(topics, ","), nonNil(l.Data)); err != nil {
			return fmt.Errorf("icm %s: block %d: %w", chain.Key, blk.Number, err)
		}
		if !seen[ev.MessageID] {
			seen[ev.MessageID] = true
			touched = append(touched, ev.MessageID)
		}
	}
	// Sorted, so two transactions lock shared messages in the same order.
	sort.Slice(touched, func(i, j int) bool { return bytes.Compare(touched[i][:], touched[j][:]) < 0 })
	for _, id := range touched {
		if err := rebuild(ctx, tx, id); err != nil {
			return fmt.Errorf("icm %s: block %d: message %s: %w", chain.Key, blk.Number, hashHex(id), err)
		}
	}
	return nil
}

// verify checks what the contract guarantees about an event against the
// emitting chain: the message ID is calculateMessageID of its content and the
// message is addressed consistently. A mismatch means the contract is not
// TeleporterMessenger v1 (or the chain's blockchain ID is misconfigured).
func verify(messenger common.Address, self ids.ID, ev *Event) error {
	var src, dst ids.ID
	switch ev.Name {
	case EventSendCrossChainMessage:
		src, dst = self, ev.OtherChainID
	case EventReceiveCrossChainMessage, EventMessageExecutionFailed:
		src, dst = ev.OtherChainID, self
	default:
		return nil
	}
	m := ev.Message
	if ids.ID(m.DestinationBlockchainID) != dst {
		return fmt.Errorf("%s: message destination %s, want %s", ev.Name, ids.ID(m.DestinationBlockchainID), dst)
	}
	want, err := CalculateMessageID(messenger, src, dst, m.MessageNonce)
	if err != nil {
		return err
	}
	if want != ev.MessageID {
		return fmt.Errorf("%s: message ID %s, calculateMessageID gives %s", ev.Name, hashHex(ev.MessageID), hashHex(want))
	}
	return nil
}

// storedEvent is one icm_events row, decoded.
type storedEvent struct {
	chainKey string
	chainID  ids.ID
	contract string
	block    int64
	logIndex int64
	time     int64
	txHash   string
	txFrom   string
	gasUsed  int64
	ev       *Event
}

// rebuild recomputes a message's row and address rows from all its events,
// so the result does not depend on which chain was indexed first.
func rebuild(ctx context.Context, tx *store.Tx, id common.Hash) error {
	mid := hashHex(id)
	// Lock the message first (see icm_message_locks); under READ COMMITTED
	// the events read next include those of a transaction we waited for.
	if _, err := tx.Exec(ctx, `INSERT INTO icm_message_locks (message_id) VALUES ($1)
		ON CONFLICT (message_id) DO UPDATE SET message_id = excluded.message_id`, mid); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT chain_key, chain_blockchain_id, contract_address, block_number, log_index,
		block_time, tx_hash, tx_from, tx_gas_used, topics, data FROM icm_events WHERE message_id = $1`, mid)
	if err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	var evs []storedEvent
	for rows.Next() {
		var e storedEvent
		var chainID, topics string
		var data []byte
		if err := rows.Scan(&e.chainKey, &chainID, &e.contract, &e.block, &e.logIndex, &e.time, &e.txHash,
			&e.txFrom, &e.gasUsed, &topics, &data); err != nil {
			rows.Close()
			return fmt.Errorf("read events: %w", err)
		}
		if e.chainID, err = ids.FromString(chainID); err != nil {
			rows.Close()
			return fmt.Errorf("stored event: blockchain id %q: %w", chainID, err)
		}
		var ts []common.Hash
		for _, t := range strings.Split(topics, ",") {
			ts = append(ts, common.HexToHash(t))
		}
		if e.ev, err = DecodeEvent(ts, data); err != nil {
			rows.Close()
			return fmt.Errorf("stored event %s/%d/%d: %w", e.chainKey, e.block, e.logIndex, err)
		}
		evs = append(evs, e)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	// Time order across chains; within a chain, block and log order.
	sort.Slice(evs, func(i, j int) bool {
		a, b := &evs[i], &evs[j]
		if a.time != b.time {
			return a.time < b.time
		}
		if a.chainKey != b.chainKey {
			return a.chainKey < b.chainKey
		}
		if a.block != b.block {
			return a.block < b.block
		}
		return a.logIndex < b.logIndex
	})
	r := fold(evs)
	if _, err := tx.Exec(ctx, `DELETE FROM icm_address_messages WHERE message_id = $1`, mid); err != nil {
		return err
	}
	if r == nil {
		// Only events that carry no message (e.g. a fee addition whose send
		// is not indexed): nothing to show yet.
		_, err := tx.Exec(ctx, `DELETE FROM icm_messages WHERE message_id = $1`, mid)
		return err
	}
	receipts := make([]storedReceipt, len(r.msg.Receipts))
	for i, rc := range r.msg.Receipts {
		receipts[i] = storedReceipt{Nonce: rc.ReceivedMessageNonce.String(), Relayer: lower(rc.RelayerRewardAddress)}
	}
	relayers := make([]string, len(r.msg.AllowedRelayerAddresses))
	for i, a := range r.msg.AllowedRelayerAddresses {
		relayers[i] = lower(a)
	}
	rj, _ := json.Marshal(receipts)
	aj, _ := json.Marshal(relayers)
	from, to := lower(r.msg.OriginSenderAddress), lower(r.msg.DestinationAddress)
	if _, err := tx.Exec(ctx, `INSERT INTO icm_messages (message_id, contract_address, source_blockchain_id,
		destination_blockchain_id, message_nonce, origin_sender, destination_address, required_gas_limit,
		allowed_relayers, receipts, payload, sort_time,
		has_source, src_chain_key, src_block, src_tx_hash, src_tx_from, src_time, src_gas_used,
		fee_token, fee_amount, fee_additions, receipt_delivered, receipt_tx_hash, receipt_time, receipt_relayer,
		has_destination, dst_chain_key, dst_block, dst_tx_hash, dst_time, dst_gas_used, deliverer, reward_redeemer,
		executed, executed_tx_hash, executed_time, execution_failures, failed_tx_hash)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$26,
		$27,$28,$29,$30,$31,$32,$33,$34,$35,$36,$37,$38,$39)
		ON CONFLICT (message_id) DO UPDATE SET contract_address = excluded.contract_address,
		source_blockchain_id = excluded.source_blockchain_id, destination_blockchain_id = excluded.destination_blockchain_id,
		message_nonce = excluded.message_nonce, origin_sender = excluded.origin_sender,
		destination_address = excluded.destination_address, required_gas_limit = excluded.required_gas_limit,
		allowed_relayers = excluded.allowed_relayers, receipts = excluded.receipts, payload = excluded.payload,
		sort_time = excluded.sort_time, has_source = excluded.has_source, src_chain_key = excluded.src_chain_key,
		src_block = excluded.src_block, src_tx_hash = excluded.src_tx_hash, src_tx_from = excluded.src_tx_from,
		src_time = excluded.src_time, src_gas_used = excluded.src_gas_used, fee_token = excluded.fee_token,
		fee_amount = excluded.fee_amount, fee_additions = excluded.fee_additions,
		receipt_delivered = excluded.receipt_delivered, receipt_tx_hash = excluded.receipt_tx_hash,
		receipt_time = excluded.receipt_time, receipt_relayer = excluded.receipt_relayer,
		has_destination = excluded.has_destination, dst_chain_key = excluded.dst_chain_key,
		dst_block = excluded.dst_block, dst_tx_hash = excluded.dst_tx_hash, dst_time = excluded.dst_time,
		dst_gas_used = excluded.dst_gas_used, deliverer = excluded.deliverer, reward_redeemer = excluded.reward_redeemer,
		executed = excluded.executed, executed_tx_hash = excluded.executed_tx_hash, executed_time = excluded.executed_time,
		execution_failures = excluded.execution_failures, failed_tx_hash = excluded.failed_tx_hash`,
		mid, r.contract, r.srcID.String(), r.dstID.String(), r.msg.MessageNonce.String(), from, to,
		r.msg.RequiredGasLimit.String(), string(aj), string(rj), nonNil(r.msg.Message), r.sortTime(),
		r.src != nil, r.src.get().chainKey, r.src.get().block, r.src.get().txHash, r.src.get().txFrom, r.src.get().time, r.src.get().gasUsed,
		r.feeToken, r.feeAmount, r.feeAdditions, r.receipt != nil, r.receipt.get().txHash, r.receipt.get().time, r.receiptRelayer,
		r.dst != nil, r.dst.get().chainKey, r.dst.get().block, r.dst.get().txHash, r.dst.get().time, r.dst.get().gasUsed,
		r.deliverer, r.rewardRedeemer,
		r.executed != nil, r.executed.get().txHash, r.executed.get().time, r.failures, r.failed.get().txHash,
	); err != nil {
		return fmt.Errorf("write message: %w", err)
	}
	for _, a := range uniq(from, to) {
		if _, err := tx.Exec(ctx, `INSERT INTO icm_address_messages (address, message_id, sort_time) VALUES ($1,$2,$3)`,
			a, mid, r.sortTime()); err != nil {
			return fmt.Errorf("write address index: %w", err)
		}
	}
	return nil
}

type storedReceipt struct {
	Nonce   string `json:"nonce"`
	Relayer string `json:"relayer"`
}

// folded is a message as its events tell it.
type folded struct {
	msg                       *TeleporterMessage
	contract                  string
	srcID, dstID              ids.ID
	src, dst                  *storedEvent
	feeToken, feeAmount       string
	feeAdditions              int
	receipt                   *storedEvent
	receiptRelayer            string
	deliverer, rewardRedeemer string
	executed, failed          *storedEvent
	failures                  int
}

func (f *folded) sortTime() int64 {
	if f.src != nil {
		return f.src.time
	}
	return f.dst.time
}

// get lets optional sides read as zero values.
func (e *storedEvent) get() storedEvent {
	if e == nil {
		return storedEvent{}
	}
	return *e
}

// fold applies events in order. The message struct is the same on both
// sides (the destination decodes the bytes the source sent); the send's copy
// is preferred. Nil when no event carries the message.
func fold(evs []storedEvent) *folded {
	f := &folded{}
	var fromSend, fromReceive, fromFailure *TeleporterMessage
	setFee := func(fi *TeleporterFeeInfo) {
		f.feeToken, f.feeAmount = lower(fi.FeeTokenAddress), fi.Amount.String()
	}
	for i := range evs {
		e := &evs[i]
		ev := e.ev
		switch ev.Name {
		case EventSendCrossChainMessage:
			if f.src == nil {
				// A retried send re-emits the event: the first is the source tx.
				f.src, fromSend = e, ev.Message
				f.srcID, f.dstID, f.contract = e.chainID, ev.OtherChainID, e.contract
			}
			setFee(ev.Fee)
		case EventAddFeeAmount:
			setFee(ev.Fee) // the contract emits the new total
			f.feeAdditions++
		case EventReceiptReceived:
			if f.receipt == nil {
				f.receipt, f.receiptRelayer = e, lower(ev.Relayer)
			}
			setFee(ev.Fee) // what the relayer was credited
			if f.src == nil {
				f.srcID, f.dstID = e.chainID, ev.OtherChainID
			}
		case EventReceiveCrossChainMessage:
			if f.dst == nil {
				f.dst, fromReceive = e, ev.Message
				f.deliverer, f.rewardRedeemer = lower(ev.Deliverer), lower(ev.RewardRedeemer)
				if f.src == nil {
					f.srcID, f.dstID, f.contract = ev.OtherChainID, e.chainID, e.contract
				}
			}
		case EventMessageExecuted:
			if f.executed == nil {
				f.executed = e
			}
		case EventMessageExecutionFailed:
			f.failures++
			f.failed = e
			if fromFailure == nil {
				fromFailure = ev.Message
			}
		}
	}
	switch {
	case fromSend != nil:
		f.msg = fromSend
	case fromReceive != nil:
		f.msg = fromReceive
	default:
		f.msg = fromFailure
	}
	if f.msg == nil || (f.src == nil && f.dst == nil) {
		return nil
	}
	return f
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

func lower(a common.Address) string { return strings.ToLower(a.Hex()) }

func hashHex(h common.Hash) string { return h.Hex() } // Hex is already lowercase

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
