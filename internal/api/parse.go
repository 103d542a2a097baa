package api

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/libevm/common"
	"github.com/btcsuite/btcd/btcutil/bech32"
)

// Parsers of identifiers in paths, query strings and bodies. Each returns an
// error whose text is fit for a client; wrap it with Invalid(param, err)
// for a 400 naming the parameter. None panics, whatever the input.

// ParseEVMAddress reads an EVM address: 40 hex digits, with or without 0x,
// in any case (checksums are not enforced, as the published API does not).
// Display it with strings.ToLower(a.Hex()).
func ParseEVMAddress(s string) (common.Address, error) {
	h := strip0x(s)
	if len(h) != 2*common.AddressLength {
		return common.Address{}, fmt.Errorf("%q is not an EVM address (0x and 40 hex digits)", truncate(s))
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return common.Address{}, fmt.Errorf("%q is not an EVM address (0x and 40 hex digits)", truncate(s))
	}
	return common.BytesToAddress(b), nil
}

// ParseHash reads a 32-byte hash (an EVM transaction or block hash): 64 hex
// digits, with or without 0x.
func ParseHash(s string) (common.Hash, error) {
	h := strip0x(s)
	if len(h) != 2*common.HashLength {
		return common.Hash{}, fmt.Errorf("%q is not a hash (0x and 64 hex digits)", truncate(s))
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return common.Hash{}, fmt.Errorf("%q is not a hash (0x and 64 hex digits)", truncate(s))
	}
	return common.BytesToHash(b), nil
}

// ParseHex reads hex bytes with or without 0x ("0x" alone is empty bytes).
func ParseHex(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("empty hex value")
	}
	h := strip0x(s)
	if len(h)%2 != 0 {
		return nil, fmt.Errorf("%q is not hex: odd number of digits", truncate(s))
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return nil, fmt.Errorf("%q is not hex", truncate(s))
	}
	return b, nil
}

func strip0x(s string) string {
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		return s[2:]
	}
	return s
}

// ParseCB58ID reads a 32-byte id in cb58 (transactions, blocks, blockchains,
// subnets, assets on the P- and X-chains), checksum included.
func ParseCB58ID(s string) (ids.ID, error) {
	// 36 bytes are at most 50 base58 digits; base58 decoding is quadratic,
	// so refuse long input before decoding.
	if s == "" || len(s) > 60 {
		return ids.Empty, fmt.Errorf("%q is not a cb58 id", truncate(s))
	}
	id, err := ids.FromString(s)
	if err != nil {
		return ids.Empty, fmt.Errorf("%q is not a cb58 id", truncate(s))
	}
	return id, nil
}

// ParseNodeID reads a node id: NodeID- and the cb58 of 20 bytes.
func ParseNodeID(s string) (ids.NodeID, error) {
	if len(s) > 64 || !strings.HasPrefix(s, ids.NodeIDPrefix) {
		return ids.EmptyNodeID, fmt.Errorf("%q is not a node id (NodeID-...)", truncate(s))
	}
	id, err := ids.NodeIDFromString(s)
	if err != nil {
		return ids.EmptyNodeID, fmt.Errorf("%q is not a node id (NodeID-...)", truncate(s))
	}
	return id, nil
}

// ParseBech32Address reads a primary-network address of the network with
// human-readable part hrp, optionally preceded by a chain prefix P-, X- or
// C- (any case). It returns the prefix ("" when absent, else upper case)
// and the 20 address bytes. Bech32m, mixed case, a checksum error or another
// network's hrp are refused.
func ParseBech32Address(hrp, s string) (string, ids.ShortID, error) {
	if len(s) > 100 {
		return "", ids.ShortEmpty, fmt.Errorf("%q is not an address", truncate(s))
	}
	chain, rest := "", s
	if len(s) > 2 && s[1] == '-' {
		chain, rest = strings.ToUpper(s[:1]), s[2:]
		if chain != "P" && chain != "X" && chain != "C" {
			return "", ids.ShortEmpty, fmt.Errorf("%q has an unknown chain prefix (want P-, X- or C-)", truncate(s))
		}
	}
	gotHRP, data, version, err := bech32.DecodeGeneric(rest)
	if err != nil || version != bech32.Version0 {
		return "", ids.ShortEmpty, fmt.Errorf("%q is not a bech32 address", truncate(s))
	}
	if gotHRP != strings.ToLower(hrp) {
		return "", ids.ShortEmpty, fmt.Errorf("%q is an address of another network (%q, this one is %q)", truncate(s), gotHRP, hrp)
	}
	b, err := bech32.ConvertBits(data, 5, 8, false)
	if err != nil || len(b) != ids.ShortIDLen {
		return "", ids.ShortEmpty, fmt.Errorf("%q is not a 20-byte address", truncate(s))
	}
	return chain, ids.ShortID(b), nil
}

// ParseDate reads a calendar date YYYY-MM-DD (years 1970 to 9999) as
// midnight UTC.
func ParseDate(s string) (time.Time, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil || len(s) != len(time.DateOnly) || t.Year() < 1970 {
		return time.Time{}, fmt.Errorf("%q is not a date YYYY-MM-DD", truncate(s))
	}
	return t, nil
}

// MaxJSONBodyBytes bounds DecodeJSONBody.
const MaxJSONBodyBytes = 256 << 10

// DecodeJSONBody decodes the request's JSON body into v, strictly: the
// Content-Type (when given) must be application/json, the body at most
// MaxJSONBodyBytes, one JSON value, valid UTF-8, with no field v does not
// declare. Every refusal is a 400 saying what is wrong.
func DecodeJSONBody(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return BadRequest(fmt.Sprintf("Content-Type must be application/json, got %q", truncate(ct)))
		}
	}
	if r.Body == nil {
		return BadRequest("a JSON request body is required")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxJSONBodyBytes+1))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return BadRequest(fmt.Sprintf("the request body exceeds %d bytes", min(tooBig.Limit, MaxJSONBodyBytes)))
	case err != nil:
		return BadRequest("the request body could not be read")
	case len(body) > MaxJSONBodyBytes:
		return BadRequest(fmt.Sprintf("the request body exceeds %d bytes", MaxJSONBodyBytes))
	}
	return DecodeJSON(body, v)
}

// DecodeJSON is DecodeJSONBody's decoding of bytes already read.
func DecodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return BadRequest("a JSON request body is required")
	}
	if !utf8.Valid(body) {
		return BadRequest("the request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return BadRequest(jsonMessage(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return BadRequest("the request body must hold exactly one JSON value")
	}
	return nil
}

func jsonMessage(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("the request body is not valid JSON (at byte %d)", syn.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the request body is truncated JSON"
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Sprintf("the request body must be %s, got %s", jsonKind(typ.Type.Kind().String()), typ.Value)
		}
		return fmt.Sprintf("field %s must be %s, got %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return "the request body is invalid: " + truncate(strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer in range"
	case "float32", "float64":
		return "a number"
	}
	return "of another type"
}

// ParseTokenID reads a uint256 token id in decimal and returns its canonical
// decimal form (no leading zeros), as the index stores ids.
func ParseTokenID(s string) (string, bool) {
	if s == "" || len(s) > 78 {
		return "", false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	v, ok := new(big.Int).SetString(s, 10)
	if !ok || v.BitLen() > 256 {
		return "", false
	}
	return v.String(), true
}
