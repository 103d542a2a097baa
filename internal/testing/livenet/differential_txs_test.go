package livenet

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/ava-labs/avalanchego/genesis"
	"github.com/ava-labs/avalanchego/graft/coreth/plugin/evm/atomic"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/formatting"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/vms/avm/fxs"
	avmtxs "github.com/ava-labs/avalanchego/vms/avm/txs"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/components/verify"
	"github.com/ava-labs/avalanchego/vms/nftfx"
	pgenesis "github.com/ava-labs/avalanchego/vms/platformvm/genesis"
	"github.com/ava-labs/avalanchego/vms/platformvm/signer"
	"github.com/ava-labs/avalanchego/vms/platformvm/stakeable"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/message"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/payload"
	"github.com/ava-labs/avalanchego/vms/propertyfx"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
)

// The node's own decoders: its txs are read with avalanchego's types, not
// re-derived from its JSON.

// nodeUTXO is a UTXO as the node's tx bytes define it: where it was made,
// asset, amount ("" for outputs without one) and owners (threshold,
// locktime, addresses).
type nodeUTXO struct {
	tx, index, asset, amount, owner string
}

// ownerText renders owners comparably: threshold, locktime and the sorted
// addresses without their chain alias (the node writes P-custom1..., the
// data service custom1...).
func ownerText(threshold, locktime uint64, addrs []string) string {
	a := make([]string, len(addrs))
	for i, x := range addrs {
		if j := strings.IndexByte(x, '-'); j >= 0 {
			x = x[j+1:]
		}
		a[i] = x
	}
	sort.Strings(a)
	return fmt.Sprintf("%d/%d %s", threshold, locktime, strings.Join(a, ","))
}

// txInspector reads the node's txs by ID (cached) to describe every UTXO a
// tx made and consumed, wherever it was made (imports, genesis, rewards).
type txInspector struct {
	c       *comparer
	hrp     string
	xParser avmtxs.Parser
	// created: UTXOs by "txID:index" of every tx read so far.
	created map[string]nodeUTXO
	read    map[string]bool
	pTx     map[string]*txs.Tx
	// spent: the amount each P input of a logged tx spends, by UTXO ID;
	// l1Owner: the remaining-balance owner of each L1 validation ID.
	spent   map[ids.ID]uint64
	l1Owner map[ids.ID]message.PChainOwner
	xTx     map[string]*avmtxs.Tx
	cTx     map[string]*atomic.Tx
}

func newTxInspector(ctx context.Context, c *comparer) (*txInspector, error) {
	p, err := avmtxs.NewParser([]fxs.Fx{&secp256k1fx.Fx{}, &nftfx.Fx{}, &propertyfx.Fx{}})
	if err != nil {
		return nil, fmt.Errorf("avm parser: %w", err)
	}
	in := &txInspector{c: c, hrp: c.n.HRP, xParser: p, created: map[string]nodeUTXO{}, read: map[string]bool{},
		pTx: map[string]*txs.Tx{}, spent: map[ids.ID]uint64{}, l1Owner: map[ids.ID]message.PChainOwner{}, xTx: map[string]*avmtxs.Tx{}, cTx: map[string]*atomic.Tx{}}
	// P-chain genesis UTXOs have the empty tx ID: read them from the
	// genesis the network started with.
	cfg, err := genesis.GetConfigFile(c.n.GenesisPath)
	if err != nil {
		return nil, fmt.Errorf("genesis config: %w", err)
	}
	b, _, err := genesis.FromConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("genesis bytes: %w", err)
	}
	g, err := pgenesis.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("P genesis: %w", err)
	}
	for _, u := range g.UTXOs {
		in.addUTXO(&u.UTXO)
	}
	return in, in.prepare(ctx)
}

func (in *txInspector) addr(a ids.ShortID) string {
	s, _ := address.FormatBech32(in.hrp, a[:])
	return s
}

// describe renders an output's amount and owners (stakeable locks unwrapped).
func (in *txInspector) describe(out verify.State) (amount, owner string) {
	var o *secp256k1fx.OutputOwners
	switch x := out.(type) {
	case *stakeable.LockOut:
		return in.describe(x.TransferableOut)
	case *secp256k1fx.TransferOutput:
		amount, o = strconv.FormatUint(x.Amt, 10), &x.OutputOwners
	case *secp256k1fx.MintOutput:
		o = &x.OutputOwners
	case *nftfx.TransferOutput:
		o = &x.OutputOwners
	case *nftfx.MintOutput:
		o = &x.OutputOwners
	case *propertyfx.MintOutput:
		o = &x.OutputOwners
	case *propertyfx.OwnedOutput:
		o = &x.OutputOwners
	default:
		return "", fmt.Sprintf("unknown output %T", out)
	}
	return amount, in.owners(o)
}

func (in *txInspector) owners(o *secp256k1fx.OutputOwners) string {
	a := make([]string, len(o.Addrs))
	for i, x := range o.Addrs {
		a[i] = in.addr(x)
	}
	return ownerText(uint64(o.Threshold), o.Locktime, a)
}

func (in *txInspector) addUTXO(u *avax.UTXO) {
	amount, owner := in.describe(u.Out)
	k := u.TxID.String() + ":" + strconv.FormatUint(uint64(u.OutputIndex), 10)
	in.created[k] = nodeUTXO{tx: u.TxID.String(), index: strconv.FormatUint(uint64(u.OutputIndex), 10),
		asset: u.AssetID().String(), amount: amount, owner: owner}
}

// addOuts records outs as tx's UTXOs from index first on.
func (in *txInspector) addOuts(txID ids.ID, first int, outs []*avax.TransferableOutput) []nodeUTXO {
	var made []nodeUTXO
	for i, o := range outs {
		u := &avax.UTXO{UTXOID: avax.UTXOID{TxID: txID, OutputIndex: uint32(first + i)}, Asset: o.Asset, Out: o.Out}
		in.addUTXO(u)
		made = append(made, in.created[txID.String()+":"+strconv.Itoa(first+i)])
	}
	return made
}

// fetchHex calls a node method answering a hex-encoded tx.
func (in *txInspector) fetchHex(ctx context.Context, path, method string, txID string) ([]byte, error) {
	var r struct {
		Tx string `json:"tx"`
	}
	if err := rpcCall(ctx, in.c.node+path, method, map[string]any{"txID": txID, "encoding": "hex"}, &r); err != nil {
		return nil, err
	}
	return formatting.Decode(formatting.Hex, r.Tx)
}

// stakeTx is a P-chain tx that locks stake (permissionless stakers).
type stakeTx interface {
	Stake() []*avax.TransferableOutput
}

// parseP reads a P-chain tx from the node (cached).
func (in *txInspector) parseP(ctx context.Context, txID string) (*txs.Tx, error) {
	if tx, ok := in.pTx[txID]; ok {
		return tx, nil
	}
	b, err := in.fetchHex(ctx, "/ext/bc/P", "platform.getTx", txID)
	if err != nil {
		return nil, err
	}
	tx, err := txs.Parse(txs.Codec, b)
	if err != nil {
		return nil, fmt.Errorf("parse P tx %s: %w", txID, err)
	}
	in.pTx[txID] = tx
	return tx, nil
}

// prepare reads every logged P tx first: what the later reading of a tx
// needs from others (the amounts their inputs spend, the L1 validators'
// remaining-balance owners).
func (in *txInspector) prepare(ctx context.Context) error {
	for _, r := range in.c.n.Log.Chain(ChainP) {
		tx, err := in.parseP(ctx, r.TxID)
		if err != nil {
			return err
		}
		// Every P tx embeds avax.BaseTx; its Ins are promoted fields.
		if f := reflect.ValueOf(tx.Unsigned).Elem().FieldByName("Ins"); f.IsValid() {
			for _, x := range f.Interface().([]*avax.TransferableInput) {
				in.spent[x.UTXOID.InputID()] = x.In.Amount()
			}
		}
		switch u := tx.Unsigned.(type) {
		case *txs.ConvertSubnetToL1Tx:
			for i, v := range u.Validators {
				in.l1Owner[u.Subnet.Append(uint32(i))] = v.RemainingBalanceOwner
			}
		case *txs.RegisterL1ValidatorTx:
			m, err := registerMessage(u.Message)
			if err != nil {
				return err
			}
			in.l1Owner[m.ValidationID()] = m.RemainingBalanceOwner
		}
	}
	return nil
}

// pTxOf reads a P-chain tx from the node and records the UTXOs it made:
// its outputs, then its stake (returned to the owners at the end), its
// exported outputs, or the refund of a removed L1 validator's balance, as
// the platformvm numbers them.
func (in *txInspector) pTxOf(ctx context.Context, txID string) (*txs.Tx, []nodeUTXO, error) {
	tx, err := in.parseP(ctx, txID)
	if err != nil {
		return nil, nil, err
	}
	id := tx.ID()
	outs := tx.Unsigned.Outputs()
	made := in.addOuts(id, 0, outs)
	removed := ids.Empty
	switch u := tx.Unsigned.(type) {
	case stakeTx:
		made = append(made, in.addOuts(id, len(outs), u.Stake())...)
	case *txs.ExportTx:
		made = append(made, in.addOuts(id, len(outs), u.ExportedOutputs)...)
	case *txs.DisableL1ValidatorTx:
		removed = u.ValidationID
	case *txs.SetL1ValidatorWeightTx:
		m, err := weightMessage(u.Message)
		if err != nil {
			return nil, nil, err
		}
		if m.Weight == 0 {
			removed = m.ValidationID
		}
	}
	if removed != ids.Empty {
		u, err := in.refund(ctx, id, uint32(len(outs)), in.l1Owner[removed])
		if err != nil {
			return nil, nil, err
		}
		if u != nil {
			in.addUTXO(u)
			made = append(made, in.created[id.String()+":"+strconv.Itoa(len(outs))])
		}
	}
	return tx, made, nil
}

// refund is the UTXO a removed or disabled L1 validator's remaining
// balance went to (index len(outs) of the tx, AVAX, its remaining-balance
// owner), with the amount the node knows it by: its UTXO while unspent,
// else the input of the tx that spent it. None if the node knows neither
// (no balance was left).
func (in *txInspector) refund(ctx context.Context, txID ids.ID, index uint32, owner message.PChainOwner) (*avax.UTXO, error) {
	u := &avax.UTXO{UTXOID: avax.UTXOID{TxID: txID, OutputIndex: index}, Asset: avax.Asset{ID: in.c.n.AVAXAssetID},
		Out: &secp256k1fx.TransferOutput{OutputOwners: secp256k1fx.OutputOwners{Threshold: owner.Threshold, Addrs: owner.Addresses}}}
	if amt, ok := in.spent[u.InputID()]; ok {
		u.Out.(*secp256k1fx.TransferOutput).Amt = amt
		return u, nil
	}
	var addrs []string
	for _, a := range owner.Addresses {
		addrs = append(addrs, "P-"+in.addr(a))
	}
	us, err := in.nodePUTXOs(ctx, "platform.getUTXOs", map[string]any{"addresses": addrs, "limit": 1024})
	if err != nil {
		return nil, err
	}
	for _, x := range us {
		if x.InputID() == u.InputID() {
			return x, nil
		}
	}
	return nil, nil
}

// xTxOf reads an X-chain tx: its outputs, created assets' initial states
// and operation outputs (tx.UTXOs), then its exported outputs.
func (in *txInspector) xTxOf(ctx context.Context, txID string) (*avmtxs.Tx, []nodeUTXO, error) {
	b, err := in.fetchHex(ctx, "/ext/bc/X", "avm.getTx", txID)
	if err != nil {
		return nil, nil, err
	}
	tx, err := in.xParser.ParseTx(b)
	if err != nil {
		return nil, nil, fmt.Errorf("parse X tx %s: %w", txID, err)
	}
	var made []nodeUTXO
	us := tx.UTXOs()
	for _, u := range us {
		in.addUTXO(u)
		made = append(made, in.created[u.TxID.String()+":"+strconv.FormatUint(uint64(u.OutputIndex), 10)])
	}
	if e, ok := tx.Unsigned.(*avmtxs.ExportTx); ok {
		made = append(made, in.addOuts(tx.ID(), len(e.Outs), e.ExportedOuts)...)
	}
	in.xTx[txID] = tx
	return tx, made, nil
}

// cTxOf reads a C-chain atomic tx (avax.getAtomicTx answers hex only) and
// records its exported outputs (an atomic export has no outputs of its own).
func (in *txInspector) cTxOf(ctx context.Context, txID string) (*atomic.Tx, []nodeUTXO, error) {
	b, err := in.fetchHex(ctx, "/ext/bc/C/avax", "avax.getAtomicTx", txID)
	if err != nil {
		return nil, nil, err
	}
	tx, err := atomic.ExtractAtomicTx(b, atomic.Codec)
	if err != nil {
		return nil, nil, fmt.Errorf("parse atomic tx %s: %w", txID, err)
	}
	var made []nodeUTXO
	if e, ok := tx.UnsignedAtomicTx.(*atomic.UnsignedExportTx); ok {
		made = in.addOuts(tx.ID(), 0, e.ExportedOutputs)
	}
	in.cTx[txID] = tx
	return tx, made, nil
}

// nodePUTXOs calls a P-chain method answering hex UTXOs and decodes them.
func (in *txInspector) nodePUTXOs(ctx context.Context, method string, params map[string]any) ([]*avax.UTXO, error) {
	var r struct {
		UTXOs []string `json:"utxos"`
	}
	params["encoding"] = "hex"
	if err := rpcCall(ctx, in.c.node+"/ext/bc/P", method, params, &r); err != nil {
		return nil, err
	}
	out := make([]*avax.UTXO, 0, len(r.UTXOs))
	for _, s := range r.UTXOs {
		b, err := formatting.Decode(formatting.Hex, s)
		if err != nil {
			return nil, err
		}
		var u avax.UTXO
		if _, err := txs.Codec.Unmarshal(b, &u); err != nil {
			return nil, fmt.Errorf("%s %v: %w", method, params, err)
		}
		out = append(out, &u)
	}
	return out, nil
}

// rewardUTXOs records a staker's reward UTXOs as the node keeps them.
func (in *txInspector) rewardUTXOs(ctx context.Context, stakerTx string) ([]nodeUTXO, error) {
	us, err := in.nodePUTXOs(ctx, "platform.getRewardUTXOs", map[string]any{"txID": stakerTx})
	if err != nil {
		return nil, err
	}
	var made []nodeUTXO
	for _, u := range us {
		in.addUTXO(u)
		made = append(made, in.created[u.TxID.String()+":"+strconv.FormatUint(uint64(u.OutputIndex), 10)])
	}
	return made, nil
}

// consumedUTXO describes a consumed UTXO from the tx that made it, read
// from the chain it was made on (an import's source chain).
func (in *txInspector) consumedUTXO(ctx context.Context, chain ids.ID, id avax.UTXOID) nodeUTXO {
	k := id.TxID.String() + ":" + strconv.FormatUint(uint64(id.OutputIndex), 10)
	if u, ok := in.created[k]; ok {
		return u
	}
	tx := id.TxID.String()
	if !in.read[tx] {
		in.read[tx] = true
		switch chain {
		case in.c.n.PChainID:
			if _, _, err := in.pTxOf(ctx, tx); err == nil {
				if _, ok := in.created[k]; !ok {
					_, _ = in.rewardUTXOs(ctx, tx)
				}
			}
		case in.c.n.XChainID:
			_, _, _ = in.xTxOf(ctx, tx)
		case in.c.n.CChainID:
			_, _, _ = in.cTxOf(ctx, tx)
		}
	}
	if u, ok := in.created[k]; ok {
		return u
	}
	return nodeUTXO{tx: tx, index: strconv.FormatUint(uint64(id.OutputIndex), 10), owner: "unknown to the node"}
}

func (in *txInspector) consumed(ctx context.Context, chain ids.ID, ins []*avax.TransferableInput) []nodeUTXO {
	var out []nodeUTXO
	for _, x := range ins {
		out = append(out, in.consumedUTXO(ctx, chain, x.UTXOID))
	}
	return out
}

// servedUTXO reads a P or X UTXO of the data service: creating tx, index,
// asset, amount and owners (X: locktime; P: platformLocktime).
func servedUTXO(u map[string]any) nodeUTXO {
	r := nodeUTXO{tx: jsonScalar(u["txHash"]), index: jsonScalar(u["outputIndex"]), asset: jsonScalar(u["assetId"]),
		amount: jsonScalar(u["amount"])}
	if r.tx == "" {
		r.tx = jsonScalar(u["creationTxHash"])
	}
	if a, ok := u["asset"].(map[string]any); ok {
		r.asset, r.amount = jsonScalar(a["assetId"]), jsonScalar(a["amount"])
	}
	lock := jsonScalar(u["locktime"])
	if lock == "" {
		lock = jsonScalar(u["platformLocktime"])
	}
	var addrs []string
	list, _ := u["addresses"].([]any)
	for _, a := range list {
		addrs = append(addrs, jsonScalar(a))
	}
	th, _ := strconv.ParseUint(jsonScalar(u["threshold"]), 10, 64)
	lt, _ := strconv.ParseUint(lock, 10, 64)
	r.owner = ownerText(th, lt, addrs)
	return r
}

// utxoTexts renders UTXOs by "txID:index" (amount "" where the node has
// none: NFTs, mint rights).
func utxoTexts(us []nodeUTXO, noAmount map[string]bool) map[string]string {
	m := map[string]string{}
	for _, u := range us {
		k := u.tx + ":" + u.index
		if noAmount[k] {
			u.amount = ""
		}
		m[k] = fmt.Sprintf("asset %s amount %q owners %s", u.asset, u.amount, u.owner)
	}
	return m
}

// compareUTXOs adds, under name, every UTXO of want and got to the
// compared fields.
func compareUTXOs(name string, want, got []nodeUTXO, wantF, gotF map[string]string) {
	noAmount := map[string]bool{}
	for _, u := range want {
		if u.amount == "" {
			noAmount[u.tx+":"+u.index] = true
		}
	}
	w, g := utxoTexts(want, nil), utxoTexts(got, noAmount)
	for k, v := range w {
		wantF[name+" "+k] = v
		gotF[name+" "+k] = g[k]
	}
	for k, v := range g {
		if _, ok := w[k]; !ok {
			wantF[name+" "+k] = ""
			gotF[name+" "+k] = v
		}
	}
}

func servedUTXOList(tx map[string]any, key string) []nodeUTXO {
	var out []nodeUTXO
	list, _ := tx[key].([]any)
	for _, x := range list {
		u, _ := x.(map[string]any)
		out = append(out, servedUTXO(u))
	}
	return out
}

func hexText(b []byte) string { return "0x" + hex.EncodeToString(b) }

// stakerPotentials reads the node's potential reward of every current
// staker the workload added, for their txs' estimatedReward: asked one
// node ID at a time, as only then the node lists the delegators.
func stakerPotentials(ctx context.Context, node string, res *WorkloadResult) (map[string]string, error) {
	m := map[string]string{}
	for _, s := range res.Stakers {
		var r struct {
			Validators []struct {
				TxID            string `json:"txID"`
				PotentialReward string `json:"potentialReward"`
				Delegators      []struct {
					TxID            string `json:"txID"`
					PotentialReward string `json:"potentialReward"`
				} `json:"delegators"`
			} `json:"validators"`
		}
		if err := rpcCall(ctx, node+"/ext/bc/P", "platform.getCurrentValidators", map[string]any{"nodeIDs": []string{s.NodeID.String()}}, &r); err != nil {
			return nil, err
		}
		for _, v := range r.Validators {
			m[v.TxID] = v.PotentialReward
			for _, d := range v.Delegators {
				m[d.TxID] = d.PotentialReward
			}
		}
	}
	return m, nil
}

// pxTxDetails compares what pxTxs leaves out, for every P and X tx of the
// log, with the node's tx bytes decoded by avalanchego: the owners of
// every consumed and emitted UTXO, exported, staked and reward UTXOs,
// source and destination chains, staking terms (node, subnet, times,
// delegation fee, BLS key, reward owner, estimated reward, reward tx),
// subnet owners, created chains and assets, and the L1 validators of the
// L1 txs (from their Warp messages).
func (c *comparer) pxTxDetails(ctx context.Context, in *txInspector) {
	rewardTx := map[string]string{}
	for _, s := range c.res.Stakers {
		if s.RewardTx != ids.Empty {
			rewardTx[s.TxID.String()] = s.RewardTx.String()
		}
	}
	fields := map[string]int{}
	defer func() {
		for _, ch := range []string{ChainP, ChainX} {
			c.t.Logf("%s tx details: %d fields compared", ch, fields[ch])
		}
	}()
	for _, r := range c.n.Log.Records() {
		if r.Chain != ChainP && r.Chain != ChainX {
			continue
		}
		kind := r.Chain + " tx details by ID (owners, exports, stake, rewards, staking/subnet/L1 terms vs decoded getTx)"
		alias := "p-chain"
		if r.Chain == ChainX {
			alias = "x-chain"
		}
		var g map[string]any
		if err := getJSON(ctx, fmt.Sprintf("%s/v1/networks/testnet/blockchains/%s/transactions/%s", c.pf, alias, r.TxID), &g); err != nil {
			c.rep.check(kind, r.TxID, []string{err.Error()})
			continue
		}
		want, got := map[string]string{}, map[string]string{}
		var err error
		if r.Chain == ChainP {
			err = c.pTxDetails(ctx, in, r, g, rewardTx, want, got)
		} else {
			err = c.xTxDetails(ctx, in, r, g, want, got)
		}
		if err != nil {
			c.rep.check(kind, r.TxID, []string{"node: " + err.Error()})
			continue
		}
		fields[r.Chain] += len(want)
		c.rep.check(kind, r.Type+" "+r.TxID, diffFields(got, want))
	}
}

// chainFields compares an import's source and an export's destination.
func chainFields(g map[string]any, src, dst ids.ID, want, got map[string]string) {
	if src != ids.Empty {
		want["sourceChain"], got["sourceChain"] = src.String(), jsonScalar(g["sourceChain"])
	}
	if dst != ids.Empty {
		want["destinationChain"], got["destinationChain"] = dst.String(), jsonScalar(g["destinationChain"])
	}
}

func (c *comparer) xTxDetails(ctx context.Context, in *txInspector, r TxRecord, g map[string]any, want, got map[string]string) error {
	tx, made, err := in.xTxOf(ctx, r.TxID)
	if err != nil {
		return err
	}
	var ins []*avax.TransferableInput
	var consumed []nodeUTXO
	switch u := tx.Unsigned.(type) {
	case *avmtxs.BaseTx:
		ins = u.Ins
	case *avmtxs.CreateAssetTx:
		ins = u.Ins
		a, _ := g["assetCreated"].(map[string]any)
		want["assetCreated"] = fmt.Sprintf("%s %s %s %d", r.TxID, u.Name, u.Symbol, u.Denomination)
		got["assetCreated"] = fmt.Sprintf("%s %s %s %s", jsonScalar(a["assetId"]), jsonScalar(a["name"]), jsonScalar(a["symbol"]), jsonScalar(a["denomination"]))
	case *avmtxs.OperationTx:
		ins = u.Ins
		for _, op := range u.Ops {
			for _, id := range op.UTXOIDs {
				consumed = append(consumed, in.consumedUTXO(ctx, c.n.XChainID, *id))
			}
		}
	case *avmtxs.ImportTx:
		ins = u.Ins
		consumed = append(consumed, in.consumed(ctx, u.SourceChain, u.ImportedIns)...)
		chainFields(g, u.SourceChain, ids.Empty, want, got)
	case *avmtxs.ExportTx:
		ins = u.Ins
		chainFields(g, ids.Empty, u.DestinationChain, want, got)
	}
	consumed = append(in.consumed(ctx, c.n.XChainID, ins), consumed...)
	compareUTXOs("consumed", consumed, servedUTXOList(g, "consumedUtxos"), want, got)
	compareUTXOs("emitted", made, servedUTXOList(g, "emittedUtxos"), want, got)
	return nil
}

func (c *comparer) pTxDetails(ctx context.Context, in *txInspector, r TxRecord, g map[string]any, rewardTx map[string]string, want, got map[string]string) error {
	tx, made, err := in.pTxOf(ctx, r.TxID)
	if err != nil {
		return err
	}
	var consumed []nodeUTXO
	if b, ok := tx.Unsigned.(interface{ InputUTXOs() []*avax.UTXOID }); ok {
		for _, id := range b.InputUTXOs() {
			consumed = append(consumed, in.consumedUTXO(ctx, c.n.PChainID, *id))
		}
	}
	str := func(k string) string { return jsonScalar(g[k]) }
	staking := func(node ids.NodeID, subnet ids.ID, end uint64) error {
		start, err := c.pBlockTime(ctx, r.BlockID)
		if err != nil {
			return err
		}
		// Since Durango a staker starts when its tx is accepted: the
		// block's time, not the tx's (ignored) start field.
		want["nodeId"], got["nodeId"] = node.String(), str("nodeId")
		want["subnetId"], got["subnetId"] = subnet.String(), str("subnetId")
		want["startTimestamp"], got["startTimestamp"] = start, str("startTimestamp")
		want["endTimestamp"], got["endTimestamp"] = strconv.FormatUint(end, 10), str("endTimestamp")
		return nil
	}
	rewarded := func(owner any) {
		var a []string
		if o, ok := owner.(*secp256k1fx.OutputOwners); ok {
			for _, x := range o.Addrs {
				a = append(a, in.addr(x))
			}
		}
		var s []string
		list, _ := g["rewardAddresses"].([]any)
		for _, x := range list {
			s = append(s, jsonScalar(x))
		}
		want["rewardAddresses"], got["rewardAddresses"] = ownerText(0, 0, a), ownerText(0, 0, s)
		// Read while the staker validated; missing is a difference.
		want["estimatedReward"], got["estimatedReward"] = c.potential[r.TxID], str("estimatedReward")
		want["rewardTxHash"], got["rewardTxHash"] = rewardTx[r.TxID], str("rewardTxHash")
		var staked uint64
		for _, o := range tx.Unsigned.(stakeTx).Stake() {
			staked += o.Output().Amount()
		}
		want["amountStaked"] = fmt.Sprintf("%s %d", c.n.AVAXAssetID, staked)
		got["amountStaked"] = ""
		if list, _ := g["amountStaked"].([]any); len(list) == 1 {
			a, _ := list[0].(map[string]any)
			got["amountStaked"] = jsonScalar(a["assetId"]) + " " + jsonScalar(a["amount"])
		}
	}
	owner := func(o any) {
		want["subnetOwnershipInfo"] = "none"
		if x, ok := o.(*secp256k1fx.OutputOwners); ok {
			want["subnetOwnershipInfo"] = in.owners(x)
		}
		got["subnetOwnershipInfo"] = "none"
		if s, ok := g["subnetOwnershipInfo"].(map[string]any); ok {
			got["subnetOwnershipInfo"] = servedUTXO(s).owner
		}
	}
	l1 := c.l1Details(g)
	l1Want := func(vid ids.ID, fields string) {
		want["l1Validator "+vid.String()], got["l1Validator "+vid.String()] = fields, l1[vid.String()]
	}
	switch u := tx.Unsigned.(type) {
	case *txs.ImportTx:
		chainFields(g, u.SourceChain, ids.Empty, want, got)
		consumed = append(consumed, in.consumed(ctx, u.SourceChain, u.ImportedInputs)...)
	case *txs.ExportTx:
		chainFields(g, ids.Empty, u.DestinationChain, want, got)
	case *txs.AddPermissionlessValidatorTx:
		if err := staking(u.Validator.NodeID, u.Subnet, u.Validator.End); err != nil {
			return err
		}
		want["delegationFeePercent"] = new(big.Rat).SetFrac64(int64(u.DelegationShares), 10000).RatString()
		got["delegationFeePercent"] = decimalText(str("delegationFeePercent"))
		want["blsCredentials"] = blsText(u.Signer)
		b, _ := g["blsCredentials"].(map[string]any)
		got["blsCredentials"] = jsonScalar(b["publicKey"]) + " " + jsonScalar(b["proofOfPossession"])
		rewarded(u.ValidatorRewardsOwner)
	case *txs.AddPermissionlessDelegatorTx:
		if err := staking(u.Validator.NodeID, u.Subnet, u.Validator.End); err != nil {
			return err
		}
		rewarded(u.DelegationRewardsOwner)
	case *txs.AddSubnetValidatorTx:
		if err := staking(u.Validator.NodeID, u.Subnet, u.Validator.End); err != nil {
			return err
		}
	case *txs.RemoveSubnetValidatorTx:
		want["nodeId"], got["nodeId"] = u.NodeID.String(), str("nodeId")
		want["subnetId"], got["subnetId"] = u.Subnet.String(), str("subnetId")
	case *txs.CreateSubnetTx:
		want["subnetId"], got["subnetId"] = r.TxID, str("subnetId")
		owner(u.Owner)
	case *txs.TransferSubnetOwnershipTx:
		want["subnetId"], got["subnetId"] = u.Subnet.String(), str("subnetId")
		owner(u.Owner)
	case *txs.CreateChainTx:
		want["subnetId"], got["subnetId"] = u.SubnetID.String(), str("subnetId")
		want["blockchainInfo"] = fmt.Sprintf("%s %s %s", u.ChainName, u.VMID, genesisText(u.GenesisData))
		b, _ := g["blockchainInfo"].(map[string]any)
		gd, _ := json.Marshal(b["genesisData"])
		got["blockchainInfo"] = fmt.Sprintf("%s %s %s", jsonScalar(b["chainName"]), jsonScalar(b["vmId"]), servedGenesisText(gd))
	case *txs.ConvertSubnetToL1Tx:
		want["subnetId"], got["subnetId"] = u.Subnet.String(), str("subnetId")
		m, _ := g["l1ValidatorManagerDetails"].(map[string]any)
		want["l1ValidatorManagerDetails"] = u.ChainID.String() + " " + hexText(u.Address)
		got["l1ValidatorManagerDetails"] = jsonScalar(m["blockchainId"]) + " " + strings.ToLower(jsonScalar(m["contractAddress"]))
		for i, v := range u.Validators {
			node, err := ids.ToNodeID(v.NodeID)
			if err != nil {
				return err
			}
			l1Want(u.Subnet.Append(uint32(i)), l1Text(node.String(), u.Subnet.String(), strconv.FormatUint(v.Weight, 10),
				strconv.FormatUint(v.Balance, 10), hexText(v.Signer.PublicKey[:])))
		}
	case *txs.RegisterL1ValidatorTx:
		m, err := registerMessage(u.Message)
		if err != nil {
			return err
		}
		node, err := ids.ToNodeID(m.NodeID)
		if err != nil {
			return err
		}
		want["subnetId"], got["subnetId"] = m.SubnetID.String(), str("subnetId")
		l1Want(m.ValidationID(), l1Text(node.String(), m.SubnetID.String(), strconv.FormatUint(m.Weight, 10),
			strconv.FormatUint(u.Balance, 10), hexText(m.BLSPublicKey[:])))
	case *txs.SetL1ValidatorWeightTx:
		m, err := weightMessage(u.Message)
		if err != nil {
			return err
		}
		want["l1Validators"], got["l1Validators"] = m.ValidationID.String(), strings.Join(sortedKeys(l1), ",")
		w := l1Fields(g, m.ValidationID.String())
		want["l1Validator weight"], got["l1Validator weight"] = strconv.FormatUint(m.Weight, 10), jsonScalar(w["weight"])
	case *txs.IncreaseL1ValidatorBalanceTx:
		want["l1Validators"], got["l1Validators"] = u.ValidationID.String(), strings.Join(sortedKeys(l1), ",")
		w := l1Fields(g, u.ValidationID.String())
		want["l1Validator balanceChange"], got["l1Validator balanceChange"] = strconv.FormatUint(u.Balance, 10), jsonScalar(w["balanceChange"])
	case *txs.DisableL1ValidatorTx:
		want["l1Validators"], got["l1Validators"] = u.ValidationID.String(), strings.Join(sortedKeys(l1), ",")
	case *txs.RewardValidatorTx:
		want["stakingTxHash"], got["stakingTxHash"] = u.TxID.String(), str("stakingTxHash")
		rewards, err := in.rewardUTXOs(ctx, u.TxID.String())
		if err != nil {
			return err
		}
		made = append(made, rewards...)
	}
	compareUTXOs("consumed", consumed, servedUTXOList(g, "consumedUtxos"), want, got)
	compareUTXOs("emitted", made, servedUTXOList(g, "emittedUtxos"), want, got)
	return nil
}

// l1Text is an L1 validator of a tx as compared: node, subnet, weight,
// balance added by the tx and BLS key.
func l1Text(node, subnet, weight, balanceChange, key string) string {
	return fmt.Sprintf("node %s subnet %s weight %s balanceChange %s key %s", node, subnet, weight, balanceChange, key)
}

// l1Fields is the served l1ValidatorDetails entry of a validation ID.
func l1Fields(g map[string]any, vid string) map[string]any {
	list, _ := g["l1ValidatorDetails"].([]any)
	for _, x := range list {
		d, _ := x.(map[string]any)
		if jsonScalar(d["validationId"]) == vid {
			return d
		}
	}
	return nil
}

// l1Details renders every served l1ValidatorDetails entry by validation ID.
func (c *comparer) l1Details(g map[string]any) map[string]string {
	m := map[string]string{}
	list, _ := g["l1ValidatorDetails"].([]any)
	for _, x := range list {
		d, _ := x.(map[string]any)
		b, _ := d["blsCredentials"].(map[string]any)
		m[jsonScalar(d["validationId"])] = l1Text(jsonScalar(d["nodeId"]), jsonScalar(d["subnetId"]), jsonScalar(d["weight"]),
			jsonScalar(d["balanceChange"]), jsonScalar(b["publicKey"]))
	}
	return m
}

func sortedKeys(m map[string]string) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

// genesisText renders a chain's genesis bytes: compact JSON when they are
// JSON, else hex.
func genesisText(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) == nil {
		out, _ := json.Marshal(v)
		return string(out)
	}
	return hexText(b)
}

// servedGenesisText renders the served genesisData (a JSON object, or a
// hex string of bytes that are not JSON) as genesisText does.
func servedGenesisText(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return genesisText(raw)
}

// pBlockTime is the time of a P-chain block (its "time" member).
func (c *comparer) pBlockTime(ctx context.Context, blockID string) (string, error) {
	if t, ok := c.blockTimes[blockID]; ok {
		return t, nil
	}
	var r struct {
		Block struct {
			Time json.Number `json:"time"`
		} `json:"block"`
	}
	if err := rpcCall(ctx, c.node+"/ext/bc/P", "platform.getBlock", map[string]any{"blockID": blockID, "encoding": "json"}, &r); err != nil {
		return "", err
	}
	if c.blockTimes == nil {
		c.blockTimes = map[string]string{}
	}
	c.blockTimes[blockID] = r.Block.Time.String()
	return r.Block.Time.String(), nil
}

// blsText renders a signer's key and proof as the data service does.
func blsText(s signer.Signer) string {
	p, ok := s.(*signer.ProofOfPossession)
	if !ok {
		return ""
	}
	return hexText(p.PublicKey[:]) + " " + hexText(p.ProofOfPossession[:])
}

// warpPayload reads the addressed-call payload of a signed Warp message.
func warpPayload(b []byte) ([]byte, error) {
	m, err := warp.ParseMessage(b)
	if err != nil {
		return nil, err
	}
	a, err := payload.ParseAddressedCall(m.Payload)
	if err != nil {
		return nil, err
	}
	return a.Payload, nil
}

// registerMessage and weightMessage read the L1 validator message a
// RegisterL1ValidatorTx or SetL1ValidatorWeightTx carries.
func registerMessage(b []byte) (*message.RegisterL1Validator, error) {
	p, err := warpPayload(b)
	if err != nil {
		return nil, err
	}
	return message.ParseRegisterL1Validator(p)
}

func weightMessage(b []byte) (*message.L1ValidatorWeight, error) {
	p, err := warpPayload(b)
	if err != nil {
		return nil, err
	}
	return message.ParseL1ValidatorWeight(p)
}

// cAtomicTxs compares every atomic C-chain tx of the log as the data
// service serves it by ID (/blockchains/{C-chain id}/transactions/{txHash})
// with avax.getAtomicTx decoded by coreth: type, block, source and
// destination chains, the EVM inputs (export) or outputs (import) with
// address, asset and amount, and the consumed (import) or exported UTXOs
// with asset, amount and owners.
func (c *comparer) cAtomicTxs(ctx context.Context, in *txInspector) {
	const kind = "C atomic tx by ID (data /transactions/{txHash} vs decoded avax.getAtomicTx)"
	fields := 0
	defer func() { c.t.Logf("C atomic tx details: %d fields compared", fields) }()
	for _, r := range c.n.Log.Records() {
		if r.Chain != ChainC || !r.Atomic {
			continue
		}
		tx, made, err := in.cTxOf(ctx, r.TxID)
		if err != nil {
			c.rep.check(kind, r.TxID, []string{"node: " + err.Error()})
			continue
		}
		var g map[string]any
		if err := getJSON(ctx, fmt.Sprintf("%s/v1/networks/testnet/blockchains/%s/transactions/%s", c.pf, c.n.CChainID, r.TxID), &g); err != nil {
			c.rep.check(kind, r.TxID, []string{err.Error()})
			continue
		}
		want := map[string]string{"txType": r.Type, "blockHeight": strconv.FormatUint(r.Height, 10)}
		got := map[string]string{"txType": jsonScalar(g["txType"]), "blockHeight": jsonScalar(g["blockHeight"])}
		if r.BlockID != "" {
			want["blockHash"], got["blockHash"] = strings.ToLower(r.BlockID), strings.ToLower(jsonScalar(g["blockHash"]))
		}
		// The C-chain is the other end of every atomic tx.
		evm := func(key, addrKey string, i int, addr string, asset ids.ID, amount uint64) {
			k := fmt.Sprintf("%s %d", key, i)
			want[k] = fmt.Sprintf("%s %s %d", strings.ToLower(addr), asset, amount)
			list, _ := g[key].([]any)
			if i < len(list) {
				e, _ := list[i].(map[string]any)
				a, _ := e["asset"].(map[string]any)
				got[k] = fmt.Sprintf("%s %s %s", strings.ToLower(jsonScalar(e[addrKey])), jsonScalar(a["assetId"]), jsonScalar(a["amount"]))
			}
		}
		switch u := tx.UnsignedAtomicTx.(type) {
		case *atomic.UnsignedImportTx:
			chainFields(g, u.SourceChain, c.n.CChainID, want, got)
			for i, o := range u.Outs {
				evm("evmOutputs", "toAddress", i, o.Address.Hex(), o.AssetID, o.Amount)
			}
			want["evmOutputs count"], got["evmOutputs count"] = strconv.Itoa(len(u.Outs)), strconv.Itoa(len(listOf(g, "evmOutputs")))
			compareUTXOs("consumed", in.consumed(ctx, u.SourceChain, u.ImportedInputs), servedUTXOList(g, "consumedUtxos"), want, got)
		case *atomic.UnsignedExportTx:
			chainFields(g, c.n.CChainID, u.DestinationChain, want, got)
			for i, o := range u.Ins {
				evm("evmInputs", "fromAddress", i, o.Address.Hex(), o.AssetID, o.Amount)
			}
			want["evmInputs count"], got["evmInputs count"] = strconv.Itoa(len(u.Ins)), strconv.Itoa(len(listOf(g, "evmInputs")))
			compareUTXOs("emitted", made, servedUTXOList(g, "emittedUtxos"), want, got)
		}
		fields += len(want)
		c.rep.check(kind, r.Type+" "+r.TxID, diffFields(got, want))
	}
}

func listOf(g map[string]any, key string) []any {
	l, _ := g[key].([]any)
	return l
}
