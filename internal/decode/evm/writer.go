package evm

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/big"
	"slices"
	"strconv"

	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/jsonscan"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Statements. Column lists are the order values are appended in writer;
// block columns (b*) are set once per block in begin, the others (c*) per row.
var (
	// evm_blocks, evm_txs, evm_transfers and evm_internal_txs are read
	// inside the batch only at its Flush, after these COPYs (the metrics
	// rollups, the webhook emitter), or after a restart (cumulate): they go by
	// one COPY per batch on PostgreSQL too, in block order (their keys start
	// with the block).
	insBlocks = batchCopied(newInsert("evm_blocks", []column{cText("chain_key"), cInt("number"), cBlob("hash"),
		cBlob("parent_hash"), cInt("timestamp"), cInt("timestamp_ms"), cInt("tx_count"), cInt("gas_used"),
		cInt("gas_limit"), cText("base_fee"), cBlob("miner"), cInt("size_bytes"), cBlob("state_root"),
		cText("extra_data"), cBlob("ext_data_hash"), cText("ext_data_gas_used"), cText("block_gas_cost"),
		cText("min_delay_excess"), cBlob("block_extra_data"), cInt("cumulative_txs")}, ""))
	insTxs = batchCopied(newInsert("evm_txs", []column{bText("chain_key"), bInt("block_number"), cInt("tx_index"),
		cBlob("hash"), bBlob("block_hash"), bInt("block_time"), cBlob("from_addr"), cBlob("to_addr"),
		cText("value"), cInt("gas_limit"), cText("gas_price"), cText("max_fee_per_gas"),
		cText("max_priority_fee_per_gas"), cInt("gas_used"), cInt("nonce"), cInt("tx_type"), cInt("status"),
		cText("method_id"), cInt("input_size"), cBlob("contract_address"), cInt("log_count")}, ""))
	insAddrTxs = sortedFor("evm_address_txs_address", batchCopied(newInsert("evm_address_txs", []column{bText("chain_key"), cBlob("address"),
		bInt("block_number"), cInt("tx_index")}, ""), "address"))
	insLogs = batchCopied(newInsert("evm_logs", []column{bText("chain_key"), bInt("block_number"), cInt("log_index"),
		cInt("tx_index"), cBlob("tx_hash"), cBlob("address"), cInt("topic_count"), cBlob("topic0"),
		cBlob("topic1"), cBlob("topic2"), cBlob("topic3"), cBlob("data")}, "")) // already in key order
	insTransfers = batchCopied(newInsert("evm_transfers", []column{bText("chain_key"), bInt("block_number"),
		cInt("log_index"), cInt("batch_index"), cInt("tx_index"), cBlob("tx_hash"), bInt("block_time"),
		cBlob("token"), cText("erc_type"), cBlob("from_addr"), cBlob("to_addr"), cBlob("operator"),
		cText("token_id"), cText("value")}, ""))
	// evm_contracts: the first block whose events show a contract's type
	// records it (erc_type_block), whether or not the enrichment already set
	// erc_type from calls (leaving erc_type_block -1): the row must not
	// depend on which ran first.
	insContracts = newInsert("evm_contracts", []column{bText("chain_key"), cText("address"),
		cText("creation_kind"), cText("tx_hash"), bInt("block_number"), bInt("block_time"),
		cText("deployer_address"), cText("deployer_contract_address"), cText("erc_type"), cInt("erc_type_block")},
		"ON CONFLICT (chain_key, address) DO UPDATE SET erc_type = excluded.erc_type, erc_type_block = excluded.erc_type_block"+
			" WHERE evm_contracts.erc_type_block = -1 AND excluded.erc_type <> ''")
	// evm_nft_tokens: written once per id per batch (flushBalances), the
	// batch's blocks merged as their upserts would have left the row.
	insNFTs = newInsert("evm_nft_tokens", []column{bText("chain_key"), cText("token"), cText("token_id"),
		cText("erc_type"), cText("owner"), cInt("owner_block"), cInt("first_block")},
		"ON CONFLICT (chain_key, token, token_id) DO UPDATE SET owner = excluded.owner, owner_block = excluded.owner_block"+
			" WHERE excluded.owner <> ''")
	insNFTHistory = sortedFor("evm_nft_owner_history_token", batchCopied(newInsert("evm_nft_owner_history", []column{bText("chain_key"), cBlob("token"),
		cText("token_id"), bInt("block_number"), cBlob("owner")}, ""), "token", "token_id"))
	// max_balance (migration 0122) keeps the largest of the stored maximum and
	// the batch's (decimals: the longer is larger, equal lengths compare as
	// text; '' below every balance), for the Metrics API's token holders.
	insTokenBal = newInsert("evm_token_balances", []column{bText("chain_key"), cBlob("holder"),
		cText("erc_type"), cBlob("token"), cText("token_id"), cText("balance"), cInt("block_number"), cText("max_balance")},
		"ON CONFLICT (chain_key, holder, erc_type, token, token_id) DO UPDATE SET balance = excluded.balance, block_number = excluded.block_number,"+
			" max_balance = CASE WHEN LENGTH(excluded.max_balance) > LENGTH(evm_token_balances.max_balance)"+
			" OR (LENGTH(excluded.max_balance) = LENGTH(evm_token_balances.max_balance) AND excluded.max_balance > evm_token_balances.max_balance)"+
			" THEN excluded.max_balance ELSE evm_token_balances.max_balance END")
	insTokenHist = sortedFor("evm_token_balance_history_holder", batchCopied(newInsert("evm_token_balance_history", []column{bText("chain_key"), cBlob("holder"),
		cText("erc_type"), cBlob("token"), cText("token_id"), bInt("block_number"), cText("balance")}, ""),
		"holder", "erc_type", "token", "token_id"))
	// evm_token_balance_buckets (migration 0190, buckets.go): a key's span
	// in a bucket may be written by several batches; the first one's first
	// change and entering balance stay, the last one's last change wins, hi
	// keeps the larger (non-negative decimals).
	insTokenBuckets = newInsert("evm_token_balance_buckets", []column{bText("chain_key"), cBlob("token"), cText("erc_type"),
		cInt("bucket"), cBlob("holder"), cInt("first_block"), cText("entering"), cInt("last_block"), cText("last_balance"), cText("hi")},
		"ON CONFLICT (chain_key, token, erc_type, bucket, holder) DO UPDATE SET last_block = excluded.last_block,"+
			" last_balance = excluded.last_balance,"+
			" hi = CASE WHEN LENGTH(excluded.hi) > LENGTH(evm_token_balance_buckets.hi)"+
			" OR (LENGTH(excluded.hi) = LENGTH(evm_token_balance_buckets.hi) AND excluded.hi > evm_token_balance_buckets.hi)"+
			" THEN excluded.hi ELSE evm_token_balance_buckets.hi END")
	insNativeBal = newInsert("evm_native_balances", []column{bText("chain_key"), cBlob("address"),
		cText("balance"), cInt("block_number")},
		"ON CONFLICT (chain_key, address) DO UPDATE SET balance = excluded.balance, block_number = excluded.block_number")
	insNativeHist = sortedFor("evm_native_balance_history_address", batchCopied(newInsert("evm_native_balance_history", []column{bText("chain_key"), cBlob("address"),
		bInt("block_number"), cText("balance")}, ""), "address"))
	insInternals = batchCopied(newInsert("evm_internal_txs", []column{bText("chain_key"), bInt("block_number"), cInt("tx_index"),
		cInt("trace_index"), cBlob("tx_hash"), bBlob("block_hash"), bInt("block_time"), cText("call_type"),
		cBlob("from_addr"), cBlob("to_addr"), cText("value"), cInt("gas"), cInt("gas_used"), cInt("reverted"),
		cInt("depth")}, ""))
	insAddrInternals = sortedFor("evm_address_internals_address", batchCopied(newInsert("evm_address_internals", []column{bText("chain_key"), cBlob("address"),
		bInt("block_number"), cInt("tx_index"), cInt("trace_index")}, ""), "address"))
	insUntrusted = newInsert("evm_untrusted_balances", []column{bText("chain_key"), cBlob("address"),
		bInt("since_block")}, "ON CONFLICT (chain_key, address) DO NOTHING")
	insUntrustedTok = newInsert("evm_untrusted_tokens", []column{bText("chain_key"), cBlob("token"),
		bInt("since_block")}, "ON CONFLICT (chain_key, token) DO NOTHING")

	// SQLite: point reads of the current balance of one key.
	selNativeOne = "SELECT balance FROM evm_native_balances WHERE chain_key = $1 AND address = $2"
	selTokenOne  = "SELECT balance FROM evm_token_balances WHERE chain_key = $1 AND holder = $2 AND erc_type = $3" +
		" AND token = $4 AND token_id = $5"
	// PostgreSQL: one round trip per kind and block, keys passed as arrays
	// (a fixed statement, prepared once per transaction). An OR chain of keys
	// gets planned as a scan of the chain's rows until the table is analyzed.
	selNativePG = "SELECT b.address, b.balance FROM unnest($2::bytea[]) AS k(address)" +
		" JOIN evm_native_balances b ON b.chain_key = $1 AND b.address = k.address"
	selTokenPG = "SELECT b.holder, b.erc_type, b.token, b.token_id, b.balance" +
		" FROM unnest($2::bytea[], $3::text[], $4::bytea[], $5::text[]) AS k(holder, erc_type, token, token_id)" +
		" JOIN evm_token_balances b ON b.chain_key = $1 AND b.holder = k.holder AND b.erc_type = k.erc_type" +
		" AND b.token = k.token AND b.token_id = k.token_id"
)

type tokenKey struct {
	holder, token common.Address
	typ           ercType
	id            string // decimal; '' for ERC-20 and ERC-721 counts
}

// tokenKeyStr is a token balance key as PostgreSQL returns it (readTokens):
// holder and token are the addresses' bytes, as strings to be a map key.
type tokenKeyStr struct{ holder, typ, token, id string }

type nftKey struct {
	token common.Address
	id    string
}

type nftState struct {
	typ   ercType
	owner common.Address // ERC-721 only
	moved bool           // ERC-721 owner changed in this block
}

type contractState struct {
	kind    string // tx, internal, observed
	tx      int
	erc     ercType
	factory string // internal: the creating contract (0x-lowercase)
}

// blockRows is what one block yields by itself: its rows, the balance
// deltas of its txs and the contracts and NFT ids it shows, built by collect
// from the parsed block alone, without the writer's state (caches, the
// batch's balances, ids known): Collect builds them on a goroutine of their
// own, ahead of the writer within its chunk (ingest.ApplyBlocks), which then only
// adds what depends on its state (buildContracts, buildNFTs, balances) and
// runs the statements.
// Its maps and slices live across blocks to keep allocations per block low.
type blockRows struct {
	chain string
	b     *block
	time  int64

	addrs   map[common.Address]string
	raws    map[common.Address][]byte
	natives map[common.Address]*big.Int
	tokens  map[tokenKey]*big.Int
	nfts    map[nftKey]*nftState
	nftOrd  []nftKey
	cons    map[common.Address]*contractState
	conOrd  []common.Address
	bigs    []*big.Int
	nbig    int
	tmp     big.Int
	xfers   []transfer

	blocks, txs, addrTxs, logs, transfers, contracts, nftHist,
	tokHist, natHist, internals, addrInternals, untrusted, untrustedTokens rowSet

	// Wrapped native tokens (wrapped.go): the value movements that backed an
	// event of the tx, and the tokens of the block whose events could not
	// be checked.
	frameUsed    []bool
	wad          big.Int
	untrustedTok map[common.Address]struct{}

	// Untrusted balances (trace.go): what the block says.
	blockHot, blockBlind bool
	blockMint            bool // a tx of the block may have minted native value
	// minters are the minting precompiles watched (Config.Minters);
	// minterEnabled: the chain's genesis enables one.
	minters       map[common.Address]bool
	minterEnabled bool

	nftPool  []*nftState
	nnftPool int
	conPool  []*contractState
	nconPool int
}

func newBlockRows(minters map[common.Address]bool, minterEnabled bool) *blockRows {
	return &blockRows{
		addrs:         make(map[common.Address]string),
		raws:          make(map[common.Address][]byte),
		natives:       make(map[common.Address]*big.Int),
		tokens:        make(map[tokenKey]*big.Int),
		nfts:          make(map[nftKey]*nftState),
		cons:          make(map[common.Address]*contractState),
		blocks:        rowSet{spec: insBlocks},
		txs:           rowSet{spec: insTxs},
		addrTxs:       rowSet{spec: insAddrTxs},
		logs:          rowSet{spec: insLogs},
		transfers:     rowSet{spec: insTransfers},
		contracts:     rowSet{spec: insContracts},
		nftHist:       rowSet{spec: insNFTHistory},
		tokHist:       rowSet{spec: insTokenHist},
		natHist:       rowSet{spec: insNativeHist},
		internals:     rowSet{spec: insInternals},
		addrInternals: rowSet{spec: insAddrInternals},
		untrusted:     rowSet{spec: insUntrusted},

		untrustedTokens: rowSet{spec: insUntrustedTok},
		untrustedTok:    make(map[common.Address]struct{}),
		minters:         minters,
		minterEnabled:   minterEnabled,
	}
}

// writer writes blocks' rows (blockRows) with what depends on the chain's
// state in block order: current balances, contracts and NFT ids known, the
// batch's kept rows. blockRows is the block being applied (nil between
// Applies: it goes back to the Indexer's pool with its parsed block).
type writer struct {
	*blockRows
	log   *slog.Logger
	chain string

	natBal, tokBal, nftRows rowSet // per batch (flushBalances)
	spans                   rowSet // likewise evm_token_balance_buckets (buckets.go)
	closedSpans             []spanRow
	bucketBits              int

	keysN []common.Address
	keysT []tokenKey
	strsT map[tokenKeyStr]int
	idxN  map[string]int
	oldN  []*big.Int
	oldT  []*big.Int
	// Write-through caches of what this chain's tables hold, so most blocks
	// need no reads: current balances, contracts known to exist (with the erc
	// type written), NFT ids known to exist. Valid only while every write to
	// these tables goes through this writer and nothing is rolled back; the
	// Indexer drops them when a height is applied again (a retry after a
	// rollback, or a reindex) and after any failed Apply.
	cacheN map[common.Address]*big.Int
	cacheT map[tokenKey]*big.Int
	// Current balances changed since the last flushBalances: written once
	// per key per batch (Indexer.Flush), not once per block. They share their
	// *big.Int with the caches and outlive a cache that is emptied: until
	// the flush, they are the only copy of the key's balance.
	dirtyN map[common.Address]dirtyBalance
	dirtyT map[tokenKey]dirtyBalance
	// flushedN and flushedT are the last flush's dirty balances, kept until
	// the next flush: on PostgreSQL the batch's commit may still run while
	// the next batch is applied (ingest's overlap), and its reads of
	// balances not in memory see only committed rows (readNative).
	flushedN map[common.Address]dirtyBalance
	flushedT map[tokenKey]dirtyBalance
	dirtyNFT map[nftKey]dirtyNFT // likewise the NFT ids' rows
	knownC   map[common.Address]ercType
	knownNFT map[nftKey]struct{}
	// Untrusted balances (trace.go): the chain's facts as known.
	hot, all int
	// complete: cacheN and cacheT hold every stored balance of the chain
	// (filled since its genesis block, never emptied), so a key they miss
	// has no stored balance and needs no read. An index built from genesis
	// reads no balances until a cache outgrows maxCached.
	complete bool
	// maxCached bounds each cache (maxCached; smaller in tests).
	maxCached int

	pg pgWriter
	sq sqliteSorted // SQLite: the address-keyed tables' rows, inserted in key order

	// cumTxs is the chain's transaction count up to block cumAt-1 (cumAt
	// -1: unknown, read from the previous block's row).
	cumTxs, cumAt int64
}

func newWriter(log *slog.Logger) *writer {
	return &writer{
		log:       log,
		strsT:     make(map[tokenKeyStr]int),
		cacheN:    make(map[common.Address]*big.Int),
		cacheT:    make(map[tokenKey]*big.Int),
		maxCached: maxCached,
		dirtyN:    make(map[common.Address]dirtyBalance),
		dirtyT:    make(map[tokenKey]dirtyBalance),
		flushedN:  make(map[common.Address]dirtyBalance),
		flushedT:  make(map[tokenKey]dirtyBalance),
		dirtyNFT:  make(map[nftKey]dirtyNFT),
		knownC:    make(map[common.Address]ercType),
		knownNFT:  make(map[nftKey]struct{}),
		idxN:      make(map[string]int),
		nftRows:   rowSet{spec: insNFTs},
		tokBal:    rowSet{spec: insTokenBal},
		spans:     rowSet{spec: insTokenBuckets},
		natBal:    rowSet{spec: insNativeBal},
		cumAt:     -1,
		sq:        sqliteSorted{max: sortedRows},
	}
}

// maxCached bounds each cache; a full cache is emptied (cheap, and the next
// blocks refill it with the keys that are hot).
const maxCached = 1 << 18

// dirtyBalance is a current balance waiting for flushBalances, with the
// block that last changed it.
type dirtyBalance struct {
	bal   *big.Int
	block int64
	max   string     // tokens: the largest non-negative balance after a block of the batch, decimal ('' none)
	span  holderSpan // tokens with id '': the changes in the bucket of the last one
}

// dirtyNFT is an evm_nft_tokens row waiting for flushBalances: what the
// batch's per-block upserts would leave (the first block's type and first
// block; the last owner set and its block, else the first block).
type dirtyNFT struct {
	typ, owner             string
	ownerBlock, firstBlock int64
}

// dropCaches forgets everything cached about the tables, and the balances
// not flushed (their transaction is being abandoned).
func (w *writer) dropCaches() {
	clear(w.cacheN)
	clear(w.cacheT)
	clear(w.dirtyN)
	clear(w.dirtyT)
	clear(w.flushedN)
	clear(w.flushedT)
	clear(w.dirtyNFT)
	clear(w.closedSpans)
	w.closedSpans = w.closedSpans[:0]
	clear(w.knownC)
	clear(w.knownNFT)
	w.pg.discard()
	w.sq.discard()
	w.hot, w.all = factUnknown, factUnknown
	w.complete = false
	w.cumAt = -1
}

// begin starts applying a block whose rows are collected: it bounds the
// caches and takes the rows.
func (w *writer) begin(chain string, rows *blockRows) {
	if rows.b.number == 0 {
		// Nothing of the chain is stored before its genesis block, and
		// caches are empty then (applying a height again drops them).
		w.complete = true
	}
	if len(w.cacheN) > w.maxCached {
		clear(w.cacheN)
		w.complete = false
	}
	if len(w.cacheT) > w.maxCached {
		clear(w.cacheT)
		w.complete = false
	}
	if len(w.knownC) > w.maxCached {
		clear(w.knownC)
	}
	if len(w.knownNFT) > w.maxCached {
		clear(w.knownNFT)
	}
	w.chain, w.blockRows = chain, rows
}

// begin empties the rows for block b.
func (w *blockRows) begin(chain string, b *block) {
	w.chain, w.b, w.time = chain, b, int64(b.timestamp)
	clear(w.addrs)
	clear(w.raws)
	clear(w.natives)
	clear(w.tokens)
	clear(w.nfts)
	clear(w.cons)
	clear(w.untrustedTok)
	w.nftOrd = w.nftOrd[:0]
	w.conOrd = w.conOrd[:0]
	w.nnftPool, w.nconPool = 0, 0
	w.blockHot, w.blockBlind, w.blockMint = false, false, false
	w.nbig = 0
	for _, r := range w.sets() {
		r.reset()
	}
	num := i64(b.number)
	w.txs.blockArgs = append(w.txs.blockArgs, chain, num, b.hash[:], w.time)
	w.transfers.blockArgs = append(w.transfers.blockArgs, chain, num, w.time)
	w.contracts.blockArgs = append(w.contracts.blockArgs, chain, num, w.time)
	for _, r := range []*rowSet{&w.addrTxs, &w.logs, &w.nftHist, &w.tokHist, &w.natHist, &w.addrInternals, &w.untrusted, &w.untrustedTokens} {
		r.blockArgs = append(r.blockArgs, chain, num)
	}
	w.internals.blockArgs = append(w.internals.blockArgs, chain, num, b.hash[:], w.time)
}

// sets lists the row sets written per block, in the order they are written
// (the current balances and NFT ids are written per batch: flushBalances).
func (w *blockRows) sets() []*rowSet {
	return []*rowSet{&w.blocks, &w.txs, &w.addrTxs, &w.logs, &w.transfers, &w.contracts,
		&w.nftHist, &w.tokHist, &w.natHist, &w.internals, &w.addrInternals, &w.untrusted, &w.untrustedTokens}
}

// newBig hands out a zeroed big.Int from a per-writer pool.
func (w *blockRows) newBig() *big.Int {
	if w.nbig == len(w.bigs) {
		w.bigs = append(w.bigs, new(big.Int))
	}
	v := w.bigs[w.nbig]
	w.nbig++
	return v.SetUint64(0)
}

// addr returns the 0x-lowercase form of a, once per block: the text of the
// tables that keep it (evm_contracts, evm_nft_tokens) and of log lines.
func (w *blockRows) addr(a common.Address) string {
	if s, ok := w.addrs[a]; ok {
		return s
	}
	s := hexString(a[:])
	w.addrs[a] = s
	return s
}

// raw returns a's bytes, the stored form of the other tables (store.Hex),
// once per block: the rows hold them until the block is written.
func (w *blockRows) raw(a common.Address) []byte {
	if s, ok := w.raws[a]; ok {
		return s
	}
	s := append([]byte(nil), a[:]...)
	w.raws[a] = s
	return s
}

func (w *blockRows) native(a common.Address) *big.Int {
	v, ok := w.natives[a]
	if !ok {
		v = w.newBig()
		w.natives[a] = v
	}
	return v
}

func (w *blockRows) token(k tokenKey) *big.Int {
	v, ok := w.tokens[k]
	if !ok {
		v = w.newBig()
		w.tokens[k] = v
	}
	return v
}

func (w *blockRows) contract(a common.Address, kind string, tx int) *contractState {
	c, ok := w.cons[a]
	if !ok {
		if w.nconPool == len(w.conPool) {
			w.conPool = append(w.conPool, new(contractState))
		}
		c = w.conPool[w.nconPool]
		w.nconPool++
		*c = contractState{kind: kind, tx: tx}
		w.cons[a] = c
		w.conOrd = append(w.conOrd, a)
	}
	return c
}

func i64(v uint64) int64 { return int64(v) } // callers hold values parsed as <= MaxInt64

func uintDecimal(v uint64) string { return strconv.FormatUint(v, 10) }

// collect builds the block's rows and balance deltas that depend on the
// block alone; the writer adds the rest (build, balances).
func (w *blockRows) collect() error {
	b := w.b
	chain := w.chain
	num := i64(b.number)
	baseFee := ""
	if b.hasBaseFee {
		baseFee = decimal(&b.baseFee)
	}
	optDec := func(has bool, v *big.Int) string {
		if !has {
			return ""
		}
		return decimal(v)
	}
	extHash := []byte{}
	if b.hasExtDataHash {
		extHash = b.extDataHash[:]
	}
	var extra any
	if len(b.blockExtraData) > 0 {
		extra = b.blockExtraData
	}
	extraData := "0x"
	if h, _ := jsonscan.Trim0x(b.extraData); len(h) > 0 {
		extraData = "0x" + lowerHex(h)
	}
	w.blocks.args = append(w.blocks.args, chain, num, b.hash[:], b.parentHash[:], i64(b.timestamp),
		i64(b.timestampMs), int64(len(b.txs)), i64(b.gasUsed), i64(b.gasLimit), baseFee, w.raw(b.miner),
		i64(b.size), b.stateRoot[:], extraData, extHash,
		optDec(b.hasExtDataGasUsed, &b.extDataGasUsed), optDec(b.hasBlockGasCost, &b.blockGasCost),
		optDec(b.hasMinDelayExcess, &b.minDelayExcess), extra, int64(0)) // cumulative_txs: set by cumulate

	fee := &w.tmp
	for i := range b.txs {
		t := &b.txs[i]
		txHash := t.hash[:]
		from := w.raw(t.from)
		to := []byte{}
		if t.hasTo {
			to = w.raw(t.to)
		}
		contract := []byte{}
		if t.hasContract {
			contract = w.raw(t.contract)
		}
		method := ""
		if t.inputLen >= 4 {
			method = hexString(t.method[:])
		}
		maxFee, maxPrio := "", ""
		if t.hasMax {
			maxFee = decimal(&t.maxFee)
		}
		if t.hasPrio {
			maxPrio = decimal(&t.maxPrio)
		}
		w.txs.args = append(w.txs.args, int64(i), txHash, from, to,
			decimal(&t.value), i64(t.gas), decimal(&t.effPrice), maxFee, maxPrio, i64(t.gasUsed), i64(t.nonce),
			i64(t.typ), int64(t.status), method, int64(t.inputLen), contract, int64(len(t.logs)))

		// Address links: sender, recipient, created contract (once each per tx).
		w.addrTxs.args = append(w.addrTxs.args, from, int64(i))
		if t.hasTo && t.to != t.from {
			w.addrTxs.args = append(w.addrTxs.args, to, int64(i))
		}
		created := t.hasContract && !t.hasTo && t.status == 1
		if created && t.contract != t.from {
			w.addrTxs.args = append(w.addrTxs.args, contract, int64(i))
		}
		if created {
			w.contract(t.contract, "tx", i)
		}

		// Native balances: fee from the sender always; value only on success;
		// the whole fee to the coinbase: coreth and subnet-evm burn nothing
		// themselves (core/state_transition.go credits gasUsed × effective
		// price to the coinbase; on the C-chain that is the blackhole
		// address 0x0100…0).
		fee.SetUint64(t.gasUsed)
		fee.Mul(fee, &t.effPrice)
		s := w.native(t.from)
		s.Sub(s, fee)
		if t.status == 1 && t.value.Sign() != 0 {
			s.Sub(s, &t.value)
			switch {
			case t.hasTo:
				r := w.native(t.to)
				r.Add(r, &t.value)
			case created:
				r := w.native(t.contract)
				r.Add(r, &t.value)
			}
		}
		if b.hasBaseFee && t.gasUsed > 0 && t.effPrice.Cmp(&b.baseFee) < 0 {
			return fmt.Errorf("tx %s: effective gas price %s below base fee %s", t.hash.Hex(), &t.effPrice, &b.baseFee)
		}
		if fee.Sign() != 0 {
			c := w.native(b.miner)
			c.Add(c, fee)
		}

		if b.hasTraces {
			w.collectFrames(i, txHash, t)
		}
		w.noteUntrusted(t)
		for j := range t.logs {
			if err := w.collectLog(i, txHash, &t.logs[j]); err != nil {
				return fmt.Errorf("tx %s log %d: %w", t.hash.Hex(), j, err)
			}
		}
		w.collectWrapped(t)
	}
	return nil
}

func lowerHex(h []byte) string {
	out := make([]byte, len(h))
	for i, c := range h {
		if c >= 'A' && c <= 'F' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return string(out)
}

var zeroAddr common.Address

func (w *blockRows) collectLog(txIdx int, txHash []byte, l *logEntry) error {
	topics := [4][]byte{{}, {}, {}, {}}
	for k := 0; k < l.ntopics; k++ {
		topics[k] = l.topics[k][:]
	}
	data := l.data
	if data == nil {
		data = []byte{} // NOT NULL column
	}
	w.logs.args = append(w.logs.args, i64(l.index), int64(txIdx), txHash, w.raw(l.address),
		int64(l.ntopics), topics[0], topics[1], topics[2], topics[3], data)
	w.contract(l.address, "observed", txIdx)

	w.xfers = decodeTransfers(l, w.xfers[:0])
	for k := range w.xfers {
		x := &w.xfers[k]
		token := w.raw(l.address)
		operator := []byte{}
		if x.hasOperator {
			operator = w.raw(x.operator)
		}
		id, value := "", "1"
		if x.id != nil {
			id = wordDecimal(x.id, &w.tmp)
		}
		if x.value != nil {
			value = wordDecimal(x.value, &w.tmp)
		}
		w.transfers.args = append(w.transfers.args, i64(l.index), int64(x.batch), int64(txIdx),
			txHash, token, x.typ.String(), w.raw(x.from), w.raw(x.to), operator, id, value)

		c := w.cons[l.address]
		if c.erc == ercNone {
			c.erc = x.typ
		}
		switch x.typ {
		case erc20:
			w.moveFungible(tokenKey{token: l.address, typ: erc20}, x.from, x.to, x.value)
		case erc721:
			w.moveFungible(tokenKey{token: l.address, typ: erc721}, x.from, x.to, nil)
			w.nft(nftKey{token: l.address, id: id}, erc721, x.to)
		case erc1155:
			w.moveFungible(tokenKey{token: l.address, typ: erc1155, id: id}, x.from, x.to, x.value)
			w.nft(nftKey{token: l.address, id: id}, erc1155, common.Address{})
		}
	}
	return nil
}

// moveFungible debits from and credits to by the 32-byte amount (nil: 1). The
// zero address (mint source, burn sink) has no balance.
func (w *blockRows) moveFungible(k tokenKey, from, to common.Address, amount []byte) {
	amt := &w.tmp
	if amount == nil {
		amt.SetUint64(1)
	} else {
		amt.SetBytes(amount)
	}
	if amt.Sign() == 0 {
		return
	}
	if from != zeroAddr {
		k.holder = from
		v := w.token(k)
		v.Sub(v, amt)
	}
	if to != zeroAddr {
		k.holder = to
		v := w.token(k)
		v.Add(v, amt)
	}
}

func (w *blockRows) nft(k nftKey, typ ercType, owner common.Address) {
	s, ok := w.nfts[k]
	if !ok {
		if w.nnftPool == len(w.nftPool) {
			w.nftPool = append(w.nftPool, new(nftState))
		}
		s = w.nftPool[w.nnftPool]
		w.nnftPool++
		*s = nftState{typ: typ}
		w.nfts[k] = s
		w.nftOrd = append(w.nftOrd, k)
	}
	if typ == erc721 && s.typ == erc721 {
		s.owner = owner
		s.moved = true
	}
}

// build adds the block's rows that depend on what the chain's tables hold:
// contracts and NFT ids not recorded yet, NFT owners (writer state, in block
// order).
func (w *writer) build() {
	w.buildContracts()
	w.buildNFTs(i64(w.b.number))
}

func (w *writer) buildContracts() {
	b := w.b
	for _, a := range w.conOrd {
		c := w.cons[a]
		if known, ok := w.knownC[a]; ok && (known != ercNone || c.erc == ercNone) {
			continue // the row exists and this block adds nothing to it
		}
		w.knownC[a] = c.erc
		t := &b.txs[c.tx]
		ercBlock := int64(-1)
		if c.erc != ercNone {
			ercBlock = i64(b.number)
		}
		w.contracts.args = append(w.contracts.args, w.addr(a), c.kind, hexString(t.hash[:]),
			w.addr(t.from), c.factory, c.erc.String(), ercBlock)
	}
}

func (w *writer) buildNFTs(num int64) {
	for _, k := range w.nftOrd {
		s := w.nfts[k]
		owner := ""
		if s.typ == erc721 && s.moved {
			owner = w.addr(s.owner)
			w.nftHist.args = append(w.nftHist.args, w.raw(k.token), k.id, w.raw(s.owner))
		} else if _, ok := w.knownNFT[k]; ok {
			continue // an ERC-1155 id already recorded
		}
		w.knownNFT[k] = struct{}{}
		d, ok := w.dirtyNFT[k]
		if !ok {
			d = dirtyNFT{typ: s.typ.String(), ownerBlock: num, firstBlock: num}
		}
		if owner != "" {
			d.owner, d.ownerBlock = owner, num
		}
		w.dirtyNFT[k] = d
	}
}

// write runs the block's statements: a handful per block whatever its size.
func (w *writer) write(ctx context.Context, tx *store.Tx) error {
	// SQLite statements do not watch ctx (store.Tx); it is checked once per
	// block here.
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := w.queueUntrusted(ctx, tx); err != nil {
		return err
	}
	if err := w.balances(ctx, tx); err != nil {
		return err
	}
	if err := w.cumulate(ctx, tx); err != nil {
		return err
	}
	if tx.Dialect() == store.Postgres {
		return w.pg.write(ctx, tx, w.sets())
	}
	for _, r := range w.sets() {
		if w.sq.keep(ctx, tx, r) {
			continue
		}
		if err := r.flush(ctx, tx); err != nil {
			return err
		}
	}
	return w.sq.write(ctx, tx)
}

// cumulate sets the block row's cumulative_txs (EvmBlock.cumulativeTransactions):
// the previous block's, carried from block to block, or read from its row
// after a restart or a dropped cache.
func (w *writer) cumulate(ctx context.Context, tx *store.Tx) error {
	num := i64(w.b.number)
	if num == 0 {
		w.cumTxs, w.cumAt = 0, 0
	}
	if w.cumAt != num {
		err := tx.QueryRow(ctx, "SELECT cumulative_txs FROM evm_blocks WHERE chain_key = $1 AND number = $2",
			w.chain, num-1).Scan(&w.cumTxs)
		if errors.Is(err, sql.ErrNoRows) {
			// Indexing starts above genesis: count what the chain holds.
			err = tx.QueryRow(ctx, "SELECT COALESCE(SUM(tx_count), 0) FROM evm_blocks WHERE chain_key = $1 AND number < $2",
				w.chain, num).Scan(&w.cumTxs)
		}
		if err != nil {
			return fmt.Errorf("evm: cumulative tx count before block %d: %w", num, err)
		}
	}
	w.cumTxs += int64(len(w.b.txs))
	w.cumAt = num + 1
	w.blocks.args[len(w.blocks.args)-1] = w.cumTxs
	return nil
}

// balances adds the block's deltas to the current balances (cached, or read
// for the keys not cached) and queues the current and history rows.
func (w *writer) balances(ctx context.Context, tx *store.Tx) error {
	num := i64(w.b.number)

	// Native.
	w.keysN = w.keysN[:0]
	clear(w.idxN)
	w.oldN = w.oldN[:0]
	for a, d := range w.natives {
		if d.Sign() == 0 {
			continue
		}
		if cur := current(w.cacheN, w.dirtyN, w.flushedN, a); cur != nil {
			cur.Add(cur, d)
			w.queueNative(a, cur, num)
			continue
		}
		w.idxN[string(a[:])] = len(w.keysN)
		w.keysN = append(w.keysN, a)
		w.oldN = append(w.oldN, nil)
	}
	if err := w.readNatives(ctx, tx); err != nil {
		return err
	}
	for i, a := range w.keysN {
		bal := new(big.Int).Set(w.natives[a])
		if old := w.oldN[i]; old != nil {
			bal.Add(bal, old)
		}
		w.cacheN[a] = bal
		w.queueNative(a, bal, num)
	}

	// Tokens.
	w.keysT = w.keysT[:0]
	clear(w.strsT)
	w.oldT = w.oldT[:0]
	for k, d := range w.tokens {
		if d.Sign() == 0 {
			continue
		}
		if cur := current(w.cacheT, w.dirtyT, w.flushedT, k); cur != nil {
			entering := w.entering(k, cur)
			cur.Add(cur, d)
			w.queueToken(k, cur, num, entering)
			continue
		}
		w.strsT[tokenKeyStr{string(k.holder[:]), k.typ.String(), string(k.token[:]), k.id}] = len(w.keysT)
		w.keysT = append(w.keysT, k)
		w.oldT = append(w.oldT, nil)
	}
	if err := w.readTokenBalances(ctx, tx); err != nil {
		return err
	}
	for i, k := range w.keysT {
		bal := new(big.Int).Set(w.tokens[k])
		entering := w.entering(k, w.oldT[i])
		if old := w.oldT[i]; old != nil {
			bal.Add(bal, old)
		}
		w.cacheT[k] = bal
		w.queueToken(k, bal, num, entering)
	}
	return nil
}

// readNatives fills oldN with the stored balances of keysN (nil: none).
// SQLite runs in-process: point reads on one prepared statement are cheapest.
// PostgreSQL gets one round trip.
func (w *writer) readNatives(ctx context.Context, tx *store.Tx) error {
	n := len(w.keysN)
	if n == 0 || w.complete {
		return nil
	}
	if tx.Dialect() == store.SQLite {
		for i, a := range w.keysN {
			var s string
			err := tx.QueryRow(ctx, selNativeOne, w.chain, w.raw(a)).Scan(&s)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return fmt.Errorf("evm: read native balance: %w", err)
			}
			if w.oldN[i], err = w.parseBalance(s); err != nil {
				return fmt.Errorf("evm: native balance of %s: %w", a.Hex(), err)
			}
		}
		return nil
	}
	addrs := make([][]byte, n)
	for i, a := range w.keysN {
		addrs[i] = w.raw(a)
	}
	return w.readNative(ctx, tx, selNativePG, w.chain, addrs)
}

// readTokenBalances fills oldT with the stored balances of keysT (nil: none).
func (w *writer) readTokenBalances(ctx context.Context, tx *store.Tx) error {
	n := len(w.keysT)
	if n == 0 || w.complete {
		return nil
	}
	if tx.Dialect() == store.SQLite {
		for i, k := range w.keysT {
			var s string
			err := tx.QueryRow(ctx, selTokenOne, w.chain, w.raw(k.holder), k.typ.String(), w.raw(k.token), k.id).Scan(&s)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return fmt.Errorf("evm: read token balance: %w", err)
			}
			if w.oldT[i], err = w.parseBalance(s); err != nil {
				return fmt.Errorf("evm: balance of %s in %s: %w", k.holder.Hex(), k.token.Hex(), err)
			}
		}
		return nil
	}
	holders, types, tokens, ids := make([][]byte, n), make([]string, n), make([][]byte, n), make([]string, n)
	for i, k := range w.keysT {
		holders[i], types[i], tokens[i], ids[i] = w.raw(k.holder), k.typ.String(), w.raw(k.token), k.id
	}
	return w.readTokens(ctx, tx, selTokenPG, w.chain, holders, types, tokens, ids)
}

func (w *writer) parseBalance(s string) (*big.Int, error) {
	v := w.newBig()
	if _, ok := v.SetString(s, 10); !ok {
		return nil, fmt.Errorf("stored balance %q is not a decimal", s)
	}
	return v, nil
}

func (w *writer) queueNative(a common.Address, bal *big.Int, num int64) {
	if bal.Sign() < 0 {
		// Value moved by internal transfers (no traces) is missing from the index.
		w.log.Warn("computed native balance is negative", "block", num, "address", w.addr(a), "balance", bal.String())
	}
	w.natHist.args = append(w.natHist.args, w.raw(a), decimal(bal))
	w.dirtyN[a] = dirtyBalance{bal: bal, block: num}
}

// entering is k's balance before a change (old; nil: none) as its bucket
// span's entering balance, when the span starts with it: k not yet changed
// in the batch, and a balance rather than an NFT id's. Otherwise, or
// without a balance before, "".
func (w *writer) entering(k tokenKey, old *big.Int) string {
	if _, dirty := w.dirtyT[k]; dirty || k.id != "" || old == nil {
		return ""
	}
	return decimal(old)
}

func (w *writer) queueToken(k tokenKey, bal *big.Int, num int64, entering string) {
	if bal.Sign() < 0 {
		// The token moved value without Transfer events (rebasing, fee-on-transfer bugs, ...).
		w.log.Warn("computed token balance is negative", "block", num, "holder", w.addr(k.holder),
			"token", w.addr(k.token), "type", k.typ.String(), "id", k.id, "balance", bal.String())
	}
	dec := decimal(bal)
	w.tokHist.args = append(w.tokHist.args, w.raw(k.holder), k.typ.String(), w.raw(k.token), k.id, dec)
	// The batch's maximum as the decimal already made for the history row
	// (bal is updated in place by later blocks).
	d, dirty := w.dirtyT[k]
	m := d.max
	if bal.Sign() >= 0 && greaterDecimal(dec, m) {
		m = dec
	}
	nd := dirtyBalance{bal: bal, block: num, max: m}
	if k.id == "" {
		nd.span = spanAfter(d, dirty, entering, dec, num>>w.bucketBits, num, k, &w.closedSpans)
	}
	w.dirtyT[k] = nd
}

// current is k's current balance if known without a read (cached, changed
// in this batch or flushed by the last), to be updated in place; nil
// otherwise.
func current[K comparable](cache map[K]*big.Int, dirty, flushed map[K]dirtyBalance, k K) *big.Int {
	if v, ok := cache[k]; ok {
		return v
	}
	d, ok := dirty[k]
	if !ok {
		d, ok = flushed[k]
	}
	if ok {
		cache[k] = d.bal
		return d.bal
	}
	return nil
}

// flushBalances writes the current balances changed since the last flush,
// one row per key with the block of its last change, and the NFT ids' rows
// (dirtyNFT), in key order (rows next to each other in the table's B-tree
// are written together): one statement per table and batch, where a
// per-block upsert cost a statement per block (issue #22).
func (w *writer) flushBalances(ctx context.Context, tx *store.Tx) error {
	if len(w.dirtyN) == 0 && len(w.dirtyT) == 0 && len(w.dirtyNFT) == 0 {
		return nil
	}
	w.natBal.reset()
	w.tokBal.reset()
	w.nftRows.reset()
	w.spans.reset()
	w.natBal.blockArgs = append(w.natBal.blockArgs, w.chain)
	w.tokBal.blockArgs = append(w.tokBal.blockArgs, w.chain)
	w.nftRows.blockArgs = append(w.nftRows.blockArgs, w.chain)
	w.spans.blockArgs = append(w.spans.blockArgs, w.chain)
	w.queueSpans()

	type natRow struct {
		addr common.Address
		bal  dirtyBalance
	}
	nat := make([]natRow, 0, len(w.dirtyN))
	for a, d := range w.dirtyN {
		nat = append(nat, natRow{a, d})
	}
	slices.SortFunc(nat, func(a, b natRow) int { return bytes.Compare(a.addr[:], b.addr[:]) })
	for i := range nat {
		r := &nat[i]
		w.natBal.args = append(w.natBal.args, r.addr[:], decimal(r.bal.bal), r.bal.block)
	}

	type tokRow struct {
		k   tokenKey
		bal dirtyBalance
	}
	tok := make([]tokRow, 0, len(w.dirtyT))
	for k, d := range w.dirtyT {
		tok = append(tok, tokRow{k, d})
	}
	slices.SortFunc(tok, func(a, b tokRow) int {
		return cmp.Or(bytes.Compare(a.k.holder[:], b.k.holder[:]), cmp.Compare(a.k.typ.String(), b.k.typ.String()),
			bytes.Compare(a.k.token[:], b.k.token[:]), cmp.Compare(a.k.id, b.k.id))
	})
	for i := range tok {
		r := &tok[i]
		w.tokBal.args = append(w.tokBal.args, r.k.holder[:], r.k.typ.String(), r.k.token[:], r.k.id, decimal(r.bal.bal), r.bal.block, r.bal.max)
	}
	nfts := slices.SortedFunc(maps.Keys(w.dirtyNFT), func(a, b nftKey) int {
		return cmp.Or(bytes.Compare(a.token[:], b.token[:]), cmp.Compare(a.id, b.id))
	})
	for _, k := range nfts {
		d := w.dirtyNFT[k]
		w.nftRows.args = append(w.nftRows.args, hexString(k.token[:]), k.id, d.typ, d.owner, d.ownerBlock, d.firstBlock)
	}
	w.flushedN, w.dirtyN = w.dirtyN, w.flushedN
	w.flushedT, w.dirtyT = w.dirtyT, w.flushedT
	clear(w.dirtyN)
	clear(w.dirtyT)
	clear(w.dirtyNFT)

	sets := []*rowSet{&w.tokBal, &w.natBal, &w.nftRows, &w.spans}
	if tx.Dialect() == store.Postgres {
		// The token balances now: the NFT holder rollup reads them in the
		// batch's transaction (internal/metrics); the rest at the commit.
		if err := w.pg.write(ctx, tx, sets[:1]); err != nil {
			return err
		}
		return w.pg.writeAtCommit(ctx, tx, sets[1:])
	}
	for _, r := range sets {
		if err := r.flush(ctx, tx); err != nil {
			return err
		}
	}
	return nil
}

// readNative and readTokens read the current balances (PostgreSQL) outside
// the batch's transaction (store.Tx.QueryCommitted): the batch writes them
// only at its Flush, and its connection may be busy with the batch's queued
// COPYs (pgWriter), which these reads need not wait for; nor for the
// previous batch's commit: the keys it changed are in memory (flushedN,
// flushedT), the others' committed rows are current.
func (w *writer) readNative(ctx context.Context, tx *store.Tx, q string, args ...any) error {
	rows, err := tx.QueryCommitted(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("evm: read native balances: %w", err)
	}
	defer rows.Close()
	var addr, bal string // addr: the stored bytes
	for rows.Next() {
		if err := rows.Scan(&addr, &bal); err != nil {
			return fmt.Errorf("evm: read native balances: %w", err)
		}
		i, ok := w.idxN[addr]
		if !ok {
			continue
		}
		v := w.newBig()
		if _, ok := v.SetString(bal, 10); !ok {
			return fmt.Errorf("evm: stored native balance of %s is %q", hexString([]byte(addr)), bal)
		}
		w.oldN[i] = v
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("evm: read native balances: %w", err)
	}
	return nil
}

func (w *writer) readTokens(ctx context.Context, tx *store.Tx, q string, args ...any) error {
	rows, err := tx.QueryCommitted(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("evm: read token balances: %w", err)
	}
	defer rows.Close()
	var k tokenKeyStr
	var bal string
	for rows.Next() {
		if err := rows.Scan(&k.holder, &k.typ, &k.token, &k.id, &bal); err != nil {
			return fmt.Errorf("evm: read token balances: %w", err)
		}
		i, ok := w.strsT[k]
		if !ok {
			continue
		}
		v := w.newBig()
		if _, ok := v.SetString(bal, 10); !ok {
			return fmt.Errorf("evm: stored balance of %s in %s is %q", hexString([]byte(k.holder)), hexString([]byte(k.token)), bal)
		}
		w.oldT[i] = v
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("evm: read token balances: %w", err)
	}
	return nil
}
