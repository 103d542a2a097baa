package evm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// transferCursor continues a transfer listing, newest first: the tip bound
// of the first page and the last (block, log index, batch index) returned.
type transferCursor struct {
	Tip   int64 `json:"t"`
	Block int64 `json:"b"`
	Log   int64 `json:"l"`
	Batch int64 `json:"x"`
}

// contractInfo is what the index knows of a contract's token metadata.
type contractInfo struct {
	known    bool
	ercType  string
	name     sql.NullString
	symbol   sql.NullString
	decimals sql.NullInt64
}

func (h *handlers) contractInfo(ctx context.Context, chainKey, addr string) (contractInfo, error) {
	var c contractInfo
	err := h.d.DB.QueryRowContext(ctx, `SELECT erc_type, name, symbol, decimals FROM evm_contracts
		WHERE chain_key = $1 AND address = $2`, chainKey, addr).Scan(&c.ercType, &c.name, &c.symbol, &c.decimals)
	if errors.Is(err, sql.ErrNoRows) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("contract %s: %w", addr, err)
	}
	c.known = true
	return c, nil
}

func (h *handlers) listTransfers(r *http.Request) (any, error) {
	q, err := h.begin(r, "address")
	if err != nil {
		return nil, err
	}
	const route = "evm.listTransfers"
	var c transferCursor
	w, err := h.listWindow(q, route, &c, &c.Tip)
	if err != nil {
		return nil, err
	}
	lo, hi, limit, key, after := w.lo, w.hi, w.limit, w.key, w.after
	resp := ListTransfersResponse{Transfers: []Transfer{}}
	if w.empty {
		return resp, nil
	}
	ctx := r.Context()
	info, err := h.contractInfo(ctx, q.chain.Key, q.addr)
	if err != nil {
		return nil, err
	}
	// t.token is @token: the NFT rows (text) are joined by its text form.
	vals := map[string]any{"chain": q.chain.Key, "token": store.Hex(q.addr), "tokenText": q.addr, "lo": lo, "hi": hi, "limit": limit + 1}
	// The upper bound is the keyset cursor on later pages (it is below hi),
	// so the index range starts at the cursor, not at hi.
	cond := " AND t.block_number <= @hi"
	if after {
		vals["b"], vals["l"], vals["x"] = c.Block, c.Log, c.Batch
		cond = " AND (t.block_number, t.log_index, t.batch_index) < (@b, @l, @x)"
	}
	rows, err := h.query(ctx, `SELECT t.block_number, t.log_index, t.batch_index, t.tx_hash, t.block_time, bl.hash,
			t.erc_type, t.from_addr, t.to_addr, t.token_id, t.value, n.token_uri, COALESCE(n.metadata_status, ''), n.metadata,
			COALESCE(n.metadata_updated_at, 0)
		FROM evm_transfers t`+h.d.DB.IndexedBy(ctx, "evm_transfers_token")+`
		JOIN evm_blocks bl ON bl.chain_key = t.chain_key AND bl.number = t.block_number
		LEFT JOIN evm_nft_tokens n ON n.chain_key = t.chain_key AND n.token = @tokenText AND n.token_id = t.token_id
			AND t.erc_type <> 'ERC-20'
		WHERE t.chain_key = @chain AND t.token = @token AND t.block_number >= @lo`+cond+`
		ORDER BY t.block_number DESC, t.log_index DESC, t.batch_index DESC LIMIT @limit`, vals)
	if err != nil {
		return nil, fmt.Errorf("transfers of %s: %w", q.addr, err)
	}
	defer rows.Close()
	var last transferCursor
	for rows.Next() {
		if len(resp.Transfers) == limit {
			resp.NextPageToken = h.d.Pager.Encode(route, key, transferCursor{Tip: c.Tip, Block: last.Block, Log: last.Log, Batch: last.Batch})
			break
		}
		var t Transfer
		var typ, tokenID, value, status string
		var uri, doc sql.NullString
		var updated int64
		if err := rows.Scan(&last.Block, &last.Log, &last.Batch, store.ScanHex(&t.TxHash), &t.BlockTimestamp, store.ScanHex(&t.BlockHash),
			&typ, store.ScanHex(&t.From.Address), store.ScanHex(&t.To.Address), &tokenID, &value, &uri, &status, &doc, &updated); err != nil {
			return nil, fmt.Errorf("transfers of %s: %w", q.addr, err)
		}
		t.BlockNumber = strconv.FormatInt(last.Block, 10)
		t.LogIndex = last.Log
		switch typ {
		case ercERC20:
			t.Value = &value
			t.Erc20Token = &Erc20Token{Address: q.addr, Name: info.name.String, Symbol: info.symbol.String,
				Decimals: int(info.decimals.Int64), ErcType: ercERC20}
		case ercERC721:
			t.Erc721Token = &Erc721Token{Address: q.addr, Name: info.name.String, Symbol: info.symbol.String,
				ErcType: ercERC721, TokenID: tokenID, TokenURI: uri.String, Metadata: tokenMetadataAt(status, doc.String, false, updated)}
		case ercERC1155:
			t.Value = &value
			t.Erc1155Token = &Erc1155Token{Address: q.addr, ErcType: ercERC1155, TokenID: tokenID, TokenURI: uri.String,
				Metadata: tokenMetadataAt(status, doc.String, true, updated)}
		default:
			return nil, fmt.Errorf("transfers of %s: unknown erc type %q at block %d log %d", q.addr, typ, last.Block, last.Log)
		}
		resp.Transfers = append(resp.Transfers, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("transfers of %s: %w", q.addr, err)
	}
	return resp, nil
}

// listWindow is what an address listing reads before its query: the block
// range (bounded by the tip the first page saw, which its page token
// carries), the page size and whether a page token was given (then decoded
// into the caller's cursor). empty: nothing to list.
type listWindow struct {
	lo, hi       int64
	limit        int
	key          string
	after, empty bool
}

// listWindow reads the window into w; cursor is the listing's page token
// type and tip its Tip field.
func (h *handlers) listWindow(q *chainReq, route string, cursor any, tip *int64) (listWindow, error) {
	var w listWindow
	var empty bool
	w.lo, w.hi, empty = blockRange(q.p, q.tip)
	w.limit = q.p.PageSize(defaultPageSize, 1, maxListPage)
	w.key = filterKey(q)
	w.after = h.pageCursor(q.p, route, w.key, cursor)
	if w.after && (*tip < 0 || *tip > q.tip) {
		q.p.Fail("pageToken is invalid")
	}
	if err := q.p.Err(); err != nil {
		return w, err
	}
	if !w.after {
		*tip = q.tip
	}
	w.hi = min(w.hi, *tip)
	w.empty = empty || w.lo > w.hi
	return w, nil
}
