package jsonscan

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
)

// valid is what Skip+End accept: exactly encoding/json's grammar.
func valid(b []byte) bool {
	s := New(b)
	return s.Skip() == nil && s.End() == nil
}

func TestSkipAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, ` [1, -2.5e+3, 0, "a\"b\\u00e9\n", true, false, null, {"k": [ {} ]}] `,
		`{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":}`, `[01]`, `[-]`, `[1.]`, `[1e]`, `[.5]`, `["\x"]`, `["\u12g4"]`,
		`["` + "\x01" + `"]`, `[tru]`, `nul`, `"open`, `[1 2]`, `{"a":1}{}`, `{"a":1} x`, ``, `  `, `[`, `]`,
		`{1:2}`, `[1,2,3]]`, `-0`, `-01`, `1E5`, `"\/"`,
	} {
		if got, want := valid([]byte(in)), json.Valid([]byte(in)); got != want {
			t.Errorf("%q: jsonscan says valid=%v, encoding/json %v", in, got, want)
		}
	}
}

func TestSkipDepthLimit(t *testing.T) {
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	deep := "[" + ok + "]"
	if !valid([]byte(ok)) {
		t.Errorf("depth %d rejected", MaxDepth)
	}
	if valid([]byte(deep)) {
		t.Errorf("depth %d accepted", MaxDepth+1)
	}
}

func TestRawAndStr(t *testing.T) {
	s := New([]byte(` {"a": [1, {"b": "x"}], "c": "q\u0041"} `))
	var raw, str []byte
	err := s.Object(func(key []byte) error {
		var err error
		switch string(key) {
		case "a":
			raw, err = s.Raw()
		case "c":
			str, err = s.Str()
		}
		return err
	})
	if err != nil || s.End() != nil {
		t.Fatal(err)
	}
	if string(raw) != `[1, {"b": "x"}]` || string(str) != "qA" {
		t.Fatalf("raw %q str %q", raw, str)
	}
}

func TestHex(t *testing.T) {
	tests := []struct {
		in  string
		u64 uint64
		okU bool
		big string
		okB bool
	}{
		{"0x0", 0, true, "0", true},
		{"0x00ff", 255, true, "255", true},
		{"0x7fffffffffffffff", 1<<63 - 1, true, "9223372036854775807", true},
		{"0x8000000000000000", 0, false, "9223372036854775808", true},
		{"0x" + strings.Repeat("f", 64), 0, false, new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1)).String(), true},
		{"0x1" + strings.Repeat("0", 64), 0, false, "", false},
		{"0x", 0, false, "", false},
		{"12", 0, false, "", false},
		{"0xg", 0, false, "", false},
	}
	for _, tt := range tests {
		u, err := Uint64("f", []byte(tt.in))
		if (err == nil) != tt.okU || (tt.okU && u != tt.u64) {
			t.Errorf("Uint64(%q) = %d, %v", tt.in, u, err)
		}
		var b big.Int
		err = Big("f", []byte(tt.in), &b)
		if (err == nil) != tt.okB || (tt.okB && b.String() != tt.big) {
			t.Errorf("Big(%q) = %s, %v", tt.in, &b, err)
		}
	}
	if _, err := Hash("h", []byte("0x"+strings.Repeat("ab", 32))); err != nil {
		t.Error(err)
	}
	if _, err := Address("a", []byte("0x"+strings.Repeat("ab", 19))); err == nil {
		t.Error("19-byte address accepted")
	}
	if b, err := Bytes("d", []byte("0x0102"), nil); err != nil || !bytes.Equal(b, []byte{1, 2}) {
		t.Errorf("Bytes = %x, %v", b, err)
	}
	if _, err := Bytes("d", []byte("0x012"), nil); err == nil {
		t.Error("odd hex accepted")
	}
}

func FuzzSkip(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"\u00e9"`, `-1.5e3`, `[01]`, `{"a":1,}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) > MaxDepth {
			return // deeper than Skip accepts; encoding/json allows 10000
		}
		if got, want := valid(b), json.Valid(b); got != want {
			t.Fatalf("%q: jsonscan valid=%v, encoding/json %v", b, got, want)
		}
	})
}

// TestPlainEnd puts each byte that ends a string's plain run at every
// offset of a hex run, across the eight-byte words plainEnd tests at once,
// and compares with a byte-by-byte search.
func TestPlainEnd(t *testing.T) {
	ref := func(b []byte, i int) int {
		if j := bytes.IndexFunc(b[i:], func(r rune) bool { return r == '"' || r == '\\' || r < 0x20 }); j >= 0 {
			return i + j
		}
		return len(b)
	}
	for _, end := range []byte{'"', '\\', 0x00, 0x1f, '\n'} {
		for n := 0; n <= 40; n++ {
			for at := 0; at <= n; at++ {
				b := []byte(strings.Repeat("0123456789abcdef x~\x7f\xff !", 2)[:n])
				if at < n {
					b[at] = end
				}
				for from := 0; from <= min(n, 9); from++ {
					if got, want := plainEnd(b, from), ref(b, from); got != want {
						t.Fatalf("%q from %d: %d, want %d", b, from, got, want)
					}
				}
			}
		}
	}
}
