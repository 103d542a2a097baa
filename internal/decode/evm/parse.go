package evm

import (
	"fmt"
	"math/big"

	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/jsonscan"
)

// block is one parsed {"block":..., "receipts":[...]} document. The indexer
// keeps one and reuses its slices from block to block.
type block struct {
	number      uint64
	hash        common.Hash
	parentHash  common.Hash
	stateRoot   common.Hash
	timestamp   uint64
	timestampMs uint64
	gasUsed     uint64
	gasLimit    uint64
	baseFee     big.Int
	hasBaseFee  bool
	miner       common.Address
	size        uint64
	extraData   []byte // raw 0x-hex text (validated)
	// coreth / subnet-evm header fields
	extDataHash       common.Hash
	hasExtDataHash    bool
	extDataGasUsed    big.Int
	hasExtDataGasUsed bool
	blockGasCost      big.Int
	hasBlockGasCost   bool
	minDelayExcess    big.Int
	hasMinDelayExcess bool
	blockExtraData    []byte // decoded bytes

	txs       []txn
	receipts  int  // receipts seen
	hasTraces bool // the document has the block's call traces (frames of txs)
	seen      struct{ number, hash, parentHash, timestamp, gasUsed, gasLimit, miner, txs, receipts bool }
}

type txn struct {
	hash       common.Hash
	index      uint64
	from       common.Address
	to         common.Address
	hasTo      bool
	value      big.Int
	gas        uint64
	gasPrice   big.Int
	hasPrice   bool
	maxFee     big.Int
	hasMax     bool
	maxPrio    big.Int
	hasPrio    bool
	nonce      uint64
	typ        uint64
	chainID    big.Int
	hasChain   bool
	inputLen   int
	inputZeros int // zero bytes of the input (intrinsic gas)
	alAddrs    int // access list addresses and storage keys (intrinsic gas)
	alKeys     int
	method     [4]byte
	seen       struct{ hash, index, from, value, gas, nonce bool }

	// from the receipt
	status      uint64
	gasUsed     uint64
	effPrice    big.Int
	hasEff      bool
	contract    common.Address
	hasContract bool
	logs        []logEntry
	rseen       struct{ hash, index, status, gasUsed, blockHash, blockNumber bool }
	rhash       common.Hash
	rindex      uint64
	// the block the receipt names (source.EVMBlockFacts: the fetch checks it)
	rblockHash   common.Hash
	rblockNumber uint64

	// from the call traces: the nested frames, depth first
	frames []frame
}

type logEntry struct {
	address common.Address
	topics  [4]common.Hash
	ntopics int
	data    []byte
	index   uint64
	seen    struct{ address, topics, data, index bool }
}

// parse decodes raw into b, reusing b's memory.
func (b *block) parse(raw []byte) error {
	b.reset()
	s := jsonscan.New(raw)
	// Receipts and traces are read after the block, whatever the key order:
	// they are kept aside when they come first. The stored form has the
	// block first, so its receipts are read in place, not scanned twice.
	var receipts, traces []byte
	err := s.Object(func(key []byte) error {
		switch string(key) {
		case "block":
			if s.Null() {
				return fmt.Errorf("block is null")
			}
			b.txs = b.txs[:0]
			return b.parseHeader(s)
		case "receipts":
			if s.Null() {
				return fmt.Errorf("receipts are null")
			}
			b.seen.receipts = true
			if b.seen.txs {
				return b.parseReceipts(s)
			}
			raw, err := s.Raw()
			receipts = raw
			return err
		case "traces":
			if s.Null() {
				return nil
			}
			raw, err := s.Raw()
			traces = raw
			return err
		}
		return s.Skip()
	})
	if err != nil {
		return err
	}
	if err := s.End(); err != nil {
		return err
	}
	if receipts != nil {
		if err := b.parseReceipts(jsonscan.New(receipts)); err != nil {
			return err
		}
	}
	if traces != nil {
		b.hasTraces = true
		if err := b.parseTraces(traces); err != nil {
			return fmt.Errorf("traces: %w", err)
		}
	}
	return b.check()
}

// parseReceipts reads the receipts into the block's txs (parsed before).
func (b *block) parseReceipts(s *jsonscan.Scanner) error {
	err := s.Array(func(i int) error {
		if i >= len(b.txs) {
			return fmt.Errorf("receipt %d without a transaction (block has %d)", i, len(b.txs))
		}
		b.receipts++
		return b.txs[i].parseReceipt(s)
	})
	if err != nil {
		return fmt.Errorf("receipts: %w", err)
	}
	return nil
}

func (b *block) reset() {
	txs := b.txs[:0]
	extra := b.blockExtraData[:0]
	*b = block{txs: txs, blockExtraData: extra}
}

func (b *block) check() error {
	switch {
	case !b.seen.number, !b.seen.hash, !b.seen.parentHash, !b.seen.timestamp:
		return fmt.Errorf("block: missing number, hash, parentHash or timestamp")
	case !b.seen.gasUsed, !b.seen.gasLimit, !b.seen.miner, !b.seen.txs:
		return fmt.Errorf("block %d: missing gasUsed, gasLimit, miner or transactions", b.number)
	case !b.seen.receipts:
		return fmt.Errorf("block %d: missing receipts", b.number)
	case b.receipts != len(b.txs):
		return fmt.Errorf("block %d: %d receipts for %d transactions", b.number, b.receipts, len(b.txs))
	}
	for i := range b.txs {
		t := &b.txs[i]
		if !t.seen.hash || !t.seen.index || !t.seen.from || !t.seen.value || !t.seen.gas || !t.seen.nonce {
			return fmt.Errorf("block %d tx %d: missing hash, transactionIndex, from, value, gas or nonce", b.number, i)
		}
		if t.index != uint64(i) {
			return fmt.Errorf("block %d tx %d: transactionIndex %d", b.number, i, t.index)
		}
		if !t.rseen.hash || !t.rseen.index || !t.rseen.status || !t.rseen.gasUsed {
			return fmt.Errorf("block %d receipt %d: missing transactionHash, transactionIndex, status or gasUsed", b.number, i)
		}
		if t.rhash != t.hash || t.rindex != t.index {
			return fmt.Errorf("block %d receipt %d: is for tx %s index %d, want %s", b.number, i, t.rhash.Hex(), t.rindex, t.hash.Hex())
		}
		if t.status > 1 {
			return fmt.Errorf("block %d tx %d: status %d", b.number, i, t.status)
		}
		if !t.hasEff {
			// Nodes before London omit effectiveGasPrice: derive it as geth does.
			if err := t.deriveEffectivePrice(b); err != nil {
				return fmt.Errorf("block %d tx %d: %w", b.number, i, err)
			}
		}
		for j := range t.logs {
			l := &t.logs[j]
			if !l.seen.address || !l.seen.topics || !l.seen.data || !l.seen.index {
				return fmt.Errorf("block %d tx %d log %d: missing address, topics, data or logIndex", b.number, i, j)
			}
		}
	}
	return nil
}

func (t *txn) deriveEffectivePrice(b *block) error {
	switch {
	case t.hasMax && t.hasPrio && b.hasBaseFee:
		t.effPrice.Add(&b.baseFee, &t.maxPrio)
		if t.effPrice.Cmp(&t.maxFee) > 0 {
			t.effPrice.Set(&t.maxFee)
		}
	case t.hasPrice:
		t.effPrice.Set(&t.gasPrice)
	default:
		return fmt.Errorf("no effectiveGasPrice and no gasPrice")
	}
	t.hasEff = true
	return nil
}

func (b *block) parseHeader(s *jsonscan.Scanner) error {
	return s.Object(func(key []byte) error {
		switch string(key) {
		case "transactions":
			b.seen.txs = true
			b.txs = b.txs[:0]
			return s.Array(func(i int) error {
				if c, err := s.Peek(); err != nil {
					return err
				} else if c != '{' {
					return fmt.Errorf("transaction %d is not an object: fetch blocks with full transactions", i)
				}
				if i < cap(b.txs) {
					b.txs = b.txs[:i+1]
					logs, frames := b.txs[i].logs[:0], b.txs[i].frames[:0]
					b.txs[i] = txn{logs: logs, frames: frames}
				} else {
					b.txs = append(b.txs, txn{})
				}
				return b.txs[i].parseTx(s)
			})
		case "number", "hash", "parentHash", "stateRoot", "timestamp", "timestampMilliseconds",
			"gasUsed", "gasLimit", "baseFeePerGas", "miner", "size", "extraData", "extDataHash",
			"extDataGasUsed", "blockGasCost", "minDelayExcess", "blockExtraData":
		default:
			return s.Skip()
		}
		if s.Null() {
			return nil
		}
		v, err := s.Str()
		if err != nil {
			return fmt.Errorf("block field %s: %w", key, err)
		}
		switch string(key) {
		case "number":
			b.seen.number = true
			b.number, err = jsonscan.Uint64("block number", v)
		case "hash":
			b.seen.hash = true
			b.hash, err = jsonscan.Hash("block hash", v)
		case "parentHash":
			b.seen.parentHash = true
			b.parentHash, err = jsonscan.Hash("parentHash", v)
		case "stateRoot":
			b.stateRoot, err = jsonscan.Hash("stateRoot", v)
		case "timestamp":
			b.seen.timestamp = true
			b.timestamp, err = jsonscan.Uint64("timestamp", v)
		case "timestampMilliseconds":
			b.timestampMs, err = jsonscan.Uint64("timestampMilliseconds", v)
		case "gasUsed":
			b.seen.gasUsed = true
			b.gasUsed, err = jsonscan.Uint64("gasUsed", v)
		case "gasLimit":
			b.seen.gasLimit = true
			b.gasLimit, err = jsonscan.Uint64("gasLimit", v)
		case "baseFeePerGas":
			b.hasBaseFee = true
			err = jsonscan.Big("baseFeePerGas", v, &b.baseFee)
		case "miner":
			b.seen.miner = true
			b.miner, err = jsonscan.Address("miner", v)
		case "size":
			b.size, err = jsonscan.Uint64("size", v)
		case "extraData":
			if h, ok := jsonscan.Trim0x(v); !ok || len(h)%2 != 0 || !jsonscan.IsHex(h) {
				return fmt.Errorf("extraData: not 0x-hex bytes")
			}
			b.extraData = v
		case "extDataHash":
			b.hasExtDataHash = true
			b.extDataHash, err = jsonscan.Hash("extDataHash", v)
		case "extDataGasUsed":
			b.hasExtDataGasUsed = true
			err = jsonscan.Big("extDataGasUsed", v, &b.extDataGasUsed)
		case "blockGasCost":
			b.hasBlockGasCost = true
			err = jsonscan.Big("blockGasCost", v, &b.blockGasCost)
		case "minDelayExcess":
			b.hasMinDelayExcess = true
			err = jsonscan.Big("minDelayExcess", v, &b.minDelayExcess)
		case "blockExtraData":
			b.blockExtraData, err = jsonscan.Bytes("blockExtraData", v, b.blockExtraData)
		}
		return err
	})
}

func (t *txn) parseTx(s *jsonscan.Scanner) error {
	return s.Object(func(key []byte) error {
		if string(key) == "accessList" {
			return t.parseAccessList(s)
		}
		switch string(key) {
		case "hash", "transactionIndex", "from", "to", "value", "gas", "gasPrice", "maxFeePerGas",
			"maxPriorityFeePerGas", "nonce", "type", "chainId", "input":
		default:
			return s.Skip()
		}
		if s.Null() {
			return nil
		}
		v, err := s.Str()
		if err != nil {
			return fmt.Errorf("tx field %s: %w", key, err)
		}
		switch string(key) {
		case "hash":
			t.seen.hash = true
			t.hash, err = jsonscan.Hash("tx hash", v)
		case "transactionIndex":
			t.seen.index = true
			t.index, err = jsonscan.Uint64("transactionIndex", v)
		case "from":
			t.seen.from = true
			t.from, err = jsonscan.Address("from", v)
		case "to":
			t.hasTo = true
			t.to, err = jsonscan.Address("to", v)
		case "value":
			t.seen.value = true
			err = jsonscan.Big("value", v, &t.value)
		case "gas":
			t.seen.gas = true
			t.gas, err = jsonscan.Uint64("gas", v)
		case "gasPrice":
			t.hasPrice = true
			err = jsonscan.Big("gasPrice", v, &t.gasPrice)
		case "maxFeePerGas":
			t.hasMax = true
			err = jsonscan.Big("maxFeePerGas", v, &t.maxFee)
		case "maxPriorityFeePerGas":
			t.hasPrio = true
			err = jsonscan.Big("maxPriorityFeePerGas", v, &t.maxPrio)
		case "nonce":
			t.seen.nonce = true
			t.nonce, err = jsonscan.Uint64("nonce", v)
		case "type":
			t.typ, err = jsonscan.Uint64("type", v)
		case "chainId":
			t.hasChain = true
			err = jsonscan.Big("chainId", v, &t.chainID)
		case "input":
			h, ok := jsonscan.Trim0x(v)
			if !ok || len(h)%2 != 0 {
				return fmt.Errorf("input: not 0x-hex bytes")
			}
			t.inputLen = len(h) / 2
			t.inputZeros = 0
			for i := 0; i+1 < len(h); i += 2 {
				if h[i] == '0' && h[i+1] == '0' {
					t.inputZeros++
				}
			}
			if t.inputLen >= 4 {
				err = jsonscan.FixedHex("input", v[:10], t.method[:])
			}
		}
		return err
	})
}

func (t *txn) parseReceipt(s *jsonscan.Scanner) error {
	return s.Object(func(key []byte) error {
		if string(key) == "logs" {
			t.logs = t.logs[:0]
			if s.Null() {
				return nil
			}
			return s.Array(func(i int) error {
				if i < cap(t.logs) {
					t.logs = t.logs[:i+1]
					data := t.logs[i].data[:0]
					t.logs[i] = logEntry{data: data}
				} else {
					t.logs = append(t.logs, logEntry{})
				}
				return t.logs[i].parse(s)
			})
		}
		switch string(key) {
		case "transactionHash", "transactionIndex", "status", "gasUsed", "effectiveGasPrice", "contractAddress",
			"blockHash", "blockNumber":
		default:
			return s.Skip()
		}
		if s.Null() {
			return nil
		}
		v, err := s.Str()
		if err != nil {
			return fmt.Errorf("receipt field %s: %w", key, err)
		}
		switch string(key) {
		case "transactionHash":
			t.rseen.hash = true
			t.rhash, err = jsonscan.Hash("receipt transactionHash", v)
		case "transactionIndex":
			t.rseen.index = true
			t.rindex, err = jsonscan.Uint64("receipt transactionIndex", v)
		case "status":
			t.rseen.status = true
			t.status, err = jsonscan.Uint64("status", v)
		case "gasUsed":
			t.rseen.gasUsed = true
			t.gasUsed, err = jsonscan.Uint64("receipt gasUsed", v)
		case "effectiveGasPrice":
			t.hasEff = true
			err = jsonscan.Big("effectiveGasPrice", v, &t.effPrice)
		case "contractAddress":
			t.hasContract = true
			t.contract, err = jsonscan.Address("contractAddress", v)
		case "blockHash":
			t.rseen.blockHash = true
			t.rblockHash, err = jsonscan.Hash("receipt blockHash", v)
		case "blockNumber":
			t.rseen.blockNumber = true
			t.rblockNumber, err = jsonscan.Uint64("receipt blockNumber", v)
		}
		return err
	})
}

func (l *logEntry) parse(s *jsonscan.Scanner) error {
	return s.Object(func(key []byte) error {
		switch string(key) {
		case "topics":
			l.seen.topics = true
			l.ntopics = 0
			return s.Array(func(i int) error {
				if i >= len(l.topics) {
					return fmt.Errorf("log has more than 4 topics")
				}
				v, err := s.Str()
				if err != nil {
					return err
				}
				l.ntopics = i + 1
				l.topics[i], err = jsonscan.Hash("topic", v)
				return err
			})
		case "address", "data", "logIndex":
		default:
			return s.Skip()
		}
		v, err := s.Str()
		if err != nil {
			return fmt.Errorf("log field %s: %w", key, err)
		}
		switch string(key) {
		case "address":
			l.seen.address = true
			l.address, err = jsonscan.Address("log address", v)
		case "data":
			l.seen.data = true
			l.data, err = jsonscan.Bytes("log data", v, l.data)
		case "logIndex":
			l.seen.index = true
			l.index, err = jsonscan.Uint64("logIndex", v)
		}
		return err
	})
}

// parseAccessList counts an access list's addresses and storage keys.
func (t *txn) parseAccessList(s *jsonscan.Scanner) error {
	t.alAddrs, t.alKeys = 0, 0
	if s.Null() {
		return nil
	}
	return s.Array(func(int) error {
		t.alAddrs++
		return s.Object(func(key []byte) error {
			if string(key) != "storageKeys" || s.Null() {
				return s.Skip()
			}
			return s.Array(func(int) error {
				t.alKeys++
				return s.Skip()
			})
		})
	})
}

// ranCode reports whether the tx may have executed code: a creation always
// does; a call whose gasUsed is exactly its intrinsic gas (21000, calldata,
// access list) ran none (every opcode that can move value costs gas), so it
// moved no value beyond its own.
func (t *txn) ranCode() bool {
	if !t.hasTo {
		return true
	}
	intrinsic := 21000 + 4*uint64(t.inputZeros) + 16*uint64(t.inputLen-t.inputZeros) +
		2400*uint64(t.alAddrs) + 1900*uint64(t.alKeys)
	return t.gasUsed != intrinsic
}
