package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
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
// wrapped with request ids, panic recovery and an ErrorBody 404 for unknown paths.
type Mux struct {
	mux *http.ServeMux
	log *slog.Logger
	// Set before serving by Use and Guard.Install (guard.go).
	mws   []func(http.Handler) http.Handler
	h     http.Handler // mws around mux
	guard *Guard
}

// NewMux returns an empty router.
func NewMux(log *slog.Logger) *Mux {
	m := &Mux{mux: http.NewServeMux(), log: log}
	m.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, r, MessageString, log, NotFound("no route for %s %s", r.Method, r.URL.Path))
	})
	return m
}

// Handle registers a (result, error) handler on a "METHOD /path" pattern.
func (m *Mux) Handle(pattern string, style ErrorStyle, h Handler) {
	m.mux.Handle(pattern, Wrap(style, m.log, h))
}

// HandleHTTP registers a plain http.Handler.
func (m *Mux) HandleHTTP(pattern string, h http.Handler) { m.mux.Handle(pattern, h) }

// ServeHTTP adds the request id and turns panics into a logged 500 ErrorBody.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := newRequestID()
	r = r.WithContext(context.WithValue(r.Context(), requestIDKey, id))
	w.Header().Set("X-Request-Id", id)
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			m.log.Error("panic serving request", "request_id", id, "method", r.Method, "path", r.URL.Path,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			WriteJSON(w, http.StatusInternalServerError, errorBody(http.StatusInternalServerError, MessageString,
				[]string{"internal error (request id " + id + ")"}))
		}
	}()
	start := time.Now()
	var h http.Handler = m.mux
	if m.h != nil {
		h = m.h
	}
	h.ServeHTTP(w, r)
	m.log.Debug("request", "request_id", id, "method", r.Method, "path", r.URL.Path, "took", time.Since(start))
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
