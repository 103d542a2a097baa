// Package metrics serves the metrics service: average transactions per
// second per chain (GET /v1/avg_tps/{chainId}), the current holders of an
// NFT contract (GET /v2/chains/{chainId}/contracts/{address}/nfts:listHolders),
// and the Metrics API v2 of EVM chains (chains.go: /v2/chains, health;
// evmmetrics.go: every chain metric per interval and rolling windows;
// balances.go: token holders above a threshold over time; shared series
// plumbing for v2 routes in v2.go). The v2 metrics' definitions are in
// docs/metrics.md.
//
// No authentication; every route is rate limited per client IP by the guard
// (api.RouteOpts.PerIP), errors are ErrorBody with message as an array of
// strings, and page tokens are server-side UUIDs valid 24 hours
// (api.ServerTokens): an unknown or expired token restarts from the first
// page, a token from the other route is a 400.
//
// Answers come from the rollups internal/metrics maintains as blocks are
// indexed; nothing here scans blocks, transactions or balances.
//
// What the numbers mean:
//
//   - avg_tps point = transactions of the blocks whose time falls in the
//     interval (UTC hour, day, week from Monday, or month) / the interval's
//     seconds. The interval holding the chain's newest indexed block is
//     unfinished: it is divided by the seconds from its start to that block's
//     time (at least 1) — the indexed tip's time, never the wall clock, so an
//     index answers the same whenever it is asked, and a replay of the same
//     blocks answers the same as the original. Intervals without blocks are 0;
//     the series runs from the oldest indexed block's interval to the
//     newest's. P and X count their blocks' txs (not genesis txs); EVM chains
//     their EVM transactions (not the C-chain's atomic txs). lastRun is the
//     wall-clock time ingestion last wrote the chain's rollups.
//   - listHolders sortKey = tokens held (ERC-1155: units summed over ids) by
//     an address with a positive balance; totalTokens = the sum of sortKeys.
package metrics

import (
	"encoding/json"
	"log/slog"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Routes, also the page tokens' route names.
const (
	RouteAvgTPS      = "GET /v1/avg_tps/{chainId}"
	RouteListHolders = "GET /v2/chains/{chainId}/contracts/{address}/nfts:listHolders"
)

// Metrics API v2 routes of EVM chains (issue #21 part A; chains.go,
// evmmetrics.go; shared series plumbing in v2.go).
const (
	RouteHealthCheck    = "GET /v2/health-check"
	RouteLiveCheck      = "GET /v2/live-check"
	RouteListChains     = "GET /v2/chains"
	RouteGetChain       = "GET /v2/chains/{chainId}"
	RouteEVMMetrics     = "GET /v2/chains/{chainId}/metrics/{metric}"
	RouteRollingMetrics = "GET /v2/chains/{chainId}/rollingWindowMetrics/{metric}"
	RouteTokenBalances  = "GET /v2/chains/{chainId}/contracts/{address}/balances"
)

// Page sizes (spec 4.5, 8; the metrics API's pageSize bounds).
const (
	tpsDefaultPageSize     = 100
	tpsMaxPageSize         = 2160
	holdersDefaultPageSize = 1000
	holdersMaxPageSize     = 5000
)

// maxTimestamp (9999-12-31T23:59:59Z) bounds startTimestamp/endTimestamp so
// interval arithmetic stays in range.
const maxTimestamp = 253402300799

// Deps is what the handlers need.
type Deps struct {
	DB      *store.DB
	Network *api.Network
	// Tokens stores the page tokens; nil: api.NewServerTokens(DB, Now).
	Tokens *api.ServerTokens
	Log    *slog.Logger
	// Now is the clock of the default Tokens. The answers themselves never
	// read the wall clock: a series ends at the chain's newest indexed block.
	Now func() time.Time
	// Health judges /v2/health-check and /v2/live-check (the guard's,
	// api.Guard.Health); nil: a judge with the default limits.
	Health *api.Health
}

// Register adds the metrics routes to mux. Call it for the main listener's
// mux and, when a separate metrics listener is configured, for its mux too
// (the guard installed on each mux limits these routes per client IP).
func Register(mux *api.Mux, d Deps) {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Tokens == nil {
		d.Tokens = api.NewServerTokens(d.DB, d.Now)
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Health == nil {
		d.Health = api.NewHealth(d.DB, api.DefaultLimits(), d.Now)
	}
	h := &handlers{d: d}
	// Weights are the published API's execution weights (small, large).
	mux.HandleGuarded(RouteAvgTPS, api.RouteOpts{Weight: api.Small, PerIP: true}, api.MessageArray, h.avgTPS)
	mux.HandleGuarded(RouteListHolders, api.RouteOpts{Weight: api.Large, PerIP: true}, api.MessageArray, h.listHolders)

	// Metrics API v2, EVM chains.
	handleV2(mux, RouteHealthCheck, api.Free, h.healthCheck)
	handleV2(mux, RouteLiveCheck, api.Free, h.liveCheck)
	handleV2(mux, RouteListChains, api.Free, h.listChains)
	handleV2(mux, RouteGetChain, api.Free, h.getChain)
	handleV2(mux, RouteEVMMetrics, api.Small, h.evmMetrics)
	handleV2(mux, RouteRollingMetrics, api.Small, h.rollingMetrics)
	handleV2(mux, RouteTokenBalances, api.XL, h.tokenBalances)
	registerV2PartB(mux, h)
}

// registerV2PartB adds the Metrics API v2 staking, L1 fee, ICM and
// validators:getAddresses routes (issue #21 part B). Weights are the
// document's: small, getAddresses large; the L1 fee routes have none there and
// count as small.
func registerV2PartB(mux *api.Mux, h *handlers) {
	for route, fn := range map[string]api.Handler{
		RouteStaking:        h.staking,
		RouteSubnetFees:     h.subnetFees,
		RouteValidationFees: h.validationFees,
		RouteNodeFees:       h.nodeFees,
		RouteTotalFees:      h.totalFees,
		RouteICMTimeseries:  h.icmTimeseries,
		RouteICMSummary:     h.icmSummary,
	} {
		handleV2(mux, route, api.Small, fn)
	}
	handleV2(mux, RouteValidatorAddresses, api.Large, h.validatorAddresses)
}

type handlers struct{ d Deps }

// Point is a metrics data point (spec 2.15).
type Point struct {
	Timestamp int64   `json:"timestamp"`
	Value     float64 `json:"value"`
}

// TPSResponse is the avg_tps answer (spec 4.5).
type TPSResponse struct {
	Results       []Point `json:"results"`
	Status        int     `json:"status"`
	LastRun       int64   `json:"lastRun"`
	NextPageToken string  `json:"nextPageToken,omitempty"`
}

// Holder is an NFT holder entry (spec 2.16): sortKey is the number of tokens
// held, an integer of any size.
type Holder struct {
	Address string      `json:"address"`
	SortKey json.Number `json:"sortKey"`
}

// HoldersResponse is the nfts:listHolders answer (spec 4.5). The collection's
// name and symbol are absent while the contract's metadata is unknown.
type HoldersResponse struct {
	NextPageToken     string      `json:"nextPageToken,omitempty"`
	Addresses         []Holder    `json:"addresses"`
	NftCollectionName *string     `json:"nftCollectionName,omitempty"`
	NftSymbol         *string     `json:"nftSymbol,omitempty"`
	TotalHolders      int64       `json:"totalHolders"`
	TotalTokens       json.Number `json:"totalTokens"`
}

func short(s string) string {
	if len(s) > 64 {
		return s[:61] + "..."
	}
	return s
}

// errQueryChanged answers a token presented with parameters other than those
// of the listing it continues.
func errQueryChanged(param string) error {
	return api.BadRequest("pageToken was issued for another query: " + param + " differs from the first page's (repeat the first page's parameters, or drop pageToken)")
}
