package api

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// TestGracefulShutdown: a request in flight when the server is told to stop
// completes; the health check turns to shutting_down; new connections are
// refused once the listener closes; Serve returns nil after the drain.
func TestGracefulShutdown(t *testing.T) {
	db := storetest.Open(t, storetest.SQLiteDSN(t))
	cfg := testLimits()
	cfg.HandlerTimeout = 10 * time.Second
	f := newGuardFixture(t, db, cfg)
	entered, release := make(chan struct{}), make(chan struct{})
	f.m.HandleGuarded("GET /v1/slow-ok", RouteOpts{Weight: Free}, MessageString, func(r *http.Request) (any, error) {
		close(entered)
		<-release
		return "done", nil
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewHTTPServerLimits(l.Addr().String(), f.m, f.g.Config())
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.g.Serve(ctx, srv, l) }()
	base := "http://" + l.Addr().String()

	type result struct {
		status int
		body   string
		err    error
	}
	inflight := make(chan result, 1)
	go func() {
		resp, err := http.Get(base + "/v1/slow-ok")
		if err != nil {
			inflight <- result{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		inflight <- result{status: resp.StatusCode, body: strings.TrimSpace(string(b))}
	}()
	<-entered
	cancel() // SIGTERM
	deadline := time.Now().Add(5 * time.Second)
	for !f.g.Health().shuttingDown.Load() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	// The listener closes promptly while the request is still running.
	for {
		c, err := net.DialTimeout("tcp", l.Addr().String(), 200*time.Millisecond)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("listener still accepting after shutdown began")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-served:
		t.Fatal("Serve returned before the in-flight request finished")
	default:
	}
	rec := check(t, "draining health", f.m, rq("GET", "/v1/health-check", "192.0.2.1", nil, ""), want{503, "", nil})
	if !strings.HasPrefix(rec.Body.String(), `{"status":"shutting_down"`) {
		t.Errorf("health while draining: %s", rec.Body.String())
	}
	close(release)
	if r := <-inflight; r.err != nil || r.status != 200 || r.body != `"done"` {
		t.Errorf("in-flight request: %+v", r)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the drain")
	}
}

// TestServerLimits: a client that never finishes its headers is cut off
// after ReadHeaderTimeout, and a header block over MaxHeaderBytes is refused
// before any handler runs.
func TestServerLimits(t *testing.T) {
	cfg := LimitsConfig{ReadHeaderTimeout: 300 * time.Millisecond, MaxHeaderBytes: 4096}
	m := NewMux(slog.New(slog.DiscardHandler))
	called := false
	m.Handle("GET /x", MessageString, func(*http.Request) (any, error) { called = true; return 1, nil })
	srv := NewHTTPServerLimits("127.0.0.1:0", m, cfg)
	if srv.ReadTimeout != 30*time.Second || srv.WriteTimeout != 60*time.Second || srv.IdleTimeout != 120*time.Second || srv.MaxHeaderBytes != 4096 {
		t.Errorf("server limits: %+v", srv)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()

	// Slowloris: half a request line, then silence.
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	io.WriteString(c, "GET /x HTTP/1.1\r\nHost: a\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _ := c.Read(make([]byte, 512))
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("slow client held the connection %v (read %d bytes)", took, n)
	}

	// Oversized header block (net/http allows 4 KiB of slack over MaxHeaderBytes).
	c2, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	io.WriteString(c2, "GET /x HTTP/1.1\r\nHost: a\r\nX-Big: "+strings.Repeat("b", 20000)+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || called {
		t.Errorf("oversized headers: %d (handler called %v)", resp.StatusCode, called)
	}
}

func TestLimitsDefaults(t *testing.T) {
	d := LimitsConfig{}.WithDefaults()
	old := NewHTTPServer("a", http.NotFoundHandler())
	nw := NewHTTPServerLimits("a", http.NotFoundHandler(), LimitsConfig{})
	if old.ReadHeaderTimeout != nw.ReadHeaderTimeout || old.ReadTimeout != nw.ReadTimeout || old.WriteTimeout != nw.WriteTimeout ||
		old.IdleTimeout != nw.IdleTimeout || old.MaxHeaderBytes != nw.MaxHeaderBytes {
		t.Error("DefaultLimits must match NewHTTPServer")
	}
	if d.AnonymousCU != 6000 || d.Tiers["pro"] != 20000 || d.LagThreshold != 100 || len(d.CORSOrigins) != 1 || d.HandlerTimeout >= d.WriteTimeout {
		t.Errorf("defaults: %+v", d)
	}
	// Set fields are kept; an empty origin list disables CORS.
	c := LimitsConfig{AnonymousCU: -1, CORSOrigins: []string{}}.WithDefaults()
	if c.AnonymousCU != -1 || len(c.CORSOrigins) != 0 {
		t.Errorf("explicit values overwritten: %+v", c)
	}
	h := CORS(c.CORSOrigins)(http.NotFoundHandler())
	r := rq("GET", "/", "192.0.2.1", map[string]string{"Origin": "https://a"}, "")
	w := &headerRecorder{h: http.Header{}}
	h.ServeHTTP(w, r)
	if w.h.Get("Access-Control-Allow-Origin") != "" {
		t.Error("CORS must be off with no origins")
	}
	w = &headerRecorder{h: http.Header{}}
	CORS(nil)(http.NotFoundHandler()).ServeHTTP(w, r)
	if w.h.Get("Access-Control-Allow-Origin") != "" {
		t.Error("CORS(nil) is off; WithDefaults turns nil into *")
	}
	w = &headerRecorder{h: http.Header{}}
	CORS([]string{"*"})(http.NotFoundHandler()).ServeHTTP(w, r)
	if w.h.Get("Access-Control-Allow-Origin") != "*" || w.h.Get("Vary") != "" {
		t.Errorf("wildcard CORS: %v", w.h)
	}
}

type headerRecorder struct {
	h    http.Header
	code int
}

func (r *headerRecorder) Header() http.Header         { return r.h }
func (r *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *headerRecorder) WriteHeader(c int)           { r.code = c }
