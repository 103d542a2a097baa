// Package primary serves the data service's primary-network endpoints from
// the index written by internal/decode/{pchain,xchain,catomic,primary}: the
// transactions of an X-chain asset, UTXOs by address (P, X and the C-chain's
// atomic UTXOs), P and X blocks, historical staking rewards, and the
// validation records of one node.
//
// Every listing is a keyset page over a unique key ((timestamp, id) or
// (amount, id)), never an offset, so pages neither skip nor repeat while
// blocks are indexed. States (validationStatus, staked) are those at the
// indexed tip, never the wall clock.
package primary

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Deps is what the handlers need.
type Deps struct {
	DB      *store.DB
	Network *api.Network
	Pager   *api.Pager
	Log     *slog.Logger
	// Health, when set, makes a chain's routes answer 503 while its
	// ingestion lags or is stuck (api.Health.CheckChain).
	Health *api.Health
	// Node, when set, supplies what only a running node observes about
	// active validators (uptime, reachability, version); without it those
	// optional facts are left out of the records.
	Node NodeView
	// AVAXAssetID is the network's staking and fee asset (from the
	// genesis): P-chain txs burn and stake it.
	AVAXAssetID string
	// Prices, when set, prices rewards (reward.historicalPrice, from
	// internal/enrich); without it the field is left out.
	Prices Prices
}

// Prices supplies historical prices of primary-network assets.
type Prices interface {
	// HistoricalPrice returns the price in currency (a decimal string) of
	// the asset on the UTC day of at, when known.
	HistoricalPrice(ctx context.Context, assetID, currency string, at time.Time) (string, bool)
}

// Page size bounds (spec 4.4 and 8).
const (
	defaultPageSize = 10
	maxPageSize     = 100
)

// Route names bind page tokens to their endpoint.
const (
	routeAssetTxs    = "primary.assetTransactions"
	routeUTXOs       = "primary.utxos"
	routeBlocks      = "primary.blocks"
	routeRewards     = "primary.rewards"
	routeValidators  = "primary.validators"
	routeNodeBlocks  = "primary.nodeBlocks"
	routeVertices    = "primary.vertices"
	routeBlockchains = "primary.blockchains"
	routeSubnets     = "primary.subnets"
	// Listings of this package's later routes.
	routeValidatorList = "primary.validatorList"
	routeDelegators    = "primary.delegators"
	routePendingRew    = "primary.pendingRewards"
	routeL1Validators  = "primary.l1Validators"
	routeTxs           = "primary.transactions"
	routeStakingTxs    = "primary.stakingTransactions"
)

// Register adds the primary-network routes to mux, with the published
// x-execution-weight of each operation.
func Register(mux *api.Mux, d Deps) {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	h := &handlers{d: d}
	xl := api.RouteOpts{Weight: api.XL}
	medium := api.RouteOpts{Weight: api.Medium}
	for _, r := range []struct {
		pattern string
		opts    api.RouteOpts
		h       api.Handler
	}{
		{"GET /v1/networks/{network}/blockchains/{blockchainId}/assets/{assetId}/transactions", xl, h.listAssetTransactions},
		{"GET /v1/networks/{network}/blockchains/{blockchainId}/utxos", xl, h.listUTXOs},
		{"GET /v1/networks/{network}/blockchains/{blockchainId}/blocks", medium, h.listBlocks},
		{"GET /v1/networks/{network}/rewards", xl, h.listRewards},
		{"GET /v1/networks/{network}/validators/{nodeId}", medium, h.listValidatorDetails},
		// Network, chains, blocks, assets and vertices (network.go, blocks.go, xchain.go).
		{"GET /v1/networks/{network}", xl, h.getNetworkDetails},
		{"GET /v1/networks/{network}/blockchains", medium, h.listBlockchains},
		{"GET /v1/networks/{network}/blockchains/{blockchainId}", medium, h.getBlockchainByID},
		{"GET /v1/networks/{network}/subnets", medium, h.listSubnets},
		{"GET /v1/networks/{network}/subnets/{subnetId}", medium, h.getSubnetByID},
		{"GET /v1/networks/{network}/addresses:listChainIds", xl, h.getChainIDsForAddresses},
		{"GET /v1/networks/{network}/blockchains/{blockchainId}/blocks/{blockId}", xl, h.getBlockByID},
		{"GET /v1/networks/{network}/blockchains/{blockchainId}/nodes/{nodeId}/blocks", medium, h.listBlocksByNodeID},
		{"GET /v1/networks/{network}/blockchains/{blockchainId}/assets/{assetId}", xl, h.getAssetDetails},
		{"GET /v1/networks/{network}/blockchains/{blockchainId}/vertices", medium, h.listVertices(false)},
		{"GET /v1/networks/{network}/blockchains/{blockchainId}/vertices/{vertexHash}", medium, h.getVertexByHash},
		{"GET /v1/networks/{network}/blockchains/{blockchainId}/vertices:listByHeight", medium, h.listVertices(true)},
		{"GET /v1/networks/{network}/blockchains/{blockchainId}/transactions/{txHash}", medium, h.getTx},
		{"GET /v1/networks/{network}/blockchains/{blockchainId}/transactions", xl, h.listTxs},
		{"GET /v1/networks/{network}/blockchains/{blockchainId}/transactions:listStaking", xl, h.listStakingTxs},
		{"GET /v1/networks/{network}/blockchains/{blockchainId}/balances", xl, h.getBalances},
		{"GET /v1/networks/{network}/blockchains/{blockchainId}/lastActivityTimestampByAddresses", xl, h.lastActivity},
		{"POST /v1/networks/{network}/blockchains/{blockchainId}/lastActivityTimestampByAddresses", xl, h.lastActivityPost},
		{"POST /v1/networks/{network}/blockchains/{blockchainId}/utxos", xl, h.listUTXOsPost},
		{"GET /v1/networks/{network}/validators", medium, h.listValidators},
		{"GET /v1/networks/{network}/delegators", medium, h.listDelegators},
		{"GET /v1/networks/{network}/rewards:listPending", xl, h.listPendingRewards},
		{"GET /v1/networks/{network}/l1Validators", medium, h.listL1Validators},
		// AVAX supply (supply.go): the network served here, no parameters.
		{"GET /v1/avax/supply", api.RouteOpts{Weight: api.Free}, h.getAvaxSupply},
	} {
		mux.HandleGuarded(r.pattern, r.opts, api.MessageString, r.h)
	}
}

type handlers struct {
	d    Deps
	sums tipSums // getNetworkDetails' active stake at the last tip asked
}

// chainName is the PrimaryNetworkChainName of a chain key.
func chainName(key string) string {
	switch key {
	case "P":
		return "p-chain"
	case "X":
		return "x-chain"
	}
	return "c-chain"
}

// ChainInfo is PrimaryNetworkChainInfo.
type ChainInfo struct {
	ChainName string `json:"chainName"`
	Network   string `json:"network"`
}

// request is what every route resolves first: the network, optionally the
// chain, and the query parameters (errors accumulate in p).
type request struct {
	r       *http.Request
	network string
	chain   api.ChainRef
	p       *api.Params
}

// begin checks the path's network (400 outside the enum, 404 when not the
// one indexed here) and, when withChain, resolves blockchainId (404 when it
// is not a primary-network chain of this network).
func (h *handlers) begin(r *http.Request, withChain bool) (*request, error) {
	n := r.PathValue("network")
	if err := h.d.Network.CheckNetwork(n); err != nil {
		return nil, err
	}
	q := &request{r: r, network: n, p: api.NewParams(r)}
	if withChain {
		c, err := h.d.Network.Blockchain(r.PathValue("blockchainId"))
		if err != nil {
			return nil, err
		}
		q.chain = c
	}
	return q, nil
}

// checkChain answers 503 while the chain's ingestion lags (when Health is set).
func (h *handlers) checkChain(ctx context.Context, key string) error {
	if h.d.Health == nil {
		return nil
	}
	return h.d.Health.CheckChain(ctx, key)
}

// filterKey binds a page token to the route's path and every filter.
func filterKey(r *http.Request) string {
	return api.FilterKey(r.URL.Query(), r.URL.Path)
}

// decodeCursor reads pageToken into cur (false when absent).
func (h *handlers) decodeCursor(q *request, route string, cur any) (bool, error) {
	tok := q.p.String("pageToken")
	if tok == "" {
		return false, nil
	}
	if err := h.d.Pager.Decode(tok, route, filterKey(q.r), cur); err != nil {
		return false, err
	}
	return true, nil
}

// openStakingPage starts a staking listing: it decodes the page token into
// cur, reports the request's parameter errors, and reads the P-chain tip's
// time the stakers' statuses are judged at.
func (h *handlers) openStakingPage(q *request, route string, cur any) (has bool, tipTime int64, err error) {
	if has, err = h.decodeCursor(q, route, cur); err != nil {
		return false, 0, err
	}
	if err = q.p.Err(); err != nil {
		return false, 0, err
	}
	tipTime, err = h.pChainTipTime(q.r.Context())
	return has, tipTime, err
}

// encodeCursor makes the next page's token.
func (h *handlers) encodeCursor(q *request, route string, cur any) string {
	return h.d.Pager.Encode(route, filterKey(q.r), cur)
}

// tip is the chain's indexed tip: height and block time (ok false when
// nothing is indexed yet). The checkpoint is written in the same
// transaction as the rows of its blocks.
// pChainTipTime is the P-chain's indexed tip time, after the chain's health
// check (the staking listings' "now"); a 503 before anything is indexed.
func (h *handlers) pChainTipTime(ctx context.Context) (int64, error) {
	if err := h.checkChain(ctx, "P"); err != nil {
		return 0, err
	}
	_, t, ok, err := tip(ctx, h.d.DB, "P")
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, api.Unavailable("the P-chain has not been indexed yet; try again later")
	}
	return t, nil
}

func tip(ctx context.Context, db *store.DB, chainKey string) (height, time int64, ok bool, err error) {
	err = db.QueryRowContext(ctx, `SELECT height, block_time FROM checkpoints WHERE chain_key = $1`, chainKey).Scan(&height, &time)
	if err == nil {
		return height, time, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, fmt.Errorf("read checkpoint of %s: %w", chainKey, err)
	}
	// Blocks written without the ingest driver (no checkpoint row).
	err = db.QueryRowContext(ctx, `SELECT height, timestamp FROM px_blocks WHERE chain_key = $1 ORDER BY height DESC LIMIT 1`,
		chainKey).Scan(&height, &time)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("read tip of %s: %w", chainKey, err)
	}
	return height, time, true, nil
}

// sortOrder reads sortOrder (asc or desc, def when absent).
func sortOrder(p *api.Params, def string) string {
	return p.Enum("sortOrder", def, "asc", "desc")
}

// placeholders returns "$n,$n+1,..." for k values starting at n.
func placeholders(n, k int) string {
	var b strings.Builder
	for i := 0; i < k; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "$%d", n+i)
	}
	return b.String()
}

// short truncates client input quoted in messages.
func short(s string) string {
	if len(s) > 64 {
		return s[:61] + "..."
	}
	return s
}
