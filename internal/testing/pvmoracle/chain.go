package pvmoracle

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/ava-labs/avalanchego/chains/atomic"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/formatting"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/platformvm/block"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
)

// Key returns a deterministic secp256k1 key named by seed.
func Key(seed string) *secp256k1.PrivateKey {
	k, err := secp256k1.ToPrivateKey(hashing.ComputeHash256([]byte("pvmoracle/" + seed)))
	if err != nil {
		panic(err) // a 32-byte hash is always a valid key
	}
	return k
}

// Owner is a 1-of-1 output owner of key k.
func Owner(k *secp256k1.PrivateKey) *secp256k1fx.OutputOwners {
	return &secp256k1fx.OutputOwners{Threshold: 1, Addrs: []ids.ShortID{k.Address()}}
}

// Chain builds blocks on the oracle's last accepted block, with avalanchego's
// constructors, and has the VM verify and accept each one. Time is the chain
// time the next block is built at (the VM's clock is set to it).
type Chain struct {
	O    *Oracle
	AVAX ids.ID
	Time time.Time
}

// Sign signs u with one key list per credential, in the order the tx's
// inputs (then its subnet authorization) need them.
func (c *Chain) Sign(u txs.UnsignedTx, signers ...[]*secp256k1.PrivateKey) (*txs.Tx, error) {
	tx := &txs.Tx{Unsigned: u}
	if err := tx.Sign(txs.Codec, signers); err != nil {
		return nil, fmt.Errorf("sign %T: %w", u, err)
	}
	return tx, nil
}

// Spend is what a tx spending from one key needs: inputs and change
// outputs; Signers signs each input with the key.
type Spend struct {
	Ins    []*avax.TransferableInput
	Change []*avax.TransferableOutput
	Key    *secp256k1.PrivateKey
}

// Signers is one key list per input.
func (s Spend) Signers() [][]*secp256k1.PrivateKey {
	out := make([][]*secp256k1.PrivateKey, len(s.Ins))
	for i := range out {
		out[i] = []*secp256k1.PrivateKey{s.Key}
	}
	return out
}

// Fund picks unlocked UTXOs of k from the VM's current state (its own
// getUTXOs answer) worth at least amount of asset and burn AVAX, and
// returns them with change outputs to k: the tx adds its own outputs worth
// amount.
func (c *Chain) Fund(k *secp256k1.PrivateKey, asset ids.ID, amount, burn uint64) (Spend, error) {
	utxos, err := c.UTXOs(k.Address())
	if err != nil {
		return Spend{}, err
	}
	// Largest first, so few inputs cover the amount.
	sort.Slice(utxos, func(i, j int) bool { return amt(utxos[i]) > amt(utxos[j]) })
	need := map[ids.ID]uint64{asset: amount}
	need[c.AVAX] += burn
	have := map[ids.ID]uint64{}
	s := Spend{Key: k}
	for _, u := range utxos {
		out, ok := u.Out.(*secp256k1fx.TransferOutput)
		a := u.AssetID()
		if !ok || need[a] == 0 || have[a] >= need[a] {
			continue
		}
		s.Ins = append(s.Ins, &avax.TransferableInput{UTXOID: u.UTXOID, Asset: u.Asset,
			In: &secp256k1fx.TransferInput{Amt: out.Amt, Input: secp256k1fx.Input{SigIndices: []uint32{0}}}})
		have[a] += out.Amt
	}
	for a, n := range need {
		if have[a] < n {
			return Spend{}, fmt.Errorf("fund %s: have %d of %s, need %d", k.Address(), have[a], a, n)
		}
		if change := have[a] - n; change > 0 {
			s.Change = append(s.Change, &avax.TransferableOutput{Asset: avax.Asset{ID: a},
				Out: &secp256k1fx.TransferOutput{Amt: change, OutputOwners: *Owner(k)}})
		}
	}
	utils.Sort(s.Ins)
	return s, nil
}

func amt(u *avax.UTXO) uint64 {
	if o, ok := u.Out.(*secp256k1fx.TransferOutput); ok {
		return o.Amt
	}
	return 0
}

// Out is an AVAX output of amount to k.
func (c *Chain) Out(k *secp256k1.PrivateKey, amount uint64) *avax.TransferableOutput {
	return &avax.TransferableOutput{Asset: avax.Asset{ID: c.AVAX}, Out: &secp256k1fx.TransferOutput{Amt: amount, OutputOwners: *Owner(k)}}
}

// UTXOs are the UTXOs of addr the VM's service returns (platform.getUTXOs).
func (c *Chain) UTXOs(addr ids.ShortID) ([]*avax.UTXO, error) {
	bech, err := c.O.Address(addr)
	if err != nil {
		return nil, err
	}
	raw, msg, err := c.O.Call("platform.getUTXOs", map[string]any{"addresses": []string{bech}, "limit": 1024, "encoding": "hex"})
	if err != nil || msg != "" {
		return nil, fmt.Errorf("getUTXOs %s: %v%s", bech, err, msg)
	}
	var reply struct {
		UTXOs []string `json:"utxos"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		return nil, err
	}
	out := make([]*avax.UTXO, 0, len(reply.UTXOs))
	for _, s := range reply.UTXOs {
		b, err := formatting.Decode(formatting.Hex, s)
		if err != nil {
			return nil, err
		}
		u := &avax.UTXO{}
		if _, err := txs.Codec.Unmarshal(b, u); err != nil {
			return nil, fmt.Errorf("utxo %s: %w", s, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// Address is addr as the P-chain formats it (P-<hrp>1...).
func (o *Oracle) Address(addr ids.ShortID) (string, error) {
	return address.Format("P", constants.GetHRP(o.ctx.NetworkID), addr.Bytes())
}

// parent is the last accepted block's ID and the next height.
func (c *Chain) parent() (ids.ID, uint64, error) {
	id, h, err := c.O.Tip()
	return id, h + 1, err
}

// accept builds a block on the last accepted one, and has the VM verify and
// accept it.
func (c *Chain) accept(build func(parent ids.ID, height uint64) (block.Block, error)) error {
	p, h, err := c.parent()
	if err != nil {
		return err
	}
	b, err := build(p, h)
	if err != nil {
		return err
	}
	return c.O.Accept(b, c.Time)
}

// propose builds a proposal block on the last accepted one and its commit
// or abort block; the VM verifies and accepts both.
func (c *Chain) propose(proposal func(parent ids.ID, height uint64) (block.Block, error),
	option func(proposal ids.ID, height uint64) (block.Block, error)) error {
	p, h, err := c.parent()
	if err != nil {
		return err
	}
	prop, err := proposal(p, h)
	if err != nil {
		return err
	}
	opt, err := option(prop.ID(), h+1)
	if err != nil {
		return err
	}
	return c.O.AcceptProposal(prop, opt, c.Time)
}

// ApricotStandard builds, verifies and accepts an ApricotStandardBlock.
func (c *Chain) ApricotStandard(decisions ...*txs.Tx) error {
	return c.accept(func(p ids.ID, h uint64) (block.Block, error) { return block.NewApricotStandardBlock(p, h, decisions) })
}

// ApricotAtomic builds, verifies and accepts an ApricotAtomicBlock.
func (c *Chain) ApricotAtomic(tx *txs.Tx) error {
	return c.accept(func(p ids.ID, h uint64) (block.Block, error) { return block.NewApricotAtomicBlock(p, h, tx) })
}

// ApricotPropose builds an ApricotProposalBlock of tx and its commit or
// abort block; the VM verifies and accepts both.
func (c *Chain) ApricotPropose(tx *txs.Tx, commit bool) error {
	return c.propose(func(p ids.ID, h uint64) (block.Block, error) { return block.NewApricotProposalBlock(p, h, tx) },
		func(p ids.ID, h uint64) (block.Block, error) {
			if commit {
				return block.NewApricotCommitBlock(p, h)
			}
			return block.NewApricotAbortBlock(p, h)
		})
}

// BanffStandard builds, verifies and accepts a BanffStandardBlock at c.Time.
func (c *Chain) BanffStandard(decisions ...*txs.Tx) error {
	return c.accept(func(p ids.ID, h uint64) (block.Block, error) {
		return block.NewBanffStandardBlock(c.Time, p, h, decisions)
	})
}

// BanffPropose builds a BanffProposalBlock at c.Time of tx (after the
// decisions) and its commit or abort block; the VM accepts both.
func (c *Chain) BanffPropose(tx *txs.Tx, commit bool, decisions ...*txs.Tx) error {
	return c.propose(func(p ids.ID, h uint64) (block.Block, error) {
		return block.NewBanffProposalBlock(c.Time, p, h, tx, decisions)
	},
		func(p ids.ID, h uint64) (block.Block, error) {
			if commit {
				return block.NewBanffCommitBlock(c.Time, p, h)
			}
			return block.NewBanffAbortBlock(c.Time, p, h)
		})
}

// ExportedToP is a UTXO of asset the chain sourceChain exported to the P-chain, put
// in shared memory as that chain's accepted ExportTx would.
func (c *Chain) ExportedToP(sourceChain, asset ids.ID, k *secp256k1.PrivateKey, amount uint64, seed string) (*avax.UTXO, error) {
	u := &avax.UTXO{
		UTXOID: avax.UTXOID{TxID: ids.ID(hashing.ComputeHash256Array([]byte("export/" + seed)))},
		Asset:  avax.Asset{ID: asset},
		Out:    &secp256k1fx.TransferOutput{Amt: amount, OutputOwners: *Owner(k)},
	}
	b, err := txs.Codec.Marshal(txs.CodecVersion, u)
	if err != nil {
		return nil, err
	}
	id := u.InputID()
	return u, c.O.PutAtomic(sourceChain, &atomic.Element{Key: id[:], Value: b, Traits: [][]byte{k.Address().Bytes()}})
}
