package pchain

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ava-labs/avalanchego/utils/formatting"

	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// moduleRoot walks up from the package directory to go.mod.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

func fixturePath(t testing.TB, name string) string {
	return filepath.Join(moduleRoot(t), "testdata", "devnet-a", name)
}

// exchange is one recorded JSON-RPC call.
type exchange struct {
	Method   string          `json:"method"`
	Params   json.RawMessage `json:"params"`
	Response struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	} `json:"response"`
}

func (x exchange) params(t testing.TB, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(x.Params))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		t.Fatalf("%s params: %v", x.Method, err)
	}
}

func (x exchange) result(t testing.TB, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(x.Response.Result))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		t.Fatalf("%s result: %v", x.Method, err)
	}
}

// recording holds the P-chain answers of the devnet-a fixture.
type recording struct {
	calls []exchange
}

func loadRecording(t testing.TB) *recording {
	t.Helper()
	f, err := os.Open(fixturePath(t, "rpc/ext_bc_P.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := &recording{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var x exchange
		if err := json.Unmarshal(sc.Bytes(), &x); err != nil {
			t.Fatal(err)
		}
		r.calls = append(r.calls, x)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *recording) byMethod(m string) []exchange {
	var out []exchange
	for _, x := range r.calls {
		if x.Method == m {
			out = append(out, x)
		}
	}
	return out
}

// hexBytes decodes a recorded 0x-hex value (checksum verified and stripped).
func hexBytes(t testing.TB, s string) []byte {
	t.Helper()
	b, err := formatting.Decode(formatting.Hex, s)
	if err != nil {
		t.Fatalf("decode %q...: %v", s[:min(len(s), 20)], err)
	}
	return b
}

// blocks returns the raw P blocks 0..tip from the recorded hex answers.
func (r *recording) blocks(t testing.TB) []ingest.RawBlock {
	t.Helper()
	byHeight := map[uint64][]byte{}
	for _, x := range r.byMethod("platform.getBlockByHeight") {
		var p struct {
			Height   json.Number `json:"height"`
			Encoding string      `json:"encoding"`
		}
		if bytes.HasPrefix(bytes.TrimSpace(x.Params), []byte("[")) || x.Response.Error != nil {
			continue // the array-wrapped duplicate, error cases
		}
		x.params(t, &p)
		if p.Encoding != "hex" || x.Response.Result == nil {
			continue
		}
		var res struct {
			Block string `json:"block"`
		}
		x.result(t, &res)
		h, err := strconv.ParseUint(p.Height.String(), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		byHeight[h] = hexBytes(t, res.Block)
	}
	out := make([]ingest.RawBlock, len(byHeight))
	for h, b := range byHeight {
		if h >= uint64(len(out)) {
			t.Fatalf("gap in recorded heights at %d", h)
		}
		out[h] = ingest.RawBlock{Height: h, Bytes: b}
	}
	return out
}

// network is the part of network.json the tests use.
type network struct {
	PBlocks []struct {
		BlockID   string `json:"blockID"`
		BlockType string `json:"blockType"`
		Height    uint64 `json:"height"`
		Txs       []struct {
			TxID string `json:"txID"`
			Type string `json:"type"`
		} `json:"txs"`
	} `json:"pBlocks"`
	PTxTypesByID map[string]string `json:"pTxTypesByID"`
	Subnets      map[string]struct {
		SubnetID      string            `json:"subnetID"`
		ChainID       string            `json:"chainID"`
		ValidationIDs map[string]string `json:"validationIDs"`
	} `json:"subnets"`
	RewardValidatorTxs []struct {
		Height           uint64 `json:"height"`
		RewardTxID       string `json:"rewardTxID"`
		StakerTxID       string `json:"stakerTxID"`
		OutcomeBlockType string `json:"outcomeBlockType"`
	} `json:"rewardValidatorTxs"`
}

func loadNetwork(t testing.TB) *network {
	t.Helper()
	b, err := os.ReadFile(fixturePath(t, "network.json"))
	if err != nil {
		t.Fatal(err)
	}
	var n network
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	return &n
}

func loadGenesis(t testing.TB) *genesis.Genesis {
	t.Helper()
	g, err := genesis.Load(88888, fixturePath(t, "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// indexAll applies blocks through the indexer, a few blocks per transaction
// like the ingest driver's batches.
func indexAll(t testing.TB, db *store.DB, ix *Indexer, blocks []ingest.RawBlock) {
	t.Helper()
	ctx := context.Background()
	const batch = 5
	for i := 0; i < len(blocks); i += batch {
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks[i:min(i+batch, len(blocks))] {
			if err := ix.Apply(ctx, tx, b); err != nil {
				tx.Rollback()
				t.Fatalf("apply height %d: %v", b.Height, err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}
