// Package evm serves the data service's EVM-chain endpoints from the index
// written by internal/decode/evm: the supported chains, native, ERC-20,
// ERC-721, ERC-1155 and collectible balances (with history: any indexed
// block), token transfers, blocks, transactions (latest, by block, by hash,
// an address's history), NFT tokens of a collection, contract metadata and
// deployments.
//
// Every listing is a keyset page over a unique key, bounded to the indexed
// tip seen on its first page (carried in the page token), so pages never
// skip or repeat while new blocks are indexed.
package evm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Deps is what the handlers need.
type Deps struct {
	DB      *store.DB
	Network *api.Network
	Pager   *api.Pager
	Log     *slog.Logger
	// Health, when set, makes every chain route answer 503 while the chain's
	// ingestion lags or is stuck (api.Health.CheckChain), and gives
	// /v1/chains its status. Nil: chains with an indexed block are served.
	Health *api.Health
	// Chains describes EVM chains beyond what the index knows (the native
	// token, names, public URLs), keyed by chain key ("C") or EVM chain id.
	// The C-chain defaults to AVAX; other chains without an entry have a
	// native token with empty name and symbol and 18 decimals (the EVM's).
	Chains map[string]ChainConfig
	// Enrichment, when set, supplies prices (price and balanceValue of
	// balances) and the operator's curated contract facts (internal/enrich,
	// adapted by internal/api/enrichapi). Nil: those fields are omitted.
	Enrichment Enrichment
	// BalanceNodes finds the chains' nodes, asked for the native balances
	// the index cannot vouch for (nodebalance.go). A chain without one
	// answers 503 for those.
	BalanceNodes BalanceNodes
}

// Enrichment is what internal/enrich adds beyond the index. Token
// reputations need no method: the enrichment writes them to
// enrich_token_reputation, which the ERC-20 balance listing joins.
type Enrichment interface {
	// CurrentPrices returns the current price in currency (decimal
	// strings) of each token of the EVM chain that has one, keyed by
	// 0x-lowercase address ("" is the native token). A token without a
	// price is absent, never zero.
	CurrentPrices(ctx context.Context, evmChainID string, tokens []string, currency string) map[string]string
	// Curated returns the operator's registry entry of a contract.
	Curated(evmChainID, address string) (Curated, bool)
}

// Curated is the operator's description of a contract (spec 2.12's
// curated fields). Name is shown when the contract has no name() of its own.
type Curated struct {
	Name          string
	Description   string
	OfficialSite  string
	Email         string
	LogoAsset     *ImageAsset
	BannerAsset   *ImageAsset
	Color         string
	ResourceLinks []ResourceLink
	Tags          []string
}

// ChainConfig is the operator's description of one EVM chain.
type ChainConfig struct {
	Name        string
	Description string
	RPCURL      string
	WSURL       string
	ExplorerURL string
	LogoURI     string
	NativeToken NativeToken
	// Features are the ApiFeature values advertised in /v1/chains
	// (nftIndexing, webhooks, teleporter). Nil: nftIndexing (the NFT
	// routes here are served for every indexed chain).
	Features []string
}

// NativeToken is a chain's native token as NativeTokenBalance and
// NetworkToken show it.
type NativeToken struct {
	Name        string
	Symbol      string
	Decimals    int
	LogoURI     string
	Description string
}

// Page size bounds (spec 4.4 and 8).
const (
	defaultPageSize = 10
	maxListPage     = 100 // transfers, native transactions, NFT tokens
	maxBalancePage  = 500 // ERC-20, ERC-721, ERC-1155, collectible balances
)

// Register adds the EVM routes to mux. Weights follow the published
// x-execution-weight of each operation (free for the chain listing, medium
// for the rest).
func Register(mux *api.Mux, d Deps) {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	register(mux, &handlers{d: d})
}

func register(mux *api.Mux, h *handlers) {
	free := api.RouteOpts{Weight: api.Free}
	small := api.RouteOpts{Weight: api.Small}
	medium := api.RouteOpts{Weight: api.Medium}
	for _, r := range []struct {
		pattern string
		opts    api.RouteOpts
		h       api.Handler
	}{
		{"GET /v1/chains", free, h.listChains},
		{"GET /v1/chains/{chainId}", free, h.getChain},
		{"GET /v1/chains/{chainId}/addresses/{address}/balances:getNative", medium, h.getNative},
		{"GET /v1/chains/{chainId}/addresses/{address}/balances:listErc20", medium, h.listErc20},
		{"GET /v1/chains/{chainId}/addresses/{address}/balances:listErc721", medium, h.listErc721},
		{"GET /v1/chains/{chainId}/addresses/{address}/balances:listErc1155", medium, h.listErc1155},
		{"GET /v1/chains/{chainId}/addresses/{address}/balances:listCollectibles", medium, h.listCollectibles},
		{"GET /v1/chains/{chainId}/tokens/{address}/transfers", medium, h.listTransfers},
		{"GET /v1/chains/{chainId}/addresses/{address}/transactions:listNative", medium, h.listNative},
		{"GET /v1/chains/{chainId}/addresses/{address}/transactions:listInternals", medium, h.listInternals},
		{"GET /v1/chains/{chainId}/nfts/collections/{address}/tokens", medium, h.listNFTTokens},
		{"GET /v1/chains/{chainId}/nfts/collections/{address}/tokens/{tokenId}", medium, h.getNFTToken},
		{"GET /v1/chains/{chainId}/addresses/{address}", medium, h.getContract},
		// Blocks and transactions (issue #18). The cross-chain listings have
		// no published weight: medium, as a listing. /v1/chains/allBlocks and
		// /allTransactions are the paths the SDK 0.13 calls for them.
		{"GET /v1/blocks", medium, h.listAllBlocks},
		{"GET /v1/chains/allBlocks", medium, h.listAllBlocks},
		{"GET /v1/transactions", medium, h.listAllTxs},
		{"GET /v1/chains/allTransactions", medium, h.listAllTxs},
		{"GET /v1/address/{address}/chains", medium, h.listAddressChains},
		{"GET /v1/chains/{chainId}/blocks", small, h.listBlocks},
		{"GET /v1/chains/{chainId}/blocks/{blockId}", small, h.getBlock},
		{"GET /v1/chains/{chainId}/blocks/{blockId}/transactions", medium, h.listBlockTxs},
		{"GET /v1/chains/{chainId}/transactions", medium, h.listLatestTxs},
		{"GET /v1/chains/{chainId}/transactions/{txHash}", medium, h.getTransaction},
		{"GET /v1/chains/{chainId}/addresses/{address}/transactions", medium, h.listHistory},
		{"GET /v2/chains/{chainId}/addresses/{address}/transactions", medium, h.listHistoryV2},
		{"GET /v1/chains/{chainId}/addresses/{address}/transactions:listErc20", medium, h.listErcTxs(ercERC20)},
		{"GET /v1/chains/{chainId}/addresses/{address}/transactions:listErc721", medium, h.listErcTxs(ercERC721)},
		{"GET /v1/chains/{chainId}/addresses/{address}/transactions:listErc1155", medium, h.listErcTxs(ercERC1155)},
		{"GET /v1/chains/{chainId}/contracts/{address}/deployments", medium, h.listDeployments},
		{"GET /v1/chains/{chainId}/contracts/{address}/transactions:getDeployment", medium, h.getDeployment},
	} {
		mux.HandleGuarded(r.pattern, r.opts, api.MessageString, r.h)
	}
	// The deprecated getAddressChains (/v1/chains/address/{address}, still
	// called by the SDK) is /v1/address/{address}/chains under its old path.
	mux.Alias(func(method, path string) (string, bool) {
		addr, ok := strings.CutPrefix(path, "/v1/chains/address/")
		if !ok || method != http.MethodGet || addr == "" || strings.Contains(addr, "/") {
			return "", false
		}
		return "/v1/address/" + addr + "/chains", true
	})
}

type handlers struct {
	d        Deps
	nodeBals nodeBalances
	// trace, when set (tests), sees every listing query before it runs.
	trace func(q string, args []any)
}

// chainReq is what every chain route resolves first: the chain, the path
// address, the query parameters, and the indexed tip.
type chainReq struct {
	chain api.ChainRef
	addr  string // 0x-lowercase; "" when the route has none
	p     *api.Params
	tip   int64
}

// begin resolves chainId (404 when not an indexed EVM chain), parses the
// path address (a 400 recorded in p) and reads the chain's indexed tip.
func (h *handlers) begin(r *http.Request, addrParam string) (*chainReq, error) {
	c, err := h.d.Network.EVMChain(r.PathValue("chainId"))
	if err != nil {
		return nil, err
	}
	q := &chainReq{chain: c, p: api.NewParams(r)}
	if addrParam != "" {
		q.addr = addressParam(q.p, addrParam, r.PathValue(addrParam))
	}
	if h.d.Health != nil {
		if err := h.d.Health.CheckChain(r.Context(), c.Key); err != nil {
			return nil, err
		}
	}
	tip, err := indexedTip(r.Context(), h.d.DB, c.Key)
	if err != nil {
		return nil, err
	}
	if tip < 0 {
		return nil, api.Unavailable(fmt.Sprintf("chain %s has not indexed any block yet; try again later", c.EVMChainID))
	}
	q.tip = tip
	return q, nil
}

// indexedTip is the chain's last indexed block (-1 when none). The
// checkpoint is written in the same transaction as the rows of its blocks.
func indexedTip(ctx context.Context, db *store.DB, chainKey string) (int64, error) {
	var h int64
	err := db.QueryRowContext(ctx, `SELECT height FROM checkpoints WHERE chain_key = $1`, chainKey).Scan(&h)
	if err == nil {
		return h, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("read checkpoint of %s: %w", chainKey, err)
	}
	// Blocks written without the ingest driver (no checkpoint row).
	var m sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MAX(number) FROM evm_blocks WHERE chain_key = $1`, chainKey).Scan(&m); err != nil {
		return 0, fmt.Errorf("read tip of %s: %w", chainKey, err)
	}
	if !m.Valid {
		return -1, nil
	}
	return m.Int64, nil
}

// addressParam parses an EVM address (0x and 40 hex digits, any case) and
// returns its 0x-lowercase form, or records a 400 naming name.
func addressParam(p *api.Params, name, v string) string {
	a, err := api.ParseEVMAddress(v)
	if err != nil || !strings.HasPrefix(strings.ToLower(v), "0x") {
		p.Fail("%s must be an EVM address (0x followed by 40 hex digits), got %q", name, short(v))
		return ""
	}
	return strings.ToLower(a.Hex())
}

// blockNumberParam reads blockNumber (decimal, or 0x-hex) at most tip;
// absent, the tip.
func blockNumberParam(p *api.Params, tip int64) int64 {
	s := p.String("blockNumber")
	if s == "" {
		return tip
	}
	n, ok := parseUint63(s)
	if !ok {
		p.Fail("blockNumber must be a non-negative block number (decimal or 0x-hex), got %q", short(s))
		return tip
	}
	if n > tip {
		p.Fail("blockNumber %d is above the last indexed block %d", n, tip)
		return tip
	}
	return n
}

// blockRange reads startBlock (inclusive) and endBlock (exclusive) as the
// closed range [lo, hi] bounded by the tip; open ends run from genesis and
// to the tip (spec 4.4 rule 1). empty is true when nothing can match.
func blockRange(p *api.Params, tip int64) (lo, hi int64, empty bool) {
	lo, hi = 0, tip
	var start, end int64
	var hasStart, hasEnd bool
	for _, b := range []struct {
		name string
		v    *int64
		has  *bool
	}{{"startBlock", &start, &hasStart}, {"endBlock", &end, &hasEnd}} {
		s := p.String(b.name)
		if s == "" {
			continue
		}
		n, ok := parseUint63(s)
		if !ok {
			p.Fail("%s must be a non-negative integer block number, got %q", b.name, short(s))
			continue
		}
		*b.v, *b.has = n, true
	}
	if hasStart && hasEnd && start >= end {
		p.Fail("startBlock (%d, inclusive) must be below endBlock (%d, exclusive)", start, end)
		return 0, -1, true
	}
	if hasStart {
		lo = start
	}
	if hasEnd && end-1 < hi {
		hi = end - 1
	}
	return lo, hi, lo > hi
}

// parseUint63 reads a decimal or 0x-hex number that fits int64.
func parseUint63(s string) (int64, bool) {
	if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") {
		v, err := strconv.ParseUint(s[2:], 16, 63)
		return int64(v), err == nil
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s, 10, 63)
	return int64(v), err == nil
}

// currencyParam validates currency, the currency of prices and balance
// values (default usd).
func currencyParam(p *api.Params) string {
	return p.Enum("currency", "usd", currencies...)
}

var currencies = []string{"usd", "eur", "aud", "cad", "chf", "clp", "cny", "czk", "dkk", "gbp", "hkd", "huf", "jpy", "nzd"}

// pageCursor decodes pageToken into c (a 400 recorded in p), reporting
// whether one was given.
func (h *handlers) pageCursor(p *api.Params, route, filter string, c any) bool {
	tok := p.String("pageToken")
	if tok == "" {
		return false
	}
	if err := h.d.Pager.Decode(tok, route, filter, c); err != nil {
		var e *api.Error
		if errors.As(err, &e) {
			p.Fail("%s", strings.Join(e.Messages, "; "))
		} else {
			p.Fail("pageToken is invalid")
		}
		return false
	}
	return true
}

// filterKey binds page tokens to the chain, the path values and every
// query parameter but pageToken and pageSize.
func filterKey(q *chainReq, extra ...string) string {
	return api.FilterKey(q.p.Values(), append([]string{"chain=" + q.chain.Key, "address=" + q.addr}, extra...)...)
}

// short bounds echoed input in error messages.
func short(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// nativeToken is the chain's native token description.
func (h *handlers) nativeToken(c api.ChainRef) NativeToken {
	if cfg, ok := h.chainConfig(c); ok && cfg.NativeToken.Symbol != "" {
		t := cfg.NativeToken
		if t.Decimals == 0 {
			t.Decimals = 18
		}
		return t
	}
	if c.Key == "C" {
		return NativeToken{Name: "AVAX", Symbol: "AVAX", Decimals: 18}
	}
	return NativeToken{Decimals: 18}
}

func (h *handlers) chainConfig(c api.ChainRef) (ChainConfig, bool) {
	if cfg, ok := h.d.Chains[c.Key]; ok {
		return cfg, true
	}
	cfg, ok := h.d.Chains[c.EVMChainID]
	return cfg, ok
}
