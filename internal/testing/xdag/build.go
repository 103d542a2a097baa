package xdag

import (
	"fmt"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/engine/avalanche/vertex"
	"github.com/ava-labs/avalanchego/utils"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/utils/units"
	"github.com/ava-labs/avalanchego/vms/avm"
	"github.com/ava-labs/avalanchego/vms/avm/block"
	"github.com/ava-labs/avalanchego/vms/avm/fxs"
	"github.com/ava-labs/avalanchego/vms/avm/txs"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/components/verify"
	"github.com/ava-labs/avalanchego/vms/nftfx"
	"github.com/ava-labs/avalanchego/vms/propertyfx"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	"github.com/permafrost-dev/permafrost/internal/genesis"
)

// DAG is an X-chain DAG built with avalanchego's constructors: signed txs
// in accepted order, and vertices (avalanchego's vertex.Build) holding them,
// ending with a stop vertex (vertex.BuildStopVertex), as the node's index
// serves them.
type DAG struct {
	Txs      []*txs.Tx
	Vertices []vertex.StatelessVertex
	// Keys are the DAG's fresh keys (the funder's outputs go to them).
	Keys []*secp256k1.PrivateKey
	// Asset is the fungible asset the DAG creates.
	Asset ids.ID
	// Funded is the funder's genesis output the first tx spends.
	Funded *avax.UTXO
}

// Key returns a deterministic key named by seed.
func Key(seed string) *secp256k1.PrivateKey {
	k, err := secp256k1.ToPrivateKey(hashing.ComputeHash256([]byte("xdag/" + seed)))
	if err != nil {
		panic(err) // a 32-byte hash is always a valid key
	}
	return k
}

// Parser is the X-chain parser of the primary network (vms/avm: the fxs in
// this order).
func Parser() (block.Parser, error) {
	return block.NewParser([]fxs.Fx{&secp256k1fx.Fx{}, &nftfx.Fx{}, &propertyfx.Fx{}})
}

// Build makes the DAG of g's X-chain, spending funder's genesis output:
//
//	tx1 BaseTx     funder -> 1,000 AVAX to K1, 500 AVAX to K2, change (memo)
//	tx2 CreateAsset K1: fungible DAGT, 1,000,000 to K1 and a minter (variable cap)
//	tx3 BaseTx     K2 -> 100 AVAX to K3, change
//	tx4 BaseTx     K1 -> 250,000 DAGT to K3, the rest and AVAX change to K1
//
// in vertices v0{tx1} <- v1{tx2,tx3} <- v2{tx3,tx4} <- stop (tx3 issued in
// two vertices, as the DAG allowed).
func Build(g *genesis.Genesis, funder *secp256k1.PrivateKey) (*DAG, error) {
	p, err := Parser()
	if err != nil {
		return nil, err
	}
	xTx, cc, err := g.Chain(constants.AVMID)
	if err != nil {
		return nil, err
	}
	chainID := xTx.ID()
	funded, err := genesisUTXO(p, cc.GenesisData, funder.Address())
	if err != nil {
		return nil, err
	}
	d := &DAG{Keys: []*secp256k1.PrivateKey{Key("k1"), Key("k2"), Key("k3")}, Funded: funded}
	k1, k2, k3 := d.Keys[0], d.Keys[1], d.Keys[2]
	avaxID := g.AvaxAssetID
	fee := units.MilliAvax
	base := func(ins []*avax.TransferableInput, outs []*avax.TransferableOutput, memo []byte) txs.BaseTx {
		avax.SortTransferableOutputs(outs, p.Codec())
		return txs.BaseTx{BaseTx: avax.BaseTx{NetworkID: g.NetworkID, BlockchainID: chainID, Ins: ins, Outs: outs, Memo: memo}}
	}
	sign := func(u txs.UnsignedTx, signers ...*secp256k1.PrivateKey) (*txs.Tx, error) {
		t := &txs.Tx{Unsigned: u}
		keys := make([][]*secp256k1.PrivateKey, len(signers))
		for i, k := range signers {
			keys[i] = []*secp256k1.PrivateKey{k}
		}
		if err := t.SignSECP256K1Fx(p.Codec(), keys); err != nil {
			return nil, fmt.Errorf("xdag: sign %T: %w", u, err)
		}
		d.Txs = append(d.Txs, t)
		return t, nil
	}

	total := funded.Out.(*secp256k1fx.TransferOutput).Amt
	b1 := base([]*avax.TransferableInput{input(funded)}, []*avax.TransferableOutput{
		output(avaxID, 1000*units.Avax, k1), output(avaxID, 500*units.Avax, k2),
		output(avaxID, total-1500*units.Avax-fee, funder),
	}, []byte("before the linearization"))
	tx1, err := sign(&b1, funder)
	if err != nil {
		return nil, err
	}
	minted := &txs.InitialState{FxIndex: 0, Outs: []verify.State{
		&secp256k1fx.TransferOutput{Amt: 1_000_000, OutputOwners: *owner(k1)},
		&secp256k1fx.MintOutput{OutputOwners: *owner(k1)},
	}}
	minted.Sort(p.Codec())
	b2 := base([]*avax.TransferableInput{input(find(tx1, avaxID, k1))}, []*avax.TransferableOutput{
		output(avaxID, 1000*units.Avax-10*fee, k1),
	}, nil)
	tx2, err := sign(&txs.CreateAssetTx{BaseTx: b2, Name: "DAG token", Symbol: "DAGT", Denomination: 2,
		States: []*txs.InitialState{minted}}, k1)
	if err != nil {
		return nil, err
	}
	d.Asset = tx2.ID()
	b3 := base([]*avax.TransferableInput{input(find(tx1, avaxID, k2))}, []*avax.TransferableOutput{
		output(avaxID, 100*units.Avax, k3), output(avaxID, 400*units.Avax-fee, k2),
	}, nil)
	tx3, err := sign(&b3, k2)
	if err != nil {
		return nil, err
	}
	ins := []*avax.TransferableInput{input(find(tx2, d.Asset, k1)), input(find(tx2, avaxID, k1))}
	utils.Sort(ins) // both signed by k1: the signers need no reordering
	b4 := base(ins, []*avax.TransferableOutput{
		output(d.Asset, 250_000, k3), output(d.Asset, 750_000, k1), output(avaxID, 1000*units.Avax-11*fee, k1),
	}, nil)
	tx4, err := sign(&b4, k1, k1)
	if err != nil {
		return nil, err
	}

	vtx := func(height uint64, parents []vertex.StatelessVertex, ts ...*txs.Tx) error {
		pids := make([]ids.ID, len(parents))
		for i, pv := range parents {
			pids[i] = pv.ID()
		}
		b := make([][]byte, len(ts))
		for i, t := range ts {
			b[i] = t.Bytes()
		}
		v, err := vertex.Build(chainID, height, pids, b)
		if err != nil {
			return fmt.Errorf("xdag: vertex %d: %w", height, err)
		}
		d.Vertices = append(d.Vertices, v)
		return nil
	}
	if err := vtx(0, nil, tx1); err != nil {
		return nil, err
	}
	if err := vtx(1, d.Vertices[:1], tx2, tx3); err != nil {
		return nil, err
	}
	if err := vtx(2, d.Vertices[1:2], tx3, tx4); err != nil {
		return nil, err
	}
	stop, err := vertex.BuildStopVertex(chainID, 3, []ids.ID{d.Vertices[2].ID()})
	if err != nil {
		return nil, fmt.Errorf("xdag: stop vertex: %w", err)
	}
	d.Vertices = append(d.Vertices, stop)
	return d, nil
}

// Index is the node's DAG index of d: txs and vertices accepted a minute
// apart from start on; the stop vertex at last (a node bootstrapped later
// accepts it when it bootstraps).
func (d *DAG) Index(start, last time.Time) (txs, vertices []Container) {
	for i, t := range d.Txs {
		txs = append(txs, Container{Bytes: t.Bytes(), Time: start.Add(time.Duration(i) * time.Minute)})
	}
	for i, v := range d.Vertices {
		at := start.Add(time.Duration(i) * time.Minute)
		if i == len(d.Vertices)-1 {
			at = last
		}
		vertices = append(vertices, Container{Bytes: v.Bytes(), Time: at})
	}
	return txs, vertices
}

// Unspent is what the DAG's txs imply: the funder's genesis output and every
// output the txs created (avalanchego's txs.Tx.UTXOs), less what they spent.
func (d *DAG) Unspent() map[ids.ID]*avax.UTXO {
	out := map[ids.ID]*avax.UTXO{d.Funded.InputID(): d.Funded}
	for _, t := range d.Txs {
		for _, in := range t.Unsigned.InputUTXOs() {
			delete(out, in.InputID())
		}
		for _, u := range t.UTXOs() {
			out[u.InputID()] = u
		}
	}
	return out
}

func genesisUTXO(p block.Parser, genesisBytes []byte, addr ids.ShortID) (*avax.UTXO, error) {
	var gen avm.Genesis
	if _, err := p.GenesisCodec().Unmarshal(genesisBytes, &gen); err != nil {
		return nil, fmt.Errorf("xdag: AVM genesis: %w", err)
	}
	for _, ga := range gen.Txs {
		t := &txs.Tx{Unsigned: &ga.CreateAssetTx}
		if err := t.Initialize(p.GenesisCodec()); err != nil {
			return nil, fmt.Errorf("xdag: genesis asset: %w", err)
		}
		for _, u := range t.UTXOs() {
			if o, ok := u.Out.(*secp256k1fx.TransferOutput); ok && len(o.Addrs) == 1 && o.Addrs[0] == addr && o.Locktime == 0 {
				return u, nil
			}
		}
	}
	return nil, fmt.Errorf("xdag: no genesis X output of %s", addr)
}

func owner(k *secp256k1.PrivateKey) *secp256k1fx.OutputOwners {
	return &secp256k1fx.OutputOwners{Threshold: 1, Addrs: []ids.ShortID{k.Address()}}
}

func output(asset ids.ID, amount uint64, k *secp256k1.PrivateKey) *avax.TransferableOutput {
	return &avax.TransferableOutput{Asset: avax.Asset{ID: asset}, Out: &secp256k1fx.TransferOutput{Amt: amount, OutputOwners: *owner(k)}}
}

func input(u *avax.UTXO) *avax.TransferableInput {
	return &avax.TransferableInput{UTXOID: u.UTXOID, Asset: u.Asset,
		In: &secp256k1fx.TransferInput{Amt: u.Out.(*secp256k1fx.TransferOutput).Amt, Input: secp256k1fx.Input{SigIndices: []uint32{0}}}}
}

// find is t's transfer output of asset owned by k alone.
func find(t *txs.Tx, asset ids.ID, k *secp256k1.PrivateKey) *avax.UTXO {
	for _, u := range t.UTXOs() {
		if o, ok := u.Out.(*secp256k1fx.TransferOutput); ok && u.AssetID() == asset && len(o.Addrs) == 1 && o.Addrs[0] == k.Address() {
			return u
		}
	}
	panic(fmt.Sprintf("xdag: tx %s has no %s output of %s", t.ID(), asset, k.Address()))
}
