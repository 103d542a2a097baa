// Package jsonscan is a small pull parser for the JSON of Ethereum JSON-RPC
// answers (blocks, receipts, batch responses) and the 0x-hex values they
// carry. encoding/json would cost most of the ingest budget (reflection, a
// string per field, and each json.RawMessage layer another full pass); this
// walks the bytes once, hands out sub-slices of the input, validates what it
// skips, and never converts numbers through float64.
//
// Hand-written rather than a library because the ingest path needs both
// zero-copy raw sub-slices (stored verbatim) and a single validating pass;
// the general-purpose fast parsers build a value tree first.
package jsonscan

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// MaxDepth bounds the nesting Skip accepts: hostile input cannot exhaust the
// stack, and no Ethereum JSON-RPC answer nests this deep.
const MaxDepth = 128

// ErrEOF is an answer cut short.
var ErrEOF = errors.New("unexpected end of JSON")

// Scanner reads one JSON document from Buf, starting at Pos.
type Scanner struct {
	buf []byte
	pos int
}

// New returns a Scanner over b.
func New(b []byte) *Scanner { return &Scanner{buf: b} }

// Errorf is an error at the current offset.
func (s *Scanner) Errorf(format string, args ...any) error {
	return fmt.Errorf("json at offset %d: %s", s.pos, fmt.Sprintf(format, args...))
}

func (s *Scanner) ws() {
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// End checks that nothing but white space follows.
func (s *Scanner) End() error {
	if s.ws(); s.pos != len(s.buf) {
		return s.Errorf("trailing data")
	}
	return nil
}

// Peek returns the next non-space byte without consuming it.
func (s *Scanner) Peek() (byte, error) {
	s.ws()
	if s.pos >= len(s.buf) {
		return 0, ErrEOF
	}
	return s.buf[s.pos], nil
}

// Null consumes a JSON null if one comes next.
func (s *Scanner) Null() bool {
	s.ws()
	if len(s.buf)-s.pos >= 4 && string(s.buf[s.pos:s.pos+4]) == "null" {
		s.pos += 4
		return true
	}
	return false
}

// Str reads a string and returns its contents. Without escapes the result
// aliases the input; with escapes it is decoded into a new slice.
func (s *Scanner) Str() ([]byte, error) {
	c, err := s.Peek()
	if err != nil {
		return nil, err
	}
	if c != '"' {
		return nil, s.Errorf("want string, got %q", c)
	}
	start := s.pos + 1
	escaped := false
	for i := start; i < len(s.buf); i++ {
		i = plainEnd(s.buf, i)
		if i == len(s.buf) {
			break
		}
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
				s.pos = start - 1
				return nil, s.Errorf("bad string: %v", err)
			}
			return []byte(out), nil
		case c < 0x20:
			s.pos = i
			return nil, s.Errorf("control character in string")
		}
	}
	return nil, ErrEOF
}

// Object walks an object; fn gets each key and must consume its value.
func (s *Scanner) Object(fn func(key []byte) error) error {
	more, err := s.open('{', '}')
	for err == nil && more {
		var key []byte
		if key, err = s.Str(); err != nil {
			return err
		}
		if c, err := s.Peek(); err != nil {
			return err
		} else if c != ':' {
			return s.Errorf("want ':' after key %q", key)
		}
		s.pos++
		if err = fn(key); err == nil {
			more, err = s.next('}')
		}
	}
	return err
}

// Array walks an array; fn is called once per element and must consume it.
func (s *Scanner) Array(fn func(i int) error) error {
	more, err := s.open('[', ']')
	for i := 0; err == nil && more; i++ {
		if err = fn(i); err == nil {
			more, err = s.next(']')
		}
	}
	return err
}

// open consumes the opening bracket of an object or array, and its closing
// one too when it is empty (more is false then).
func (s *Scanner) open(open, close byte) (more bool, err error) {
	c, err := s.Peek()
	if err != nil {
		return false, err
	}
	if c != open {
		kind := "object"
		if open == '[' {
			kind = "array"
		}
		return false, s.Errorf("want %s, got %q", kind, c)
	}
	s.pos++
	if c, err := s.Peek(); err != nil {
		return false, err
	} else if c == close {
		s.pos++
		return false, nil
	}
	return true, nil
}

// next consumes what follows a member or element: ',' (more is true) or the
// closing bracket.
func (s *Scanner) next(close byte) (more bool, err error) {
	c, err := s.Peek()
	if err != nil {
		return false, err
	}
	switch c {
	case ',':
		s.pos++
		return true, nil
	case close:
		s.pos++
		return false, nil
	}
	return false, s.Errorf("want ',' or '%c', got %q", close, c)
}

// Raw consumes any value, validating it, and returns its bytes (aliasing
// the input).
func (s *Scanner) Raw() ([]byte, error) {
	s.ws()
	start := s.pos
	if err := s.Skip(); err != nil {
		return nil, err
	}
	return s.buf[start:s.pos], nil
}

// Skip consumes any value and checks that it is valid JSON (strings' escapes
// included; nesting at most MaxDepth).
func (s *Scanner) Skip() error { return s.skip(0) }

func (s *Scanner) skip(depth int) error {
	c, err := s.Peek()
	if err != nil {
		return err
	}
	switch c {
	case '"':
		return s.skipString()
	case '{', '[':
		if depth >= MaxDepth {
			return s.Errorf("nested deeper than %d", MaxDepth)
		}
		if c == '[' {
			return s.Array(func(int) error { return s.skip(depth + 1) })
		}
		return s.Object(func([]byte) error { return s.skip(depth + 1) })
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		return s.number()
	}
}

func (s *Scanner) literal(want string) error {
	if len(s.buf)-s.pos < len(want) || string(s.buf[s.pos:s.pos+len(want)]) != want {
		return s.Errorf("want %s", want)
	}
	s.pos += len(want)
	return nil
}

// skipString is Str without decoding: escapes are checked, not applied.
func (s *Scanner) skipString() error {
	for i := s.pos + 1; i < len(s.buf); i++ {
		i = plainEnd(s.buf, i)
		if i == len(s.buf) {
			break
		}
		switch c := s.buf[i]; {
		case c == '"':
			s.pos = i + 1
			return nil
		case c < 0x20:
			s.pos = i
			return s.Errorf("control character in string")
		case c == '\\':
			if i+1 >= len(s.buf) {
				return ErrEOF
			}
			i++
			switch s.buf[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(s.buf) {
					return ErrEOF
				}
				for _, h := range s.buf[i+1 : i+5] {
					if _, ok := unhexDigit(h); !ok {
						s.pos = i
						return s.Errorf("bad \\u escape")
					}
				}
				i += 4
			default:
				s.pos = i
				return s.Errorf("bad escape %q", s.buf[i])
			}
		}
	}
	return ErrEOF
}

// plainEnd returns the index of the first byte of b at or after i that ends
// a string's plain run: a quote, a backslash or a control character (len(b)
// if none). It tests eight bytes at a time (the word-at-a-time zero-byte
// test of Hacker's Delight, 6-1): the strings of a block are long 0x-hex
// runs (hashes, bloom filters, calldata), whose byte-by-byte scan was most
// of the parse.
func plainEnd(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, bs := x^(ones*'"'), x^(ones*'\\')
		// A byte is flagged iff it is '"', '\\' or below 0x20: each test is
		// exact for "some byte of the word matches" (a borrow only reaches
		// the bytes above a true match).
		if ((q-ones)&^q|(bs-ones)&^bs|(x-ones*0x20)&^x)&highs != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

// number consumes a number in JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *Scanner) number() error {
	b, i := s.buf, s.pos
	digits := func() bool {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return s.Errorf("want value, got %q", b[s.pos])
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			s.pos = i
			return s.Errorf("bad number fraction")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			s.pos = i
			return s.Errorf("bad number exponent")
		}
	}
	s.pos = i
	return nil
}

// Number reads a JSON number token and returns its bytes.
func (s *Scanner) Number() ([]byte, error) {
	if _, err := s.Peek(); err != nil {
		return nil, err
	}
	start := s.pos
	if err := s.number(); err != nil {
		return nil, err
	}
	return s.buf[start:s.pos], nil
}
