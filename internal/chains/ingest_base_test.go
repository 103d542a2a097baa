package chains

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/decode/evm"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// The sustained mode of BenchmarkIngestEVM (BENCH_SUSTAINED=1) ingests into
// a database that already holds the generator's first BENCH_BASE_BLOCKS
// blocks (default 250,000: five million txs), as a long-running index does,
// instead of into an empty one. The base is built once per backend and size,
// kept in BENCH_CACHE (default os.TempDir()), and migrated in place when
// this build's schema is newer than the base's:
//
//	<cache>/permafrost-ingest-base-<backend>-v<benchBaseVersion>-<blocks>/
//	    base.db       SQLite (checkpointed, no WAL)
//	    cluster/      PostgreSQL cluster directory (database "bench"), stopped
//	    manifest.json written last: a directory without it is rebuilt
//
// Each run copies the base (SQLite: the file, PostgreSQL: the cluster
// directory) and ingests the next BENCH_BLOCKS blocks into the copy, which
// is removed afterwards.
//
// The base is written by the same indexer wiring as BENCH_FULL=1 (the ICM
// sink and the metrics rollups, as `permafrost index` wires the C-chain)
// through the real ingest pipeline, in-process: its source is the generator
// itself rather than the JSON-RPC node, whose answers are the generator's
// bytes verbatim, so every row, raw block and checkpoint is what indexing
// from the node writes. Batches are bigger (benchBaseBatch): the final rows
// do not depend on the batch size.

// BENCH_BASE_CATCHUP=1 builds (and uses) a base written by a bulk catch-up
// instead: the deferrable indexes dropped while it ingests and built at the
// end, as a fresh sync by Permafrost leaves a database (its indexes built,
// not grown by random inserts: denser pages). The rows are the same; the
// build is several times faster on PostgreSQL (the 100,000-block base took
// 20 minutes with its indexes maintained, under load), which is what makes a
// 250,000-block PostgreSQL base practical. Its own cache directory
// (suffix -catchup): a base of the other kind is left as it is.

// benchBaseVersion names the generator's chain and the base's wiring: bump
// it when either changes.
const benchBaseVersion = "1"

const (
	benchBaseBlocks = 250_000
	benchBaseBatch  = 2000
	benchBaseDB     = "bench" // the PostgreSQL base's database
)

type baseManifest struct {
	Version    string  `json:"version"`
	Schema     string  `json:"schema"`
	Blocks     int     `json:"blocks"`
	TxPerBlock int     `json:"txPerBlock"`
	Bytes      int64   `json:"bytes"`
	BuildSecs  float64 `json:"buildSeconds"`
}

// ingestBase is one backend's cached base.
type ingestBase struct {
	dir     string
	backend string
	blocks  int
	catchUp bool // built by a bulk catch-up (BENCH_BASE_CATCHUP)
}

func newIngestBase(backend string, blocks int) ingestBase {
	root := os.Getenv("BENCH_CACHE")
	if root == "" {
		root = os.TempDir()
	}
	name := fmt.Sprintf("permafrost-ingest-base-%s-v%s-%d", backend, benchBaseVersion, blocks)
	catchUp := os.Getenv("BENCH_BASE_CATCHUP") != ""
	if catchUp {
		name += "-catchup"
	}
	return ingestBase{dir: filepath.Join(root, name), backend: backend, blocks: blocks, catchUp: catchUp}
}

// ensure builds the base unless the cache has it, or migrates the cached
// one.
func (ib ingestBase) ensure(b *testing.B, full bool) {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join(ib.dir, "manifest.json"))
	var m baseManifest
	if err == nil && json.Unmarshal(raw, &m) == nil && m.Blocks == ib.blocks && m.Version == benchBaseVersion {
		if m.Schema != store.SchemaVersion() {
			ib.migrate(b, m)
		}
		return
	}
	if err := os.RemoveAll(ib.dir); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(ib.dir, 0o755); err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "building the %s base: %d blocks into %s\n", ib.backend, ib.blocks, ib.dir)
	ctx := context.Background()
	start := time.Now()
	var dsn string
	var cluster *storetest.Cluster
	if ib.backend == "postgres" {
		cluster, err = storetest.StartClusterIn(filepath.Join(ib.dir, "cluster"))
		if err != nil {
			b.Fatal(err)
		}
		defer cluster.Shutdown() //nolint:errcheck // the explicit Shutdown below reports
		admin, err := store.Open(ctx, cluster.DSN("postgres"))
		if err != nil {
			b.Fatal(err)
		}
		_, err = admin.ExecContext(ctx, "CREATE DATABASE "+benchBaseDB)
		admin.Close()
		if err != nil {
			b.Fatal(err)
		}
		dsn = cluster.DSN(benchBaseDB)
	} else {
		dsn = "sqlite:" + filepath.Join(ib.dir, "base.db")
	}
	db, err := store.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	src := &generatorSource{gen: evm.NewGenerator(1, benchTxPerBlock), tip: uint64(ib.blocks - 1)}
	chain := ingest.Chain{Key: "C", Kind: "EVM", BlockchainID: "bench", EVMChainID: "43112",
		Source: src, BatchSize: benchBaseBatch, FetchSize: benchRPCBatch}
	chain.Indexer, _ = newBenchIndexer(b, full)
	rctx, cancel := context.WithCancelCause(ctx)
	log := slog.New(failFast{Handler: slog.NewTextHandler(io.Discard, nil), cancel: cancel})
	p := ingest.New(db, []ingest.Chain{chain}, ingest.Options{UntilTip: true, CatchUp: ib.catchUp}, log)
	if err := p.Run(rctx); err != nil || context.Cause(rctx) != nil {
		b.Fatalf("build base: %v (%v)", err, context.Cause(rctx))
	}
	if deferred, err := db.DeferredIndexes(ctx); err != nil || len(deferred) > 0 {
		b.Fatalf("build base: indexes still deferred after the catch-up: %v (%v)", deferred, err)
	}
	cancel(nil)
	var size int64
	if cluster != nil {
		// As autovacuum leaves a table after a load: statistics and the
		// visibility map current.
		if _, err := db.ExecContext(ctx, "VACUUM ANALYZE"); err != nil {
			b.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, `SELECT pg_database_size(current_database())`).Scan(&size); err != nil {
			b.Fatal(err)
		}
	} else {
		checkpointWAL(b, db)
	}
	db.Close()
	if cluster != nil {
		if err := cluster.Shutdown(); err != nil {
			b.Fatal(err)
		}
	} else {
		size = fileSize(filepath.Join(ib.dir, "base.db"))
	}
	m = baseManifest{Version: benchBaseVersion, Schema: store.SchemaVersion(), Blocks: ib.blocks, TxPerBlock: benchTxPerBlock,
		Bytes: size, BuildSecs: time.Since(start).Seconds()}
	ib.writeManifest(b, m)
	fmt.Fprintf(os.Stderr, "built the %s base in %s: %d MB\n", ib.backend, time.Since(start).Round(time.Second), size>>20)
	// The build's heap is not the benchmark's: return it before the peak
	// RSS counter is reset.
	debug.FreeOSMemory()
}

// migrate applies this build's new migrations to the cached base, once.
func (ib ingestBase) migrate(b *testing.B, m baseManifest) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(ib.dir, "base.db")
	if ib.backend == "postgres" {
		cluster, err := storetest.StartClusterIn(filepath.Join(ib.dir, "cluster"))
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := cluster.Shutdown(); err != nil {
				b.Fatal(err)
			}
		}()
		dsn = cluster.DSN(benchBaseDB)
	}
	db, err := store.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		b.Fatalf("migrate the base: %v", err)
	}
	if ib.backend == "sqlite" {
		checkpointWAL(b, db)
	}
	m.Schema = store.SchemaVersion()
	ib.writeManifest(b, m)
}

func (ib ingestBase) writeManifest(b *testing.B, m baseManifest) {
	out, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(ib.dir, "manifest.json"), out, 0o644); err != nil {
		b.Fatal(err)
	}
}

// open copies the base and returns the copy's DSN: the SQLite base to
// sqlitePath (a fresh database's path, or BENCH_SQLITE's, which is kept), the
// PostgreSQL cluster to a directory removed when b ends.
func (ib ingestBase) open(b *testing.B, sqlitePath string) string {
	b.Helper()
	if ib.backend == "postgres" {
		run := filepath.Join(ib.dir, "run-"+strconv.Itoa(os.Getpid()))
		os.RemoveAll(run)
		b.Cleanup(func() { os.RemoveAll(run) })
		// cp -a keeps the postgres user's ownership and modes.
		if out, err := exec.Command("cp", "-a", filepath.Join(ib.dir, "cluster"), run).CombinedOutput(); err != nil {
			b.Fatalf("copy base: %v\n%s", err, out)
		}
		cluster, err := storetest.StartClusterIn(run)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(cluster.Stop)
		return cluster.DSN(benchBaseDB)
	}
	if err := copyFile(filepath.Join(ib.dir, "base.db"), sqlitePath); err != nil {
		b.Fatalf("copy base: %v", err)
	}
	return "sqlite:" + sqlitePath
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	// ReadFrom uses copy_file_range: the kernel copies, not this process.
	if _, err := out.ReadFrom(in); err != nil {
		out.Close()
		return err
	}
	// Written back before the measured run starts: the copy's gigabytes of
	// dirty pages otherwise throttle the run's first writes (the kernel's
	// dirty-page limits), a cost of the set-up, not of ingestion.
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// generatorSource is an ingest.Source made of the generator itself: the
// blocks the benchmark's node would serve, without the JSON-RPC hop.
type generatorSource struct {
	gen  *evm.Generator
	next uint64
	tip  uint64
}

func (s *generatorSource) Tip(context.Context) (uint64, error) { return s.tip, nil }

func (s *generatorSource) Fetch(_ context.Context, from, to uint64) ([]ingest.RawBlock, error) {
	if from != s.next || to > s.tip {
		return nil, fmt.Errorf("generator source: fetch %d..%d, next is %d, tip %d", from, to, s.next, s.tip)
	}
	out := make([]ingest.RawBlock, 0, to-from+1)
	for ; s.next <= to; s.next++ {
		out = append(out, s.gen.Next())
	}
	return out, nil
}
