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
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// Env is an ingested devnet-a index.
type Env struct {
	DB      *store.DB
	Network *api.Network
	Pager   *api.Pager
	Chains  *chains.Set
	// NodeURL is the replay node's base URL (it stays up for the test binary).
	NodeURL string
	// Dir is the recording directory (testdata/devnet-a).
	Dir string
}

var (
	mu   sync.Mutex
	envs = map[string]*Env{}
	node struct {
		once sync.Once
		url  string
		err  error
	}
)

// DevnetDir is the recording's directory (devnet.Dir, kept for callers).
func DevnetDir(t testing.TB) string {
	t.Helper()
	return devnet.Dir(t)
}

// ReplayNode starts (once per test binary) the replay node of the recording
// on 127.0.0.1 and returns its base URL.
func ReplayNode(t testing.TB) string {
	t.Helper()
	dir := DevnetDir(t)
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
	mu.Lock()
	defer mu.Unlock()
	if e, ok := envs[backend]; ok {
		return e
	}
	url := ReplayNode(t)
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
	set, err := chains.Build(ctx, chains.Options{NodeURL: url, GenesisPath: filepath.Join(DevnetDir(t), "genesis.json"), Log: log, BatchSize: 16,
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
	e := &Env{DB: db, Network: network, Pager: pager, Chains: set, NodeURL: url, Dir: DevnetDir(t)}
	envs[backend] = e
	return e
}
