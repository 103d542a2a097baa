// Package testenv gives tests an index of the bundled devnet-a recording: the
// recording is served by the replay node on loopback and ingested by the real
// sources, indexers and pipeline, once per backend per test binary.
package testenv

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/replay"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// Env is an ingested index of a bundled recording (devnet-a unless named).
type Env struct {
	DB      *store.DB
	Network *api.Network
	Pager   *api.Pager
	Chains  *chains.Set
	// NodeURL is the replay node's base URL (it stays up for the test binary).
	NodeURL string
	// Dir is the recording directory (testdata/devnet-a, ...).
	Dir string
}

var (
	mu    sync.Mutex
	envs  = map[string]*Env{}
	nodes sync.Map // recording dir -> *replayNode
)

type replayNode struct {
	once sync.Once
	url  string
	err  error
}

// DevnetDir is the recording's directory (devnet.Dir, kept for callers).
func DevnetDir(t testing.TB) string {
	t.Helper()
	return devnet.Dir(t)
}

// ReplayNode starts (once per test binary) the replay node of the recording
// on 127.0.0.1 and returns its base URL.
func ReplayNode(t testing.TB) string {
	t.Helper()
	return replayOf(t, DevnetDir(t))
}

// replayOf starts (once per test binary) the replay node of the recording in
// dir on 127.0.0.1 and returns its base URL.
func replayOf(t testing.TB, dir string) string {
	t.Helper()
	v, _ := nodes.LoadOrStore(dir, &replayNode{})
	node := v.(*replayNode)
	node.once.Do(func() {
		rec, err := replay.Load(dir)
		if err != nil {
			node.err = err
			return
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			node.err = err
			return
		}
		srv := &http.Server{Handler: replay.NewHandler(rec), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(l) //nolint:errcheck // lives as long as the test binary
		node.url = "http://" + l.Addr().String()
	})
	if node.err != nil {
		t.Fatalf("testenv: replay node: %v", node.err)
	}
	return node.url
}

// Devnet returns the devnet-a index on backend ("sqlite" or "postgres"),
// ingesting it on first use. Tests share it: treat it as read-only (tables
// of your own, like page tokens or jobs, are fine to write).
func Devnet(t testing.TB, backend string) *Env {
	t.Helper()
	return Recording(t, "devnet-a", backend)
}

// Recording returns the index of the bundled recording testdata/<name>
// (devnet-a, devnet-d: every chain it recorded, L1s found from the P-chain)
// on backend, ingesting it on first use; shared like Devnet's.
func Recording(t testing.TB, name, backend string) *Env {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if e, ok := envs[name+"/"+backend]; ok {
		return e
	}
	recDir := filepath.Join(devnet.Root(t), "testdata", name)
	url := replayOf(t, recDir)
	dsn := storetest.DSNFor(t, backend)
	if backend == "sqlite" {
		// Outlives the first test's TempDir: the env is shared.
		dir, err := os.MkdirTemp("", "permafrost-testenv-")
		if err != nil {
			t.Fatal(err)
		}
		storetest.RemoveAtExit(dir)
		dsn = "sqlite:" + filepath.Join(dir, "devnet.db")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("TESTENV_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	// Small JSON-RPC batches: the recorded C-chain is fetched in several
	// batches and chunks, as a long chain is.
	set, err := chains.Build(ctx, chains.Options{NodeURL: url, GenesisPath: filepath.Join(recDir, "genesis.json"), Log: log, BatchSize: 16,
		RPCBatch: 3, RPCConcurrency: 2})
	if err != nil {
		t.Fatalf("testenv: build chains: %v", err)
	}
	if err := ingest.New(db, set.Chains, ingest.Options{UntilTip: true, Discover: set.Discover(db)}, log).Run(ctx); err != nil {
		t.Fatalf("testenv: ingest: %v", err)
	}
	network, err := api.LoadNetwork(ctx, db, "testnet")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	pager, err := api.LoadPager(ctx, db)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	e := &Env{DB: db, Network: network, Pager: pager, Chains: set, NodeURL: url, Dir: recDir}
	envs[name+"/"+backend] = e
	return e
}

var recordings struct {
	mu   sync.Mutex
	urls map[string]string // recording dir -> replay node URL
}

// ReplayRecording starts (once per test binary and directory) a replay node
// of the recording in dir on 127.0.0.1 and returns its base URL.
func ReplayRecording(t testing.TB, dir string) string {
	t.Helper()
	recordings.mu.Lock()
	defer recordings.mu.Unlock()
	if u, ok := recordings.urls[dir]; ok {
		return u
	}
	rec, err := replay.Load(dir)
	if err != nil {
		t.Fatalf("testenv: replay %s: %v", dir, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: replay.NewHandler(rec), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l) //nolint:errcheck // lives as long as the test binary
	if recordings.urls == nil {
		recordings.urls = map[string]string{}
	}
	recordings.urls[dir] = "http://" + l.Addr().String()
	return recordings.urls[dir]
}

// Index indexes the recording in dir (e.g. testdata/devnet-c) into a fresh
// database of the backend, fetching call traces as traces says, and returns
// it (not shared: each call indexes anew).
func Index(t *testing.T, dir, backend string, traces source.TraceMode) *Env {
	t.Helper()
	url := ReplayRecording(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db := storetest.Open(t, storetest.DSNFor(t, backend))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	set, err := chains.Build(ctx, chains.Options{NodeURL: url, GenesisPath: filepath.Join(dir, "genesis.json"), Log: log,
		BatchSize: 16, RPCBatch: 5, RPCConcurrency: 2, Traces: traces})
	if err != nil {
		t.Fatalf("testenv: build chains: %v", err)
	}
	if err := ingest.New(db, set.Chains, ingest.Options{UntilTip: true}, log).Run(ctx); err != nil {
		t.Fatalf("testenv: ingest: %v", err)
	}
	network, err := api.LoadNetwork(ctx, db, "testnet")
	if err != nil {
		t.Fatal(err)
	}
	pager, err := api.LoadPager(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	return &Env{DB: db, Network: network, Pager: pager, Chains: set, NodeURL: url, Dir: dir}
}
