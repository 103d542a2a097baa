package warp

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
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/crypto/bls/signer/localsigner"
	"github.com/ava-labs/avalanchego/utils/formatting"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
)

// Readers of the devnet-a recording (testdata/devnet-a): answers of real
// avalanchego v1.14.2 nodes.

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
			t.Fatal("module root not found")
		}
		dir = parent
	}
}

type rpcLine struct {
	Method   string          `json:"method"`
	Params   json.RawMessage `json:"params"`
	Response struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	} `json:"response"`
}

func readJSONLines[T any](t testing.TB, path string) []T {
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

func pChainRPC(t testing.TB) []rpcLine {
	return readJSONLines[rpcLine](t, filepath.Join(fixtureDir(t), "rpc", "ext_bc_P.jsonl"))
}

type workloadEntry struct {
	Seq   int             `json:"seq"`
	Step  string          `json:"step"`
	Chain string          `json:"chain"`
	Type  string          `json:"type"`
	TxID  string          `json:"txID"`
	Extra json.RawMessage `json:"extra"`
}

func workload(t testing.TB) []workloadEntry {
	return readJSONLines[workloadEntry](t, filepath.Join(fixtureDir(t), "workload.jsonl"))
}

// recordedPTxs parses every platform.getTx answer in hex.
func recordedPTxs(t testing.TB, lines []rpcLine) map[ids.ID]*txs.Tx {
	t.Helper()
	out := make(map[ids.ID]*txs.Tx)
	for _, l := range lines {
		if l.Method != "platform.getTx" {
			continue
		}
		var p struct{ TxID, Encoding string }
		if err := json.Unmarshal(l.Params, &p); err != nil || p.Encoding != "hex" || l.Response.Result == nil {
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
			t.Fatalf("tx %s parses to id %s", p.TxID, tx.ID())
		}
		out[tx.ID()] = tx
	}
	return out
}

type recordedValidator struct {
	NodeID    ids.NodeID
	PublicKey *bls.PublicKey
	PKHex     string
	Weight    uint64
}

// recordedValidatorsAt is the platform.getValidatorsAt answer for subnetID
// at height.
func recordedValidatorsAt(t testing.TB, lines []rpcLine, subnetID string, height uint64) []recordedValidator {
	t.Helper()
	for _, l := range lines {
		if l.Method != "platform.getValidatorsAt" {
			continue
		}
		var p struct {
			Height   json.RawMessage `json:"height"`
			SubnetID string          `json:"subnetID"`
		}
		if err := json.Unmarshal(l.Params, &p); err != nil {
			t.Fatal(err)
		}
		if p.SubnetID != subnetID || string(p.Height) != strconv.FormatUint(height, 10) {
			continue
		}
		var r map[string]struct {
			PublicKey string `json:"publicKey"`
			Weight    string `json:"weight"`
		}
		if err := json.Unmarshal(l.Response.Result, &r); err != nil {
			t.Fatal(err)
		}
		var out []recordedValidator
		for id, v := range r {
			nodeID, err := ids.NodeIDFromString(id)
			if err != nil {
				t.Fatal(err)
			}
			pkBytes, err := hex.DecodeString(strings.TrimPrefix(v.PublicKey, "0x"))
			if err != nil {
				t.Fatal(err)
			}
			pk, err := bls.PublicKeyFromCompressedBytes(pkBytes)
			if err != nil {
				t.Fatal(err)
			}
			w, err := strconv.ParseUint(v.Weight, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, recordedValidator{NodeID: nodeID, PublicKey: pk, PKHex: v.PublicKey, Weight: w})
		}
		return out
	}
	t.Fatalf("no getValidatorsAt answer for %s at %d", subnetID, height)
	return nil
}

// recordedResult unmarshals the result of the first call of method whose
// params contain paramsHas.
func recordedResult(t testing.TB, lines []rpcLine, method, paramsHas string, into any) {
	t.Helper()
	for _, l := range lines {
		if l.Method == method && strings.Contains(string(l.Params), paramsHas) && l.Response.Result != nil {
			if err := json.Unmarshal(l.Response.Result, into); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no %s answer with %s", method, paramsHas)
}

// blsKeys are the secret keys of the workload's offline validators
// (keys.json), by public key hex.
func blsKeys(t testing.TB) map[string]*localsigner.LocalSigner {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir(t), "keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		BLSKeys []struct {
			Name         string `json:"name"`
			BLSPublicKey string `json:"blsPublicKey"`
			BLSSecretKey string `json:"blsSecretKeyHex"`
		} `json:"blsKeys"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*localsigner.LocalSigner)
	for _, e := range k.BLSKeys {
		sk, err := hex.DecodeString(strings.TrimPrefix(e.BLSSecretKey, "0x"))
		if err != nil {
			t.Fatal(err)
		}
		signer, err := localsigner.FromBytes(sk)
		if err != nil {
			t.Fatal(err)
		}
		if got := "0x" + hex.EncodeToString(bls.PublicKeyToCompressedBytes(signer.PublicKey())); got != e.BLSPublicKey {
			t.Fatalf("key %s: secret key gives public key %s, recorded %s", e.Name, got, e.BLSPublicKey)
		}
		out[e.BLSPublicKey] = signer
	}
	return out
}
