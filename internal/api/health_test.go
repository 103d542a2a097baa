package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/keys"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// tcpProxy forwards loopback connections to target until cut, which makes
// the target unreachable the way a network failure does: live connections
// drop and new ones are refused.
type tcpProxy struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(p.cut)
	return p
}

func (p *tcpProxy) cut() {
	p.l.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestStoreUnreachable: PostgreSQL behind a proxy that is then cut. Every
// guarded data route answers 503 with a message, whichever step meets the
// failure (limiter, chain check, the handler's own query); the health and
// live checks report the database down.
func TestStoreUnreachable(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	direct := storetest.Open(t, dsn)
	ctx := context.Background()
	if _, err := direct.ExecContext(ctx, `INSERT INTO chains (chain_key, kind, blockchain_id, network_id, name) VALUES ('C','EVM','c',88888,'C')`); err != nil {
		t.Fatal(err)
	}
	if _, err := direct.ExecContext(ctx, `INSERT INTO checkpoints (chain_key, height, block_hash, block_time, node_height, updated_at) VALUES ('C',10,'h',0,10,$1)`, testClockStart().Unix()); err != nil {
		t.Fatal(err)
	}
	k, err := keys.Create(ctx, direct, "k", "pro", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(dsn)
	proxy := startProxy(t, u.Host)
	u.Host = proxy.l.Addr().String()
	db, err := store.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	cfg := testLimits()
	cfg.HandlerTimeout = 0
	cfg.KeyCacheTTL = 0 // default: keys seen before the cut stay known
	build := func(opts ...GuardOption) (*Mux, *Guard) {
		g := NewGuard(db, cfg, slog.New(slog.DiscardHandler), append([]GuardOption{WithClock(newClock(testClockStart()).now)}, opts...)...)
		m := NewMux(slog.New(slog.DiscardHandler))
		g.Install(m)
		m.HandleGuarded("GET /v1/chains/{chain}/thing", RouteOpts{}, MessageString, func(r *http.Request) (any, error) {
			if err := g.Health().CheckChain(r.Context(), r.PathValue("chain")); err != nil {
				return nil, err
			}
			var n int
			if err := db.QueryRowContext(r.Context(), `SELECT COUNT(*) FROM raw_blocks`).Scan(&n); err != nil {
				return nil, fmt.Errorf("count blocks: %w", err) // an unclassified error
			}
			return map[string]int{"blocks": n}, nil
		})
		m.HandleGuarded("GET /v1/raw", RouteOpts{}, MessageString, func(r *http.Request) (any, error) {
			var n int
			if err := db.QueryRowContext(r.Context(), `SELECT COUNT(*) FROM raw_blocks`).Scan(&n); err != nil {
				return nil, fmt.Errorf("count blocks: %w", err)
			}
			return n, nil
		})
		return m, g
	}
	shared, _ := build()                                             // PostgreSQL: the SQL limiter
	local, _ := build(WithLimiter(NewMemoryLimiter(testClockStart))) // limiter up, store down
	withKey := map[string]string{"X-Data-Api-Key": k}
	check(t, "before", shared, rq("GET", "/v1/chains/C/thing", "192.0.2.1", withKey, ""), want{200, `{"blocks":0}`, nil})
	check(t, "health before", shared, rq("GET", "/v1/health-check", "192.0.2.1", nil, ""), want{200,
		fmt.Sprintf(`{"status":"ok","info":{"chain:C":{"indexedHeight":10,"lag":0,"nodeHeight":10,"status":"up","updatedAt":%[1]d},"database":{"dialect":"postgres","status":"up"}},"error":{},"details":{"chain:C":{"indexedHeight":10,"lag":0,"nodeHeight":10,"status":"up","updatedAt":%[1]d},"database":{"dialect":"postgres","status":"up"}}}`, testClockStart().Unix()), nil})
	check(t, "local before", local, rq("GET", "/v1/chains/C/thing", "192.0.2.1", withKey, ""), want{200, `{"blocks":0}`, nil})

	proxy.cut()
	down := `{"error":"Service Unavailable","message":"the store is unreachable; try again later","statusCode":503}`
	check(t, "limiter", shared, rq("GET", "/v1/chains/C/thing", "192.0.2.1", withKey, ""), want{503, down, rl("", "")})
	check(t, "anonymous", shared, rq("GET", "/v1/chains/C/thing", "192.0.2.2", nil, ""), want{503, down, nil})
	check(t, "chain check", local, rq("GET", "/v1/chains/C/thing", "192.0.2.1", withKey, ""), want{503, down, rl("1000", "960")})
	check(t, "handler query", local, rq("GET", "/v1/raw", "192.0.2.1", withKey, ""), want{503, down, rl("1000", "940")})
	dbDown := `{"status":"error","info":{},"error":{"database":{"dialect":"postgres","message":"the store is unreachable","status":"down"}},"details":{"database":{"dialect":"postgres","message":"the store is unreachable","status":"down"}}}`
	check(t, "health", shared, rq("GET", "/v1/health-check", "192.0.2.1", nil, ""), want{503, dbDown, nil})
	check(t, "live", shared, rq("GET", "/v1/live-check", "192.0.2.1", nil, ""), want{503, dbDown, nil})
}

func TestHealthShuttingDown(t *testing.T) {
	db := storetest.Open(t, storetest.SQLiteDSN(t))
	f := newGuardFixture(t, db, testLimits())
	check(t, "ready", f.m, rq("GET", "/v1/health-check", "192.0.2.1", nil, ""), want{200,
		`{"status":"ok","info":{"database":{"dialect":"sqlite","status":"up"}},"error":{},"details":{"database":{"dialect":"sqlite","status":"up"}}}`, nil})
	f.g.Health().SetShuttingDown()
	check(t, "draining", f.m, rq("GET", "/v1/health-check", "192.0.2.1", nil, ""), want{503,
		`{"status":"shutting_down","info":{"database":{"dialect":"sqlite","status":"up"}},"error":{},"details":{"database":{"dialect":"sqlite","status":"up"}}}`, nil})
	check(t, "still alive", f.m, rq("GET", "/v1/live-check", "192.0.2.1", nil, ""), want{200, "", nil})
}
