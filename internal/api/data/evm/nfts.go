package evm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// nftCursor continues a collection's token listing in numeric token-id
// order: the tip bound of the first page and the last token id returned
// (ordered by (length, digits), which is numeric order for canonical
// decimals; see 0007_evm_api.sql).
type nftCursor struct {
	Tip int64  `json:"t"`
	ID  string `json:"i"`
}

// nftRow is one evm_nft_tokens row with its contract's names.
type nftRow struct {
	id, typ, owner string
	uri, doc       sql.NullString
	status         string
	updated        int64 // metadata_updated_at
}

func (n *nftRow) token(addr string, info contractInfo) any {
	if n.typ == ercERC1155 {
		return Erc1155Token{Address: addr, ErcType: ercERC1155, TokenID: n.id, TokenURI: n.uri.String,
			Metadata: tokenMetadataAt(n.status, n.doc.String, true, n.updated)}
	}
	return Erc721Token{Address: addr, Name: info.name.String, Symbol: info.symbol.String, ErcType: ercERC721,
		TokenID: n.id, TokenURI: n.uri.String, Metadata: tokenMetadataAt(n.status, n.doc.String, false, n.updated), OwnerAddress: n.owner}
}

func (h *handlers) listNFTTokens(r *http.Request) (any, error) {
	q, err := h.begin(r, "address")
	if err != nil {
		return nil, err
	}
	const route = "evm.listNftTokens"
	limit := q.p.PageSize(defaultPageSize, 1, maxListPage)
	key := filterKey(q)
	var c nftCursor
	after := h.pageCursor(q.p, route, key, &c)
	if after {
		if _, ok := api.ParseTokenID(c.ID); !ok || c.Tip < 0 || c.Tip > q.tip {
			q.p.Fail("pageToken is invalid")
		}
	}
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	if !after {
		c.Tip = q.tip
	}
	ctx := r.Context()
	info, err := h.contractInfo(ctx, q.chain.Key, q.addr)
	if err != nil {
		return nil, err
	}
	resp := ListNftTokens{Tokens: []any{}}
	var rows []nftRow
	if !after {
		rows, err = h.nftTokens(ctx, q, c.Tip, byLength, nil, limit+1)
	} else {
		// Numeric order is (length, digits). A continued page is two index
		// ranges: the rest of the cursor's length, then the longer ids (a
		// row-value range over an index expression is not used by SQLite).
		rows, err = h.nftTokens(ctx, q, c.Tip, " AND LENGTH(n.token_id) = @len AND n.token_id > @id ORDER BY n.token_id",
			map[string]any{"len": int64(len(c.ID)), "id": c.ID}, limit+1)
		if err == nil && len(rows) <= limit {
			var more []nftRow
			more, err = h.nftTokens(ctx, q, c.Tip, " AND LENGTH(n.token_id) > @len"+byLength,
				map[string]any{"len": int64(len(c.ID))}, limit+1-len(rows))
			rows = append(rows, more...)
		}
	}
	if err != nil {
		return nil, err
	}
	for i := range rows {
		if i == limit {
			resp.NextPageToken = h.d.Pager.Encode(route, key, nftCursor{Tip: c.Tip, ID: rows[i-1].id})
			break
		}
		resp.Tokens = append(resp.Tokens, rows[i].token(q.addr, info))
	}
	return resp, nil
}

func (h *handlers) getNFTToken(r *http.Request) (any, error) {
	q, err := h.begin(r, "address")
	if err != nil {
		return nil, err
	}
	raw := r.PathValue("tokenId")
	id, ok := api.ParseTokenID(raw)
	if !ok {
		q.p.Fail("tokenId must be a token id (a decimal integer below 2^256), got %q", short(raw))
	}
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	var n nftRow
	err = h.d.DB.QueryRowContext(ctx, `SELECT token_id, erc_type, owner, token_uri, metadata, metadata_status, metadata_updated_at
		FROM evm_nft_tokens WHERE chain_key = $1 AND token = $2 AND token_id = $3`, q.chain.Key, q.addr, id).
		Scan(&n.id, &n.typ, &n.owner, &n.uri, &n.doc, &n.status, &n.updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, api.NotFound("token %s of collection %s is not indexed on chain %s (no transfer of it was seen)", id, q.addr, q.chain.EVMChainID)
	}
	if err != nil {
		return nil, fmt.Errorf("nft token %s/%s: %w", q.addr, id, err)
	}
	info, err := h.contractInfo(ctx, q.chain.Key, q.addr)
	if err != nil {
		return nil, err
	}
	return n.token(q.addr, info), nil
}

// byLength orders ids numerically (see 0007_evm_api.sql).
const byLength = " ORDER BY LENGTH(n.token_id), n.token_id"

// nftTokens reads up to limit tokens of collection q.addr first seen at or
// before tip; cond is the extra condition and the ORDER BY (within one
// length, the digits alone, so SQLite reads the index in order).
func (h *handlers) nftTokens(ctx context.Context, q *chainReq, tip int64, cond string, extra map[string]any, limit int) ([]nftRow, error) {
	// token keys the NFT rows (text), tokenKey the owner history (store.Hex).
	vals := map[string]any{"chain": q.chain.Key, "token": q.addr, "tokenKey": store.Hex(q.addr), "tip": tip, "limit": limit}
	for k, v := range extra {
		vals[k] = v
	}
	// The ERC-721 owner as of the listing's block (ERC-1155 ids have none).
	rows, err := h.query(ctx, `SELECT n.token_id, n.erc_type,
			(SELECT o.owner FROM evm_nft_owner_history o
				WHERE o.chain_key = n.chain_key AND o.token = @tokenKey AND o.token_id = n.token_id AND o.block_number <= @tip
				ORDER BY o.block_number DESC LIMIT 1),
			n.token_uri, n.metadata, n.metadata_status, n.metadata_updated_at
		FROM evm_nft_tokens n
		WHERE n.chain_key = @chain AND n.token = @token AND n.first_block <= @tip`+cond+` LIMIT @limit`, vals)
	if err != nil {
		return nil, fmt.Errorf("nft tokens of %s: %w", q.addr, err)
	}
	defer rows.Close()
	var out []nftRow
	for rows.Next() {
		var n nftRow
		if err := rows.Scan(&n.id, &n.typ, store.ScanHex(&n.owner), &n.uri, &n.doc, &n.status, &n.updated); err != nil {
			return nil, fmt.Errorf("nft tokens of %s: %w", q.addr, err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("nft tokens of %s: %w", q.addr, err)
	}
	return out, nil
}
