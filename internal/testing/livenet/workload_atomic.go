package livenet

import (
	"context"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/units"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	walletcommon "github.com/ava-labs/avalanchego/wallet/subnet/primary/common"
)

// atomic moves AVAX between X, P and C in every direction (ExportTx then
// ImportTx on the other side), all from heidi, and leaves one P->X export
// unimported so an atomic UTXO stays pending.
func (w *workload) atomic(ctx context.Context) error {
	heidi := w.key("heidi")
	hw, err := newWallet(ctx, w.n.URI(), heidi)
	if err != nil {
		return err
	}
	x, p, c := hw.X(), hw.P(), hw.C()
	avaxID := w.n.AVAXAssetID
	xID, cID, pID := w.n.XChainID, w.n.CChainID, w.n.PChainID
	ctxOpt := walletcommon.WithContext(ctx)
	heidiEth := heidi.EthAddress()
	owner := w.owners(1, "heidi")
	xAddr, pAddr, cAddr := w.addrs("X", "heidi"), w.addrs("P", "heidi"), w.addrs("C", "heidi")
	ethAddr := []string{heidiEth.Hex()}
	cat := func(a ...[]string) []string {
		var out []string
		for _, s := range a {
			out = append(out, s...)
		}
		return out
	}

	steps := []struct {
		chain, step, typ, purpose string
		addrs                     []string
		extra                     map[string]any
		f                         func() (ids.ID, error)
	}{
		{ChainX, "a01-export-x-to-p", "ExportTx", "heidi exports 100 AVAX X->P", cat(xAddr, pAddr), map[string]any{"destinationChain": "P"}, func() (ids.ID, error) {
			tx, err := x.IssueExportTx(pID, []*avax.TransferableOutput{out(avaxID, 100*units.Avax, owner)}, ctxOpt)
			return txID(tx, err)
		}},
		{ChainP, "a02-import-p-from-x", "ImportTx", "heidi imports the X->P export", cat(xAddr, pAddr), map[string]any{"sourceChain": "X"}, func() (ids.ID, error) {
			tx, err := p.IssueImportTx(xID, owner, ctxOpt)
			return txID(tx, err)
		}},
		{ChainP, "a03-export-p-to-x", "ExportTx", "heidi exports 50 AVAX P->X", cat(pAddr, xAddr), map[string]any{"destinationChain": "X"}, func() (ids.ID, error) {
			tx, err := p.IssueExportTx(xID, []*avax.TransferableOutput{out(avaxID, 50*units.Avax, owner)}, ctxOpt)
			return txID(tx, err)
		}},
		{ChainX, "a04-import-x-from-p", "ImportTx", "heidi imports the P->X export", cat(pAddr, xAddr), map[string]any{"sourceChain": "P"}, func() (ids.ID, error) {
			tx, err := x.IssueImportTx(pID, owner, ctxOpt)
			return txID(tx, err)
		}},
		{ChainX, "a05-export-x-to-c", "ExportTx", "heidi exports 100 AVAX X->C", cat(xAddr, cAddr), map[string]any{"destinationChain": "C"}, func() (ids.ID, error) {
			tx, err := x.IssueExportTx(cID, []*avax.TransferableOutput{out(avaxID, 100*units.Avax, owner)}, ctxOpt)
			return txID(tx, err)
		}},
		{ChainC, "a06-import-c-from-x", "ImportTx", "heidi imports the X->C export to her EVM address (atomic)", cat(cAddr, ethAddr), map[string]any{"sourceChain": "X"}, func() (ids.ID, error) {
			fee, err := w.cBaseFee(ctx)
			if err != nil {
				return ids.Empty, err
			}
			tx, err := c.IssueImportTx(xID, heidiEth, ctxOpt, fee)
			return txID(tx, err)
		}},
		{ChainC, "a07-export-c-to-x", "ExportTx", "heidi exports 20 AVAX C->X from her EVM address (atomic)", cat(ethAddr, xAddr), map[string]any{"destinationChain": "X"}, func() (ids.ID, error) {
			fee, err := w.cBaseFee(ctx)
			if err != nil {
				return ids.Empty, err
			}
			tx, err := c.IssueExportTx(xID, []*secp256k1fx.TransferOutput{{Amt: 20 * units.Avax, OutputOwners: *owner}}, ctxOpt, fee)
			return txID(tx, err)
		}},
		{ChainX, "a08-import-x-from-c", "ImportTx", "heidi imports the C->X export", cat(cAddr, xAddr), map[string]any{"sourceChain": "C"}, func() (ids.ID, error) {
			tx, err := x.IssueImportTx(cID, owner, ctxOpt)
			return txID(tx, err)
		}},
		{ChainP, "a09-export-p-to-c", "ExportTx", "heidi exports 30 AVAX P->C", cat(pAddr, cAddr), map[string]any{"destinationChain": "C"}, func() (ids.ID, error) {
			tx, err := p.IssueExportTx(cID, []*avax.TransferableOutput{out(avaxID, 30*units.Avax, owner)}, ctxOpt)
			return txID(tx, err)
		}},
		{ChainC, "a10-import-c-from-p", "ImportTx", "heidi imports the P->C export (atomic)", cat(cAddr, ethAddr), map[string]any{"sourceChain": "P"}, func() (ids.ID, error) {
			fee, err := w.cBaseFee(ctx)
			if err != nil {
				return ids.Empty, err
			}
			tx, err := c.IssueImportTx(pID, heidiEth, ctxOpt, fee)
			return txID(tx, err)
		}},
		{ChainC, "a11-export-c-to-p", "ExportTx", "heidi exports 10 AVAX C->P (atomic)", cat(ethAddr, pAddr), map[string]any{"destinationChain": "P"}, func() (ids.ID, error) {
			fee, err := w.cBaseFee(ctx)
			if err != nil {
				return ids.Empty, err
			}
			tx, err := c.IssueExportTx(pID, []*secp256k1fx.TransferOutput{{Amt: 10 * units.Avax, OutputOwners: *owner}}, ctxOpt, fee)
			return txID(tx, err)
		}},
		{ChainP, "a12-import-p-from-c", "ImportTx", "heidi imports the C->P export", cat(cAddr, pAddr), map[string]any{"sourceChain": "C"}, func() (ids.ID, error) {
			tx, err := p.IssueImportTx(cID, owner, ctxOpt)
			return txID(tx, err)
		}},
		{ChainP, "a13-export-p-to-x-pending", "ExportTx", "heidi exports 1 AVAX P->X owned by carol, never imported (a pending atomic UTXO)", cat(pAddr, w.addrs("X", "carol")), map[string]any{"destinationChain": "X", "leftPending": true}, func() (ids.ID, error) {
			tx, err := p.IssueExportTx(xID, []*avax.TransferableOutput{out(avaxID, units.Avax, w.owners(1, "carol"))}, ctxOpt)
			return txID(tx, err)
		}},
	}
	for _, s := range steps {
		if _, err := w.issue(s.chain, s.step, s.typ, s.purpose, s.addrs, s.extra, s.f); err != nil {
			return err
		}
	}
	return nil
}
