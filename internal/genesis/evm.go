package genesis

import (
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/ava-labs/libevm/common"
)

// EVM is what the indexer needs of an EVM chain's genesis (coreth's C-chain
// genesis, or a subnet-evm L1's: the genesis bytes of its CreateChainTx).
type EVM struct {
	ChainID uint64
	Alloc   map[common.Address]*big.Int
	// Precompiles lists the subnet-evm precompile configs the genesis enables
	// (e.g. contractNativeMinterConfig, rewardManagerConfig), sorted.
	Precompiles []string
}

// precompileConfigs are subnet-evm's precompile config keys in a chain config.
var precompileConfigs = map[string]bool{
	"contractDeployerAllowListConfig": true, "contractNativeMinterConfig": true, "txAllowListConfig": true,
	"feeManagerConfig": true, "rewardManagerConfig": true, "warpConfig": true,
}

// ParseEVM reads an EVM genesis JSON: config.chainId, the alloc balances
// (hex or decimal) and the precompiles its config enables.
func ParseEVM(b []byte) (*EVM, error) {
	var raw struct {
		Config map[string]json.RawMessage `json:"config"`
		Alloc  CChainAlloc                `json:"alloc"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("genesis: EVM genesis JSON: %w", err)
	}
	var id json.Number
	if err := json.Unmarshal(raw.Config["chainId"], &id); err != nil {
		return nil, fmt.Errorf("genesis: EVM genesis: config.chainId: %w", err)
	}
	chainID, ok := new(big.Int).SetString(id.String(), 10)
	if !ok || chainID.Sign() <= 0 || !chainID.IsUint64() {
		return nil, fmt.Errorf("genesis: EVM genesis: config.chainId %q", id)
	}
	g := &EVM{ChainID: chainID.Uint64(), Alloc: make(map[common.Address]*big.Int, len(raw.Alloc))}
	for addr, a := range raw.Alloc {
		if !common.IsHexAddress(addr) {
			return nil, fmt.Errorf("genesis: EVM genesis: alloc address %q", addr)
		}
		v, ok := parseBig(a.Balance)
		if !ok || v.Sign() < 0 {
			return nil, fmt.Errorf("genesis: EVM genesis: balance of %s: %q", addr, a.Balance)
		}
		g.Alloc[common.HexToAddress(addr)] = v
	}
	for k, v := range raw.Config {
		if precompileConfigs[k] && string(v) != "null" {
			g.Precompiles = append(g.Precompiles, k)
		}
	}
	sort.Strings(g.Precompiles)
	return g, nil
}

func parseBig(s string) (*big.Int, bool) {
	if s == "" {
		return new(big.Int), true
	}
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		return new(big.Int).SetString(s[2:], 16)
	}
	return new(big.Int).SetString(s, 10)
}
