// Package exportapi serves transaction-export operations over HTTP:
//
//	POST /v1/operations/transactions:export      create (201, the operation)
//	GET  /v1/operations/{operationId}            read the operation
//	GET  /v1/operations/{operationId}/download   the CSV, by signed expiring URL
//
// Creating and reading operations need an API key with the "exports" scope;
// a key reads only the operations it created (others are 404). Downloads
// need no key: the URL's signature is the credential (a browser or curl can
// fetch it as is), and it expires.
//
// The jobs run on internal/export's workers: the server calls Start on the
// export.Service it passes in Deps, and Close on shutdown.
package exportapi

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/export"
)

// Deps is what the handlers need.
type Deps struct {
	Service *export.Service
	// Network resolves includeChains (chain ids, blockchain ids, aliases)
	// and the bech32 prefix of addresses.
	Network *api.Network
	Log     *slog.Logger
	// Now is the clock of request validation (default time.Now): dates
	// default to today, UTC.
	Now func() time.Time
}

// Register adds the operation routes to mux. Weights are the published
// x-execution-weight of each operation (medium to create, small to read).
func Register(mux *api.Mux, d Deps) {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	h := &handlers{d: d}
	mux.HandleGuarded("POST /v1/operations/transactions:export",
		api.RouteOpts{Weight: api.Medium, Scope: api.ScopeExports}, api.MessageString, h.create)
	mux.HandleGuarded("GET /v1/operations/{operationId}",
		api.RouteOpts{Weight: api.Small, Scope: api.ScopeExports}, api.MessageString, h.get)
	mux.HandleHTTP("GET "+export.DownloadPath("{operationId}"), http.HandlerFunc(h.download))
}

type handlers struct{ d Deps }

func owner(r *http.Request) string {
	if k := api.CallerFrom(r).Key; k != nil {
		return k.ID
	}
	return ""
}

func (h *handlers) create(r *http.Request) (any, error) {
	var req export.Request
	if err := api.DecodeJSONBody(r, &req); err != nil {
		return nil, err
	}
	spec, err := req.Validate(h.d.Network, h.d.Now())
	if err != nil {
		return nil, err
	}
	op, err := h.d.Service.Create(r.Context(), spec, owner(r))
	if err != nil {
		return nil, err
	}
	return api.Created{Value: op}, nil
}

func (h *handlers) get(r *http.Request) (any, error) {
	id := r.PathValue("operationId")
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return nil, api.BadRequest("operationId must be a UUID (as returned by POST /v1/operations/transactions:export), got " + quote(id))
	}
	op, err := h.d.Service.Get(r.Context(), id, owner(r))
	if errors.Is(err, export.ErrNotFound) {
		return nil, api.NotFound("operation %s not found (unknown, created with another API key, or expired)", id)
	}
	if err != nil {
		return nil, err
	}
	return op, nil
}

func (h *handlers) download(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("operationId")
	q := r.URL.Query()
	f, err := h.d.Service.Open(r.Context(), id, q.Get("expires"), q.Get("sig"))
	switch {
	case errors.Is(err, export.ErrBadSignature):
		err = api.Errorf(http.StatusForbidden, "the download URL is not valid; read the operation for its downloadUrl")
	case errors.Is(err, export.ErrURLExpired):
		err = api.Errorf(http.StatusForbidden, "the download URL has expired; read the operation again for a fresh downloadUrl")
	case errors.Is(err, export.ErrNotFound):
		err = api.NotFound("no export file for operation %s (unknown, not completed, or expired)", quote(id))
	}
	if err != nil {
		api.WriteError(w, r, api.MessageString, h.d.Log, err)
		return
	}
	defer f.Close()
	hd := w.Header()
	hd.Set("Content-Type", "text/csv; charset=utf-8")
	hd.Set("Content-Disposition", `attachment; filename="`+f.Name+`"`)
	hd.Set("Cache-Control", "private, no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	// A large file may take longer than the server's write timeout.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	http.ServeContent(w, r, f.Name, f.ModTime, f)
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:61] + "..."
	}
	return `"` + s + `"`
}
