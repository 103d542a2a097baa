package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
)

// JSON-RPC routes (the platform chain's POST /ext/bc/P) are metered per
// call, with the data service's budgets and headers (issue #19): a batch of
// n calls costs n times the route's weight.

// HandleMetered registers h, a handler that answers in its own shape (JSON-RPC),
// behind the guard: h calls Meter once it knows how many calls the request
// holds and answers the error Meter returns as a JSON-RPC error
// (WriteJSONRPCError). Errors the server finds before h runs (request
// limits, malformed requests) are JSON-RPC errors on pattern's path too.
// opts.Weight is the cost of one call (0: Small).
func (m *Mux) HandleMetered(pattern string, opts RouteOpts, h http.Handler) {
	if opts.Weight <= 0 {
		opts.Weight = Small
	}
	_, path, _ := strings.Cut(pattern, " ")
	if path == "" {
		path = pattern
	}
	m.jsonRPC = append(m.jsonRPC, strings.TrimSuffix(path, "/"))
	m.register(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.guard != nil {
			r = r.WithContext(context.WithValue(r.Context(), meterKey, &meter{g: m.guard, opts: opts}))
		}
		h.ServeHTTP(w, r)
	}))
}

type meter struct {
	g    *Guard
	opts RouteOpts
}

const meterKey ctxKey = 103

// Meter charges calls times the route's weight to the caller of a
// HandleMetered request (its key, or its client IP without one) and sets
// the rate-limit headers on w. A non-nil error (401 bad key, 429 over
// budget, 503 store down) is the answer instead of the calls'. Outside a
// guarded HandleMetered route it charges nothing.
func Meter(w http.ResponseWriter, r *http.Request, calls int) *Error {
	mt, ok := r.Context().Value(meterKey).(*meter)
	if !ok {
		return nil
	}
	_, e := mt.g.admit(w, r, mt.opts, int64(max(calls, 1))*int64(mt.opts.Weight))
	return e
}

// JSONRPCServerError is the code of the errors the server itself answers
// on JSON-RPC routes (rate limits, keys, request limits): avalanchego's
// code for a failed call.
const JSONRPCServerError = -32000

// WriteJSONRPCError writes e as a JSON-RPC 2.0 error object with id null
// (the request's calls were not read), keeping e's HTTP status and headers:
// {"jsonrpc":"2.0","error":{"code":-32000,"message":"..."},"id":null}.
func WriteJSONRPCError(w http.ResponseWriter, e *Error) {
	for k, vs := range e.Headers {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Status)
	w.Write(jsonRPCErrorBody(strings.Join(e.Messages, "; "))) //nolint:errcheck // the client went away
}

// jsonRPCErrorBody is a JSON-RPC 2.0 error answer with id null, members in
// gorilla's (the node's) order, and a newline.
func jsonRPCErrorBody(msg string) []byte {
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		Version string   `json:"jsonrpc"`
		Error   rpcError `json:"error"`
		ID      any      `json:"id"`
	}{"2.0", rpcError{JSONRPCServerError, msg}, nil})
	return append(b, '\n')
}
