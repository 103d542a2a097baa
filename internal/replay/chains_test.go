package replay

import (
	"bytes"
	"path/filepath"
	"testing"

	fixture "github.com/permafrost-dev/permafrost/internal/devnet"
)

// devnet-d's L1 file (ext_bc_<blockchainID>_rpc.jsonl) is served on
// /ext/bc/<blockchainID>/rpc, every line byte for byte, beside the C-chain.
func TestFurtherEVMChainFiles(t *testing.T) {
	rec, err := Load(filepath.Join(fixture.Root(t), "testdata", "devnet-d"))
	if err != nil {
		t.Fatal(err)
	}
	const l1 = "/ext/bc/sHxnmMgaL8gohip8Sa9Ege9Bz1r3MjsKZNkNVnRHhPbBMvUCe/rpc"
	if got := rec.EVMChains(); len(got) != 1 || got[0] != l1 {
		t.Fatalf("EVM chains %v", got)
	}
	url := serve(t, NewHandler(rec))
	n := 0
	for _, e := range rec.Exchanges {
		if e.Endpoint != l1 {
			continue
		}
		n++
		status, body := post(t, url+e.Endpoint, request(string(e.RecordedID()), e.Method, e.Params))
		if want := append(append([]byte{}, e.Response...), '\n'); status != e.HTTPStatus || !bytes.Equal(body, want) {
			t.Errorf("%s:%d %s: %d %.200s\nwant %.200s", e.File, e.Line, e.Method, status, body, want)
		}
	}
	if n < 50 {
		t.Fatalf("%d L1 exchanges", n)
	}
	// The L1 answers its own chain id; the C-chain path answers the C-chain's.
	for path, want := range map[string]string{l1: `"0x1046b"`, "/ext/bc/C/rpc": `"0x1046a"`} {
		_, body := post(t, url+path, `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`)
		if !bytes.Contains(body, []byte(`"result":`+want)) {
			t.Errorf("%s eth_chainId: %s", path, body)
		}
	}
}
