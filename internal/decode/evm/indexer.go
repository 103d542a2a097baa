// Package evm indexes EVM chains (the C-chain and EVM L1s): blocks, transactions,
// logs, ERC-20/721/1155 transfers, contracts and tokens, and token and native
// balances with per-block history, from eth_getBlockByNumber(n, true) +
// eth_getBlockReceipts(n) JSON.
//
// Native balances are computed from the index alone: the genesis alloc, each
// tx's value (successful txs only) and fee (gasUsed × effectiveGasPrice, paid
// even when reverted) credited whole to the block's coinbase (coreth and
// subnet-evm burn nothing themselves: the C-chain's coinbase is the
// blackhole address), the value of a top-level
// contract creation, and the atomic import/export effects reported by an
// AtomicApplier. Value moved inside contract execution (calls with value,
// selfdestruct) needs call traces, which the node's block and receipts do
// not carry: a block fetched with its traces (trace.go) has it applied, and
// its internal transactions stored; a block without them marks the
// addresses whose balance may miss such value (evm_untrusted_balances).
package evm

import (
	"context"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"sync"

	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/jsonscan"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// BalanceDelta is a signed change of an address's native balance, in wei.
type BalanceDelta struct {
	Address common.Address
	Delta   *big.Int
}

// AtomicApplier indexes a C-chain block's atomic txs (blockExtraData) and
// reports their effect on EVM native balances: imports credit, exports debit.
// It is called inside the block's store transaction, only for blocks with a
// non-empty blockExtraData.
type AtomicApplier interface {
	ApplyAtomic(ctx context.Context, tx *store.Tx, blockHeight uint64, blockTime int64, blockHash string, extraData []byte) ([]BalanceDelta, error)
}

// Log is one receipt log with what log consumers need of its transaction.
// Topics and Data are only valid during the LogSink call.
type Log struct {
	Address   common.Address
	Topics    []common.Hash
	Data      []byte
	LogIndex  uint64 // position in the block
	TxHash    common.Hash
	TxIndex   uint64
	TxFrom    common.Address
	TxGasUsed uint64
}

// LogSink indexes something more from a block's logs (e.g. ICM messages).
type LogSink interface {
	ApplyLogs(ctx context.Context, tx *store.Tx, number uint64, hash common.Hash, time int64, logs []Log) error
	// DerivedTables are the tables ApplyLogs writes (cleared by reindex).
	DerivedTables() []string
}

// Config configures the indexer of one EVM chain.
type Config struct {
	// ChainKey names the chain in every table: "C", or an L1's EVM chain id.
	ChainKey string
	// ChainID is the EVM chain id; a tx signed for another chain id is an
	// error (the source serves another chain). nil skips the check.
	ChainID *big.Int
	// GenesisAlloc holds the native balances at block 0 (wei).
	GenesisAlloc map[common.Address]*big.Int
	// Atomic, when set, indexes the C-chain's atomic txs.
	Atomic AtomicApplier
	// Logs, when set, receives each block's logs inside the block's
	// transaction (ICM messages are indexed this way).
	Logs LogSink
	// Minters are precompiles whose successful calls create native value no
	// call frame shows (subnet-evm's native minter, NativeMinterAddress):
	// from the first such call on, computed native balances are not vouched
	// for (evm_untrusted_balances) and the API reads them from the node.
	// MinterEnabled says the chain's genesis enables one: without traces,
	// any tx that runs code may then have minted.
	Minters       []common.Address
	MinterEnabled bool
	// HolderBucketBits sizes evm_token_balance_buckets' buckets; 0 is
	// HolderBucketBits, what the Metrics API reads. Tests set smaller ones
	// (and read with the same) to cross buckets on short chains.
	HolderBucketBits int
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// NativeMinterAddress is subnet-evm's native minter precompile
// (precompile/contracts/nativeminter).
var NativeMinterAddress = common.HexToAddress("0x0200000000000000000000000000000000000001")

// CChainConfig builds the C-chain configuration from the network genesis.
func CChainConfig(g *genesis.Genesis) (Config, error) {
	c, err := g.CChain()
	if err != nil {
		return Config{}, err
	}
	id, ok := new(big.Int).SetString(c.Config.ChainID.String(), 10)
	if !ok {
		return Config{}, fmt.Errorf("evm: C-chain genesis chainId %q is not a number", c.Config.ChainID)
	}
	alloc, err := AllocFromGenesis(c.Alloc)
	if err != nil {
		return Config{}, err
	}
	return Config{ChainKey: "C", ChainID: id, GenesisAlloc: alloc}, nil
}

// AllocFromGenesis converts a genesis alloc (address without or with 0x ->
// balance as 0x-hex or decimal string) to balances.
func AllocFromGenesis(a genesis.CChainAlloc) (map[common.Address]*big.Int, error) {
	out := make(map[common.Address]*big.Int, len(a))
	for k, v := range a {
		addrHex := k
		if !strings.HasPrefix(addrHex, "0x") && !strings.HasPrefix(addrHex, "0X") {
			addrHex = "0x" + addrHex
		}
		addr, err := jsonscan.Address("genesis alloc address", []byte(addrHex))
		if err != nil {
			return nil, fmt.Errorf("evm: %w", err)
		}
		bal := new(big.Int)
		s := strings.TrimSpace(v.Balance)
		switch {
		case s == "":
		case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
			if err := jsonscan.Big("genesis alloc balance", []byte(s), bal); err != nil {
				return nil, fmt.Errorf("evm: %s: %w", k, err)
			}
		default:
			if _, ok := bal.SetString(s, 10); !ok || bal.Sign() < 0 || bal.BitLen() > 256 {
				return nil, fmt.Errorf("evm: genesis alloc %s: balance %q is not a uint256", k, s)
			}
		}
		out[addr] = bal
	}
	return out, nil
}

// Indexer implements ingest.Indexer for one EVM chain. Apply calls are
// serialised; the indexer reuses its parse and row buffers across blocks.
type Indexer struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	blk      block
	rows     *blockRows // blk's, for blocks not prepared
	prepared sync.Pool  // of *preparedBlock, for Prepare
	rowsPool sync.Pool  // of *blockRows, for Collect
	w        *writer
	applied  bool                    // a block was applied since the caches were dropped
	last     uint64                  // its height
	logBuf   []Log                   // reused by sinkLogs
	minters  map[common.Address]bool // Config.Minters, for blockRows
}

// preparedBlock is a block parsed by Prepare, and its rows once collected
// (Collect; nil before).
type preparedBlock struct {
	b    block
	rows *blockRows
}

var (
	_ ingest.Batcher      = (*Indexer)(nil)
	_ ingest.Preparer     = (*Indexer)(nil)
	_ ingest.Collector    = (*Indexer)(nil)
	_ source.BlockDecoder = (*Indexer)(nil)
)

// Prepare parses the block ahead of Apply (ingest.Preparer): parsing is a
// tenth of Apply's time. On a parse error it leaves the block unprepared:
// Apply parses again and reports the error. A block the fetch decoded
// (DecodeBlock) is prepared already.
func (ix *Indexer) Prepare(rb *ingest.RawBlock) {
	if _, ok := rb.Prepared.(*preparedBlock); ok {
		return
	}
	if p, err := ix.parse(rb.Bytes); err == nil {
		rb.Prepared = p
	}
}

// DecodeBlock parses a block's stored form in the fetch, for the source's
// checks and for Apply (source.BlockDecoder): the block's one pass over its
// JSON after the batch answer's split, where the fetch's checks and Prepare
// scanned it once each (docs/benchmarks.md, "Thirteenth session"). The
// result is the block's ingest.RawBlock.Prepared (chains.EVMSource).
func (ix *Indexer) DecodeBlock(doc []byte, f *source.EVMBlockFacts) (any, error) {
	p, err := ix.parse(doc)
	if err != nil {
		return nil, err
	}
	b := &p.b
	f.Number, f.Timestamp, f.Hash, f.ParentHash = b.number, b.timestamp, b.hash, b.parentHash
	for i := range b.txs {
		t := &b.txs[i]
		f.TxHashes = append(f.TxHashes, t.hash)
		f.Receipts = append(f.Receipts, source.EVMReceiptFacts{TxHash: t.rhash, BlockHash: t.rblockHash,
			BlockNumber: t.rblockNumber, Complete: t.rseen.hash && t.rseen.blockHash && t.rseen.blockNumber})
	}
	return p, nil
}

// parse parses raw into a block of the pool (returned to it on an error).
func (ix *Indexer) parse(raw []byte) (*preparedBlock, error) {
	p, _ := ix.prepared.Get().(*preparedBlock)
	if p == nil {
		p = new(preparedBlock)
	}
	if err := p.b.parse(raw); err != nil {
		ix.prepared.Put(p)
		return nil, err
	}
	return p, nil
}

// Collect builds a prepared block's rows and balance deltas, which depend on
// the block alone (ingest.Collector), while the block before it is applied:
// Apply is left with what depends on the writer's state, and the
// statements. On an error it leaves the rows to Apply, which reports it.
// Rows are a few tens of KB a block: only the blocks of the chunk being
// applied hold them (ingest.ApplyBlocks), not every chunk fetched.
func (ix *Indexer) Collect(rb *ingest.RawBlock) {
	p, ok := rb.Prepared.(*preparedBlock)
	if !ok || p.rows != nil {
		return
	}
	rows, _ := ix.rowsPool.Get().(*blockRows)
	if rows == nil {
		rows = ix.newRows()
	}
	rows.begin(ix.cfg.ChainKey, &p.b)
	if err := rows.collect(); err != nil {
		ix.rowsPool.Put(rows)
		return
	}
	p.rows = rows
}

func (ix *Indexer) newRows() *blockRows {
	return newBlockRows(ix.minters, len(ix.minters) > 0 && ix.cfg.MinterEnabled)
}

// NewIndexer returns the indexer for cfg.
func NewIndexer(cfg Config) (*Indexer, error) {
	if cfg.ChainKey == "" {
		return nil, fmt.Errorf("evm: config: empty chain key")
	}
	if cfg.ChainID != nil && cfg.ChainID.Sign() <= 0 {
		return nil, fmt.Errorf("evm: config: chain id %s is not positive", cfg.ChainID)
	}
	for a, v := range cfg.GenesisAlloc {
		if v == nil || v.Sign() < 0 {
			return nil, fmt.Errorf("evm: config: genesis alloc %s: negative or missing balance", a.Hex())
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("chain", cfg.ChainKey)
	ix := &Indexer{cfg: cfg, log: log, w: newWriter(log)}
	if ix.w.bucketBits = cfg.HolderBucketBits; ix.w.bucketBits == 0 {
		ix.w.bucketBits = HolderBucketBits
	}
	if len(cfg.Minters) > 0 {
		ix.minters = make(map[common.Address]bool, len(cfg.Minters))
		for _, a := range cfg.Minters {
			ix.minters[a] = true
		}
	}
	return ix, nil
}

// DerivedTables lists the tables Apply writes (its rows are all of chain_key;
// reindex deletes them by chain_key).
func (ix *Indexer) DerivedTables() []string {
	t := []string{
		"evm_blocks", "evm_txs", "evm_address_txs", "evm_logs", "evm_transfers", "evm_contracts",
		"evm_nft_tokens", "evm_nft_owner_history", "evm_token_balances", "evm_token_balance_history",
		"evm_token_balance_buckets",
		"evm_native_balances", "evm_native_balance_history",
		"evm_internal_txs", "evm_address_internals", "evm_untrusted_balances",
		"evm_untrusted_tokens",
	}
	if ix.cfg.Logs != nil {
		t = append(t, ix.cfg.Logs.DerivedTables()...)
	}
	return t
}

// Apply indexes one block. The indexer must be the only writer of its
// chain's rows in the tables it derives: it caches current balances between
// blocks. A height at or below the last one applied means the driver rolled
// back and retries (or reindexes): the caches are dropped then, and after
// any failed Apply.
func (ix *Indexer) Apply(ctx context.Context, tx *store.Tx, rb ingest.RawBlock) (err error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.applied && rb.Height <= ix.last {
		ix.w.dropCaches()
	}
	defer func() {
		if err != nil {
			ix.w.dropCaches()
			ix.applied = false
			return
		}
		ix.applied, ix.last = true, rb.Height
	}()
	p, prepared := rb.Prepared.(*preparedBlock)
	var (
		b    *block
		rows *blockRows
	)
	if prepared {
		// Nothing refers to the parsed block or its rows after Apply: its
		// rows are written (or copied by the kept-row stores), and log sinks
		// keep no Log past their call.
		defer func() {
			if p.rows != nil {
				ix.rowsPool.Put(p.rows)
				p.rows = nil
			}
			ix.prepared.Put(p)
		}()
		b, rows = &p.b, p.rows
	} else {
		b = &ix.blk
		if err := b.parse(rb.Bytes); err != nil {
			return fmt.Errorf("evm %s: block %d: %w", ix.cfg.ChainKey, rb.Height, err)
		}
	}
	if b.number != rb.Height {
		return fmt.Errorf("evm %s: block %d: body is block %d", ix.cfg.ChainKey, rb.Height, b.number)
	}
	hash := hexString(b.hash[:])
	if rb.Hash != "" && !strings.EqualFold(rb.Hash, hash) {
		return fmt.Errorf("evm %s: block %d: body hash %s, want %s", ix.cfg.ChainKey, rb.Height, hash, rb.Hash)
	}
	if ix.cfg.ChainID != nil {
		for i := range b.txs {
			if t := &b.txs[i]; t.hasChain && t.chainID.Cmp(ix.cfg.ChainID) != 0 {
				return fmt.Errorf("evm %s: block %d tx %s: chain id %s, want %s", ix.cfg.ChainKey, rb.Height, t.hash.Hex(), &t.chainID, ix.cfg.ChainID)
			}
		}
	}
	if rows == nil {
		if ix.rows == nil {
			ix.rows = ix.newRows()
		}
		rows = ix.rows
		rows.begin(ix.cfg.ChainKey, b)
		if err := rows.collect(); err != nil {
			return fmt.Errorf("evm %s: block %d: %w", ix.cfg.ChainKey, rb.Height, err)
		}
	}
	w := ix.w
	w.begin(ix.cfg.ChainKey, rows)
	defer func() { w.blockRows = nil }()
	if b.number == 0 {
		for a, v := range ix.cfg.GenesisAlloc {
			w.native(a).Add(w.native(a), v)
		}
	}
	w.build()
	if ix.cfg.Atomic != nil && len(b.blockExtraData) > 0 {
		// A copy: the parse buffer is reused by the next block.
		extra := append([]byte(nil), b.blockExtraData...)
		deltas, err := ix.cfg.Atomic.ApplyAtomic(ctx, tx, b.number, int64(b.timestamp), hash, extra)
		if err != nil {
			return fmt.Errorf("evm %s: block %d: atomic txs: %w", ix.cfg.ChainKey, rb.Height, err)
		}
		for _, d := range deltas {
			if d.Delta == nil {
				continue
			}
			n := w.native(d.Address)
			n.Add(n, d.Delta)
		}
	}
	if err := w.write(ctx, tx); err != nil {
		return fmt.Errorf("evm %s: block %d: %w", ix.cfg.ChainKey, rb.Height, err)
	}
	if ix.cfg.Logs != nil {
		if err := ix.sinkLogs(ctx, tx, b); err != nil {
			return fmt.Errorf("evm %s: block %d: %w", ix.cfg.ChainKey, rb.Height, err)
		}
	}
	return nil
}

// Flush writes the current balances the blocks applied since the last Flush
// changed: once per key per batch, where the balance history gets a row per
// block; on PostgreSQL also the rows kept for one COPY per batch (pgWriter),
// on SQLite the address-keyed tables' rows kept to be inserted in key order
// (sqliteSorted).
// The pipeline calls it once per batch, before the checkpoint.
func (ix *Indexer) Flush(ctx context.Context, tx *store.Tx) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if tx.Dialect() == store.SQLite {
		ix.w.sq.sortAhead() // sorted while the balances are written
	}
	err := ix.w.flushBalances(ctx, tx)
	if err == nil && tx.Dialect() == store.Postgres {
		err = ix.w.pg.flushCopies(ctx, tx)
	}
	if err == nil && tx.Dialect() == store.SQLite {
		err = ix.w.sq.flush(ctx, tx)
	}
	if err != nil {
		ix.w.dropCaches()
		ix.applied = false
		return fmt.Errorf("evm %s: %w", ix.cfg.ChainKey, err)
	}
	return nil
}

// Discard forgets the balances not flushed, and the caches: the batch's
// transaction is abandoned, so they may hold values that were never stored.
func (ix *Indexer) Discard() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.w.dropCaches()
	ix.applied = false
}

// sinkLogs hands the block's logs to the configured LogSink.
func (ix *Indexer) sinkLogs(ctx context.Context, tx *store.Tx, b *block) error {
	logs := ix.logBuf[:0]
	for i := range b.txs {
		t := &b.txs[i]
		for j := range t.logs {
			l := &t.logs[j]
			logs = append(logs, Log{Address: l.address, Topics: l.topics[:l.ntopics], Data: l.data, LogIndex: l.index,
				TxHash: t.hash, TxIndex: t.index, TxFrom: t.from, TxGasUsed: t.gasUsed})
		}
	}
	ix.logBuf = logs
	if len(logs) == 0 {
		return nil
	}
	return ix.cfg.Logs.ApplyLogs(ctx, tx, b.number, b.hash, int64(b.timestamp), logs)
}
