package metrics

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/api"
	rollup "github.com/permafrost-dev/permafrost/internal/metrics"
)

// holdersCursor is a listHolders page token's stored state.
type holdersCursor struct {
	Chain    string              `json:"c"`
	Contract string              `json:"t"`
	After    rollup.HolderCursor `json:"h"`
}

// listHolders answers GET /v2/chains/{chainId}/contracts/{address}/nfts:listHolders:
// the current holders (balance > 0) of an ERC-721 or ERC-1155 contract with
// sortKey = the number of tokens held (ERC-1155: units summed over ids),
// ordered by sortKey descending, then address. totalHolders counts every
// holder and totalTokens is the sum of every holder's sortKey (for ERC-721,
// the tokens in existence outside the zero address).
func (h *handlers) listHolders(r *http.Request) (any, error) {
	ctx := r.Context()
	p := api.NewParams(r)
	addr, aerr := api.ParseEVMAddress(r.PathValue("address"))
	if aerr != nil {
		p.Fail("address: %s", aerr.Error())
	}
	size := p.PageSize(holdersDefaultPageSize, 1, holdersMaxPageSize)
	if err := p.Err(); err != nil {
		return nil, err
	}
	chain, err := h.d.Network.EVMChain(r.PathValue("chainId"))
	if err != nil {
		return nil, err
	}
	contract := strings.ToLower(addr.Hex())

	// The contract and its holder totals in one round trip.
	var ercType string
	var name, symbol sql.NullString
	coll := rollup.Collection{Units: "0"}
	var units sql.NullString
	var holdersN sql.NullInt64
	err = h.d.DB.QueryRowContext(ctx, `SELECT c.erc_type, c.name, c.symbol, m.holders, m.units
		FROM evm_contracts c LEFT JOIN metrics_nft_collections m ON m.chain_key = c.chain_key AND m.token = c.address
		WHERE c.chain_key = $1 AND c.address = $2`,
		chain.Key, contract).Scan(&ercType, &name, &symbol, &holdersN, &units)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, api.NotFound("contract %s is not known on chain %s", contract, chainLabel(chain))
	}
	if err != nil {
		return nil, fmt.Errorf("read contract %s: %w", contract, err)
	}
	if units.Valid { // no row yet: no holder ever
		coll = rollup.Collection{Holders: holdersN.Int64, Units: units.String}
	}
	if ercType != "ERC-721" && ercType != "ERC-1155" {
		what := "no token standard was detected for it"
		if ercType != "" {
			what = "it is an " + ercType + " contract"
		}
		return nil, api.BadRequest(fmt.Sprintf("address %s is not an NFT contract (ERC-721 or ERC-1155): %s", contract, what))
	}

	var cur holdersCursor
	found, err := h.d.Tokens.Load(ctx, p.String("pageToken"), RouteListHolders, &cur)
	if err != nil {
		return nil, err
	}
	var after *rollup.HolderCursor
	if found {
		if cur.Chain != chain.Key {
			return nil, errQueryChanged("chainId")
		}
		if cur.Contract != contract {
			return nil, errQueryChanged("address")
		}
		after = &cur.After
	}
	holders, err := rollup.Holders(ctx, h.d.DB, chain.Key, contract, after, size+1)
	if err != nil {
		return nil, err
	}
	resp := &HoldersResponse{
		Addresses:    make([]Holder, 0, min(len(holders), size)),
		TotalHolders: coll.Holders,
		TotalTokens:  json.Number(coll.Units),
	}
	if name.Valid {
		resp.NftCollectionName = &name.String
	}
	if symbol.Valid {
		resp.NftSymbol = &symbol.String
	}
	more := len(holders) > size
	if more {
		holders = holders[:size]
	}
	for _, ho := range holders {
		resp.Addresses = append(resp.Addresses, Holder{Address: ho.Address, SortKey: json.Number(ho.Units)})
	}
	if more {
		last := holders[len(holders)-1]
		tok, err := h.d.Tokens.Save(ctx, RouteListHolders, holdersCursor{Chain: chain.Key, Contract: contract,
			After: rollup.HolderCursor{Key: last.Key, Address: last.Address}})
		if err != nil {
			return nil, err
		}
		resp.NextPageToken = tok
	}
	return resp, nil
}

func chainLabel(c api.ChainRef) string {
	if c.EVMChainID != "" {
		return c.EVMChainID
	}
	return c.Key
}
