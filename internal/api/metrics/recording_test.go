package metrics_test

import (
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/devnet"
)

// What the tests expect is read from the recording of the real nodes
// (testdata/devnet-a), never from the index: block times and tx counts from
// the blocks the nodes answered, NFT holdings from the eth_call answers.

// recBlock is one recorded block: its time and the number of its txs.
type recBlock struct {
	time int64
	txs  int64
}

// recordedBlocks returns, per chain key (P, X, C), the blocks by height.
// The P-chain genesis block carries no time in its JSON; its time is the
// genesis startTime (what platformvm gives the genesis block).
func recordedBlocks(t *testing.T, dir string) map[string]map[int64]recBlock {
	t.Helper()
	out := map[string]map[int64]recBlock{"P": {}, "X": {}, "C": {}}
	var gen struct {
		StartTime int64 `json:"startTime"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &gen); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, file, method string }{
		{"P", devnet.P, "platform.getBlockByHeight"},
		{"X", devnet.X, "avm.getBlockByHeight"},
	} {
		for _, l := range devnet.LoadRPC(t, c.file) {
			if l.Method != c.method || len(l.Response.Result) == 0 {
				continue
			}
			var p struct {
				Encoding string `json:"encoding"`
				Height   int64  `json:"height"`
			}
			if json.Unmarshal(l.Params, &p) != nil || p.Encoding != "json" {
				continue
			}
			var res struct {
				Block struct {
					Height int64             `json:"height"`
					Time   *int64            `json:"time"`
					Txs    []json.RawMessage `json:"txs"`
					Tx     json.RawMessage   `json:"tx"` // proposal blocks
				} `json:"block"`
			}
			if err := json.Unmarshal(l.Response.Result, &res); err != nil {
				t.Fatalf("%s block %d: %v", c.key, p.Height, err)
			}
			blk := recBlock{txs: int64(len(res.Block.Txs))}
			if len(res.Block.Tx) > 0 && string(res.Block.Tx) != "null" {
				blk.txs++
			}
			switch {
			case res.Block.Time != nil:
				blk.time = *res.Block.Time
			case c.key == "P" && res.Block.Height == 0:
				blk.time = gen.StartTime
			default:
				t.Fatalf("%s block %d has no time", c.key, res.Block.Height)
			}
			out[c.key][res.Block.Height] = blk
		}
	}
	for _, l := range devnet.LoadRPC(t, devnet.CRPC) {
		if l.Method != "eth_getBlockByNumber" || len(l.Response.Result) == 0 || string(l.Response.Result) == "null" {
			continue // errors: beyond the tip, invalid numbers
		}
		var p []any
		if json.Unmarshal(l.Params, &p) != nil || len(p) != 2 || p[1] != true {
			continue
		}
		num, ok := p[0].(string)
		if !ok || !strings.HasPrefix(num, "0x") {
			continue // "latest"
		}
		var res struct {
			Timestamp    string            `json:"timestamp"`
			Transactions []json.RawMessage `json:"transactions"`
		}
		if err := json.Unmarshal(l.Response.Result, &res); err != nil {
			t.Fatal(err)
		}
		h, err1 := strconv.ParseInt(num[2:], 16, 64)
		ts, err2 := strconv.ParseInt(strings.TrimPrefix(res.Timestamp, "0x"), 16, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("C block %s: %v %v", num, err1, err2)
		}
		out["C"][h] = recBlock{time: ts, txs: int64(len(res.Transactions))}
	}
	for k, bs := range out {
		for h := int64(0); h < int64(len(bs)); h++ {
			if _, ok := bs[h]; !ok {
				t.Fatalf("recording lacks %s block %d", k, h)
			}
		}
	}
	return out
}

// recordedCalls are the recorded eth_calls.
func recordedCalls(t *testing.T) []devnet.EthCall {
	t.Helper()
	return devnet.EthCalls(t, devnet.LoadRPC(t, devnet.CRPC))
}

func word(t *testing.T, hexStr string, i int) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.TrimPrefix(hexStr, "0x"))
	if err != nil || len(b) < 32*(i+1) {
		t.Fatalf("ABI word %d of %q", i, hexStr)
	}
	return b[32*i : 32*(i+1)]
}

func wordAddr(t *testing.T, hexStr string, i int) string {
	return "0x" + hex.EncodeToString(word(t, hexStr, i)[12:])
}

func wordInt(t *testing.T, hexStr string, i int) *big.Int {
	return new(big.Int).SetBytes(word(t, hexStr, i))
}

// abiString decodes a returned ABI string.
func abiString(t *testing.T, hexStr string) string {
	t.Helper()
	b, err := hex.DecodeString(strings.TrimPrefix(hexStr, "0x"))
	if err != nil || len(b) < 64 {
		t.Fatalf("ABI string %q", hexStr)
	}
	off := new(big.Int).SetBytes(b[:32]).Int64()
	n := new(big.Int).SetBytes(b[off : off+32]).Int64()
	return string(b[off+32 : off+32+n])
}
