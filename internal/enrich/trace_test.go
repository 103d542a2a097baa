package enrich

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ava-labs/libevm/common/hexutil"

	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// tracingNode answers debug_traceBlockByNumber with callTracer results
// like a node with the debug API: one top-level frame per transaction of
// the block (from the index), and the factory's CREATE of its child inside
// the workload's factory.create transaction. Every other call goes to the
// replay node. withHash false imitates nodes that leave txHash out.
type tracingNode struct {
	d                  *devnet
	factory, child, tx string
	withHash           bool
	traces             atomic.Int32
	other              atomic.Int32
}

func (n *tracingNode) BatchCall(ctx context.Context, elems []source.BatchElem) error {
	var rest []int
	for i := range elems {
		if elems[i].Method != "debug_traceBlockByNumber" {
			rest = append(rest, i)
			continue
		}
		n.traces.Add(1)
		block, err := hexutil.DecodeUint64(elems[i].Params[0].(string))
		if err != nil {
			return err
		}
		rows, err := n.d.DB.QueryContext(ctx, `SELECT hash, from_addr, to_addr FROM evm_txs WHERE chain_key = 'C' AND block_number = $1 ORDER BY tx_index`, block)
		if err != nil {
			return err
		}
		var out []map[string]any
		for rows.Next() {
			var hash, from, to string
			if err := rows.Scan(store.ScanHex(&hash), store.ScanHex(&from), store.ScanHex(&to)); err != nil {
				rows.Close()
				return err
			}
			frame := map[string]any{"type": "CALL", "from": from, "to": to, "gas": "0x1", "gasUsed": "0x1", "input": "0x"}
			if hash == n.tx {
				frame["calls"] = []any{
					map[string]any{"type": "STATICCALL", "from": n.factory, "to": "0x0000000000000000000000000000000000000001", "input": "0x"},
					map[string]any{"type": "CREATE", "from": n.factory, "to": n.child, "input": "0x60", "value": "0x0",
						"calls": []any{map[string]any{"type": "CALL", "from": n.child, "to": from, "input": "0x"}}},
				}
			}
			tr := map[string]any{"result": frame}
			if n.withHash {
				tr["txHash"] = hash
			}
			out = append(out, tr)
		}
		rows.Close()
		raw, _ := json.Marshal(out)
		if err := json.Unmarshal(raw, elems[i].Result); err != nil {
			return err
		}
	}
	if len(rest) == 0 {
		return nil
	}
	n.other.Add(1)
	sub := make([]source.BatchElem, len(rest))
	for k, i := range rest {
		sub[k] = elems[i]
	}
	err := n.d.rpc.BatchCall(ctx, sub)
	for k, i := range rest {
		elems[i].Error = sub[k].Error
	}
	return err
}

// countingCaller counts the debug_traceBlockByNumber calls it passes on.
type countingCaller struct {
	inner  Caller
	traces atomic.Int32
}

func (c *countingCaller) BatchCall(ctx context.Context, elems []source.BatchElem) error {
	for _, e := range elems {
		if e.Method == "debug_traceBlockByNumber" {
			c.traces.Add(1)
		}
	}
	return c.inner.BatchCall(ctx, elems)
}

// factoryCreateTx is the workload's TokenFactory.create transaction.
func factoryCreateTx(t *testing.T, dir string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "workload.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var w struct{ Step, TxID string }
		if err := json.Unmarshal(sc.Bytes(), &w); err != nil {
			t.Fatal(err)
		}
		if w.Step == "e25-factory-create" {
			return strings.ToLower(w.TxID)
		}
	}
	t.Fatal("no e25-factory-create in the workload")
	return ""
}

type deployment struct{ kind, tx, deployer, factory string }

func readDeployment(t *testing.T, d *devnet, addr string) deployment {
	t.Helper()
	var r deployment
	if err := d.DB.QueryRowContext(t.Context(), `SELECT creation_kind, tx_hash, deployer_address, deployer_contract_address
		FROM evm_contracts WHERE chain_key = 'C' AND address = $1`, addr).Scan(&r.kind, &r.tx, &r.deployer, &r.factory); err != nil {
		t.Fatal(err)
	}
	return r
}

// Factory-created contracts: the replay node, like public RPCs, has no
// debug_traceBlockByNumber (deploymentDetails stays absent and the node is
// not asked again before Recheck); a node with the call tracer gives the
// creating transaction, its sender and the factory, kept across a reindex.
func TestTraceDeployer(t *testing.T) {
	forEachDevnet(t, func(t *testing.T, d *devnet) {
		ctx := t.Context()
		child, factory := d.contracts["factoryChild"], d.contracts["factory"]
		tx := factoryCreateTx(t, d.Dir)
		before := readDeployment(t, d, child)
		if before.kind != "observed" || before.factory != "" {
			t.Fatalf("factory child as ingested: %+v", before)
		}

		// No tracer.
		cc := &countingCaller{inner: d.rpc}
		c := Chain{Key: "C", EVMChainID: "88888", RPC: cc}
		s := newService(t, d.DB, Config{Chains: []Chain{c}})
		for i := 0; i < 3; i++ {
			if err := s.traceChain(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if cc.traces.Load() != 1 || !s.tracerOff("C") {
			t.Errorf("%d trace calls to a node without the method (off: %v)", cc.traces.Load(), s.tracerOff("C"))
		}
		if got := readDeployment(t, d, child); got != before {
			t.Errorf("without a tracer: %+v", got)
		}
		if n := count(t, d.DB, `SELECT COUNT(*) FROM enrich_contract_trace`); n != 0 {
			t.Errorf("%d trace rows without a tracer", n)
		}

		for _, withHash := range []bool{true, false} {
			d.reset(t)
			node := &tracingNode{d: d, factory: factory, child: child, tx: tx, withHash: withHash}
			c := Chain{Key: "C", EVMChainID: "88888", RPC: node}
			s := newService(t, d.DB, Config{Chains: []Chain{c}})
			if err := s.traceChain(ctx, c); err != nil {
				t.Fatal(err)
			}
			var sender string
			if err := d.DB.QueryRowContext(ctx, `SELECT from_addr FROM evm_txs WHERE chain_key = 'C' AND hash = $1`, store.Hex(tx)).Scan(store.ScanHex(&sender)); err != nil {
				t.Fatal(err)
			}
			want := deployment{kind: "observed", tx: tx, deployer: sender, factory: factory}
			if got := readDeployment(t, d, child); got != want {
				t.Errorf("txHash in traces %v: %+v, want %+v", withHash, got, want)
			}
			// Top-level creations are not traced.
			if got := readDeployment(t, d, d.contracts["erc20"]); got.kind != "tx" || got.factory != "" {
				t.Errorf("erc20: %+v", got)
			}
			// A reindex clears evm_contracts: the trace is applied again
			// without asking the node.
			traced := node.traces.Load()
			if _, err := d.DB.ExecContext(ctx, `UPDATE evm_contracts SET tx_hash = $1, deployer_address = $2, deployer_contract_address = ''
				WHERE chain_key = 'C' AND address = $3`, before.tx, before.deployer, child); err != nil {
				t.Fatal(err)
			}
			if err := s.traceChain(ctx, c); err != nil {
				t.Fatal(err)
			}
			if got := readDeployment(t, d, child); got != want || node.traces.Load() != traced {
				t.Errorf("after a reindex: %+v (%d traces, was %d)", got, node.traces.Load(), traced)
			}
		}
	})
}
