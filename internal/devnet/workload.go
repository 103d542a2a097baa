package devnet

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/crypto/bls/signer/localsigner"
)

// Tx is one logged tx of workload.jsonl. Its extra member holds facts of
// the step that vary with it (memo, sourceChain, blockNumber, ...); E is
// what the caller decodes it into: map[string]any, json.RawMessage, or a
// struct of the keys it needs.
type Tx[E any] struct {
	Seq       int      `json:"seq"`
	Step      string   `json:"step"`
	Chain     string   `json:"chain"` // P, X or C
	Type      string   `json:"type"`
	TxID      string   `json:"txID"`
	Purpose   string   `json:"purpose"`
	Addresses []string `json:"addresses"`
	Time      string   `json:"time"`
	Extra     E        `json:"extra"`
}

// LoadWorkload reads workload.jsonl, in issue order.
func LoadWorkload[E any](t testing.TB) []Tx[E] {
	t.Helper()
	return readLines[Tx[E]](t, "workload.jsonl")
}

// Keys is keys.json: the workload's deterministic throwaway keys.
type Keys struct {
	Keys []Key `json:"keys"`
	// GenesisFundedUnused are well-known keys funded by the genesis and not
	// used by the workload.
	GenesisFundedUnused []Key    `json:"genesisFundedUnused"`
	BLSKeys             []BLSKey `json:"blsKeys"`
}

// Key is a secp256k1 key with its addresses in every form.
type Key struct {
	Name               string `json:"name"`
	Role               string `json:"role"`
	PrefundedInGenesis bool   `json:"prefundedInGenesis"`
	PrivateKey         string `json:"privateKey"`    // PrivateKey-<cb58>
	PrivateKeyHex      string `json:"privateKeyHex"` // 0x-hex
	PAddress           string `json:"pAddress"`      // P-custom1...
	XAddress           string `json:"xAddress"`      // X-custom1...
	CAddress           string `json:"cAddress"`      // C-custom1...
	EVMAddress         string `json:"evmAddress"`    // EIP-55
	ShortID            string `json:"shortID"`
}

// BLSKey is the BLS key of an offline validator (beta and the L1 validators).
type BLSKey struct {
	Name                 string `json:"name"`
	NodeID               string `json:"nodeID"`
	BLSPublicKey         string `json:"blsPublicKey"` // 0x-hex, compressed
	BLSProofOfPossession string `json:"blsProofOfPossession"`
	BLSSecretKeyHex      string `json:"blsSecretKeyHex"`
}

// LoadKeys reads keys.json.
func LoadKeys(t testing.TB) *Keys {
	t.Helper()
	var k Keys
	readJSON(t, "keys.json", &k)
	return &k
}

// Signer returns a signer of the secret key, checking that it gives the
// recorded public key.
func (k BLSKey) Signer() (*localsigner.LocalSigner, error) {
	sk, err := hex.DecodeString(strings.TrimPrefix(k.BLSSecretKeyHex, "0x"))
	if err != nil {
		return nil, fmt.Errorf("devnet: BLS key %s: %w", k.Name, err)
	}
	s, err := localsigner.FromBytes(sk)
	if err != nil {
		return nil, fmt.Errorf("devnet: BLS key %s: %w", k.Name, err)
	}
	if pk := "0x" + hex.EncodeToString(bls.PublicKeyToCompressedBytes(s.PublicKey())); pk != k.BLSPublicKey {
		return nil, fmt.Errorf("devnet: BLS key %s: secret key gives public key %s, recorded %s", k.Name, pk, k.BLSPublicKey)
	}
	return s, nil
}

// BLSSigners returns a signer of every BLS key of keys.json, by compressed
// public key in 0x-hex.
func BLSSigners(t testing.TB) map[string]*localsigner.LocalSigner {
	t.Helper()
	keys := LoadKeys(t).BLSKeys
	out := make(map[string]*localsigner.LocalSigner, len(keys))
	for _, k := range keys {
		s, err := k.Signer()
		if err != nil {
			t.Fatal(err)
		}
		out[k.BLSPublicKey] = s
	}
	return out
}
