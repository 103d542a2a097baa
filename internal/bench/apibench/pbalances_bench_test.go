package apibench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"
)

// pbalConfig is the x5 primary network's stakers (2,000 nodes and 50,000
// addresses: the same active stakers per node and owners' Zipf, so a
// busy address holds thousands of locked stakes) on a short history (few
// transfers): its P-chain balances cost what they cost at x5px, in a
// dataset of a few hundred MB.
func pbalConfig() Config {
	c := primaryOnly(X5Config())
	c.XTxs, c.PTxs, c.Subnets = 20_000, 40_000, 200
	return c
}

// BenchmarkPChainBalances: CPU per request of primary.balances on the
// P-chain for the addresses with the most locked stakes (SQLite, server
// in process: this process's user+system time, the client's included),
// sequential requests. PBAL_DIR is the dataset's cache (generated once).
//
//	PBAL_DIR=/tmp/s8/pbal-data go test ./internal/bench/apibench -run '^$' \
//	  -bench BenchmarkPChainBalances -benchtime 400x
func BenchmarkPChainBalances(b *testing.B) {
	dir := os.Getenv("PBAL_DIR")
	if dir == "" {
		b.Skip("PBAL_DIR names the dataset's cache")
	}
	ctx := context.Background()
	cache := &Cache{Dir: dir, Log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	ds, err := cache.OpenSQLite(ctx, pbalConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer ds.Close()
	// The five addresses with the most unspent locked stakes.
	rows, err := ds.DB.QueryContext(ctx, `SELECT ua.address, COUNT(*) FROM utxo_addresses ua JOIN utxos u ON u.utxo_id = ua.utxo_id
		WHERE u.utxo_type = 'STAKE' AND u.stake_locked = TRUE AND ua.spent = FALSE AND ua.chain_key = 'P'
		GROUP BY ua.address ORDER BY COUNT(*) DESC, ua.address LIMIT 5`)
	if err != nil {
		b.Fatal(err)
	}
	var addrs []string
	var counts []int
	for rows.Next() {
		var a string
		var n int
		if err := rows.Scan(&a, &n); err != nil {
			b.Fatal(err)
		}
		addrs, counts = append(addrs, a), append(counts, n)
	}
	rows.Close()
	if len(addrs) == 0 {
		b.Fatal("no locked stakes")
	}
	sctx, cancel := context.WithCancel(ctx)
	base, done, err := Serve(sctx, ds.DB, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { cancel(); <-done }()
	get := func(i int) {
		u := base + "/v1/networks/" + networkName + "/blockchains/p-chain/balances?addresses=" + url.QueryEscape(addrs[i%len(addrs)])
		resp, err := http.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the cost counts
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: %d", u, resp.StatusCode)
		}
	}
	for i := 0; i < 50; i++ {
		get(i) // warm the page cache and the statement cache
	}
	load, _ := os.ReadFile("/proc/loadavg")
	b.ResetTimer()
	cpu0, t0 := rusageCPU(), time.Now()
	for i := 0; i < b.N; i++ {
		get(i)
	}
	cpu, wall := rusageCPU()-cpu0, time.Since(t0)
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/req")
	b.ReportMetric(float64(wall.Microseconds())/1000/float64(b.N), "wall-ms/req")
	fmt.Fprintf(os.Stderr, "pbal: %d requests over %d addresses with %v locked stakes; CPU %.3f ms/req; load %s",
		b.N, len(addrs), counts, float64(cpu.Microseconds())/1000/float64(b.N), load)
}

// rusageCPU is this process's user+system CPU time (SQLite's work
// included).
func rusageCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
