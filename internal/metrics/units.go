package metrics

import (
	"fmt"
	"math/big"
	"strconv"
)

// maxUnitDigits is what a two-digit length prefix can say. A uint256 has at
// most 78 digits; a sum over token ids would need 10^21 ids at the maximum to
// pass 99.
const maxUnitDigits = 99

// UnitsKey encodes a positive token count so that text order is numeric order:
// the number of decimal digits as two digits, then the digits.
func UnitsKey(v *big.Int) (string, error) {
	if v.Sign() <= 0 {
		return "", fmt.Errorf("units %s: not positive", v)
	}
	d := v.String()
	if len(d) > maxUnitDigits {
		return "", fmt.Errorf("units: %d digits, more than %d", len(d), maxUnitDigits)
	}
	return fmt.Sprintf("%02d%s", len(d), d), nil
}

// ParseUnitsKey decodes a UnitsKey back to its decimal digits, checking its form.
func ParseUnitsKey(k string) (string, error) {
	if len(k) < 3 {
		return "", fmt.Errorf("units key %q: too short", k)
	}
	n, err := strconv.Atoi(k[:2])
	if err != nil || n != len(k)-2 || k[2] == '0' {
		return "", fmt.Errorf("units key %q: malformed", k)
	}
	for _, c := range k[2:] {
		if c < '0' || c > '9' {
			return "", fmt.Errorf("units key %q: malformed", k)
		}
	}
	return k[2:], nil
}
