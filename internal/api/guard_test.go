package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/keys"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// syncBuffer collects log output from concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// clock is a settable test clock.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock    { c := &clock{}; c.ns.Store(t.UnixNano()); return c }
func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

// testClockStart is 20 s into a minute (limits no longer depend on it: GCRA).
func testClockStart() time.Time { return time.Now().Truncate(time.Minute).Add(20 * time.Second) }

type guardFixture struct {
	db   *store.DB
	g    *Guard
	m    *Mux
	clk  *clock
	logs *syncBuffer
	// keys: pro (exports), free (no scopes), revoked, expiring in 1h
	pro, free, revoked, expiring string
}

func testLimits() LimitsConfig {
	return LimitsConfig{
		Tiers:                 map[string]int64{"free": 30, "pro": 1000},
		AnonymousCU:           25,
		MetricsPerIPPerMinute: 3,
		LagThreshold:          10,
		StaleAfter:            time.Minute,
		HandlerTimeout:        200 * time.Millisecond,
		KeyCacheTTL:           -1,
		MaxURLBytes:           512,
		MaxHeaderValueBytes:   256,
		MaxHeaderCount:        20,
		MaxBodyBytes:          4096,
		MaxListItems:          3,
		CORSOrigins:           []string{"https://app.example"},
	}
}

func newGuardFixture(t *testing.T, db *store.DB, cfg LimitsConfig, opts ...GuardOption) *guardFixture {
	t.Helper()
	ctx := context.Background()
	f := &guardFixture{db: db, clk: newClock(testClockStart()), logs: &syncBuffer{}}
	log := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.g = NewGuard(db, cfg, log, append([]GuardOption{WithClock(f.clk.now)}, opts...)...)
	f.m = NewMux(log)
	f.g.Install(f.m)
	mk := func(name, tier string, scopes []string, exp time.Duration) string {
		k, err := keys.Create(ctx, db, name, tier, scopes, exp)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	f.pro = mk("pro", "pro", []string{ScopeExports}, 0)
	f.free = mk("free", "free", nil, 0)
	f.revoked = mk("revoked", "pro", []string{"*"}, 0)
	if err := keys.Revoke(ctx, db, keys.IDOf(f.revoked)); err != nil {
		t.Fatal(err)
	}
	f.expiring = mk("expiring", "pro", []string{"*"}, time.Hour)
	return f
}

// routes registers the test routes a data handler would: each exercises one
// way a handler ends.
func (f *guardFixture) routes(upstreamURL string) {
	f.m.HandleGuarded("GET /v1/small", RouteOpts{Weight: Small}, MessageString, func(r *http.Request) (any, error) {
		return map[string]any{"ok": true}, nil
	})
	f.m.HandleGuarded("POST /v1/operations/transactions:export", RouteOpts{Weight: Medium, Scope: ScopeExports}, MessageString,
		func(r *http.Request) (any, error) {
			var body struct {
				Type    string `json:"type"`
				Options struct {
					Addresses []string `json:"addresses"`
				} `json:"options"`
			}
			if err := DecodeJSONBody(r, &body); err != nil {
				return nil, err
			}
			return Created{map[string]any{"type": body.Type, "key": CallerFrom(r).Key.ID}}, nil
		})
	f.m.HandleGuarded("GET /v1/chains/{chain}/thing", RouteOpts{}, MessageString, func(r *http.Request) (any, error) {
		if err := f.g.Health().CheckChain(r.Context(), r.PathValue("chain")); err != nil {
			return nil, err
		}
		return map[string]string{"chain": r.PathValue("chain")}, nil
	})
	f.m.HandleGuarded("GET /v1/upstream", RouteOpts{Weight: Free}, MessageString, func(r *http.Request) (any, error) {
		req, _ := http.NewRequestWithContext(r.Context(), "POST", upstreamURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_getBalance"}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, Upstream(err)
		}
		defer resp.Body.Close()
		var out struct{ Result string }
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return nil, Upstream(fmt.Errorf("eth_getBalance answer: %w", err))
		}
		return out, nil
	})
	f.m.HandleGuarded("GET /v1/boom", RouteOpts{Weight: Free}, MessageString, func(r *http.Request) (any, error) {
		var m map[string]int
		m["x"] = 1 // a nil-map panic, as a bug would
		return nil, nil
	})
	f.m.HandleGuarded("GET /v1/slow", RouteOpts{Weight: Free}, MessageString, func(r *http.Request) (any, error) {
		<-r.Context().Done() // a query that outlives the handler deadline
		return nil, fmt.Errorf("query: %w", r.Context().Err())
	})
	f.m.HandleGuarded("GET /v1/list", RouteOpts{Weight: Free}, MessageString, func(r *http.Request) (any, error) {
		p := NewParams(r)
		l := p.List("addresses")
		if err := p.Err(); err != nil {
			return nil, err
		}
		return l, nil
	})
	f.m.HandleGuarded("GET /v1/avg_tps/{chainId}", RouteOpts{Weight: Free, PerIP: true}, MessageArray, func(r *http.Request) (any, error) {
		return map[string]any{"results": []any{}, "key": CallerFrom(r).Key != nil}, nil
	})
}

func (f *guardFixture) setChains(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	now := f.clk.now().Unix()
	for _, c := range []struct {
		key               string
		checkpoint        bool
		height, node, upd int64
	}{
		{"P", true, 100, 100, now - 3600}, // caught up, no heartbeat for an hour: down, still served
		{"C", true, 100, 150, now},        // 50 behind
		{"X", true, 200, 205, now - 120},  // 5 behind and stuck for 2 minutes
		{"Z", false, 0, 0, 0},             // registered, nothing indexed
	} {
		if _, err := f.db.ExecContext(ctx, `INSERT INTO chains (chain_key, kind, blockchain_id, network_id, name) VALUES ($1, 'EVM', $2, 88888, $1)`,
			c.key, "bc-"+c.key); err != nil {
			t.Fatal(err)
		}
		if c.checkpoint {
			if _, err := f.db.ExecContext(ctx, `INSERT INTO checkpoints (chain_key, height, block_hash, block_time, node_height, updated_at) VALUES ($1,$2,'h',0,$3,$4)`,
				c.key, c.height, c.node, c.upd); err != nil {
				t.Fatal(err)
			}
		}
	}
}

type want struct {
	status int
	body   string            // exact (trimmed); "" skips
	hdr    map[string]string // exact values; "" means absent
}

func rq(method, target, ip string, hdr map[string]string, body string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, target, rd)
	r.RemoteAddr = ip + ":40000"
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	return r
}

func check(t *testing.T, name string, m http.Handler, r *http.Request, w want) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, r)
	got := strings.TrimSpace(rec.Body.String())
	if rec.Code != w.status || (w.body != "" && got != w.body) {
		t.Errorf("%s: got %d %s\nwant %d %s", name, rec.Code, got, w.status, w.body)
	}
	for k, v := range w.hdr {
		if g := rec.Header().Get(k); g != v {
			t.Errorf("%s: header %s = %q, want %q", name, k, g, v)
		}
	}
	if rec.Code >= 400 && rec.Header().Get("Content-Type") != "application/json; charset=utf-8" {
		t.Errorf("%s: error content type %q", name, rec.Header().Get("Content-Type"))
	}
	return rec
}

func rl(limit, remaining string) map[string]string {
	return map[string]string{"Ratelimit-Limit": limit, "Ratelimit-Remaining": remaining, "Ratelimit-Reset": "", "Retry-After": ""}
}

func TestGuardStatusPaths(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>502 Bad Gateway</html>")
	}))
	defer upstream.Close()
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		f := newGuardFixture(t, db, testLimits())
		f.routes(upstream.URL)
		f.setChains(t)
		m := f.m
		const anonA, anonB, anonC, anonD = "192.0.2.1", "198.51.100.7", "203.0.113.9", "192.0.2.99"
		key := func(h, k string) map[string]string { return map[string]string{h: k} }

		// Anonymous budget: 25 CU per minute per IP; /v1/small costs 10.
		check(t, "anon 1", m, rq("GET", "/v1/small", anonA, nil, ""), want{200, `{"ok":true}`, rl("25", "15")})
		check(t, "anon 2", m, rq("GET", "/v1/small", anonA, nil, ""), want{200, `{"ok":true}`, rl("25", "5")})
		check(t, "anon 429", m, rq("GET", "/v1/small", anonA, nil, ""), want{429,
			`{"error":"Too Many Requests","message":"rate limit exceeded: this request costs 10 compute units, 5 of 25 per minute remain; retry in 12 s","statusCode":429}`,
			map[string]string{"Ratelimit-Limit": "25", "Ratelimit-Remaining": "5", "Ratelimit-Reset": "12", "Retry-After": "12"}})
		// A route without a weight costs Medium (20): one fits in 25, the next does not.
		check(t, "default weight", m, rq("GET", "/v1/chains/P/thing", anonD, nil, ""), want{200, `{"chain":"P"}`, rl("25", "5")})

		// Keys.
		check(t, "no key on a scoped route", m, rq("POST", "/v1/operations/transactions:export", anonB, nil, `{"type":"TRANSACTION_EXPORT_EVM"}`), want{401,
			`{"error":"Unauthorized","message":"this route needs an API key with the \"exports\" scope","statusCode":401}`, rl("25", "5")})
		check(t, "unknown key", m, rq("GET", "/v1/small", anonC, key("X-Data-Api-Key", "pfk_0000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), ""), want{401,
			`{"error":"Unauthorized","message":"the API key is not valid (unknown, revoked or expired)","statusCode":401}`, rl("25", "15")})
		check(t, "junk key", m, rq("GET", "/v1/small", anonC, key("X-Data-Api-Key", "hunter2"), ""), want{401,
			`{"error":"Unauthorized","message":"the API key is not valid (unknown, revoked or expired)","statusCode":401}`, rl("25", "5")})
		check(t, "bad keys spend the IP budget", m, rq("GET", "/v1/small", anonC, key("X-Data-Api-Key", "hunter2"), ""), want{429, "",
			map[string]string{"Ratelimit-Limit": "25", "Ratelimit-Remaining": "5", "Retry-After": "12"}})
		check(t, "revoked key", m, rq("GET", "/v1/small", "192.0.2.50", key("X-Data-Api-Key", f.revoked), ""), want{401,
			`{"error":"Unauthorized","message":"the API key is not valid (unknown, revoked or expired)","statusCode":401}`, rl("25", "15")})
		check(t, "glacier header", m, rq("GET", "/v1/small", anonA, key("X-Glacier-Api-Key", f.pro), ""), want{200, `{"ok":true}`, rl("1000", "990")})
		check(t, "key without scope", m, rq("POST", "/v1/operations/transactions:export", anonA, key("X-Data-Api-Key", f.free), `{"type":"x"}`), want{403,
			`{"error":"Forbidden","message":"the API key lacks the \"exports\" scope this route needs","statusCode":403}`, rl("30", "10")})
		rec := check(t, "key with scope", m, rq("POST", "/v1/operations/transactions:export", anonA,
			map[string]string{"X-Data-Api-Key": f.pro, "Content-Type": "application/json"}, `{"type":"TRANSACTION_EXPORT_EVM","options":{"addresses":["0x1"]}}`),
			want{201, fmt.Sprintf(`{"key":%q,"type":"TRANSACTION_EXPORT_EVM"}`, keys.IDOf(f.pro)), rl("1000", "970")})
		_ = rec
		check(t, "strict body", m, rq("POST", "/v1/operations/transactions:export", anonA, key("X-Data-Api-Key", f.pro), `{"type":"x","extra":1}`), want{400,
			`{"error":"Bad Request","message":"unknown field \"extra\"","statusCode":400}`, rl("1000", "950")})
		check(t, "body over the server limit", m, rq("POST", "/v1/operations/transactions:export", anonA, key("X-Data-Api-Key", f.pro), `{"type":"`+strings.Repeat("x", 5000)+`"}`), want{400,
			`{"error":"Bad Request","message":"the request body is 5011 bytes long; at most 4096 are accepted","statusCode":400}`, nil})

		// Chains: lag, stuck ingestion, nothing indexed.
		check(t, "lagging chain", m, rq("GET", "/v1/chains/C/thing", anonB, key("X-Data-Api-Key", f.pro), ""), want{503,
			`{"error":"Service Unavailable","message":"chain C is being indexed: 50 blocks behind its node (at most 10 allowed); try again later","statusCode":503}`, rl("1000", "930")})
		check(t, "stuck chain", m, rq("GET", "/v1/chains/X/thing", anonB, key("X-Data-Api-Key", f.pro), ""), want{503,
			`{"error":"Service Unavailable","message":"ingestion of chain X has not advanced for 2m0s while 5 blocks behind its node; try again later","statusCode":503}`, nil})
		check(t, "empty chain", m, rq("GET", "/v1/chains/Z/thing", anonB, key("X-Data-Api-Key", f.pro), ""), want{503,
			`{"error":"Service Unavailable","message":"chain Z has not indexed any block yet; try again later","statusCode":503}`, nil})
		check(t, "healthy chain", m, rq("GET", "/v1/chains/P/thing", anonB, key("X-Data-Api-Key", f.pro), ""), want{200, `{"chain":"P"}`, nil})

		// Upstream failure, panic, timeout.
		rec = check(t, "bad upstream", m, rq("GET", "/v1/upstream", anonB, key("X-Data-Api-Key", f.pro), ""), want{502,
			`{"error":"Bad Gateway","message":"the upstream node gave an invalid answer; try again later","statusCode":502}`, rl("1000", "869")})
		if id := rec.Header().Get("X-Request-Id"); !strings.Contains(f.logs.String(), "request_id="+id) || !strings.Contains(f.logs.String(), "eth_getBalance answer: invalid character '<'") {
			t.Errorf("502 cause not logged with request id %s:\n%s", id, f.logs.String())
		}
		rec = check(t, "panic", m, rq("GET", "/v1/boom", anonB, key("X-Data-Api-Key", f.pro), ""), want{500, "", rl("1000", "868")})
		id := rec.Header().Get("X-Request-Id")
		if got := strings.TrimSpace(rec.Body.String()); len(id) != 16 || got != `{"error":"Internal Server Error","message":"internal error (request id `+id+`)","statusCode":500}` {
			t.Errorf("panic body %s (id %s)", got, id)
		}
		if !strings.Contains(f.logs.String(), `msg="panic serving request" request_id=`+id) || !strings.Contains(f.logs.String(), "assignment to entry in nil map") {
			t.Errorf("panic not logged with request id %s:\n%s", id, f.logs.String())
		}
		check(t, "handler timeout", m, rq("GET", "/v1/slow", anonB, key("X-Data-Api-Key", f.pro), ""), want{503,
			`{"error":"Service Unavailable","message":"the request took longer than 200ms; try a smaller page","statusCode":503}`, nil})

		// Metrics: per IP, keys ignored, message arrays.
		for i := 2; i >= 0; i-- {
			check(t, "metrics", m, rq("GET", "/v1/avg_tps/C", anonA, key("X-Data-Api-Key", f.pro), ""), want{200, `{"key":false,"results":[]}`, rl("3", fmt.Sprint(i))})
		}
		check(t, "metrics 429", m, rq("GET", "/v1/avg_tps/C", anonA, nil, ""), want{429,
			`{"error":"Too Many Requests","message":["rate limit exceeded: this request costs 1 compute units, 0 of 3 per minute remain; retry in 20 s"],"statusCode":429}`,
			map[string]string{"Ratelimit-Limit": "3", "Ratelimit-Remaining": "0", "Ratelimit-Reset": "20", "Retry-After": "20"}})
		check(t, "metrics other IP", m, rq("GET", "/v1/avg_tps/C", anonB, nil, ""), want{200, "", rl("3", "2")})

		// Request limits (before routing and rate limiting).
		check(t, "long URL", m, rq("GET", "/v1/small?x="+strings.Repeat("a", 600), anonB, nil, ""), want{400,
			`{"error":"Bad Request","message":"the URL is 612 bytes long; at most 512 are accepted","statusCode":400}`, rl("", "")})
		check(t, "long header", m, rq("GET", "/v1/small", anonB, map[string]string{"X-Junk": strings.Repeat("j", 300)}, ""), want{400,
			`{"error":"Bad Request","message":"header X-Junk is 300 bytes long; at most 256 are accepted","statusCode":400}`, nil})
		many := map[string]string{}
		for i := range 21 {
			many[fmt.Sprintf("X-H%d", i)] = "v"
		}
		check(t, "many headers", m, rq("GET", "/v1/small", anonB, many, ""), want{400,
			`{"error":"Bad Request","message":"the request has 21 header lines; at most 20 are accepted","statusCode":400}`, nil})
		check(t, "list limit", m, rq("GET", "/v1/list?addresses=a,b,c", anonB, nil, ""), want{200, `["a","b","c"]`, nil})
		check(t, "list over the limit", m, rq("GET", "/v1/list?addresses=a,b&addresses=c,d", anonB, nil, ""), want{400,
			`{"error":"Bad Request","message":"addresses takes at most 3 items, got 4","statusCode":400}`, nil})
		check(t, "unknown route", m, rq("GET", "/v1/nope", anonB, nil, ""), want{404,
			`{"error":"Not Found","message":"no route for GET /v1/nope","statusCode":404}`, rl("", "")})

		// Health: C lags, X is stuck and P's ingester has not reported for an
		// hour (a frozen index), so not ready; alive while the store answers.
		healthBody := func(status string) string {
			up := fmt.Sprintf(`{"dialect":%q,"status":"up"}`, db.Dialect())
			p := fmt.Sprintf(`{"indexedHeight":100,"lag":0,"message":"ingestion of chain P has not reported for 1h0m0s (is the ingester running and its node reachable?); the index is served as of height 100","nodeHeight":100,"status":"down","updatedAt":%d}`, f.clk.now().Unix()-3600)
			c := fmt.Sprintf(`{"indexedHeight":100,"lag":50,"message":"chain C is being indexed: 50 blocks behind its node (at most 10 allowed); try again later","nodeHeight":150,"status":"down","updatedAt":%d}`, f.clk.now().Unix())
			x := fmt.Sprintf(`{"indexedHeight":200,"lag":5,"message":"ingestion of chain X has not advanced for 2m0s while 5 blocks behind its node; try again later","nodeHeight":205,"status":"down","updatedAt":%d}`, f.clk.now().Unix()-120)
			z := `{"indexedHeight":-1,"lag":0,"message":"chain Z has not indexed any block yet; try again later","nodeHeight":0,"status":"down"}`
			return fmt.Sprintf(`{"status":%q,"info":{"database":%s},"error":{"chain:C":%s,"chain:P":%s,"chain:X":%s,"chain:Z":%s},"details":{"chain:C":%s,"chain:P":%s,"chain:X":%s,"chain:Z":%s,"database":%s}}`,
				status, up, c, p, x, z, c, p, x, z, up)
		}
		check(t, "health-check", m, rq("GET", "/v1/health-check", anonD, nil, ""), want{503, healthBody("error"), rl("3", "2")})
		check(t, "live-check", m, rq("GET", "/v1/live-check", anonD, nil, ""), want{200, healthBody("ok"), rl("3", "1")})

		// A minute restores budgets (GCRA: 25 CU refill per minute; 5 CU in 12 s,
		// the Retry-After above); an hour on, the expiring key has expired.
		f.clk.add(time.Minute)
		check(t, "new window", m, rq("GET", "/v1/small", anonA, nil, ""), want{200, `{"ok":true}`, rl("25", "15")})
		check(t, "expiring key, valid", m, rq("GET", "/v1/small", anonA, key("X-Data-Api-Key", f.expiring), ""), want{200, `{"ok":true}`, rl("1000", "990")})
		f.clk.add(time.Hour)
		check(t, "expired key", m, rq("GET", "/v1/small", anonA, key("X-Data-Api-Key", f.expiring), ""), want{401,
			`{"error":"Unauthorized","message":"the API key is not valid (unknown, revoked or expired)","statusCode":401}`, rl("25", "15")})

		// CORS: allowed origin, preflight, other origin.
		check(t, "cors", m, rq("GET", "/v1/small", anonB, map[string]string{"Origin": "https://app.example"}, ""), want{200, `{"ok":true}`,
			map[string]string{"Access-Control-Allow-Origin": "https://app.example", "Vary": "Origin",
				"Access-Control-Expose-Headers": "Ratelimit-Limit, Ratelimit-Remaining, Ratelimit-Reset, Retry-After, X-Request-Id"}})
		check(t, "cors preflight", m, rq("OPTIONS", "/v1/operations/transactions:export", anonB,
			map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-data-api-key"}, ""),
			want{204, "", map[string]string{"Access-Control-Allow-Origin": "https://app.example", "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
				"Access-Control-Allow-Headers": "Content-Type, X-Data-Api-Key, X-Glacier-Api-Key", "Access-Control-Max-Age": "600", "Ratelimit-Limit": ""}})
		check(t, "cors other origin", m, rq("GET", "/v1/small", anonB, map[string]string{"Origin": "https://evil.example"}, ""), want{200, `{"ok":true}`,
			map[string]string{"Access-Control-Allow-Origin": "", "Vary": "Origin"}})
		check(t, "cors other origin preflight", m, rq("OPTIONS", "/v1/small", anonB,
			map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"}, ""),
			want{204, "", map[string]string{"Access-Control-Allow-Origin": "", "Access-Control-Allow-Methods": ""}})
	})
}

func TestGuardAnonymousDisabledAndUnknownTier(t *testing.T) {
	db := storetest.Open(t, storetest.SQLiteDSN(t))
	cfg := testLimits()
	cfg.AnonymousCU = -1
	f := newGuardFixture(t, db, cfg)
	f.routes("http://127.0.0.1:1")
	check(t, "anonymous refused", f.m, rq("GET", "/v1/small", "192.0.2.1", nil, ""), want{401,
		`{"error":"Unauthorized","message":"this server needs an API key (header x-data-api-key)","statusCode":401}`, rl("", "")})
	check(t, "bad key refused", f.m, rq("GET", "/v1/small", "192.0.2.1", map[string]string{"X-Data-Api-Key": "x"}, ""), want{401,
		`{"error":"Unauthorized","message":"the API key is not valid (unknown, revoked or expired)","statusCode":401}`, rl("", "")})
	check(t, "health stays open", f.m, rq("GET", "/v1/live-check", "192.0.2.1", nil, ""), want{200, "", rl("3", "2")})
	// A key whose tier has no budget in the config gets none (anonymous budget, here 0).
	odd, err := keys.Create(context.Background(), db, "odd", "platinum", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "unknown tier", f.m, rq("GET", "/v1/small", "192.0.2.1", map[string]string{"X-Data-Api-Key": odd}, ""), want{429, "", map[string]string{"Ratelimit-Limit": "0", "Ratelimit-Remaining": "0"}})
	if !strings.Contains(f.logs.String(), "tier=platinum") {
		t.Errorf("unknown tier not logged:\n%s", f.logs.String())
	}
}

func TestHandleGuardedWithoutGuard(t *testing.T) {
	m := NewMux(slog.New(slog.DiscardHandler))
	m.HandleGuarded("GET /open", RouteOpts{Weight: Small}, MessageString, func(*http.Request) (any, error) { return 1, nil })
	m.HandleGuarded("POST /export", RouteOpts{Scope: ScopeExports}, MessageString, func(*http.Request) (any, error) { return 1, nil })
	check(t, "open", m, rq("GET", "/open", "192.0.2.1", nil, ""), want{200, "1", rl("", "")})
	check(t, "scoped fails closed", m, rq("POST", "/export", "192.0.2.1", map[string]string{"X-Data-Api-Key": "anything"}, ""), want{401,
		`{"error":"Unauthorized","message":"this route needs an API key with the \"exports\" scope","statusCode":401}`, nil})
}

func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	cases := []struct {
		remote, xff, want string
	}{
		{"192.0.2.1:5", "", "192.0.2.1"},
		{"192.0.2.1:5", "1.2.3.4", "192.0.2.1"},                 // untrusted peer: its XFF is ignored
		{"10.0.0.5:5", "1.2.3.4", "1.2.3.4"},                    // trusted proxy
		{"10.0.0.5:5", "6.6.6.6, 1.2.3.4, 10.0.0.9", "1.2.3.4"}, // spoofed left part ignored
		{"10.0.0.5:5", "10.1.1.1, 10.0.0.9", "10.1.1.1"},        // all trusted: the leftmost
		{"10.0.0.5:5", "garbage, 10.0.0.9", "10.0.0.9"},         // unparseable: the last trusted hop
		{"10.0.0.5:5", "", "10.0.0.5"},
		{"[fd00::1]:443", "[2001:db8::7]:1234", "2001:db8::7"},
		{"[::ffff:10.0.0.5]:80", "::ffff:1.2.3.4", "1.2.3.4"}, // 4in6 unmapped
		{"not an address", "1.2.3.4", "invalid IP"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := ClientIP(r, trusted).String(); got != c.want {
			t.Errorf("%s / %q: got %s, want %s", c.remote, c.xff, got, c.want)
		}
	}
	if got := ipSubject(netip.MustParseAddr("2001:db8:1:2:3:4:5:6")); got != "2001:db8:1:2::/64" {
		t.Errorf("ipv6 subject %s", got)
	}
}
