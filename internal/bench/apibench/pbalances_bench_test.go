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
//	  -bench 'BenchmarkPChainBalances|BenchmarkValidatorCapacity' -benchtime 400x
func BenchmarkPChainBalances(b *testing.B) {
	ds, base := pbalServe(b)
	// The five addresses with the most unspent locked stakes.
	rows, err := ds.DB.QueryContext(context.Background(), `SELECT ua.address, COUNT(*) FROM utxo_addresses ua
		JOIN utxos u ON u.utxo_id = ua.utxo_id
		WHERE u.utxo_type = 'STAKE' AND u.stake_locked = TRUE AND ua.spent = FALSE AND ua.chain_key = 'P'
		GROUP BY ua.address ORDER BY COUNT(*) DESC, ua.address LIMIT 5`)
	if err != nil {
		b.Fatal(err)
	}
	var targets []string
	var counts []int
	for rows.Next() {
		var a string
		var n int
		if err := rows.Scan(&a, &n); err != nil {
			b.Fatal(err)
		}
		targets = append(targets, base+"/v1/networks/"+networkName+"/blockchains/p-chain/balances?addresses="+url.QueryEscape(a))
		counts = append(counts, n)
	}
	rows.Close()
	if len(targets) == 0 {
		b.Fatal("no locked stakes")
	}
	pbalMeasure(b, targets, fmt.Sprintf("addresses with %v locked stakes", counts))
}

// BenchmarkValidatorCapacity: CPU per request of primary.validatorList
// sorted by delegationCapacity (both orders, 10 and 50 a page, first pages
// and the page after), as BenchmarkPChainBalances.
func BenchmarkValidatorCapacity(b *testing.B) {
	ds, base := pbalServe(b)
	var n int
	if err := ds.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM p_stakers WHERE kind = 'VALIDATOR'
		AND removed_height < 0 AND subnet_id = '11111111111111111111111111111111LpoYY'`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	var targets []string
	for _, order := range []string{"asc", "desc"} {
		for _, size := range []string{"10", "50"} {
			u := base + "/v1/networks/" + networkName + "/validators?sortBy=delegationCapacity&sortOrder=" + order + "&pageSize=" + size
			targets = append(targets, u)
			_, body := pbalGet(b, u)
			if tok := pageToken(body); tok != "" {
				targets = append(targets, u+"&pageToken="+url.QueryEscape(tok))
			}
		}
	}
	pbalMeasure(b, targets, fmt.Sprintf("%d current primary validators", n))
}

// pbalServe opens PBAL_DIR's dataset (pbalConfig) and serves it in this
// process until the benchmark ends.
func pbalServe(b *testing.B) (*Dataset, string) {
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
	b.Cleanup(ds.Close)
	base, stop := serveFor(b, ds.DB)
	b.Cleanup(stop)
	return ds, base
}

func pbalGet(b *testing.B, u string) (int, []byte) {
	resp, err := http.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %d %v", u, resp.StatusCode, err)
	}
	return resp.StatusCode, body
}

// pbalMeasure requests targets round-robin, b.N times after 50 warm-up
// requests, and reports this process's CPU and the wall time per request.
func pbalMeasure(b *testing.B, targets []string, what string) {
	for i := 0; i < 50; i++ {
		pbalGet(b, targets[i%len(targets)]) // the page cache and the statement cache
	}
	load, _ := os.ReadFile("/proc/loadavg")
	b.ResetTimer()
	cpu0, t0 := rusageCPU(), time.Now()
	for i := 0; i < b.N; i++ {
		pbalGet(b, targets[i%len(targets)])
	}
	cpu, wall := rusageCPU()-cpu0, time.Since(t0)
	b.StopTimer()
	perReq := float64(cpu.Microseconds()) / 1000 / float64(b.N)
	b.ReportMetric(perReq, "cpu-ms/req")
	b.ReportMetric(float64(wall.Microseconds())/1000/float64(b.N), "wall-ms/req")
	fmt.Fprintf(os.Stderr, "%s: %d requests, %s; CPU %.3f ms/req; load %s", b.Name(), b.N, what, perReq, load)
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
