package warptest

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/formatting"
	"github.com/ava-labs/avalanchego/vms/platformvm/block"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
)

// Readers of the devnet-a recording (testdata/devnet-a/README.md).

// RPCLine is one recorded JSON-RPC exchange.
type RPCLine struct {
	Method   string          `json:"method"`
	Params   json.RawMessage `json:"params"`
	Node     string          `json:"node"`
	Response struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	} `json:"response"`
}

// WorkloadEntry is one logged tx of workload.jsonl.
type WorkloadEntry struct {
	Seq   int             `json:"seq"`
	Step  string          `json:"step"`
	Chain string          `json:"chain"`
	Type  string          `json:"type"`
	TxID  string          `json:"txID"`
	Extra json.RawMessage `json:"extra"`
}

func readLines[T any](t testing.TB, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// RPC reads rpc/<file> of the recording in dir (e.g. "ext_bc_P.jsonl").
func RPC(t testing.TB, dir, file string) []RPCLine {
	return readLines[RPCLine](t, filepath.Join(dir, "rpc", file))
}

// Workload reads workload.jsonl of the recording in dir.
func Workload(t testing.TB, dir string) []WorkloadEntry {
	return readLines[WorkloadEntry](t, filepath.Join(dir, "workload.jsonl"))
}

// Result unmarshals the result of the first call of method (answered by
// node, any node if "") whose params contain paramsHas; false if none.
func Result(t testing.TB, lines []RPCLine, method, node, paramsHas string, into any) bool {
	t.Helper()
	for _, l := range lines {
		if l.Method != method || (node != "" && l.Node != node) || !strings.Contains(string(l.Params), paramsHas) || l.Response.Result == nil {
			continue
		}
		if err := json.Unmarshal(l.Response.Result, into); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return true
	}
	return false
}

// RecordedValidator is one entry of a platform.getValidatorsAt answer.
type RecordedValidator struct {
	NodeID    ids.NodeID
	PublicKey *bls.PublicKey // nil without a key
	PKHex     string         // 0x-hex compressed, "" without a key
	Weight    uint64
}

// ValidatorsAtCall is one recorded platform.getValidatorsAt call.
type ValidatorsAtCall struct {
	SubnetID ids.ID
	Height   string // decimal or "proposed"
	Set      map[ids.NodeID]RecordedValidator
}

// ValidatorsAt returns every recorded platform.getValidatorsAt answer.
func ValidatorsAt(t testing.TB, lines []RPCLine) []ValidatorsAtCall {
	t.Helper()
	var out []ValidatorsAtCall
	for _, l := range lines {
		if l.Method != "platform.getValidatorsAt" || l.Response.Result == nil {
			continue
		}
		var p struct {
			Height   json.RawMessage `json:"height"`
			SubnetID string          `json:"subnetID"`
		}
		if err := json.Unmarshal(l.Params, &p); err != nil {
			t.Fatal(err)
		}
		c := ValidatorsAtCall{SubnetID: constants.PrimaryNetworkID, Height: strings.Trim(string(p.Height), `"`),
			Set: map[ids.NodeID]RecordedValidator{}}
		if p.SubnetID != "" {
			id, err := ids.FromString(p.SubnetID)
			if err != nil {
				t.Fatal(err)
			}
			c.SubnetID = id
		}
		var r map[string]struct {
			PublicKey string `json:"publicKey"`
			Weight    string `json:"weight"`
		}
		if err := json.Unmarshal(l.Response.Result, &r); err != nil {
			t.Fatal(err)
		}
		for id, v := range r {
			rv := RecordedValidator{PKHex: v.PublicKey}
			var err error
			if rv.NodeID, err = ids.NodeIDFromString(id); err != nil {
				t.Fatal(err)
			}
			if v.PublicKey != "" {
				b, err := hex.DecodeString(strings.TrimPrefix(v.PublicKey, "0x"))
				if err != nil {
					t.Fatal(err)
				}
				if rv.PublicKey, err = bls.PublicKeyFromCompressedBytes(b); err != nil {
					t.Fatal(err)
				}
			}
			if rv.Weight, err = strconv.ParseUint(v.Weight, 10, 64); err != nil {
				t.Fatal(err)
			}
			c.Set[rv.NodeID] = rv
		}
		out = append(out, c)
	}
	return out
}

// PBlocks parses every recorded platform.getBlockByHeight answer in hex, by
// height.
func PBlocks(t testing.TB, lines []RPCLine) map[uint64]block.Block {
	t.Helper()
	out := make(map[uint64]block.Block)
	for _, l := range lines {
		if l.Method != "platform.getBlockByHeight" || l.Response.Result == nil {
			continue
		}
		var p struct{ Encoding string }
		if err := json.Unmarshal(l.Params, &p); err != nil || p.Encoding != "hex" {
			continue
		}
		var r struct{ Block string }
		if err := json.Unmarshal(l.Response.Result, &r); err != nil {
			t.Fatal(err)
		}
		b, err := formatting.Decode(formatting.Hex, r.Block)
		if err != nil {
			t.Fatal(err)
		}
		blk, err := block.Parse(block.Codec, b)
		if err != nil {
			t.Fatal(err)
		}
		out[blk.Height()] = blk
	}
	return out
}

// PTxs returns the signed bytes of every recorded platform.getTx answer in
// hex, by tx id (checked to hash to it).
func PTxs(t testing.TB, lines []RPCLine) map[ids.ID][]byte {
	t.Helper()
	out := make(map[ids.ID][]byte)
	for _, l := range lines {
		if l.Method != "platform.getTx" || l.Response.Result == nil {
			continue
		}
		var p struct{ TxID, Encoding string }
		if err := json.Unmarshal(l.Params, &p); err != nil || p.Encoding != "hex" {
			continue
		}
		var r struct{ Tx string }
		if err := json.Unmarshal(l.Response.Result, &r); err != nil {
			t.Fatal(err)
		}
		b, err := formatting.Decode(formatting.Hex, r.Tx)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := txs.Parse(txs.Codec, b)
		if err != nil {
			t.Fatalf("tx %s: %v", p.TxID, err)
		}
		if tx.ID().String() != p.TxID {
			t.Fatalf("recorded tx %s hashes to %s", p.TxID, tx.ID())
		}
		out[tx.ID()] = b
	}
	return out
}
