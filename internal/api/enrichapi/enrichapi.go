// Package enrichapi connects internal/enrich to the HTTP API: the NFT
// metadata reindex route (POST .../tokens/{tokenId}:reindex), and the
// adapters through which the data handlers read prices and curated
// contract facts.
//
// Wiring (in serve):
//
//	svc, _ := enrich.New(ctx, db, enrich.Config{Chains: enrichapi.ChainsFrom(set), ...}, log)
//	svc.Start(ctx); defer svc.Close()
//	evmdata.Register(mux, evmdata.Deps{..., Enrichment: enrichapi.EVM(svc)})
//	primarydata.Register(mux, primarydata.Deps{..., Prices: svc})
//	enrichapi.Register(mux, enrichapi.Deps{Service: svc, Network: network, Log: log})
package enrichapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
	evmdata "github.com/permafrost-dev/permafrost/internal/api/data/evm"
	primarydata "github.com/permafrost-dev/permafrost/internal/api/data/primary"
	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/enrich"
)

// Reindexer queues NFT metadata refetches (*enrich.Service).
type Reindexer interface {
	ReindexNFT(ctx context.Context, chainKey, token, tokenID string) error
}

// Deps is what the reindex route needs.
type Deps struct {
	Service Reindexer
	Network *api.Network
	Log     *slog.Logger
}

// Register adds POST /v1/chains/{chainId}/nfts/collections/{address}/tokens/{tokenId}:reindex.
// Its published weight is small; it needs an API key with the reindex
// scope (none: 401, without the scope: 403), and accepts one request per
// token per enrich.NFTConfig.ReindexInterval (else 429 with Retry-After).
func Register(mux *api.Mux, d Deps) {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	h := &handler{d: d}
	// {tokenId}:reindex is one path segment, which a pattern wildcard
	// cannot share with a literal: the handler splits it.
	mux.HandleGuarded("POST /v1/chains/{chainId}/nfts/collections/{address}/tokens/{tokenAction}",
		api.RouteOpts{Weight: api.Small, Scope: api.ScopeReindex}, api.MessageString, h.reindex)
}

type handler struct{ d Deps }

const reindexSuffix = ":reindex"

func (h *handler) reindex(r *http.Request) (any, error) {
	action := r.PathValue("tokenAction")
	if !strings.Contains(action, ":") {
		// The token itself: GET only (this pattern took its POSTs).
		e := api.Errorf(http.StatusMethodNotAllowed, "POST is not allowed on an NFT token; POST .../tokens/{tokenId}:reindex queues a metadata refetch")
		e.Headers = http.Header{"Allow": {"GET, HEAD"}}
		return nil, e
	}
	if !strings.HasSuffix(action, reindexSuffix) {
		return nil, api.NotFound("no route POST %s (did you mean .../tokens/{tokenId}:reindex?)", clip(r.URL.Path))
	}
	if h.d.Service == nil || h.d.Network == nil {
		return nil, api.Unavailable("NFT metadata enrichment is not running on this server")
	}
	chain, err := h.d.Network.EVMChain(r.PathValue("chainId"))
	if err != nil {
		return nil, err
	}
	p := api.NewParams(r)
	rawAddr := r.PathValue("address")
	addr, aerr := api.ParseEVMAddress(rawAddr)
	if aerr != nil || !strings.HasPrefix(strings.ToLower(rawAddr), "0x") {
		p.Fail("address must be an EVM address (0x followed by 40 hex digits), got %q", clip(rawAddr))
	}
	rawID := strings.TrimSuffix(action, reindexSuffix)
	id, ok := api.ParseTokenID(rawID)
	if !ok {
		p.Fail("tokenId must be a token id (a decimal integer below 2^256), got %q", clip(rawID))
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	token := strings.ToLower(addr.Hex())
	err = h.d.Service.ReindexNFT(r.Context(), chain.Key, token, id)
	var soon *enrich.TooSoonError
	switch {
	case err == nil:
		h.d.Log.Info("NFT metadata reindex queued", "chain", chain.Key, "token", token, "id", id,
			"request_id", api.RequestID(r))
		return api.Created{Value: struct{}{}}, nil
	case errors.Is(err, enrich.ErrNFTDisabled):
		return nil, api.Unavailable("NFT metadata fetching is disabled on this server")
	case errors.Is(err, enrich.ErrNotFound):
		return nil, api.NotFound("token %s of collection %s is not indexed on chain %s", id, token, chain.EVMChainID)
	case errors.As(err, &soon):
		secs := strconv.FormatInt(int64((soon.RetryAfter+time.Second-1)/time.Second), 10)
		e := api.Errorf(http.StatusTooManyRequests, "token %s of collection %s was reindexed recently: one reindex per token per %s; retry in %s s",
			id, token, soon.Interval, secs)
		e.Headers = http.Header{"Retry-After": {secs}}
		return nil, e
	}
	return nil, fmt.Errorf("reindex %s/%s: %w", token, id, err)
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// EVM adapts the service to the EVM data handlers' Enrichment (nil for a
// nil service: the handlers then leave prices and curated fields out).
func EVM(s *enrich.Service) evmdata.Enrichment {
	if s == nil {
		return nil
	}
	return evmAdapter{s}
}

type evmAdapter struct{ s *enrich.Service }

func (a evmAdapter) CurrentPrices(ctx context.Context, evmChainID string, tokens []string, currency string) map[string]string {
	return a.s.CurrentPrices(ctx, evmChainID, tokens, currency)
}

func (a evmAdapter) Curated(evmChainID, address string) (evmdata.Curated, bool) {
	c, ok := a.s.Curated(evmChainID, address)
	if !ok {
		return evmdata.Curated{}, false
	}
	out := evmdata.Curated{Name: c.Name, Description: c.Description, OfficialSite: c.OfficialSite, Email: c.Email,
		Color: c.Color, Tags: c.Tags}
	if c.LogoAsset != nil {
		out.LogoAsset = &evmdata.ImageAsset{AssetID: c.LogoAsset.AssetID, ImageURI: c.LogoAsset.ImageURI}
	}
	if c.BannerAsset != nil {
		out.BannerAsset = &evmdata.ImageAsset{AssetID: c.BannerAsset.AssetID, ImageURI: c.BannerAsset.ImageURI}
	}
	for _, l := range c.ResourceLinks {
		out.ResourceLinks = append(out.ResourceLinks, evmdata.ResourceLink{Type: l.Type, URL: l.URL})
	}
	return out, true
}

// The service prices rewards as the primary handlers ask.
var _ primarydata.Prices = (*enrich.Service)(nil)

// ChainsFrom lists the EVM chains of a chain set with their RPC clients.
func ChainsFrom(set *chains.Set) []enrich.Chain {
	var out []enrich.Chain
	for _, c := range set.Chains {
		if src, ok := c.Source.(*chains.EVMSource); ok && src.EVM != nil {
			out = append(out, enrich.Chain{Key: c.Key, EVMChainID: c.EVMChainID, RPC: src.EVM})
		}
	}
	return out
}
