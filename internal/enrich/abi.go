package enrich

import (
	"encoding/hex"
	"errors"
	"math/big"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Function selectors of the calls enrichment makes.
const (
	selSupportsInterface = "01ffc9a7" // supportsInterface(bytes4)
	selName              = "06fdde03" // name()
	selSymbol            = "95d89b41" // symbol()
	selDecimals          = "313ce567" // decimals()
	selTotalSupply       = "18160ddd" // totalSupply()
	selTokenURI          = "c87b56dd" // tokenURI(uint256), ERC-721 metadata
	selURI               = "0e89341c" // uri(uint256), ERC-1155 metadata URI
)

// ERC-165 interface ids.
const (
	ifaceERC165  = "01ffc9a7"
	ifaceInvalid = "ffffffff" // must be false for a compliant ERC-165 contract
	ifaceERC721  = "80ac58cd"
	ifaceERC1155 = "d9b67a26"
)

// maxTextRunes bounds a token name or symbol kept from a contract.
const maxTextRunes = 256

// callData is 0x + selector + 32-byte words.
func callData(selector string, words ...[]byte) string {
	var b strings.Builder
	b.Grow(2 + 8 + 64*len(words))
	b.WriteString("0x")
	b.WriteString(selector)
	for _, w := range words {
		b.WriteString(hex.EncodeToString(w))
	}
	return b.String()
}

// interfaceWord is a bytes4 argument, left-aligned in its word.
func interfaceWord(id string) []byte {
	w := make([]byte, 32)
	_, _ = hex.Decode(w[:4], []byte(id))
	return w
}

// uintWord is a uint256 argument from a canonical decimal; false when the
// decimal is not a uint256.
func uintWord(decimal string) ([]byte, bool) {
	v, ok := new(big.Int).SetString(decimal, 10)
	if !ok || v.Sign() < 0 || v.BitLen() > 256 {
		return nil, false
	}
	return v.FillBytes(make([]byte, 32)), true
}

var errABI = errors.New("not an ABI-encoded value")

// decodeBool reads an ABI bool: one word of value 0 or 1.
func decodeBool(b []byte) (bool, error) {
	if len(b) < 32 {
		return false, errABI
	}
	for _, c := range b[:31] {
		if c != 0 {
			return false, errABI
		}
	}
	switch b[31] {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, errABI
}

// decodeSmallUint reads a uint word whose value is at most max.
func decodeSmallUint(b []byte, max uint64) (uint64, error) {
	if len(b) < 32 {
		return 0, errABI
	}
	for _, c := range b[:24] {
		if c != 0 {
			return 0, errABI
		}
	}
	var v uint64
	for _, c := range b[24:32] {
		v = v<<8 | uint64(c)
	}
	if v > max {
		return 0, errABI
	}
	return v, nil
}

// decodeString reads an ABI-encoded dynamic string (offset, length, bytes).
// maxLen bounds the byte length accepted.
func decodeString(b []byte, maxLen int) (string, error) {
	if len(b) < 64 {
		return "", errABI
	}
	off, err := decodeSmallUint(b[:32], uint64(len(b)))
	if err != nil || off%32 != 0 || off+32 > uint64(len(b)) {
		return "", errABI
	}
	n, err := decodeSmallUint(b[off:off+32], uint64(len(b)))
	if err != nil {
		return "", errABI
	}
	start := off + 32
	if n > uint64(len(b))-start {
		return "", errABI
	}
	if int(n) > maxLen {
		return "", errTooLong
	}
	return string(b[start : start+n]), nil
}

var errTooLong = errors.New("value too long")

// decodeText reads a token name or symbol: an ABI string, or (older tokens
// such as MKR) a bytes32 with trailing zero bytes. The text must be valid
// UTF-8 without control characters other than spaces; it is trimmed and
// bounded. ok is false for garbage.
func decodeText(b []byte) (string, bool) {
	s, err := decodeString(b, 4*maxTextRunes)
	if err != nil {
		if len(b) != 32 {
			return "", false
		}
		// bytes32: text then zero padding.
		end := len(b)
		for end > 0 && b[end-1] == 0 {
			end--
		}
		if end == 0 {
			return "", false
		}
		s = string(b[:end])
	}
	return cleanText(s)
}

// cleanText validates and trims contract-supplied text.
func cleanText(s string) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	for _, r := range s {
		if r == 0 || (unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r') {
			return "", false
		}
	}
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > maxTextRunes {
		rs := []rune(s)
		s = string(rs[:maxTextRunes])
	}
	return s, true
}
