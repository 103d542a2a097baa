package api

// Fuzz targets for every parser of untrusted input. Each checks that the
// parser never panics, that refusals are client errors, and that what it
// accepts round-trips. CI runs each for a few seconds:
//
//	go test ./internal/api -run='^$' -fuzz='^FuzzParseEVMAddress$' -fuzztime=5s

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/utils/formatting/address"
)

// Seeds from the recorded network (testdata/devnet-a).
const (
	seedPAddr  = "P-custom1js9jhzvc6j53vp53h8cutnrv4lt4292t58me5h"
	seedEVM    = "0x8db97C7cEcE249c2b98bDC0226Cc4C2A57BF52FC"
	seedID     = "NhDDVSn1E1se1v39FfQVwpd74ivs3gPmvhaUX6x78uide8Z3m"
	seedNodeID = "NodeID-CrBQdH8TmrExZoD5KT2ZSaE1J3PzvrjKV"
)

func is400(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusBadRequest && len(e.Messages) > 0
}

func FuzzParseEVMAddress(f *testing.F) {
	for _, s := range []string{seedEVM, strings.ToLower(seedEVM), seedEVM[2:], "0x", "", "0x" + strings.Repeat("G", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseEVMAddress(s)
		if err != nil {
			return
		}
		if got := strings.ToLower(a.Hex()); got != "0x"+strings.ToLower(strip0x(s)) {
			t.Fatalf("%q parsed as %s", s, got)
		}
		if b, err := ParseEVMAddress(a.Hex()); err != nil || b != a {
			t.Fatalf("round trip of %s: %v", a.Hex(), err)
		}
	})
}

func FuzzParseHex(f *testing.F) {
	for _, s := range []string{"0x", "0xabCD", "abc", "0x0", "", "0X00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseHex(s)
		if err != nil {
			return
		}
		if hex.EncodeToString(b) != strings.ToLower(strip0x(s)) {
			t.Fatalf("%q parsed as %x", s, b)
		}
		if h, err := ParseHash(s); (err == nil) != (len(b) == 32) || (err == nil && !bytes.Equal(h[:], b)) {
			t.Fatalf("ParseHash(%q) disagrees with ParseHex: %v", s, err)
		}
	})
}

func FuzzParseCB58ID(f *testing.F) {
	for _, s := range []string{seedID, "11111111111111111111111111111111LpoYY", "", "0", seedID + "1", strings.Repeat("z", 60)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseCB58ID(s)
		if err != nil {
			return
		}
		back, err := ParseCB58ID(id.String())
		if err != nil || back != id {
			t.Fatalf("%q -> %s does not round-trip: %v", s, id, err)
		}
	})
}

func FuzzParseNodeID(f *testing.F) {
	for _, s := range []string{seedNodeID, "NodeID-", "NodeID-111111111111111111116DBWJs", seedNodeID[7:], ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseNodeID(s)
		if err != nil {
			return
		}
		if back, err := ParseNodeID(id.String()); err != nil || back != id || !strings.HasPrefix(s, "NodeID-") {
			t.Fatalf("%q -> %s does not round-trip: %v", s, id, err)
		}
	})
}

func FuzzParseBech32Address(f *testing.F) {
	for _, s := range []string{seedPAddr, seedPAddr[2:], "X-" + seedPAddr[2:], strings.ToUpper(seedPAddr), "Q-" + seedPAddr[2:], "P-", "-", "P-fuji1", ""} {
		f.Add("custom", s)
	}
	f.Add("fuji", seedPAddr)
	f.Fuzz(func(t *testing.T, hrp, s string) {
		chain, addr, err := ParseBech32Address(hrp, s)
		if err != nil {
			return
		}
		if chain != "" && chain != "P" && chain != "X" && chain != "C" {
			t.Fatalf("%q: chain %q", s, chain)
		}
		// Formatting the bytes back gives the input (up to case).
		formatted, ferr := address.FormatBech32(strings.ToLower(hrp), addr[:])
		bare := s
		if chain != "" {
			bare = s[2:]
		}
		if ferr != nil || formatted != strings.ToLower(bare) {
			t.Fatalf("%q -> %x formats as %q (%v)", s, addr, formatted, ferr)
		}
	})
}

func FuzzParseDate(f *testing.F) {
	for _, s := range []string{"2024-02-29", "2023-02-29", "1970-01-01", "9999-12-31", "0000-00-00", "2024-1-1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDate(s)
		if err != nil {
			return
		}
		if d.Format(time.DateOnly) != s || d.Location() != time.UTC || d.Year() < 1970 {
			t.Fatalf("%q parsed as %v", s, d)
		}
	})
}

// FuzzParams runs every Params reader, the comma lists included, on an
// arbitrary query string.
func FuzzParams(f *testing.F) {
	for _, s := range []string{"pageSize=10&addresses=a,b,,c", "pageSize=-1&flag=maybe", "addresses=" + strings.Repeat("a,", 150),
		"n=9223372036854775808", "%zz=1", "sortOrder=desc&sortOrder=asc", "addresses=%2C%2C&addresses=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := httptest.NewRequest("GET", "/x", nil)
		r.URL.RawQuery = raw
		p := NewParams(r)
		if ps := p.PageSize(10, 1, 100); ps < 1 || ps > 100 {
			t.Fatalf("page size %d", ps)
		}
		if v, ok := p.OptInt("n", 0); ok && v < 0 {
			t.Fatalf("OptInt %d", v)
		}
		p.Bool("flag", true)
		if e := p.Enum("sortOrder", "asc", "asc", "desc"); e != "asc" && e != "desc" {
			t.Fatalf("enum %q", e)
		}
		list := p.List("addresses")
		if len(list) > MaxListItems {
			t.Fatalf("%d list items", len(list))
		}
		for _, it := range list {
			if it == "" || strings.Contains(it, ",") || strings.TrimSpace(it) != it {
				t.Fatalf("list item %q", it)
			}
		}
		if err := p.Err(); err != nil && !is400(err) {
			t.Fatalf("params error %v", err)
		}
		FilterKey(r.URL.Query())
	})
}

func FuzzPagerDecode(f *testing.F) {
	p := NewPager([]byte("fuzz key"))
	q := url.Values{"addresses": {"a,b"}}
	fk := FilterKey(q)
	good := p.Encode("utxos", fk, map[string]any{"h": 5, "id": "x"})
	for _, s := range []string{good, good[:len(good)-3], "", ".", "a.b", strings.Repeat("A", 3000), "eyJyIjoidXR4b3MifQ.AAAA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		var cursor map[string]any
		err := p.Decode(tok, "utxos", fk, &cursor)
		if err != nil {
			if !is400(err) {
				t.Fatalf("%q: %v is not a 400", tok, err)
			}
			return
		}
		// Only tokens this pager signed decode: the payload must be the signed one.
		body, _, _ := strings.Cut(tok, ".")
		goodBody, _, _ := strings.Cut(good, ".")
		b1, _ := base64.RawURLEncoding.DecodeString(body)
		b2, _ := base64.RawURLEncoding.DecodeString(goodBody)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("forged token %q accepted", tok)
		}
	})
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"type":"TRANSACTION_EXPORT_EVM","options":{"addresses":["0x1"],"includeChains":["43114"]}}`,
		`{}`, `[]`, `null`, `{"type":1}`, `{"x":1}`, `{"limit":1e99}`, "{\"type\":\"\xff\"}", `{"a":` + strings.Repeat("[", 200), `{"type":"a"}{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v exportBody
		if err := DecodeJSON(body, &v); err != nil && !is400(err) {
			t.Fatalf("%q: %v is not a 400", body, err)
		}
		r := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if err := DecodeJSONBody(r, &v); err != nil && !is400(err) {
			t.Fatalf("%q: %v is not a 400", body, err)
		}
	})
}

func FuzzClientIP(f *testing.F) {
	for _, s := range [][2]string{{"10.0.0.1:80", "1.2.3.4, 10.0.0.2"}, {"[fd00::1]:1", "garbage"}, {"10.0.0.1:80", strings.Repeat("10.0.0.3,", 50)}, {"x", ""}} {
		f.Add(s[0], s[1])
	}
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	f.Fuzz(func(t *testing.T, remote, xff string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		r.Header.Set("X-Forwarded-For", xff)
		a := ClientIP(r, trusted)
		peer := parseHost(remote)
		if !peer.IsValid() || !isTrusted(peer, trusted) {
			if a != peer {
				t.Fatalf("untrusted peer %q: got %v", remote, a)
			}
			return
		}
		fromHop := a == peer
		for _, h := range strings.Split(xff, ",") {
			fromHop = fromHop || parseHost(strings.TrimSpace(h)) == a
		}
		if !a.IsValid() || !fromHop {
			t.Fatalf("%q via %q: got %v", xff, remote, a)
		}
		ipSubject(a)
	})
}
