package metrics

import (
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/api"
	rollup "github.com/permafrost-dev/permafrost/internal/metrics"
)

// BalancesResponse is the document's LookingGlassResponse (metrics-api.openapi.json,
// getAddressesByBalanceOverTime): sortKey is the address's balance, in the
// token's smallest units, as a decimal string.
type BalancesResponse struct {
	NextPageToken string           `json:"nextPageToken,omitempty"`
	Addresses     []AddressDetails `json:"addresses"`
}

// AddressDetails is the document's AddressDetails (sortKey a string).
type AddressDetails struct {
	Address string `json:"address"`
	SortKey string `json:"sortKey"`
}

// balancesCursor is a balances page token's stored state: the query, the
// last address returned, and where the page's walk over the token's holders
// stopped (the next page goes on from there).
type balancesCursor struct {
	Chain     string             `json:"c"`
	Contract  string             `json:"t"`
	Threshold string             `json:"h"`
	Start     int64              `json:"s"`
	End       int64              `json:"e"`
	Balance   string             `json:"b"`
	Address   string             `json:"a"`
	Walk      *rollup.HeldResume `json:"w,omitempty"`
}

// tokenBalances answers GET /v2/chains/{chainId}/contracts/{address}/balances:
// the addresses whose balance of the token (an ERC-20, or an ERC-721 counted
// in tokens) was at least threshold at some time of
// [startTimestamp, endTimestamp] (default: the chain's first block to its
// newest), with sortKey = their balance at endTimestamp, ordered by it
// descending, then address. The newest document dropped this route; it
// follows metrics-api.openapi.json (2025-11).
func (h *handlers) tokenBalances(r *http.Request) (any, error) {
	ctx := r.Context()
	p := api.NewParams(r)
	addr, aerr := api.ParseEVMAddress(r.PathValue("address"))
	if aerr != nil {
		p.Fail("address: %s", aerr.Error())
	}
	threshold, ok := new(big.Int).SetString(p.String("threshold"), 10)
	if !ok || threshold.Sign() < 0 || len(p.String("threshold")) > 80 {
		p.Fail("threshold must be a non-negative decimal integer (token units), got %q", short(p.String("threshold")))
	}
	start, end := timeRange(p)
	size := p.PageSize(holdersDefaultPageSize, 1, holdersMaxPageSize)
	if err := p.Err(); err != nil {
		return nil, err
	}
	chain, err := h.v2Chain(r.PathValue("chainId"))
	if err != nil {
		return nil, err
	}
	contract := strings.ToLower(addr.Hex())
	var ercType string
	err = h.d.DB.QueryRowContext(ctx, `SELECT erc_type FROM evm_contracts WHERE chain_key = $1 AND address = $2`, chain.Key, contract).Scan(&ercType)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, api.NotFound("contract %s is not known on chain %s", contract, chainLabel(chain))
	}
	if err != nil {
		return nil, fmt.Errorf("read contract %s: %w", contract, err)
	}
	if ercType != "ERC-20" && ercType != "ERC-721" {
		return nil, api.BadRequest(fmt.Sprintf("address %s is not an ERC-20 or ERC-721 contract (it is %q): balances over time are kept for those", contract, ercType))
	}

	var cur balancesCursor
	found, err := h.d.Tokens.Load(ctx, p.String("pageToken"), RouteTokenBalances, &cur)
	if err != nil {
		return nil, err
	}
	if found {
		switch {
		case cur.Chain != chain.Key:
			return nil, errQueryChanged("chainId")
		case cur.Contract != contract:
			return nil, errQueryChanged("address")
		case cur.Threshold != threshold.String():
			return nil, errQueryChanged("threshold")
		case p.Has("startTimestamp") && start != cur.Start:
			return nil, errQueryChanged("startTimestamp")
		case p.Has("endTimestamp") && end != cur.End:
			return nil, errQueryChanged("endTimestamp")
		}
		start, end = cur.Start, cur.End
	}
	startBlock, endBlock := int64(-1), int64(1<<62)
	if start >= 0 {
		if startBlock, err = rollup.BlockAt(ctx, h.d.DB, chain.Key, start); err != nil {
			return nil, err
		}
	}
	if end >= 0 {
		if endBlock, err = rollup.BlockAt(ctx, h.d.DB, chain.Key, end); err != nil {
			return nil, err
		}
	}
	var after *rollup.HeldBalance
	if found {
		b, ok := new(big.Int).SetString(cur.Balance, 10)
		if !ok {
			return nil, fmt.Errorf("balances page token: balance %q", cur.Balance)
		}
		after = &rollup.HeldBalance{Address: cur.Address, Balance: b}
	}
	q := rollup.HeldQuery{Chain: chain.Key, Token: contract, ErcType: ercType, Threshold: threshold, Start: startBlock, End: endBlock}
	page, walk, more, err := rollup.HeldAbove(ctx, h.d.DB, q, after, cur.Walk, size)
	if err != nil {
		return nil, err
	}
	resp := &BalancesResponse{Addresses: []AddressDetails{}}
	for _, hb := range page {
		resp.Addresses = append(resp.Addresses, AddressDetails{Address: hb.Address, SortKey: hb.Balance.String()})
	}
	if more {
		last := page[len(page)-1]
		tok, err := h.d.Tokens.Save(ctx, RouteTokenBalances, balancesCursor{Chain: chain.Key, Contract: contract,
			Threshold: threshold.String(), Start: start, End: end, Balance: last.Balance.String(), Address: last.Address, Walk: walk})
		if err != nil {
			return nil, err
		}
		resp.NextPageToken = tok
	}
	return resp, nil
}
