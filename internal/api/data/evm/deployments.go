package evm

import (
	"context"
	"fmt"
	"net/http"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// deploymentCursor continues a deployer's contract listing, newest first:
// the tip bound of the first page and the last (block, address) returned.
type deploymentCursor struct {
	Tip     int64  `json:"t"`
	Block   int64  `json:"b"`
	Address string `json:"a"`
}

// listDeployments answers /v1/chains/{chainId}/contracts/{address}/deployments:
// the contracts the address deployed (the deployerAddress of their
// deploymentDetails, as getContractMetadata shows them), newest first.
// Contracts created inside another contract are listed once call traces
// named their creating transaction.
func (h *handlers) listDeployments(r *http.Request) (any, error) {
	q, err := h.begin(r, "address")
	if err != nil {
		return nil, err
	}
	const route = "evm.listDeployments"
	limit := q.p.PageSize(defaultPageSize, 1, maxListPage)
	key := filterKey(q)
	var c deploymentCursor
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
	vals := map[string]any{"chain": q.chain.Key, "addr": q.addr, "hi": c.Tip, "limit": limit + 1}
	cond := " AND block_number <= @hi"
	if after {
		vals["b"], vals["a"] = c.Block, c.Address
		cond = " AND (block_number, address) < (@b, @a)"
	}
	rows, err := h.query(r.Context(), `SELECT `+contractCols+`, block_number FROM evm_contracts
		WHERE chain_key = @chain AND deployer_address = @addr`+cond+`
			AND (creation_kind = 'tx' OR deployer_contract_address <> '')
		ORDER BY block_number DESC, address DESC LIMIT @limit`, vals)
	if err != nil {
		return nil, fmt.Errorf("deployments of %s: %w", q.addr, err)
	}
	defer rows.Close()
	resp := ListContractsResponse{Contracts: []ContractMetadata{}}
	var last deploymentCursor
	for rows.Next() {
		if len(resp.Contracts) == limit {
			resp.NextPageToken = h.d.Pager.Encode(route, key, deploymentCursor{Tip: c.Tip, Block: last.Block, Address: last.Address})
			break
		}
		var row contractRow
		if err := rows.Scan(append(row.dest(), &last.Block)...); err != nil {
			return nil, fmt.Errorf("deployments of %s: %w", q.addr, err)
		}
		last.Address = row.address
		resp.Contracts = append(resp.Contracts, h.contractMetadata(q, row))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("deployments of %s: %w", q.addr, err)
	}
	return resp, nil
}

// listAddressChains answers /v1/address/{address}/chains: the indexed EVM
// chains where the address has activity (a transaction it sent, received or
// created, a token transfer, or a native balance, e.g. a genesis
// allocation). unindexedChains is empty: every chain this server knows it
// indexes.
func (h *handlers) listAddressChains(r *http.Request) (any, error) {
	p := api.NewParams(r)
	addr := addressParam(p, "address", r.PathValue("address"))
	if err := p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	resp := ListAddressChainsResponse{IndexedChains: []ChainInfo{}, UnindexedChains: []string{}}
	for _, ch := range h.evmChains() {
		active, err := h.hasActivity(ctx, ch.Key, addr)
		if err != nil {
			return nil, err
		}
		if !active {
			continue
		}
		ci, err := h.chainInfo(ctx, ch)
		if err != nil {
			return nil, err
		}
		resp.IndexedChains = append(resp.IndexedChains, ci)
	}
	return resp, nil
}

// hasActivity: one point lookup per table that names addresses.
func (h *handlers) hasActivity(ctx context.Context, chainKey, addr string) (bool, error) {
	a := store.Hex(addr)
	for _, q := range []string{
		`SELECT 1 FROM evm_address_txs WHERE chain_key = $1 AND address = $2 LIMIT 1`,
		`SELECT 1 FROM evm_transfers` + h.d.DB.IndexedBy(ctx, "evm_transfers_from") + ` WHERE chain_key = $1 AND from_addr = $2 LIMIT 1`,
		`SELECT 1 FROM evm_transfers` + h.d.DB.IndexedBy(ctx, "evm_transfers_to") + ` WHERE chain_key = $1 AND to_addr = $2 LIMIT 1`,
		`SELECT 1 FROM evm_native_balances WHERE chain_key = $1 AND address = $2 LIMIT 1`,
	} {
		rows, err := h.d.DB.QueryContext(ctx, q, chainKey, a)
		if err != nil {
			return false, fmt.Errorf("activity of %s on %s: %w", addr, chainKey, err)
		}
		found := rows.Next()
		err = rows.Err()
		rows.Close()
		if err != nil {
			return false, fmt.Errorf("activity of %s on %s: %w", addr, chainKey, err)
		}
		if found {
			return true, nil
		}
	}
	return false, nil
}
