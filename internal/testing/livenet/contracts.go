package livenet

import (
	"embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/ava-labs/libevm/accounts/abi"
	"github.com/ava-labs/libevm/common"
)

// contracts.json is compiled from contracts/*.sol by contracts/compile.js
// (solc-js 0.8.24, OpenZeppelin 5.0.2, EVM shanghai) at development time, so
// the tests need no Solidity compiler. The precompile ABIs are copied from
// subnet-evm v1.14.2 (precompile/...): importing subnet-evm into this test
// binary would register its libevm extras next to coreth's.
//
//go:embed contracts/contracts.json contracts/precompiles/*.abi
var contractFS embed.FS

// Contract is a compiled contract: ABI and creation bytecode.
type Contract struct {
	Name     string
	ABI      abi.ABI
	Bytecode []byte
}

// DeployData is the creation code followed by the ABI-encoded constructor args.
func (c *Contract) DeployData(args ...any) ([]byte, error) {
	packed, err := c.ABI.Pack("", args...)
	if err != nil {
		return nil, fmt.Errorf("%s constructor: %w", c.Name, err)
	}
	return append(append([]byte(nil), c.Bytecode...), packed...), nil
}

// Call packs a method call (panics on a bad method or args: a programming
// error). Overloads (which the abi package names m, m0, m1, ...) are told
// apart by their argument count.
func (c *Contract) Call(method string, args ...any) []byte {
	for _, name := range []string{method, method + "0", method + "1"} {
		if m, ok := c.ABI.Methods[name]; ok && len(m.Inputs) == len(args) {
			method = name
			break
		}
	}
	b, err := c.ABI.Pack(method, args...)
	if err != nil {
		panic(fmt.Sprintf("livenet: %s.%s: %v", c.Name, method, err))
	}
	return b
}

var (
	contractsOnce sync.Once
	contractsMap  map[string]*Contract
	contractsErr  error
)

// Contracts returns the compiled contracts (DevToken, DevNFT, DevMulti,
// WAVAX, TokenFactory) and the precompile interfaces (NativeMinter,
// FeeManager, RewardManager, AllowList; no bytecode).
func Contracts() (map[string]*Contract, error) {
	contractsOnce.Do(func() {
		contractsMap, contractsErr = loadContracts()
	})
	return contractsMap, contractsErr
}

func loadContracts() (map[string]*Contract, error) {
	raw, err := contractFS.ReadFile("contracts/contracts.json")
	if err != nil {
		return nil, err
	}
	var file struct {
		Contracts map[string]struct {
			ABI      json.RawMessage `json:"abi"`
			Bytecode string          `json:"bytecode"`
		} `json:"contracts"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		return nil, err
	}
	out := map[string]*Contract{}
	for name, c := range file.Contracts {
		a, err := abi.JSON(strings.NewReader(string(c.ABI)))
		if err != nil {
			return nil, fmt.Errorf("%s ABI: %w", name, err)
		}
		out[name] = &Contract{Name: name, ABI: a, Bytecode: common.FromHex(c.Bytecode)}
	}
	for name, file := range map[string]string{
		"NativeMinter":  "INativeMinter.abi",
		"FeeManager":    "IFeeManager.abi",
		"RewardManager": "IRewardManager.abi",
		"AllowList":     "IAllowList.abi",
	} {
		b, err := contractFS.ReadFile("contracts/precompiles/" + file)
		if err != nil {
			return nil, err
		}
		a, err := abi.JSON(strings.NewReader(string(b)))
		if err != nil {
			return nil, fmt.Errorf("%s ABI: %w", name, err)
		}
		out[name] = &Contract{Name: name, ABI: a}
	}
	return out, nil
}
