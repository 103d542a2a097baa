package livenet

import (
	"context"
	"fmt"

	"github.com/ava-labs/libevm/common"
	"golang.org/x/sync/errgroup"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/units"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
	"github.com/ava-labs/avalanchego/wallet/subnet/primary"

	walletcommon "github.com/ava-labs/avalanchego/wallet/subnet/primary/common"
)

// concurrent issues txs on every chain at the same instant, so blocks carry
// several txs: X and P from three keys each (one goroutine per wallet), EVM
// txs with consecutive nonces from a few senders, and a C-chain atomic
// export next to the C-chain's EVM txs.
func (w *workload) concurrent(ctx context.Context) error {
	uri := w.n.URI()
	avaxID := w.n.AVAXAssetID
	wallets := map[string]*primary.Wallet{}
	for _, name := range []string{"niaj", "alice", "bob", "frank", "grace", "heidi"} {
		wl, err := newWallet(ctx, uri, w.key(name))
		if err != nil {
			return err
		}
		wallets[name] = wl
	}
	cFee, err := w.cBaseFee(ctx)
	if err != nil {
		return err
	}
	start := make(chan struct{})
	g, gctx := errgroup.WithContext(ctx)
	ctxOpt := walletcommon.WithContext(gctx)
	goIssue := func(chain, step, typ, purpose string, addrs []string, f func() (ids.ID, error)) {
		g.Go(func() error {
			<-start
			_, err := w.issue(chain, step, typ, purpose, addrs, nil, f)
			return err
		})
	}
	for i, name := range []string{"niaj", "alice", "bob"} {
		x := wallets[name].X()
		amount := uint64(i+1) * units.Avax
		goIssue(ChainX, fmt.Sprintf("k%02d-x-base-%s", i+1, name), "BaseTx", fmt.Sprintf("concurrent: %d AVAX %s->dave on X", i+1, name), w.addrs("X", name, "dave"), func() (ids.ID, error) {
			tx, err := x.IssueBaseTx([]*avax.TransferableOutput{out(avaxID, amount, w.owners(1, "dave"))}, ctxOpt)
			return txID(tx, err)
		})
	}
	for i, name := range []string{"niaj", "frank", "grace"} {
		p := wallets[name].P()
		amount := uint64(i+1) * units.Avax
		goIssue(ChainP, fmt.Sprintf("k%02d-p-base-%s", i+4, name), "BaseTx", fmt.Sprintf("concurrent: %d AVAX %s->erin on P", i+1, name), w.addrs("P", name, "erin"), func() (ids.ID, error) {
			tx, err := p.IssueBaseTx([]*avax.TransferableOutput{out(avaxID, amount, w.owners(1, "erin"))}, ctxOpt)
			return txID(tx, err)
		})
	}
	heidi := w.key("heidi")
	hc := wallets["heidi"].C()
	goIssue(ChainC, "k07-c-atomic-export", "ExportTx", "concurrent: heidi exports 3 AVAX C->X (atomic, next to EVM txs)", append([]string{heidi.EthAddress().Hex()}, w.addrs("X", "heidi")...), func() (ids.ID, error) {
		tx, err := hc.IssueExportTx(w.n.XChainID, []*secp256k1fx.TransferOutput{{Amt: 3 * units.Avax, OutputOwners: *w.owners(1, "heidi")}}, ctxOpt, cFee)
		return txID(tx, err)
	})

	evmBurst := func(c *EVMChain, txs []EVMTx) {
		g.Go(func() error {
			<-start
			var ps []*Pending
			for _, tx := range txs {
				p, err := c.Send(gctx, tx)
				if err != nil {
					return err
				}
				ps = append(ps, p)
			}
			return c.Wait(gctx, ps...)
		})
	}
	transfer := func(from, to string, amount int64, step string) EVMTx {
		toA := w.key(to).EthAddress()
		return EVMTx{From: w.key(from), To: &toA, Value: Avax(amount), Step: step, Purpose: fmt.Sprintf("concurrent: %d %s->%s", amount, from, to)}
	}
	var cTxs []EVMTx
	for i := 0; i < 4; i++ {
		cTxs = append(cTxs, transfer("niaj", "carol", int64(i+1), fmt.Sprintf("k%02d-c-niaj-%d", 8+i, i)))
	}
	cTxs = append(cTxs, transfer("judy", "erin", 1, "k12-c-judy-0"), transfer("judy", "dave", 2, "k13-c-judy-1"))
	token := w.res.CContracts["DevToken"]
	malloryA := w.key("mallory").EthAddress()
	cTxs = append(cTxs, EVMTx{From: w.key("ivan"), To: &token, Data: w.contracts["DevToken"].Call("transfer", malloryA, Avax(3)), Type: "ContractCall:transfer",
		Step: "k14-c-erc20-transfer", Purpose: "concurrent: 3 LVT ivan->mallory", Addresses: []common.Address{malloryA}})
	evmBurst(w.c, cTxs)
	var l1Txs []EVMTx
	for i := 0; i < 3; i++ {
		l1Txs = append(l1Txs, transfer("trent", "peggy", int64(i+1), fmt.Sprintf("k%02d-l1-trent-%d", 15+i, i)))
	}
	l1Txs = append(l1Txs, transfer("olivia", "peggy", 1, "k18-l1-olivia-0"), transfer("olivia", "trent", 2, "k19-l1-olivia-1"))
	evmBurst(w.l1, l1Txs)

	close(start)
	return g.Wait()
}
