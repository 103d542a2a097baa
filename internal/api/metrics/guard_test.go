package metrics_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/metrics"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

// Behind the guard (as served), the metrics routes need no key and are
// limited per client IP: past the budget a 429 ErrorBody with message as an
// array and Retry-After; another IP is unaffected. The same routes registered
// on a second mux (the --metrics-listen listener) answer the same.
func TestMetricsGuardedPerIP(t *testing.T) {
	e := testenv.Devnet(t, "sqlite")
	now := time.Date(2030, 1, 1, 0, 0, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	guard := api.NewGuard(e.DB, api.LimitsConfig{MetricsPerIPPerMinute: 100}, discard(),
		api.WithClock(clock), api.WithLimiter(api.NewMemoryLimiter(clock)))
	deps := metrics.Deps{DB: e.DB, Network: e.Network, Tokens: api.NewServerTokens(e.DB, clock), Log: discard()}
	main, side := api.NewMux(discard()), api.NewMux(discard())
	for _, m := range []*api.Mux{main, side} {
		guard.Install(m)
		metrics.Register(m, deps)
	}
	nft := contracts(t, e.Dir).erc721
	call := func(m *api.Mux, ip, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.RemoteAddr = ip + ":5555"
		req.Header.Set("x-data-api-key", "ignored-on-metrics-routes")
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, req)
		return rec
	}
	// avg_tps costs 10 CU, listHolders 50: 100 CU allow 5 + 1 here.
	for i := 0; i < 5; i++ {
		if r := call(main, "127.0.0.2", "/v1/avg_tps/c-chain"); r.Code != 200 {
			t.Fatalf("request %d: %d %s", i, r.Code, r.Body)
		}
	}
	if r := call(side, "127.0.0.2", "/v2/chains/c-chain/contracts/"+nft+"/nfts:listHolders"); r.Code != 200 {
		t.Fatalf("listHolders on the metrics listener: %d %s", r.Code, r.Body)
	}
	r := call(main, "127.0.0.2", "/v2/chains/c-chain/contracts/"+nft+"/nfts:listHolders")
	checkError(t, r.Code, r.Body.Bytes(), http.StatusTooManyRequests, "rate limit exceeded")
	if r.Header().Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	if r := call(side, "127.0.0.3", "/v1/avg_tps/p-chain"); r.Code != 200 {
		t.Errorf("another IP: %d %s", r.Code, r.Body)
	} else {
		var b struct{ Results []metrics.Point }
		if err := json.Unmarshal(r.Body.Bytes(), &b); err != nil || len(b.Results) == 0 {
			t.Errorf("metrics listener answer %s", r.Body)
		}
	}
}
