package devnet

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/formatting"
)

// The readers see the whole recording as README.md describes it.
func TestLoadRPC(t *testing.T) {
	for _, tc := range []struct {
		file string
		n    int
	}{{Info, 31}, {P, 354}, {X, 172}, {CRPC, 366}, {CAvax, 23}} {
		calls := LoadRPC(t, tc.file)
		if len(calls) != tc.n {
			t.Errorf("%s: %d exchanges, README says %d", tc.file, len(calls), tc.n)
		}
		for i, x := range calls {
			if x.Method == "" || x.Node == "" || x.HTTPStatus == 0 || len(x.Response.Raw) == 0 ||
				(x.Response.Result == nil) == (x.Response.Error == nil) {
				t.Fatalf("%s line %d: %+v", tc.file, i+1, x)
			}
		}
	}
}

func TestLookups(t *testing.T) {
	p := LoadRPC(t, P)
	var h struct{ Height json.Number }
	if !p.FindResult(t, &h, "platform.getHeight") || h.Height != "41" {
		t.Fatalf("platform.getHeight = %q", h.Height)
	}
	answered := func(x Exchange) bool { return x.Response.Error == nil }
	if n := len(p.Method("platform.getBlockByHeight", ParamsContain(`"encoding":"hex"`), answered)); n != 43 {
		t.Errorf("%d hex blocks by height, want 43 (0..41, and 1 again array-wrapped)", n)
	}
	c := LoadRPC(t, CRPC)
	x, ok := c.Find("eth_getBlockByNumber", ParamsEqual(`["0x25",true]`))
	if !ok || !strings.Contains(string(x.Response.Raw), `"number":"0x25"`) {
		t.Fatalf("eth_getBlockByNumber 0x25: %v %s", ok, x.Response.Raw)
	}
	if _, ok := c.Find("eth_getBlockByNumber", ParamsEqual(`["0x26",true]`)); ok {
		t.Error("found a block above the tip")
	}
	reverted := 0
	for _, e := range EthCalls(t, c) {
		if e.Reverted != (e.Result == "") || !strings.HasPrefix(e.To, "0x") || e.To != strings.ToLower(e.To) {
			t.Fatalf("eth_call %+v", e)
		}
		if e.Reverted {
			reverted++
		}
	}
	if reverted == 0 {
		t.Error("no reverted eth_call")
	}
	net := LoadNetwork(t)
	if got := LoadRPC(t, Info).Method("info.getNodeID", AnsweredBy(net.RecordingNode)); len(got) != 1 {
		t.Errorf("recording node answered info.getNodeID %d times", len(got))
	}
}

func TestFiles(t *testing.T) {
	net := LoadNetwork(t)
	if net.NetworkID != 88888 || net.HRP != "custom" || net.Tips.P.Height != 41 || net.Tips.X.Height != 19 ||
		net.Tips.C.Height != 37 || len(net.PBlocks) != 42 || len(net.RewardValidatorTxs) != 4 {
		t.Errorf("network.json: %+v", net)
	}
	if c := net.ContractsLower()["erc20"]; c != strings.ToLower(net.CChainContracts["erc20"]) || !strings.HasPrefix(c, "0x") {
		t.Errorf("erc20 %q", c)
	}
	if w := LoadWorkload[map[string]any](t); len(w) != 94 || w[0].Seq != 1 || w[0].TxID == "" {
		t.Errorf("workload: %d txs", len(w))
	}
	k := LoadKeys(t)
	if len(k.Keys) != 16 || len(k.BLSKeys) != 4 || k.Keys[0].XAddress == "" {
		t.Errorf("keys: %d keys, %d BLS keys", len(k.Keys), len(k.BLSKeys))
	}
	if s := BLSSigners(t); len(s) != 4 {
		t.Errorf("%d BLS signers", len(s))
	}
	bad := k.BLSKeys[0]
	bad.BLSPublicKey = k.BLSKeys[1].BLSPublicKey
	if _, err := bad.Signer(); err == nil {
		t.Error("a secret key that does not give the recorded public key is accepted")
	}
}

func TestBlocks(t *testing.T) {
	xs := XBlocks(t)
	if xs[19].Hash != LoadNetwork(t).Tips.X.BlockID || xs[19].Timestamp == 0 {
		t.Errorf("X tip %+v", xs[19])
	}
	p := LoadRPC(t, P)
	if n := len(PBlocks(t, p)); n != 42 {
		t.Errorf("%d P blocks", n)
	}
	if len(PTxs(t, p)) == 0 {
		t.Error("no P txs")
	}
	sets := ValidatorsAt(t, p)
	primary := 0
	for _, s := range sets {
		if s.SubnetID == constants.PrimaryNetworkID && s.Height == "41" {
			primary = len(s.Set)
		}
	}
	if primary == 0 {
		t.Error("no primary validators at 41")
	}
	net := LoadNetwork(t)
	for _, v := range ValidatorsOf(t, p, net.Subnets["B"].SubnetID, 21) {
		if v.PublicKey == nil || v.Weight == 0 {
			t.Errorf("L1 validator %+v", v)
		}
	}
}

func TestHexBytes(t *testing.T) {
	want := []byte{1, 2, 3, 4}
	s, err := formatting.Encode(formatting.Hex, want)
	if err != nil {
		t.Fatal(err)
	}
	if got := HexBytes(t, s); !bytes.Equal(got, want) {
		t.Errorf("HexBytes(%s) = %x, want %x", s, got, want)
	}
}
