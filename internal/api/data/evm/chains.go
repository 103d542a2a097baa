package evm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"

	"github.com/ava-labs/avalanchego/utils/constants"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// The published ApiFeature values.
var apiFeatures = []string{"nftIndexing", "webhooks", "teleporter"}

// listChains answers /v1/chains: the EVM chains this server indexes (the
// C-chain and EVM L1s), filtered by network and feature.
func (h *handlers) listChains(r *http.Request) (any, error) {
	p := api.NewParams(r)
	network := p.Enum("network", "", "mainnet", "fuji", "testnet")
	feature := p.Enum("feature", "", apiFeatures...)
	if err := p.Err(); err != nil {
		return nil, err
	}
	resp := ListChainsResponse{Chains: []ChainInfo{}}
	if network != "" && h.d.Network.CheckNetwork(network) != nil {
		return resp, nil // another network: none of its chains is indexed here
	}
	for _, c := range h.d.Network.EVMChains() {
		ci, err := h.chainInfo(r.Context(), c)
		if err != nil {
			return nil, err
		}
		if feature != "" && !contains(ci.EnabledFeatures, feature) {
			continue
		}
		resp.Chains = append(resp.Chains, ci)
	}
	return resp, nil
}

// getChain answers /v1/chains/{chainId} (GetChainResponse: ChainInfo).
func (h *handlers) getChain(r *http.Request) (any, error) {
	c, err := h.d.Network.EVMChain(r.PathValue("chainId"))
	if err != nil {
		return nil, err
	}
	return h.chainInfo(r.Context(), c)
}

func (h *handlers) chainInfo(ctx context.Context, c api.ChainRef) (ChainInfo, error) {
	cfg, _ := h.chainConfig(c)
	t := h.nativeToken(c)
	ci := ChainInfo{
		ChainID:         c.EVMChainID,
		Status:          "OK",
		ChainName:       cfg.Name,
		Description:     cfg.Description,
		PlatformChainID: c.BlockchainID,
		VMName:          "EVM",
		ExplorerURL:     cfg.ExplorerURL,
		RPCURL:          cfg.RPCURL,
		WSURL:           cfg.WSURL,
		IsTestnet:       h.d.Network.Name != "mainnet",
		NetworkToken:    NetworkToken{Name: t.Name, Symbol: t.Symbol, Decimals: t.Decimals, LogoURI: t.LogoURI, Description: t.Description},
		ChainLogoURI:    cfg.LogoURI,
		EnabledFeatures: cfg.Features,
	}
	if ci.EnabledFeatures == nil {
		ci.EnabledFeatures = []string{"nftIndexing"}
	}
	if ci.ChainName == "" {
		ci.ChainName = c.Name
	}
	if ci.ChainName == "" || ci.ChainName == c.Key {
		ci.ChainName = "EVM chain " + c.EVMChainID
		if c.Key == "C" {
			ci.ChainName = "C-Chain"
		}
	}
	// Subnet and VM from the P-chain index when it holds the chain.
	var subnet, vm sql.NullString
	err := h.d.DB.QueryRowContext(ctx, `SELECT subnet_id, vm_id FROM p_blockchains WHERE blockchain_id = $1`, c.BlockchainID).Scan(&subnet, &vm)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return ci, fmt.Errorf("chain %s: %w", c.Key, err)
	}
	ci.SubnetID, ci.VMID = subnet.String, vm.String
	if c.Key == "C" {
		if ci.SubnetID == "" {
			ci.SubnetID = constants.PrimaryNetworkID.String()
		}
		if ci.VMID == "" {
			ci.VMID = constants.EVMID.String()
		}
	}
	if h.d.Health != nil {
		if h.d.Health.CheckChain(ctx, c.Key) != nil {
			ci.Status = "UNAVAILABLE"
		}
	} else if tip, err := indexedTip(ctx, h.d.DB, c.Key); err != nil {
		return ci, err
	} else if tip < 0 {
		ci.Status = "UNAVAILABLE"
	}
	return ci, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
