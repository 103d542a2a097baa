package evm

import (
	"context"
	"math/big"
	"strings"
)

// Prices and curated facts from Deps.Enrichment (internal/enrich). With no
// enrichment, or no price for a token, price and balanceValue are absent:
// a missing price is never shown as zero.

// currentPrices asks the enrichment for the tokens' prices (nil without one).
func (h *handlers) currentPrices(ctx context.Context, q *chainReq, tokens []string, currency string) map[string]string {
	if h.d.Enrichment == nil || len(tokens) == 0 {
		return nil
	}
	return h.d.Enrichment.CurrentPrices(ctx, q.chain.EVMChainID, tokens, currency)
}

// priceNative sets the native balance's price and value in currency.
func (h *handlers) priceNative(ctx context.Context, q *chainReq, nb *NativeTokenBalance, currency string) {
	p, ok := h.currentPrices(ctx, q, []string{""}, currency)[""]
	if !ok {
		return
	}
	nb.Price = &Money{CurrencyCode: currency, Value: p}
	if v, ok := balanceValue(nb.Balance, nb.Decimals, p); ok {
		nb.BalanceValue = &Money{CurrencyCode: currency, Value: v}
	}
}

// valueDecimals is the precision of balance values.
const valueDecimals = 6

// balanceValue is balance (in the token's smallest unit) / 10^decimals ×
// price, as a decimal rounded to valueDecimals places.
func balanceValue(balance string, decimals int, price string) (string, bool) {
	if decimals < 0 || decimals > 255 {
		return "", false
	}
	b, ok := new(big.Int).SetString(balance, 10)
	if !ok || b.Sign() < 0 {
		return "", false
	}
	p, ok := new(big.Rat).SetString(price)
	if !ok || p.Sign() < 0 {
		return "", false
	}
	v := new(big.Rat).SetFrac(b, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)), nil))
	v.Mul(v, p)
	s := v.FloatString(valueDecimals)
	if strings.Contains(s, ".") {
		s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	}
	return s, true
}

// curated returns the registry entry of a contract.
func (h *handlers) curated(q *chainReq, address string) (Curated, bool) {
	if h.d.Enrichment == nil {
		return Curated{}, false
	}
	return h.d.Enrichment.Curated(q.chain.EVMChainID, address)
}

// enrichErc20 prices a page of ERC-20 balances and its native balance in
// one lookup, and gives tokens the registry's logo.
func (h *handlers) enrichErc20(ctx context.Context, q *chainReq, resp *ListErc20BalancesResponse, currency string) {
	if h.d.Enrichment == nil {
		return
	}
	tokens := make([]string, 0, len(resp.Erc20TokenBalances)+1)
	tokens = append(tokens, "")
	for i := range resp.Erc20TokenBalances {
		b := &resp.Erc20TokenBalances[i]
		tokens = append(tokens, b.Address)
		if c, ok := h.curated(q, b.Address); ok && c.LogoAsset != nil && b.LogoURI == "" {
			b.LogoURI = c.LogoAsset.ImageURI
		}
	}
	prices := h.currentPrices(ctx, q, tokens, currency)
	if p, ok := prices[""]; ok {
		nb := &resp.NativeTokenBalance
		nb.Price = &Money{CurrencyCode: currency, Value: p}
		if v, ok := balanceValue(nb.Balance, nb.Decimals, p); ok {
			nb.BalanceValue = &Money{CurrencyCode: currency, Value: v}
		}
	}
	for i := range resp.Erc20TokenBalances {
		b := &resp.Erc20TokenBalances[i]
		p, ok := prices[b.Address]
		if !ok {
			continue
		}
		b.Price = &Money{CurrencyCode: currency, Value: p}
		if !b.decimalsKnown {
			continue // the value of a balance in unknown units is unknown
		}
		if v, ok := balanceValue(b.Balance, b.Decimals, p); ok {
			b.BalanceValue = &Money{CurrencyCode: currency, Value: v}
		}
	}
}
