package jsonscan

import (
	"encoding/hex"
	"fmt"
	"math/big"

	"github.com/ava-labs/libevm/common"
)

// The 0x-hex encodings of Ethereum JSON-RPC: quantities (no leading zeros
// required) and fixed-size or variable data. field names the value in errors.

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

// Trim0x strips a 0x or 0X prefix and says whether there was one.
func Trim0x(b []byte) ([]byte, bool) {
	if len(b) >= 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		return b[2:], true
	}
	return b, false
}

// IsHex reports whether h is hex digits only.
func IsHex(h []byte) bool {
	for _, c := range h {
		if _, ok := unhexDigit(c); !ok {
			return false
		}
	}
	return true
}

// Uint64 parses a 0x-hex quantity that must fit in 63 bits (heights, gas,
// nonces, indexes: stored as BIGINT).
func Uint64(field string, b []byte) (uint64, error) {
	h, ok := Trim0x(b)
	if !ok || len(h) == 0 {
		return 0, fmt.Errorf("%s: %q is not a 0x quantity", field, abbrev(b))
	}
	for len(h) > 1 && h[0] == '0' {
		h = h[1:]
	}
	if len(h) > 16 {
		return 0, fmt.Errorf("%s: %q exceeds 64 bits", field, abbrev(b))
	}
	var v uint64
	for _, c := range h {
		d, ok := unhexDigit(c)
		if !ok {
			return 0, fmt.Errorf("%s: %q is not hex", field, abbrev(b))
		}
		v = v<<4 | uint64(d)
	}
	if v > 1<<63-1 {
		return 0, fmt.Errorf("%s: %q exceeds 63 bits", field, b)
	}
	return v, nil
}

// Big parses a 0x-hex quantity of at most 256 bits into dst.
func Big(field string, b []byte, dst *big.Int) error {
	h, ok := Trim0x(b)
	if !ok || len(h) == 0 {
		return fmt.Errorf("%s: %q is not a 0x quantity", field, abbrev(b))
	}
	for len(h) > 1 && h[0] == '0' {
		h = h[1:]
	}
	if len(h) > 64 {
		return fmt.Errorf("%s: %q exceeds 256 bits", field, abbrev(b))
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

// FixedHex decodes 0x + exactly 2*len(dst) hex digits into dst.
func FixedHex(field string, b []byte, dst []byte) error {
	h, ok := Trim0x(b)
	if !ok || len(h) != 2*len(dst) {
		return fmt.Errorf("%s: %q is not 0x + %d hex digits", field, abbrev(b), 2*len(dst))
	}
	if _, err := hex.Decode(dst, h); err != nil {
		return fmt.Errorf("%s: %q: %w", field, b, err)
	}
	return nil
}

// Address decodes a 20-byte 0x-hex address.
func Address(field string, b []byte) (common.Address, error) {
	var a common.Address
	err := FixedHex(field, b, a[:])
	return a, err
}

// Hash decodes a 32-byte 0x-hex hash.
func Hash(field string, b []byte) (common.Hash, error) {
	var h common.Hash
	err := FixedHex(field, b, h[:])
	return h, err
}

// Bytes decodes 0x-hex data, appending to dst[:0].
func Bytes(field string, b []byte, dst []byte) ([]byte, error) {
	h, ok := Trim0x(b)
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

// abbrev shortens b for an error message.
func abbrev(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}
