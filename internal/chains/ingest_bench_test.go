package chains

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/decode/evm"
	"github.com/permafrost-dev/permafrost/internal/decode/icm"
	"github.com/permafrost-dev/permafrost/internal/evmsim"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/metrics"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testing/memstat"
	"github.com/permafrost-dev/permafrost/internal/testing/proccpu"
)

// nodeEnv makes the test binary act as the benchmark's JSON-RPC node (see
// startNode) instead of running tests.
const nodeEnv = "PERMAFROST_BENCH_NODE"

func TestMain(m *testing.M) {
	if os.Getenv(nodeEnv) != "" {
		os.Exit(runNode())
	}
	storetest.Main(m)
}

// Benchmark defaults. docs/benchmarks.md ("Ingestion") has the sweep of
// the ingest batch: 256-500 blocks per transaction suit SQLite.
const (
	benchTxPerBlock  = 20
	benchIngestBatch = 500 // blocks per store transaction
	benchRPCBatch    = 50  // heights per JSON-RPC batch (2 calls each)
	// Batches in flight: 1, the node being local (permafrost's
	// --rpc-concurrency 1). With 4, each chunk's fetch bursts onto both cores
	// at once and slows the writer: 3.5% fewer blocks/s, 75 MB more memory
	// (docs/benchmarks.md).
	benchRPCConc = 1
)

// BenchmarkIngestEVM measures the whole ingest path for generated C-chain-like
// blocks (20 txs each, with receipts and ERC-20/721 Transfer logs): a local
// JSON-RPC node on loopback -> source (batched fetch) -> EVM indexer -> store,
// one transaction per batch with the raw blocks and the checkpoint. Each
// iteration ingests BENCH_BLOCKS blocks (default 5000) into a fresh database.
//
// The node runs in a child process (this test binary, re-executed), as a
// real node would: the figures (wall clock, CPU time from getrusage, peak
// RSS) are the indexer's alone. On PostgreSQL the server's CPU time (the
// cluster's processes, from /proc) is reported too.
//
// Knobs (environment): BENCH_BLOCKS, BENCH_BATCH (blocks per transaction),
// BENCH_RPC_BATCH, BENCH_RPC_CONC, BENCH_CPUPROFILE / BENCH_MEMPROFILE (file
// name prefix: a pprof profile of the timed part per backend), BENCH_SQLITE
// (database file to use and keep, for inspection), BENCH_LOG (pipeline logs
// to stderr), BENCH_SQLITE_PRAGMAS ("name=value;..." run on the SQLite
// writer), BENCH_PG_SETUP ("statement;..." run on the PostgreSQL database
// first), BENCH_FULL (the indexer as `permafrost index` wires it: with the
// ICM log sink and the metrics rollups), BENCH_TRACES (on: the node serves
// the traced generator's chain, wrapper payments inside contract calls, and
// its call traces, which the source fetches; off: the same chain fetched
// without traces; unset: the untraced chain), BENCH_SUSTAINED (ingest into
// a database that already holds BENCH_BASE_BLOCKS blocks, default 250,000:
// ingest_base_test.go; BENCH_CACHE is where the bases are kept),
// BENCH_MEMTRACE (file name prefix: the memory samples behind the mem_*
// figures, one line each), BENCH_CATCHUP (a bulk catch-up: the deferrable indexes dropped at the
// start and built at the end; blocks/s is then the ingestion's alone, up to
// its last commit, and index_build_s the build's wall time).
func BenchmarkIngestEVM(b *testing.B) {
	sustained := os.Getenv("BENCH_SUSTAINED") != ""
	n := envInt(b, "BENCH_BLOCKS", 5000)
	first := 0 // the first height to ingest
	if sustained {
		n = envInt(b, "BENCH_BLOCKS", 20_000)
		first = envInt(b, "BENCH_BASE_BLOCKS", benchBaseBlocks)
		if os.Getenv("BENCH_TRACES") != "" {
			b.Fatal("BENCH_SUSTAINED: the base is the untraced chain; unset BENCH_TRACES")
		}
	}
	batch := envInt(b, "BENCH_BATCH", benchIngestBatch)
	rpcBatch := envInt(b, "BENCH_RPC_BATCH", benchRPCBatch)
	rpcConc := envInt(b, "BENCH_RPC_CONC", benchRPCConc)
	url, nodePID := startNode(b, first, n)
	traces := source.TracesAuto
	if os.Getenv("BENCH_TRACES") == "off" {
		traces = source.TracesOff
	}
	full := os.Getenv("BENCH_FULL") != ""
	catchUp := os.Getenv("BENCH_CATCHUP") != ""

	for _, backend := range storetest.Backends {
		b.Run(backend, func(b *testing.B) {
			var wall, cpu, server, nodeCPU, build, buildCPU, buildServer, late time.Duration
			var lateBlocks float64
			var buildWritten int64
			var written int64
			var pgStats pgWriteStats
			var dbBytes int64
			var mem memBreakdown
			b.StopTimer()
			base := newIngestBase(backend, first)
			if sustained {
				// Always with the full wiring: the base is what `permafrost
				// index` leaves, whichever wiring the run measures.
				base.ensure(b, true)
			}
			resetPeakRSS()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				var dsn string
				keep := os.Getenv("BENCH_SQLITE")
				switch {
				case backend == "sqlite" && keep != "":
					for _, suffix := range []string{"", "-wal", "-shm"} {
						os.Remove(keep + suffix)
					}
					dsn = "sqlite:" + keep
				case sustained && backend == "postgres":
					// A copy of the base's own cluster (below).
				default:
					dsn = storetest.DSNFor(b, backend)
				}
				if sustained {
					dsn = base.open(b, strings.TrimPrefix(dsn, "sqlite:"))
				}
				db := storetest.Open(b, dsn)
				src, err := source.NewEVM(context.Background(), url, source.EVMOptions{BatchSize: rpcBatch, Concurrency: rpcConc, Traces: traces})
				if err != nil {
					b.Fatal(err)
				}
				chain := ingest.Chain{Key: "C", Kind: "EVM", BlockchainID: "bench", EVMChainID: "43112",
					BatchSize: batch, FetchSize: src.ParallelHeights()}
				var dec *evm.Indexer
				chain.Indexer, dec = newBenchIndexer(b, full)
				chain.Source = &EVMSource{EVM: src, Decoder: dec} // as chains.evmChain wires it
				if prag := os.Getenv("BENCH_SQLITE_PRAGMAS"); prag != "" && db.Dialect() == store.SQLite {
					// On the writer connection (the writer pool has one).
					for _, p := range strings.Split(prag, ";") {
						if _, err := db.ExecContext(context.Background(), "PRAGMA "+p); err != nil {
							b.Fatalf("PRAGMA %s: %v", p, err)
						}
					}
				}
				if setup := os.Getenv("BENCH_PG_SETUP"); setup != "" && db.Dialect() == store.Postgres {
					for _, q := range strings.Split(setup, ";") {
						if _, err := db.ExecContext(context.Background(), q); err != nil {
							b.Fatalf("%s: %v", q, err)
						}
					}
				}
				var logw io.Writer = io.Discard
				if os.Getenv("BENCH_LOG") != "" {
					logw = os.Stderr
				}
				// The pipeline retries a failed batch forever: the first
				// error ends the benchmark instead.
				ctx, cancel := context.WithCancelCause(context.Background())
				log := slog.New(failFast{Handler: slog.NewTextHandler(logw, nil), cancel: cancel})
				// mid and midAt: the first commit at or past the run's middle
				// height, from which the late rate is taken.
				var lastCommit, mid time.Time
				var midAt uint64
				var commitCPU, commitServer, iterBuildCPU, iterBuildServer time.Duration
				var commitWritten, iterBuildWritten int64
				srv := newServerCPU(b, db)
				p := ingest.New(db, []ingest.Chain{chain}, ingest.Options{UntilTip: true, CatchUp: catchUp,
					AfterCommit: func(_ string, h uint64) {
						lastCommit, commitCPU, commitWritten = time.Now(), cpuTime(), writtenBytes()
						if mid.IsZero() && h >= uint64(first+max(n/2, 1)-1) {
							mid, midAt = lastCommit, h
						}
						if catchUp {
							commitServer = srv.used() // a scan of /proc per batch
						}
					}}, log)
				stopProfile := startProfile(b, backend)
				pgw := startPGWrites(b, db)
				size0 := databaseSize(b, db)
				io0 := writtenBytes()
				cpu0 := cpuTime()
				node0 := proccpu.Process(nodePID)
				sampler := memstat.Start(50*time.Millisecond, memTrace(b, backend))
				b.StartTimer()
				start := time.Now()
				if err := p.Run(ctx); err != nil || context.Cause(ctx) != nil {
					b.Fatalf("ingest: %v (%v)", err, context.Cause(ctx))
				}
				if catchUp {
					// The indexes are built once caught up, not per block:
					// their time, CPU and writes are reported apart.
					wall += lastCommit.Sub(start)
					build += time.Since(lastCommit)
					iterBuildCPU, iterBuildWritten = cpuTime()-commitCPU, writtenBytes()-commitWritten
					iterBuildServer = srv.used() - commitServer
					buildCPU += iterBuildCPU
					buildServer += iterBuildServer
					buildWritten += iterBuildWritten
				} else {
					wall += time.Since(start)
				}
				b.StopTimer()
				if !mid.IsZero() {
					late += lastCommit.Sub(mid)
					lateBlocks += float64(uint64(first+n-1) - midAt)
				}
				mem.add(sampler, lastCommit, catchUp, nodePID)
				if strings.HasPrefix(dsn, "sqlite:") {
					// Checkpoints run in the background: the last batches'
					// copy into the database file counts in CPU and bytes
					// written (not in wall clock: a follower does it while
					// waiting for the next block).
					checkpointWAL(b, db)
				}
				cancel(nil)
				cpu += cpuTime() - cpu0 - iterBuildCPU
				nodeCPU += proccpu.Process(nodePID) - node0
				written += writtenBytes() - io0 - iterBuildWritten
				server += srv.used() - iterBuildServer
				pgStats.add(pgw.stop(b))
				stopProfile()
				if h, err := ingest.Checkpoint(context.Background(), db, "C"); err != nil || h != int64(first+n-1) {
					b.Fatalf("checkpoint %d (%v), want %d", h, err, first+n-1)
				}
				dbBytes += databaseSize(b, db) - size0
				src.Close()
			}
			per := float64(b.N)
			blocks := float64(n) * per
			b.ReportMetric(blocks/wall.Seconds(), "blocks/s")
			if late > 0 {
				// After the commit past the middle height: the rate once the
				// run's start (empty caches, the SQLite WAL's first growth)
				// is behind it, as in a long catch-up.
				b.ReportMetric(lateBlocks/late.Seconds(), "late_blocks/s")
			}
			b.ReportMetric(blocks*benchTxPerBlock/wall.Seconds(), "txs/s")
			b.ReportMetric(blocks/cpu.Seconds(), "blocks/cpu-s")
			b.ReportMetric(float64(peakRSS())/(1<<20), "peakRSS_MB")
			mem.report(b)
			b.ReportMetric(float64(nodeCPU.Microseconds())/1000/blocks, "node_cpu_ms/block")
			b.ReportMetric(float64(dbBytes)/blocks/1024, "db_KB/block")
			if catchUp {
				b.ReportMetric(build.Seconds()/per, "index_build_s")
				b.ReportMetric(buildCPU.Seconds()/per, "index_build_cpu_s")
				b.ReportMetric(float64(buildWritten)/per/(1<<20), "index_build_written_MB")
				if backend == "postgres" {
					// The build runs in the server (CREATE INDEX CONCURRENTLY).
					b.ReportMetric(buildServer.Seconds()/per, "index_build_server_cpu_s")
				}
			}
			if backend == "postgres" {
				b.ReportMetric(server.Seconds()/per, "server_cpu_s")
				b.ReportMetric(blocks/(cpu+server).Seconds(), "blocks/total-cpu-s")
				b.ReportMetric(float64(server.Microseconds())/1000/blocks, "server_cpu_ms/block")
				b.ReportMetric(float64(cpu.Microseconds())/1000/blocks, "cpu_ms/block")
				b.ReportMetric(float64(pgStats.wal)/blocks/1024, "wal_KB/block")
				b.ReportMetric(pgStats.durable, "durable")
			} else {
				b.ReportMetric(float64(written)/blocks/1024, "written_KB/block")
			}
			b.ReportMetric(float64(dbBytes)/blocks/1024, "db_KB/block")
		})
	}
}

// failFast cancels the run at the first error logged.
type failFast struct {
	slog.Handler
	cancel context.CancelCauseFunc
}

func (h failFast) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		msg := r.Message
		r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
		h.cancel(errors.New(msg))
	}
	return h.Handler.Handle(ctx, r)
}

func (h failFast) WithAttrs(attrs []slog.Attr) slog.Handler {
	return failFast{Handler: h.Handler.WithAttrs(attrs), cancel: h.cancel}
}

func (h failFast) WithGroup(name string) slog.Handler {
	return failFast{Handler: h.Handler.WithGroup(name), cancel: h.cancel}
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}

// startNode starts this test binary as the JSON-RPC node serving blocks
// first..first+n-1 of the generator's chain, and returns its URL. The child
// exits when its stdin closes (at the end of the benchmark, or if this
// process dies).
func startNode(b *testing.B, first, n int) (url string, pid int) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), nodeEnv+"="+strconv.Itoa(first)+":"+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start node: %v", err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait() //nolint:errcheck // the node's exit status says nothing about the benchmark
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("node: %v", err)
	}
	return "http://" + strings.TrimSpace(line), cmd.Process.Pid
}

// runNode is the node process: it generates the blocks ("first:n" in
// nodeEnv), serves them on a loopback port it prints, and exits when stdin
// closes.
func runNode() int {
	fs, ns, _ := strings.Cut(os.Getenv(nodeEnv), ":")
	first, err1 := strconv.Atoi(fs)
	n, err2 := strconv.Atoi(ns)
	if err1 != nil || err2 != nil || first < 0 || n < 1 {
		fmt.Fprintf(os.Stderr, "node: %s=%q, want first:count\n", nodeEnv, os.Getenv(nodeEnv))
		return 2
	}
	g := evm.NewGenerator(1, benchTxPerBlock)
	if os.Getenv("BENCH_TRACES") != "" {
		g = evm.NewTracedGenerator(1, benchTxPerBlock)
	}
	// Blocks below first are generated (each block follows from the ones
	// before) but not kept: the node serves first.. only.
	blocks := make([]ingest.RawBlock, 0, n)
	for i := 0; i < first+n; i++ {
		if rb := g.Next(); i >= first {
			blocks = append(blocks, rb)
		}
	}
	node, err := evmsim.New(43112, blocks)
	if err != nil {
		fmt.Fprintln(os.Stderr, "node:", err)
		return 1
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "node:", err)
		return 1
	}
	srv := &http.Server{Handler: node, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l) //nolint:errcheck // ends with the process
	fmt.Println(l.Addr().String())
	io.Copy(io.Discard, os.Stdin) //nolint:errcheck // EOF or error: the parent is gone either way
	return 0
}

// startProfile starts the CPU profile of the timed part when asked; the
// returned func stops it and writes the heap profile (BENCH_MEMPROFILE).
func startProfile(b *testing.B, backend string) func() {
	var cpuFile *os.File
	if prefix := os.Getenv("BENCH_CPUPROFILE"); prefix != "" {
		f, err := os.Create(prefix + "." + backend)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		cpuFile = f
	}
	return func() {
		if cpuFile != nil {
			pprof.StopCPUProfile()
			cpuFile.Close()
		}
		if prefix := os.Getenv("BENCH_MEMPROFILE"); prefix != "" {
			f, err := os.Create(prefix + "." + backend)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// cpuTime is this process's user+system CPU time (every thread, SQLite's
// work in cgo calls included; none of a PostgreSQL server's).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU measures the CPU time of a PostgreSQL cluster's processes: the
// postmaster (with its reaped children) and its live children.
type serverCPU struct {
	srv   proccpu.Server // zero: no server figure
	start time.Duration
}

func newServerCPU(b *testing.B, db *store.DB) *serverCPU {
	srv, ok, err := proccpu.FindServer(context.Background(), db)
	if err != nil {
		b.Fatal(err)
	}
	if !ok {
		return &serverCPU{} // SQLite, or not on this machine's /proc: no server figure
	}
	if os.Getenv("BENCH_LOG") != "" {
		fmt.Fprintf(os.Stderr, "postgres: postmaster pid %d, backend pid %d\n", srv.Postmaster, srv.Backend)
	}
	return &serverCPU{srv: srv, start: srv.CPU()}
}

func (s *serverCPU) used() time.Duration {
	if s.srv.Postmaster == 0 {
		return 0
	}
	return s.srv.CPU() - s.start
}

// writtenBytes is what this process has passed to write calls so far
// (/proc/self/io wchar): for SQLite, the WAL and checkpoint writes.
func writtenBytes() int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// newBenchIndexer is the EVM indexer as the benchmark wires it (and its
// inner EVM indexer, the source's decoder); full: as
// `permafrost index` wires the C-chain (the ICM log sink; Decorate: metrics
// rollups and webhook events, as Build wraps every chain).
func newBenchIndexer(b *testing.B, full bool) (ingest.Indexer, *evm.Indexer) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	alloc := evm.NewGenerator(1, benchTxPerBlock).Alloc()
	cfg := evm.Config{ChainKey: "C", ChainID: big.NewInt(43112), GenesisAlloc: alloc, Logger: quiet}
	if full {
		icmIx, err := icm.NewIndexer(icm.Config{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		cfg.Logs = ICMSink{Indexer: icmIx, Chain: icm.ChainInfo{Key: "C", EVMChainID: "43112"}}
	}
	ix, err := evm.NewIndexer(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if full {
		return Decorate("C", metrics.KindEVM, ix), ix
	}
	return ix, ix
}

// checkpointWAL copies the whole WAL into the SQLite database file and
// empties it. The background checkpointer (store.checkpointer) may be in
// the middle of its own pass, which makes a TRUNCATE checkpoint answer
// busy at once: it is asked again until it completes, so the last batches'
// copy is counted.
func checkpointWAL(b *testing.B, db *store.DB) {
	deadline := time.Now().Add(time.Minute)
	for {
		var busy, walPages, copied int64
		if err := db.WriterDB().QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &walPages, &copied); err != nil {
			b.Fatal(err)
		}
		if busy == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("WAL checkpoint still busy after a minute (%d of %d pages copied)", copied, walPages)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// databaseSize is what the database holds on disk (docs/capacity.md's bytes
// per block): on SQLite its pages (page_count counts those still in the
// WAL too), on PostgreSQL its tables, indexes and TOAST (not the server's
// WAL).
func databaseSize(b *testing.B, db *store.DB) int64 {
	q := `SELECT pg_database_size(current_database())`
	if db.Dialect() == store.SQLite {
		q = `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`
	}
	var n int64
	if err := db.QueryRowContext(context.Background(), q).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// fileSize is a file's size (0 when it cannot be read).
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// resetPeakRSS restarts the kernel's peak-RSS counter (VmHWM), so each
// backend's figure is its own.
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) } //nolint:errcheck // best effort

// peakRSS is this process's peak resident set (VmHWM), in bytes.
func peakRSS() int64 { return procPeakRSS(os.Getpid()) }

// procPeakRSS is a process's peak resident set (VmHWM), in bytes (0 when
// it cannot be read).
func procPeakRSS(pid int) int64 {
	st, _ := memstat.Status(pid)
	return st["VmHWM"]
}

// memBreakdown is what the process's resident set held at its peak, by
// owner (issue #22 aim 4): sampled every 50 ms over the timed part, the
// figures of the sample with the highest RSS (the last iteration's).
// mem_go_MB is what the Go runtime has mapped and not released,
// mem_c_heap_MB what malloc holds (SQLite's page caches, statements and
// sorts), mem_file_MB the mapped files (the binary, SQLite's -shm),
// mem_at_build 1 when the peak came during the deferred indexes' build;
// mem_go_goal_max_MB the highest heap goal the GC set, and node_peakRSS_MB
// the node process's own peak (not in peakRSS_MB: it is another process).
type memBreakdown struct {
	peak, max memstat.Sample
	atBuild   bool
	nodePeak  int64
}

func (m *memBreakdown) add(s *memstat.Sampler, lastCommit time.Time, catchUp bool, nodePID int) {
	m.peak, m.max = s.Stop()
	m.atBuild = catchUp && m.peak.At.After(lastCommit)
	m.nodePeak = procPeakRSS(nodePID)
}

func (m *memBreakdown) report(b *testing.B) {
	mb := func(v int64) float64 { return float64(v) / (1 << 20) }
	b.ReportMetric(mb(m.peak.GoMapped), "mem_go_MB")
	b.ReportMetric(mb(m.peak.GoObjects), "mem_go_objects_MB")
	b.ReportMetric(mb(m.peak.CHeld), "mem_c_heap_MB")
	b.ReportMetric(mb(m.peak.File), "mem_file_MB")
	b.ReportMetric(mb(m.peak.Anon-m.peak.GoMapped-m.peak.CHeld), "mem_anon_other_MB")
	b.ReportMetric(mb(m.max.GoGoal), "mem_go_goal_max_MB")
	b.ReportMetric(mb(m.max.CHeld), "mem_c_heap_max_MB")
	at := 0.0
	if m.atBuild {
		at = 1
	}
	b.ReportMetric(at, "mem_at_build")
	b.ReportMetric(mb(m.nodePeak), "node_peakRSS_MB")
}

// memTrace is where the memory samples go (BENCH_MEMTRACE: file name
// prefix, one file per backend), or nil.
func memTrace(b *testing.B, backend string) io.Writer {
	prefix := os.Getenv("BENCH_MEMTRACE")
	if prefix == "" {
		return nil
	}
	f, err := os.Create(prefix + "." + backend)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

// PostgreSQL write path figures (issue #22): WAL bytes per block, whether the
// server ran durable (fsync and synchronous_commit on: set them with
// storetest.ServerOptionsEnv), and, when the cluster preloads
// pg_stat_statements and BENCH_PG_STATEMENTS is set, the server's time per
// statement of the timed part, printed to stderr.

type pgWrites struct {
	db       *store.DB
	lsn      string
	profile  bool
	durable  bool
	disabled bool
}

type pgWriteStats struct {
	wal     int64
	durable float64 // 1 when every run was durable
	runs    int
}

func (s *pgWriteStats) add(r pgWriteStats) {
	if s.runs == 0 {
		s.durable = 1
	}
	s.wal += r.wal
	s.durable = min(s.durable, r.durable)
	s.runs++
}

func startPGWrites(b *testing.B, db *store.DB) *pgWrites {
	if db.Dialect() != store.Postgres {
		return &pgWrites{disabled: true}
	}
	ctx := context.Background()
	w := &pgWrites{db: db}
	var fsync, syncCommit string
	if err := db.QueryRowContext(ctx, "SELECT current_setting('fsync'), current_setting('synchronous_commit')").Scan(&fsync, &syncCommit); err != nil {
		b.Fatal(err)
	}
	w.durable = fsync == "on" && syncCommit != "off" && syncCommit != "local"
	// The settings the figures depend on, stated with them (docs/operations.md).
	var settings string
	if err := db.QueryRowContext(ctx, `SELECT string_agg(name || '=' || current_setting(name), ' ' ORDER BY name) FROM pg_settings
		WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'shared_buffers', 'wal_compression', 'max_wal_size', 'checkpoint_timeout')`).Scan(&settings); err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "postgres settings: %s\n", settings)
	if os.Getenv("BENCH_PG_STATEMENTS") != "" {
		if _, err := db.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
			b.Fatalf("BENCH_PG_STATEMENTS needs %s='-c shared_preload_libraries=pg_stat_statements': %v", storetest.ServerOptionsEnv, err)
		}
		if _, err := db.ExecContext(ctx, "SELECT pg_stat_statements_reset(), pg_stat_reset()"); err != nil {
			b.Fatal(err)
		}
		w.profile = true
	}
	if err := db.QueryRowContext(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&w.lsn); err != nil {
		b.Fatal(err)
	}
	return w
}

func (w *pgWrites) stop(b *testing.B) pgWriteStats {
	if w.disabled {
		return pgWriteStats{}
	}
	ctx := context.Background()
	var r pgWriteStats
	if err := w.db.QueryRowContext(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::bigint", w.lsn).Scan(&r.wal); err != nil {
		b.Fatal(err)
	}
	if w.durable {
		r.durable = 1
	}
	if !w.profile {
		return r
	}
	rows, err := w.db.QueryContext(ctx, `SELECT calls, rows, total_exec_time, wal_bytes, left(regexp_replace(query, '\s+', ' ', 'g'), 110)
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time DESC LIMIT 30`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	fmt.Fprintf(os.Stderr, "%10s %10s %10s %12s  %s\n", "calls", "rows", "exec_ms", "wal_bytes", "statement")
	for rows.Next() {
		var calls, n, walBytes int64
		var ms float64
		var q string
		if err := rows.Scan(&calls, &n, &ms, &walBytes, &q); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "%10d %10d %10.1f %12d  %s\n", calls, n, ms, walBytes, q)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	// The row versions each table got: an update that is not HOT adds an
	// entry to every index of the table.
	tables, err := w.db.QueryContext(ctx, `SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables
		WHERE n_tup_ins + n_tup_upd + n_tup_del > 0 ORDER BY n_tup_ins + n_tup_upd DESC`)
	if err != nil {
		b.Fatal(err)
	}
	defer tables.Close()
	fmt.Fprintf(os.Stderr, "%10s %10s %10s %10s  %s\n", "inserted", "updated", "hot", "deleted", "table")
	for tables.Next() {
		var name string
		var ins, upd, hot, del int64
		if err := tables.Scan(&name, &ins, &upd, &hot, &del); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "%10d %10d %10d %10d  %s\n", ins, upd, hot, del, name)
	}
	if err := tables.Err(); err != nil {
		b.Fatal(err)
	}
	return r
}
