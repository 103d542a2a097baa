package app

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/replay"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// switchableNode is the devnet-a replay on a fixed loopback port that can be
// taken down (its listener closed, connections refused) and brought back.
type switchableNode struct {
	t    *testing.T
	addr string
	h    http.Handler
	mu   sync.Mutex
	srv  *http.Server
}

func newSwitchableNode(t *testing.T, dir string) *switchableNode {
	rec, err := replay.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	port, err := storetest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	n := &switchableNode{t: t, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), h: replay.NewHandler(rec)}
	t.Cleanup(n.down)
	return n
}

func (n *switchableNode) url() string { return "http://" + n.addr }

func (n *switchableNode) up() {
	n.mu.Lock()
	defer n.mu.Unlock()
	var l net.Listener
	var err error
	for range 50 { // the port may linger for a moment after down
		if l, err = net.Listen("tcp", n.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		n.t.Fatal(err)
	}
	n.srv = &http.Server{Handler: n.h, ReadHeaderTimeout: 10 * time.Second}
	go n.srv.Serve(l) //nolint:errcheck // closed by down
}

func (n *switchableNode) down() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.srv != nil {
		n.srv.Close()
		n.srv = nil
	}
}

func healthStatus(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/v1/health-check")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// With the node down at start, serve answers from the index it has at once
// (the health check says ingestion waits for the node), and ingests when
// the node appears. reindex needs no node at all.
func TestServeWithoutNode(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a recording")
	}
	dir := devnet.Dir(t)
	node := newSwitchableNode(t, dir)
	node.up()
	dsn := storetest.DSNFor(t, "sqlite")
	ctx := context.Background()
	genesis := filepath.Join(dir, "genesis.json")
	if err := Run(ctx, "index", []string{"--node", node.url(), "--genesis", genesis, "--db", dsn, "--until-tip"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	node.down()

	// reindex reads no node, and rebuilds the same index.
	before := dump(t, storetest.Open(t, dsn))
	if err := Run(ctx, "reindex", []string{"--node", node.url(), "--genesis", genesis, "--db", dsn}, io.Discard, io.Discard); err != nil {
		t.Fatalf("reindex without the node: %v", err)
	}
	after := dump(t, storetest.Open(t, dsn))
	for table, want := range before {
		if after[table] != want {
			t.Errorf("reindex changed %s: %s -> %s", table, want, after[table])
		}
	}

	start := time.Now()
	s := startServeDSN(t, dsn, node.url(), genesis)
	if d := time.Since(start); d > nodeWait+15*time.Second {
		t.Errorf("serving began after %v", d)
	}
	resp, err := http.Get(s.base + "/v1/networks/testnet/blockchains/p-chain/blocks?pageSize=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("blocks from the index while the node is down: %d", resp.StatusCode)
	}
	if code, body := healthStatus(t, s.base); code != 503 || !strings.Contains(body, "waiting for the node") {
		t.Errorf("health while the node is down: %d %s", code, body)
	}
	if st := chainStatus(t, s.db, "P"); st.State != "stalled" || !strings.Contains(st.Error, "waiting for the node") {
		t.Errorf("status while the node is down: %+v", st)
	}
	node.up()
	waitFor(t, "health once the node answers", func() bool { code, _ := healthStatus(t, s.base); return code == 200 })
	if !strings.Contains(s.logs.String(), "the node answers; ingestion starts") {
		t.Errorf("logs:\n%s", s.logs)
	}
}

// A node that goes away while serving: within a minute the health check
// says so for each chain, with one ERROR line per chain (not one per
// retry); when it is back, ingestion resumes and the health check is 200.
func TestNodeGoesAway(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the node's retries to give up")
	}
	dir := devnet.Dir(t)
	node := newSwitchableNode(t, dir)
	node.up()
	s := startServeDSN(t, storetest.DSNFor(t, "sqlite"), node.url(), filepath.Join(dir, "genesis.json"))
	waitFor(t, "healthy", func() bool { code, _ := healthStatus(t, s.base); return code == 200 })
	node.down()
	went := time.Now()
	waitFor(t, "the health check to notice, for every chain", func() bool {
		code, body := healthStatus(t, s.base)
		return code == 503 && strings.Count(body, "is stalled at height") == 2*3 // error and details, P X C
	})
	if d := time.Since(went); d > time.Minute {
		t.Errorf("noticed after %v", d)
	}
	time.Sleep(3 * time.Second) // more failed attempts: still one line each
	for _, chain := range []string{"P", "X", "C"} {
		if n := countLines(s.logs.String(), "level=ERROR", "chain stalled", "chain="+chain); n != 1 {
			t.Errorf("chain %s: %d ERROR lines, want 1", chain, n)
		}
	}
	if n := strings.Count(s.logs.String(), "source: retrying call"); n != 0 {
		t.Errorf("%d retry lines at the default level", n)
	}
	node.up()
	waitFor(t, "healthy again", func() bool { code, _ := healthStatus(t, s.base); return code == 200 })
}

// status on a path with no database says so and creates none.
func TestStatusWithoutDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.db")
	var out bytes.Buffer
	err := Run(context.Background(), "status", []string{"--db", "sqlite:" + path}, &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no database at") {
		t.Fatalf("err %v", err)
	}
	if _, serr := os.Stat(path); !os.IsNotExist(serr) {
		t.Errorf("status created %s", path)
	}
}

// A second ingesting process on the same database refuses to start and
// names the holder; so does reindex. An API-only replica (--ingest=false)
// takes no lock.
func TestOneWriter(t *testing.T) {
	dsn := storetest.DSNFor(t, "sqlite")
	holder := storetest.Open(t, dsn)
	ctx := context.Background()
	w, err := holder.AcquireWriter(ctx, "the indexer under test")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release()
	for _, cmd := range []string{"serve", "index", "reindex"} {
		err := Run(ctx, cmd, []string{"--db", dsn, "--node", "http://127.0.0.1:1"}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "another process is writing to this database") || !strings.Contains(err.Error(), "the indexer under test") {
			t.Errorf("%s: %v", cmd, err)
		}
	}
}
