package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/permafrost-dev/permafrost/internal/obs"
)

// startAdmin serves the operators' endpoints on addr (--admin-listen):
// GET /metrics, Prometheus' text format. Nothing when addr is "". The
// returned stop shuts the listener down. It is apart from --listen: the
// metrics name routes, chains and queue depths an operator may not want
// public, and it answers whatever the API's rate limits.
func startAdmin(addr string, m *obs.Metrics, log *slog.Logger) (stop func(), _ error) {
	if addr == "" || m == nil {
		return func() {}, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--admin-listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin listener failed", "addr", l.Addr().String(), "err", err)
		}
	}()
	log.Info("serving metrics", "addr", l.Addr().String(), "path", "/metrics")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
