package enrich

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/source"
)

func abiString(s string) []byte {
	b := make([]byte, 64, 64+len(s)+32)
	b[31] = 0x20
	big.NewInt(int64(len(s))).FillBytes(b[32:64])
	b = append(b, s...)
	for len(b)%32 != 0 {
		b = append(b, 0)
	}
	return b
}

func word(v int64) []byte { return big.NewInt(v).FillBytes(make([]byte, 32)) }

func TestDecodeText(t *testing.T) {
	bytes32 := make([]byte, 32)
	copy(bytes32, "MKR")
	long := abiString(strings.Repeat("x", 5000))
	lying := abiString("abc")
	big.NewInt(1 << 40).FillBytes(lying[32:64]) // length beyond the data
	for _, c := range []struct {
		name string
		in   []byte
		want string
		ok   bool
	}{
		{"abi string", abiString("Devnet Token"), "Devnet Token", true},
		{"trimmed", abiString("  DEVT \n"), "DEVT", true},
		{"bytes32", bytes32, "MKR", true},
		{"empty word", make([]byte, 32), "", false},
		{"too long", long, "", false},
		{"length beyond data", lying, "", false},
		{"invalid utf-8", abiString("\xff\xfe"), "", false},
		{"control chars", abiString("a\x00b"), "", false},
		{"short", []byte{1, 2, 3}, "", false},
		{"nothing", nil, "", false},
	} {
		got, ok := decodeText(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: got %q %v, want %q %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if _, err := decodeBool(word(2)); err == nil {
		t.Error("bool 2 accepted")
	}
	if v, err := decodeSmallUint(word(18), 255); err != nil || v != 18 {
		t.Errorf("decimals: %d %v", v, err)
	}
	if _, err := decodeSmallUint(word(256), 255); err == nil {
		t.Error("decimals 256 accepted")
	}
}

// detectToken on answers shaped like the recorded ones, and on garbage.
func TestDetectToken(t *testing.T) {
	revert := callResult{err: &source.RPCError{Code: -32000, Message: "execution reverted"}}
	ok := func(b []byte) callResult { return callResult{data: b, ok: true} }
	yes, no := ok(word(1)), ok(word(0))
	str := func(s string) callResult { return ok(abiString(s)) }
	for _, c := range []struct {
		name     string
		r        [tokenCalls]callResult
		typ      string
		answered bool
		dec      int
	}{
		{"erc20", [tokenCalls]callResult{revert, revert, revert, revert, str("Devnet Token"), str("DEVT"), ok(word(18)), ok(word(1e6))}, ercTypeERC20, true, 18},
		{"erc721", [tokenCalls]callResult{yes, no, yes, no, str("Devnet Collectible"), str("DNFT"), revert, revert}, ercTypeERC721, true, -1},
		{"erc1155", [tokenCalls]callResult{yes, no, no, yes, str("Multi"), str("M"), revert, revert}, ercTypeERC1155, true, -1},
		// Says yes to everything: not a compliant ERC-165 contract.
		{"yes to all", [tokenCalls]callResult{yes, yes, yes, yes, revert, revert, revert, revert}, "", true, -1},
		{"all revert", [tokenCalls]callResult{revert, revert, revert, revert, revert, revert, revert, revert}, "", false, -1},
		{"garbage", [tokenCalls]callResult{ok([]byte{1}), ok(nil), ok(word(7)), ok([]byte("zz")), ok([]byte{0xff}), ok(nil), ok(word(1 << 20)), ok([]byte{1})}, "", false, -1},
		{"decimals without supply", [tokenCalls]callResult{revert, revert, revert, revert, revert, revert, ok(word(6)), revert}, "", true, 6},
	} {
		m := detectToken(c.r)
		dec := -1
		if m.decimals != nil {
			dec = *m.decimals
		}
		if m.ercType != c.typ || m.answered != c.answered || dec != c.dec {
			t.Errorf("%s: got type %q answered %v decimals %d", c.name, m.ercType, m.answered, dec)
		}
	}
}

func TestClassifyCallError(t *testing.T) {
	for _, c := range []struct {
		err       error
		transient bool
	}{
		{&source.RPCError{Code: 3, Message: "execution reverted", Data: json.RawMessage(`"0x7e273289"`)}, false},
		{&source.RPCError{Code: -32000, Message: "execution reverted"}, false},
		{&source.RPCError{Code: -32000, Message: "missing trie node abc (path )"}, true},
		{&source.RPCError{Code: -32000, Message: "header not found"}, true},
		{&source.RPCError{Code: -32601, Message: "the method eth_call does not exist/is not available"}, false},
		{errors.New("decode result: invalid hex"), false},
	} {
		if got := classifyCallError(c.err); got != c.transient {
			t.Errorf("%v: transient %v", c.err, got)
		}
	}
}

func TestAddrPolicy(t *testing.T) {
	strict := addrPolicy{}
	loop := addrPolicy{allowLoopback: true}
	priv := addrPolicy{allowPrivate: true}
	for _, c := range []struct {
		ip               string
		strict, lo, priv bool // allowed under each policy
	}{
		{"93.184.216.34", true, true, true},
		{"2606:4700::1111", true, true, true},
		{"127.0.0.1", false, true, false},
		{"127.8.9.10", false, true, false},
		{"::1", false, true, false},
		{"::ffff:127.0.0.1", false, true, false},
		{"10.0.0.1", false, false, true},
		{"172.16.5.4", false, false, true},
		{"192.168.1.1", false, false, true},
		{"::ffff:10.0.0.1", false, false, true},
		{"fd12::1", false, false, true},
		{"169.254.169.254", false, false, true},
		{"fd00:ec2::254", false, false, true},
		{"100.100.100.200", false, false, true},
		{"100.64.1.1", false, false, true},
		{"fe80::1", false, false, true},
		{"64:ff9b::a00:1", false, false, true}, // NAT64 of 10.0.0.1
		{"2002:a00:1::", false, false, true},   // 6to4 of 10.0.0.1
		{"0.0.0.0", false, false, false},
		{"::", false, false, false},
		{"224.0.0.1", false, false, false},
		{"255.255.255.255", false, false, false},
		{"ff02::1", false, false, false},
		// Issue #19: transition ranges that can reach an internal IPv4.
		{"64:ff9b:1::a00:1", false, false, false},    // local-use NAT64
		{"64:ff9b:1:ffff::1", false, false, false},   // local-use NAT64, any suffix
		{"::ffff:0:7f00:1", false, false, false},     // SIIT IPv4-translated 127.0.0.1
		{"::ffff:0:a9fe:a9fe", false, false, false},  // SIIT IPv4-translated 169.254.169.254
		{"::a00:1", false, false, false},             // IPv4-compatible 10.0.0.1
		{"::7f00:1", false, false, false},            // IPv4-compatible 127.0.0.1
		{"2001:0:4136:e378::1", false, false, false}, // Teredo
		{"fec0::1", false, false, false},             // site-local
		{"feff:ffff::1", false, false, false},        // site-local, top of fec0::/10
		{"2001:4860:4860::8888", true, true, true},   // public, next to Teredo
		{"64:ff9b:2::1", true, true, true},           // outside both NAT64 prefixes
	} {
		ip := netip.MustParseAddr(c.ip)
		for _, p := range []struct {
			name string
			pol  addrPolicy
			want bool
		}{{"strict", strict, c.strict}, {"loopback", loop, c.lo}, {"private", priv, c.priv}} {
			err := p.pol.check(ip)
			if (err == nil) != p.want {
				t.Errorf("%s under %s: err %v, want allowed %v", c.ip, p.name, err, p.want)
			}
			if err != nil && !errors.Is(err, ErrBlockedAddress) {
				t.Errorf("%s: %v is not ErrBlockedAddress", c.ip, err)
			}
		}
	}
}

func TestResolveURI(t *testing.T) {
	f := &fetcher{gateway: "http://gw.example", maxBytes: 100}
	doc := `{"name":"x"}`
	for _, c := range []struct {
		uri    string
		url    string
		data   string
		status string
	}{
		{"data:application/json;base64," + base64.StdEncoding.EncodeToString([]byte(doc)), "", doc, ""},
		{"data:application/json;base64," + base64.RawURLEncoding.EncodeToString([]byte(doc)), "", doc, ""},
		{"data:application/json," + `%7B%22name%22%3A%22x%22%7D`, "", doc, ""},
		{"data:application/json;utf8," + doc, "", doc, ""},
		{"data:," + doc, "", doc, ""},
		{"data:application/json;base64,!!!", "", "", StatusInvalidURI},
		{"data:application/json;base64", "", "", StatusInvalidURI},
		{"data:application/json," + strings.Repeat("a", 400), "", "", StatusTooLarge},
		{"data:application/json;base64," + strings.Repeat("QUFB", 60), "", "", StatusTooLarge},
		{"ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi/3.json", "http://gw.example/ipfs/bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi/3.json", "", ""},
		{"ipfs://ipfs/QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG", "http://gw.example/ipfs/QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG", "", ""},
		{"IPFS://QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG/a b.json", "http://gw.example/ipfs/QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG/a%20b.json", "", ""},
		// Issue #19: no "..", encoded dot or encoded slash reaches the gateway.
		{"ipfs://QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG/../../etc/passwd", "", "", StatusInvalidURI},
		{"ipfs://QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG/%2e%2e/%2E%2E/admin", "", "", StatusInvalidURI},
		{"ipfs://QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG/a/.%2E/b", "", "", StatusInvalidURI},
		{"ipfs://QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG/..%2fx", "", "", StatusInvalidURI},
		{"ipfs://QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG/..%5cx", "", "", StatusInvalidURI},
		{"ipfs://QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG/%zz", "", "", StatusInvalidURI},
		{"ipfs://QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG/./a//%2e/b.json", "http://gw.example/ipfs/QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG/a/b.json", "", ""},
		{"ipfs://QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG/1.json?x=../../y", "http://gw.example/ipfs/QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG/1.json", "", ""},
		{"ipfs://../etc/passwd", "", "", StatusInvalidURI},
		{"https://meta.example.org/1.json", "https://meta.example.org/1.json", "", ""},
		{" http://meta.example.org/2 ", "http://meta.example.org/2", "", ""},
		{"http:///nohost", "", "", StatusInvalidURI},
		{"http://user:pw@meta.example.org/", "", "", StatusInvalidURI},
		{"ar://abc", "", "", StatusInvalidScheme},
		{"file:///etc/passwd", "", "", StatusInvalidScheme},
		{"ftp://x/y", "", "", StatusInvalidScheme},
		{"", "", "", StatusInvalidURI},
		{"just text", "", "", StatusInvalidURI},
		{"QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG", "", "", StatusInvalidURI},
	} {
		tg, o := f.resolve(c.uri)
		switch {
		case o.status != c.status:
			t.Errorf("%.60q: status %q (%v), want %q", c.uri, o.status, o.err, c.status)
		case c.status == "" && (tg.url != c.url || string(tg.data) != c.data):
			t.Errorf("%.60q: url %q data %q", c.uri, tg.url, tg.data)
		}
	}
	// Without a gateway (the demo's default), ipfs:// is not fetched at all;
	// other schemes resolve as before.
	none := &fetcher{gateway: NoIPFSGateway, maxBytes: 100}
	if tg, o := none.resolve("ipfs://QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG"); o.status != StatusInvalidScheme || tg.url != "" {
		t.Errorf("ipfs:// without a gateway: %q %q", o.status, tg.url)
	}
	if tg, o := none.resolve("https://meta.example.org/1.json"); o.status != "" || tg.url != "https://meta.example.org/1.json" {
		t.Errorf("https without a gateway: %q %q", o.status, tg.url)
	}
	if got := expandURI("https://x/{id}.json", ercTypeERC1155, "314"); got != "https://x/"+strings.Repeat("0", 61)+"13a.json" {
		t.Errorf("{id}: %s", got)
	}
	if got := expandURI("https://x/{id}.json", ercTypeERC721, "314"); got != "https://x/{id}.json" {
		t.Errorf("ERC-721 {id}: %s", got)
	}
}

// A data: URI that is not JSON is final at once (it cannot change).
func TestDataURINotJSON(t *testing.T) {
	f := &fetcher{maxBytes: 1 << 10}
	o := f.fetch(t.Context(), "data:image/svg+xml;base64,"+base64.StdEncoding.EncodeToString([]byte("<svg/>")), ercTypeERC721)
	if o.status != StatusInvalidJSON || !o.final {
		t.Errorf("%s final %v", o.status, o.final)
	}
}

func TestParseMetadata(t *testing.T) {
	for _, c := range []struct {
		name, body, typ, status string
		want                    map[string]any // fields of the stored document
	}{
		{"erc721", `{"name":"A","description":"d","image":"ipfs://x","animation_url":"https://a","external_url":"https://e","background_color":"ffffff","attributes":[{"trait_type":"t","value":1}]}`,
			ercTypeERC721, "", map[string]any{"name": "A", "image": "ipfs://x", "background_color": "ffffff", "attributes": []any{map[string]any{"trait_type": "t", "value": 1.0}}}},
		{"image_url and numeric name", `{"name":7,"image_url":"https://i"}`, ercTypeERC721, "", map[string]any{"name": "7", "image": "https://i"}},
		{"erc1155", `{"name":"G","decimals":2,"properties":{"rarity":"rare"}}`, ercTypeERC1155, "",
			map[string]any{"name": "G", "decimals": 2.0, "properties": map[string]any{"rarity": "rare"}}},
		{"bom", "\xef\xbb\xbf{\"name\":\"B\"}", ercTypeERC721, "", map[string]any{"name": "B"}},
		{"not json", `{"name":`, ercTypeERC721, StatusInvalidJSON, nil},
		{"html", `<html>oops</html>`, ercTypeERC721, StatusInvalidJSON, nil},
		{"trailing data", `{"name":"a"} {"name":"b"}`, ercTypeERC721, StatusInvalidJSON, nil},
		{"binary", "\xff\xd8\xff\xe0", ercTypeERC721, StatusInvalidJSON, nil},
		{"array", `[{"name":"a"}]`, ercTypeERC721, StatusInvalidMeta, nil},
		{"string", `"hello"`, ercTypeERC721, StatusInvalidMeta, nil},
		{"no fields", `{"foo":1}`, ercTypeERC721, StatusInvalidMeta, nil},
		{"wrong type", `{"name":"a","image":{"url":"x"}}`, ercTypeERC721, StatusInvalidMeta, nil},
		{"bad attributes", `{"name":"a","attributes":"red"}`, ercTypeERC721, StatusInvalidMeta, nil},
		{"bad decimals", `{"name":"a","decimals":-1}`, ercTypeERC1155, StatusInvalidMeta, nil},
	} {
		doc, o := parseMetadata([]byte(c.body), c.typ)
		if o.status != c.status {
			t.Errorf("%s: status %q (%v), want %q", c.name, o.status, o.err, c.status)
			continue
		}
		if c.status != "" {
			continue
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(doc), &got); err != nil {
			t.Fatalf("%s: stored %s: %v", c.name, doc, err)
		}
		for k, v := range c.want {
			g, _ := json.Marshal(got[k])
			w, _ := json.Marshal(v)
			if string(g) != string(w) {
				t.Errorf("%s: %s = %s, want %s (doc %s)", c.name, k, g, w, doc)
			}
		}
	}
}

func TestHeuristics(t *testing.T) {
	curated := map[string]string{"USDC": "0xaaaa"}
	for _, c := range []struct{ name, symbol, addr, want string }{
		{"Devnet Token", "DEVT", "0x1", ""},
		{"Wrapped AVAX", "WAVAX", "0x1", ""},
		{"Visit avax-rewards.com to claim", "$ CLAIM", "0x1", ReputationMalicious},
		{"USDC", "www.get-usdc.io", "0x1", ReputationMalicious},
		{"Reward", "https://t.me/x", "0x1", ReputationMalicious},
		{"Free Airdrop", "FREE", "0x1", ReputationMalicious},
		{"US\u200bDC", "USDC\u200b", "0x1", ReputationMalicious},
		{"USD Coin", "USDC", "0x1", ReputationMalicious}, // impersonation
		{"USD Coin", "usdc", "0xaaaa", ""},               // the curated token itself
		{"Family 👨\u200d👩\u200d👧", "FAM", "0x1", ""},     // emoji joiners are not hidden characters
		{"yearn finance", "YFI", "0x1", ""},
	} {
		got, reason := heuristicReputation(c.addr, c.name, c.symbol, curated)
		if got != c.want {
			t.Errorf("%q/%q: %q (%s), want %q", c.name, c.symbol, got, reason, c.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	for n := 1; n <= 10; n++ {
		d := backoff(time.Second, 10*time.Second, n, 0)
		want := time.Second << (n - 1)
		if want > 10*time.Second {
			want = 10 * time.Second
		}
		if d < want*8/10 || d > want*12/10 {
			t.Errorf("attempt %d: %s, want about %s", n, d, want)
		}
	}
	if d := backoff(time.Second, time.Minute, 1, 30*time.Second); d != 30*time.Second {
		t.Errorf("Retry-After 30s: %s", d)
	}
	if d := backoff(time.Second, time.Minute, 1, time.Hour); d != time.Minute {
		t.Errorf("Retry-After beyond the cap: %s", d)
	}
	if d := retryAfter("120", time.Now()); d != 2*time.Minute {
		t.Errorf("Retry-After seconds: %s", d)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	if d := retryAfter(now.Add(90*time.Second).Format(http.TimeFormat), now); d != 90*time.Second {
		t.Errorf("Retry-After date: %s", d)
	}
}

func TestParseRegistry(t *testing.T) {
	ids := map[string]string{"C": "88888"}
	good := `
contracts:
  - chainId: C
    address: "0x0E728C6A2Fc95A228d766532b430E905eb07b726"
    description: "The devnet's token"
    officialSite: https://devnet.example.org
    email: team@devnet.example.org
    logoAsset: {assetId: logo, imageUri: "ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi/logo.png"}
    color: "#E84142"
    resourceLinks: [{type: Website, url: "https://devnet.example.org"}, {type: Github, url: "https://github.com/x/y"}]
    tags: [defi]
    tokenReputation: Benign
`
	r, err := parseRegistry([]byte(good), ids)
	if err != nil {
		t.Fatal(err)
	}
	e := r.byKey[regKey{"88888", "0x0e728c6a2fc95a228d766532b430e905eb07b726"}]
	if e == nil || e.Description != "The devnet's token" || len(e.ResourceLinks) != 2 || e.LogoAsset.AssetID != "logo" {
		t.Fatalf("entry: %+v", e)
	}
	if r, err := parseRegistry([]byte("contracts: []"), ids); err != nil || len(r.list) != 0 {
		t.Errorf("empty registry: %v", err)
	}
	// JSON is YAML.
	if _, err := parseRegistry([]byte(`{"contracts":[{"chainId":"43114","address":"0x0e728c6a2fc95a228d766532b430e905eb07b726","tags":["x"]}]}`), ids); err != nil {
		t.Errorf("json: %v", err)
	}
	for _, c := range []struct{ body, want string }{
		{`contracts: [{chainId: C, address: "0x12"}]`, "address"},
		{`contracts: [{chainId: Q, address: "0x0e728c6a2fc95a228d766532b430e905eb07b726"}]`, "chainId"},
		{`contracts: [{chainId: C, address: "0x0e728c6a2fc95a228d766532b430e905eb07b726", officialSite: "javascript:alert(1)"}]`, "officialSite"},
		{`contracts: [{chainId: C, address: "0x0e728c6a2fc95a228d766532b430e905eb07b726", email: "not an email"}]`, "email"},
		{`contracts: [{chainId: C, address: "0x0e728c6a2fc95a228d766532b430e905eb07b726", color: red}]`, "color"},
		{`contracts: [{chainId: C, address: "0x0e728c6a2fc95a228d766532b430e905eb07b726", resourceLinks: [{type: MySpace, url: "https://x"}]}]`, "MySpace"},
		{`contracts: [{chainId: C, address: "0x0e728c6a2fc95a228d766532b430e905eb07b726", tokenReputation: Evil}]`, "tokenReputation"},
		{`contracts: [{chainId: C, address: "0x0e728c6a2fc95a228d766532b430e905eb07b726", descriptoin: typo}]`, "descriptoin"},
		{"contracts:\n  - {chainId: C, address: \"0x0e728c6a2fc95a228d766532b430e905eb07b726\"}\n  - {chainId: \"88888\", address: \"0x0E728C6A2Fc95A228d766532b430E905eb07b726\"}", "twice"},
		{`contracts: {`, "registry"},
		{``, "no contracts key"}, // a file caught mid-rewrite
		{"# nothing yet\n", "no contracts key"},
	} {
		_, err := parseRegistry([]byte(c.body), ids)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", c.body, err, c.want)
		}
	}
}

func TestStaticPricesFile(t *testing.T) {
	var p StaticPrices
	ids := map[string]string{"C": "88888"}
	body := `
prices:
  - chainId: C
    current: {usd: 35.5, eur: "32.10"}
    daily: {"2026-11-20": {usd: "30"}}
  - chainId: "88888"
    token: "0x0E728C6A2Fc95A228d766532b430E905eb07b726"
    current: {usd: "1.5e-3"}
`
	if err := p.load([]byte(body), ids); err != nil {
		t.Fatal(err)
	}
	native, tok := Asset{Chain: "88888"}, Asset{Chain: "88888", Token: "0x0e728c6a2fc95a228d766532b430e905eb07b726"}
	got, _ := p.Current(t.Context(), []Asset{native, tok, {Chain: "1"}})
	if len(got) != 2 || got[native]["usd"] != "35.5" || got[native]["eur"] != "32.10" || got[tok]["usd"] != "0.0015" {
		t.Errorf("current: %v", got)
	}
	q, err := p.Historical(t.Context(), native, time.Date(2026, 11, 20, 15, 0, 0, 0, time.UTC))
	if err != nil || q["usd"] != "30" {
		t.Errorf("historical: %v %v", q, err)
	}
	if _, err := p.Historical(t.Context(), native, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)); !errors.Is(err, ErrNoPrice) {
		t.Errorf("missing day: %v", err)
	}
	for _, bad := range []string{
		`prices: [{chainId: C, current: {btc: "1"}}]`,
		`prices: [{chainId: C, current: {usd: "-1"}}]`,
		`prices: [{chainId: C, current: {usd: "abc"}}]`,
		`prices: [{chainId: C, daily: {"20-11-2026": {usd: "1"}}}]`,
		`prices: [{chainId: C, token: "0x12", current: {usd: "1"}}]`,
		`prices: [{chainId: primary, current: {usd: "1"}}]`,
	} {
		if err := p.load([]byte(bad), ids); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	// A bad file leaves the previous table.
	if got, _ := p.Current(t.Context(), []Asset{native}); got[native]["usd"] != "35.5" {
		t.Errorf("after bad loads: %v", got)
	}
}

func TestCallData(t *testing.T) {
	// The recording's own request bytes.
	if got := tokenCallData[0]; got != "0x01ffc9a701ffc9a700000000000000000000000000000000000000000000000000000000" {
		t.Errorf("supportsInterface(0x01ffc9a7): %s", got)
	}
	w, _ := uintWord("3")
	if got := callData(selTokenURI, w); got != "0xc87b56dd"+hex.EncodeToString(word(3)) {
		t.Errorf("tokenURI(3): %s", got)
	}
	if _, ok := uintWord("115792089237316195423570985008687907853269984665640564039457584007913129639936"); ok {
		t.Error("2^256 accepted")
	}
}

// Fetches to one host never exceed PerHost at once; a job finding the host
// saturated for longer than the fetch timeout is given back (busy), not
// failed.
func TestPerHostLimit(t *testing.T) {
	var cur, peak atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		defer cur.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(40 * time.Millisecond)
		fmt.Fprint(w, `{"name":"x"}`)
	}))
	defer srv.Close()
	cfg := Config{NFT: NFTConfig{PerHost: 2, Timeout: 5 * time.Second, AllowLoopback: true}}.WithDefaults().NFT
	policy := addrPolicy{allowLoopback: true}
	f := &fetcher{client: newSafeClient(policy, cfg), policy: policy, maxBytes: 1 << 10, ua: "test",
		hosts: newHostLimiter(cfg.PerHost), timeout: cfg.Timeout}
	var wg sync.WaitGroup
	var indexed atomic.Int32
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if o := f.fetch(t.Context(), srv.URL+"/x.json", ercTypeERC721); o.status == StatusIndexed {
				indexed.Add(1)
			}
		}()
	}
	wg.Wait()
	if peak.Load() != 2 || indexed.Load() != 8 {
		t.Errorf("peak concurrency %d (want 2), %d of 8 indexed", peak.Load(), indexed.Load())
	}

	h := newHostLimiter(1)
	release, err := h.acquire(t.Context(), "a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.acquire(t.Context(), "a", 10*time.Millisecond); !errors.Is(err, errHostBusy) {
		t.Errorf("saturated host: %v", err)
	}
	if r2, err := h.acquire(t.Context(), "b", 10*time.Millisecond); err != nil {
		t.Errorf("another host: %v", err)
	} else {
		r2()
	}
	release()
	if r3, err := h.acquire(t.Context(), "a", 10*time.Millisecond); err != nil {
		t.Errorf("after release: %v", err)
	} else {
		r3()
	}
	if len(h.sem) != 0 {
		t.Errorf("idle hosts kept: %d", len(h.sem))
	}
}
