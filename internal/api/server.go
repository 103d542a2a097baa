package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

type ctxKey int

const requestIDKey ctxKey = 1

// RequestID returns the id the server gave this request ("" outside the server).
func RequestID(r *http.Request) string {
	if v, ok := r.Context().Value(requestIDKey).(string); ok {
		return v
	}
	return ""
}

// Mux is the server's router: the standard library mux with method patterns,
// wrapped with request ids, panic recovery, an ErrorBody 404 for unknown
// paths, an access log line and the request metrics of every request.
type Mux struct {
	mux *http.ServeMux
	log *slog.Logger
	// Set before serving by Use and Guard.Install (guard.go).
	mws   []func(http.Handler) http.Handler
	h     http.Handler // mws around route
	guard *Guard
	obs   Observer // nil: no metrics
	// jsonRPC are the path prefixes whose errors are JSON-RPC objects
	// (HandleMetered routes), for the errors written before routing.
	jsonRPC []string
	// patterns are the registered routes (the /openapi.json document).
	patterns []string
	// aliases rewrite deprecated paths before routing (Alias).
	aliases []func(method, path string) (string, bool)
}

// Alias makes the router answer a path that rewrite maps to another path
// as that path. It is for deprecated paths of the hosted service that the
// standard mux cannot hold beside the current routes: a pattern like
// /v1/chains/address/{address} conflicts with /v1/chains/{chainId}/blocks
// (both match /v1/chains/address/blocks), so it is rewritten instead.
func (m *Mux) Alias(rewrite func(method, path string) (string, bool)) {
	m.aliases = append(m.aliases, rewrite)
}

// register registers h on pattern and records the pattern.
func (m *Mux) register(pattern string, h http.Handler) {
	m.mux.Handle(pattern, h)
	m.patterns = append(m.patterns, pattern)
}

// Routes lists the registered route patterns ("METHOD /path").
func (m *Mux) Routes() []string { return slices.Clone(m.patterns) }

// Observer receives the router's and the guard's measurements
// (internal/obs implements it with Prometheus collectors).
type Observer interface {
	// Request is one finished request: its route pattern ("/" for no
	// route), method, status and duration.
	Request(route, method string, status int, d time.Duration)
	// RateLimited is one request refused with 429; subject is "key", "ip"
	// or "perip".
	RateLimited(route, subject string)
}

// NewMux returns an empty router.
func NewMux(log *slog.Logger) *Mux {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Mux{mux: http.NewServeMux(), log: log}
	m.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, r, MessageString, log, NotFound("no route for %s %s", r.Method, r.URL.Path))
	})
	return m
}

// Handle registers a (result, error) handler on a "METHOD /path" pattern.
func (m *Mux) Handle(pattern string, style ErrorStyle, h Handler) {
	m.register(pattern, Wrap(style, m.log, h))
}

// HandleHTTP registers a plain http.Handler.
func (m *Mux) HandleHTTP(pattern string, h http.Handler) { m.register(pattern, h) }

// reqInfo is what the access log and the metrics learn while a request is
// served (a pointer in its context: inner handlers see copies of the request).
type reqInfo struct {
	route string
	keyID string
}

const reqInfoKey ctxKey = 2

// noteKey records the API key a request was served for (the access log's key_id).
func noteKey(r *http.Request, id string) {
	if ri, ok := r.Context().Value(reqInfoKey).(*reqInfo); ok {
		ri.keyID = id
	}
}

// routeOf is the route pattern of a request being served ("" before routing).
func routeOf(r *http.Request) string {
	if r.Pattern != "" {
		return r.Pattern
	}
	if ri, ok := r.Context().Value(reqInfoKey).(*reqInfo); ok {
		return ri.route
	}
	return ""
}

// statusWriter remembers the status written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServeHTTP adds the request id, turns panics into a logged 500 ErrorBody,
// and logs and measures the request once it is answered.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := newRequestID()
	info := &reqInfo{}
	r = r.WithContext(context.WithValue(context.WithValue(r.Context(), requestIDKey, id), reqInfoKey, info))
	w.Header().Set("X-Request-Id", id)
	sw := &statusWriter{ResponseWriter: w}
	start := time.Now()
	defer func() {
		v := recover()
		if v != nil {
			if v == http.ErrAbortHandler {
				m.finish(r, sw, info, start)
				panic(v)
			}
			m.log.Error("panic serving request", "request_id", id, "method", r.Method, "path", r.URL.Path,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			WriteJSON(sw, http.StatusInternalServerError, errorBody(http.StatusInternalServerError, MessageString,
				[]string{"internal error (request id " + id + ")"}))
		}
		m.finish(r, sw, info, start)
	}()
	if r.RequestURI == "*" && r.Method != http.MethodOptions {
		// net/http's mux answers these with an empty 400; answer in the route's shape.
		m.writePreRouting(sw, r, BadRequest(fmt.Sprintf("%s * is not a request this server answers", r.Method)))
		return
	}
	var h http.Handler = http.HandlerFunc(m.route)
	if m.h != nil {
		h = m.h
	}
	h.ServeHTTP(sw, r)
}

// route is the innermost handler: the standard mux, which sets r.Pattern
// on the request it is given; the access log and metrics read it from the
// request's reqInfo.
func (m *Mux) route(w http.ResponseWriter, r *http.Request) {
	for _, rewrite := range m.aliases {
		if p, ok := rewrite(r.Method, r.URL.Path); ok {
			r.URL.Path, r.URL.RawPath = p, ""
			break
		}
	}
	m.mux.ServeHTTP(w, r)
	if ri, ok := r.Context().Value(reqInfoKey).(*reqInfo); ok {
		ri.route = r.Pattern
	}
}

// finish writes the access log line and the request metrics.
func (m *Mux) finish(r *http.Request, sw *statusWriter, info *reqInfo, start time.Time) {
	took := time.Since(start)
	status := sw.status
	if status == 0 {
		status = http.StatusOK // nothing written: net/http answers 200
	}
	route := info.route
	if route == "" {
		route = "(none)" // refused before routing
	}
	m.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
		slog.String("method", r.Method), slog.String("route", route), slog.Int("status", status),
		slog.Float64("duration_ms", float64(took.Microseconds())/1000), slog.String("key_id", info.keyID),
		slog.String("request_id", RequestID(r)))
	if m.obs != nil {
		m.obs.Request(route, r.Method, status, took)
	}
}

// writePreRouting answers an error found before routing in the shape of
// the path's routes: a JSON-RPC error object on HandleMetered paths, else
// an ErrorBody.
func (m *Mux) writePreRouting(w http.ResponseWriter, r *http.Request, e *Error) {
	if m.isJSONRPC(r.URL.Path) {
		WriteJSONRPCError(w, e)
		return
	}
	WriteError(w, r, MessageString, nil, e)
}

func (m *Mux) isJSONRPC(path string) bool {
	for _, p := range m.jsonRPC {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

func newRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NewHTTPServer returns an http.Server with the default limits and timeouts
// (see NewHTTPServerLimits).
func NewHTTPServer(addr string, h http.Handler) *http.Server {
	return NewHTTPServerLimits(addr, h, LimitsConfig{})
}
