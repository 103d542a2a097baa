package webhooks_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/replay"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/webhooks"
)

// devnet-c's node answered debug_traceBlockByNumber (callTracer): the
// oracle of internal txs. A frame is an internal tx as the document lists
// them (evm_internal_txs): a nested CALL or CALLCODE moving value, a
// CREATE*, a SELFDESTRUCT paying out value.

type traceFrame struct {
	Type  string       `json:"type"`
	From  string       `json:"from"`
	To    string       `json:"to"`
	Value string       `json:"value"`
	Calls []traceFrame `json:"calls"`
}

// recordedInternals are the internal txs of devnet-c by tx hash.
func recordedInternals(t *testing.T, dir string) map[string][]traceFrame {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "rpc", "ext_bc_C_debug.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]traceFrame{}
	var walk func(tx string, fr traceFrame)
	walk = func(tx string, fr traceFrame) {
		for _, c := range fr.Calls {
			v, _ := new(big.Int).SetString(strings.TrimPrefix(c.Value, "0x"), 16)
			moves := v != nil && v.Sign() > 0
			if ((c.Type == "CALL" || c.Type == "CALLCODE" || c.Type == "SELFDESTRUCT") && moves) || strings.HasPrefix(c.Type, "CREATE") {
				out[tx] = append(out[tx], c)
			}
			walk(tx, c)
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var x struct {
			Method   string
			Response struct {
				Result []struct {
					TxHash string     `json:"txHash"`
					Result traceFrame `json:"result"`
				}
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &x); err != nil || x.Method != "debug_traceBlockByNumber" {
			continue
		}
		for _, tr := range x.Response.Result {
			walk(strings.ToLower(tr.TxHash), tr.Result)
		}
	}
	return out
}

func readCalls(t *testing.T, path string) devnet.Calls {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out devnet.Calls
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var x devnet.Exchange
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
	return out
}

// TestInternalTxs indexes devnet-c (traced) with two address_activity
// webhooks on an address that value reaches through internal calls, one
// with includeInternalTxs: that one gets, besides the txs the address is a
// party of, the txs whose internal txs touch it, each with the tx's
// internal txs as the recorded traces show them; the other only the first.
func TestInternalTxs(t *testing.T) {
	dir := filepath.Join(devnet.Root(t), "testdata", "devnet-c")
	internals := recordedInternals(t, dir)
	blocks := recordedCChainOf(t, readCalls(t, filepath.Join(dir, "rpc", "ext_bc_C_rpc.jsonl")))
	// The address the most txs touch through internal txs only.
	byHash := map[string][]string{}
	for _, b := range blocks {
		for i, tx := range b.Transactions {
			byHash[strings.ToLower(tx.Hash)] = parties(b, i)
		}
	}
	count := map[string]int{}
	for hash, frames := range internals {
		seen := map[string]bool{}
		for _, f := range frames {
			for _, a := range []string{strings.ToLower(f.From), strings.ToLower(f.To)} {
				if !seen[a] && !slices.Contains(byHash[hash], a) {
					seen[a] = true
					count[a]++
				}
			}
		}
	}
	var watched string
	for a, n := range count {
		if n > count[watched] || (n == count[watched] && a < watched) {
			watched = a
		}
	}
	if count[watched] == 0 {
		t.Fatal("recording: no address is reached through internal txs only")
	}
	rec, err := replay.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: replay.NewHandler(rec), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l) //nolint:errcheck // closed below
	t.Cleanup(func() { srv.Close() })
	oapi := apitest.Load(t)
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			db := storetest.Open(t, storetest.DSNFor(t, backend))
			reg := webhooks.NewRegistry(db, nil)
			hooks := map[string]bool{} // id -> includeInternalTxs
			for _, internal := range []bool{true, false} {
				w := &webhooks.Webhook{EventType: webhooks.EventAddressActivity, URL: "https://hooks.example.com/", ChainID: "77777",
					ChainKey: "C", Status: webhooks.StatusActive, Metadata: []byte(`{}`), IncludeInternalTxs: internal, Keys: []string{watched}}
				if err := reg.Create(ctx, "owner", w); err != nil {
					t.Fatal(err)
				}
				hooks[w.ID] = internal
			}
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			set, err := chains.Build(ctx, chains.Options{NodeURL: "http://" + l.Addr().String(), GenesisPath: filepath.Join(dir, "genesis.json"),
				Log: log, BatchSize: 16})
			if err != nil {
				t.Fatal(err)
			}
			if err := ingest.New(db, set.Chains, ingest.Options{UntilTip: true}, log).Run(ctx); err != nil {
				t.Fatal(err)
			}
			want := map[event]bool{}
			viaInternal := 0
			for id, internal := range hooks {
				for h, b := range blocks {
					for i, tx := range b.Transactions {
						party := slices.Contains(parties(b, i), watched)
						inner := slices.ContainsFunc(internals[strings.ToLower(tx.Hash)], func(f traceFrame) bool {
							return strings.EqualFold(f.From, watched) || strings.EqualFold(f.To, watched)
						})
						if party || (internal && inner) {
							want[event{id, h, i}] = true
							if internal && inner && !party {
								viaInternal++
							}
						}
					}
				}
			}
			if viaInternal == 0 {
				t.Fatalf("no tx reaches %s through internal txs only: the test shows nothing", watched)
			}
			got := readOutbox(t, ctx, db)
			for ev := range want {
				if _, ok := got[ev]; !ok {
					t.Errorf("missing: includeInternalTxs=%v block %d tx %d", hooks[ev.hook], ev.height, ev.tx)
				}
			}
			for ev, row := range got {
				if !want[ev] {
					t.Errorf("extra: includeInternalTxs=%v block %d tx %d", hooks[ev.hook], ev.height, ev.tx)
					continue
				}
				if err := oapi.CheckSchema("WebhookAddressActivityResponse", []byte(row.payload)); err != nil {
					t.Errorf("block %d tx %d: %v", ev.height, ev.tx, err)
				}
				var p struct {
					Event struct {
						Transaction struct {
							TxHash               string
							InternalTransactions *[]struct{ From, To, Value, InternalTxType, TransactionHash string }
						}
					}
				}
				if err := json.Unmarshal([]byte(row.payload), &p); err != nil {
					t.Fatal(err)
				}
				its := p.Event.Transaction.InternalTransactions
				if !hooks[ev.hook] {
					if its != nil {
						t.Errorf("block %d tx %d: internal txs without includeInternalTxs", ev.height, ev.tx)
					}
					continue
				}
				frames := internals[strings.ToLower(p.Event.Transaction.TxHash)]
				if its == nil || len(*its) != len(frames) {
					t.Errorf("block %d tx %d: internal txs %v, the trace shows %d", ev.height, ev.tx, its, len(frames))
					continue
				}
				for k, f := range frames {
					v, _ := new(big.Int).SetString(strings.TrimPrefix(f.Value, "0x"), 16)
					if v == nil {
						v = new(big.Int)
					}
					it := (*its)[k]
					if !strings.EqualFold(it.From, f.From) || !strings.EqualFold(it.To, f.To) || it.Value != v.String() ||
						!strings.EqualFold(it.InternalTxType, f.Type) || !strings.EqualFold(it.TransactionHash, p.Event.Transaction.TxHash) {
						t.Errorf("block %d tx %d internal %d: %+v, the trace shows %+v", ev.height, ev.tx, k, it, f)
					}
				}
			}
			t.Logf("%s: %d events, %d through internal txs only", watched, len(want), viaInternal)
		})
	}
}
