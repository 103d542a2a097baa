package evm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/api"
	decodeevm "github.com/permafrost-dev/permafrost/internal/decode/evm"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// txHashParam parses a transaction hash (0x and 64 hex digits), recording a
// 400 naming name.
func txHashParam(p *api.Params, name, raw string) string {
	if len(raw) == 66 && (strings.HasPrefix(raw, "0x") || strings.HasPrefix(raw, "0X")) {
		if hh, err := api.ParseHash(raw); err == nil {
			return strings.ToLower(hh.Hex())
		}
	}
	p.Fail("%s must be a transaction hash (0x followed by 64 hex digits), got %q", name, short(raw))
	return ""
}

// getTransaction answers /v1/chains/{chainId}/transactions/{txHash}.
func (h *handlers) getTransaction(r *http.Request) (any, error) {
	q, err := h.begin(r, "")
	if err != nil {
		return nil, err
	}
	hash := txHashParam(q.p, "txHash", r.PathValue("txHash"))
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	return h.txDetail(r.Context(), q, "usd", "t.hash = @hash", map[string]any{"hash": store.Hex(hash)}, func() error {
		return api.NotFound("transaction %s is not indexed on chain %s", hash, q.chain.EVMChainID)
	})
}

// getDeployment answers /v1/chains/{chainId}/contracts/{address}/transactions:getDeployment:
// the transaction that created the contract. A contract whose creating
// transaction the index does not know (created inside another contract
// before call traces were indexed, or code from genesis) is a 404, as is an
// address the index does not know as a contract.
func (h *handlers) getDeployment(r *http.Request) (any, error) {
	q, err := h.begin(r, "address")
	if err != nil {
		return nil, err
	}
	currency := currencyParam(q.p)
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	var c contractRow
	var block int64
	err = h.d.DB.QueryRowContext(ctx, `SELECT `+contractCols+`, block_number
		FROM evm_contracts WHERE chain_key = $1 AND address = $2`, q.chain.Key, q.addr).Scan(append(c.dest(), &block)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, api.NotFound("address %s is not a contract indexed on chain %s", q.addr, q.chain.EVMChainID)
	}
	if err != nil {
		return nil, fmt.Errorf("contract %s: %w", q.addr, err)
	}
	// The deployments getContractMetadata shows (deploymentDetails).
	if !c.hasDeployment() || block > q.tip {
		return nil, api.NotFound("the deployment of contract %s on chain %s is not indexed (it was created inside another contract, or at genesis)", q.addr, q.chain.EVMChainID)
	}
	return h.txDetail(ctx, q, currency, "t.hash = @hash AND t.block_number = @block", map[string]any{"hash": store.Hex(c.txHash), "block": block}, func() error {
		return api.NotFound("the deployment transaction %s of contract %s is not indexed on chain %s", c.txHash, q.addr, q.chain.EVMChainID)
	})
}

// txDetail reads one transaction (cond on evm_txs t, by hash) with its block's fee
// fields, its input (from the stored block), its token transfers and its
// internal transactions.
func (h *handlers) txDetail(ctx context.Context, q *chainReq, currency, cond string, vals map[string]any, notFound func() error) (any, error) {
	vals["chain"], vals["tip"] = q.chain.Key, q.tip
	rows, err := h.query(ctx, `SELECT `+txCols+`, t.max_fee_per_gas, t.max_priority_fee_per_gas,
			b.base_fee, b.timestamp_ms, b.min_delay_excess, rb.body, rb.encoding
		FROM evm_txs t`+h.d.DB.IndexedBy(ctx, "evm_txs_hash")+h.txJoin()+`
		JOIN evm_blocks b ON b.chain_key = t.chain_key AND b.number = t.block_number
		LEFT JOIN raw_blocks rb ON rb.chain_key = t.chain_key AND rb.height = t.block_number
		WHERE t.chain_key = @chain AND `+cond+` AND t.block_number <= @tip`, vals)
	if err != nil {
		return nil, fmt.Errorf("transaction: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("transaction: %w", err)
		}
		return nil, notFound()
	}
	var d FullNativeTransactionDetails
	var k txKey
	var maxFee, maxPrio, baseFee, minDelay string
	var tsMs int64
	var body []byte
	var enc sql.NullInt64
	d.NativeTransaction, k, err = scanTx(rows, q.chain, &maxFee, &maxPrio, &baseFee, &tsMs, &minDelay, &body, &enc)
	if err != nil {
		return nil, fmt.Errorf("transaction: %w", err)
	}
	rows.Close()
	d.MaxFeePerGas, d.MaxPriorityFeePerGas = maxFee, maxPrio
	d.BaseFeePerGas = cmpOr(baseFee, "0")
	if tsMs > 0 {
		d.BlockTimestampMilliseconds = &tsMs
	}
	if v, err := strconv.ParseInt(minDelay, 10, 64); err == nil && minDelay != "" {
		d.BlockMinDelayExcess = &v
	}
	if !enc.Valid {
		return nil, fmt.Errorf("transaction %s: block %d has no stored body", d.TxHash, k.Block)
	}
	raw, err := ingest.RawBody(body, ingest.RawEncoding(enc.Int64))
	if err != nil {
		return nil, fmt.Errorf("transaction %s: %w", d.TxHash, err)
	}
	if d.Input, err = decodeevm.TxInput(raw, int(k.Index)); err != nil {
		return nil, fmt.Errorf("transaction %s: block %d: %w", d.TxHash, k.Block, err)
	}
	keys := []txKey{k}
	xfers, err := h.transfersOf(ctx, q.chain, keys, "", false, false)
	if err != nil {
		return nil, err
	}
	internals, err := h.internalTransactions(ctx, q.chain, keys, "")
	if err != nil {
		return nil, err
	}
	t := h.nativeToken(q.chain)
	resp := GetTransactionResponse{
		NativeTransaction: d,
		NetworkTokenDetails: NetworkTokenDetails{NetworkToken: NetworkToken{Name: t.Name, Symbol: t.Symbol,
			Decimals: t.Decimals, LogoURI: t.LogoURI, Description: t.Description}},
		InternalTransactions: internals[k],
	}
	if resp.TeleporterMessageInfo, err = h.teleporterMessageInfo(ctx, q.chain.Key, k.Block, d.TxHash); err != nil {
		return nil, err
	}
	if x := xfers[k]; x != nil {
		resp.Erc20Transfers, resp.Erc721Transfers, resp.Erc1155Transfers = x.erc20, x.erc721, x.erc1155
	}
	if p, ok := h.currentPrices(ctx, q, []string{""}, currency)[""]; ok {
		resp.NetworkTokenDetails.CurrentPrice = &Money{CurrencyCode: currency, Value: p}
	}
	return resp, nil
}
