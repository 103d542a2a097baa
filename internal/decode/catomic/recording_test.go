// Recording helpers: a copy of internal/decode/xchain/recording_test.go (test files cannot be shared across packages).

package catomic_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ava-labs/avalanchego/utils/formatting"

	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// fixture returns a path in testdata/devnet-a, found from the module root.
func fixture(t testing.TB, parts ...string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("module root not found")
		}
		dir = parent
	}
	return filepath.Join(append([]string{dir, "testdata", "devnet-a"}, parts...)...)
}

// exchange is one recorded JSON-RPC call.
type exchange struct {
	Method   string          `json:"method"`
	Params   json.RawMessage `json:"params"`
	Response struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	} `json:"response"`
}

func loadRPC(t testing.TB, file string) []exchange {
	t.Helper()
	f, err := os.Open(fixture(t, "rpc", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []exchange
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e exchange
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func decodeParams(t testing.TB, e exchange, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(e.Params))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		t.Fatalf("%s params: %v", e.Method, err)
	}
}

func decodeResult(t testing.TB, e exchange, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(e.Response.Result))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		t.Fatalf("%s result: %v", e.Method, err)
	}
}

// hexBytes decodes a node "hex" encoding (0x + bytes + 4-byte checksum).
func hexBytes(t testing.TB, s string) []byte {
	t.Helper()
	b, err := formatting.Decode(formatting.Hex, s)
	if err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return b
}

func loadGenesis(t testing.TB) *genesis.Genesis {
	t.Helper()
	g, err := genesis.Load(88888, fixture(t, "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// recordedXBlocks returns X blocks 0..19 as the ingest driver would hand them:
// the hex answer's bytes, with ID and time from the json answer.
func recordedXBlocks(t testing.TB) []ingest.RawBlock {
	t.Helper()
	hexByHeight := map[int64][]byte{}
	var out []ingest.RawBlock
	for _, e := range loadRPC(t, "ext_bc_X.jsonl") {
		if e.Method != "avm.getBlockByHeight" || e.Response.Result == nil {
			continue
		}
		var p struct {
			Encoding string      `json:"encoding"`
			Height   json.Number `json:"height"`
		}
		decodeParams(t, e, &p)
		h, _ := p.Height.Int64()
		switch p.Encoding {
		case "hex":
			var r struct{ Block string }
			decodeResult(t, e, &r)
			hexByHeight[h] = hexBytes(t, r.Block)
		case "json":
			var r struct {
				Block struct {
					ID   string      `json:"id"`
					Time json.Number `json:"time"`
				}
			}
			decodeResult(t, e, &r)
			ts, _ := r.Block.Time.Int64()
			raw, ok := hexByHeight[h]
			if !ok {
				t.Fatalf("json block %d before its hex", h)
			}
			out = append(out, ingest.RawBlock{Height: uint64(h), Hash: r.Block.ID, Bytes: raw, Timestamp: ts})
		}
	}
	if len(out) != 20 {
		t.Fatalf("recorded X blocks = %d, want 20", len(out))
	}
	for i, b := range out {
		if b.Height != uint64(i) {
			t.Fatalf("block %d at position %d", b.Height, i)
		}
	}
	return out
}

// applyBlocks applies blocks, one store transaction each, as the driver does.
func applyBlocks(t testing.TB, db *store.DB, ix ingest.Indexer, blocks []ingest.RawBlock) {
	t.Helper()
	ctx := context.Background()
	for _, b := range blocks {
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.Apply(ctx, tx, b); err != nil {
			tx.Rollback()
			t.Fatalf("apply X %d: %v", b.Height, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

type workloadTx struct {
	Seq       int            `json:"seq"`
	Chain     string         `json:"chain"`
	Type      string         `json:"type"`
	TxID      string         `json:"txID"`
	Addresses []string       `json:"addresses"`
	Extra     map[string]any `json:"extra"`
}

func loadWorkload(t testing.TB) []workloadTx {
	t.Helper()
	f, err := os.Open(fixture(t, "workload.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []workloadTx
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var w workloadTx
		if err := json.Unmarshal(sc.Bytes(), &w); err != nil {
			t.Fatal(err)
		}
		out = append(out, w)
	}
	return out
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
