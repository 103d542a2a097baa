package evm_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/api"
	apievm "github.com/permafrost-dev/permafrost/internal/api/data/evm"
	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

// devnet-c's node ran with the debug-tracer API: its recorded
// debug_traceBlockByNumber (callTracer) answers and eth_getBalance of the 21
// traced addresses at every height 0..122 are the oracles here
// (testdata/devnet-c/README.md). The chain is indexed twice per backend:
// with traces (the replay serves them) and without (source.TracesOff), the
// path of a node without debug-tracer.

const devnetCChain = "77777"

// debugOracle is ext_bc_C_debug.jsonl: callTracer answers by height and
// eth_getBalance answers by address and height.
type debugOracle struct {
	traces   map[uint64][]oracleTrace
	balances map[string]map[uint64]string // 0x-lowercase address -> height -> wei (decimal)
	tip      uint64
}

type oracleTrace struct {
	TxHash string       `json:"txHash"`
	Result *oracleFrame `json:"result"`
}

type oracleFrame struct {
	Type    string        `json:"type"`
	From    string        `json:"from"`
	To      string        `json:"to"`
	Value   string        `json:"value"`
	Gas     string        `json:"gas"`
	GasUsed string        `json:"gasUsed"`
	Error   string        `json:"error"`
	Calls   []oracleFrame `json:"calls"`
}

func devnetCDir(t testing.TB) string { return filepath.Join(devnet.Root(t), "testdata", "devnet-c") }

func loadDebugOracle(t testing.TB) *debugOracle {
	t.Helper()
	f, err := os.Open(filepath.Join(devnetCDir(t), "rpc", "ext_bc_C_debug.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := &debugOracle{traces: map[uint64][]oracleTrace{}, balances: map[string]map[uint64]string{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var line struct {
			Method   string            `json:"method"`
			Params   []json.RawMessage `json:"params"`
			Response struct {
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			} `json:"response"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Response.Error != nil {
			continue
		}
		switch line.Method {
		case "debug_traceBlockByNumber":
			var h string
			var cfg struct{ Tracer string }
			json.Unmarshal(line.Params[0], &h)   //nolint:errcheck // recorded
			json.Unmarshal(line.Params[1], &cfg) //nolint:errcheck
			if cfg.Tracer != "callTracer" {
				continue
			}
			var tr []oracleTrace
			if err := json.Unmarshal(line.Response.Result, &tr); err != nil {
				t.Fatal(err)
			}
			o.traces[hexUint(t, h)] = tr
		case "eth_getBalance":
			var addr, h, bal string
			json.Unmarshal(line.Params[0], &addr)      //nolint:errcheck
			json.Unmarshal(line.Params[1], &h)         //nolint:errcheck
			json.Unmarshal(line.Response.Result, &bal) //nolint:errcheck
			addr = strings.ToLower(addr)
			if o.balances[addr] == nil {
				o.balances[addr] = map[uint64]string{}
			}
			o.balances[addr][hexUint(t, h)] = hexBig(t, bal).String()
			o.tip = max(o.tip, hexUint(t, h))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(o.balances) != 21 || o.tip != 122 || len(o.traces) != 122 {
		t.Fatalf("oracle: %d addresses, tip %d, %d traced blocks; want 21, 122, 122", len(o.balances), o.tip, len(o.traces))
	}
	return o
}

func hexUint(t testing.TB, s string) uint64 { return hexBig(t, s).Uint64() }

// oracleInternal is one internal transaction as the oracle's frames give it.
type oracleInternal struct {
	block               uint64
	tx                  int
	txHash, typ         string
	from, to, value     string
	gasUsed, gasLimit   string
	reverted            bool
	createdBy, deployer string // CREATE frames: the factory and the tx's sender
}

// internals lists, per address, the frames the document's listing has
// (CALL/CALLCODE with value, creations), newest first, computed from the
// oracle's callTracer answers alone.
func (o *debugOracle) internals(t testing.TB) (map[string][]oracleInternal, []oracleInternal) {
	t.Helper()
	by := map[string][]oracleInternal{}
	var all []oracleInternal
	for h := uint64(1); h <= o.tip; h++ {
		for i, tr := range o.traces[h] {
			top := tr.Result
			var walk func(f *oracleFrame, reverted bool)
			walk = func(f *oracleFrame, reverted bool) {
				for k := range f.Calls {
					c := &f.Calls[k]
					rev := reverted || c.Error != ""
					val := big.NewInt(0)
					if c.Value != "" {
						val = hexBig(t, c.Value)
					}
					typ := strings.ToUpper(c.Type)
					creates := typ == "CREATE" || typ == "CREATE2" || typ == "CREATE3"
					if creates || (val.Sign() != 0 && (typ == "CALL" || typ == "CALLCODE")) {
						it := oracleInternal{block: h, tx: i, txHash: strings.ToLower(tr.TxHash), typ: typ,
							from: strings.ToLower(c.From), to: strings.ToLower(c.To), value: val.String(),
							gasUsed: hexBig(t, c.GasUsed).String(), gasLimit: hexBig(t, c.Gas).String(), reverted: rev}
						if creates && !rev {
							it.createdBy, it.deployer = it.from, strings.ToLower(top.From)
						}
						all = append(all, it)
						by[it.from] = append([]oracleInternal{it}, by[it.from]...)
						if it.to != it.from {
							by[it.to] = append([]oracleInternal{it}, by[it.to]...)
						}
					}
					walk(c, rev)
				}
			}
			walk(top, top.Error != "")
		}
	}
	return by, all
}

// devnetCIndex is devnet-c indexed on one backend, with or without traces.
type devnetCIndex struct {
	db      *store.DB
	network *api.Network
	pager   *api.Pager
	set     *chains.Set
	nodeURL string
}

func indexDevnetC(t *testing.T, backend string, traces source.TraceMode) *devnetCIndex {
	t.Helper()
	e := testenv.Index(t, devnetCDir(t), backend, traces)
	return &devnetCIndex{db: e.DB, network: e.Network, pager: e.Pager, set: e.Chains, nodeURL: e.NodeURL}
}

// mux serves the EVM routes of the index with the given balance nodes.
func (ix *devnetCIndex) env(nodes apievm.BalanceNodeMap) *env {
	log := slog.New(slog.DiscardHandler)
	mux := api.NewMux(log)
	apievm.Register(mux, apievm.Deps{DB: ix.db, Network: ix.network, Pager: ix.pager, Log: log, BalanceNodes: nodes})
	return &env{mux: mux}
}

func chainNotice(t *testing.T, db *store.DB, key string) string {
	t.Helper()
	var n *string
	if err := db.QueryRowContext(context.Background(), `SELECT notice FROM chains WHERE chain_key = $1`, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == nil {
		return ""
	}
	return *n
}

func countRows(t *testing.T, db *store.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM `+table+` WHERE chain_key = 'C'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkBalances compares getNative at every height with the node's
// eth_getBalance for every traced address.
func checkBalances(t *testing.T, e *env, o *debugOracle) {
	t.Helper()
	addrs := make([]string, 0, len(o.balances))
	for a := range o.balances {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	for _, a := range addrs {
		for h := uint64(0); h <= o.tip; h++ {
			var got apievm.GetNativeBalanceResponse
			e.ok(t, fmt.Sprintf("/v1/chains/%s/addresses/%s/balances:getNative?blockNumber=%d", devnetCChain, a, h), &got)
			if want := o.balances[a][h]; got.NativeTokenBalance.Balance != want {
				t.Fatalf("balance of %s at %d: %s, node says %s", a, h, got.NativeTokenBalance.Balance, want)
			}
		}
	}
}

func TestTracedDevnetC(t *testing.T) {
	o := loadDebugOracle(t)
	byAddr, all := o.internals(t)
	creates := 0
	for _, it := range all {
		if it.createdBy != "" {
			creates++
		}
	}
	// README: the two TokenFactory.create txs each CREATE a child token; no
	// internal frame moves value.
	if creates != 2 || len(all) != 2 {
		t.Fatalf("oracle: %d listed internal txs, %d creations; want 2, 2", len(all), creates)
	}
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			ix := indexDevnetC(t, backend, source.TracesAuto)
			if n := chainNotice(t, ix.db, "C"); n != "" {
				t.Fatalf("traced chain has notice %q", n)
			}
			var n int
			if err := ix.db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM evm_untrusted_balances
				WHERE chain_key = 'C' AND address = $1`, []byte{}).Scan(&n); err != nil || n != 0 {
				t.Fatalf("traced chain marked untrusted (%d, %v)", n, err)
			}
			// No node: every balance comes from the index.
			e := ix.env(nil)
			checkBalances(t, e, o)
			checkInternals(t, e, o, byAddr)
			checkFactoryDeployments(t, e, all)

			// reindex rebuilds the same rows from the stored raw blocks (traces included).
			before := countRows(t, ix.db, "evm_internal_txs")
			if err := ingest.Reindex(context.Background(), ix.db, ix.set.Chains, 256, slog.New(slog.DiscardHandler)); err != nil {
				t.Fatal(err)
			}
			if after := countRows(t, ix.db, "evm_internal_txs"); after != before || after != len(all) {
				t.Fatalf("internal txs: %d before reindex, %d after, oracle %d", before, after, len(all))
			}
			checkInternals(t, e, o, byAddr)
			checkFactoryDeployments(t, e, all)
		})
	}
}

// checkInternals pages through listInternals of every address the oracle
// names and compares with the oracle's frames.
func checkInternals(t *testing.T, e *env, o *debugOracle, byAddr map[string][]oracleInternal) {
	t.Helper()
	addrs := map[string]bool{}
	for a := range o.balances {
		addrs[a] = true
	}
	for a := range byAddr {
		addrs[a] = true
	}
	for a := range addrs {
		got := allPages(t, e, fmt.Sprintf("/v1/chains/%s/addresses/%s/transactions:listInternals?pageSize=1", devnetCChain, a),
			func(l apievm.ListInternalTransactionsResponse) ([]apievm.InternalTransaction, string) {
				return l.Transactions, l.NextPageToken
			})
		want := byAddr[a]
		if len(got) != len(want) {
			t.Fatalf("%s: %d internal txs, oracle %d", a, len(got), len(want))
		}
		for i, w := range want {
			g := got[i]
			if g.TxHash != w.txHash || g.BlockNumber != fmt.Sprint(w.block) || g.InternalTxType != w.typ ||
				g.From.Address != w.from || g.To.Address != w.to || g.Value != w.value || g.IsReverted != w.reverted ||
				g.GasUsed != w.gasUsed || g.GasLimit != w.gasLimit {
				t.Fatalf("%s internal tx %d: got %+v, oracle %+v", a, i, g, w)
			}
		}
	}
	// Every bound of the block range is honoured.
	for _, w := range byAddr {
		it := w[0]
		var l apievm.ListInternalTransactionsResponse
		e.ok(t, fmt.Sprintf("/v1/chains/%s/addresses/%s/transactions:listInternals?startBlock=%d&endBlock=%d", devnetCChain, it.from, it.block, it.block+1), &l)
		if len(l.Transactions) == 0 || l.Transactions[0].TxHash != it.txHash {
			t.Fatalf("range of block %d: %+v", it.block, l.Transactions)
		}
		e.ok(t, fmt.Sprintf("/v1/chains/%s/addresses/%s/transactions:listInternals?endBlock=%d", devnetCChain, it.from, it.block), &l)
		for _, g := range l.Transactions {
			if n, err := strconv.ParseUint(g.BlockNumber, 10, 64); err != nil || n >= it.block {
				t.Fatalf("endBlock %d (exclusive) listed block %s", it.block, g.BlockNumber)
			}
		}
		break
	}
}

// checkFactoryDeployments: a contract created inside another gets its
// deploymentDetails from the traces.
func checkFactoryDeployments(t *testing.T, e *env, all []oracleInternal) {
	t.Helper()
	for _, it := range all {
		if it.createdBy == "" {
			continue
		}
		var m apievm.ContractMetadata
		e.ok(t, fmt.Sprintf("/v1/chains/%s/addresses/%s", devnetCChain, it.to), &m)
		d := m.DeploymentDetails
		if d == nil || d.TxHash != it.txHash || d.DeployerAddress != it.deployer || d.DeployerContractAddress != it.createdBy {
			t.Fatalf("contract %s: deploymentDetails %+v, oracle tx %s sender %s factory %s", it.to, d, it.txHash, it.deployer, it.createdBy)
		}
	}
}

// countingNode counts the balances asked from the node.
type countingNode struct {
	n    atomic.Int64
	node apievm.BalanceNode
}

func (c *countingNode) Balance(ctx context.Context, a common.Address, block uint64) (*big.Int, error) {
	c.n.Add(1)
	return c.node.Balance(ctx, a, block)
}

func (c *countingNode) TokenBalance(ctx context.Context, token, holder common.Address, block uint64) (*big.Int, error) {
	c.n.Add(1)
	return c.node.TokenBalance(ctx, token, holder, block)
}

func TestUntracedDevnetC(t *testing.T) {
	o := loadDebugOracle(t)
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			ix := indexDevnetC(t, backend, source.TracesOff)
			if n := chainNotice(t, ix.db, "C"); !strings.Contains(n, "no call traces") {
				t.Fatalf("untraced chain's notice %q does not say so", n)
			}
			if n := countRows(t, ix.db, "evm_internal_txs"); n != 0 {
				t.Fatalf("%d internal txs without traces", n)
			}
			// Value entered a contract at block 46 (5 AVAX to a payable
			// contract, a call that ran code): from there on no computed
			// balance is vouched for; nothing before.
			var since int64
			if err := ix.db.QueryRowContext(context.Background(), `SELECT since_block FROM evm_untrusted_balances
				WHERE chain_key = 'C' AND address = $1`, []byte{}).Scan(&since); err != nil || since != 46 {
				t.Fatalf("untrusted from block %d (%v), want 46", since, err)
			}

			node := &countingNode{node: replayEVM(t, ix.nodeURL)}
			e := ix.env(map[string]apievm.BalanceNode{"C": node})
			checkBalances(t, e, o)
			if node.n.Load() == 0 {
				t.Fatal("no balance was read from the node")
			}

			// Without a node, an untrusted balance is a plain 503, never a number;
			// before the mark the index's figure stands.
			bare := ix.env(nil)
			for a := range o.balances {
				bare.fails(t, fmt.Sprintf("/v1/chains/%s/addresses/%s/balances:getNative?blockNumber=%d", devnetCChain, a, since), 503,
					"unavailable", "without call traces")
				bare.fails(t, fmt.Sprintf("/v1/chains/%s/addresses/%s/balances:listErc20", devnetCChain, a), 503, "unavailable")
				var got apievm.GetNativeBalanceResponse
				bare.ok(t, fmt.Sprintf("/v1/chains/%s/addresses/%s/balances:getNative?blockNumber=%d", devnetCChain, a, since-1), &got)
				if want := o.balances[a][uint64(since-1)]; got.NativeTokenBalance.Balance != want {
					t.Fatalf("%s at %d: %s, node says %s", a, since-1, got.NativeTokenBalance.Balance, want)
				}
			}
			var l apievm.ListInternalTransactionsResponse
			for a := range o.balances {
				bare.ok(t, fmt.Sprintf("/v1/chains/%s/addresses/%s/transactions:listInternals", devnetCChain, a), &l)
				if len(l.Transactions) != 0 {
					t.Fatalf("%s: internal txs without traces: %+v", a, l.Transactions)
				}
			}
		})
	}
}

func TestListInternalsErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		const a = "0x9be583d6a76dac5b555f700f12ad0c2768af9cd5"
		for _, tt := range []struct {
			path string
			code int
			want string
		}{
			{"/v1/chains/88888/addresses/0x12/transactions:listInternals", 400, "address"},
			{"/v1/chains/88888/addresses/" + a + "/transactions:listInternals?pageSize=0", 400, "pageSize"},
			{"/v1/chains/88888/addresses/" + a + "/transactions:listInternals?pageSize=101", 400, "pageSize"},
			{"/v1/chains/88888/addresses/" + a + "/transactions:listInternals?startBlock=x", 400, "startBlock"},
			{"/v1/chains/88888/addresses/" + a + "/transactions:listInternals?startBlock=5&endBlock=5", 400, "startBlock"},
			{"/v1/chains/88888/addresses/" + a + "/transactions:listInternals?pageToken=abc", 400, "pageToken"},
			{"/v1/chains/99999999/addresses/" + a + "/transactions:listInternals", 404, ""},
		} {
			e.fails(t, tt.path, tt.code, tt.want)
		}
		// devnet-a has no traces: an empty, valid listing.
		var l apievm.ListInternalTransactionsResponse
		e.ok(t, "/v1/chains/88888/addresses/"+a+"/transactions:listInternals", &l)
		if len(l.Transactions) != 0 || l.NextPageToken != "" {
			t.Fatalf("devnet-a internal txs: %+v", l)
		}
	})
}
