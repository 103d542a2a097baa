package evm

import (
	"context"
	"fmt"
	"net/http"
	"sort"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// statusParam reads status (the published TransactionStatus: failed,
// success) as the SQL condition on evm_txs t. failed is the literal the
// partial index evm_txs_failed is defined by.
func statusParam(p *api.Params) string {
	switch p.Enum("status", "", "failed", "success") {
	case "failed":
		return " AND t.status = 0"
	case "success":
		return " AND t.status = 1"
	}
	return ""
}

// scanTxs runs a query selecting txCols and reads its rows.
func (h *handlers) scanTxs(ctx context.Context, chain api.ChainRef, q string, vals map[string]any) ([]NativeTransaction, []txKey, error) {
	rows, err := h.query(ctx, q, vals)
	if err != nil {
		return nil, nil, fmt.Errorf("transactions of %s: %w", chain.Key, err)
	}
	defer rows.Close()
	var txs []NativeTransaction
	var keys []txKey
	for rows.Next() {
		t, k, err := scanTx(rows, chain)
		if err != nil {
			return nil, nil, fmt.Errorf("transactions of %s: %w", chain.Key, err)
		}
		txs, keys = append(txs, t), append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("transactions of %s: %w", chain.Key, err)
	}
	return txs, keys, nil
}

// listLatestTxs answers /v1/chains/{chainId}/transactions: the chain's
// transactions newest first, optionally only failed or successful ones.
func (h *handlers) listLatestTxs(r *http.Request) (any, error) {
	q, err := h.begin(r, "")
	if err != nil {
		return nil, err
	}
	const route = "evm.listLatestTxs"
	status := statusParam(q.p)
	limit := q.p.PageSize(defaultPageSize, 1, maxListPage)
	key := filterKey(q)
	var c txCursor
	after := h.pageCursor(q.p, route, key, &c)
	if after && (c.Tip < 0 || c.Tip > q.tip) {
		q.p.Fail("pageToken is invalid")
	}
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	if !after {
		c.Tip = q.tip
	}
	vals := map[string]any{"chain": q.chain.Key, "hi": c.Tip, "limit": limit + 1}
	cond := " AND t.block_number <= @hi"
	if after {
		vals["b"], vals["i"] = c.Block, c.Index
		cond = " AND (t.block_number, t.tx_index) < (@b, @i)"
	}
	idx := ""
	if status == " AND t.status = 0" {
		idx = h.d.DB.IndexedBy(r.Context(), "evm_txs_failed")
	}
	txs, keys, err := h.scanTxs(r.Context(), q.chain, `SELECT `+txCols+` FROM evm_txs t`+idx+h.txJoin()+`
		WHERE t.chain_key = @chain`+cond+status+`
		ORDER BY t.block_number DESC, t.tx_index DESC LIMIT @limit`, vals)
	if err != nil {
		return nil, err
	}
	resp := ListNativeTransactionsResponse{Transactions: []NativeTransaction{}}
	if len(txs) > limit {
		txs = txs[:limit]
		last := keys[limit-1]
		resp.NextPageToken = h.d.Pager.Encode(route, key, txCursor{Tip: c.Tip, Block: last.Block, Index: last.Index})
	}
	resp.Transactions = append(resp.Transactions, txs...)
	return resp, nil
}

// blockTxCursor continues a block's transaction listing in block order.
type blockTxCursor struct {
	Block int64 `json:"b"`
	Index int64 `json:"i"`
}

// listBlockTxs answers /v1/chains/{chainId}/blocks/{blockId}/transactions:
// the block's transactions in block order.
//
// The document gives pageSize a default and a minimum of 0, which would
// answer no transaction at all; its evident intent is a page of them, so 0
// and absent mean the default page size of every other listing (10).
func (h *handlers) listBlockTxs(r *http.Request) (any, error) {
	q, err := h.begin(r, "")
	if err != nil {
		return nil, err
	}
	const route = "evm.listBlockTxs"
	num, hash := blockIDParam(q.p, r.PathValue("blockId"))
	limit := q.p.PageSize(defaultPageSize, 0, maxListPage)
	if limit == 0 {
		limit = defaultPageSize
	}
	key := filterKey(q, "block="+r.PathValue("blockId"))
	var c blockTxCursor
	after := h.pageCursor(q.p, route, key, &c)
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	b, err := h.block(ctx, q, num, hash)
	if err != nil {
		return nil, err
	}
	var n int64
	fmt.Sscan(b.BlockNumber, &n)
	if after && c.Block != n {
		return nil, api.BadRequest("pageToken is invalid")
	}
	vals := map[string]any{"chain": q.chain.Key, "n": n, "after": int64(-1), "limit": limit + 1}
	if after {
		vals["after"] = c.Index
	}
	txs, keys, err := h.scanTxs(ctx, q.chain, `SELECT `+txCols+` FROM evm_txs t`+h.txJoin()+`
		WHERE t.chain_key = @chain AND t.block_number = @n AND t.tx_index > @after
		ORDER BY t.tx_index LIMIT @limit`, vals)
	if err != nil {
		return nil, err
	}
	resp := ListNativeTransactionsResponse{Transactions: []NativeTransaction{}}
	if len(txs) > limit {
		txs = txs[:limit]
		resp.NextPageToken = h.d.Pager.Encode(route, key, blockTxCursor{Block: n, Index: keys[limit-1].Index})
	}
	resp.Transactions = append(resp.Transactions, txs...)
	return resp, nil
}

// allTxsCursor continues the cross-chain transaction listing, ordered by
// (block time desc, chain key asc, block desc, index desc): each chain's tip
// when the first page was asked, and the last transaction returned.
type allTxsCursor struct {
	Tips  map[string]int64 `json:"t"`
	Time  int64            `json:"s"`
	Chain string           `json:"c"`
	Block int64            `json:"b"`
	Index int64            `json:"i"`
}

// listAllTxs answers /v1/transactions (and the SDK's /v1/chains/allTransactions):
// the latest transactions of every indexed EVM chain, newest first.
//
// A chain's transactions are read newest first along its primary key; block
// times never decrease with the block number (a consensus rule of coreth and
// subnet-evm), so "at or before time s" is "at or below the last block with
// a timestamp at most s", found in the blocks' time index.
func (h *handlers) listAllTxs(r *http.Request) (any, error) {
	p := api.NewParams(r)
	network := p.Enum("network", "", "mainnet", "fuji", "testnet")
	status := statusParam(p)
	limit := p.PageSize(defaultPageSize, 1, maxListPage)
	const route = "evm.listAllTxs"
	key := api.FilterKey(p.Values())
	var c allTxsCursor
	after := h.pageCursor(p, route, key, &c)
	if err := p.Err(); err != nil {
		return nil, err
	}
	resp := ListNativeTransactionsResponse{Transactions: []NativeTransaction{}}
	if network != "" && h.d.Network.CheckNetwork(network) != nil {
		return resp, nil
	}
	ctx := r.Context()
	tips, err := h.evmTips(ctx, c.Tips, after)
	if err != nil {
		return nil, err
	}
	idx := ""
	if status == " AND t.status = 0" {
		idx = h.d.DB.IndexedBy(ctx, "evm_txs_failed")
	}
	type item struct {
		t     NativeTransaction
		chain string
		k     txKey
	}
	var items []item
	for _, ch := range h.evmChains() {
		tip, ok := tips[ch.Key]
		if !ok {
			continue
		}
		vals := map[string]any{"chain": ch.Key, "tip": tip, "limit": limit + 1}
		cond := " AND t.block_number <= @tip"
		if after {
			vals["ts"] = c.Time
			switch {
			case ch.Key == c.Chain:
				vals["b"], vals["i"] = c.Block, c.Index
				cond += " AND (t.block_number, t.tx_index) < (@b, @i)"
			case ch.Key > c.Chain:
				cond += ` AND t.block_number <= (SELECT MAX(b.number) FROM evm_blocks b WHERE b.chain_key = @chain AND b.timestamp <= @ts)`
			default:
				cond += ` AND t.block_number <= (SELECT MAX(b.number) FROM evm_blocks b WHERE b.chain_key = @chain AND b.timestamp < @ts)`
			}
		}
		txs, keys, err := h.scanTxs(ctx, ch, `SELECT `+txCols+` FROM evm_txs t`+idx+h.txJoin()+`
			WHERE t.chain_key = @chain`+cond+status+`
			ORDER BY t.block_number DESC, t.tx_index DESC LIMIT @limit`, vals)
		if err != nil {
			return nil, err
		}
		for i := range txs {
			items = append(items, item{t: txs[i], chain: ch.Key, k: keys[i]})
		}
	}
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if a.t.BlockTimestamp != b.t.BlockTimestamp {
			return a.t.BlockTimestamp > b.t.BlockTimestamp
		}
		if a.chain != b.chain {
			return a.chain < b.chain
		}
		return b.k.less(a.k)
	})
	if len(items) > limit {
		last := items[limit-1]
		resp.NextPageToken = h.d.Pager.Encode(route, key, allTxsCursor{Tips: tips, Time: last.t.BlockTimestamp,
			Chain: last.chain, Block: last.k.Block, Index: last.k.Index})
		items = items[:limit]
	}
	for _, it := range items {
		resp.Transactions = append(resp.Transactions, it.t)
	}
	return resp, nil
}
