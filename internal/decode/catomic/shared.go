package catomic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/vms/nftfx"
	"github.com/ava-labs/avalanchego/vms/propertyfx"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	"github.com/permafrost-dev/permafrost/internal/decode/primary"
	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// This file holds what the X-chain indexer (internal/decode/xchain) and the
// C-chain atomic side share: chain keys, credentials and UTXO types.

// ChainKeys maps the primary network's blockchain IDs to the chain keys rows
// use: "P" (ids.Empty), "X" and "C" (their genesis CreateChainTx IDs).
type ChainKeys struct{ X, C ids.ID }

// NewChainKeys reads the X and C blockchain IDs from the genesis.
func NewChainKeys(g *genesis.Genesis) (ChainKeys, error) {
	if g == nil {
		return ChainKeys{}, fmt.Errorf("catomic: nil genesis")
	}
	x, _, err := g.Chain(constants.AVMID)
	if err != nil {
		return ChainKeys{}, fmt.Errorf("catomic: X chain: %w", err)
	}
	c, _, err := g.Chain(constants.EVMID)
	if err != nil {
		return ChainKeys{}, fmt.Errorf("catomic: C chain: %w", err)
	}
	return ChainKeys{X: x.ID(), C: c.ID()}, nil
}

// Key returns the chain key of a primary-network blockchain. For any other ID
// (which the node would have rejected in an atomic tx) it returns the cb58 ID
// and false, so nothing is dropped.
func (k ChainKeys) Key(id ids.ID) (string, bool) {
	switch id {
	case constants.PlatformChainID:
		return "P", true
	case k.X:
		return "X", true
	case k.C:
		return "C", true
	}
	return id.String(), false
}

// Credential is one signature spending an input and the secp256k1 public key
// it recovers to: the data API's UtxoCredential. Both are standard (padded)
// base64, as the P-chain indexer writes them; the public key is the 33-byte
// compressed form.
type Credential struct {
	Signature string `json:"signature"`
	PublicKey string `json:"publicKey"`
}

// Credentials renders the credentials of a tx, one list per credential index
// (the order of the tx's inputs), as the JSON stored in px_txs.credentials. A
// signature that does not recover (malformed) keeps an empty publicKey. It
// also returns the addresses of the recovered signers, by credential index.
func Credentials(unsignedBytes []byte, creds [][][secp256k1.SignatureLen]byte) (string, [][]ids.ShortID) {
	hash := hashing.ComputeHash256(unsignedBytes)
	out := make([][]Credential, len(creds))
	signers := make([][]ids.ShortID, len(creds))
	for i, sigs := range creds {
		out[i] = make([]Credential, 0, len(sigs))
		for _, sig := range sigs {
			c := Credential{Signature: base64.StdEncoding.EncodeToString(sig[:])}
			if pk, err := secp256k1.RecoverPublicKeyFromHash(hash, sig[:]); err == nil {
				c.PublicKey = base64.StdEncoding.EncodeToString(pk.Bytes())
				signers[i] = append(signers[i], pk.Address())
			}
			out[i] = append(out[i], c)
		}
	}
	b, err := json.Marshal(out)
	if err != nil { // cannot happen for these types
		return "[]", signers
	}
	return string(b), signers
}

// UTXO types, in the vocabulary of the chain where the UTXO is spendable (the
// data API has one UTXO schema for P and one for X and C):
//
//	P (PChainUtxo.utxoType, enum STAKE/TRANSFER): "TRANSFER" for an atomic
//	  output exported to P (always a secp256k1fx.TransferOutput).
//	X and C (Utxo.utxoType, lower case, example "mint"):
//	  "transfer"  secp256k1fx.TransferOutput (fungible amount)
//	  "mint"      secp256k1fx.MintOutput, nftfx.MintOutput, propertyfx.MintOutput (minting rights)
//	  "nft"       nftfx.TransferOutput (an NFT: group id + payload)
//	  "property"  propertyfx.OwnedOutput
const (
	UTXOTypeTransferP = "TRANSFER"
	UTXOTypeTransfer  = "transfer"
	UTXOTypeMint      = "mint"
	UTXOTypeNFT       = "nft"
	UTXOTypeProperty  = "property"
)

// UTXOType classifies an output spendable on chainKey (see the constants).
func UTXOType(chainKey string, out any) (string, error) {
	if chainKey == "P" {
		if _, ok := out.(*secp256k1fx.TransferOutput); ok {
			return UTXOTypeTransferP, nil
		}
		return "", fmt.Errorf("catomic: output %T cannot be spent on P", out)
	}
	switch out.(type) {
	case *secp256k1fx.TransferOutput:
		return UTXOTypeTransfer, nil
	case *secp256k1fx.MintOutput, *nftfx.MintOutput, *propertyfx.MintOutput:
		return UTXOTypeMint, nil
	case *nftfx.TransferOutput:
		return UTXOTypeNFT, nil
	case *propertyfx.OwnedOutput:
		return UTXOTypeProperty, nil
	}
	return "", fmt.Errorf("catomic: unsupported output type %T", out)
}

// FormatAddresses renders short IDs as bech32 without chain prefix, deduplicated.
func FormatAddresses(hrp string, addrs ...[]ids.ShortID) ([]string, error) {
	seen := map[ids.ShortID]bool{}
	var out []string
	for _, list := range addrs {
		for _, a := range list {
			if seen[a] {
				continue
			}
			seen[a] = true
			s, err := address.FormatBech32(hrp, a.Bytes())
			if err != nil {
				return nil, fmt.Errorf("catomic: format address: %w", err)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// OwnersOf returns the stored owners (bech32) of a UTXO, or nil when its
// creation is not indexed yet (an import indexed before the export).
func OwnersOf(ctx context.Context, tx *store.Tx, utxoID ids.ID) ([]string, error) {
	var createdChain, addrs string
	err := tx.QueryRow(ctx, `SELECT created_chain, addresses FROM utxos WHERE utxo_id = $1`, utxoID.String()).Scan(&createdChain, &addrs)
	if err != nil {
		if isNoRows(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("catomic: owners of utxo %s: %w", utxoID, err)
	}
	if createdChain == "" {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal([]byte(addrs), &out); err != nil {
		return nil, fmt.Errorf("catomic: owners of utxo %s: %w", utxoID, err)
	}
	return out, nil
}

// LinkLateConsumer links the tx that consumed a just-created atomic UTXO to
// the UTXO's owners and asset when that tx was indexed first (its chain ran
// ahead): at its own indexing the owners were not known yet.
func LinkLateConsumer(ctx context.Context, tx *store.Tx, w primary.Writer, utxoID, assetID ids.ID, owners []string) error {
	var consumedTx, consumedChain string
	var consumedTime int64
	err := tx.QueryRow(ctx, `SELECT consumed_tx, consumed_chain, consumed_time FROM utxos WHERE utxo_id = $1`,
		utxoID.String()).Scan(&consumedTx, &consumedChain, &consumedTime)
	if err != nil {
		return fmt.Errorf("catomic: consumer of utxo %s: %w", utxoID, err)
	}
	if consumedTx == "" {
		return nil
	}
	return w.LinkTx(ctx, tx, consumedChain, consumedTx, consumedTime, []ids.ID{assetID}, owners)
}
