package livenet

import (
	"context"
	"errors"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/units"
	"github.com/ava-labs/avalanchego/vms/avm/txs"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/components/verify"
	"github.com/ava-labs/avalanchego/vms/nftfx"
	"github.com/ava-labs/avalanchego/vms/propertyfx"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	walletcommon "github.com/ava-labs/avalanchego/wallet/subnet/primary/common"
)

// xChain covers the X-chain's tx kinds: BaseTx (plain, memo, multi-output
// with a multisig output, other assets, mixed assets), CreateAssetTx
// (fixed cap, variable cap, NFT, property), OperationTx (FT mint, NFT mints,
// NFT transfer, property mint and burn). Import/export are in atomic().
func (w *workload) xChain(ctx context.Context) error {
	uri := w.n.URI()
	wa, err := newWallet(ctx, uri, w.key("alice"))
	if err != nil {
		return err
	}
	wb, err := newWallet(ctx, uri, w.key("bob"))
	if err != nil {
		return err
	}
	xa, xb := wa.X(), wb.X()
	avaxID := w.n.AVAXAssetID
	ctxOpt := walletcommon.WithContext(ctx)

	if _, err := w.issue(ChainX, "x01-base-alice-carol", "BaseTx", "1000 AVAX alice->carol, no memo", w.addrs("X", "alice", "carol"), nil, func() (ids.ID, error) {
		tx, err := xa.IssueBaseTx([]*avax.TransferableOutput{out(avaxID, 1000*units.Avax, w.owners(1, "carol"))}, ctxOpt)
		return txID(tx, err)
	}); err != nil {
		return err
	}
	memo := "permafrost livenet: hello dave"
	if _, err := w.issue(ChainX, "x02-base-alice-dave-memo", "BaseTx", "250 AVAX alice->dave with a memo", w.addrs("X", "alice", "dave"), map[string]any{"memo": memo}, func() (ids.ID, error) {
		tx, err := xa.IssueBaseTx([]*avax.TransferableOutput{out(avaxID, 250*units.Avax, w.owners(1, "dave"))}, ctxOpt, walletcommon.WithMemo([]byte(memo)))
		return txID(tx, err)
	}); err != nil {
		return err
	}
	if _, err := w.issue(ChainX, "x03-base-bob-multi", "BaseTx", "bob->carol 10, dave 20, erin 30, 2-of-2 carol+dave 5 AVAX, memo", w.addrs("X", "bob", "carol", "dave", "erin"), map[string]any{"memo": "multi-output payout"}, func() (ids.ID, error) {
		tx, err := xb.IssueBaseTx([]*avax.TransferableOutput{
			out(avaxID, 10*units.Avax, w.owners(1, "carol")),
			out(avaxID, 20*units.Avax, w.owners(1, "dave")),
			out(avaxID, 30*units.Avax, w.owners(1, "erin")),
			out(avaxID, 5*units.Avax, w.owners(2, "carol", "dave")),
		}, ctxOpt, walletcommon.WithMemo([]byte("multi-output payout")))
		return txID(tx, err)
	}); err != nil {
		return err
	}

	transferOut := func(amount uint64, names ...string) *secp256k1fx.TransferOutput {
		return &secp256k1fx.TransferOutput{Amt: amount, OutputOwners: *w.owners(1, names...)}
	}
	createAsset := func(step, name, symbol string, denom byte, state map[uint32][]verify.State, purpose string, holders ...string) (ids.ID, error) {
		id, err := w.issue(ChainX, step, "CreateAssetTx", purpose, w.addrs("X", append([]string{"alice"}, holders...)...),
			map[string]any{"name": name, "symbol": symbol, "denomination": denom}, func() (ids.ID, error) {
				tx, err := xa.IssueCreateAssetTx(name, symbol, denom, state, ctxOpt)
				return txID(tx, err)
			})
		if err == nil {
			w.mu.Lock()
			w.res.XAssets[symbol] = id
			w.mu.Unlock()
		}
		return id, err
	}
	fixed, err := createAsset("x04-create-fixed-cap", "Livenet Fixed Cap Coin", "LFC", 2, map[uint32][]verify.State{
		0: {transferOut(10_000_000, "alice"), transferOut(5_000_000, "bob")},
	}, "fixed-cap asset LFC (denomination 2; 100000.00 to alice, 50000.00 to bob; no minter)", "bob")
	if err != nil {
		return err
	}
	variable, err := createAsset("x05-create-variable-cap", "Livenet Variable Cap Coin", "LVC", 6, map[uint32][]verify.State{
		0: {&secp256k1fx.MintOutput{OutputOwners: *w.owners(1, "alice")}, transferOut(1_000_000_000, "alice")},
	}, "variable-cap asset LVC (denomination 6; 1000.000000 to alice; mint output owned by alice)")
	if err != nil {
		return err
	}
	nft, err := createAsset("x06-create-nft", "Livenet Art", "LART", 0, map[uint32][]verify.State{
		1: {
			&nftfx.MintOutput{GroupID: 0, OutputOwners: *w.owners(1, "alice")},
			&nftfx.MintOutput{GroupID: 1, OutputOwners: *w.owners(1, "alice")},
		},
	}, "NFT asset LART (nftfx mint outputs for groups 0 and 1 owned by alice)")
	if err != nil {
		return err
	}
	property, err := createAsset("x07-create-property", "Livenet Deed", "LDED", 0, map[uint32][]verify.State{
		2: {&propertyfx.MintOutput{OutputOwners: *w.owners(1, "alice")}},
	}, "property asset LDED (propertyfx mint output owned by alice)")
	if err != nil {
		return err
	}

	if _, err := w.issue(ChainX, "x08-mint-variable-cap", "OperationTx", "mint 250.000000 LVC to carol", w.addrs("X", "alice", "carol"),
		map[string]any{"assetID": variable.String(), "operation": "secp256k1fx.MintOperation"}, func() (ids.ID, error) {
			tx, err := xa.IssueOperationTxMintFT(map[ids.ID]*secp256k1fx.TransferOutput{variable: transferOut(250_000_000, "carol")}, ctxOpt)
			return txID(tx, err)
		}); err != nil {
		return err
	}
	payload := []byte(`{"name":"Livenet Art #1","image":"ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi/1.png"}`)
	var mintTx *txs.Tx
	if _, err := w.issue(ChainX, "x09-mint-nft-alice", "OperationTx", "mint one LART NFT (JSON payload) to alice", w.addrs("X", "alice"),
		map[string]any{"assetID": nft.String(), "operation": "nftfx.MintOperation"}, func() (ids.ID, error) {
			tx, err := xa.IssueOperationTxMintNFT(nft, payload, []*secp256k1fx.OutputOwners{w.owners(1, "alice")}, ctxOpt)
			mintTx = tx
			return txID(tx, err)
		}); err != nil {
		return err
	}
	if _, err := w.issue(ChainX, "x10-mint-nft-two", "OperationTx", "mint two LART NFTs (text payload) to dave and carol in one operation", w.addrs("X", "alice", "dave", "carol"),
		map[string]any{"assetID": nft.String(), "operation": "nftfx.MintOperation"}, func() (ids.ID, error) {
			tx, err := xa.IssueOperationTxMintNFT(nft, []byte("ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi/2.json"),
				[]*secp256k1fx.OutputOwners{w.owners(1, "dave"), w.owners(1, "carol")}, ctxOpt)
			return txID(tx, err)
		}); err != nil {
		return err
	}
	// NFT transfer: no wallet helper, so build the nftfx.TransferOperation
	// spending the NFT minted in x09.
	var nftUTXO *avax.UTXO
	var nftOut *nftfx.TransferOutput
	for _, u := range mintTx.UTXOs() {
		if o, ok := u.Out.(*nftfx.TransferOutput); ok {
			nftUTXO, nftOut = u, o
		}
	}
	if nftUTXO == nil {
		return errors.New("x09 minted no NFT output")
	}
	if _, err := w.issue(ChainX, "x11-transfer-nft", "OperationTx", "transfer alice's LART NFT to dave (nftfx.TransferOperation)", w.addrs("X", "alice", "dave"),
		map[string]any{"assetID": nft.String(), "operation": "nftfx.TransferOperation"}, func() (ids.ID, error) {
			tx, err := xa.IssueOperationTx([]*txs.Operation{{
				Asset:   avax.Asset{ID: nft},
				UTXOIDs: []*avax.UTXOID{&nftUTXO.UTXOID},
				FxID:    nftfx.ID,
				Op: &nftfx.TransferOperation{
					Input: secp256k1fx.Input{SigIndices: []uint32{0}},
					Output: nftfx.TransferOutput{
						GroupID:      nftOut.GroupID,
						Payload:      nftOut.Payload,
						OutputOwners: *w.owners(1, "dave"),
					},
				},
			}}, ctxOpt)
			return txID(tx, err)
		}); err != nil {
		return err
	}
	if _, err := w.issue(ChainX, "x12-mint-property", "OperationTx", "mint LDED property to alice", w.addrs("X", "alice"),
		map[string]any{"assetID": property.String(), "operation": "propertyfx.MintOperation"}, func() (ids.ID, error) {
			tx, err := xa.IssueOperationTxMintProperty(property, w.owners(1, "alice"), ctxOpt)
			return txID(tx, err)
		}); err != nil {
		return err
	}
	if _, err := w.issue(ChainX, "x13-burn-property", "OperationTx", "burn alice's LDED property", w.addrs("X", "alice"),
		map[string]any{"assetID": property.String(), "operation": "propertyfx.BurnOperation"}, func() (ids.ID, error) {
			tx, err := xa.IssueOperationTxBurnProperty(property, ctxOpt)
			return txID(tx, err)
		}); err != nil {
		return err
	}
	if _, err := w.issue(ChainX, "x14-base-fixed-cap", "BaseTx", "12.34 LFC alice->carol", w.addrs("X", "alice", "carol"), map[string]any{"assetID": fixed.String()}, func() (ids.ID, error) {
		tx, err := xa.IssueBaseTx([]*avax.TransferableOutput{out(fixed, 1234, w.owners(1, "carol"))}, ctxOpt)
		return txID(tx, err)
	}); err != nil {
		return err
	}
	if _, err := w.issue(ChainX, "x15-base-mixed", "BaseTx", "100 LVC + 5 AVAX alice->erin in one tx", w.addrs("X", "alice", "erin"), map[string]any{"assetIDs": []string{variable.String(), avaxID.String()}}, func() (ids.ID, error) {
		tx, err := xa.IssueBaseTx([]*avax.TransferableOutput{
			out(variable, 100_000_000, w.owners(1, "erin")),
			out(avaxID, 5*units.Avax, w.owners(1, "erin")),
		}, ctxOpt)
		return txID(tx, err)
	}); err != nil {
		return err
	}
	return nil
}

// txID adapts the wallet's (tx, err) returns.
func txID[T interface{ ID() ids.ID }](tx T, err error) (ids.ID, error) {
	if err != nil {
		return ids.Empty, err
	}
	return tx.ID(), nil
}
