package livenet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/ava-labs/libevm/common"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
)

// Key is one named, deterministic workload key. The same names give the same
// keys on every run, so addresses are stable across runs (only the IDs of
// things created on chain change, since block times differ).
type Key struct {
	Name   string
	Role   string
	Funded bool // pre-funded in the primary-network genesis
	L1     bool // funded in the L1 genesis
	Key    *secp256k1.PrivateKey
}

// ShortID is the Avalanche address (20 bytes) of the key.
func (k *Key) ShortID() ids.ShortID { return k.Key.Address() }

// EthAddress is the EVM address of the key.
func (k *Key) EthAddress() common.Address { return k.Key.EthAddress() }

// Bech32 formats the key's address for chain alias "X", "P" or "C".
func (k *Key) Bech32(chain string, networkID uint32) string {
	addr := k.ShortID()
	s, err := address.Format(chain, constants.GetHRP(networkID), addr[:])
	if err != nil {
		panic(err)
	}
	return s
}

// Owner is a 1-of-1 output owner for the key.
func (k *Key) Owner() *secp256k1fx.OutputOwners {
	return &secp256k1fx.OutputOwners{Threshold: 1, Addrs: []ids.ShortID{k.ShortID()}}
}

// HexKey is the private key as 0x-hex (for EVM tools).
func (k *Key) HexKey() string { return "0x" + hex.EncodeToString(k.Key.Bytes()) }

// Keychain holds just this key.
func (k *Key) Keychain() *secp256k1fx.Keychain { return secp256k1fx.NewKeychain(k.Key) }

// Keys are the workload's named keys.
type Keys struct {
	All    []*Key
	byName map[string]*Key
}

// Get returns the key of that name (panics on an unknown name: a programming error).
func (ks *Keys) Get(name string) *Key {
	k, ok := ks.byName[name]
	if !ok {
		panic("livenet: unknown key " + name)
	}
	return k
}

// Funded are the keys pre-funded in the primary-network genesis.
func (ks *Keys) Funded() []*secp256k1.PrivateKey {
	var out []*secp256k1.PrivateKey
	for _, k := range ks.All {
		if k.Funded {
			out = append(out, k.Key)
		}
	}
	return out
}

// Each workload goroutine spends from its own keys, so concurrent phases
// never race for the same UTXOs or nonces.
var keySpecs = []struct {
	name, role string
	funded, l1 bool
}{
	{"alice", "X-chain: transfers, asset creator and minter", true, false},
	{"bob", "X-chain: transfers, second asset holder", true, false},
	{"carol", "recipient (X, P, C)", false, false},
	{"dave", "recipient (X, P), NFT receiver", false, false},
	{"erin", "recipient, 2-of-2 co-owner", false, false},
	{"frank", "P-chain: staking (validators, delegators)", true, false},
	{"grace", "P-chain: subnets, chains, L1 conversion and L1 validator txs", true, false},
	{"heidi", "atomic transfers between X, P and C", true, false},
	{"ivan", "C-chain: contract deployer and caller", true, false},
	{"judy", "C-chain: native transfers", true, false},
	{"mallory", "C-chain recipient, ERC token receiver", false, false},
	{"niaj", "concurrent phase sender (X, P, C)", true, false},
	{"olivia", "L1: enabled on the allow lists, transfers", false, true},
	{"peggy", "L1 recipient", false, false},
	{"trent", "L1: precompile admin (native minter, fee/reward manager, allow lists)", false, true},
	{"owner", "owner of the main L1's subnet (network setup)", true, false},
	{"victor", "never used (empty-balance queries)", false, false},
}

// NewKeys derives the named keys: sha256("permafrost-livenet/" + name).
func NewKeys() *Keys {
	ks := &Keys{byName: map[string]*Key{}}
	for _, s := range keySpecs {
		seed := sha256.Sum256([]byte("permafrost-livenet/" + s.name))
		pk, err := secp256k1.ToPrivateKey(seed[:])
		if err != nil {
			panic(fmt.Sprintf("livenet: key %s: %v", s.name, err))
		}
		k := &Key{Name: s.name, Role: s.role, Funded: s.funded, L1: s.l1, Key: pk}
		ks.All = append(ks.All, k)
		ks.byName[s.name] = k
	}
	return ks
}
