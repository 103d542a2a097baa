// Package webhooks serves the webhook registrations of the published
// document's Webhooks tag:
//
//	POST   /v1/webhooks                              create (201)
//	GET    /v1/webhooks                              list the key's webhooks (paged, ?status=)
//	GET    /v1/webhooks/{id}                         read
//	PATCH  /v1/webhooks/{id}                         update name, description, url, status, include*
//	DELETE /v1/webhooks/{id}                         deactivate (the registration is kept)
//	GET    /v1/webhooks/{id}/addresses               the addresses of an EVM webhook (paged)
//	PATCH  /v1/webhooks/{id}/addresses               add addresses to an EVM webhook
//	DELETE /v1/webhooks/{id}/addresses               remove addresses from an EVM webhook
//	POST   /v1/webhooks:generateOrRotateSharedSecret the key's new signing secret (201)
//	GET    /v1/webhooks:getSharedSecret              the key's signing secret
//
// Every route needs an API key with the "webhooks" scope; a key sees only
// the webhooks it created (others are 404, as unknown ids are).
package webhooks

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/webhooks"
)

// Deps is what the handlers need.
type Deps struct {
	Registry *webhooks.Registry
	Network  *api.Network
	Pager    *api.Pager
	// Policy is the SSRF policy on webhook URLs.
	Policy webhooks.URLPolicy
	Log    *slog.Logger
}

// Page sizes of both listings (the document: default 10, 1 to 100).
const (
	defaultPageSize = 10
	maxPageSize     = 100
)

// Register adds the webhook routes to mux. Weights are the document's
// x-execution-weight of each operation.
func Register(mux *api.Mux, d Deps) {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	h := &handlers{d: d}
	small := api.RouteOpts{Weight: api.Small, Scope: api.ScopeWebhooks}
	medium := api.RouteOpts{Weight: api.Medium, Scope: api.ScopeWebhooks}
	mux.HandleGuarded("POST /v1/webhooks", medium, api.MessageString, h.create)
	mux.HandleGuarded("GET /v1/webhooks", small, api.MessageString, h.list)
	mux.HandleGuarded("GET /v1/webhooks/{id}", small, api.MessageString, h.get)
	mux.HandleGuarded("PATCH /v1/webhooks/{id}", medium, api.MessageString, h.update)
	mux.HandleGuarded("DELETE /v1/webhooks/{id}", medium, api.MessageString, h.deactivate)
	mux.HandleGuarded("GET /v1/webhooks/{id}/addresses", medium, api.MessageString, h.addresses)
	mux.HandleGuarded("PATCH /v1/webhooks/{id}/addresses", medium, api.MessageString, h.addAddresses)
	mux.HandleGuarded("DELETE /v1/webhooks/{id}/addresses", medium, api.MessageString, h.removeAddresses)
	mux.HandleGuarded("POST /v1/webhooks:generateOrRotateSharedSecret", medium, api.MessageString, h.rotateSecret)
	mux.HandleGuarded("GET /v1/webhooks:getSharedSecret", small, api.MessageString, h.secret)
}

type handlers struct{ d Deps }

// owner is the API key id of the caller (the guard let only keys with the
// webhooks scope through).
func owner(r *http.Request) string {
	if k := api.CallerFrom(r).Key; k != nil {
		return k.ID
	}
	return ""
}

// id reads the path's webhook id: a UUID, else a 400.
func id(r *http.Request) (string, error) {
	s := r.PathValue("id")
	if _, err := uuid.Parse(s); err != nil || len(s) != 36 {
		return "", api.BadRequest("id must be a webhook id (a UUID, as returned by POST /v1/webhooks), got " + quote(s))
	}
	return strings.ToLower(s), nil
}

func notFound(err error, id string) error {
	if errors.Is(err, webhooks.ErrNotFound) {
		return api.NotFound("webhook %s not found (unknown, or created with another API key)", id)
	}
	return err
}

func respond(w *webhooks.Webhook, err error, wid string) (any, error) {
	if err != nil {
		return nil, notFound(err, wid)
	}
	return w.Response()
}

func (h *handlers) create(r *http.Request) (any, error) {
	var req webhooks.CreateRequest
	if err := api.DecodeJSONBody(r, &req); err != nil {
		return nil, err
	}
	w, err := req.Validate(h.d.Network, h.d.Policy)
	if err != nil {
		return nil, err
	}
	if err := h.d.Registry.Create(r.Context(), owner(r), w); err != nil {
		return nil, err
	}
	resp, err := w.Response()
	if err != nil {
		return nil, err
	}
	return api.Created{Value: resp}, nil
}

func (h *handlers) list(r *http.Request) (any, error) {
	p := api.NewParams(r)
	size := p.PageSize(defaultPageSize, 1, maxPageSize)
	status := p.Enum("status", "", webhooks.StatusActive, webhooks.StatusInactive)
	if err := p.Err(); err != nil {
		return nil, err
	}
	const route = "webhooks.list"
	o := owner(r)
	filter := api.FilterKey(p.Values(), o)
	var after *webhooks.Cursor
	if tok := p.String("pageToken"); tok != "" {
		after = &webhooks.Cursor{}
		if err := h.d.Pager.Decode(tok, route, filter, after); err != nil {
			return nil, err
		}
	}
	ws, err := h.d.Registry.List(r.Context(), o, status, after, size)
	if err != nil {
		return nil, err
	}
	resp := webhooks.ListResponse{Webhooks: []webhooks.Response{}}
	if len(ws) > size {
		ws = ws[:size]
		last := ws[len(ws)-1]
		resp.NextPageToken = h.d.Pager.Encode(route, filter, webhooks.Cursor{CreatedAt: last.CreatedAt, ID: last.ID})
	}
	for _, w := range ws {
		v, err := w.Response()
		if err != nil {
			return nil, err
		}
		resp.Webhooks = append(resp.Webhooks, v)
	}
	return resp, nil
}

func (h *handlers) get(r *http.Request) (any, error) {
	wid, err := id(r)
	if err != nil {
		return nil, err
	}
	w, err := h.d.Registry.Get(r.Context(), owner(r), wid)
	return respond(w, err, wid)
}

func (h *handlers) update(r *http.Request) (any, error) {
	wid, err := id(r)
	if err != nil {
		return nil, err
	}
	var req webhooks.UpdateRequest
	if err := api.DecodeJSONBody(r, &req); err != nil {
		return nil, err
	}
	cur, err := h.d.Registry.Get(r.Context(), owner(r), wid)
	if err != nil {
		return nil, notFound(err, wid)
	}
	if err := req.Validate(cur, h.d.Policy); err != nil {
		return nil, err
	}
	w, err := h.d.Registry.Update(r.Context(), owner(r), wid, &req)
	return respond(w, err, wid)
}

func (h *handlers) deactivate(r *http.Request) (any, error) {
	wid, err := id(r)
	if err != nil {
		return nil, err
	}
	w, err := h.d.Registry.Deactivate(r.Context(), owner(r), wid)
	return respond(w, err, wid)
}

// addressCursor is the keyset position of an addresses listing.
type addressCursor struct {
	After string `json:"a"`
}

func (h *handlers) addresses(r *http.Request) (any, error) {
	wid, err := id(r)
	if err != nil {
		return nil, err
	}
	p := api.NewParams(r)
	size := p.PageSize(defaultPageSize, 1, maxPageSize)
	if err := p.Err(); err != nil {
		return nil, err
	}
	const route = "webhooks.addresses"
	filter := api.FilterKey(p.Values(), owner(r), wid)
	var c addressCursor
	if tok := p.String("pageToken"); tok != "" {
		if err := h.d.Pager.Decode(tok, route, filter, &c); err != nil {
			return nil, err
		}
	}
	keys, total, err := h.d.Registry.Addresses(r.Context(), owner(r), wid, c.After, size)
	if err != nil {
		return nil, notFound(err, wid)
	}
	resp := webhooks.AddressesResponse{Addresses: keys, TotalAddresses: total}
	if len(keys) > size {
		resp.Addresses = keys[:size]
		resp.NextPageToken = h.d.Pager.Encode(route, filter, addressCursor{After: keys[size-1]})
	}
	return resp, nil
}

func (h *handlers) changeAddresses(r *http.Request, add bool) (any, error) {
	wid, err := id(r)
	if err != nil {
		return nil, err
	}
	var req webhooks.AddressesRequest
	if err := api.DecodeJSONBody(r, &req); err != nil {
		return nil, err
	}
	keys, err := req.Validate()
	if err != nil {
		return nil, err
	}
	var w *webhooks.Webhook
	if add {
		w, err = h.d.Registry.AddKeys(r.Context(), owner(r), wid, keys)
	} else {
		w, err = h.d.Registry.RemoveKeys(r.Context(), owner(r), wid, keys)
	}
	return respond(w, err, wid)
}

func (h *handlers) addAddresses(r *http.Request) (any, error)    { return h.changeAddresses(r, true) }
func (h *handlers) removeAddresses(r *http.Request) (any, error) { return h.changeAddresses(r, false) }

func (h *handlers) rotateSecret(r *http.Request) (any, error) {
	s, err := h.d.Registry.RotateSecret(r.Context(), owner(r))
	if err != nil {
		return nil, err
	}
	return api.Created{Value: webhooks.SecretResponse{Secret: s}}, nil
}

func (h *handlers) secret(r *http.Request) (any, error) {
	s, err := h.d.Registry.Secret(r.Context(), owner(r))
	if errors.Is(err, webhooks.ErrNotFound) {
		return nil, api.NotFound("this API key has no shared secret yet: create a webhook or POST /v1/webhooks:generateOrRotateSharedSecret")
	}
	if err != nil {
		return nil, err
	}
	return webhooks.SecretResponse{Secret: s}, nil
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:61] + "..."
	}
	return `"` + s + `"`
}
