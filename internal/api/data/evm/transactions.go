package evm

import (
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/ava-labs/libevm/crypto"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// txCursor continues a native-transaction listing, newest first: the tip
// bound of the first page and the last (block, tx index) returned.
type txCursor struct {
	Tip   int64 `json:"t"`
	Block int64 `json:"b"`
	Index int64 `json:"i"`
}

// knownMethods names the selectors of the standard token interfaces
// (ERC-20, ERC-721, ERC-1155, WAVAX-style wrappers): the only calls the
// index can name without a verified ABI.
var knownMethods = func() map[string]string {
	sigs := []string{
		"transfer(address,uint256)", "approve(address,uint256)", "transferFrom(address,address,uint256)",
		"increaseAllowance(address,uint256)", "decreaseAllowance(address,uint256)",
		"mint(address,uint256)", "burn(uint256)", "burnFrom(address,uint256)",
		"safeTransferFrom(address,address,uint256)", "safeTransferFrom(address,address,uint256,bytes)",
		"setApprovalForAll(address,bool)", "safeMint(address,uint256)",
		"safeTransferFrom(address,address,uint256,uint256,bytes)",
		"safeBatchTransferFrom(address,address,uint256[],uint256[],bytes)",
		"deposit()", "withdraw(uint256)",
	}
	m := make(map[string]string, len(sigs))
	for _, s := range sigs {
		m["0x"+hex.EncodeToString(crypto.Keccak256([]byte(s))[:4])] = s
	}
	return m
}()

// callType classifies a transaction: a creation has no recipient; a call
// reaches an address the index knows as a contract (created by a
// transaction, or seen emitting a log); anything else moves native value.
// Code installed at genesis that never emitted a log is not known, so a
// call to it is reported as a native transfer.
func callType(to string, toIsContract bool) string {
	switch {
	case to == "":
		return CallContractCreation
	case toIsContract:
		return CallContractCall
	}
	return CallNativeTransfer
}

func (h *handlers) listNative(r *http.Request) (any, error) {
	q, err := h.begin(r, "address")
	if err != nil {
		return nil, err
	}
	const route = "evm.listNative"
	var c txCursor
	w, err := h.listWindow(q, route, &c, &c.Tip)
	if err != nil {
		return nil, err
	}
	lo, hi, limit, key, after := w.lo, w.hi, w.limit, w.key, w.after
	resp := ListNativeTransactionsResponse{Transactions: []NativeTransaction{}}
	if w.empty {
		return resp, nil
	}
	vals := map[string]any{"chain": q.chain.Key, "addr": store.Hex(q.addr), "lo": lo, "hi": hi, "limit": limit + 1}
	cond := " AND a.block_number <= @hi" // on later pages, the cursor (below hi) bounds the range
	if after {
		vals["b"], vals["i"] = c.Block, c.Index
		cond = " AND (a.block_number, a.tx_index) < (@b, @i)"
	}
	rows, err := h.query(r.Context(), `SELECT `+txCols+`
		FROM evm_address_txs a
		JOIN evm_txs t ON t.chain_key = a.chain_key AND t.block_number = a.block_number AND t.tx_index = a.tx_index`+h.txJoin()+`
		WHERE a.chain_key = @chain AND a.address = @addr AND a.block_number >= @lo`+cond+`
		ORDER BY a.block_number DESC, a.tx_index DESC LIMIT @limit`, vals)
	if err != nil {
		return nil, fmt.Errorf("native transactions of %s: %w", q.addr, err)
	}
	defer rows.Close()
	var last txKey
	for rows.Next() {
		if len(resp.Transactions) == limit {
			resp.NextPageToken = h.d.Pager.Encode(route, key, txCursor{Tip: c.Tip, Block: last.Block, Index: last.Index})
			break
		}
		var t NativeTransaction
		if t, last, err = scanTx(rows, q.chain); err != nil {
			return nil, fmt.Errorf("native transactions of %s: %w", q.addr, err)
		}
		resp.Transactions = append(resp.Transactions, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("native transactions of %s: %w", q.addr, err)
	}
	return resp, nil
}
