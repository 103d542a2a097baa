package evm

import (
	"context"
	"fmt"
	"math/big"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// blockCursor continues a chain's block listing, newest first: the tip
// bound of the first page and the last block number returned.
type blockCursor struct {
	Tip   int64 `json:"t"`
	Block int64 `json:"b"`
}

// blockCols are the evm_blocks columns of an EvmBlock, scanned by scanBlock.
const blockCols = `b.number, b.hash, b.parent_hash, b.timestamp, b.timestamp_ms, b.tx_count, b.gas_used, b.gas_limit,
	b.base_fee, b.block_gas_cost, b.min_delay_excess, b.cumulative_txs`

func scanBlock(rows interface{ Scan(...any) error }, chain api.ChainRef, extra ...any) (EvmBlock, error) {
	var b EvmBlock
	var num, tsMs, gasUsed, gasLimit, cum int64
	var baseFee, gasCost, minDelay string
	err := rows.Scan(append([]any{&num, store.ScanHex(&b.BlockHash), store.ScanHex(&b.ParentHash), &b.BlockTimestamp, &tsMs,
		&b.TxCount, &gasUsed, &gasLimit, &baseFee, &gasCost, &minDelay, &cum}, extra...)...)
	if err != nil {
		return b, err
	}
	b.ChainID = chain.EVMChainID
	b.BlockNumber = strconv.FormatInt(num, 10)
	if tsMs > 0 {
		b.BlockTimestampMilliseconds = &tsMs
	}
	if minDelay != "" {
		// A uint64 in the header; the document types it as a number.
		if v, err := strconv.ParseInt(minDelay, 10, 64); err == nil {
			b.BlockMinDelayExcess = &v
		}
	}
	b.GasUsed, b.GasLimit = strconv.FormatInt(gasUsed, 10), strconv.FormatInt(gasLimit, 10)
	// Before London (or on a chain without a base fee) the header has none:
	// no base fee was charged.
	b.BaseFee = cmpOr(baseFee, "0")
	// gasCost is the header's blockGasCost (coreth, subnet-evm): 0 once
	// ACP-176 dropped it, and on chains without it.
	b.GasCost = cmpOr(gasCost, "0")
	b.CumulativeTransactions = strconv.FormatInt(cum, 10)
	b.FeesSpent = "0"
	return b, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// blockFees sets FeesSpent of blocks (all of chain): the sum of each
// transaction's gasUsed × effective gas price (what its sender paid; on
// Avalanche EVM chains all of it is burned or goes to the coinbase), read
// from the blocks' transactions.
func (h *handlers) blockFees(ctx context.Context, chainKey string, blocks []EvmBlock) error {
	if len(blocks) == 0 {
		return nil
	}
	byNum := make(map[int64]*EvmBlock, len(blocks))
	lo, hi := int64(-1), int64(-1)
	for i := range blocks {
		n, _ := strconv.ParseInt(blocks[i].BlockNumber, 10, 64)
		if blocks[i].TxCount == 0 {
			continue
		}
		byNum[n] = &blocks[i]
		if lo < 0 || n < lo {
			lo = n
		}
		if n > hi {
			hi = n
		}
	}
	if len(byNum) == 0 {
		return nil
	}
	var cond string
	vals := map[string]any{"chain": chainKey}
	if lo == hi {
		cond = "t.block_number = @lo"
		vals["lo"] = lo
	} else if hi-lo < 4*int64(len(byNum)) {
		// A dense page (a listing): one range of the primary key.
		cond = "t.block_number BETWEEN @lo AND @hi"
		vals["lo"], vals["hi"] = lo, hi
	} else {
		// Scattered blocks (the cross-chain listing of a sparse chain).
		marks := make([]string, 0, len(byNum))
		for n := range byNum {
			name := "n" + strconv.Itoa(len(marks))
			vals[name] = n
			marks = append(marks, "@"+name)
		}
		cond = "t.block_number IN (" + strings.Join(marks, ", ") + ")"
	}
	rows, err := h.query(ctx, `SELECT t.block_number, t.gas_used, t.gas_price FROM evm_txs t
		WHERE t.chain_key = @chain AND `+cond, vals)
	if err != nil {
		return fmt.Errorf("fees of blocks %d..%d: %w", lo, hi, err)
	}
	defer rows.Close()
	sums := map[int64]*big.Int{}
	var fee, price big.Int
	for rows.Next() {
		var n, used int64
		var p string
		if err := rows.Scan(&n, &used, &p); err != nil {
			return fmt.Errorf("fees of blocks %d..%d: %w", lo, hi, err)
		}
		if _, ok := byNum[n]; !ok {
			continue
		}
		if _, ok := price.SetString(p, 10); !ok {
			return fmt.Errorf("block %d: stored gas price %q", n, p)
		}
		if sums[n] == nil {
			sums[n] = new(big.Int)
		}
		fee.SetInt64(used)
		sums[n].Add(sums[n], fee.Mul(&fee, &price))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("fees of blocks %d..%d: %w", lo, hi, err)
	}
	for n, s := range sums {
		byNum[n].FeesSpent = s.String()
	}
	return nil
}

// listBlocks answers /v1/chains/{chainId}/blocks: the chain's blocks, newest
// first.
func (h *handlers) listBlocks(r *http.Request) (any, error) {
	q, err := h.begin(r, "")
	if err != nil {
		return nil, err
	}
	const route = "evm.listBlocks"
	limit := q.p.PageSize(defaultPageSize, 1, maxListPage)
	key := filterKey(q)
	var c blockCursor
	after := h.pageCursor(q.p, route, key, &c)
	if after && (c.Tip < 0 || c.Tip > q.tip || c.Block < 0 || c.Block > c.Tip) {
		q.p.Fail("pageToken is invalid")
	}
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	hi := q.tip
	if after {
		hi = c.Block - 1
	} else {
		c.Tip = q.tip
	}
	resp := ListEvmBlocksResponse{Blocks: []EvmBlock{}}
	ctx := r.Context()
	rows, err := h.query(ctx, `SELECT `+blockCols+` FROM evm_blocks b
		WHERE b.chain_key = @chain AND b.number <= @hi ORDER BY b.number DESC LIMIT @limit`,
		map[string]any{"chain": q.chain.Key, "hi": hi, "limit": limit + 1})
	if err != nil {
		return nil, fmt.Errorf("blocks of %s: %w", q.chain.Key, err)
	}
	defer rows.Close()
	for rows.Next() {
		b, err := scanBlock(rows, q.chain)
		if err != nil {
			return nil, fmt.Errorf("blocks of %s: %w", q.chain.Key, err)
		}
		resp.Blocks = append(resp.Blocks, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("blocks of %s: %w", q.chain.Key, err)
	}
	if len(resp.Blocks) > limit {
		resp.Blocks = resp.Blocks[:limit]
		last, _ := strconv.ParseInt(resp.Blocks[limit-1].BlockNumber, 10, 64)
		resp.NextPageToken = h.d.Pager.Encode(route, key, blockCursor{Tip: c.Tip, Block: last})
	}
	return resp, h.blockFees(ctx, q.chain.Key, resp.Blocks)
}

// blockIDParam parses a block id: a block number (decimal, or 0x-hex) or a
// block hash (0x and 64 hex digits). Exactly one of num (>= 0) and hash is
// set; a malformed id is a 400 recorded in p.
func blockIDParam(p *api.Params, raw string) (num int64, hash string) {
	if len(raw) == 66 && (strings.HasPrefix(raw, "0x") || strings.HasPrefix(raw, "0X")) {
		if hh, err := api.ParseHash(raw); err == nil {
			return -1, strings.ToLower(hh.Hex())
		}
	}
	if n, ok := parseUint63(raw); ok {
		return n, ""
	}
	p.Fail("blockId must be a block number (decimal or 0x-hex) or a block hash (0x followed by 64 hex digits), got %q", short(raw))
	return -1, ""
}

// block finds one indexed block by number or hash at most q.tip (404 when
// not indexed).
func (h *handlers) block(ctx context.Context, q *chainReq, num int64, hash string) (EvmBlock, error) {
	cond, vals, idx := "b.number = @n", map[string]any{"n": num}, ""
	if hash != "" {
		// Without statistics SQLite would walk the primary key's range
		// (number <= tip) rather than seek the hash.
		cond, vals, idx = "b.hash = @hash", map[string]any{"hash": store.Hex(hash)}, h.d.DB.IndexedBy(ctx, "evm_blocks_hash")
	}
	vals["chain"], vals["tip"] = q.chain.Key, q.tip
	notFound := func() error {
		id := hash
		if id == "" {
			id = strconv.FormatInt(num, 10)
		}
		return api.NotFound("block %s is not indexed on chain %s (the last indexed block is %d)", id, q.chain.EVMChainID, q.tip)
	}
	rows, err := h.query(ctx, `SELECT `+blockCols+` FROM evm_blocks b`+idx+`
		WHERE b.chain_key = @chain AND `+cond+` AND b.number <= @tip`, vals)
	if err != nil {
		return EvmBlock{}, fmt.Errorf("block %d%s of %s: %w", num, hash, q.chain.Key, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return EvmBlock{}, fmt.Errorf("block %d%s of %s: %w", num, hash, q.chain.Key, err)
		}
		return EvmBlock{}, notFound()
	}
	b, err := scanBlock(rows, q.chain)
	if err != nil {
		return b, fmt.Errorf("block %d%s of %s: %w", num, hash, q.chain.Key, err)
	}
	rows.Close()
	blocks := []EvmBlock{b}
	if err := h.blockFees(ctx, q.chain.Key, blocks); err != nil {
		return b, err
	}
	return blocks[0], nil
}

// getBlock answers /v1/chains/{chainId}/blocks/{blockId}.
func (h *handlers) getBlock(r *http.Request) (any, error) {
	q, err := h.begin(r, "")
	if err != nil {
		return nil, err
	}
	num, hash := blockIDParam(q.p, r.PathValue("blockId"))
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	return h.block(r.Context(), q, num, hash)
}

// allBlocksCursor continues the cross-chain block listing, ordered by
// (timestamp desc, chain key asc, number desc): each chain's tip when the
// first page was asked, and the last block returned.
type allBlocksCursor struct {
	Tips  map[string]int64 `json:"t"`
	Time  int64            `json:"s"`
	Chain string           `json:"c"`
	Block int64            `json:"b"`
}

// listAllBlocks answers /v1/blocks (and the SDK's /v1/chains/allBlocks): the
// latest blocks of every indexed EVM chain, newest first. Each chain is read
// from its time index; the pages are merged here.
func (h *handlers) listAllBlocks(r *http.Request) (any, error) {
	p := api.NewParams(r)
	network := p.Enum("network", "", "mainnet", "fuji", "testnet")
	limit := p.PageSize(defaultPageSize, 1, maxListPage)
	const route = "evm.listAllBlocks"
	key := api.FilterKey(p.Values())
	var c allBlocksCursor
	after := h.pageCursor(p, route, key, &c)
	if err := p.Err(); err != nil {
		return nil, err
	}
	resp := ListEvmBlocksResponse{Blocks: []EvmBlock{}}
	if network != "" && h.d.Network.CheckNetwork(network) != nil {
		return resp, nil // another network: none of its chains is indexed here
	}
	ctx := r.Context()
	tips, err := h.evmTips(ctx, c.Tips, after)
	if err != nil {
		return nil, err
	}
	type item struct {
		b     EvmBlock
		chain api.ChainRef
		num   int64
	}
	var items []item
	for _, ch := range h.evmChains() {
		tip, ok := tips[ch.Key]
		if !ok {
			continue
		}
		vals := map[string]any{"chain": ch.Key, "tip": tip, "limit": limit + 1}
		cond := ""
		if after {
			vals["ts"] = c.Time
			switch {
			case ch.Key == c.Chain:
				vals["b"] = c.Block
				cond = " AND b.timestamp <= @ts AND b.number < @b"
			case ch.Key > c.Chain:
				cond = " AND b.timestamp <= @ts"
			default:
				cond = " AND b.timestamp < @ts"
			}
		}
		rows, err := h.query(ctx, `SELECT `+blockCols+` FROM evm_blocks b`+h.d.DB.IndexedBy(ctx, "evm_blocks_time")+`
			WHERE b.chain_key = @chain AND b.number <= @tip`+cond+`
			ORDER BY b.timestamp DESC, b.number DESC LIMIT @limit`, vals)
		if err != nil {
			return nil, fmt.Errorf("latest blocks of %s: %w", ch.Key, err)
		}
		for rows.Next() {
			b, err := scanBlock(rows, ch)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("latest blocks of %s: %w", ch.Key, err)
			}
			n, _ := strconv.ParseInt(b.BlockNumber, 10, 64)
			items = append(items, item{b: b, chain: ch, num: n})
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("latest blocks of %s: %w", ch.Key, err)
		}
	}
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if a.b.BlockTimestamp != b.b.BlockTimestamp {
			return a.b.BlockTimestamp > b.b.BlockTimestamp
		}
		if a.chain.Key != b.chain.Key {
			return a.chain.Key < b.chain.Key
		}
		return a.num > b.num
	})
	if len(items) > limit {
		last := items[limit-1]
		resp.NextPageToken = h.d.Pager.Encode(route, key, allBlocksCursor{Tips: tips, Time: last.b.BlockTimestamp, Chain: last.chain.Key, Block: last.num})
		items = items[:limit]
	}
	byChain := map[string][]int{}
	for i, it := range items {
		resp.Blocks = append(resp.Blocks, it.b)
		byChain[it.chain.Key] = append(byChain[it.chain.Key], i)
	}
	for k, idx := range byChain {
		page := make([]EvmBlock, len(idx))
		for j, i := range idx {
			page[j] = resp.Blocks[i]
		}
		if err := h.blockFees(ctx, k, page); err != nil {
			return nil, err
		}
		for j, i := range idx {
			resp.Blocks[i] = page[j]
		}
	}
	return resp, nil
}

// evmChains lists the indexed EVM chains in key order.
func (h *handlers) evmChains() []api.ChainRef {
	var out []api.ChainRef
	for _, c := range h.d.Network.Chain {
		if c.Kind == "EVM" {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// evmTips returns each EVM chain's bound for a cross-chain listing: its
// indexed tip now (first page), or the tips carried in the page token
// (later pages; a chain indexed since is left out until the next first
// page). Chains without an indexed block are absent.
func (h *handlers) evmTips(ctx context.Context, carried map[string]int64, after bool) (map[string]int64, error) {
	tips := map[string]int64{}
	for _, ch := range h.evmChains() {
		if after {
			if t, ok := carried[ch.Key]; ok && t >= 0 {
				tips[ch.Key] = t
			}
			continue
		}
		t, err := indexedTip(ctx, h.d.DB, ch.Key)
		if err != nil {
			return nil, err
		}
		if t >= 0 {
			tips[ch.Key] = t
		}
	}
	return tips, nil
}
