package metrics_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/metrics"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// clock is the page tokens' injectable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type server struct {
	env   *testenv.Env
	mux   *api.Mux
	clock *clock
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newServer(t *testing.T, backend string) *server {
	t.Helper()
	return serverOn(testenv.Devnet(t, backend))
}

// serverOn serves the metrics routes from e's index.
func serverOn(e *testenv.Env) *server {
	c := &clock{t: time.Now()}
	mux := api.NewMux(discard())
	metrics.Register(mux, metrics.Deps{DB: e.DB, Network: e.Network, Tokens: api.NewServerTokens(e.DB, c.now), Log: discard()})
	return &server{env: e, mux: mux, clock: c}
}

func (s *server) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.RemoteAddr = "127.0.0.1:40000"
	rec := httptest.NewRecorder()
	s.mux.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// checkError asserts an ErrorBody of the metrics service: message an array of
// strings, one of which contains want; statusCode and error match status.
func checkError(t *testing.T, code int, body []byte, status int, want string) {
	t.Helper()
	if code != status {
		t.Errorf("status %d, want %d: %s", code, status, body)
		return
	}
	var e struct {
		Message    []string `json:"message"`
		StatusCode int      `json:"statusCode"`
		Error      string   `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Errorf("error body %s: %v (message must be an array of strings)", body, err)
		return
	}
	if e.StatusCode != status || e.Error != http.StatusText(status) || len(e.Message) == 0 {
		t.Errorf("error body %s", body)
	}
	for _, m := range e.Message {
		if strings.Contains(m, want) {
			return
		}
	}
	t.Errorf("no message mentions %q: %v", want, e.Message)
}

type tpsBody struct {
	Results       []metrics.Point `json:"results"`
	Status        int             `json:"status"`
	LastRun       int64           `json:"lastRun"`
	NextPageToken string          `json:"nextPageToken"`
}

func (s *server) tps(t *testing.T, chain string, q url.Values) tpsBody {
	t.Helper()
	code, body := s.get(t, "/v1/avg_tps/"+url.PathEscape(chain)+"?"+q.Encode())
	if code != http.StatusOK {
		t.Fatalf("avg_tps %s?%s: %d %s", chain, q.Encode(), code, body)
	}
	var r tpsBody
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		t.Fatalf("avg_tps body %s: %v", body, err)
	}
	if r.Results == nil || r.Status != 200 {
		t.Fatalf("avg_tps body %s: results must be an array, status 200", body)
	}
	return r
}

// walk follows nextPageToken to the end and returns every point.
func (s *server) walk(t *testing.T, chain string, q url.Values) []metrics.Point {
	t.Helper()
	var all []metrics.Point
	q = cloneValues(q)
	for pages := 0; ; pages++ {
		if pages > 100000 {
			t.Fatal("pagination does not end")
		}
		r := s.tps(t, chain, q)
		all = append(all, r.Results...)
		if r.NextPageToken == "" {
			return all
		}
		if len(r.Results) == 0 {
			t.Fatal("an empty page with a nextPageToken")
		}
		q.Set("pageToken", r.NextPageToken)
	}
}

func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// Interval arithmetic of the expectation, written with the time package
// (independent of internal/metrics).
func floorOf(iv string, ts int64) int64 {
	u := time.Unix(ts, 0).UTC()
	day := time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, time.UTC)
	switch iv {
	case "hour":
		return u.Truncate(time.Hour).Unix()
	case "day":
		return day.Unix()
	case "week":
		return day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7)).Unix()
	case "month":
		return time.Date(u.Year(), u.Month(), 1, 0, 0, 0, 0, time.UTC).Unix()
	}
	panic(iv)
}

func step(iv string, start int64, n int) int64 {
	u := time.Unix(start, 0).UTC()
	switch iv {
	case "hour":
		return u.Add(time.Duration(n) * time.Hour).Unix()
	case "day":
		return u.AddDate(0, 0, n).Unix()
	case "week":
		return u.AddDate(0, 0, 7*n).Unix()
	case "month":
		return u.AddDate(0, n, 0).Unix()
	}
	panic(iv)
}

// expectTPS is the series from the recorded blocks: every interval from the
// oldest block's to the newest block's, newest first; value = txs / interval
// seconds, and for the newest block's interval txs / (tip time - start).
func expectTPS(blocks map[int64]recBlock, iv string, start, end int64) []metrics.Point {
	first, tip := int64(1<<62), int64(0)
	counts := map[int64]int64{}
	for _, b := range blocks {
		first, tip = min(first, b.time), max(tip, b.time)
		counts[floorOf(iv, b.time)] += b.txs
	}
	lo, hi := first, tip
	if start >= 0 {
		lo = max(lo, start)
	}
	if end >= 0 {
		hi = min(hi, end)
	}
	out := []metrics.Point{}
	if lo > hi {
		return out
	}
	tipStart := floorOf(iv, tip)
	for s := floorOf(iv, hi); s >= floorOf(iv, lo); s = step(iv, s, -1) {
		secs := step(iv, s, 1) - s
		if s == tipStart {
			secs = max(tip-s, 1)
		}
		out = append(out, metrics.Point{Timestamp: s, Value: float64(counts[s]) / float64(secs)})
	}
	return out
}

func samePoints(t *testing.T, what string, got, want []metrics.Point) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d points, want %d (got first %v, want first %v)", what, len(got), len(want), head(got), head(want))
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: point %d is %+v, want %+v", what, i, got[i], want[i])
			return
		}
	}
}

func head(p []metrics.Point) []metrics.Point { return p[:min(len(p), 3)] }

// tipOf is the recorded newest block time of a chain.
func tipOf(blocks map[int64]recBlock) int64 {
	var tip int64
	for _, b := range blocks {
		tip = max(tip, b.time)
	}
	return tip
}

// Every chain's whole series, at every interval, equals the one recomputed
// from the recorded blocks; the chain answers by each of its names.
func TestAvgTPSMatchesRecording(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := newServer(t, backend)
			rec := recordedBlocks(t, s.env.Dir)
			net := s.env.Network
			names := map[string][]string{
				"P": {"p-chain", net.Chain["P"].BlockchainID, "P-CHAIN"}, // aliases are case-insensitive
				"X": {"x-chain", net.Chain["X"].BlockchainID},
				"C": {"c-chain", net.Chain["C"].BlockchainID, net.Chain["C"].EVMChainID, "C"},
			}
			for chain, ids := range names {
				for _, iv := range []string{"hour", "day", "week", "month"} {
					want := expectTPS(rec[chain], iv, -1, -1)
					got := s.walk(t, ids[0], url.Values{"timeInterval": {iv}, "pageSize": {"2160"}})
					samePoints(t, chain+" "+iv, got, want)
				}
				// Default: day, 100 points, newest first.
				def := s.tps(t, ids[0], url.Values{})
				samePoints(t, chain+" default", def.Results, expectTPS(rec[chain], "day", -1, -1)[:min(100, len(expectTPS(rec[chain], "day", -1, -1)))])
				// lastRun: when ingestion last wrote the chain's rollups (this
				// test binary ingested the recording moments ago).
				var updated int64
				if err := s.env.DB.QueryRowContext(t.Context(), `SELECT updated_at FROM metrics_chains WHERE chain_key = $1`, chain).Scan(&updated); err != nil {
					t.Fatal(err)
				}
				if now := time.Now().Unix(); def.LastRun != updated || def.LastRun > now || def.LastRun < now-3600 {
					t.Errorf("%s lastRun %d: want the rollup's last write %d, within the last hour", chain, def.LastRun, updated)
				}
				for _, id := range ids[1:] {
					other := s.tps(t, id, url.Values{})
					samePoints(t, chain+" as "+id, other.Results, def.Results)
				}
			}
			// The values are not all zero: the workload's intervals carry txs.
			h := s.tps(t, "c-chain", url.Values{"timeInterval": {"hour"}, "pageSize": {"1"}})
			if len(h.Results) != 1 || h.Results[0].Value <= 0 {
				t.Errorf("C-chain's newest hour: %+v", h.Results)
			}
		})
	}
}

// startTimestamp/endTimestamp select the intervals overlapping the range;
// pageSize 1 walks give the same points as one page.
func TestAvgTPSRangeAndPagination(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := newServer(t, backend)
			rec := recordedBlocks(t, s.env.Dir)
			tip := tipOf(rec["C"])
			cases := []struct {
				iv         string
				start, end int64
			}{
				{"hour", tip - 36*3600, -1},
				{"hour", tip - 36*3600 + 1, tip - 3600},
				{"day", tip - 40*86400 + 7, tip - 86400},
				{"day", -1, 1607144400 + 3*86400}, // the genesis days
				{"week", tip - 200*86400, -1},
				{"month", 1607144400, tip - 365*86400},
				{"hour", tip + 1, -1},      // after the tip: nothing
				{"day", 0, 1000},           // before the first block: nothing
				{"hour", tip, tip},         // exactly the tip's interval
				{"month", 0, 253402300799}, // everything
			}
			for _, c := range cases {
				q := url.Values{"timeInterval": {c.iv}}
				if c.start >= 0 {
					q.Set("startTimestamp", fmt.Sprint(c.start))
				}
				if c.end >= 0 {
					q.Set("endTimestamp", fmt.Sprint(c.end))
				}
				want := expectTPS(rec["C"], c.iv, c.start, c.end)
				what := fmt.Sprintf("C %s [%d, %d]", c.iv, c.start, c.end)
				q.Set("pageSize", "2160")
				one := s.tps(t, "c-chain", q)
				if len(want) <= 2160 {
					samePoints(t, what+" one page", one.Results, want)
					if one.NextPageToken != "" {
						t.Errorf("%s: nextPageToken on the only page", what)
					}
				}
				if len(want) > 60 {
					continue
				}
				q.Set("pageSize", "1")
				samePoints(t, what+" pageSize 1", s.walk(t, "c-chain", q), want)
			}
		})
	}
}

// Tokens are UUIDs kept 24 hours: before expiry they continue, after it the
// listing restarts; another route's token, or another query's, is a 400.
func TestAvgTPSPageTokens(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := newServer(t, backend)
			rec := recordedBlocks(t, s.env.Dir)
			tip := tipOf(rec["C"])
			q := url.Values{"timeInterval": {"hour"}, "startTimestamp": {fmt.Sprint(tip - 20*3600)}, "pageSize": {"5"}}
			want := expectTPS(rec["C"], "hour", tip-20*3600, -1)
			first := s.tps(t, "c-chain", q)
			samePoints(t, "first page", first.Results, want[:5])
			if len(first.NextPageToken) != 36 || strings.Count(first.NextPageToken, "-") != 4 {
				t.Fatalf("nextPageToken %q is not a UUID", first.NextPageToken)
			}

			// 23h59m later: the token continues the listing, with or
			// without the first page's parameters repeated.
			s.clock.add(24*time.Hour - time.Minute)
			next := cloneValues(q)
			next.Set("pageToken", first.NextPageToken)
			samePoints(t, "second page", s.tps(t, "c-chain", next).Results, want[5:10])
			bare := url.Values{"pageToken": {first.NextPageToken}, "pageSize": {"3"}}
			samePoints(t, "second page, bare token", s.tps(t, "c-chain", bare).Results, want[5:8])
			for _, bad := range []struct{ chain, param, value string }{
				{"p-chain", "", ""},
				{"c-chain", "timeInterval", "day"},
				{"c-chain", "startTimestamp", "0"},
				{"c-chain", "endTimestamp", fmt.Sprint(tip)},
			} {
				v := cloneValues(next)
				if bad.param != "" {
					v.Set(bad.param, bad.value)
				}
				code, body := s.get(t, "/v1/avg_tps/"+bad.chain+"?"+v.Encode())
				checkError(t, code, body, http.StatusBadRequest, "pageToken was issued for another query")
			}
			// The same query repeated with the token is fine.
			samePoints(t, "second page, same parameters", s.tps(t, "c-chain", next).Results, want[5:10])

			// 24 hours after creation the token is gone: the first page again.
			s.clock.add(time.Minute)
			again := s.tps(t, "c-chain", next)
			samePoints(t, "expired token", again.Results, want[:5])
			if again.NextPageToken == "" || again.NextPageToken == first.NextPageToken {
				t.Errorf("restarted listing: nextPageToken %q", again.NextPageToken)
			}

			// Unknown UUID: the first page. Not a UUID: 400.
			unknown := cloneValues(q)
			unknown.Set("pageToken", "0b7a1c9e-4f1e-4a36-9a55-3f0d3c3a8e21")
			samePoints(t, "unknown token", s.tps(t, "c-chain", unknown).Results, want[:5])
			unknown.Set("pageToken", "not-a-token")
			code, body := s.get(t, "/v1/avg_tps/c-chain?"+unknown.Encode())
			checkError(t, code, body, http.StatusBadRequest, "pageToken")

			// A listHolders token on avg_tps, and the other way round.
			nft := strings.ToLower(contracts(t, s.env.Dir).erc721)
			code, body = s.get(t, "/v2/chains/c-chain/contracts/"+nft+"/nfts:listHolders?pageSize=1")
			var hb struct{ NextPageToken string }
			if code != http.StatusOK || json.Unmarshal(body, &hb) != nil || hb.NextPageToken == "" {
				t.Fatalf("listHolders: %d %s", code, body)
			}
			code, body = s.get(t, "/v1/avg_tps/c-chain?pageToken="+hb.NextPageToken)
			checkError(t, code, body, http.StatusBadRequest, "another endpoint")
			code, body = s.get(t, "/v2/chains/c-chain/contracts/"+nft+"/nfts:listHolders?pageToken="+again.NextPageToken)
			checkError(t, code, body, http.StatusBadRequest, "another endpoint")
		})
	}
}

// Every bad parameter is a 400 naming it; all problems are reported at once.
func TestAvgTPSBadInput(t *testing.T) {
	s := newServer(t, "sqlite")
	cases := []struct {
		query  string
		status int
		want   string
	}{
		{"timeInterval=year", 400, "timeInterval"},
		{"timeInterval=HOUR", 400, "timeInterval"},
		{"startTimestamp=-1", 400, "startTimestamp"},
		{"startTimestamp=abc", 400, "startTimestamp"},
		{"startTimestamp=1e9", 400, "startTimestamp"},
		{"startTimestamp=99999999999999999999", 400, "startTimestamp"},
		{"startTimestamp=253402300800", 400, "startTimestamp"},
		{"endTimestamp=-5", 400, "endTimestamp"},
		{"endTimestamp=1.5", 400, "endTimestamp"},
		{"startTimestamp=2000&endTimestamp=1000", 400, "endTimestamp (1000) must not be before startTimestamp (2000)"},
		{"pageSize=0", 400, "pageSize"},
		{"pageSize=2161", 400, "pageSize"},
		{"pageSize=-1", 400, "pageSize"},
		{"pageSize=ten", 400, "pageSize"},
	}
	for _, c := range cases {
		code, body := s.get(t, "/v1/avg_tps/c-chain?"+c.query)
		checkError(t, code, body, c.status, c.want)
	}
	// Several problems: one message each.
	code, body := s.get(t, "/v1/avg_tps/c-chain?timeInterval=year&pageSize=0&startTimestamp=x")
	var e struct{ Message []string }
	if code != 400 || json.Unmarshal(body, &e) != nil || len(e.Message) != 3 {
		t.Errorf("three problems: %d %s", code, body)
	}
	for _, chain := range []string{"43114", "nope", "2Q", "total", "mainnet", "11111111111111111111111111111111LpoYZ", strings.Repeat("x", 500)} {
		code, body := s.get(t, "/v1/avg_tps/"+url.PathEscape(chain))
		checkError(t, code, body, http.StatusNotFound, "not indexed")
	}
	// Boundaries are accepted.
	for _, q := range []string{"pageSize=1", "pageSize=2160", "startTimestamp=0", "endTimestamp=253402300799", "startTimestamp=5&endTimestamp=5"} {
		if code, body := s.get(t, "/v1/avg_tps/p-chain?"+q); code != 200 {
			t.Errorf("%s: %d %s", q, code, body)
		}
	}
}
