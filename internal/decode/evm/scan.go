package evm

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"

	"github.com/ava-labs/libevm/common"
)

// scanner is a small pull parser for the JSON of eth_getBlockByNumber and
// eth_getBlockReceipts. encoding/json would cost most of the ingest budget
// (reflection, a string per field); this walks the bytes once, hands out
// sub-slices of the input, and never converts numbers through float64.
type scanner struct {
	buf []byte
	pos int
}

var errEOF = errors.New("unexpected end of JSON")

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("json at offset %d: %s", s.pos, fmt.Sprintf(format, args...))
}

func (s *scanner) ws() {
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte without consuming it.
func (s *scanner) peek() (byte, error) {
	s.ws()
	if s.pos >= len(s.buf) {
		return 0, errEOF
	}
	return s.buf[s.pos], nil
}

// null consumes a JSON null if one comes next.
func (s *scanner) null() bool {
	s.ws()
	if len(s.buf)-s.pos >= 4 && string(s.buf[s.pos:s.pos+4]) == "null" {
		s.pos += 4
		return true
	}
	return false
}

// str reads a string and returns its contents. Without escapes the result
// aliases the input; with escapes it is decoded into a new slice.
func (s *scanner) str() ([]byte, error) {
	c, err := s.peek()
	if err != nil {
		return nil, err
	}
	if c != '"' {
		return nil, s.errorf("want string, got %q", c)
	}
	start := s.pos + 1
	escaped := false
	for i := start; i < len(s.buf); i++ {
		switch c := s.buf[i]; {
		case c == '\\':
			escaped = true
			i++
		case c == '"':
			s.pos = i + 1
			if !escaped {
				return s.buf[start:i], nil
			}
			var out string
			if err := json.Unmarshal(s.buf[start-1:i+1], &out); err != nil {
				return nil, s.errorf("bad string: %v", err)
			}
			return []byte(out), nil
		case c < 0x20:
			return nil, s.errorf("control character in string")
		}
	}
	return nil, errEOF
}

// object walks an object; fn gets each key and must consume its value.
func (s *scanner) object(fn func(key []byte) error) error {
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c != '{' {
		return s.errorf("want object, got %q", c)
	}
	s.pos++
	if c, err := s.peek(); err != nil {
		return err
	} else if c == '}' {
		s.pos++
		return nil
	}
	for {
		key, err := s.str()
		if err != nil {
			return err
		}
		if c, err := s.peek(); err != nil {
			return err
		} else if c != ':' {
			return s.errorf("want ':' after key %q", key)
		}
		s.pos++
		if err := fn(key); err != nil {
			return err
		}
		c, err := s.peek()
		if err != nil {
			return err
		}
		s.pos++
		switch c {
		case ',':
		case '}':
			return nil
		default:
			s.pos--
			return s.errorf("want ',' or '}', got %q", c)
		}
	}
}

// array walks an array; fn is called once per element and must consume it.
func (s *scanner) array(fn func(i int) error) error {
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c != '[' {
		return s.errorf("want array, got %q", c)
	}
	s.pos++
	if c, err := s.peek(); err != nil {
		return err
	} else if c == ']' {
		s.pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := fn(i); err != nil {
			return err
		}
		c, err := s.peek()
		if err != nil {
			return err
		}
		s.pos++
		switch c {
		case ',':
		case ']':
			return nil
		default:
			s.pos--
			return s.errorf("want ',' or ']', got %q", c)
		}
	}
}

// skip consumes any value. Nested values are skipped by bracket counting
// (iteratively, so hostile nesting cannot exhaust the stack).
func (s *scanner) skip() error {
	c, err := s.peek()
	if err != nil {
		return err
	}
	switch {
	case c == '"':
		_, err := s.str()
		return err
	case c == '{' || c == '[':
		depth := 0
		for s.pos < len(s.buf) {
			switch s.buf[s.pos] {
			case '"':
				if _, err := s.str(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.pos++
					return nil
				}
			}
			s.pos++
		}
		return errEOF
	default:
		start := s.pos
		for s.pos < len(s.buf) {
			c := s.buf[s.pos]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			s.pos++
		}
		if s.pos == start {
			return s.errorf("want value, got %q", c)
		}
		return nil
	}
}

// ---- hex helpers -----------------------------------------------------------

func unhexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func trim0x(b []byte) ([]byte, bool) {
	if len(b) >= 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		return b[2:], true
	}
	return b, false
}

// quantityU64 parses a 0x-hex quantity that must fit in 63 bits (heights, gas,
// nonces, indexes: stored as BIGINT).
func quantityU64(field string, b []byte) (uint64, error) {
	h, ok := trim0x(b)
	if !ok || len(h) == 0 {
		return 0, fmt.Errorf("%s: %q is not a 0x quantity", field, b)
	}
	for len(h) > 1 && h[0] == '0' {
		h = h[1:]
	}
	if len(h) > 16 {
		return 0, fmt.Errorf("%s: %q exceeds 64 bits", field, b)
	}
	var v uint64
	for _, c := range h {
		d, ok := unhexDigit(c)
		if !ok {
			return 0, fmt.Errorf("%s: %q is not hex", field, b)
		}
		v = v<<4 | uint64(d)
	}
	if v > 1<<63-1 {
		return 0, fmt.Errorf("%s: %q exceeds 63 bits", field, b)
	}
	return v, nil
}

// quantityBig parses a 0x-hex quantity of at most 256 bits into dst.
func quantityBig(field string, b []byte, dst *big.Int) error {
	h, ok := trim0x(b)
	if !ok || len(h) == 0 {
		return fmt.Errorf("%s: %q is not a 0x quantity", field, b)
	}
	for len(h) > 1 && h[0] == '0' {
		h = h[1:]
	}
	if len(h) > 64 {
		return fmt.Errorf("%s: %q exceeds 256 bits", field, b)
	}
	if len(h) <= 16 {
		var v uint64
		for _, c := range h {
			d, ok := unhexDigit(c)
			if !ok {
				return fmt.Errorf("%s: %q is not hex", field, b)
			}
			v = v<<4 | uint64(d)
		}
		dst.SetUint64(v)
		return nil
	}
	var word [32]byte
	n := (len(h) + 1) / 2
	out := word[32-n:]
	odd := len(h) % 2
	for i := 0; i < len(h); i++ {
		d, ok := unhexDigit(h[i])
		if !ok {
			return fmt.Errorf("%s: %q is not hex", field, b)
		}
		j := (i + odd) / 2
		if (i+odd)%2 == 0 {
			out[j] = d << 4
		} else {
			out[j] |= d
		}
	}
	dst.SetBytes(out)
	return nil
}

// fixedHex decodes 0x + exactly 2*len(dst) hex digits into dst.
func fixedHex(field string, b []byte, dst []byte) error {
	h, ok := trim0x(b)
	if !ok || len(h) != 2*len(dst) {
		return fmt.Errorf("%s: %q is not 0x + %d hex digits", field, b, 2*len(dst))
	}
	if _, err := hex.Decode(dst, h); err != nil {
		return fmt.Errorf("%s: %q: %w", field, b, err)
	}
	return nil
}

func parseAddress(field string, b []byte) (common.Address, error) {
	var a common.Address
	err := fixedHex(field, b, a[:])
	return a, err
}

func parseHash(field string, b []byte) (common.Hash, error) {
	var h common.Hash
	err := fixedHex(field, b, h[:])
	return h, err
}

// hexBytes decodes 0x-hex data, appending to dst[:0].
func hexBytes(field string, b []byte, dst []byte) ([]byte, error) {
	h, ok := trim0x(b)
	if !ok || len(h)%2 != 0 {
		return dst[:0], fmt.Errorf("%s: %q is not 0x-hex bytes", field, abbrev(b))
	}
	n := len(h) / 2
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	if _, err := hex.Decode(dst, h); err != nil {
		return dst[:0], fmt.Errorf("%s: %w", field, err)
	}
	return dst, nil
}

func abbrev(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// hexString returns 0x + lowercase hex of b.
func hexString(b []byte) string {
	out := make([]byte, 2+2*len(b))
	out[0], out[1] = '0', 'x'
	hex.Encode(out[2:], b)
	return string(out)
}

// decimal renders a non-negative or negative big integer in base 10, with a
// fast path for values that fit in a uint64.
func decimal(v *big.Int) string {
	if v.IsUint64() {
		return strconv.FormatUint(v.Uint64(), 10)
	}
	return v.String()
}
