package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/indexer"
	"github.com/ava-labs/avalanchego/utils/formatting"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/vms/proposervm/block"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/replay"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// devnet-c is the recording whose nodes ran with --index-enabled: its
// rpc/ext_index.jsonl holds the real index answers (proposervm containers).
var devnetCTips = map[string]int64{"P": 63, "X": 57}

// proposer is a block's proposerDetails as served.
type proposer struct {
	ID      string `json:"proposerId"`
	Parent  string `json:"proposerParentId"`
	Node    string `json:"proposerNodeId"`
	PHeight int64  `json:"proposerPChainHeight"`
	Time    int64  `json:"proposerTimestamp"`
}

// recordedWrapper is what the node's index holds for one height: the inner
// block's ID and the wrapper's details.
type recordedWrapper struct {
	innerID string
	want    proposer
}

// recordedWrappers reads the recorded index ranges of P and X and parses
// every container with avalanchego's proposervm parser; the node's own ID of
// each container must be the parsed one.
func recordedWrappers(t *testing.T, rec *replay.Recording) map[string]map[int64]recordedWrapper {
	t.Helper()
	out := map[string]map[int64]recordedWrapper{}
	for _, chain := range []string{"P", "X"} {
		out[chain] = map[int64]recordedWrapper{}
		for _, e := range rec.Exchanges {
			if e.Endpoint != "/ext/index/"+chain+"/block" || e.Method != "index.getContainerRange" {
				continue
			}
			var resp struct {
				Result *indexer.GetContainerRangeResponse `json:"result"`
			}
			if err := json.Unmarshal(e.Response, &resp); err != nil {
				t.Fatal(err)
			}
			if resp.Result == nil {
				continue // a recorded error
			}
			for _, fc := range resp.Result.Containers {
				b, err := formatting.Decode(fc.Encoding, fc.Bytes)
				if err != nil {
					t.Fatal(err)
				}
				blk, err := block.ParseWithoutVerification(b)
				if err != nil {
					t.Fatalf("%s container %d: %v", chain, fc.Index, err)
				}
				if blk.ID() != fc.ID {
					t.Fatalf("%s container %d: parsed ID %s, node says %s", chain, fc.Index, blk.ID(), fc.ID)
				}
				w := recordedWrapper{innerID: ids.ID(hashing.ComputeHash256Array(blk.Block())).String(),
					want: proposer{ID: blk.ID().String(), Parent: blk.ParentID().String()}}
				if sb, ok := blk.(block.SignedBlock); ok {
					if sb.Proposer() != ids.EmptyNodeID {
						w.want.Node = sb.Proposer().String()
					}
					w.want.PHeight, w.want.Time = int64(sb.PChainHeight()), sb.Timestamp().Unix()
				}
				out[chain][int64(fc.Index)+1] = w // index i holds height i+1
			}
		}
		if int64(len(out[chain])) != devnetCTips[chain] {
			t.Fatalf("%s: %d recorded containers, want %d", chain, len(out[chain]), devnetCTips[chain])
		}
	}
	return out
}

// faultyNode serves the recording through fault, which may answer a call
// itself (true) instead of the replay.
type faultyNode struct {
	next  http.Handler
	mu    sync.Mutex
	fault func(w http.ResponseWriter, r *http.Request, path, method string, params json.RawMessage, body []byte) bool
}

func (f *faultyNode) set(fault func(w http.ResponseWriter, r *http.Request, path, method string, params json.RawMessage, body []byte) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = fault
}

func (f *faultyNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(body, &req)
	f.mu.Lock()
	fault := f.fault
	f.mu.Unlock()
	if fault != nil && fault(w, r, r.URL.Path, req.Method, req.Params, body) {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	f.next.ServeHTTP(w, r)
}

// proxyEdited answers with the replay's answer after edit.
func (f *faultyNode) proxyEdited(w http.ResponseWriter, r *http.Request, body []byte, edit func([]byte) []byte) {
	rr := httptest.NewRecorder()
	r.Body = io.NopCloser(bytes.NewReader(body))
	f.next.ServeHTTP(rr, r)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rr.Code)
	_, _ = w.Write(edit(rr.Body.Bytes()))
}

// syncBuffer is a log sink shared by the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// served is a running `permafrost serve`.
type served struct {
	base string
	logs *syncBuffer
	stop func()
	db   *store.DB // a second handle on its database, for status and health
}

// startServe runs `permafrost serve` over node (a replay of testdata/recording)
// into a fresh database of backend, as a user would, and returns once it
// listens.
func startServe(t *testing.T, backend, node, recording string) *served {
	t.Helper()
	return startServeDSN(t, storetest.DSNFor(t, backend), node, filepath.Join(devnet.Root(t), "testdata", recording, "genesis.json"))
}

// startServeDSN runs `permafrost serve` over node into the database dsn.
func startServeDSN(t *testing.T, dsn, node, genesis string) *served {
	t.Helper()
	port, err := storetest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, "serve", []string{"--node", node, "--genesis", genesis,
			"--db", dsn, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--poll", "200ms", "--batch-size", "8",
			"--export-dir", t.TempDir()}, io.Discard, logs)
	}()
	s := &served{base: fmt.Sprintf("http://127.0.0.1:%d", port), logs: logs}
	var once sync.Once
	s.stop = func() { once.Do(func() { stopServe(t, cancel, done, logs) }) }
	t.Cleanup(s.stop)
	for deadline := time.Now().Add(60 * time.Second); ; {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v\n%s", err, logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve does not listen\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.db = storetest.Open(t, dsn)
	return s
}

func stopServe(t *testing.T, cancel func(), done <-chan error, logs *syncBuffer) {
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("serve did not stop\n%s", logs)
	}
}

// waitFor polls cond until it holds or a minute passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func chainStatus(t *testing.T, db *store.DB, chain string) ChainStatus {
	t.Helper()
	st, err := ReadStatus(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Chain == chain {
			return s
		}
	}
	return ChainStatus{Chain: chain, IndexedHeight: -1}
}

func indexedTips(t *testing.T, db *store.DB) func() bool {
	return func() bool {
		for chain, tip := range devnetCTips {
			if chainStatus(t, db, chain).IndexedHeight != tip {
				return false
			}
		}
		return true
	}
}

// servedProposers lists every block of chain through the data service.
func servedProposers(t *testing.T, base, chain string) map[int64]struct {
	hash string
	p    *proposer
} {
	t.Helper()
	out := map[int64]struct {
		hash string
		p    *proposer
	}{}
	url := base + "/v1/networks/testnet/blockchains/" + map[string]string{"P": "p-chain", "X": "x-chain"}[chain] + "/blocks?pageSize=100"
	for next := url; next != ""; {
		resp, err := http.Get(next)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Blocks []struct {
				BlockNumber     string    `json:"blockNumber"`
				BlockHash       string    `json:"blockHash"`
				ProposerDetails *proposer `json:"proposerDetails"`
			} `json:"blocks"`
			NextPageToken string `json:"nextPageToken"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v", next, resp.StatusCode, err)
		}
		for _, b := range page.Blocks {
			var h int64
			fmt.Sscan(b.BlockNumber, &h)
			out[h] = struct {
				hash string
				p    *proposer
			}{b.BlockHash, b.ProposerDetails}
		}
		next = ""
		if page.NextPageToken != "" {
			next = url + "&pageToken=" + page.NextPageToken
		}
	}
	return out
}

// checkProposers compares every served block of P and X with the node's
// recorded wrapper of its height: equal details where the block has them,
// and all of them for heights up to full[chain].
func checkProposers(t *testing.T, base string, wrappers map[string]map[int64]recordedWrapper, full map[string]int64) map[string]int {
	t.Helper()
	withDetails := map[string]int{}
	for chain, tip := range devnetCTips {
		blocks := servedProposers(t, base, chain)
		if int64(len(blocks)) != tip+1 {
			t.Errorf("%s: %d blocks served, want %d", chain, len(blocks), tip+1)
		}
		for h := int64(1); h <= tip; h++ {
			b, w := blocks[h], wrappers[chain][h]
			if b.hash != w.innerID {
				t.Errorf("%s %d: block %s, the index wraps %s", chain, h, b.hash, w.innerID)
			}
			switch {
			case b.p == nil && h <= full[chain]:
				t.Errorf("%s %d: no proposerDetails, want %+v", chain, h, w.want)
			case b.p != nil && *b.p != w.want:
				t.Errorf("%s %d: proposerDetails %+v, want %+v", chain, h, *b.p, w.want)
			case b.p != nil:
				withDetails[chain]++
			}
		}
		if blocks[0].p != nil {
			t.Errorf("%s genesis has proposerDetails %+v", chain, *blocks[0].p)
		}
	}
	return withDetails
}

// checkNodeBlocks lists the blocks of every proposer of the recorded
// wrappers (listPrimaryNetworkBlocksByNodeId, three a page): exactly the
// heights whose wrapper names the node, newest first.
func checkNodeBlocks(t *testing.T, base string, wrappers map[string]map[int64]recordedWrapper) {
	t.Helper()
	for chain, alias := range map[string]string{"P": "p-chain", "X": "x-chain"} {
		want := map[string][]int64{}
		for h, w := range wrappers[chain] {
			if w.want.Node != "" {
				want[w.want.Node] = append(want[w.want.Node], h)
			}
		}
		if len(want) < 2 {
			t.Fatalf("%s: %d proposers recorded", chain, len(want))
		}
		want["NodeID-111111111111111111116DBWJs"] = nil // proposed nothing
		for node, heights := range want {
			sort.Slice(heights, func(i, j int) bool { return heights[i] > heights[j] })
			first := base + "/v1/networks/testnet/blockchains/" + alias + "/nodes/" + node + "/blocks?pageSize=3"
			var got []int64
			for next := first; next != ""; {
				resp, err := http.Get(next)
				if err != nil {
					t.Fatal(err)
				}
				var page struct {
					Blocks []struct {
						BlockNumber     string    `json:"blockNumber"`
						ProposerDetails *proposer `json:"proposerDetails"`
					} `json:"blocks"`
					NextPageToken string `json:"nextPageToken"`
				}
				err = json.NewDecoder(resp.Body).Decode(&page)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("GET %s: %d %v", next, resp.StatusCode, err)
				}
				for _, b := range page.Blocks {
					var h int64
					fmt.Sscan(b.BlockNumber, &h)
					if b.ProposerDetails == nil || *b.ProposerDetails != wrappers[chain][h].want {
						t.Errorf("%s %s block %d: proposerDetails %+v, want %+v", chain, node, h, b.ProposerDetails, wrappers[chain][h].want)
					}
					got = append(got, h)
				}
				next = ""
				if page.NextPageToken != "" {
					next = first + "&pageToken=" + url.QueryEscape(page.NextPageToken)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(heights) {
				t.Errorf("%s blocks of %s: %v, the index's wrappers name it at %v", chain, node, got, heights)
			}
		}
	}
}

// TestBlockIndexDevnetC ingests devnet-c through the node's index API as a
// real node serves it (proposervm containers whose IDs leave out the
// signature): every P and X block gets the proposer details the node's
// wrapper holds; with the index failing part-way, ingestion goes on by
// height and says so once; with a block answer that stays wrong, the chain
// is reported stalled and resumes when the node answers right.
func TestBlockIndexDevnetC(t *testing.T) {
	if testing.Short() {
		t.Skip("serves and ingests a recording several times")
	}
	rec, err := replay.Load(filepath.Join(devnet.Root(t), "testdata", "devnet-c"))
	if err != nil {
		t.Fatal(err)
	}
	wrappers := recordedWrappers(t, rec)
	node := &faultyNode{next: replay.NewHandler(rec)}
	nodeURL := serveOnLoopback(t, node)

	t.Run("serving does not wait for the index", func(t *testing.T) {
		node.set(func(w http.ResponseWriter, r *http.Request, path, _ string, _ json.RawMessage, _ []byte) bool {
			if !strings.HasPrefix(path, "/ext/index/") {
				return false
			}
			<-r.Context().Done() // an index that never answers
			return true
		})
		defer node.set(nil)
		start := time.Now()
		s := startServe(t, "sqlite", nodeURL, "devnet-c")
		// The start-up probe used to hold serving for at least 10 s (a hung
		// index: until its 10 s timeout); without it serving starts at once.
		if d := time.Since(start); d > 8*time.Second {
			t.Errorf("serving began after %v", d)
		}
		resp, err := http.Get(s.base + "/v1/live-check")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		s.stop()
	})

	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			t.Run("proposer details of every block", func(t *testing.T) {
				s := startServe(t, backend, nodeURL, "devnet-c")
				waitFor(t, "P and X at the recorded tips", indexedTips(t, s.db))
				got := checkProposers(t, s.base, wrappers, devnetCTips)
				if got["P"] != 63 || got["X"] != 57 {
					t.Errorf("blocks with proposer details: %v", got)
				}
				checkNodeBlocks(t, s.base, wrappers)
				for chain := range devnetCTips {
					if st := chainStatus(t, s.db, chain); st.State != "indexing" || st.Notice != "" || st.Error != "" {
						t.Errorf("%s status %+v", chain, st)
					}
				}
				if strings.Contains(s.logs.String(), "level=ERROR") {
					t.Errorf("errors logged:\n%s", s.logs)
				}
			})

			t.Run("index wrong or missing part-way", func(t *testing.T) {
				node.set(indexFaults(node, wrappers))
				defer node.set(nil)
				s := startServe(t, backend, nodeURL, "devnet-c")
				waitFor(t, "P and X at the recorded tips", indexedTips(t, s.db))
				// P's containers from position 30 (height 31) carry other
				// bytes; X's index ends at position 19 (height 20).
				got := checkProposers(t, s.base, wrappers, map[string]int64{"P": 8, "X": 8})
				if got["P"] < 8 || got["P"] > 30 || got["X"] < 8 || got["X"] > 20 {
					t.Errorf("blocks with proposer details: %v", got)
				}
				ctx := context.Background()
				for chain, tip := range devnetCTips {
					var raw, blocks, distinct int64
					if err := s.db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM raw_blocks WHERE chain_key = $1),
						(SELECT COUNT(*) FROM px_blocks WHERE chain_key = $1), (SELECT COUNT(DISTINCT height) FROM px_blocks WHERE chain_key = $1)`,
						chain).Scan(&raw, &blocks, &distinct); err != nil {
						t.Fatal(err)
					}
					if raw != tip+1 || blocks != tip+1 || distinct != tip+1 {
						t.Errorf("%s: %d raw blocks, %d blocks (%d heights), want %d each", chain, raw, blocks, distinct, tip+1)
					}
					st := chainStatus(t, s.db, chain)
					if st.State != "indexing" || !strings.Contains(st.Notice, "without proposer details") {
						t.Errorf("%s status %+v, want a notice", chain, st)
					}
					if n := countLines(s.logs.String(), "level=ERROR", "block index failed", "chain="+chain); n != 1 {
						t.Errorf("%s: %d ERROR lines about the index, want 1:\n%s", chain, n, s.logs)
					}
				}
				rep, ok := api.NewHealth(s.db, api.LimitsConfig{}, nil).Report(ctx, true)
				if !ok || !strings.Contains(fmt.Sprint(rep.Details["chain:P"]["notice"]), "without proposer details") {
					t.Errorf("health %v %+v", ok, rep.Details)
				}
			})

			t.Run("a block answer that stays wrong stalls the chain", func(t *testing.T) {
				h41 := recordedBlock(t, rec, 41)
				var asked atomic.Int64
				node.set(func(w http.ResponseWriter, r *http.Request, path, method string, params json.RawMessage, body []byte) bool {
					var p struct {
						Height json.Number `json:"height"`
					}
					if path != "/ext/bc/P" || method != "platform.getBlockByHeight" || json.Unmarshal(params, &p) != nil || p.Height != "40" {
						return false
					}
					// The answer for height 41, checksum and all.
					asked.Add(1)
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"jsonrpc":"2.0","result":{"block":%q,"encoding":"hex"},"id":1}`, h41)
					return true
				})
				s := startServe(t, backend, nodeURL, "devnet-c")
				health := api.NewHealth(s.db, api.LimitsConfig{}, nil)
				ctx := context.Background()
				waitFor(t, "P reported stalled", func() bool { return chainStatus(t, s.db, "P").State == "stalled" })
				st := chainStatus(t, s.db, "P")
				if st.IndexedHeight != 39 || st.NodeHeight != 63 || !strings.Contains(st.Error, "platform.getBlockByHeight(40)") ||
					!strings.Contains(st.Error, "asked height 40, got a block of height 41") {
					t.Errorf("stalled status %+v", st)
				}
				// Readiness says why; the index is still served as it is.
				rep, ok := health.Report(ctx, true)
				if ok || rep.Details["chain:P"]["status"] != "down" || !strings.Contains(fmt.Sprint(rep.Details["chain:P"]["message"]), "stalled at height 40") {
					t.Errorf("health of P: %v %v", ok, rep.Details["chain:P"])
				}
				if rep.Details["chain:X"]["status"] != "up" {
					t.Errorf("health of X: %v", rep.Details["chain:X"])
				}
				if err := health.CheckChain(ctx, "P"); err != nil {
					t.Errorf("P's routes: %v, want the index served", err)
				}
				// The pipeline keeps retrying; the stall is logged once.
				// Each failed attempt is 6 bad answers.
				waitFor(t, "a second failed attempt", func() bool { return asked.Load() >= 12 })
				if n := countLines(s.logs.String(), "level=ERROR", "chain stalled", "chain=P"); n != 1 {
					t.Errorf("%d ERROR lines for the stall, want 1:\n%s", n, s.logs)
				}
				node.set(nil)
				waitFor(t, "P at the tip after the node answers right", indexedTips(t, s.db))
				if st := chainStatus(t, s.db, "P"); st.State != "indexing" || st.Error != "" {
					t.Errorf("status after recovery %+v", st)
				}
				if err := health.CheckChain(ctx, "P"); err != nil {
					t.Errorf("health after recovery: %v", err)
				}
				if !strings.Contains(s.logs.String(), "chain resumed") {
					t.Errorf("no resumed line:\n%s", s.logs)
				}
			})
		})
	}
}

// indexFaults corrupts the P index from position 30 on (another container's
// bytes under the node's ID) and cuts the X index at position 19.
func indexFaults(node *faultyNode, wrappers map[string]map[int64]recordedWrapper) func(w http.ResponseWriter, r *http.Request, path, method string, params json.RawMessage, body []byte) bool {
	return func(w http.ResponseWriter, r *http.Request, path, method string, params json.RawMessage, body []byte) bool {
		if method != "index.getContainerRange" {
			return false
		}
		var args indexer.GetContainerRangeArgs
		if err := json.Unmarshal(params, &args); err != nil {
			return false
		}
		switch path {
		case "/ext/index/X/block":
			const last = 19
			if args.StartIndex > last {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"start index (%d) > last accepted index (%d)","data":null},"id":1}`, args.StartIndex, last)
				return true
			}
			if end := uint64(args.StartIndex) + uint64(args.NumToFetch) - 1; end > last {
				args.NumToFetch = last - args.StartIndex + 1
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": args})
				r.Body = io.NopCloser(bytes.NewReader(b))
				node.next.ServeHTTP(w, r)
				return true
			}
		case "/ext/index/P/block":
			if uint64(args.StartIndex)+uint64(args.NumToFetch) <= 30 {
				return false
			}
			node.proxyEdited(w, r, body, func(b []byte) []byte {
				var resp struct {
					JSONRPC string                            `json:"jsonrpc"`
					Result  indexer.GetContainerRangeResponse `json:"result"`
					ID      json.RawMessage                   `json:"id"`
				}
				if json.Unmarshal(b, &resp) != nil || len(resp.Result.Containers) == 0 {
					return b
				}
				donor := resp.Result.Containers[0].Bytes
				for i := range resp.Result.Containers {
					if resp.Result.Containers[i].Index >= 30 {
						resp.Result.Containers[i].Bytes = donor
					}
				}
				out, _ := json.Marshal(resp)
				return out
			})
			return true
		}
		return false
	}
}

// recordedBlock is the recorded hex of P block h (platform.getBlockByHeight).
func recordedBlock(t *testing.T, rec *replay.Recording, h int) string {
	t.Helper()
	for _, e := range rec.Exchanges {
		if e.Endpoint != "/ext/bc/P" || e.Method != "platform.getBlockByHeight" {
			continue
		}
		var p struct {
			Height   json.Number `json:"height"`
			Encoding string      `json:"encoding"`
		}
		if json.Unmarshal(e.Params, &p) != nil || p.Height.String() != fmt.Sprint(h) || p.Encoding != "hex" {
			continue
		}
		var resp struct {
			Result struct {
				Block string `json:"block"`
			} `json:"result"`
		}
		if err := json.Unmarshal(e.Response, &resp); err == nil && resp.Result.Block != "" {
			return resp.Result.Block
		}
	}
	t.Fatalf("no recorded P block %d", h)
	return ""
}

func countLines(logs string, subs ...string) int {
	n := 0
	for _, l := range strings.Split(logs, "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(l, s)
		}
		if all {
			n++
		}
	}
	return n
}

func serveOnLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l) //nolint:errcheck // closed at cleanup
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}
