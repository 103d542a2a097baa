// Package warpapi serves the data service's signature-aggregation endpoints
// (spec section 4.2) over internal/warp:
//
//	POST /v1/signatureAggregator/{network}/aggregateSignatures
//	GET  /v1/signatureAggregator/{network}/aggregateSignatures/{txHash}
//
// Both answer 201 {"signedMessage": "<hex>"}. Errors: an invalid request 400,
// an unknown network or transaction 404, too little signing weight 503 (the
// signing subnet's validators did not answer or refused; the message gives
// the signed, needed and total weight), anything else 500.
package warpapi

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/warp"
)

// Aggregator is what the handlers need; *warp.Aggregator implements it.
type Aggregator interface {
	Aggregate(ctx context.Context, req warp.Request) ([]byte, error)
	AggregateForTx(ctx context.Context, networkID uint32, txHash string) ([]byte, error)
}

// Deps is what the handlers need. A nil Aggregator (signature aggregation
// not configured) makes both routes answer 503.
type Deps struct {
	Aggregator Aggregator
	Network    *api.Network
	Log        *slog.Logger
}

// Response is SignatureAggregationResponse: the signed Warp message in hex,
// without 0x (as the published example).
type Response struct {
	SignedMessage string `json:"signedMessage"`
}

// Register adds the signature-aggregation routes to mux.
func Register(mux *api.Mux, d Deps) {
	h := &handlers{d: d}
	// x-execution-weight of both operations: medium.
	opts := api.RouteOpts{Weight: api.Medium}
	mux.HandleGuarded("POST /v1/signatureAggregator/{network}/aggregateSignatures", opts, api.MessageString, h.aggregate)
	mux.HandleGuarded("GET /v1/signatureAggregator/{network}/aggregateSignatures/{txHash}", opts, api.MessageString, h.aggregateForTx)
}

type handlers struct{ d Deps }

func (h *handlers) check(r *http.Request) error {
	if err := h.d.Network.CheckNetwork(r.PathValue("network")); err != nil {
		return err
	}
	if h.d.Aggregator == nil {
		return api.Unavailable("signature aggregation is not enabled on this server")
	}
	return nil
}

func (h *handlers) aggregate(r *http.Request) (any, error) {
	if err := h.check(r); err != nil {
		return nil, err
	}
	req, err := warp.DecodeRequest(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, api.BadRequest(fmt.Sprintf("the request body is larger than %d bytes", tooLarge.Limit))
		}
		return nil, toAPIError(err)
	}
	req.NetworkID = h.d.Network.ID
	signed, err := h.d.Aggregator.Aggregate(r.Context(), req)
	if err != nil {
		return nil, toAPIError(err)
	}
	return api.Created{Value: Response{SignedMessage: hex.EncodeToString(signed)}}, nil
}

func (h *handlers) aggregateForTx(r *http.Request) (any, error) {
	if err := h.check(r); err != nil {
		return nil, err
	}
	signed, err := h.d.Aggregator.AggregateForTx(r.Context(), h.d.Network.ID, r.PathValue("txHash"))
	if err != nil {
		return nil, toAPIError(err)
	}
	return api.Created{Value: Response{SignedMessage: hex.EncodeToString(signed)}}, nil
}

// toAPIError maps the aggregator's errors to statuses (see internal/warp's
// package doc); other errors stay as they are and become a 500 whose cause
// is logged, not shown.
func toAPIError(err error) error {
	var (
		reqErr    *warp.RequestError
		quorumErr *warp.QuorumError
	)
	switch {
	case errors.As(err, &reqErr):
		return api.BadRequest(reqErr.Msg)
	case errors.As(err, &quorumErr):
		return api.Unavailable(quorumErr.Error())
	case errors.Is(err, warp.ErrNotFound):
		return api.NotFound("%s", err.Error())
	}
	return err
}
