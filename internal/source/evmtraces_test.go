package source_test

import (
	"context"
	"encoding/json"
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
