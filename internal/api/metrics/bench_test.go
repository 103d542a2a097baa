package metrics_test

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/metrics"
	rollup "github.com/permafrost-dev/permafrost/internal/metrics"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// Benchmarks of the two routes through the whole handler stack (routing,
// parameter checks, queries, page-token storage, JSON), on data generated
// straight into the rollup tables:
//
//	go test ./internal/api/metrics/ -run '^$' -bench . -benchtime 2000x
//
// Each reports the per-request latency percentiles p50-ms and p99-ms.

const (
	benchChain    = "C"
	benchHolders  = 1_000_000
	benchYears    = 5
	benchContract = "0x00000000000000000000000000000000000b0b0b"
)

var (
	benchMu  sync.Mutex
	benchDBs = map[string]*store.DB{}
)

func benchNetwork() *api.Network {
	return &api.Network{ID: 1, Name: "mainnet", HRP: "avax", Chain: map[string]api.ChainRef{
		benchChain: {Key: benchChain, Kind: "EVM", BlockchainID: "2q9e4r6Mu3U68nU1fYjgbR6JvwrRx36CohpAX5UQxse55x1Q5", EVMChainID: "43114", Name: "C-Chain"},
	}}
}

// benchDB returns a database of the backend holding the data of kind,
// generated once per test binary: "holders", a 1,000,000-holder ERC-721
// collection; "tps", 5 years of hourly and daily tx rollups.
func benchDB(b *testing.B, backend, kind string) *store.DB {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	if db, ok := benchDBs[backend+"/"+kind]; ok {
		return db
	}
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.DSNFor(b, backend))
	if err != nil {
		b.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	gen := generateTPS
	if kind == "holders" {
		gen = generateHolders
	}
	if err := generateIn(ctx, db, gen); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: generated the %s data in %s", backend, kind, time.Since(start).Round(time.Second))
	benchDBs[backend+"/"+kind] = db
	return db
}

// insertRows writes rows of width columns with multi-row INSERTs, 500 rows a statement.
func insertRows(ctx context.Context, tx *store.Tx, table string, cols []string, rows [][]any) error {
	const per = 500
	for i := 0; i < len(rows); i += per {
		chunk := rows[i:min(i+per, len(rows))]
		var q strings.Builder
		q.WriteString("INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES ")
		args := make([]any, 0, len(chunk)*len(cols))
		p := 1
		for r, row := range chunk {
			if r > 0 {
				q.WriteByte(',')
			}
			q.WriteByte('(')
			for c := range cols {
				if c > 0 {
					q.WriteByte(',')
				}
				fmt.Fprintf(&q, "$%d", p)
				p++
			}
			q.WriteByte(')')
			args = append(args, row...)
		}
		if _, err := tx.Exec(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("insert %s: %w", table, err)
		}
	}
	return nil
}

// generateIn runs gen in one transaction, then refreshes the statistics
// and (PostgreSQL) the visibility map, as autovacuum would leave them.
func generateIn(ctx context.Context, db *store.DB, gen func(context.Context, *store.Tx, *rand.Rand) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	if err := gen(ctx, tx, rand.New(rand.NewSource(42))); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	stmt := "ANALYZE"
	if db.Dialect() == store.Postgres {
		stmt = "VACUUM ANALYZE"
	}
	for _, t := range []string{"metrics_nft_holders", "metrics_tx_hourly", "metrics_tx_daily"} {
		if _, err := db.ExecContext(ctx, stmt+" "+t); err != nil {
			return err
		}
	}
	return nil
}

func generateHolders(ctx context.Context, tx *store.Tx, rng *rand.Rand) error {
	// The rank index is dropped for the bulk load and rebuilt from its own
	// definition afterwards (a sorted build instead of a million random inserts).
	indexDef, err := rankIndexDef(ctx, tx)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DROP INDEX metrics_nft_holders_rank`); err != nil {
		return err
	}

	// Holders: most hold one token, a Zipf tail holds many (many ties on
	// sortKey, as in real collections). Addresses ascend (appends to the key).
	zipf := rand.NewZipf(rng, 1.3, 1, 20000)
	total := new(big.Int)
	rows := make([][]any, 0, 100_000)
	for i := 0; i < benchHolders; i++ {
		n := int64(1 + zipf.Uint64())
		total.Add(total, big.NewInt(n))
		key, err := rollup.UnitsKey(big.NewInt(n))
		if err != nil {
			return err
		}
		rows = append(rows, []any{benchChain, benchContract, fmt.Sprintf("0x%024x%016x", i, uint64(i)*0x9e3779b97f4a7c15), key})
		if len(rows) == cap(rows) {
			if err := insertRows(ctx, tx, "metrics_nft_holders", []string{"chain_key", "token", "holder", "units_key"}, rows); err != nil {
				return err
			}
			rows = rows[:0]
		}
	}
	if err := insertRows(ctx, tx, "metrics_nft_holders", []string{"chain_key", "token", "holder", "units_key"}, rows); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, indexDef); err != nil {
		return fmt.Errorf("rebuild %q: %w", indexDef, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO metrics_nft_collections (chain_key, token, holders, units) VALUES ($1,$2,$3,$4)`,
		benchChain, benchContract, benchHolders, total.String()); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO evm_contracts (chain_key, address, creation_kind, tx_hash, block_number, block_time,
		deployer_address, erc_type, name, symbol) VALUES ($1,$2,'tx','0x01',1,1,'0x02','ERC-721','Bench Collection','BENCH')`,
		benchChain, benchContract); err != nil {
		return err
	}
	return nil
}

// generateTPS writes five years of hourly buckets ending at the tip, and their days.
func generateTPS(ctx context.Context, tx *store.Tx, rng *rand.Rand) error {
	tip := time.Date(2026, 11, 22, 13, 30, 0, 0, time.UTC).Unix()
	first := tip - benchYears*365*86400
	daily := map[int64]int64{}
	var rows [][]any
	for h := rollup.Hour.Floor(first); h <= tip; h += 3600 {
		n := rng.Int63n(200_000)
		rows = append(rows, []any{benchChain, h, n})
		daily[rollup.Day.Floor(h)] += n
	}
	if err := insertRows(ctx, tx, "metrics_tx_hourly", []string{"chain_key", "bucket", "tx_count"}, rows); err != nil {
		return err
	}
	days := make([]int64, 0, len(daily))
	for d := range daily {
		days = append(days, d)
	}
	sort.Slice(days, func(i, j int) bool { return days[i] < days[j] })
	rows = rows[:0]
	for _, d := range days {
		rows = append(rows, []any{benchChain, d, daily[d]})
	}
	if err := insertRows(ctx, tx, "metrics_tx_daily", []string{"chain_key", "bucket", "tx_count"}, rows); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO metrics_chains (chain_key, first_time, tip_time, tip_height, updated_at) VALUES ($1,$2,$3,$4,$5)`,
		benchChain, first, tip, int64(80_000_000), tip+5); err != nil {
		return err
	}
	return nil
}

// rankIndexDef reads the rank index's CREATE statement from the catalog.
func rankIndexDef(ctx context.Context, tx *store.Tx) (string, error) {
	q := `SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'metrics_nft_holders_rank'`
	if tx.Dialect() == store.Postgres {
		q = `SELECT indexdef FROM pg_indexes WHERE indexname = 'metrics_nft_holders_rank'`
	}
	var def string
	if err := tx.QueryRow(ctx, q).Scan(&def); err != nil {
		return "", fmt.Errorf("rank index definition: %w", err)
	}
	return def, nil
}

// latencies collects per-request durations and reports percentiles.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	s := append(latencies(nil), l...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	pct := func(p float64) float64 {
		i := int(p * float64(len(s)-1))
		return float64(s[i].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// walker requests pages of one listing, following nextPageToken and
// starting over at the end.
func walker(b *testing.B, mux *api.Mux, path string, q url.Values) (latencies, int) {
	b.Helper()
	b.ResetTimer()
	lat, items, err := walk(mux, path, q, b.N)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	return lat, items
}

// walk makes n requests of one listing as one client: it follows
// nextPageToken and starts over at the end.
func walk(mux *api.Mux, path string, q url.Values, n int) (latencies, int, error) {
	lat := make(latencies, 0, n)
	token := ""
	items := 0
	for i := 0; i < n; i++ {
		v := url.Values{}
		for k, vs := range q {
			v[k] = vs
		}
		if token != "" {
			v.Set("pageToken", token)
		}
		req := httptest.NewRequest(http.MethodGet, path+"?"+v.Encode(), nil)
		rec := httptest.NewRecorder()
		t0 := time.Now()
		mux.ServeHTTP(rec, req)
		lat = append(lat, time.Since(t0))
		if rec.Code != http.StatusOK {
			return lat, items, fmt.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
		// A light read of the answer, so the harness adds little CPU and
		// garbage beside the server on a 2-core machine.
		body := rec.Body.Bytes()
		items += bytes.Count(body, []byte(`"address":`)) + bytes.Count(body, []byte(`"timestamp":`))
		token = ""
		if i := bytes.Index(body, []byte(`"nextPageToken":"`)); i >= 0 {
			rest := body[i+len(`"nextPageToken":"`):]
			token = string(rest[:bytes.IndexByte(rest, '"')])
		}
	}
	return lat, items, nil
}

func benchMux(db *store.DB) *api.Mux {
	mux := api.NewMux(discard())
	metrics.Register(mux, metrics.Deps{DB: db, Network: benchNetwork(), Log: discard()})
	return mux
}

// BenchmarkListHolders walks a 1,000,000-holder collection in pages of 1000
// (target: p99 < 50 ms per page).
func BenchmarkListHolders(b *testing.B) {
	for _, backend := range storetest.Backends {
		b.Run(backend, func(b *testing.B) {
			mux := benchMux(benchDB(b, backend, "holders"))
			lat, items := walker(b, mux, "/v2/chains/43114/contracts/"+benchContract+"/nfts:listHolders", url.Values{"pageSize": {"1000"}})
			if items != 1000*b.N {
				b.Fatalf("%d holders in %d pages", items, b.N)
			}
			lat.report(b)
		})
	}
}

// BenchmarkAvgTPS reads 5 years of hourly rollups (target: p99 < 10 ms).
func BenchmarkAvgTPS(b *testing.B) {
	cases := []struct {
		name string
		q    url.Values
	}{
		{"hour-page100", url.Values{"timeInterval": {"hour"}}},
		{"hour-page2160", url.Values{"timeInterval": {"hour"}, "pageSize": {"2160"}}},
		{"day-page2160", url.Values{"timeInterval": {"day"}, "pageSize": {"2160"}}},
		{"week-page2160", url.Values{"timeInterval": {"week"}, "pageSize": {"2160"}}},
		{"month-page2160", url.Values{"timeInterval": {"month"}, "pageSize": {"2160"}}},
	}
	for _, backend := range storetest.Backends {
		for _, c := range cases {
			b.Run(backend+"/"+c.name, func(b *testing.B) {
				mux := benchMux(benchDB(b, backend, "tps"))
				lat, _ := walker(b, mux, "/v1/avg_tps/43114", c.q)
				lat.report(b)
			})
		}
	}
}
