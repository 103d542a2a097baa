package metrics

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/ava-labs/avalanchego/utils/constants"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// Chain is the document's Chain: an indexed EVM chain.
type Chain struct {
	EvmChainID   json.Number `json:"evmChainId"`
	ChainName    string      `json:"chainName"`
	BlockchainID string      `json:"blockchainId"`
	SubnetID     string      `json:"subnetId"`
	Network      string      `json:"network"` // NetworkType: mainnet or testnet
}

// ListChainsResponse is the document's ListChainsResponse.
type ListChainsResponse struct {
	NextPageToken string  `json:"nextPageToken,omitempty"`
	Chains        []Chain `json:"chains"`
}

// networkType is the document's NetworkType of this index's network: every
// network but mainnet is a test network.
func (h *handlers) networkType() string {
	if h.d.Network.ID == constants.MainnetID {
		return "mainnet"
	}
	return "testnet"
}

// chainInfo shapes an indexed EVM chain with the subnet and name its
// CreateChainTx gave it (the primary network's for the C-chain, whose
// creation is in the genesis).
func (h *handlers) chainInfo(ctx context.Context, c api.ChainRef) (Chain, error) {
	out := Chain{EvmChainID: json.Number(c.EVMChainID), ChainName: c.Name, BlockchainID: c.BlockchainID,
		SubnetID: constants.PrimaryNetworkID.String(), Network: h.networkType()}
	var subnet, name string
	err := h.d.DB.QueryRowContext(ctx, `SELECT subnet_id, name FROM p_blockchains WHERE blockchain_id = $1`, c.BlockchainID).Scan(&subnet, &name)
	switch {
	case err == nil:
		out.SubnetID, out.ChainName = subnet, name
	case !errors.Is(err, sql.ErrNoRows):
		return Chain{}, fmt.Errorf("read blockchain %s: %w", c.BlockchainID, err)
	}
	if out.EvmChainID == "" {
		// Registered EVM chains always have a chain id; a row without one is
		// not listable as the document's Chain.
		return Chain{}, fmt.Errorf("chain %s has no EVM chain id", c.Key)
	}
	return out, nil
}

// listChains answers GET /v2/chains: every indexed EVM chain (the C-chain
// and the L1s found on the P-chain), ordered by chain key. network filters:
// mainnet, or testnet/fuji for any other network; all chains fit one page
// (the document's maximum page size is 10000), so there is never a next page.
func (h *handlers) listChains(r *http.Request) (any, error) {
	ctx := r.Context()
	p := api.NewParams(r)
	network := p.Enum("network", "", "mainnet", "fuji", "testnet")
	if err := p.Err(); err != nil {
		return nil, err
	}
	// A token of another route is a 400; this route issues none.
	var none struct{}
	if _, err := h.d.Tokens.Load(ctx, p.String("pageToken"), RouteListChains, &none); err != nil {
		return nil, err
	}
	resp := &ListChainsResponse{Chains: []Chain{}}
	want := network
	if want == "fuji" {
		want = "testnet"
	}
	if want != "" && want != h.networkType() {
		return resp, nil
	}
	for _, c := range h.d.Network.EVMChains() {
		ci, err := h.chainInfo(ctx, c)
		if err != nil {
			return nil, err
		}
		resp.Chains = append(resp.Chains, ci)
	}
	return resp, nil
}

// getChain answers GET /v2/chains/{chainId}.
func (h *handlers) getChain(r *http.Request) (any, error) {
	c, err := h.v2Chain(r.PathValue("chainId"))
	if err != nil {
		return nil, err
	}
	return h.chainInfo(r.Context(), c)
}

// healthCheck answers GET /v2/health-check with the server's health judge
// (the same report as GET /v1/health-check: 503 while a chain lags or the
// store is down).
func (h *handlers) healthCheck(r *http.Request) (any, error) {
	if h.d.Health == nil {
		return nil, errors.New("metrics: no health judge configured")
	}
	return h.d.Health.HealthCheck(r)
}

// liveCheck answers GET /v2/live-check (as GET /v1/live-check).
func (h *handlers) liveCheck(r *http.Request) (any, error) {
	if h.d.Health == nil {
		return nil, errors.New("metrics: no health judge configured")
	}
	return h.d.Health.LiveCheck(r)
}
