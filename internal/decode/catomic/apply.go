package catomic

import (
	"context"
	"fmt"
	"log/slog"
	"math/big"
	"time"

	"github.com/ava-labs/avalanchego/codec"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/upgrade"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/decode/primary"
	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// X2CRate converts nAVAX (P/X denomination) to wei: 1 nAVAX = 10^9 wei.
const X2CRate = 1_000_000_000

// Block is the C block the atomic txs are in.
type Block struct {
	Height uint64
	Hash   string // 0x-hex block hash
	Time   int64  // unix seconds
}

// BalanceChange is one effect of an atomic tx on the EVM state, for the EVM
// indexer's native (and multicoin) balances.
type BalanceChange struct {
	TxID    ids.ID
	Address common.Address
	AssetID ids.ID
	// Amount in the asset's P/X denomination (nAVAX for AVAX).
	Amount uint64
	// Wei is the signed change of the native balance: +Amount×10^9 for an
	// AVAX import output, −Amount×10^9 for an AVAX export input. Nil for other
	// assets, which change coreth's multicoin balance by Amount instead.
	Wei *big.Int
	// Export is true for an export input (a debit). Nonce is then the account
	// nonce the input used; coreth sets the account nonce to Nonce+1.
	Export bool
	Nonce  uint64
}

// Applier writes the C-chain's atomic txs. The EVM indexer builds one with New
// and calls ApplyBlock for each C block, inside its own store transaction.
type Applier struct {
	hrp      string
	avax     ids.ID
	upgrades upgrade.Config
	chains   ChainKeys
	codec    codec.Manager
	w        primary.Writer
	log      *slog.Logger
}

// New builds an Applier for the network of g. log may be nil.
func New(g *genesis.Genesis, log *slog.Logger) (*Applier, error) {
	chains, err := NewChainKeys(g)
	if err != nil {
		return nil, err
	}
	c, err := NewCodec()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return &Applier{
		hrp:      g.HRP,
		avax:     g.AvaxAssetID,
		upgrades: g.Upgrades,
		chains:   chains,
		codec:    c,
		w:        primary.Writer{HRP: g.HRP},
		log:      log,
	}, nil
}

// ApplyBlock decodes a C block's blockExtraData (0x-hex decoded to bytes;
// empty for most blocks) and applies its atomic txs. Extra data that does not
// decode is stored as one px_txs row of type UNKNOWN (ID: sha256 of the extra
// data) and logged, never dropped.
func (a *Applier) ApplyBlock(ctx context.Context, tx *store.Tx, blk Block, extraData []byte) ([]BalanceChange, error) {
	if len(extraData) == 0 {
		return nil, nil
	}
	batch := a.upgrades.IsApricotPhase5Activated(time.Unix(blk.Time, 0))
	txs, err := decode(a.codec, extraData, batch)
	if err != nil {
		id := ids.ID(hashing.ComputeHash256Array(extraData))
		a.log.Warn("undecodable C-chain atomic txs stored raw", "height", blk.Height, "block", blk.Hash, "id", id, "err", err)
		if err := a.putTx(ctx, tx, blk, id.String(), 0, "UNKNOWN", "", "", "[]", extraData); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return a.Apply(ctx, tx, blk, txs)
}

// Apply writes already decoded atomic txs of a block: a px_txs row each
// (chain "C"), the spends of imported UTXOs, the exported UTXOs (created on C,
// spendable on X or P), the tx/asset/address links, and returns the effects on
// EVM balances in tx order.
func (a *Applier) Apply(ctx context.Context, tx *store.Tx, blk Block, txs []*Tx) ([]BalanceChange, error) {
	var changes []BalanceChange
	var burned uint64
	for i, atx := range txs {
		var (
			ch  []BalanceChange
			err error
		)
		switch u := atx.UnsignedAtomicTx.(type) {
		case *UnsignedImportTx:
			ch, err = a.applyImport(ctx, tx, blk, i, atx, u)
		case *UnsignedExportTx:
			ch, err = a.applyExport(ctx, tx, blk, i, atx, u)
		default:
			err = fmt.Errorf("catomic: tx %s: unknown type %T", atx.ID(), atx.UnsignedAtomicTx)
		}
		if err != nil {
			return nil, err
		}
		changes = append(changes, ch...)
		burned += a.fee(atx)
	}
	if err := a.w.AddSupply(ctx, tx, "C", primary.Supply{Burned: int64(burned)}); err != nil {
		return nil, err
	}
	return changes, nil
}

// fee is the AVAX an atomic tx burns: what it takes (imported UTXOs, EVM
// inputs) minus what it gives (EVM outputs, exported UTXOs), in nAVAX.
func (a *Applier) fee(atx *Tx) uint64 {
	var in, out uint64
	switch u := atx.UnsignedAtomicTx.(type) {
	case *UnsignedImportTx:
		for _, i := range u.ImportedInputs {
			if i.AssetID() == a.avax {
				in += i.In.Amount()
			}
		}
		for _, o := range u.Outs {
			if o.AssetID == a.avax {
				out += o.Amount
			}
		}
	case *UnsignedExportTx:
		for _, i := range u.Ins {
			if i.AssetID == a.avax {
				in += i.Amount
			}
		}
		for _, o := range u.ExportedOutputs {
			if o.AssetID() == a.avax {
				out += o.Out.Amount()
			}
		}
	}
	if in < out {
		return 0
	}
	return in - out
}

func (a *Applier) applyImport(ctx context.Context, tx *store.Tx, blk Block, index int, atx *Tx, u *UnsignedImportTx) ([]BalanceChange, error) {
	txID := atx.ID()
	sigs, err := atx.signatures()
	if err != nil {
		return nil, err
	}
	creds, signers := Credentials(atx.UnsignedBytes(), sigs)
	if err := a.putTx(ctx, tx, blk, txID.String(), index, "ImportTx", u.SourceChain.String(), "", creds, atx.Bytes()); err != nil {
		return nil, err
	}
	var assets []ids.ID
	var owners []string
	for i, in := range u.ImportedInputs {
		if in == nil || in.In == nil {
			return nil, fmt.Errorf("catomic: tx %s: nil imported input %d", txID, i)
		}
		o, err := OwnersOf(ctx, tx, in.InputID())
		if err != nil {
			return nil, err
		}
		owners = append(owners, o...)
		if err := a.w.SpendUTXO(ctx, tx, &in.UTXOID, primary.Spent{
			TxID: txID.String(), ChainKey: "C", Height: blk.Height, Time: blk.Time, InputIndex: i,
			AssetID: in.AssetID().String(), Amount: in.In.Amount(),
		}); err != nil {
			return nil, err
		}
		assets = append(assets, in.AssetID())
	}
	changes := make([]BalanceChange, 0, len(u.Outs))
	for i, out := range u.Outs {
		if err := putEVMIO(ctx, tx, txID.String(), "OUT", i, out.Address, out.AssetID, out.Amount, 0); err != nil {
			return nil, err
		}
		assets = append(assets, out.AssetID)
		c := BalanceChange{TxID: txID, Address: out.Address, AssetID: out.AssetID, Amount: out.Amount}
		if out.AssetID == a.avax {
			c.Wei = new(big.Int).Mul(new(big.Int).SetUint64(out.Amount), big.NewInt(X2CRate))
		}
		changes = append(changes, c)
	}
	signerAddrs, err := FormatAddresses(a.hrp, signers...)
	if err != nil {
		return nil, err
	}
	if err := a.w.LinkTx(ctx, tx, "C", txID.String(), blk.Time, assets, append(owners, signerAddrs...)); err != nil {
		return nil, err
	}
	return changes, nil
}

func (a *Applier) applyExport(ctx context.Context, tx *store.Tx, blk Block, index int, atx *Tx, u *UnsignedExportTx) ([]BalanceChange, error) {
	txID := atx.ID()
	sigs, err := atx.signatures()
	if err != nil {
		return nil, err
	}
	creds, signers := Credentials(atx.UnsignedBytes(), sigs)
	if err := a.putTx(ctx, tx, blk, txID.String(), index, "ExportTx", "", u.DestinationChain.String(), creds, atx.Bytes()); err != nil {
		return nil, err
	}
	dest, known := a.chains.Key(u.DestinationChain)
	if !known {
		a.log.Warn("C-chain export to a chain outside the primary network", "tx", txID, "chain", dest)
	}
	var assets []ids.ID
	var addrs []string
	for i, out := range u.ExportedOutputs {
		if out == nil || out.Out == nil {
			return nil, fmt.Errorf("catomic: tx %s: nil exported output %d", txID, i)
		}
		// The node's rule (coreth UnsignedExportTx.AtomicOps): output i of the
		// export is UTXO (txID, i), in the codec's bytes.
		utxo := &avax.UTXO{
			UTXOID: avax.UTXOID{TxID: txID, OutputIndex: uint32(i)},
			Asset:  avax.Asset{ID: out.AssetID()},
			Out:    out.Out,
		}
		utxoBytes, err := a.codec.Marshal(CodecVersion, utxo)
		if err != nil {
			return nil, fmt.Errorf("catomic: tx %s: marshal utxo %d: %w", txID, i, err)
		}
		typ, err := UTXOType(dest, out.Out)
		if err != nil {
			return nil, fmt.Errorf("catomic: tx %s output %d: %w", txID, i, err)
		}
		if err := a.w.PutUTXO(ctx, tx, utxo, utxoBytes, primary.Created{
			CreatedChain: "C", ChainKey: dest, Height: blk.Height, Time: blk.Time, UTXOType: typ,
		}); err != nil {
			return nil, err
		}
		f, err := primary.OutputFields(out.Out)
		if err != nil {
			return nil, err
		}
		owners, err := primary.Addresses(a.hrp, f.Owners)
		if err != nil {
			return nil, err
		}
		if err := LinkLateConsumer(ctx, tx, a.w, utxo.InputID(), out.AssetID(), owners); err != nil {
			return nil, err
		}
		addrs = append(addrs, owners...)
		assets = append(assets, out.AssetID())
	}
	changes := make([]BalanceChange, 0, len(u.Ins))
	for i, in := range u.Ins {
		if err := putEVMIO(ctx, tx, txID.String(), "IN", i, in.Address, in.AssetID, in.Amount, in.Nonce); err != nil {
			return nil, err
		}
		assets = append(assets, in.AssetID)
		c := BalanceChange{TxID: txID, Address: in.Address, AssetID: in.AssetID, Amount: in.Amount, Export: true, Nonce: in.Nonce}
		if in.AssetID == a.avax {
			c.Wei = new(big.Int).Mul(new(big.Int).SetUint64(in.Amount), big.NewInt(-X2CRate))
		}
		changes = append(changes, c)
	}
	signerAddrs, err := FormatAddresses(a.hrp, signers...)
	if err != nil {
		return nil, err
	}
	if err := a.w.LinkTx(ctx, tx, "C", txID.String(), blk.Time, assets, append(addrs, signerAddrs...)); err != nil {
		return nil, err
	}
	return changes, nil
}

func (a *Applier) putTx(ctx context.Context, tx *store.Tx, blk Block, txID string, index int, typ, src, dst, creds string, raw []byte) error {
	if _, err := tx.Exec(ctx, `INSERT INTO px_txs (tx_id, chain_key, height, tx_index, block_id, timestamp, tx_type,
		source_chain, destination_chain, credentials, tx_bytes) VALUES ($1,'C',$2,$3,$4,$5,$6,$7,$8,$9,$10)
		ON CONFLICT (tx_id) DO UPDATE SET chain_key=excluded.chain_key, height=excluded.height, tx_index=excluded.tx_index,
		block_id=excluded.block_id, timestamp=excluded.timestamp, tx_type=excluded.tx_type, source_chain=excluded.source_chain,
		destination_chain=excluded.destination_chain, credentials=excluded.credentials, tx_bytes=excluded.tx_bytes`,
		txID, int64(blk.Height), index, blk.Hash, blk.Time, typ, src, dst, creds, raw); err != nil {
		return fmt.Errorf("catomic: put tx %s: %w", txID, err)
	}
	return nil
}

// putEVMIO records one EVMInput (IN) or EVMOutput (OUT) of an atomic tx.
func putEVMIO(ctx context.Context, tx *store.Tx, txID, dir string, i int, addr common.Address, asset ids.ID, amount, nonce uint64) error {
	if _, err := tx.Exec(ctx, `INSERT INTO c_atomic_evm_io (tx_id, direction, io_index, address, asset_id, amount, nonce)
		VALUES ($1,$2,$3,$4,$5,$6,$7) ON CONFLICT (tx_id, direction, io_index) DO UPDATE SET address=excluded.address,
		asset_id=excluded.asset_id, amount=excluded.amount, nonce=excluded.nonce`,
		txID, dir, i, addr.Hex(), asset.String(), primary.PadAmount(amount), int64(nonce)); err != nil {
		return fmt.Errorf("catomic: tx %s: put EVM %s %d: %w", txID, dir, i, err)
	}
	return nil
}

// DerivedTables are the shared tables the atomic side writes (rows with
// chain_key / created_chain / consumed_chain "C").
func DerivedTables() []string { return primary.DerivedTables }
