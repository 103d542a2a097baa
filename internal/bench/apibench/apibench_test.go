package apibench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// envInt reads a positive integer setting from the environment.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkAPI generates (once, cached) the full dataset on each backend,
// serves it, and runs every endpoint's query mix with concurrent clients,
// reporting p50/p99/max latency and requests/s per endpoint and printing a
// markdown table. Settings (environment):
//
//	APIBENCH_BACKENDS   sqlite,postgres
//	APIBENCH_CLIENTS    8 concurrent clients
//	APIBENCH_SECONDS    5 seconds per endpoint (after 200 warm-up requests)
//	APIBENCH_REQUESTS   5000 requests per endpoint at most
//	APIBENCH_DIR        the cache (DefaultCacheDir(), with -smoke for the smoke scale)
//	APIBENCH_SCALE      full, smoke (a tiny dataset, to try the harness), evm
//	                    (the full EVM chain with a tiny primary network: the
//	                    EVM endpoints' dataset in a third of the time), or x5
//	                    (X5Config: five times full), or x5evm (its EVM chain
//	                    with a tiny primary network), or x5px (its primary
//	                    network, 5 million UTXOs, with the smoke EVM chain)
//	APIBENCH_EVM_BLOCKS the EVM chain's blocks instead of the scale's
//	APIBENCH_KEEP       set: fail rather than regenerate a missing or stale
//	                    dataset (regenerating deletes the cached one first)
//	APIBENCH_REPLICA    set: serve from a child process (StartReplica) and
//	                    report its peak RSS (VmHWM)
//	APIBENCH_REPLICA_PROFILE  with APIBENCH_REPLICA: each replica's Go CPU
//	                    profile of its first APIBENCH_SECONDS goes to this
//	                    path plus "." and its process id
//
// After the endpoints, "mixed" runs a weighted mix of them as one load
// (Mixed): its req/s is the aggregate throughput.
//
// go test ./internal/bench/apibench -run '^$' -bench BenchmarkAPI -benchtime 1x -timeout 3h
func BenchmarkAPI(b *testing.B) {
	cfg, scale := FullConfig(), ""
	switch os.Getenv("APIBENCH_SCALE") {
	case "smoke":
		// Its own cache: a cache of another configuration is regenerated.
		cfg, scale = SmokeConfig(), "-smoke"
	case "evm":
		cfg, scale = EVMConfig(), "-evm"
	case "x5":
		cfg, scale = X5Config(), "-x5"
	case "x5evm":
		cfg, scale = evmOnly(X5Config()), "-x5evm"
	case "x5px":
		cfg, scale = primaryOnly(X5Config()), "-x5px"
	}
	if n := envInt("APIBENCH_EVM_BLOCKS", 0); n > 0 {
		// A dataset of another EVM size, e.g. the smoke one with enough
		// blocks to measure the EVM listings: its own cache.
		cfg.EVMBlocks = n
		scale += fmt.Sprintf("-evm%d", n)
	}
	backends := strings.Split(os.Getenv("APIBENCH_BACKENDS"), ",")
	if os.Getenv("APIBENCH_BACKENDS") == "" {
		backends = []string{"sqlite", "postgres"}
	}
	load := Load{Clients: envInt("APIBENCH_CLIENTS", 8), Duration: time.Duration(envInt("APIBENCH_SECONDS", 5)) * time.Second,
		Requests: envInt("APIBENCH_REQUESTS", 5000), Warmup: 200}
	dir := os.Getenv("APIBENCH_DIR")
	if dir == "" {
		dir = DefaultCacheDir() + scale
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cache := &Cache{Dir: dir, Log: log, Keep: os.Getenv("APIBENCH_KEEP") != ""}
	var out strings.Builder
	for _, backend := range backends {
		b.Run(backend, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var ds *Dataset
			var err error
			start := time.Now()
			switch backend {
			case "sqlite":
				ds, err = cache.OpenSQLite(ctx, cfg)
			case "postgres":
				ds, err = cache.OpenPostgres(ctx, cfg)
			default:
				b.Fatalf("unknown backend %q", backend)
			}
			if err != nil {
				b.Fatal(err)
			}
			defer ds.Close()
			m := ds.Manifest
			log.Info("dataset ready", "backend", backend, "elapsed", time.Since(start).Round(time.Second),
				"evm_transfers", m.EVMTransfers, "utxos", m.UTXOs)
			// Server-side causes of 5xx answers are logged (warnings and up).
			srvLog := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			base, done, err := Serve(ctx, ds.DB, srvLog)
			if err != nil {
				b.Fatal(err)
			}
			var replica *Replica
			if os.Getenv("APIBENCH_REPLICA") != "" {
				// The load goes to a child process, whose peak RSS is an API
				// replica's (the in-process server above stays idle).
				if replica, err = StartReplica(ctx, ds.DSN); err != nil {
					b.Fatal(err)
				}
				defer replica.Stop()
				base = replica.Base
			}
			// CPU per request of the serving side: the replica's (the
			// in-process server shares its process with the clients) and
			// the PostgreSQL server's.
			load := load
			if replica != nil {
				load.Meters = append(load.Meters, Meter{Name: "replica", Read: replica.CPU})
			}
			if m, ok := ServerMeter(ctx, ds.DB); ok {
				load.Meters = append(load.Meters, m)
			}
			loadBefore := LoadAverage()
			var results []Result
			scenarios := Scenarios(m)
			for i, sc := range append(scenarios, Mixed(scenarios)) {
				b.Run(sc.Name, func(b *testing.B) {
					r := Run(ctx, base, sc, load, int64(i))
					results = append(results, r)
					if r.Requests == 0 {
						b.Fatalf("%s: no request completed", sc.Name)
					}
					b.ReportMetric(ms(r.P50), "p50-ms")
					b.ReportMetric(ms(r.P99), "p99-ms")
					b.ReportMetric(ms(r.Max), "max-ms")
					b.ReportMetric(r.PerSecond, "req/s")
					b.ReportMetric(float64(r.Errors), "errors")
					for _, u := range r.CPU {
						b.ReportMetric(ms(u.CPU)/float64(max(r.Requests, 1)), u.Meter+"-cpu-ms/req")
					}
					for _, s := range r.Slowest {
						b.Logf("slow: %.1f ms %s", ms(s.Latency), s.Path)
					}
					if r.Errors > 0 {
						b.Logf("%s: %d errors, e.g. %s", sc.Name, r.Errors, r.ErrSample)
					}
				})
			}
			memory := ""
			if replica != nil {
				peak, now, err := replica.Memory()
				if err != nil {
					b.Fatal(err)
				}
				memory = fmt.Sprintf("; replica VmHWM %.0f MB, VmRSS %.0f MB", float64(peak)/1e6, float64(now)/1e6)
				log.Info("replica memory", "VmHWM_MB", peak>>20, "VmRSS_MB", now>>20)
			}
			cancel()
			<-done
			fmt.Fprintf(&out, "\n%s", Markdown(fmt.Sprintf("### %s (%s; %d clients, %s per endpoint; load average %s before, %s after%s)",
				backend, datasetLine(ds.DB, m), load.Clients, load.Duration, loadBefore, LoadAverage(), memory), results))
		})
	}
	fmt.Println(out.String())
}

func datasetLine(db *store.DB, m *Manifest) string {
	return fmt.Sprintf("%d EVM blocks, %d EVM txs, %d EVM transfers, %d UTXOs (%d X txs, %d P txs, %d stakers, %d reward UTXOs), %d ICM messages, %.1f GB",
		m.EVMBlocks, m.EVMTxs, m.EVMTransfers, m.UTXOs, m.XTxCount, m.PTxCount, m.Stakers, m.RewardUTXOs, m.ICMMessages,
		float64(m.DatabaseBytes)/1e9)
}

// TestSmoke generates a tiny dataset on SQLite, copies it to PostgreSQL, and
// runs every scenario briefly on both: each endpoint answers 200 to its
// whole query mix, and listings are continued with their page tokens.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and serves a small dataset")
	}
	ctx := context.Background()
	cache := &Cache{Dir: t.TempDir(), Log: slog.New(slog.DiscardHandler)}
	src, err := cache.OpenSQLite(ctx, SmokeConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	m := src.Manifest
	if m.EVMTransfers < 1000 || m.UTXOs < 3000 || m.ICMMessages == 0 || m.Stakers == 0 || m.RewardUTXOs == 0 ||
		len(m.ERC1155Holders) == 0 || len(m.NFTTokenIDs) == 0 {
		t.Fatalf("dataset too thin: %d transfers, %d UTXOs, %d messages, %d stakers, %d rewards, %d ERC-1155 holders, %d NFTs",
			m.EVMTransfers, m.UTXOs, m.ICMMessages, m.Stakers, m.RewardUTXOs, len(m.ERC1155Holders), len(m.NFTTokenIDs))
	}
	dsts := map[string]*store.DB{"sqlite": src.DB}
	pgDSN := storetest.PostgresDSN(t)
	pg := storetest.Open(t, pgDSN)
	if err := copyDatabase(ctx, src.DB, pg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	dsts["postgres"] = pg
	dsns := map[string]string{"sqlite": src.DSN, "postgres": pgDSN}
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			db := dsts[name]
			for _, table := range []string{"utxos", "evm_transfers", "icm_messages", "p_stakers"} {
				var a, b int64
				if err := src.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&a); err != nil {
					t.Fatal(err)
				}
				if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&b); err != nil {
					t.Fatal(err)
				}
				if a != b || a == 0 {
					t.Fatalf("%s: %d rows in sqlite, %d here", table, a, b)
				}
			}
			sctx, cancel := context.WithCancel(ctx)
			base, done, err := Serve(sctx, db, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { cancel(); <-done }()
			// Some balance listings of the tiny dataset fit one page; most
			// listings must have been continued.
			listings, continued := 0, 0
			scenarios := Scenarios(m)
			for i, sc := range append(scenarios, Mixed(scenarios)) {
				r := Run(ctx, base, sc, Load{Clients: 2, Duration: time.Minute, Requests: 30}, int64(i))
				if r.Requests != 30 || r.Errors > 0 {
					t.Errorf("%s: %d requests, %d errors, e.g. %s", sc.Name, r.Requests, r.Errors, r.ErrSample)
				}
				if sc.Depth > 1 {
					listings++
					if r.NextPages > 0 {
						continued++
					}
				}
			}
			if continued < listings/2 {
				t.Errorf("only %d of %d listings were continued with a page token", continued, listings)
			}
			// The same mix from a replica child process, whose memory is read.
			replica, err := StartReplica(ctx, dsns[name])
			if err != nil {
				t.Fatal(err)
			}
			defer replica.Stop()
			if r := Run(ctx, replica.Base, Mixed(scenarios), Load{Clients: 2, Duration: time.Minute, Requests: 100}, 1); r.Requests != 100 || r.Errors > 0 {
				t.Errorf("replica: %d requests, %d errors, e.g. %s", r.Requests, r.Errors, r.ErrSample)
			}
			if peak, now, err := replica.Memory(); err != nil || peak < now || now < 1<<20 {
				t.Errorf("replica memory: peak %d, now %d bytes, %v", peak, now, err)
			}
		})
	}
}

// TestReplicaChild is StartReplica's child: it serves the database named by
// ReplicaEnv until its stdin closes (skipped in a normal test run).
func TestReplicaChild(t *testing.T) {
	dsn := os.Getenv(ReplicaEnv)
	if dsn == "" {
		t.Skip("the child process of StartReplica")
	}
	api.ReplicaGC(os.Getenv) // as serve --ingest=false
	stopProfile := func() {}
	if path := os.Getenv("APIBENCH_REPLICA_PROFILE"); path != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid()))
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		// For as many seconds as the load lasts, from the warm-up on: the
		// replica of a benchmark run is killed (its context's end) before
		// it reads the end of its stdin.
		var once sync.Once
		stopProfile = func() { once.Do(func() { pprof.StopCPUProfile(); f.Close() }) }
		time.AfterFunc(time.Duration(envInt("APIBENCH_SECONDS", 5))*time.Second, stopProfile)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	base, done, err := Serve(ctx, db, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("replica listening on %s\n", base)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it, or exits
	stopProfile()
	cancel()
	<-done
}
