package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/keys"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// limiters returns every limiter that can run on db: the in-process one and
// the database one (PostgreSQL in production, but its SQL is portable).
func limiters(db *store.DB, now func() time.Time) map[string]Limiter {
	return map[string]Limiter{"memory": NewMemoryLimiter(now), "sql": NewSQLLimiter(db, now)}
}

func TestLimiterGCRA(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		for name, mk := range map[string]func(func() time.Time) Limiter{
			"memory": func(now func() time.Time) Limiter { return NewMemoryLimiter(now) },
			"sql":    func(now func() time.Time) Limiter { return NewSQLLimiter(db, now) },
		} {
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				clk := newClock(testClockStart())
				l := mk(clk.now)
				subj := "key:" + name
				// Budget 60 CU per minute: one CU refills per second.
				steps := []struct {
					cost     int64
					allowed  bool
					remain   int64
					advance  time.Duration
					resetSec int64
				}{
					{30, true, 30, 0, 30},
					{20, true, 10, 0, 50},
					{30, false, 10, 0, 20},                   // would exceed: denied, charges nothing; fits in 20 s
					{10, true, 0, 0, 60},                     // exactly the budget
					{1, false, 0, 500 * time.Millisecond, 1}, // 0.5 s on: 0.5 CU back, the next CU in 0.5 s (header ceil)
					{1, true, 0, 500 * time.Millisecond, 60},
					{61, false, 10, 10 * time.Second, 50}, // can never fit; the whole budget is back in 50 s
					{10, true, 0, 0, 60},
					{60, true, 0, time.Minute, 60}, // a minute on: whole again
				}
				for i, s := range steps {
					clk.add(s.advance)
					d, err := l.Take(ctx, subj, s.cost, 60)
					if err != nil {
						t.Fatal(err)
					}
					reset := int64((d.Reset + time.Second - 1) / time.Second)
					if d.Allowed != s.allowed || d.Remaining != s.remain || d.Limit != 60 || reset != s.resetSec {
						t.Errorf("step %d: %+v (reset %d s), want allowed %v remaining %d reset %d", i, d, reset, s.allowed, s.remain, s.resetSec)
					}
				}
				// Subjects are independent.
				if d, _ := l.Take(ctx, subj+"-other", 60, 60); !d.Allowed {
					t.Error("another subject was charged")
				}
			})
		}
		// The SQL limiter removes subjects whose budget is whole again.
		clk := newClock(testClockStart().Add(10 * time.Minute))
		l := NewSQLLimiter(db, clk.now)
		if _, err := l.Take(context.Background(), "cleanup", 1, 60); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM rate_gcra WHERE tat <= $1`, clk.now().UnixMicro()).Scan(&n); err != nil || n != 0 {
			t.Errorf("refilled subjects left: %d %v", n, err)
		}
	})
}

// TestLimiterWindowBoundary is issue #19's finding: with fixed minute
// windows a client spending its whole budget just before a minute ends got
// it whole again just after. Whatever the phase, over any 2 s at most the
// budget plus what refills in 2 s passes, on both limiters and backends.
func TestLimiterWindowBoundary(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		for name, mk := range map[string]func(func() time.Time) Limiter{
			"memory": func(now func() time.Time) Limiter { return NewMemoryLimiter(now) },
			"sql":    func(now func() time.Time) Limiter { return NewSQLLimiter(db, now) },
		} {
			t.Run(name, func(t *testing.T) {
				const budget = 600 // 10 CU refill per second
				for _, phase := range []time.Duration{59 * time.Second, 59900 * time.Millisecond, 30 * time.Second} {
					clk := newClock(time.Now().Truncate(time.Minute).Add(time.Hour).Add(phase))
					lim := mk(clk.now)
					subj := fmt.Sprintf("boundary:%s:%s", name, phase)
					var passed int64
					// Ten requests of 100 CU every 0.2 s for 2 s, crossing a minute boundary.
					for range 10 {
						for range 10 {
							d, err := lim.Take(context.Background(), subj, 100, budget)
							if err != nil {
								t.Fatal(err)
							}
							if d.Allowed {
								passed += 100
							}
						}
						clk.add(200 * time.Millisecond)
					}
					if max := int64(budget + 2*budget/60); passed > max {
						t.Errorf("phase %s: %d CU passed in 2 s, at most %d may", phase, passed, max)
					}
					if passed < budget {
						t.Errorf("phase %s: only %d CU passed, the budget is %d", phase, passed, budget)
					}
				}
			})
		}
	})
}

// hammer sends n requests from each of clients goroutines to the URLs in
// turn (loopback servers) with key, returning how many got 200 and 429.
func hammer(t *testing.T, urls []string, key string, clients, n int) (ok, limited int64) {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var okN, limN, other atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range n {
				req, _ := http.NewRequest("GET", urls[(c+i)%len(urls)]+"/v1/small", nil)
				req.Header.Set("X-Data-Api-Key", key)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 && resp.StatusCode != 429 {
					t.Errorf("%d %s", resp.StatusCode, body)
				}
				switch resp.StatusCode {
				case 200:
					okN.Add(1)
				case 429:
					limN.Add(1)
				default:
					other.Add(1)
				}
				if rem, err := strconv.Atoi(resp.Header.Get("Ratelimit-Remaining")); err != nil || rem < 0 {
					t.Errorf("ratelimit-remaining %q", resp.Header.Get("Ratelimit-Remaining"))
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if other.Load() != 0 {
		t.Errorf("%d answers were neither 200 nor 429", other.Load())
	}
	return okN.Load(), limN.Load()
}

// TestConcurrentClientsOneKey: 50 parallel clients on one key, 4 requests
// each, against a budget of 15 requests: exactly 15 succeed, with each
// backend's limiter.
func TestConcurrentClientsOneKey(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		clk := newClock(testClockStart())
		for name, l := range limiters(db, clk.now) {
			t.Run(name, func(t *testing.T) {
				cfg := testLimits()
				cfg.Tiers = map[string]int64{"team": 150} // 15 requests of 10 CU
				cfg.KeyCacheTTL = 0                       // default cache: the first lookups race to the store
				cfg.HandlerTimeout = 20 * time.Second     // new pool connections are slow on a busy machine
				f := newGuardFixture(t, db, cfg, WithLimiter(l), WithClock(clk.now))
				f.routes("")
				k, err := keys.Create(context.Background(), db, "shared "+name, "team", nil, 0)
				if err != nil {
					t.Fatal(err)
				}
				srv := httptest.NewServer(f.m)
				defer srv.Close()
				ok, limited := hammer(t, []string{srv.URL}, k, 50, 4)
				if ok != 15 || limited != 200-15 {
					t.Errorf("%d allowed, %d limited; want exactly 15 allowed of 200\n%s", ok, limited, f.logs.String())
				}
			})
		}
	})
}

// TestTwoReplicasShareBudget: two API replicas (own store handles, key
// caches, limiters and HTTP servers) on one PostgreSQL database share a
// key's budget, and see a revocation made through the other.
func TestTwoReplicasShareBudget(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	clk := newClock(testClockStart())
	var urls []string
	var guards []*Guard
	for i := range 2 {
		db := storetest.Open(t, dsn) // each replica its own pool, as separate processes would have
		cfg := testLimits()
		cfg.Tiers = map[string]int64{"team": 200} // 20 requests of 10 CU
		cfg.KeyCacheTTL = 5 * time.Second         // on the test clock
		cfg.HandlerTimeout = 20 * time.Second
		g := NewGuard(db, cfg, slog.New(slog.DiscardHandler), WithClock(clk.now))
		if _, ok := g.limiter.(*SQLLimiter); !ok {
			t.Fatalf("replica %d: PostgreSQL must get the shared SQL limiter, got %T", i, g.limiter)
		}
		m := NewMux(slog.New(slog.DiscardHandler))
		g.Install(m)
		m.HandleGuarded("GET /v1/small", RouteOpts{Weight: Small}, MessageString, func(*http.Request) (any, error) { return "ok", nil })
		srv := httptest.NewServer(m)
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
		guards = append(guards, g)
	}
	ctx := context.Background()
	k, err := keys.Create(ctx, guards[0].db, "replicated", "team", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ok, limited := hammer(t, urls, k, 50, 4)
	if ok != 20 || limited != 180 {
		t.Errorf("%d allowed, %d limited across two replicas; want exactly 20 allowed of 200", ok, limited)
	}
	// Next window: budget back on both; revoke through replica 0, replica 1 refuses.
	clk.add(time.Minute)
	get := func(url string) int {
		req, _ := http.NewRequest("GET", url+"/v1/small", nil)
		req.Header.Set("X-Data-Api-Key", k)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if a, b := get(urls[0]), get(urls[1]); a != 200 || b != 200 {
		t.Fatalf("new window: %d %d", a, b)
	}
	// Issue #19: at once on the replica that revoked, within a second on the other.
	if err := guards[0].RevokeKey(ctx, keys.IDOf(k)); err != nil {
		t.Fatal(err)
	}
	if got := get(urls[0]); got != 401 {
		t.Errorf("revoked on replica 0, replica 0 answered %d at once", got)
	}
	clk.add(keyVersionEvery)
	if got := get(urls[1]); got != 401 {
		t.Errorf("revoked on replica 0, replica 1 answered %d a second later (the key cache TTL is 5 s)", got)
	}
}

// TestRevokeWithinASecond: a key revoked by another process on the same
// database (`permafrost keys revoke`: its own store handle) stops working
// within a second although the key cache keeps lookups for 30 s, on both
// backends.
func TestRevokeWithinASecond(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			dsn := storetest.DSNFor(t, backend)
			db := storetest.Open(t, dsn)
			cli := storetest.Open(t, dsn) // the other process
			cfg := testLimits()
			cfg.KeyCacheTTL = 30 * time.Second
			f := newGuardFixture(t, db, cfg)
			f.routes("")
			ctx := context.Background()
			k, err := keys.Create(ctx, cli, "soon revoked", "pro", nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			get := func(key string) int {
				rec := httptest.NewRecorder()
				f.m.ServeHTTP(rec, rq("GET", "/v1/small", "192.0.2.1", map[string]string{"X-Data-Api-Key": key}, ""))
				return rec.Code
			}
			if got := get(k); got != 200 {
				t.Fatalf("new key: %d", got)
			}
			if err := keys.Revoke(ctx, cli, keys.IDOf(k)); err != nil {
				t.Fatal(err)
			}
			f.clk.add(keyVersionEvery)
			if got := get(k); got != 401 {
				t.Errorf("revoked by another process a second ago: %d, want 401", got)
			}
			// A creation moves the version too: lookups keep working.
			k2, err := keys.Create(ctx, cli, "created later", "pro", nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.clk.add(keyVersionEvery)
			if got := get(k2); got != 200 {
				t.Errorf("key created by another process a second ago: %d, want 200", got)
			}
		})
	}
}

func TestMemoryLimiterOverflow(t *testing.T) {
	clk := newClock(testClockStart())
	l := NewMemoryLimiter(clk.now)
	busy := clk.now().Add(time.Hour).UnixMicro() // not refilled: the sweep keeps them
	for i := range maxSubjects {
		l.tat[fmt.Sprint(i)] = busy
	}
	l.lastSweep = clk.now().UnixMicro()
	// New subjects past the cap share one state.
	if d, _ := l.Take(context.Background(), "a", 5, 6); !d.Allowed {
		t.Fatal("first overflow subject denied")
	}
	if d, _ := l.Take(context.Background(), "b", 5, 6); d.Allowed || d.Remaining != 1 {
		t.Errorf("second overflow subject: %+v", d)
	}
	// Refilled subjects are forgotten.
	for s := range l.tat {
		if s != overflowSubject {
			l.tat[s] = 1
		}
	}
	clk.add(time.Minute)
	if d, _ := l.Take(context.Background(), "b", 5, 6); !d.Allowed || len(l.tat) != 1 {
		t.Errorf("after a minute: %+v, %d subjects", d, len(l.tat))
	}
}
