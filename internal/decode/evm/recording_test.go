package evm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// fixtureDir is testdata/devnet-a under the module root.
func fixtureDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata", "devnet-a")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("module root (go.mod) not found")
		}
		dir = parent
	}
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// exchange is one recorded JSON-RPC call and the node's answer.
type exchange struct {
	Method   string          `json:"method"`
	Params   json.RawMessage `json:"params"`
	Response struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	} `json:"response"`
}

type recording struct {
	calls []exchange
}

func loadRecording(t testing.TB) *recording {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtureDir(t), "rpc", "ext_bc_C_rpc.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := &recording{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e exchange
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("recording line: %v", err)
		}
		r.calls = append(r.calls, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

// find returns the result of the call of method whose params compact to params.
func (r *recording) find(t testing.TB, method, params string) json.RawMessage {
	t.Helper()
	for _, c := range r.calls {
		if c.Method != method {
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, c.Params); err != nil {
			t.Fatal(err)
		}
		if buf.String() == params {
			if c.Response.Error != nil {
				t.Fatalf("%s %s: recorded error %+v", method, params, c.Response.Error)
			}
			return c.Response.Result
		}
	}
	t.Fatalf("no recorded %s %s", method, params)
	return nil
}

const recordedTip = 37

// rawBlocks builds the indexer input for blocks 0..tip from the recorded
// eth_getBlockByNumber(n, true) and eth_getBlockReceipts(n) answers.
func (r *recording) rawBlocks(t testing.TB) []ingest.RawBlock {
	t.Helper()
	var out []ingest.RawBlock
	for n := uint64(0); n <= recordedTip; n++ {
		blk := r.find(t, "eth_getBlockByNumber", fmt.Sprintf(`["0x%x",true]`, n))
		rcp := r.find(t, "eth_getBlockReceipts", fmt.Sprintf(`["0x%x"]`, n))
		var hdr struct {
			Hash      string `json:"hash"`
			Timestamp string `json:"timestamp"`
		}
		if err := json.Unmarshal(blk, &hdr); err != nil {
			t.Fatal(err)
		}
		ts, err := quantityU64("timestamp", []byte(hdr.Timestamp))
		if err != nil {
			t.Fatal(err)
		}
		body := append([]byte(`{"block":`), blk...)
		body = append(body, `,"receipts":`...)
		body = append(body, rcp...)
		body = append(body, '}')
		out = append(out, ingest.RawBlock{Height: n, Hash: hdr.Hash, Bytes: body, Timestamp: int64(ts)})
	}
	return out
}

// workloadTx is one line of workload.jsonl.
type workloadTx struct {
	Seq       int      `json:"seq"`
	Step      string   `json:"step"`
	Chain     string   `json:"chain"`
	Type      string   `json:"type"`
	TxID      string   `json:"txID"`
	Addresses []string `json:"addresses"`
	Extra     struct {
		Atomic          bool   `json:"atomic"`
		BlockNumber     *int64 `json:"blockNumber"`
		Status          *int   `json:"status"`
		GasUsed         *int64 `json:"gasUsed"`
		TxType          *int   `json:"txType"`
		To              string `json:"to"`
		ContractAddress string `json:"contractAddress"`
		CreatedContract string `json:"createdContract"`
	} `json:"extra"`
}

func loadWorkload(t testing.TB) []workloadTx {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir(t), "workload.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []workloadTx
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var w workloadTx
		if err := json.Unmarshal(line, &w); err != nil {
			t.Fatal(err)
		}
		out = append(out, w)
	}
	return out
}

type networkFacts struct {
	EVMChainID      int64             `json:"evmChainID"`
	CChainContracts map[string]string `json:"cChainContracts"`
	Tips            struct {
		C struct {
			BlockHash string `json:"blockHash"`
			Height    uint64 `json:"height"`
		} `json:"C"`
	} `json:"tips"`
}

func loadNetwork(t testing.TB) networkFacts {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir(t), "network.json"))
	if err != nil {
		t.Fatal(err)
	}
	var n networkFacts
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	for k, v := range n.CChainContracts {
		n.CChainContracts[k] = strings.ToLower(v)
	}
	return n
}
