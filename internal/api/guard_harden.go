package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
)

// Harden enforces the request limits of cfg before routing: URL length,
// number and size of header lines (400 ErrorBody each), the body size, the
// comma-list length Params.List accepts, and a deadline on the handler's
// context. The server's own MaxHeaderBytes
// (NewHTTPServerLimits) refuses oversized header blocks before any handler
// runs; Guard.Serve's connections give that answer the route's shape
// (preroute.go). Errors are answered
// by write, in the shape of the path's routes (Mux.writePreRouting).
func Harden(cfg LimitsConfig, write func(http.ResponseWriter, *http.Request, *Error)) func(http.Handler) http.Handler {
	cfg = cfg.WithDefaults()
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n := len(r.RequestURI); n > cfg.MaxURLBytes {
				write(w, r, BadRequest(fmt.Sprintf("the URL is %d bytes long; at most %d are accepted", n, cfg.MaxURLBytes)))
				return
			}
			lines := 0
			for name, vs := range r.Header {
				lines += len(vs)
				for _, v := range vs {
					if len(v) > cfg.MaxHeaderValueBytes {
						write(w, r, BadRequest(fmt.Sprintf("header %s is %d bytes long; at most %d are accepted", truncate(name), len(v), cfg.MaxHeaderValueBytes)))
						return
					}
				}
			}
			if lines > cfg.MaxHeaderCount {
				write(w, r, BadRequest(fmt.Sprintf("the request has %d header lines; at most %d are accepted", lines, cfg.MaxHeaderCount)))
				return
			}
			if r.ContentLength > cfg.MaxBodyBytes {
				write(w, r, BadRequest(fmt.Sprintf("the request body is %d bytes long; at most %d are accepted", r.ContentLength, cfg.MaxBodyBytes)))
				return
			}
			if r.Body != nil && r.Body != http.NoBody {
				r.Body = http.MaxBytesReader(w, r.Body, cfg.MaxBodyBytes)
			}
			ctx := context.WithValue(r.Context(), listLimitKey, cfg.MaxListItems)
			if cfg.HandlerTimeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, cfg.HandlerTimeout)
				defer cancel()
			}
			r = r.WithContext(ctx)
			next.ServeHTTP(w, r)
		})
	}
}

// listLimitKey carries LimitsConfig.MaxListItems to NewParams.
const listLimitKey ctxKey = 102

// NewHTTPServerLimits is NewHTTPServer with the body, header and timeout
// limits of cfg (defaults filled in; DefaultLimits equals NewHTTPServer's).
func NewHTTPServerLimits(addr string, h http.Handler, cfg LimitsConfig) *http.Server {
	cfg = cfg.WithDefaults()
	return &http.Server{
		Addr:              addr,
		Handler:           http.MaxBytesHandler(h, cfg.MaxBodyBytes),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
	}
}

// Serve serves srv on l (or srv.Addr when l is nil) until ctx ends, then
// shuts down gracefully: the health check turns to 503 shutting_down, the
// listener closes, and in-flight requests get up to ShutdownGrace to finish
// before their connections are closed. Returns nil after a clean drain.
func (g *Guard) Serve(ctx context.Context, srv *http.Server, l net.Listener) error {
	if l == nil {
		var err error
		if l, err = net.Listen("tcp", cmp.Or(srv.Addr, ":http")); err != nil {
			return fmt.Errorf("serve %s: %w", srv.Addr, err)
		}
	}
	// net/http's own error answers in the route's shape (preroute.go).
	l = shapedListener{Listener: l, g: g}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", srv.Addr, err)
	case <-ctx.Done():
	}
	g.health.SetShuttingDown()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.cfg.ShutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		srv.Close() //nolint:errcheck // forced after the grace period
		return fmt.Errorf("shutdown %s: %w", srv.Addr, err)
	}
	g.log.Info("server drained", "addr", srv.Addr)
	return nil
}
