package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/hashing"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/replay"
)

var (
	fixtureOnce sync.Once
	fixtureRec  *replay.Recording
	fixtureErr  error
)

// fixture is the recording (loaded once per test binary) and its network.json.
func fixture(t testing.TB) (*replay.Recording, *devnet.Network) {
	t.Helper()
	fixtureOnce.Do(func() { fixtureRec, fixtureErr = replay.Load(devnet.Dir(t)) })
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return fixtureRec, devnet.LoadNetwork(t)
}

// serve starts h on 127.0.0.1 and returns its base URL.
func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// counter counts the HTTP requests reaching the wrapped handler.
type counter struct {
	h http.Handler
	n atomic.Int64
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.n.Add(1)
	c.h.ServeHTTP(w, r)
}

// logBuffer collects slog output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSpace(l.buf.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func fastRetry(logs *logBuffer) Retry {
	r := Retry{Initial: 2 * time.Millisecond, Max: 10 * time.Millisecond, AttemptTimeout: 5 * time.Second}
	if logs == nil {
		logs = &logBuffer{}
	}
	r.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return r
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func cb58ID(b []byte) string { return ids.ID(hashing.ComputeHash256Array(b)).String() }

// recordedResult returns the result of the first recorded call matching.
func recordedResult(t testing.TB, rec *replay.Recording, endpoint, method, params string) json.RawMessage {
	t.Helper()
	for _, e := range rec.Exchanges {
		if e.Endpoint == endpoint && e.Method == method && string(e.Params) == params {
			var r struct {
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(e.Response, &r); err != nil {
				t.Fatal(err)
			}
			return r.Result
		}
	}
	t.Fatalf("no recorded %s %s", method, params)
	return nil
}

func TestAvalancheAgainstRecording(t *testing.T) {
	rec, nw := fixture(t)
	cnt := &counter{h: replay.NewHandler(rec)}
	a, err := NewAvalanche(serve(t, cnt)+"/", fastRetry(nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)

	if id, err := a.NetworkID(ctx); err != nil || id != nw.NetworkID {
		t.Fatalf("NetworkID = %d, %v", id, err)
	}
	for alias, want := range nw.BlockchainIDs {
		if id, err := a.BlockchainID(ctx, alias); err != nil || id.String() != want {
			t.Fatalf("BlockchainID(%s) = %s, %v; want %s", alias, id, err, want)
		}
	}

	t.Run("P blocks", func(t *testing.T) {
		tip, err := a.PHeight(ctx)
		if err != nil || tip != nw.Tips.P.Height {
			t.Fatalf("PHeight = %d, %v", tip, err)
		}
		if len(nw.PBlocks) != int(tip)+1 {
			t.Fatalf("network.json has %d P blocks", len(nw.PBlocks))
		}
		var last string
		for h := uint64(0); h <= tip; h++ {
			b, err := a.PBlockByHeight(ctx, h)
			if err != nil {
				t.Fatalf("PBlockByHeight(%d): %v", h, err)
			}
			if got := cb58ID(b); got != nw.PBlocks[h].BlockID || nw.PBlocks[h].Height != h {
				t.Fatalf("P block %d: ID %s, want %s", h, got, nw.PBlocks[h].BlockID)
			}
			last = cb58ID(b)
		}
		if last != nw.Tips.P.BlockID {
			t.Fatalf("P tip %s, want %s", last, nw.Tips.P.BlockID)
		}
	})

	t.Run("X blocks", func(t *testing.T) {
		tip, err := a.XHeight(ctx)
		if err != nil || tip != nw.Tips.X.Height {
			t.Fatalf("XHeight = %d, %v", tip, err)
		}
		var last string
		for h := uint64(0); h <= tip; h++ {
			b, err := a.XBlockByHeight(ctx, h)
			if err != nil {
				t.Fatalf("XBlockByHeight(%d): %v", h, err)
			}
			// The node's own JSON answer for the height names the block ID.
			var js struct {
				Block struct {
					ID string `json:"id"`
				} `json:"block"`
			}
			raw := recordedResult(t, rec, "/ext/bc/X", "avm.getBlockByHeight", `{"encoding":"json","height":`+itoa(h)+`}`)
			if err := json.Unmarshal(raw, &js); err != nil {
				t.Fatal(err)
			}
			if got := cb58ID(b); got != js.Block.ID {
				t.Fatalf("X block %d: ID %s, want %s", h, got, js.Block.ID)
			}
			last = cb58ID(b)
		}
		if last != nw.Tips.X.BlockID {
			t.Fatalf("X tip %s, want %s", last, nw.Tips.X.BlockID)
		}
	})

	t.Run("above tip is a definitive not-found", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			call func() error
		}{
			{"P", func() error { _, err := a.PBlockByHeight(ctx, 1041); return err }},
			{"X", func() error { _, err := a.XBlockByHeight(ctx, 1019); return err }},
		} {
			before := cnt.n.Load()
			err := tt.call()
			var re *RPCError
			if !errors.As(err, &re) || re.Code != -32000 || !IsNotFound(err) || IsRetryable(err) {
				t.Fatalf("%s: err = %v", tt.name, err)
			}
			if n := cnt.n.Load() - before; n != 1 {
				t.Fatalf("%s: %d requests, want 1 (no retry)", tt.name, n)
			}
		}
	})

	t.Run("txs", func(t *testing.T) {
		n := 0
		for _, e := range rec.Exchanges {
			if e.Method != "platform.getTx" || !strings.Contains(string(e.Params), `"encoding":"hex"`) {
				continue
			}
			var p struct {
				TxID string `json:"txID"`
			}
			if err := json.Unmarshal(e.Params, &p); err != nil {
				t.Fatal(err)
			}
			id, err := ids.FromString(p.TxID)
			if err != nil {
				t.Fatal(err)
			}
			b, err := a.PTx(ctx, id)
			if err != nil {
				t.Fatalf("PTx(%s): %v", id, err)
			}
			if cb58ID(b) != p.TxID {
				t.Fatalf("PTx(%s) bytes hash to %s", id, cb58ID(b))
			}
			n++
		}
		if n < 40 {
			t.Fatalf("checked %d P txs", n)
		}
		unknown, _ := ids.FromString("2h52eVzs934z3GB47UArpCwLZ8L4Q9ENmuAVit2Q18zyfceS5e")
		if _, err := a.PTx(ctx, unknown); err == nil || !strings.Contains(err.Error(), "no recorded answer") {
			// platform.getTx of this ID was only recorded with encoding json.
			t.Fatalf("PTx(unknown) = %v", err)
		}
	})

	t.Run("atomic txs", func(t *testing.T) {
		n := 0
		for _, e := range rec.Exchanges {
			if e.Method != "avax.getAtomicTx" || !strings.Contains(string(e.Response), `"result"`) {
				continue
			}
			var p struct {
				TxID string `json:"txID"`
			}
			if err := json.Unmarshal(e.Params, &p); err != nil {
				t.Fatal(err)
			}
			id, _ := ids.FromString(p.TxID)
			b, err := a.AtomicTx(ctx, id)
			if err != nil || cb58ID(b) != p.TxID {
				t.Fatalf("AtomicTx(%s) = %x, %v", id, b, err)
			}
			n++
		}
		if n != 10 { // 5 txs, with and without encoding
			t.Fatalf("checked %d atomic tx lines", n)
		}
		unknown, _ := ids.FromString("2h52eVzs934z3GB47UArpCwLZ8L4Q9ENmuAVit2Q18zyfceS5e")
		if _, err := a.AtomicTx(ctx, unknown); !IsNotFound(err) {
			t.Fatalf("AtomicTx(unknown) = %v", err)
		}
	})

	t.Run("assets", func(t *testing.T) {
		tests := []struct {
			asset, wantID, wantSymbol string
			wantDenom                 uint8
		}{
			{"AVAX", nw.AvaxAssetID, "AVAX", 9},
			{nw.AvaxAssetID, nw.AvaxAssetID, "AVAX", 9},
			{nw.CreatedAssets["fixedCap_DFC"], nw.CreatedAssets["fixedCap_DFC"], "DFC", 2},
			{nw.CreatedAssets["variableCap_DVC"], nw.CreatedAssets["variableCap_DVC"], "DVC", 6},
			{nw.CreatedAssets["nft_DART"], nw.CreatedAssets["nft_DART"], "DART", 0},
		}
		for _, tt := range tests {
			d, err := a.AssetDescription(ctx, tt.asset)
			if err != nil || d.AssetID.String() != tt.wantID || d.Symbol != tt.wantSymbol || d.Denomination != tt.wantDenom {
				t.Fatalf("AssetDescription(%s) = %+v, %v", tt.asset, d, err)
			}
		}
		if _, err := a.AssetDescription(ctx, "2h52eVzs934z3GB47UArpCwLZ8L4Q9ENmuAVit2Q18zyfceS5e"); !IsNotFound(err) {
			t.Fatalf("unknown asset: %v", err)
		}
	})

	t.Run("peers", func(t *testing.T) {
		ps, err := a.Peers(ctx)
		if err != nil || len(ps) != 2 {
			t.Fatalf("Peers = %v, %v", ps, err)
		}
		var want struct {
			Peers []struct {
				IP     string `json:"ip"`
				NodeID string `json:"nodeID"`
			} `json:"peers"`
		}
		if err := json.Unmarshal(recordedResult(t, rec, "/ext/info", "info.peers", `{}`), &want); err != nil {
			t.Fatal(err)
		}
		for i, p := range ps {
			if p.NodeID.String() != want.Peers[i].NodeID || p.IP.String() != want.Peers[i].IP || !p.IP.IsValid() {
				t.Fatalf("peer %d = %+v, want %+v", i, p, want.Peers[i])
			}
		}
	})

	t.Run("generic call", func(t *testing.T) {
		var raw json.RawMessage
		if err := a.Call(ctx, PathP, "platform.getTimestamp", nil, &raw); err != nil {
			t.Fatal(err)
		}
		if want := recordedResult(t, rec, "/ext/bc/P", "platform.getTimestamp", `{}`); !bytes.Equal(raw, want) {
			t.Fatalf("got %s want %s", raw, want)
		}
		var typed struct {
			Height string `json:"height"`
		}
		if err := a.Call(ctx, PathP, "platform.getHeight", map[string]any{}, &typed); err != nil || typed.Height != "41" {
			t.Fatalf("getHeight = %+v, %v", typed, err)
		}
		before := cnt.n.Load()
		err := a.Call(ctx, PathInfo, "info.getBlockchainID", map[string]string{"alias": "Q"}, nil)
		var re *RPCError
		if !errors.As(err, &re) || re.Code != -32000 || re.Message != "there is no ID with alias: Q" || cnt.n.Load()-before != 1 {
			t.Fatalf("alias Q: %v", err)
		}
		if err := a.Call(ctx, "ext/bc/P", "platform.getHeight", nil, nil); err == nil {
			t.Fatal("relative path accepted")
		}
	})
}

func itoa(u uint64) string {
	b, _ := json.Marshal(u)
	return string(b)
}

func TestNewAvalancheRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:9650", "ftp://x", "http://", "http://x/?a=1", "http://u:p@x", "::"} {
		if _, err := NewAvalanche(u, Retry{}); err == nil {
			t.Errorf("NewAvalanche(%q) accepted", u)
		}
	}
	if _, err := NewEVM(context.Background(), "ws://x", EVMOptions{}); err == nil {
		t.Error("NewEVM(ws) accepted")
	}
	for _, o := range []EVMOptions{{BatchSize: -1}, {BatchSize: maxBatchSize + 1}, {Concurrency: -2}, {Concurrency: maxConcurrency + 1}} {
		if _, err := NewEVM(context.Background(), "http://127.0.0.1:1", o); err == nil {
			t.Errorf("NewEVM(%+v) accepted", o)
		}
	}
}

func TestEVMAgainstRecording(t *testing.T) {
	rec, nw := fixture(t)
	cnt := &counter{h: replay.NewHandler(rec)}
	base := serve(t, cnt)
	ctx := testCtx(t)

	for _, opts := range []EVMOptions{
		{BatchSize: 5, Concurrency: 3},
		{BatchSize: 1, Concurrency: 1},
		{BatchSize: 500, Concurrency: 64},
	} {
		opts.Retry = fastRetry(nil)
		e, err := NewEVM(ctx, base+PathCRPC, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if id, err := e.ChainID(ctx); err != nil || id != nw.EVMChainID {
			t.Fatalf("ChainID = %d, %v", id, err)
		}
		tip, err := e.BlockNumber(ctx)
		if err != nil || tip != nw.Tips.C.Height {
			t.Fatalf("BlockNumber = %d, %v", tip, err)
		}
		before := cnt.n.Load()
		blocks, err := e.Blocks(ctx, 0, tip)
		if err != nil {
			t.Fatalf("%+v: Blocks: %v", opts, err)
		}
		wantReqs := (int(tip) + opts.BatchSize) / opts.BatchSize
		if n := cnt.n.Load() - before; n != int64(wantReqs) {
			t.Fatalf("%+v: %d requests, want %d", opts, n, wantReqs)
		}
		txs := 0
		for h, b := range blocks {
			hex := jsonHex(uint64(h))
			wantBlock := recordedResult(t, rec, "/ext/bc/C/rpc", "eth_getBlockByNumber", `["`+hex+`",true]`)
			wantRcpts := recordedResult(t, rec, "/ext/bc/C/rpc", "eth_getBlockReceipts", `["`+hex+`"]`)
			if b.Height != uint64(h) || !bytes.Equal(b.Block, wantBlock) || !bytes.Equal(b.Receipts, wantRcpts) {
				t.Fatalf("block %d differs from the recording", h)
			}
			var hdr struct {
				Hash      string `json:"hash"`
				Parent    string `json:"parentHash"`
				Timestamp string `json:"timestamp"`
			}
			if err := json.Unmarshal(wantBlock, &hdr); err != nil {
				t.Fatal(err)
			}
			if b.Hash != hdr.Hash || b.ParentHash != hdr.Parent || jsonHex(uint64(b.Timestamp)) != hdr.Timestamp {
				t.Fatalf("block %d: %+v vs %+v", h, b, hdr)
			}
			if h > 0 && b.ParentHash != blocks[h-1].Hash {
				t.Fatalf("block %d does not follow block %d", h, h-1)
			}
			var both struct {
				Block    json.RawMessage `json:"block"`
				Receipts json.RawMessage `json:"receipts"`
			}
			if err := json.Unmarshal(b.Bytes(), &both); err != nil || !bytes.Equal(both.Block, wantBlock) || !bytes.Equal(both.Receipts, wantRcpts) {
				t.Fatalf("block %d: Bytes() = %.100s, %v", h, b.Bytes(), err)
			}
			txs += b.TxCount
		}
		if blocks[tip].Hash != nw.Tips.C.BlockHash {
			t.Fatalf("tip hash %s, want %s", blocks[tip].Hash, nw.Tips.C.BlockHash)
		}
		if txs != 36 || blocks[37].TxCount != 4 || blocks[1].TxCount != 0 {
			t.Fatalf("tx counts: total %d, block 37 %d, block 1 %d", txs, blocks[37].TxCount, blocks[1].TxCount)
		}
	}

	e, err := NewEVM(ctx, base+PathCRPC, EVMOptions{Retry: fastRetry(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	t.Run("above tip", func(t *testing.T) {
		before := cnt.n.Load()
		_, err := e.Blocks(ctx, 0x40d, 0x40d) // recorded: "cannot query unfinalized data"
		var re *RPCError
		if !errors.As(err, &re) || re.Code != -32000 || !IsNotFound(err) {
			t.Fatalf("err = %v", err)
		}
		if n := cnt.n.Load() - before; n != 1 {
			t.Fatalf("%d requests, want 1", n)
		}
	})
	t.Run("bad ranges", func(t *testing.T) {
		if _, err := e.Blocks(ctx, 5, 4); err == nil {
			t.Fatal("empty range accepted")
		}
		if _, err := e.Blocks(ctx, 0, MaxBlocksRange); err == nil {
			t.Fatal("huge range accepted")
		}
		if _, err := e.Blocks(ctx, ^uint64(0)-1, ^uint64(0)); err == nil {
			t.Fatal("blocks at 2^64-1 found")
		}
	})
	t.Run("call and batch", func(t *testing.T) {
		var raw json.RawMessage
		if err := e.Call(ctx, "eth_getTransactionReceipt", []any{"0xabababababababababababababababababababababababababababababababab"}, &raw); err != nil || string(raw) != "null" {
			t.Fatalf("null receipt: %s, %v", raw, err)
		}
		err := e.Call(ctx, "eth_noSuchMethod", nil, nil)
		var re *RPCError
		if !errors.As(err, &re) || re.Code != -32601 {
			t.Fatalf("unknown method: %v", err)
		}
		var block struct {
			Number string `json:"number"`
		}
		var version string
		elems := []BatchElem{
			{Method: "eth_getBlockByNumber", Params: []any{"0x25", false}, Result: &block},
			{Method: "eth_noSuchMethod"},
			{Method: "web3_clientVersion", Result: &version},
			{Method: "eth_getBlockByNumber", Params: []any{"xyz", true}},
		}
		if err := e.BatchCall(ctx, elems); err != nil {
			t.Fatal(err)
		}
		if elems[0].Error != nil || block.Number != "0x25" || elems[2].Error != nil || version == "" {
			t.Fatalf("batch results: %+v %q %+v", block, version, elems)
		}
		if !errors.As(elems[1].Error, &re) || re.Code != -32601 {
			t.Fatalf("elem 1: %v", elems[1].Error)
		}
		if !errors.As(elems[3].Error, &re) || re.Code != -32602 {
			t.Fatalf("elem 3: %v", elems[3].Error)
		}
	})
}

func jsonHex(u uint64) string {
	const digits = "0123456789abcdef"
	if u == 0 {
		return "0x0"
	}
	var b []byte
	for ; u > 0; u >>= 4 {
		b = append([]byte{digits[u&0xf]}, b...)
	}
	return "0x" + string(b)
}
