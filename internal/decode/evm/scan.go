package evm

import (
	"encoding/hex"
	"math/big"
	"strconv"
)

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
