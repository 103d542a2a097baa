package enrich

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// geckoServer speaks the CoinGecko API v3 subset the provider uses, on
// 127.0.0.1, with its own rate limit (429 beyond it).
type geckoServer struct {
	srv   *httptest.Server
	key   string
	mu    sync.Mutex
	hits  []string                             // request paths with queries
	limit int                                  // requests answered before 429s (0: no limit)
	coins map[string]map[string]any            // coin -> currency -> price (JSON number)
	token map[string]map[string]map[string]any // platform -> address -> currency -> price
	hist  map[string]map[string]map[string]any // coin -> dd-mm-yyyy -> currency -> price
	ids   map[string]map[string]string         // platform -> address -> coin id
}

func newGeckoServer(t *testing.T) *geckoServer {
	g := &geckoServer{key: "test-key", coins: map[string]map[string]any{}, token: map[string]map[string]map[string]any{},
		hist: map[string]map[string]map[string]any{}, ids: map[string]map[string]string{}}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *geckoServer) requests() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.hits...)
}

func (g *geckoServer) serve(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hits = append(g.hits, r.URL.RequestURI())
	if r.Header.Get("x-cg-demo-api-key") != g.key {
		http.Error(w, `{"status":{"error_code":401}}`, http.StatusUnauthorized)
		return
	}
	if g.limit > 0 && len(g.hits) > g.limit {
		w.Header().Set("Retry-After", "30")
		http.Error(w, `{"status":{"error_code":429,"error_message":"You've exceeded the Rate Limit"}}`, http.StatusTooManyRequests)
		return
	}
	q := r.URL.Query()
	vs := strings.Split(q.Get("vs_currencies"), ",")
	pick := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for _, c := range vs {
			if v, ok := m[c]; ok {
				out[c] = v
			}
		}
		return out
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	out := map[string]any{}
	switch {
	case r.URL.Path == "/simple/price":
		for _, id := range strings.Split(q.Get("ids"), ",") {
			if m, ok := g.coins[id]; ok {
				out[id] = pick(m)
			}
		}
	case len(parts) == 3 && parts[0] == "simple" && parts[1] == "token_price":
		for _, a := range strings.Split(q.Get("contract_addresses"), ",") {
			if m, ok := g.token[parts[2]][a]; ok {
				out[a] = pick(m)
			}
		}
	case len(parts) == 3 && parts[0] == "coins" && parts[2] == "history":
		out["id"] = parts[1]
		if m, ok := g.hist[parts[1]][q.Get("date")]; ok {
			out["market_data"] = map[string]any{"current_price": m}
		}
	case len(parts) == 4 && parts[0] == "coins" && parts[2] == "contract":
		id, ok := g.ids[parts[1]][parts[3]]
		if !ok {
			http.Error(w, `{"error":"coin not found"}`, http.StatusNotFound)
			return
		}
		out["id"] = id
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func geckoConfig(g *geckoServer) PriceConfig {
	return PriceConfig{Provider: "coingecko", CoinGecko: CoinGeckoConfig{BaseURL: g.srv.URL, APIKey: g.key, RequestsPerMinute: 600,
		Platforms: map[string]string{"88888": "devnet-a"}, NativeCoins: map[string]string{"88888": "avalanche-2"}}}
}

// Current prices from a CoinGecko-speaking server: natives by coin id,
// ERC-20s by contract, exponents normalised, unknown tokens absent (never
// zero), answers cached for CurrentTTL; the key is sent; no provider: no
// prices.
func TestCoinGeckoCurrent(t *testing.T) {
	forEachDevnet(t, func(t *testing.T, d *devnet) {
		g := newGeckoServer(t)
		devt, ftk := d.contracts["erc20"], d.contracts["factoryChild"]
		g.coins["avalanche-2"] = map[string]any{"usd": 35.12, "eur": 32.5, "jpy": 5400}
		g.token["devnet-a"] = map[string]map[string]any{devt: {"usd": 1.0001, "eur": 1.2e-05}}
		var offset atomic.Int64
		clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		s := newService(t, d.DB, Config{Chains: []Chain{d.chain()}, Prices: geckoConfig(g)}, WithClock(clock))
		tokens := []string{"", devt, ftk}
		got := s.CurrentPrices(t.Context(), "88888", tokens, "eur")
		want := map[string]string{"": "32.5", devt: "0.000012"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("eur: %v, want %v", got, want)
		}
		n := len(g.requests())
		if n != 2 {
			t.Errorf("%d requests for one native and two tokens, want 2: %v", n, g.requests())
		}
		// Other currencies come from the same answers (the provider asks for all 14).
		if got := s.CurrentPrices(t.Context(), "88888", tokens, "jpy"); got[""] != "5400" || len(got) != 1 {
			t.Errorf("jpy: %v", got)
		}
		if got := s.CurrentPrices(t.Context(), "88888", tokens, "usd"); got[devt] != "1.0001" || got[""] != "35.12" {
			t.Errorf("usd: %v", got)
		}
		if len(g.requests()) != n {
			t.Errorf("cached prices asked again: %v", g.requests()[n:])
		}
		for _, r := range g.requests() {
			if !strings.Contains(r, "vs_currencies=usd%2Ceur%2Caud") {
				t.Errorf("request %s does not ask for every currency", r)
			}
		}
		// After the TTL the server is asked again and its new price shown.
		g.mu.Lock()
		g.coins["avalanche-2"]["eur"] = 33
		g.mu.Unlock()
		offset.Add(int64(6 * time.Minute))
		if got := s.CurrentPrices(t.Context(), "88888", []string{""}, "eur"); got[""] != "33" {
			t.Errorf("after the TTL: %v", got)
		}
		if got := s.CurrentPrices(t.Context(), "88888", []string{""}, "btc"); got != nil {
			t.Errorf("unknown currency: %v", got)
		}
		// A chain the configuration does not price.
		if got := s.CurrentPrices(t.Context(), "43113", []string{"", devt}, "usd"); len(got) != 0 {
			t.Errorf("unpriced chain: %v", got)
		}
		none := newService(t, d.DB, Config{Chains: []Chain{d.chain()}})
		if got := none.CurrentPrices(t.Context(), "88888", tokens, "usd"); got != nil {
			t.Errorf("no provider: %v", got)
		}
		if v, ok := none.HistoricalPrice(t.Context(), "x", "usd", time.Unix(0, 0)); ok {
			t.Errorf("no provider: historical %s", v)
		}
	})
}

// The provider never exceeds its own rate limit (prices are left out
// instead of waiting), and a 429 from the server pauses it for the
// server's Retry-After.
func TestCoinGeckoRateLimit(t *testing.T) {
	forEachDevnet(t, func(t *testing.T, d *devnet) {
		g := newGeckoServer(t)
		g.coins["avalanche-2"] = map[string]any{"usd": 35}
		var offset atomic.Int64
		clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		pc := geckoConfig(g)
		pc.CoinGecko.RequestsPerMinute = 2
		pc.CurrentTTL = time.Nanosecond // every lookup asks
		s := newService(t, d.DB, Config{Chains: []Chain{d.chain()}, Prices: pc}, WithClock(clock))
		answered := 0
		for i := 0; i < 10; i++ {
			if s.CurrentPrices(t.Context(), "88888", []string{""}, "usd")[""] == "35" {
				answered++
			}
		}
		if n := len(g.requests()); n != 2 || answered != 2 {
			t.Errorf("%d requests, %d answers in a burst with 2 per minute", n, answered)
		}
		offset.Add(int64(time.Minute))
		if s.CurrentPrices(t.Context(), "88888", []string{""}, "usd")[""] != "35" {
			t.Error("no price a minute later")
		}

		// The server's own limit: a 429 pauses every request for its Retry-After (30s).
		g.mu.Lock()
		g.limit = len(g.hits)
		g.mu.Unlock()
		offset.Add(int64(time.Minute))
		if got := s.CurrentPrices(t.Context(), "88888", []string{""}, "usd"); len(got) != 0 {
			t.Errorf("throttled: %v", got)
		}
		n := len(g.requests())
		offset.Add(int64(20 * time.Second))
		s.CurrentPrices(t.Context(), "88888", []string{""}, "usd")
		if len(g.requests()) != n {
			t.Error("asked the server within its Retry-After")
		}
		g.mu.Lock()
		g.limit = 0
		g.mu.Unlock()
		offset.Add(int64(time.Minute))
		if s.CurrentPrices(t.Context(), "88888", []string{""}, "usd")[""] != "35" {
			t.Error("no price after the pause")
		}
	})
}

// Reward prices: AVAX rewards are priced as the C-chain's native coin on
// the reward's UTC day, once it is more than 24 hours old; daily prices
// are kept in the database; tokens' coin ids come from their contract.
func TestCoinGeckoHistorical(t *testing.T) {
	forEachDevnet(t, func(t *testing.T, d *devnet) {
		g := newGeckoServer(t)
		paid := time.Unix(1795348000, 0) // 2026-11-22, the recording's day
		g.hist["avalanche-2"] = map[string]map[string]any{"22-11-2026": {"usd": 29.75, "eur": 27.1}}
		g.ids["devnet-a"] = map[string]string{d.contracts["erc20"]: "devnet-token"}
		g.hist["devnet-token"] = map[string]map[string]any{"21-11-2026": {"usd": 0.5}}
		now := paid.Add(12 * time.Hour)
		clock := func() time.Time { return now }
		const avax = "2fombhL7aGPwj3KH4bfrmJwW6PVnMobf9Y2fn9GwxiAAJyFDbe" // any id: the test configures it as AVAX
		s := newService(t, d.DB, Config{Chains: []Chain{d.chain()}, AVAXAssetID: avax, Prices: geckoConfig(g)}, WithClock(clock))
		if v, ok := s.HistoricalPrice(t.Context(), avax, "usd", paid); ok || len(g.requests()) != 0 {
			t.Errorf("a reward of 12 hours ago: %s %v (%d requests)", v, ok, len(g.requests()))
		}
		now = paid.Add(48 * time.Hour)
		if v, ok := s.HistoricalPrice(t.Context(), avax, "eur", paid); !ok || v != "27.1" {
			t.Errorf("eur: %s %v", v, ok)
		}
		if r := g.requests(); len(r) != 1 || !strings.HasPrefix(r[0], "/coins/avalanche-2/history?date=22-11-2026") {
			t.Errorf("requests: %v", r)
		}
		if v, ok := s.HistoricalPrice(t.Context(), avax, "usd", paid.Add(time.Hour)); !ok || v != "29.75" || len(g.requests()) != 1 {
			t.Errorf("same day from the database: %s %v, %d requests", v, ok, len(g.requests()))
		}
		if n := count(t, d.DB, `SELECT COUNT(*) FROM enrich_price_history WHERE provider = 'coingecko' AND asset_chain = '88888' AND asset_token = '' AND day = '2026-11-22'`); n != 2 {
			t.Errorf("%d stored quotes, want 2 (usd, eur)", n)
		}
		// A day without data: absent, remembered for a while.
		if _, ok := s.HistoricalPrice(t.Context(), avax, "usd", paid.Add(-72*time.Hour)); ok {
			t.Error("a day without a price")
		}
		n := len(g.requests())
		s.HistoricalPrice(t.Context(), avax, "usd", paid.Add(-72*time.Hour))
		if len(g.requests()) != n {
			t.Error("a missing day asked again at once")
		}
		// A non-AVAX primary-network asset has no CoinGecko id.
		if _, ok := s.HistoricalPrice(t.Context(), "other-asset", "usd", paid); ok {
			t.Error("a non-AVAX asset priced")
		}
		// An ERC-20 by its contract.
		if v, ok := s.historical(t.Context(), Asset{Chain: "88888", Token: d.contracts["erc20"]}, "usd", paid.Add(-24*time.Hour)); !ok || v != "0.5" {
			t.Errorf("token: %s %v", v, ok)
		}
	})
}

// The static provider serves its file and follows its edits.
func TestStaticPricesReload(t *testing.T) {
	forEachDevnet(t, func(t *testing.T, d *devnet) {
		path := filepath.Join(t.TempDir(), "prices.yaml")
		devt := d.contracts["erc20"]
		writeFile(t, path, "prices:\n  - chainId: C\n    current: {usd: \"30\"}\n  - chainId: \"88888\"\n    token: \""+devt+"\"\n    current: {usd: \"2\"}\n")
		s := newService(t, d.DB, Config{Chains: []Chain{d.chain()}, Prices: PriceConfig{Provider: "static", StaticFile: path},
			Registry: RegistryConfig{Poll: 20 * time.Millisecond}, NFT: NFTConfig{Disabled: true}, Tokens: TokenConfig{Disabled: true},
			Trace: TraceConfig{Disabled: true}})
		if got := s.CurrentPrices(t.Context(), "88888", []string{"", devt}, "usd"); got[""] != "30" || got[devt] != "2" {
			t.Fatalf("static: %v", got)
		}
		start(t, s)
		writeFile(t, path, "prices:\n  - chainId: C\n    current: {usd: \"31.5\"}\n")
		waitFor(t, 5*time.Second, "the edited prices", func() bool {
			got := s.CurrentPrices(t.Context(), "88888", []string{"", devt}, "usd")
			return got[""] == "31.5" && got[devt] == ""
		})
	})
}
