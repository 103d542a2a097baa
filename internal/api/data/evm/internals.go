package evm

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// Internal transactions are the nested call frames of traced blocks that the
// published document lists (evm_internal_txs, written by internal/decode/evm
// from debug_traceBlockByNumber): CALL and CALLCODE frames with a non-zero
// value, creations (CREATE, CREATE2, CREATE3), and selfdestructs paying out
// value (internalTxType UNKNOWN: the document's enum has no SELFDESTRUCT).
// The tx's own top-level call is not one: listNative has it. A chain indexed
// without traces has none; /v1/health-check and `permafrost status` say so.

// InternalTransaction is the published InternalTransaction.
type InternalTransaction struct {
	BlockNumber    string      `json:"blockNumber"`
	BlockTimestamp int64       `json:"blockTimestamp"`
	BlockHash      string      `json:"blockHash"`
	TxHash         string      `json:"txHash"`
	From           RichAddress `json:"from"`
	To             RichAddress `json:"to"`
	InternalTxType string      `json:"internalTxType"`
	Value          string      `json:"value"`
	IsReverted     bool        `json:"isReverted"`
	GasUsed        string      `json:"gasUsed"`
	GasLimit       string      `json:"gasLimit"`
}

// ListInternalTransactionsResponse is the published response of
// transactions:listInternals.
type ListInternalTransactionsResponse struct {
	NextPageToken string                `json:"nextPageToken,omitempty"`
	Transactions  []InternalTransaction `json:"transactions"`
}

// internalCursor continues an internal-transaction listing, newest first:
// the tip bound of the first page and the last (block, tx, frame) returned.
type internalCursor struct {
	Tip   int64 `json:"t"`
	Block int64 `json:"b"`
	Index int64 `json:"i"`
	Trace int64 `json:"f"`
}

// internalTxTypes maps stored call types to the document's enum.
var internalTxTypes = map[string]string{"CALL": "CALL", "CALLCODE": "CALLCODE", "DELEGATECALL": "DELEGATECALL",
	"STATICCALL": "STATICCALL", "CREATE": "CREATE", "CREATE2": "CREATE2", "CREATE3": "CREATE3"}

func (h *handlers) listInternals(r *http.Request) (any, error) {
	q, err := h.begin(r, "address")
	if err != nil {
		return nil, err
	}
	const route = "evm.listInternals"
	var c internalCursor
	w, err := h.listWindow(q, route, &c, &c.Tip)
	if err != nil {
		return nil, err
	}
	lo, hi, limit, key, after := w.lo, w.hi, w.limit, w.key, w.after
	resp := ListInternalTransactionsResponse{Transactions: []InternalTransaction{}}
	if w.empty {
		return resp, nil
	}
	vals := map[string]any{"chain": q.chain.Key, "addr": store.Hex(q.addr), "lo": lo, "hi": hi, "limit": limit + 1}
	cond := " AND a.block_number <= @hi"
	if after {
		vals["b"], vals["i"], vals["f"] = c.Block, c.Index, c.Trace
		cond = " AND (a.block_number, a.tx_index, a.trace_index) < (@b, @i, @f)"
	}
	rows, err := h.query(r.Context(), `SELECT a.block_number, a.tx_index, a.trace_index, i.block_time, i.block_hash,
			i.tx_hash, i.from_addr, i.to_addr, i.call_type, i.value, i.reverted, i.gas_used, i.gas
		FROM evm_address_internals a
		JOIN evm_internal_txs i ON i.chain_key = a.chain_key AND i.block_number = a.block_number
			AND i.tx_index = a.tx_index AND i.trace_index = a.trace_index
		WHERE a.chain_key = @chain AND a.address = @addr AND a.block_number >= @lo`+cond+`
		ORDER BY a.block_number DESC, a.tx_index DESC, a.trace_index DESC LIMIT @limit`, vals)
	if err != nil {
		return nil, fmt.Errorf("internal transactions of %s: %w", q.addr, err)
	}
	defer rows.Close()
	var last internalCursor
	for rows.Next() {
		if len(resp.Transactions) == limit {
			resp.NextPageToken = h.d.Pager.Encode(route, key, internalCursor{Tip: c.Tip, Block: last.Block, Index: last.Index, Trace: last.Trace})
			break
		}
		var t InternalTransaction
		var typ string
		var reverted, gasUsed, gas int64
		if err := rows.Scan(&last.Block, &last.Index, &last.Trace, &t.BlockTimestamp, store.ScanHex(&t.BlockHash),
			store.ScanHex(&t.TxHash), store.ScanHex(&t.From.Address), store.ScanHex(&t.To.Address), &typ, &t.Value,
			&reverted, &gasUsed, &gas); err != nil {
			return nil, fmt.Errorf("internal transactions of %s: %w", q.addr, err)
		}
		t.BlockNumber = strconv.FormatInt(last.Block, 10)
		t.InternalTxType = internalTxTypes[typ]
		if t.InternalTxType == "" {
			t.InternalTxType = "UNKNOWN"
		}
		t.IsReverted = reverted != 0
		t.GasUsed, t.GasLimit = strconv.FormatInt(gasUsed, 10), strconv.FormatInt(gas, 10)
		resp.Transactions = append(resp.Transactions, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("internal transactions of %s: %w", q.addr, err)
	}
	return resp, nil
}
