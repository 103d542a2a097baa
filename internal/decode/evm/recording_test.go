package evm

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/jsonscan"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// recording holds the /ext/bc/C/rpc answers.
type recording struct {
	calls devnet.Calls
}

func loadRecording(t testing.TB) *recording {
	t.Helper()
	return &recording{calls: devnet.LoadRPC(t, devnet.CRPC)}
}

// find returns the result of the call of method whose params compact to params.
func (r *recording) find(t testing.TB, method, params string) json.RawMessage {
	t.Helper()
	calls := r.calls.Method(method, devnet.ParamsEqual(params))
	if len(calls) == 0 {
		t.Fatalf("no recorded %s %s", method, params)
	}
	if c := calls[0]; c.Response.Error != nil {
		t.Fatalf("%s %s: recorded error %+v", method, params, c.Response.Error)
	}
	return calls[0].Response.Result
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
		ts, err := jsonscan.Uint64("timestamp", []byte(hdr.Timestamp))
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
type workloadTx = devnet.Tx[evmExtra]

// evmExtra are the workload's facts of a C-chain tx.
type evmExtra struct {
	Atomic          bool   `json:"atomic"`
	BlockNumber     *int64 `json:"blockNumber"`
	Status          *int   `json:"status"`
	GasUsed         *int64 `json:"gasUsed"`
	TxType          *int   `json:"txType"`
	To              string `json:"to"`
	ContractAddress string `json:"contractAddress"`
	CreatedContract string `json:"createdContract"`
}

func loadWorkload(t testing.TB) []workloadTx {
	t.Helper()
	return devnet.LoadWorkload[evmExtra](t)
}

// loadNetwork is network.json with the contracts' addresses in the index's
// form (0x-lowercase).
func loadNetwork(t testing.TB) *devnet.Network {
	t.Helper()
	n := devnet.LoadNetwork(t)
	n.CChainContracts = n.ContractsLower()
	return n
}
