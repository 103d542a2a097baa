package api

import (
	"encoding/hex"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/btcsuite/btcd/btcutil/bech32"

	"github.com/permafrost-dev/permafrost/internal/devnet"
)

// loadFixture returns the recorded network's HRP, keys (addresses in every
// form), offline validator node IDs and blockchain IDs.
func loadFixture(t *testing.T) (hrp string, ks []devnet.Key, nodeIDs []string, chainIDs map[string]string) {
	t.Helper()
	kf, nf := devnet.LoadKeys(t), devnet.LoadNetwork(t)
	for _, b := range kf.BLSKeys {
		nodeIDs = append(nodeIDs, b.NodeID)
	}
	return nf.HRP, append(kf.Keys, kf.GenesisFundedUnused...), nodeIDs, nf.BlockchainIDs
}

func TestParseBech32AddressFixture(t *testing.T) {
	hrp, ks, _, _ := loadFixture(t)
	if hrp != "custom" || len(ks) < 3 {
		t.Fatalf("fixture: hrp %q, %d keys", hrp, len(ks))
	}
	for _, k := range ks {
		want, err := ids.ShortFromString(k.ShortID)
		if err != nil {
			t.Fatal(err)
		}
		bare := strings.TrimPrefix(k.PAddress, "P-")
		for in, chain := range map[string]string{
			k.PAddress: "P", k.XAddress: "X", k.CAddress: "C", bare: "",
			strings.ToUpper(k.PAddress): "P", "x-" + bare: "X", strings.ToUpper(bare): "",
		} {
			gotChain, got, err := ParseBech32Address(hrp, in)
			if err != nil || gotChain != chain || got != want {
				t.Errorf("%s: %q %s %v, want %q %s", in, gotChain, got, err, chain, want)
			}
		}
	}
	// Refusals, each with its reason.
	k := ks[0]
	bare := strings.TrimPrefix(k.PAddress, "P-")
	sid, _ := ids.ShortFromString(k.ShortID)
	five, _ := bech32.ConvertBits(sid[:], 8, 5, true)
	m, _ := bech32.EncodeM(hrp, five)
	long5, _ := bech32.ConvertBits(append(sid[:], 7), 8, 5, true)
	long, _ := bech32.Encode(hrp, long5)
	other5, _ := bech32.ConvertBits(sid[:], 8, 5, true)
	otherNet, _ := bech32.Encode("fuji", other5)
	flipped := bare[:len(bare)-1] + map[bool]string{true: "q", false: "p"}[bare[len(bare)-1] == 'p']
	cases := map[string]string{
		"P-fuji" + otherNet[4:]: "is an address of another network",
		"P-" + m:                "is not a bech32 address",
		"P-" + long:             "is not a 20-byte address",
		"P-" + flipped:          "is not a bech32 address",
		"Q-" + bare:             "unknown chain prefix",
		"P-" + strings.ToUpper(bare[:5]) + bare[5:]: "is not a bech32 address",
		"":                                     "is not a bech32 address",
		"P-":                                   "is not a bech32 address",
		"P-" + bare + strings.Repeat("q", 100): "is not an address",
		"0x8db97C7cEcE249c2b98bDC0226Cc4C2A57BF52FC": "is not a bech32 address",
	}
	for in, msg := range cases {
		if _, _, err := ParseBech32Address(hrp, in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want %q", in, err, msg)
		}
	}
}

func TestParseIDsFixture(t *testing.T) {
	_, ks, nodeIDs, chainIDs := loadFixture(t)
	for _, s := range chainIDs {
		id, err := ParseCB58ID(s)
		if err != nil || id.String() != s {
			t.Errorf("%s: %s %v", s, id, err)
		}
	}
	for _, s := range nodeIDs {
		id, err := ParseNodeID(s)
		if err != nil || id.String() != s {
			t.Errorf("%s: %s %v", s, id, err)
		}
	}
	x := chainIDs["X"]
	bad := x[:len(x)-1] + map[bool]string{true: "A", false: "B"}[x[len(x)-1] == 'B']
	for _, s := range []string{bad, "", "0x" + strings.Repeat("00", 32), strings.Repeat("1", 61), "NodeID-" + x, "l0l", x + " "} {
		if _, err := ParseCB58ID(s); err == nil {
			t.Errorf("cb58 %q accepted", s)
		}
	}
	n := nodeIDs[0]
	for _, s := range []string{strings.TrimPrefix(n, "NodeID-"), "NodeID-", "nodeid-" + n[7:], n[:len(n)-1], n + "1", "NodeID-" + x} {
		if _, err := ParseNodeID(s); err == nil {
			t.Errorf("node id %q accepted", s)
		}
	}
	for _, k := range ks {
		lower := strings.ToLower(k.EVMAddress)
		for _, in := range []string{k.EVMAddress, lower, strings.TrimPrefix(lower, "0x"), "0X" + strings.ToUpper(lower[2:])} {
			a, err := ParseEVMAddress(in)
			if err != nil || strings.ToLower(a.Hex()) != lower {
				t.Errorf("%s: %s %v", in, a.Hex(), err)
			}
		}
	}
	for _, s := range []string{"", "0x", "0x" + strings.Repeat("a", 39), "0x" + strings.Repeat("a", 41), "0x" + strings.Repeat("g", 40), "0x 8db97C7cEcE249c2b98bDC0226Cc4C2A57BF52F", "P-custom1js9jhzvc6j53vp53h8cutnrv4lt4292t58me5h"} {
		if _, err := ParseEVMAddress(s); err == nil {
			t.Errorf("evm address %q accepted", s)
		}
	}
}

func TestParseHexHashDate(t *testing.T) {
	hexCases := []struct {
		in   string
		want string // hex of the bytes; "!" = error
	}{
		{"0x", ""}, {"0xABcd", "abcd"}, {"abcd", "abcd"}, {"0X00ff", "00ff"},
		{"", "!"}, {"0xabc", "!"}, {"0xzz", "!"}, {"0x 1", "!"}, {"x0ab", "!"},
	}
	for _, c := range hexCases {
		b, err := ParseHex(c.in)
		if c.want == "!" {
			if err == nil {
				t.Errorf("hex %q accepted", c.in)
			}
		} else if err != nil || hex.EncodeToString(b) != c.want {
			t.Errorf("hex %q: %x %v", c.in, b, err)
		}
	}
	h := "0x" + strings.Repeat("ab", 32)
	if got, err := ParseHash(strings.ToUpper(h[2:])); err != nil || got.Hex() != h {
		t.Errorf("hash: %s %v", got.Hex(), err)
	}
	for _, s := range []string{h[:65], h + "0", "0x" + strings.Repeat("g", 64), ""} {
		if _, err := ParseHash(s); err == nil {
			t.Errorf("hash %q accepted", s)
		}
	}
	dates := map[string]string{
		"2024-02-29": "2024-02-29T00:00:00Z", "1970-01-01": "1970-01-01T00:00:00Z", "9999-12-31": "9999-12-31T00:00:00Z",
		"2023-02-29": "!", "2024-2-01": "!", "2024-02-1": "!", "1969-12-31": "!", "2024-01-01T00:00:00Z": "!", " 2024-01-01": "!",
		"2024-13-01": "!", "+024-01-01": "!", "": "!", "20240101": "!", "2024/01/01": "!",
	}
	for in, want := range dates {
		d, err := ParseDate(in)
		if want == "!" {
			if err == nil {
				t.Errorf("date %q accepted as %v", in, d)
			}
		} else if err != nil || d.Format(time.RFC3339) != want {
			t.Errorf("date %q: %v %v", in, d, err)
		}
	}
}

type exportBody struct {
	Type      string `json:"type"`
	FirstDate string `json:"firstDate"`
	Options   struct {
		Addresses     []string `json:"addresses"`
		IncludeChains []string `json:"includeChains"`
	} `json:"options"`
	Limit int32 `json:"limit"`
}

func TestDecodeJSONBody(t *testing.T) {
	cases := []struct {
		ct, body, msg string // msg "" = accepted
	}{
		{"application/json", `{"type":"TRANSACTION_EXPORT_EVM","options":{"addresses":["0x1"],"includeChains":["43114"]}}`, ""},
		{"", ` {"type":"x"} ` + "\n", ""},
		{"application/json; charset=utf-8", `{"type":"x"}`, ""},
		{"text/plain", `{"type":"x"}`, `Content-Type must be application/json, got "text/plain"`},
		{"", ``, "a JSON request body is required"},
		{"", "  \n", "a JSON request body is required"},
		{"", `{"type":"x","extra":1}`, `unknown field "extra"`},
		{"", `{"options":{"addresses":["a"],"chains":[]}}`, `unknown field "chains"`},
		{"", `{"type":1}`, "field type must be a string, got number"},
		{"", `{"options":{"addresses":"a"}}`, "field options.addresses must be an array, got string"},
		{"", `{"limit":99999999999}`, "field limit must be an integer in range, got number 99999999999"},
		{"", `{"limit":1.5}`, "field limit must be an integer in range, got number 1.5"},
		{"", `[1,2]`, "the request body must be an object, got array"},
		{"", `{"type":"x"}{"type":"y"}`, "the request body must hold exactly one JSON value"},
		{"", `{"type":"x"} 1`, "the request body must hold exactly one JSON value"},
		{"", `{"type":"x",}`, "the request body is not valid JSON (at byte 13)"},
		{"", `{"type":`, "the request body is truncated JSON"},
		{"", "{\"type\":\"\xff\"}", "the request body is not valid UTF-8"},
		{"", `{"type":"` + strings.Repeat("a", MaxJSONBodyBytes) + `"}`, "the request body exceeds 262144 bytes"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", "/", strings.NewReader(c.body))
		if c.ct != "" {
			r.Header.Set("Content-Type", c.ct)
		}
		var v exportBody
		err := DecodeJSONBody(r, &v)
		var e *Error
		switch {
		case c.msg == "" && err != nil:
			t.Errorf("%.60s: %v", c.body, err)
		case c.msg != "" && (!errors.As(err, &e) || e.Status != 400 || strings.Join(e.Messages, "; ") != c.msg):
			t.Errorf("%.60s: got %v, want 400 %q", c.body, err, c.msg)
		}
	}
}
