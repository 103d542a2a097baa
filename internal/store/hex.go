package store

import (
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"strings"
)

// EVM addresses and hashes are stored as their bytes (BLOB on SQLite, BYTEA on
// PostgreSQL; migration 0020): 20 or 32 bytes instead of 42 or 66 characters
// of 0x-hex text make every key and index entry of the EVM tables smaller, and
// ingestion 10-15% faster (docs/benchmarks.md). The empty string (no recipient,
// no operator, ...) is the empty byte string. Queries bind Hex and scan with
// ScanHex; the API's strings stay 0x-lowercase hex.

// Hex is a 0x-prefixed hex string (any case) bound as its bytes.
type Hex string

// Value decodes h; a string that is not 0x-hex is an error (callers bind
// validated addresses and hashes).
func (h Hex) Value() (driver.Value, error) { return HexBytes(string(h)) }

// HexBytes is the stored form of a 0x-hex string ("" is empty, not NULL).
func HexBytes(s string) ([]byte, error) {
	if s == "" {
		return []byte{}, nil
	}
	if len(s) < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return nil, fmt.Errorf("store: %q is not 0x-hex", abbreviate(s))
	}
	b, err := hex.DecodeString(s[2:])
	if err != nil {
		return nil, fmt.Errorf("store: %q is not 0x-hex: %w", abbreviate(s), err)
	}
	return b, nil
}

// HexString is the 0x-lowercase hex of stored bytes ("" for none).
func HexString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	// One allocation (the Builder's buffer becomes the string): every
	// address and hash the API returns passes here.
	var out strings.Builder
	out.Grow(2 + 2*len(b))
	out.WriteString("0x")
	var buf [64]byte
	for len(b) > 0 {
		n := hex.Encode(buf[:], b[:min(len(b), len(buf)/2)])
		out.Write(buf[:n])
		b = b[n/2:]
	}
	return out.String()
}

// ScanHex scans a stored address or hash into dst as 0x-lowercase hex; NULL
// (an outer join's missing row) is "".
func ScanHex(dst *string) sql.Scanner { return hexScanner{dst} }

type hexScanner struct{ dst *string }

func (s hexScanner) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*s.dst = ""
	case []byte:
		*s.dst = HexString(v)
	case string:
		// A '' literal beside stored bytes (a UNION's other branch).
		if v != "" {
			return fmt.Errorf("store: scan text %q as stored hex: want bytes", abbreviate(v))
		}
		*s.dst = ""
	default:
		return fmt.Errorf("store: scan %T as stored hex: want bytes", src)
	}
	return nil
}

// HexExpr is SQL for the 0x-lowercase hex text of the stored bytes of col:
// to join a table that keys addresses by text (enrichment, metrics) with an
// EVM table.
func (d Dialect) HexExpr(col string) string {
	if d == Postgres {
		return "('0x' || encode(" + col + ", 'hex'))"
	}
	return "('0x' || lower(hex(" + col + ")))"
}
