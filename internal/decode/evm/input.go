package evm

import (
	"fmt"

	"github.com/permafrost-dev/permafrost/internal/jsonscan"
)

// TxInput returns the input (0x-lowercase hex) of the transaction at index
// of a stored EVM block body ({"block":..., "receipts":[...]}, the form
// raw_blocks keeps). The index keeps only the input's selector and size per
// transaction; the full input is read back from the block when one
// transaction is shown.
func TxInput(raw []byte, index int) (string, error) {
	s := jsonscan.New(raw)
	var input []byte
	found := false
	err := s.Object(func(key []byte) error {
		if string(key) != "block" {
			return s.Skip()
		}
		return s.Object(func(key []byte) error {
			if string(key) != "transactions" {
				return s.Skip()
			}
			return s.Array(func(i int) error {
				if i != index {
					return s.Skip()
				}
				found = true
				return s.Object(func(key []byte) error {
					if string(key) != "input" {
						return s.Skip()
					}
					v, err := s.Str()
					if err != nil {
						return err
					}
					h, ok := jsonscan.Trim0x(v)
					if !ok || len(h)%2 != 0 || !jsonscan.IsHex(h) {
						return fmt.Errorf("input: not 0x-hex bytes")
					}
					input = append([]byte("0x"), lowerHex(h)...)
					return nil
				})
			})
		})
	})
	if err != nil {
		return "", fmt.Errorf("evm block: %w", err)
	}
	if !found {
		return "", fmt.Errorf("evm block: no transaction %d", index)
	}
	if input == nil {
		return "0x", nil
	}
	return string(input), nil
}
