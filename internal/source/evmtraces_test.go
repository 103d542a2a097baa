package source_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/decode/evm"
	"github.com/permafrost-dev/permafrost/internal/evmsim"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/source"
)

// Blocks fetches call traces when the node serves them, learns once when it
// does not (and says so in TraceNotice), and never asks with TracesOff.
func TestBlocksTraces(t *testing.T) {
	traced := evm.NewTracedGenerator(3, 5)
	var tracedBlocks []ingest.RawBlock
	for i := 0; i < 12; i++ {
		tracedBlocks = append(tracedBlocks, traced.Next())
	}
	for _, tt := range []struct {
		name       string
		blocks     []ingest.RawBlock
		mode       source.TraceMode
		wantTraces bool
		wantNotice bool
	}{
		{"node traces", tracedBlocks, source.TracesAuto, true, false},
		{"node traces, off", tracedBlocks, source.TracesOff, false, true},
		{"node without tracer", evm.GenerateBlocks(12, 5, 3), source.TracesAuto, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			node, err := evmsim.New(43112, tt.blocks)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(node)
			defer srv.Close()
			e, err := source.NewEVM(context.Background(), srv.URL, source.EVMOptions{BatchSize: 4, Concurrency: 1, Traces: tt.mode})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			for _, r := range [][2]uint64{{0, 5}, {6, 11}} {
				got, err := e.Blocks(context.Background(), r[0], r[1])
				if err != nil {
					t.Fatal(err)
				}
				for _, b := range got {
					if (b.Traces != nil) != tt.wantTraces {
						t.Fatalf("block %d: traces %q", b.Height, b.Traces)
					}
					var doc map[string]json.RawMessage
					if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
						t.Fatalf("block %d: stored form: %v", b.Height, err)
					}
					if _, ok := doc["traces"]; ok != tt.wantTraces {
						t.Fatalf("block %d: stored form has traces: %v", b.Height, ok)
					}
					if b.Height == 0 && tt.wantTraces && string(b.Traces) != "[]" {
						t.Fatalf("genesis traces %s, want []", b.Traces)
					}
				}
			}
			if n := e.TraceNotice(); (n != "") != tt.wantNotice || (tt.wantNotice && !strings.Contains(n, "no call traces")) {
				t.Fatalf("notice %q", n)
			}
			if e.Traces() != tt.wantTraces {
				t.Fatalf("Traces() = %v", e.Traces())
			}
		})
	}
}

// Answers a node gives for a height it cannot serve fail the fetch naming
// the height and the node's message (the chain then stalls: status shows
// it), and tracing stays on (no notice: blocks are never indexed without
// the traces the node was asked for). A pruned C-chain with the
// debug-tracer API cannot trace old blocks; coreth cuts a batch answer at
// its batch-response-max-size (docs/operations.md, mainnet and Fuji).
func TestBlocksNodeCannotServe(t *testing.T) {
	traced := evm.NewTracedGenerator(3, 5)
	var blocks []ingest.RawBlock
	for i := 0; i < 8; i++ {
		blocks = append(blocks, traced.Next())
	}
	node, err := evmsim.New(43112, blocks)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, method, code, message, want string
	}{
		// coreth's eth/state_accessor.go
		{"pruned state", "debug_traceBlockByNumber", "-32000", "required historical state unavailable (reexec=128)", "debug_traceBlockByNumber(6)"},
		// libevm's rpc/handler.go past batch-response-max-size
		{"answer too large", "eth_getBlockByNumber", "-32003", "response too large", "eth_getBlockByNumber(6)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var reqs []map[string]any
				if err := json.NewDecoder(r.Body).Decode(&reqs); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				answers := make([]json.RawMessage, len(reqs))
				for i, req := range reqs {
					if req["method"] == tt.method && req["params"].([]any)[0] == "0x6" {
						answers[i] = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%v,"error":{"code":%s,"message":%q}}`, req["id"], tt.code, tt.message)
						continue
					}
					body, _ := json.Marshal(req)
					rec := httptest.NewRecorder()
					node.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)))
					answers[i] = rec.Body.Bytes()
				}
				json.NewEncoder(w).Encode(answers) //nolint:errcheck // a failed write fails the client's read
			}))
			defer srv.Close()
			e, err := source.NewEVM(context.Background(), srv.URL, source.EVMOptions{BatchSize: 4, Concurrency: 1,
				Retry: source.Retry{MaxAttempts: 2}})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if _, err := e.Blocks(context.Background(), 0, 3); err != nil {
				t.Fatal(err)
			}
			_, err = e.Blocks(context.Background(), 4, 7)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("blocks 4..7: %v", err)
			}
			if !e.Traces() || e.TraceNotice() != "" {
				t.Fatalf("tracing turned off (Traces %v, notice %q)", e.Traces(), e.TraceNotice())
			}
		})
	}
}
