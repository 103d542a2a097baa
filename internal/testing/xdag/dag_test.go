package xdag_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	avagenesis "github.com/ava-labs/avalanchego/genesis"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/formatting"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/vms/avm/txs"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/api/data/primary"
	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/decode/pchain"
	"github.com/permafrost-dev/permafrost/internal/decode/xchain"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
	"github.com/permafrost-dev/permafrost/internal/testing/xdag"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// TestDAGHistory: an X-chain whose history before the linearization is a
// DAG (txs and vertices built with avalanchego's tx constructors and vertex
// builder, ending with a stop vertex), served by a node's index API, then
// the linear blocks of devnet-a. Permafrost ingests the DAG before the first
// block through the real source, pipeline and X indexer; the UTXO sets,
// balances, tx-by-id answers and vertex routes of the data service are
// compared with what the built txs and vertices imply, on both backends,
// after ingestion and again after reindex. status's notice about the missing
// history goes away once the stop vertex is indexed, and stays with a node
// that serves no DAG index.
func TestDAGHistory(t *testing.T) {
	// avalanchego's avm, fed the same DAG and linearized at its stop
	// vertex: what a real node answers.
	cfg, err := avagenesis.GetConfigFile(filepath.Join(testenv.DevnetDir(t), "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	g, d, _ := network(t)
	o := xdag.NewOracle(t, cfg, g.Upgrades, d)
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			f := newFixture(t, backend, true)
			if n := f.dag.Notice(); !strings.Contains(n, "is not indexed") {
				t.Fatalf("notice before ingestion = %q, want the missing history", n)
			}
			f.ingest(t)
			if n := f.notice(t); strings.Contains(n, "linearization") {
				t.Errorf("status notice after the DAG was indexed = %q", n)
			}
			f.check(t)
			f.compare(t, o)
			// Resuming is a no-op: the stored containers are the checkpoint.
			if err := f.dag.Ingest(context.Background(), f.db); err != nil {
				t.Fatal(err)
			}
			f.check(t)
			if err := ingest.Reindex(context.Background(), f.db, []ingest.Chain{f.p, f.chain}, 4, f.log); err != nil {
				t.Fatal(err)
			}
			f.check(t)
			f.compare(t, o)
		})
	}
}

// TestDAGHistoryWithoutIndex: a node without the DAG index (no
// --index-enabled): blocks are indexed and status keeps saying the history
// is missing.
func TestDAGHistoryWithoutIndex(t *testing.T) {
	f := newFixture(t, "sqlite", false)
	f.ingest(t)
	if n := f.notice(t); !strings.Contains(n, "is not indexed") || !strings.Contains(n, f.d.Vertices[3].ID().String()) {
		t.Errorf("status notice = %q, want the missing history up to the stop vertex", n)
	}
	code, body := apitest.ServeUnvalidated(t, f.mux, "GET", "/v1/networks/testnet/blockchains/x-chain/vertices")
	var list primary.ListVerticesResponse
	apitest.DecodeOK(t, "vertices", code, body, &list)
	if len(list.Vertices) != 0 {
		t.Errorf("vertices without the index: %d", len(list.Vertices))
	}
}

// TestDAGHistoryResumes: an ingestion stopped between batches (the vertex
// index fails after the txs committed) keeps what it committed and resumes
// from the stored containers, without duplicates.
func TestDAGHistoryResumes(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			f := newFixture(t, backend, true)
			broken := xchain.NewDAG(f.chain.Indexer.(*xchain.Indexer), failVertices{chains.NodeDAGIndex(f.node)},
				chains.XHistoryNotice(f.g), f.log)
			ctx := context.Background()
			if err := broken.Ingest(ctx, f.db); err == nil || !strings.Contains(err.Error(), "vertex index down") {
				t.Fatalf("ingest with the vertex index down: %v", err)
			}
			if n := broken.Notice(); n == "" {
				t.Error("no notice while the vertices are missing")
			}
			var txs, vtxs int
			if err := f.db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM x_dag_containers WHERE kind = 'tx'),
				(SELECT COUNT(*) FROM x_dag_containers WHERE kind = 'vtx')`).Scan(&txs, &vtxs); err != nil {
				t.Fatal(err)
			}
			if txs != len(f.d.Txs) || vtxs != 0 {
				t.Fatalf("after the failure: %d txs, %d vertices stored; want %d, 0", txs, vtxs, len(f.d.Txs))
			}
			f.ingest(t)
			if n := f.notice(t); strings.Contains(n, "linearization") {
				t.Errorf("status notice after resuming = %q", n)
			}
			f.check(t)
		})
	}
}

// failVertices is a DAG index whose vertex index fails.
type failVertices struct{ xchain.DAGIndex }

func (f failVertices) Last(ctx context.Context, kind string) (uint64, error) {
	if kind == xchain.KindVertex {
		return 0, errors.New("vertex index down")
	}
	return f.DAGIndex.Last(ctx, kind)
}

type fixture struct {
	g     *genesis.Genesis
	d     *xdag.DAG
	db    *store.DB
	dag   *xchain.DAG
	chain ingest.Chain
	// p is the P-chain, indexed beside (the balances need its tip).
	p    ingest.Chain
	mux  *api.Mux
	spec *apitest.Spec
	log  *slog.Logger
	node *source.Avalanche
	// cortina is the linearization time: the cap of DAG timestamps.
	cortina int64
	txTimes []int64
}

// network is devnet-a's genesis with a DAG before its first block: the
// DAG, and the time its first container was accepted.
func network(t *testing.T) (*genesis.Genesis, *xdag.DAG, time.Time) {
	t.Helper()
	net := devnet.LoadNetwork(t)
	g, err := genesis.Load(net.NetworkID, filepath.Join(testenv.DevnetDir(t), "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	// ewoq is funded by devnet-a's genesis and used by no recorded tx: the
	// DAG spends its output, the recorded blocks after it spend others.
	d, err := xdag.Build(g, avagenesis.EWOQKey)
	if err != nil {
		t.Fatal(err)
	}
	// The network's schedule names the DAG's stop vertex, as mainnet's and
	// Fuji's do; the DAG ends an hour before devnet-a's genesis.
	start := time.Unix(int64(g.P.Timestamp), 0).Add(-2 * time.Hour)
	g.Upgrades.CortinaXChainStopVertexID = d.Vertices[len(d.Vertices)-1].ID()
	g.Upgrades.CortinaTime = start.Add(time.Hour)
	return g, d, start
}

func newFixture(t *testing.T, backend string, withIndex bool) *fixture {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("XDAG_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	g, d, start := network(t)
	txC, vtxC := d.Index(start, time.Now())
	f := &fixture{g: g, d: d, log: log, cortina: g.Upgrades.CortinaTime.Unix(), spec: apitest.Load(t)}
	for _, c := range txC {
		f.txTimes = append(f.txTimes, c.Time.Unix())
	}
	if !withIndex {
		txC, vtxC = nil, nil
	}
	replay, err := url.Parse(testenv.ReplayNode(t))
	if err != nil {
		t.Fatal(err)
	}
	ix := &xdag.Index{Txs: txC, Vertices: vtxC, Next: httputil.NewSingleHostReverseProxy(replay)}
	if !withIndex {
		ix.Next = noDAGIndex{ix.Next}
	}
	srv := httptest.NewServer(ix)
	t.Cleanup(srv.Close)

	f.db = storetest.Open(t, storetest.DSNFor(t, backend))
	node, err := source.NewAvalanche(srv.URL, source.Retry{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	f.node = node
	xIx, err := xchain.NewIndexer(g, log)
	if err != nil {
		t.Fatal(err)
	}
	f.dag = xchain.NewDAG(xIx, chains.NodeDAGIndex(node), chains.XHistoryNotice(g), log)
	xTx, _, err := g.Chain(constants.AVMID)
	if err != nil {
		t.Fatal(err)
	}
	f.chain = ingest.Chain{Key: "X", Kind: "X", BlockchainID: xTx.ID().String(), NetworkID: g.NetworkID, Name: "X-Chain",
		Source: &ingest.XSource{Node: node, Workers: 2, MissingHistory: f.dag}, Indexer: xIx, History: f.dag, BatchSize: 4}
	pIx, err := pchain.NewIndexer(g)
	if err != nil {
		t.Fatal(err)
	}
	pIx.Log = log
	f.p = ingest.Chain{Key: "P", Kind: "P", BlockchainID: constants.PlatformChainID.String(), NetworkID: g.NetworkID, Name: "P-Chain",
		Source: &ingest.PSource{Node: node, Workers: 2}, Indexer: pIx, BatchSize: 64}
	return f
}

// noDAGIndex answers the DAG index paths as a node without --index-enabled
// does (HTTP 404); everything else goes to the node.
type noDAGIndex struct{ next http.Handler }

func (n noDAGIndex) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/ext/index/X/tx") || strings.HasPrefix(r.URL.Path, "/ext/index/X/vtx") {
		http.NotFound(w, r)
		return
	}
	n.next.ServeHTTP(w, r)
}

func (f *fixture) ingest(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := ingest.New(f.db, []ingest.Chain{f.p, f.chain}, ingest.Options{UntilTip: true}, f.log).Run(ctx); err != nil {
		t.Fatal(err)
	}
	network, err := api.LoadNetwork(ctx, f.db, "testnet")
	if err != nil {
		t.Fatal(err)
	}
	pager, err := api.LoadPager(ctx, f.db)
	if err != nil {
		t.Fatal(err)
	}
	f.mux = api.NewMux(f.log)
	primary.Register(f.mux, primary.Deps{DB: f.db, Network: network, Pager: pager, Log: f.log, AVAXAssetID: f.g.AvaxAssetID.String()})
}

// notice is what status shows for the X-chain.
func (f *fixture) notice(t *testing.T) string {
	t.Helper()
	var n *string
	if err := f.db.QueryRowContext(context.Background(), `SELECT notice FROM chains WHERE chain_key = 'X'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == nil {
		return ""
	}
	return *n
}

func (f *fixture) get(t *testing.T, target string, out any) {
	t.Helper()
	code, body := apitest.Serve(t, f.spec, f.mux, "GET", target)
	apitest.DecodeOK(t, target, code, body, out)
}

func (f *fixture) addr(t *testing.T, a ids.ShortID) string {
	t.Helper()
	s, err := address.FormatBech32(f.g.HRP, a[:])
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const x = "/v1/networks/testnet/blockchains/x-chain"

// check compares the data service with what the DAG implies.
func (f *fixture) check(t *testing.T) {
	t.Helper()
	unspent := f.d.Unspent()
	owners := append([]ids.ShortID{avagenesis.EWOQKey.Address()}, f.d.Keys[0].Address(), f.d.Keys[1].Address(), f.d.Keys[2].Address())
	for _, owner := range owners {
		a := f.addr(t, owner)
		// UTXOs: exactly the outputs of this owner the txs left unspent.
		want := map[string]string{}
		sums := map[string]*big.Int{}
		for id, u := range unspent {
			if m, ok := u.Out.(*secp256k1fx.MintOutput); ok {
				// A minter is the owner's UTXO, of no amount, in no balance.
				if m.Addrs[0] == owner {
					want[id.String()] = u.AssetID().String() + " 0"
				}
				continue
			}
			o := u.Out.(*secp256k1fx.TransferOutput)
			if len(o.Addrs) == 1 && o.Addrs[0] == owner {
				want[id.String()] = u.AssetID().String() + " " + new(big.Int).SetUint64(o.Amt).String()
				if sums[u.AssetID().String()] == nil {
					sums[u.AssetID().String()] = new(big.Int)
				}
				sums[u.AssetID().String()].Add(sums[u.AssetID().String()], new(big.Int).SetUint64(o.Amt))
			}
		}
		var page struct {
			Utxos []struct {
				UtxoID string `json:"utxoId"`
				Asset  struct {
					AssetID string `json:"assetId"`
					Amount  string `json:"amount"`
				} `json:"asset"`
			} `json:"utxos"`
		}
		f.get(t, x+"/utxos?pageSize=100&addresses="+a, &page)
		got := map[string]string{}
		for _, u := range page.Utxos {
			got[u.UtxoID] = u.Asset.AssetID + " " + u.Asset.Amount
		}
		if !maps.Equal(got, want) {
			t.Errorf("UTXOs of %s:\n got  %v\n want %v", a, got, want)
		}
		// Balances (as avm.getAllBalances: spendable alone, unlocked).
		gotB := f.balances(t, a)
		wantB := map[string]string{}
		for asset, s := range sums {
			wantB[asset] = s.String()
		}
		if !maps.Equal(gotB, wantB) {
			t.Errorf("balances of %s: got %v, want %v", a, gotB, wantB)
		}
	}

	// Each tx by id: non-linear, in the vertices that hold it, with the
	// UTXOs it consumed and emitted.
	holders := map[ids.ID][]int{}
	for i, v := range f.d.Vertices {
		for _, b := range v.Txs() {
			id := ids.ID(hashing.ComputeHash256Array(b))
			holders[id] = append(holders[id], i)
		}
	}
	for i, tx := range f.d.Txs {
		var got primary.XChainTx
		f.get(t, x+"/transactions/"+tx.ID().String(), &got)
		var wantV []primary.TxVertex
		for _, vi := range holders[tx.ID()] {
			v := f.d.Vertices[vi]
			wantV = append(wantV, primary.TxVertex{Hash: v.ID().String(), Height: int64(v.Height()), Timestamp: f.vertexTime(vi)})
		}
		if got.ChainFormat != "non-linear" || got.BlockHeight != nil || got.Timestamp != f.txTimes[i] || !sameJSON(got.Vertices, wantV) {
			t.Errorf("tx %d: chainFormat %q blockHeight %v timestamp %d vertices %+v, want non-linear, none, %d, %+v",
				i, got.ChainFormat, got.BlockHeight, got.Timestamp, got.Vertices, f.txTimes[i], wantV)
		}
		if g, w := utxoIDs(got.EmittedUtxos), idsOf(tx.UTXOs()); !slices.Equal(g, w) {
			t.Errorf("tx %d emitted %v, want %v", i, g, w)
		}
		var ins []string
		for _, in := range tx.Unsigned.InputUTXOs() {
			ins = append(ins, in.InputID().String())
		}
		sort.Strings(ins)
		if g := utxoIDs(got.ConsumedUtxos); !slices.Equal(g, ins) {
			t.Errorf("tx %d consumed %v, want %v", i, g, ins)
		}
		if i == 1 && (got.AssetCreated == nil || got.AssetCreated.Symbol != "DAGT" || got.AssetCreated.Cap != "variable") {
			t.Errorf("tx %d assetCreated %+v", i, got.AssetCreated)
		}
	}

	// Vertices: newest first, one by hash, by height, pages.
	var list primary.ListVerticesResponse
	f.get(t, x+"/vertices", &list)
	if len(list.Vertices) != len(f.d.Vertices) {
		t.Fatalf("vertices: %d, want %d", len(list.Vertices), len(f.d.Vertices))
	}
	for j, got := range list.Vertices {
		i := len(f.d.Vertices) - 1 - j
		if want := f.vertex(i); !sameJSON(got, want) {
			t.Errorf("vertex %d:\n got  %+v\n want %+v", i, got, want)
		}
	}
	var one primary.Vertex
	f.get(t, x+"/vertices/"+f.d.Vertices[1].ID().String(), &one)
	if want := f.vertex(1); !sameJSON(one, want) {
		t.Errorf("vertex by hash:\n got  %+v\n want %+v", one, want)
	}
	f.get(t, x+"/vertices:listByHeight?vertexHeight=1", &list)
	if len(list.Vertices) != 1 || list.Vertices[0].VertexHash != f.d.Vertices[1].ID().String() {
		t.Errorf("vertices at height 1: %+v", list.Vertices)
	}
	var walked []string
	for target := x + "/vertices?pageSize=1"; ; {
		var p primary.ListVerticesResponse
		f.get(t, target, &p)
		for _, v := range p.Vertices {
			walked = append(walked, v.VertexHash)
		}
		if p.NextPageToken == "" || len(walked) > len(f.d.Vertices) {
			break
		}
		target = x + "/vertices?pageSize=1&pageToken=" + url.QueryEscape(p.NextPageToken)
	}
	if len(walked) != len(f.d.Vertices) || walked[0] != f.d.Vertices[3].ID().String() || walked[3] != f.d.Vertices[0].ID().String() {
		t.Errorf("vertex pages: %v", walked)
	}
	code, body := apitest.Serve(t, f.spec, f.mux, "GET", x+"/vertices/"+ids.GenerateTestID().String())
	apitest.WantError(t, "unknown vertex", code, body, 404, "vertexHash")

	// The linear blocks after the stop vertex are indexed too.
	var blocks int
	if err := f.db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM px_blocks WHERE chain_key = 'X'`).Scan(&blocks); err != nil {
		t.Fatal(err)
	}
	if blocks < 2 {
		t.Errorf("linear X blocks indexed: %d", blocks)
	}
}

// compare compares the data service with avalanchego's avm (the oracle):
// avm.getUTXOs and avm.getAllBalances of every address the DAG touched, and
// avm.getTx of every DAG tx.
func (f *fixture) compare(t *testing.T, o *xdag.Oracle) {
	t.Helper()
	p, err := xdag.Parser()
	if err != nil {
		t.Fatal(err)
	}
	owners := append([]ids.ShortID{avagenesis.EWOQKey.Address()}, f.d.Keys[0].Address(), f.d.Keys[1].Address(), f.d.Keys[2].Address())
	for _, owner := range owners {
		a := f.addr(t, owner)
		raw, msg, err := o.Call("avm.getUTXOs", map[string]any{"addresses": []string{"X-" + a}, "limit": 1024, "encoding": "hex"})
		if err != nil || msg != "" {
			t.Fatalf("avm.getUTXOs(%s): %v %s", a, err, msg)
		}
		var us struct {
			UTXOs []string `json:"utxos"`
		}
		if err := json.Unmarshal(raw, &us); err != nil {
			t.Fatal(err)
		}
		want := []string{}
		for _, h := range us.UTXOs {
			b, err := formatting.Decode(formatting.Hex, h)
			if err != nil {
				t.Fatal(err)
			}
			var u avax.UTXO
			if _, err := p.Codec().Unmarshal(b, &u); err != nil {
				t.Fatal(err)
			}
			want = append(want, u.InputID().String())
		}
		sort.Strings(want)
		var page struct {
			Utxos []primary.Utxo `json:"utxos"`
		}
		f.get(t, x+"/utxos?pageSize=100&addresses="+a, &page)
		if got := utxoIDs(page.Utxos); !slices.Equal(got, want) {
			t.Errorf("UTXOs of %s: Permafrost %v, avm %v", a, got, want)
		}

		raw, msg, err = o.Call("avm.getAllBalances", map[string]any{"address": "X-" + a})
		if err != nil || msg != "" {
			t.Fatalf("avm.getAllBalances(%s): %v %s", a, err, msg)
		}
		var bals struct {
			Balances []struct {
				Asset   string `json:"asset"`
				Balance string `json:"balance"`
			} `json:"balances"`
		}
		if err := json.Unmarshal(raw, &bals); err != nil {
			t.Fatal(err)
		}
		wantB := map[string]string{}
		for _, b := range bals.Balances {
			id := b.Asset
			if id == "AVAX" {
				id = f.g.AvaxAssetID.String()
			}
			wantB[id] = b.Balance
		}
		gotB := f.balances(t, a)
		if !maps.Equal(gotB, wantB) {
			t.Errorf("balances of %s: Permafrost %v, avm.getAllBalances %v", a, gotB, wantB)
		}
	}
	for i, tx := range f.d.Txs {
		raw, msg, err := o.Call("avm.getTx", map[string]any{"txID": tx.ID().String(), "encoding": "hex"})
		if err != nil || msg != "" {
			t.Fatalf("avm.getTx(%d): %v %s", i, err, msg)
		}
		var got struct {
			Tx string `json:"tx"`
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		var stored []byte
		if err := f.db.QueryRowContext(context.Background(), `SELECT tx_bytes FROM px_txs WHERE tx_id = $1`, tx.ID().String()).Scan(&stored); err != nil {
			t.Fatalf("tx %d not indexed: %v", i, err)
		}
		if h, _ := formatting.Encode(formatting.Hex, stored); h != got.Tx {
			t.Errorf("tx %d: Permafrost stored %s, avm.getTx %s", i, h, got.Tx)
		}
	}
}

// vertexTime is the vertex's acceptance time in the index, capped at the
// linearization (the stop vertex was accepted by a node bootstrapped now).
func (f *fixture) vertexTime(i int) int64 {
	if i == len(f.d.Vertices)-1 {
		return f.cortina // accepted now, after the linearization
	}
	return f.txTimes[0] + int64(i)*60
}

func (f *fixture) vertex(i int) primary.Vertex {
	v := f.d.Vertices[i]
	parents := []string{}
	for _, p := range v.ParentIDs() {
		parents = append(parents, p.String())
	}
	txIDs := []string{}
	for _, b := range v.Txs() {
		txIDs = append(txIDs, ids.ID(hashing.ComputeHash256Array(b)).String())
	}
	return primary.Vertex{VertexHash: v.ID().String(), ParentHashes: parents, VertexHeight: int64(v.Height()), VertexIndex: int64(i),
		VertexTimestamp: f.vertexTime(i), TxCount: int64(len(txIDs)), Transactions: txIDs, VertexSizeBytes: int64(len(v.Bytes()))}
}

func utxoIDs(us []primary.Utxo) []string {
	out := []string{}
	for _, u := range us {
		out = append(out, u.UtxoID)
	}
	sort.Strings(out)
	return out
}

func idsOf(us []*avax.UTXO) []string {
	out := []string{}
	for _, u := range us {
		out = append(out, u.InputID().String())
	}
	sort.Strings(out)
	return out
}

// balances are the data service's unlocked X balances of address a, by
// asset.
func (f *fixture) balances(t *testing.T, a string) map[string]string {
	t.Helper()
	var bal struct {
		Balances struct {
			Unlocked []struct {
				AssetID string `json:"assetId"`
				Amount  string `json:"amount"`
			} `json:"unlocked"`
		} `json:"balances"`
	}
	f.get(t, x+"/balances?addresses="+a, &bal)
	out := map[string]string{}
	for _, b := range bal.Balances.Unlocked {
		out[b.AssetID] = b.Amount
	}
	return out
}

func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestDAGFeesInSupply: the fees the DAG's txs burned count in
// /v1/avax/supply's totalXBurned. The expected difference between an index
// with the DAG and one without is computed from the built txs (AVAX
// consumed minus AVAX produced, avalanchego's own tx objects).
func TestDAGFeesInSupply(t *testing.T) {
	burned := func(f *fixture) *big.Rat {
		t.Helper()
		var s struct {
			TotalXBurned string `json:"totalXBurned"`
		}
		f.get(t, "/v1/avax/supply", &s)
		r, ok := new(big.Rat).SetString(s.TotalXBurned)
		if !ok {
			t.Fatalf("totalXBurned %q", s.TotalXBurned)
		}
		return r
	}
	with := newFixture(t, "sqlite", true)
	with.ingest(t)
	without := newFixture(t, "sqlite", false)
	without.ingest(t)

	var fees uint64
	for _, tx := range with.d.Txs {
		var b *avax.BaseTx
		switch u := tx.Unsigned.(type) {
		case *txs.BaseTx:
			b = &u.BaseTx
		case *txs.CreateAssetTx:
			b = &u.BaseTx.BaseTx
		default:
			t.Fatalf("the DAG holds a %T: count its fee here", u)
		}
		for _, in := range b.Ins {
			if in.AssetID() == with.g.AvaxAssetID {
				fees += in.In.Amount()
			}
		}
		for _, out := range b.Outs {
			if out.AssetID() == with.g.AvaxAssetID {
				fees -= out.Out.Amount()
			}
		}
	}
	if fees == 0 {
		t.Fatal("the DAG burned no fee: nothing to check")
	}
	want := new(big.Rat).SetFrac(new(big.Int).SetUint64(fees), big.NewInt(1e9)) // nAVAX -> AVAX
	if got := new(big.Rat).Sub(burned(with), burned(without)); got.Cmp(want) != 0 {
		t.Errorf("totalXBurned with the DAG minus without = %s AVAX, want the DAG's fees %s AVAX", got.FloatString(9), want.FloatString(9))
	}
}
