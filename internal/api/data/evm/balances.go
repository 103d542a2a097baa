package evm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Balances are read as of one block N: the requested blockNumber, or the
// indexed tip on the first page (kept in the page token, so every page of a
// listing answers for the same block). Current rows (evm_token_balances)
// whose last change is at or before N are N's balance as they are; a row
// changed after N is replaced by the last history row at or before N. Zero
// balances are not listed.

const (
	ercERC20   = "ERC-20"
	ercERC721  = "ERC-721"
	ercERC1155 = "ERC-1155"
)

// balanceCursor continues a balance listing: the block it answers for and
// the last (contract, token id, ercType) returned.
type balanceCursor struct {
	Block   int64  `json:"n"`
	Token   string `json:"a"`
	TokenID string `json:"i,omitempty"`
	ErcType string `json:"e,omitempty"`
}

// nativeBalance is address's native balance after block n: the index's,
// or the node's where the index's may be wrong (nodebalance.go).
func (h *handlers) nativeBalance(ctx context.Context, q *chainReq, n int64) (NativeTokenBalance, error) {
	t := h.nativeToken(q.chain)
	since, untrusted, err := h.untrustedSince(ctx, q)
	if err != nil {
		return NativeTokenBalance{}, err
	}
	if untrusted && since <= n {
		bal, err := h.nodeBalance(ctx, q, n)
		if err != nil {
			return NativeTokenBalance{}, err
		}
		return NativeTokenBalance{Name: t.Name, Symbol: t.Symbol, Decimals: t.Decimals, LogoURI: t.LogoURI,
			ChainID: q.chain.EVMChainID, Balance: bal}, nil
	}
	var bal string
	err = h.d.DB.QueryRowContext(ctx, `SELECT balance FROM evm_native_balance_history
		WHERE chain_key = $1 AND address = $2 AND block_number <= $3
		ORDER BY block_number DESC LIMIT 1`, q.chain.Key, store.Hex(q.addr), n).Scan(&bal) // $N in order of appearance
	switch {
	case errors.Is(err, sql.ErrNoRows):
		bal = "0"
	case err != nil:
		return NativeTokenBalance{}, fmt.Errorf("native balance of %s: %w", q.addr, err)
	}
	return NativeTokenBalance{Name: t.Name, Symbol: t.Symbol, Decimals: t.Decimals, LogoURI: t.LogoURI,
		ChainID: q.chain.EVMChainID, Balance: bal}, nil
}

func (h *handlers) getNative(r *http.Request) (any, error) {
	q, err := h.begin(r, "address")
	if err != nil {
		return nil, err
	}
	n := blockNumberParam(q.p, q.tip)
	currency := currencyParam(q.p)
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	nb, err := h.nativeBalance(r.Context(), q, n)
	if err != nil {
		return nil, err
	}
	h.priceNative(r.Context(), q, &nb, currency)
	return GetNativeBalanceResponse{NativeTokenBalance: nb}, nil
}

// balancePage is what the balance listings share: the block, page size and
// cursor.
type balancePage struct {
	n     int64
	limit int
	after *balanceCursor
	route string
	key   string
}

func (h *handlers) balancePage(q *chainReq, route string, withBlock bool, extra ...string) balancePage {
	bp := balancePage{n: q.tip, route: route, key: filterKey(q, extra...)}
	if withBlock {
		bp.n = blockNumberParam(q.p, q.tip)
	}
	bp.limit = q.p.PageSize(defaultPageSize, 1, maxBalancePage)
	var c balanceCursor
	if h.pageCursor(q.p, route, bp.key, &c) {
		if c.Block < 0 || c.Block > q.tip {
			q.p.Fail("pageToken is invalid")
		}
		bp.n = c.Block
		bp.after = &c
	}
	return bp
}

func (bp *balancePage) next(h *handlers, c balanceCursor) string {
	c.Block = bp.n
	return h.d.Pager.Encode(bp.route, bp.key, c)
}

// contractAddressesParam reads contractAddresses (comma list, at most
// api.MaxListItems EVM addresses), lowercased and deduplicated.
func contractAddressesParam(p *api.Params) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range p.List("contractAddresses") {
		a := addressParam(p, "contractAddresses", v)
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

func (h *handlers) listErc20(r *http.Request) (any, error) {
	q, err := h.begin(r, "address")
	if err != nil {
		return nil, err
	}
	contracts := contractAddressesParam(q.p)
	// Spam: tokens the enrichment judged Malicious (enrich_token_reputation).
	filterSpam := q.p.Bool("filterSpamTokens", true)
	currency := currencyParam(q.p)
	bp := h.balancePage(q, "evm.listErc20", true)
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	nb, err := h.nativeBalance(ctx, q, bp.n)
	if err != nil {
		return nil, err
	}
	resp := ListErc20BalancesResponse{NativeTokenBalance: nb, Erc20TokenBalances: []Erc20TokenBalance{}}

	vals := map[string]any{"chain": q.chain.Key, "holder": store.Hex(q.addr), "n": bp.n, "limit": bp.limit + 1}
	cond := ""
	if bp.after != nil {
		vals["after"] = store.Hex(bp.after.Token)
		cond += " AND b.token > @after"
	}
	if len(contracts) > 0 {
		cond += " AND b.token IN (" + inHexList(vals, "c", contracts) + ")"
	}
	spam := ""
	if filterSpam {
		spam = " AND (rep.reputation IS NULL OR rep.reputation <> 'Malicious')"
	}
	// Tokens whose computed balances may be wrong at N: listed from the
	// rows the index has (zero or not), with the node's balanceOf.
	untrusted, err := h.untrustedTokensAt(ctx, q, bp.n)
	if err != nil {
		return nil, err
	}
	nonZero := "x.bal <> '0'"
	if len(untrusted) > 0 {
		list := make([]string, 0, len(untrusted))
		for a := range untrusted {
			list = append(list, a)
		}
		sort.Strings(list)
		nonZero = "(x.bal <> '0' OR x.token IN (" + inHexList(vals, "u", list) + "))"
	}
	token := h.d.DB.Dialect().HexExpr("x.token") // contracts and enrichment key addresses by text
	rows, err := h.query(ctx, `SELECT x.token, x.bal, c.name, c.symbol, c.decimals, rep.reputation FROM (
		SELECT b.chain_key, b.token,
			CASE WHEN b.block_number <= @n THEN b.balance ELSE (
				SELECT hb.balance FROM evm_token_balance_history hb
				WHERE hb.chain_key = b.chain_key AND hb.holder = b.holder AND hb.erc_type = b.erc_type
					AND hb.token = b.token AND hb.token_id = b.token_id AND hb.block_number <= @n
				ORDER BY hb.block_number DESC LIMIT 1) END AS bal
		FROM evm_token_balances b
		WHERE b.chain_key = @chain AND b.holder = @holder AND b.erc_type = 'ERC-20' AND b.token_id = ''`+cond+`
	) x LEFT JOIN evm_contracts c ON c.chain_key = x.chain_key AND c.address = `+token+`
	LEFT JOIN enrich_token_reputation rep ON rep.chain_key = x.chain_key AND rep.address = `+token+`
	WHERE x.bal IS NOT NULL AND `+nonZero+spam+`
	ORDER BY x.token LIMIT @limit`, vals)
	if err != nil {
		return nil, fmt.Errorf("erc-20 balances of %s: %w", q.addr, err)
	}
	defer rows.Close()
	read, last := 0, ""
	for rows.Next() {
		var b Erc20TokenBalance
		var name, symbol, rep sql.NullString
		var dec sql.NullInt64
		if err := rows.Scan(store.ScanHex(&b.Address), &b.Balance, &name, &symbol, &dec, &rep); err != nil {
			return nil, fmt.Errorf("erc-20 balances of %s: %w", q.addr, err)
		}
		if read++; read > bp.limit {
			resp.NextPageToken = bp.next(h, balanceCursor{Token: last})
			break
		}
		last = b.Address
		if untrusted[b.Address] {
			if b.Balance, err = h.nodeTokenBalance(ctx, q, b.Address, bp.n); err != nil {
				return nil, err
			}
			if b.Balance == "0" {
				continue
			}
		}
		b.Name, b.Symbol, b.Decimals, b.decimalsKnown = name.String, symbol.String, int(dec.Int64), dec.Valid
		b.ErcType, b.ChainID = ercERC20, q.chain.EVMChainID
		if rep.Valid {
			b.TokenReputation = &rep.String
		}
		resp.Erc20TokenBalances = append(resp.Erc20TokenBalances, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("erc-20 balances of %s: %w", q.addr, err)
	}
	h.enrichErc20(ctx, q, &resp, currency)
	return resp, nil
}

// singleContractParam reads contractAddress (one EVM address).
func singleContractParam(p *api.Params) string {
	v := p.String("contractAddress")
	if v == "" {
		return ""
	}
	return addressParam(p, "contractAddress", v)
}

func (h *handlers) listErc721(r *http.Request) (any, error) {
	q, err := h.begin(r, "address")
	if err != nil {
		return nil, err
	}
	contract := singleContractParam(q.p)
	bp := h.balancePage(q, "evm.listErc721", false)
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	nb, err := h.nativeBalance(ctx, q, bp.n)
	if err != nil {
		return nil, err
	}
	items, err := h.erc721Owned(ctx, q, bp, contract, true)
	if err != nil {
		return nil, err
	}
	h.priceNative(ctx, q, &nb, "usd") // the route has no currency parameter
	resp := ListErc721BalancesResponse{NativeTokenBalance: nb, Erc721TokenBalances: items}
	if len(items) > bp.limit {
		resp.Erc721TokenBalances = items[:bp.limit]
		last := items[bp.limit-1]
		resp.NextPageToken = bp.next(h, balanceCursor{Token: last.Address, TokenID: last.TokenID, ErcType: ercERC721})
	}
	return resp, nil
}

// erc721Owned reads up to bp.limit+1 ERC-721 tokens owned by q.addr after
// block bp.n, in (contract, token id) order after the cursor. Ownership at
// N is the last owner-history row at or before N: a row of q.addr with no
// later row up to N. inclusive also returns the cursor's own (contract,
// token id) (the collectibles merge, where ERC-1155 sorts first).
func (h *handlers) erc721Owned(ctx context.Context, q *chainReq, bp balancePage, contract string, strict bool) ([]Erc721Token, error) {
	token := h.d.DB.Dialect().HexExpr("o.token") // NFT rows and contracts key addresses by text
	vals := map[string]any{"chain": q.chain.Key, "owner": store.Hex(q.addr), "n": bp.n, "limit": bp.limit + 1}
	cond := ""
	if bp.after != nil {
		vals["token"], vals["id"] = store.Hex(bp.after.Token), bp.after.TokenID
		op := ">"
		if !strict {
			op = ">="
		}
		cond += " AND (o.token, o.token_id) " + op + " (@token, @id)"
	}
	if contract != "" {
		vals["contract"] = store.Hex(contract)
		cond += " AND o.token = @contract"
	}
	// The owner index pinned on SQLite: the history is clustered by block
	// (migration 0200), and without statistics SQLite read it by block range.
	rows, err := h.query(ctx, `SELECT o.token, o.token_id, n.token_uri, COALESCE(n.metadata_status, ''),
			n.metadata, COALESCE(n.metadata_updated_at, 0), c.name, c.symbol
		FROM evm_nft_owner_history o`+h.d.DB.IndexedBy(ctx, "evm_nft_owner_history_owner")+`
		LEFT JOIN evm_nft_tokens n ON n.chain_key = o.chain_key AND n.token = `+token+` AND n.token_id = o.token_id
		LEFT JOIN evm_contracts c ON c.chain_key = o.chain_key AND c.address = `+token+`
		WHERE o.chain_key = @chain AND o.owner = @owner AND o.block_number <= @n`+cond+`
			AND NOT EXISTS (SELECT 1 FROM evm_nft_owner_history o2
				WHERE o2.chain_key = o.chain_key AND o2.token = o.token AND o2.token_id = o.token_id
					AND o2.block_number > o.block_number AND o2.block_number <= @n)
		ORDER BY o.token, o.token_id LIMIT @limit`, vals)
	if err != nil {
		return nil, fmt.Errorf("erc-721 balances of %s: %w", q.addr, err)
	}
	defer rows.Close()
	out := []Erc721Token{}
	for rows.Next() {
		var t Erc721Token
		var uri, doc, name, symbol sql.NullString
		var status string
		var updated int64
		if err := rows.Scan(store.ScanHex(&t.Address), &t.TokenID, &uri, &status, &doc, &updated, &name, &symbol); err != nil {
			return nil, fmt.Errorf("erc-721 balances of %s: %w", q.addr, err)
		}
		t.Name, t.Symbol, t.TokenURI = name.String, symbol.String, uri.String
		t.ErcType, t.OwnerAddress, t.ChainID = ercERC721, q.addr, q.chain.EVMChainID
		t.Metadata = tokenMetadataAt(status, doc.String, false, updated)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("erc-721 balances of %s: %w", q.addr, err)
	}
	return out, nil
}

func (h *handlers) listErc1155(r *http.Request) (any, error) {
	q, err := h.begin(r, "address")
	if err != nil {
		return nil, err
	}
	contract := singleContractParam(q.p)
	bp := h.balancePage(q, "evm.listErc1155", true)
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	nb, err := h.nativeBalance(ctx, q, bp.n)
	if err != nil {
		return nil, err
	}
	items, err := h.erc1155Held(ctx, q, bp, contract)
	if err != nil {
		return nil, err
	}
	h.priceNative(ctx, q, &nb, "usd") // the route has no currency parameter
	resp := ListErc1155BalancesResponse{NativeTokenBalance: nb, Erc1155TokenBalances: items}
	if len(items) > bp.limit {
		resp.Erc1155TokenBalances = items[:bp.limit]
		last := items[bp.limit-1]
		resp.NextPageToken = bp.next(h, balanceCursor{Token: last.Address, TokenID: last.TokenID, ErcType: ercERC1155})
	}
	return resp, nil
}

// erc1155Held reads up to bp.limit+1 non-zero ERC-1155 balances of q.addr
// after block bp.n, in (contract, token id) order after the cursor.
func (h *handlers) erc1155Held(ctx context.Context, q *chainReq, bp balancePage, contract string) ([]Erc1155Token, error) {
	vals := map[string]any{"chain": q.chain.Key, "holder": store.Hex(q.addr), "n": bp.n, "limit": bp.limit + 1}
	cond := ""
	if bp.after != nil {
		vals["token"], vals["id"] = store.Hex(bp.after.Token), bp.after.TokenID
		cond += " AND (b.token, b.token_id) > (@token, @id)"
	}
	if contract != "" {
		vals["contract"] = store.Hex(contract)
		cond += " AND b.token = @contract"
	}
	rows, err := h.query(ctx, `SELECT x.token, x.token_id, x.bal, n.token_uri, COALESCE(n.metadata_status, ''), n.metadata,
		COALESCE(n.metadata_updated_at, 0) FROM (
		SELECT b.chain_key, b.token, b.token_id,
			CASE WHEN b.block_number <= @n THEN b.balance ELSE (
				SELECT hb.balance FROM evm_token_balance_history hb
				WHERE hb.chain_key = b.chain_key AND hb.holder = b.holder AND hb.erc_type = b.erc_type
					AND hb.token = b.token AND hb.token_id = b.token_id AND hb.block_number <= @n
				ORDER BY hb.block_number DESC LIMIT 1) END AS bal
		FROM evm_token_balances b
		WHERE b.chain_key = @chain AND b.holder = @holder AND b.erc_type = 'ERC-1155'`+cond+`
	) x LEFT JOIN evm_nft_tokens n ON n.chain_key = x.chain_key AND n.token = `+h.d.DB.Dialect().HexExpr("x.token")+` AND n.token_id = x.token_id
	WHERE x.bal IS NOT NULL AND x.bal <> '0'
	ORDER BY x.token, x.token_id LIMIT @limit`, vals)
	if err != nil {
		return nil, fmt.Errorf("erc-1155 balances of %s: %w", q.addr, err)
	}
	defer rows.Close()
	out := []Erc1155Token{}
	for rows.Next() {
		var t Erc1155Token
		var uri, doc sql.NullString
		var status string
		var updated int64
		if err := rows.Scan(store.ScanHex(&t.Address), &t.TokenID, &t.Balance, &uri, &status, &doc, &updated); err != nil {
			return nil, fmt.Errorf("erc-1155 balances of %s: %w", q.addr, err)
		}
		t.TokenURI, t.ErcType, t.ChainID = uri.String, ercERC1155, q.chain.EVMChainID
		t.Metadata = tokenMetadataAt(status, doc.String, true, updated)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("erc-1155 balances of %s: %w", q.addr, err)
	}
	return out, nil
}

// listCollectibles lists ERC-721 and ERC-1155 holdings together, ordered by
// (contract, token id, ercType): two keyset reads merged.
func (h *handlers) listCollectibles(r *http.Request) (any, error) {
	q, err := h.begin(r, "address")
	if err != nil {
		return nil, err
	}
	contract := singleContractParam(q.p)
	bp := h.balancePage(q, "evm.listCollectibles", false)
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	// ERC-1155 sorts before ERC-721 at the same (contract, token id): after
	// an ERC-1155 cursor, the ERC-721 item at the same key is still due.
	strict721 := bp.after == nil || bp.after.ErcType != ercERC1155
	nfts, err := h.erc721Owned(ctx, q, bp, contract, strict721)
	if err != nil {
		return nil, err
	}
	multi, err := h.erc1155Held(ctx, q, bp, contract)
	if err != nil {
		return nil, err
	}
	type item struct {
		token, id, typ string
		v              any
	}
	merged := make([]item, 0, len(nfts)+len(multi))
	i, j := 0, 0
	for i < len(nfts) || j < len(multi) {
		take721 := j == len(multi)
		if i < len(nfts) && j < len(multi) {
			a, b := nfts[i], multi[j]
			take721 = a.Address < b.Address || (a.Address == b.Address && a.TokenID < b.TokenID)
		}
		if take721 {
			merged = append(merged, item{nfts[i].Address, nfts[i].TokenID, ercERC721, nfts[i]})
			i++
		} else {
			merged = append(merged, item{multi[j].Address, multi[j].TokenID, ercERC1155, multi[j]})
			j++
		}
	}
	resp := ListCollectibleBalancesResponse{CollectibleBalances: []any{}}
	for k, it := range merged {
		if k == bp.limit {
			last := merged[k-1]
			resp.NextPageToken = bp.next(h, balanceCursor{Token: last.token, TokenID: last.id, ErcType: last.typ})
			break
		}
		resp.CollectibleBalances = append(resp.CollectibleBalances, it.v)
	}
	return resp, nil
}
