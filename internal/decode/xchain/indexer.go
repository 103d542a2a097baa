// Package xchain indexes the X-chain: blocks, txs (BaseTx, CreateAssetTx,
// OperationTx, ImportTx, ExportTx; UNKNOWN for what does not decode), UTXOs,
// assets and links, into the shared primary-network tables through
// internal/decode/primary. Height 0 also loads the genesis assets.
//
// utxo_type values written for X-spendable UTXOs (the data API's lower-case
// Utxo.utxoType, see catomic.UTXOType): "transfer" (secp256k1fx.TransferOutput),
// "mint" (secp256k1fx.MintOutput, nftfx.MintOutput, propertyfx.MintOutput),
// "nft" (nftfx.TransferOutput), "property" (propertyfx.OwnedOutput); outputs
// exported to P are "TRANSFER" (the P-chain's vocabulary), to C lower case.
package xchain

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/vms/avm"
	"github.com/ava-labs/avalanchego/vms/avm/block"
	"github.com/ava-labs/avalanchego/vms/avm/txs"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/nftfx"
	"github.com/ava-labs/avalanchego/vms/propertyfx"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	"github.com/permafrost-dev/permafrost/internal/decode/catomic"
	"github.com/permafrost-dev/permafrost/internal/decode/primary"
	"github.com/permafrost-dev/permafrost/internal/decode/proposervm"
	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Tx types written to px_txs.tx_type (the data API's PrimaryNetworkTxType).
const (
	TypeBase        = "BaseTx"
	TypeCreateAsset = "CreateAssetTx"
	TypeOperation   = "OperationTx"
	TypeImport      = "ImportTx"
	TypeExport      = "ExportTx"
	TypeUnknown     = "UNKNOWN"
)

// Asset types and caps written to the assets table (the data API's
// PrimaryNetworkAssetType and PrimaryNetworkAssetCap).
const (
	AssetFungible = "secp256k1"
	AssetNFT      = "nft"
	CapFixed      = "fixed"
	CapVariable   = "variable"
)

var _ ingest.Indexer = (*Indexer)(nil)

// Indexer is the X-chain's ingest.Indexer.
type Indexer struct {
	g      *genesis.Genesis
	parser block.Parser
	chains catomic.ChainKeys
	w      primary.Writer
	log    *slog.Logger
}

// NewIndexer builds the X-chain indexer of g's network. log may be nil.
func NewIndexer(g *genesis.Genesis, log *slog.Logger) (*Indexer, error) {
	if g == nil {
		return nil, fmt.Errorf("xchain: nil genesis")
	}
	p, err := newParser()
	if err != nil {
		return nil, err
	}
	chains, err := catomic.NewChainKeys(g)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return &Indexer{g: g, parser: p, chains: chains, w: primary.Writer{HRP: g.HRP}, log: log}, nil
}

// DerivedTables are the shared primary-network tables (X rows in them).
func (ix *Indexer) DerivedTables() []string { return primary.DerivedTables }

// Apply indexes one X block; at height 0 it also loads the genesis assets.
func (ix *Indexer) Apply(ctx context.Context, tx *store.Tx, b ingest.RawBlock) error {
	inner, prop, err := proposervm.Unwrap(b.Bytes, b.Hash)
	if err != nil {
		return fmt.Errorf("xchain: height %d: %w", b.Height, err)
	}
	b.Bytes = inner
	blk, err := DecodeBlock(ix.parser, b.Bytes)
	if err != nil {
		return fmt.Errorf("xchain: height %d: %w", b.Height, err)
	}
	if blk.Height != b.Height {
		return fmt.Errorf("xchain: block at height %d says height %d", b.Height, blk.Height)
	}
	if b.Hash != "" && b.Hash != blk.ID.String() {
		return fmt.Errorf("xchain: height %d: block id %s, source says %s", b.Height, blk.ID, b.Hash)
	}
	ts := int64(blk.Time)
	txIDs := make([]string, len(blk.Txs))
	for i, t := range blk.Txs {
		txIDs[i] = t.ID.String()
	}
	txIDsJSON, _ := json.Marshal(txIDs)
	propID, propParent, propNode, propPHeight, propTime := prop.Row()
	if _, err := tx.Exec(ctx, `INSERT INTO px_blocks (chain_key, height, block_id, parent_id, timestamp, block_type,
		tx_count, tx_ids, size_bytes, proposer_id, proposer_parent_id, proposer_node_id, proposer_p_height, proposer_timestamp)
		VALUES ('X',$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)
		ON CONFLICT (chain_key, height) DO UPDATE SET block_id=excluded.block_id, parent_id=excluded.parent_id,
		timestamp=excluded.timestamp, block_type=excluded.block_type, tx_count=excluded.tx_count, tx_ids=excluded.tx_ids,
		size_bytes=excluded.size_bytes, proposer_id=excluded.proposer_id, proposer_parent_id=excluded.proposer_parent_id,
		proposer_node_id=excluded.proposer_node_id, proposer_p_height=excluded.proposer_p_height,
		proposer_timestamp=excluded.proposer_timestamp`,
		int64(blk.Height), blk.ID.String(), blk.ParentID.String(), ts, "StandardBlock", len(blk.Txs),
		string(txIDsJSON), blk.Size, propID, propParent, propNode, propPHeight, propTime); err != nil {
		return fmt.Errorf("xchain: put block %d: %w", blk.Height, err)
	}
	if blk.Height == 0 {
		if err := ix.loadGenesis(ctx, tx, ts); err != nil {
			return err
		}
	}
	var burned uint64
	for i, t := range blk.Txs {
		pos := position{height: int64(blk.Height), index: i, blockID: blk.ID.String(), time: ts}
		if t.Tx == nil {
			ix.log.Warn("undecodable X-chain tx stored raw", "height", blk.Height, "index", i, "id", t.ID, "err", t.Err)
			if err := ix.putTx(ctx, tx, pos, t.ID, TypeUnknown, nil, "", "", "[]", t.Raw); err != nil {
				return err
			}
			continue
		}
		fee, err := ix.applyTx(ctx, tx, pos, t.Tx)
		if err != nil {
			return err
		}
		burned += fee
	}
	return ix.w.AddSupply(ctx, tx, "X", primary.Supply{Burned: int64(burned)})
}

// position is where a tx sits: genesis txs are in no block (height -1).
type position struct {
	height  int64
	index   int
	blockID string
	time    int64
}

func (p position) utxoHeight() uint64 {
	if p.height < 0 {
		return 0
	}
	return uint64(p.height)
}

// loadGenesis writes the X genesis: each genesis asset's CreateAssetTx (IDs
// computed as the node does, vms/avm VM.initGenesis) with its initial UTXOs.
func (ix *Indexer) loadGenesis(ctx context.Context, tx *store.Tx, time int64) error {
	_, cc, err := ix.g.Chain(constants.AVMID)
	if err != nil {
		return fmt.Errorf("xchain: genesis: %w", err)
	}
	gc := ix.parser.GenesisCodec()
	var gen avm.Genesis
	if _, err := gc.Unmarshal(cc.GenesisData, &gen); err != nil {
		return fmt.Errorf("xchain: parse AVM genesis: %w", err)
	}
	for i, ga := range gen.Txs {
		if ga == nil {
			return fmt.Errorf("xchain: genesis asset %d is nil", i)
		}
		t := &txs.Tx{Unsigned: &ga.CreateAssetTx}
		if err := t.Initialize(gc); err != nil {
			return fmt.Errorf("xchain: genesis asset %q: %w", ga.Alias, err)
		}
		// The first genesis asset is the fee asset, AVAX (genesis.AVAXAssetID).
		if i == 0 && t.ID() != ix.g.AvaxAssetID {
			return fmt.Errorf("xchain: genesis asset %q has id %s, AVAX is %s", ga.Alias, t.ID(), ix.g.AvaxAssetID)
		}
		// A genesis asset's initial AVAX is the genesis supply, not minted
		// by a tx: it has no inputs, so no fee either.
		if _, err := ix.applyTx(ctx, tx, position{height: -1, index: i, time: time}, t); err != nil {
			return err
		}
	}
	return nil
}

// facts is what the tx-type visitor gathers.
type facts struct {
	typ      string
	base     *txs.BaseTx
	src, dst ids.ID
	imported []*avax.TransferableInput
	exported []*avax.TransferableOutput
	ops      []*txs.Operation
	asset    *txs.CreateAssetTx
}

func (f *facts) BaseTx(t *txs.BaseTx) error {
	f.typ, f.base = TypeBase, t
	return nil
}

func (f *facts) CreateAssetTx(t *txs.CreateAssetTx) error {
	f.typ, f.base, f.asset = TypeCreateAsset, &t.BaseTx, t
	return nil
}

func (f *facts) OperationTx(t *txs.OperationTx) error {
	f.typ, f.base, f.ops = TypeOperation, &t.BaseTx, t.Ops
	return nil
}

func (f *facts) ImportTx(t *txs.ImportTx) error {
	f.typ, f.base, f.src, f.imported = TypeImport, &t.BaseTx, t.SourceChain, t.ImportedIns
	return nil
}

func (f *facts) ExportTx(t *txs.ExportTx) error {
	f.typ, f.base, f.dst, f.exported = TypeExport, &t.BaseTx, t.DestinationChain, t.ExportedOuts
	return nil
}

// consumed is one UTXO a tx spends, with the index of its credential.
type consumed struct {
	utxo   *avax.UTXOID
	asset  ids.ID
	amount uint64
	cred   int
}

// applyTx writes one tx and returns its fee: the AVAX it consumes and does
// not produce (outputs and exports), as the avm burns it.
func (ix *Indexer) applyTx(ctx context.Context, tx *store.Tx, pos position, t *txs.Tx) (uint64, error) {
	txID := t.ID()
	var f facts
	if err := t.Unsigned.Visit(&f); err != nil {
		return 0, fmt.Errorf("xchain: tx %s: %w", txID, err)
	}
	if f.base == nil {
		return 0, fmt.Errorf("xchain: tx %s: no base tx", txID)
	}

	// Inputs in credential order: the base inputs, then the imported inputs
	// (ImportTx) or one credential per operation (OperationTx).
	var ins []consumed
	for i, in := range f.base.Ins {
		if in == nil || in.In == nil {
			return 0, fmt.Errorf("xchain: tx %s: nil input %d", txID, i)
		}
		ins = append(ins, consumed{utxo: &in.UTXOID, asset: in.AssetID(), amount: in.In.Amount(), cred: i})
	}
	for i, in := range f.imported {
		if in == nil || in.In == nil {
			return 0, fmt.Errorf("xchain: tx %s: nil imported input %d", txID, i)
		}
		ins = append(ins, consumed{utxo: &in.UTXOID, asset: in.AssetID(), amount: in.In.Amount(), cred: len(f.base.Ins) + i})
	}
	for i, op := range f.ops {
		if op == nil {
			return 0, fmt.Errorf("xchain: tx %s: nil operation %d", txID, i)
		}
		for _, u := range op.UTXOIDs {
			ins = append(ins, consumed{utxo: u, asset: op.AssetID(), cred: len(f.base.Ins) + i})
		}
	}

	sigs := make([][][secp256k1.SignatureLen]byte, len(t.Creds))
	for i, c := range t.Creds {
		if c == nil {
			return 0, fmt.Errorf("xchain: tx %s: nil credential %d", txID, i)
		}
		switch cred := c.Credential.(type) {
		case *secp256k1fx.Credential:
			sigs[i] = cred.Sigs
		case *nftfx.Credential:
			sigs[i] = cred.Sigs
		case *propertyfx.Credential:
			sigs[i] = cred.Sigs
		default:
			return 0, fmt.Errorf("xchain: tx %s: credential %d is %T", txID, i, c.Credential)
		}
	}
	creds, signers := catomic.Credentials(t.Unsigned.Bytes(), sigs)

	var src, dst string
	if f.typ == TypeImport {
		src = f.src.String()
	}
	if f.typ == TypeExport {
		dst = f.dst.String()
	}
	if err := ix.putTx(ctx, tx, pos, txID, f.typ, f.base.Memo, src, dst, creds, t.Bytes()); err != nil {
		return 0, err
	}

	var (
		assets                     []ids.ID
		addrs                      []string
		consumedAVAX, producedAVAX uint64
	)
	for _, c := range ins {
		if c.asset == ix.g.AvaxAssetID {
			consumedAVAX += c.amount
		}
	}
	for _, in := range ins {
		owners, err := catomic.OwnersOf(ctx, tx, in.utxo.InputID())
		if err != nil {
			return 0, err
		}
		addrs = append(addrs, owners...)
		assets = append(assets, in.asset)
		if err := ix.w.SpendUTXO(ctx, tx, in.utxo, primary.Spent{
			TxID: txID.String(), ChainKey: "X", Height: pos.utxoHeight(), Time: pos.time, InputIndex: in.cred,
			AssetID: in.asset.String(), Amount: in.amount,
		}); err != nil {
			return 0, err
		}
	}
	signerAddrs, err := catomic.FormatAddresses(ix.g.HRP, signers...)
	if err != nil {
		return 0, err
	}
	addrs = append(addrs, signerAddrs...)

	// Outputs the tx creates on X, indexed by the node's own rule (txs.Tx.UTXOs:
	// base outputs, then initial states or operation outputs in order).
	for _, u := range t.UTXOs() {
		producedAVAX += avaxAmount(ix.g.AvaxAssetID, u.AssetID(), u.Out)
		owners, err := ix.putUTXO(ctx, tx, pos, u, "X")
		if err != nil {
			return 0, fmt.Errorf("xchain: tx %s: %w", txID, err)
		}
		addrs = append(addrs, owners...)
		assets = append(assets, u.AssetID())
	}
	// Exported outputs follow the base outputs' indexes (avm executor ExportTx).
	if len(f.exported) > 0 {
		dest, known := ix.chains.Key(f.dst)
		if !known {
			ix.log.Warn("X-chain export to a chain outside the primary network", "tx", txID, "chain", dest)
		}
		for i, out := range f.exported {
			if out == nil || out.Out == nil {
				return 0, fmt.Errorf("xchain: tx %s: nil exported output %d", txID, i)
			}
			u := &avax.UTXO{
				UTXOID: avax.UTXOID{TxID: txID, OutputIndex: uint32(len(f.base.Outs) + i)},
				Asset:  avax.Asset{ID: out.AssetID()},
				Out:    out.Out,
			}
			producedAVAX += avaxAmount(ix.g.AvaxAssetID, u.AssetID(), u.Out)
			owners, err := ix.putUTXO(ctx, tx, pos, u, dest)
			if err != nil {
				return 0, fmt.Errorf("xchain: tx %s: %w", txID, err)
			}
			if err := catomic.LinkLateConsumer(ctx, tx, ix.w, u.InputID(), u.AssetID(), owners); err != nil {
				return 0, err
			}
			addrs = append(addrs, owners...)
			assets = append(assets, u.AssetID())
		}
	}

	if f.asset != nil {
		assets = append(assets, txID)
		if err := ix.putAsset(ctx, tx, txID, f.asset, pos.time); err != nil {
			return 0, err
		}
	}
	if err := ix.w.LinkTx(ctx, tx, "X", txID.String(), pos.time, assets, addrs); err != nil {
		return 0, err
	}
	if consumedAVAX < producedAVAX {
		return 0, nil // a genesis asset: AVAX from no input
	}
	return consumedAVAX - producedAVAX, nil
}

// avaxAmount is the AVAX an output holds (0 for other assets and for
// outputs without an amount).
func avaxAmount(avaxID, asset ids.ID, out any) uint64 {
	if a, ok := out.(interface{ Amount() uint64 }); ok && asset == avaxID {
		return a.Amount()
	}
	return 0
}

// putUTXO writes a UTXO created by an X tx, spendable on chainKey, and
// returns its owners.
func (ix *Indexer) putUTXO(ctx context.Context, tx *store.Tx, pos position, u *avax.UTXO, chainKey string) ([]string, error) {
	utxoBytes, err := ix.parser.Codec().Marshal(txs.CodecVersion, u)
	if err != nil {
		return nil, fmt.Errorf("marshal utxo %d: %w", u.OutputIndex, err)
	}
	typ, err := catomic.UTXOType(chainKey, u.Out)
	if err != nil {
		return nil, fmt.Errorf("utxo %d: %w", u.OutputIndex, err)
	}
	if err := ix.w.PutUTXO(ctx, tx, u, utxoBytes, primary.Created{
		CreatedChain: "X", ChainKey: chainKey, Height: pos.utxoHeight(), Time: pos.time, UTXOType: typ,
	}); err != nil {
		return nil, err
	}
	fields, err := primary.OutputFields(u.Out)
	if err != nil {
		return nil, err
	}
	return primary.Addresses(ix.g.HRP, fields.Owners)
}

// putAsset records a created asset. It is an NFT family when its initial
// states hold nftfx or propertyfx outputs; its cap is variable when any
// initial output is a minter (more can be minted), else fixed.
func (ix *Indexer) putAsset(ctx context.Context, tx *store.Tx, assetID ids.ID, a *txs.CreateAssetTx, time int64) error {
	typ, capacity := AssetFungible, CapFixed
	for _, st := range a.States {
		if st == nil {
			continue
		}
		for _, out := range st.Outs {
			switch out.(type) {
			case *nftfx.MintOutput, *nftfx.TransferOutput, *propertyfx.MintOutput, *propertyfx.OwnedOutput:
				typ = AssetNFT
			}
			switch out.(type) {
			case *secp256k1fx.MintOutput, *nftfx.MintOutput, *propertyfx.MintOutput:
				capacity = CapVariable
			}
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO assets (asset_id, name, symbol, denomination, asset_type, cap, created_tx, created_time)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8) ON CONFLICT (asset_id) DO UPDATE SET name=excluded.name, symbol=excluded.symbol,
		denomination=excluded.denomination, asset_type=excluded.asset_type, cap=excluded.cap, created_tx=excluded.created_tx,
		created_time=excluded.created_time`,
		assetID.String(), a.Name, a.Symbol, int(a.Denomination), typ, capacity, assetID.String(), time); err != nil {
		return fmt.Errorf("xchain: put asset %s: %w", assetID, err)
	}
	return nil
}

func (ix *Indexer) putTx(ctx context.Context, tx *store.Tx, pos position, txID ids.ID, typ string, memo []byte, src, dst, creds string, raw []byte) error {
	memoHex := ""
	if len(memo) > 0 {
		memoHex = "0x" + hex.EncodeToString(memo)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO px_txs (tx_id, chain_key, height, tx_index, block_id, timestamp, tx_type, memo,
		source_chain, destination_chain, credentials, tx_bytes) VALUES ($1,'X',$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)
		ON CONFLICT (tx_id) DO UPDATE SET chain_key=excluded.chain_key, height=excluded.height, tx_index=excluded.tx_index,
		block_id=excluded.block_id, timestamp=excluded.timestamp, tx_type=excluded.tx_type, memo=excluded.memo,
		source_chain=excluded.source_chain, destination_chain=excluded.destination_chain, credentials=excluded.credentials,
		tx_bytes=excluded.tx_bytes`,
		txID.String(), pos.height, pos.index, pos.blockID, pos.time, typ, memoHex, src, dst, creds, raw); err != nil {
		return fmt.Errorf("xchain: put tx %s: %w", txID, err)
	}
	return nil
}
