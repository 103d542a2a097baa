package apibench

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	ptxs "github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	"github.com/permafrost-dev/permafrost/internal/decode/pchain"
	"github.com/permafrost-dev/permafrost/internal/decode/primary"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// The primary network is written through internal/decode/primary's Writer
// (PutUTXO, SpendUTXO, LinkTx: the functions the P, X and C-atomic indexers
// call), with px_blocks, px_txs, assets, p_stakers and p_validator_set rows
// written by the same statements as internal/decode/{xchain,pchain}. The
// transactions are not signed avalanchego transactions (ids and signatures
// are random, like the EVM generator's hashes), but the rows are consistent:
// every spent UTXO was created earlier, amounts balance (a fixed fee is
// burned), every UTXO is indexed by its owner, every tx is linked to its
// assets and addresses.
//
// Activity is Zipf-distributed over the addresses (index 0 is the busiest),
// so there are hot addresses with tens of thousands of UTXOs and cold ones
// with a few. Addresses are funded by a faucet on demand.

const (
	fee         = 1_000_000             // nAVAX burned per tx
	faucetGift  = 100_000_000_000       // 100 AVAX per funding
	faucetFunds = 1 << 62               // the faucets' initial UTXO
	assetSupply = 1_000_000_000_000_000 // other assets' initial supply
	otherAssets = 4
	xBlockStep  = 2 // seconds between X blocks
	pChainDays  = 8 // the P-chain's span (stakers need days of chain time)
	genesisTime = 1_700_000_000
	maxHeight   = 1<<63 - 1
	day         = 86_400
)

type utxoRef struct {
	tx     ids.ID
	idx    uint32
	amount uint64
}

// chain writes one primary chain's blocks.
type chain struct {
	g        *generator
	key      string
	utxoType string
	step     int64
	unspent  map[[2]int][]utxoRef // (address, asset) -> spendable UTXOs
	height   int64
	time     int64
	blockID  ids.ID
	parent   ids.ID
	txIDs    []string
	size     int
	tx       *store.Tx
	blocks   int // blocks in the current store transaction
	txCount  int64
	utxos    map[int]int64 // UTXOs created per address
	reward   bool          // the open block holds a RewardValidatorTx
	hold     bool          // the next block keeps the time (proposal and option blocks)
	blockTyp string
}

type primaryGen struct {
	*generator
	rng    *rand.Rand
	w      primary.Writer
	addrs  []ids.ShortID
	bech   []string
	pick   *rand.Zipf
	assets []ids.ID // 0 is AVAX
	faucet int      // address index of the faucets
}

func (g *generator) generatePrimary(ctx context.Context) error {
	n := g.cfg.Addresses
	p := &primaryGen{generator: g, rng: rand.New(rand.NewSource(g.cfg.Seed + 3)), w: primary.Writer{HRP: hrp}, faucet: n}
	for i := 0; i <= n; i++ {
		var a ids.ShortID
		p.rng.Read(a[:])
		s, err := address.FormatBech32(hrp, a[:])
		if err != nil {
			return err
		}
		p.addrs, p.bech = append(p.addrs, a), append(p.bech, s)
	}
	p.pick = rand.NewZipf(p.rng, 1.1, 1, uint64(n-1))
	p.assets = []ids.ID{p.randID()}
	for i := 0; i < otherAssets; i++ {
		p.assets = append(p.assets, p.randID())
	}
	g.m.AvaxAssetID = p.assets[0].String()
	for _, a := range p.assets[1:] {
		g.m.OtherAssetIDs = append(g.m.OtherAssetIDs, a.String())
	}
	x, err := p.newChain(ctx, "X", "transfer", xBlockStep)
	if err != nil {
		return err
	}
	if err := p.xGenesis(ctx, x); err != nil {
		return err
	}
	for i := 0; i < g.cfg.XTxs; i++ {
		if err := p.transfer(ctx, x, true); err != nil {
			return err
		}
		if i%100_000 == 0 {
			g.log.Info("x-chain txs", "n", i, "of", g.cfg.XTxs)
		}
	}
	if err := x.finish(ctx); err != nil {
		return err
	}
	pc, err := p.newChain(ctx, "P", "TRANSFER", int64(pChainDays*day/(g.cfg.PTxs/g.cfg.TxsPerBlock+2)))
	if err != nil {
		return err
	}
	if err := p.pChain(ctx, pc); err != nil {
		return err
	}
	if err := p.subnets(ctx, pc); err != nil {
		return err
	}
	g.m.XTxCount, g.m.PTxCount = x.txCount, pc.txCount
	g.m.XBlocks, g.m.PBlocks = x.height+1, pc.height+1
	g.m.ProposerNodes = []string{nodeIDOf(0), nodeIDOf(1), nodeIDOf(g.cfg.Nodes / 4), nodeIDOf(g.cfg.Nodes - 1)}
	g.m.XHotAddresses, g.m.XColdAddresses = p.hotCold(x)
	g.m.PHotAddresses, g.m.PColdAddresses = p.hotCold(pc)
	return nil
}

func (p *primaryGen) randID() ids.ID {
	var id ids.ID
	p.rng.Read(id[:])
	return id
}

// hotCold returns the busiest addresses and a sample of quiet ones (with
// at least a few UTXOs) of a chain.
func (p *primaryGen) hotCold(c *chain) (hot, cold []string) {
	type ac struct {
		a int
		n int64
	}
	var all []ac
	for a, n := range c.utxos {
		if a != p.faucet {
			all = append(all, ac{a, n})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || all[i].n == all[j].n && all[i].a < all[j].a })
	for _, x := range all[:min(10, len(all))] {
		hot = append(hot, p.bech[x.a])
	}
	for i := len(all) - 1; i >= 0 && len(cold) < 200; i-- {
		if all[i].n >= 3 {
			cold = append(cold, p.bech[all[i].a])
		}
	}
	return hot, cold
}

func (p *primaryGen) newChain(ctx context.Context, key, utxoType string, step int64) (*chain, error) {
	c := &chain{g: p.generator, key: key, utxoType: utxoType, step: step, unspent: map[[2]int][]utxoRef{},
		utxos: map[int]int64{}, height: -1, time: genesisTime - step}
	if err := c.openBlock(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// openBlock starts the next block (and a store transaction when needed).
func (c *chain) openBlock(ctx context.Context) error {
	if c.tx == nil {
		tx, err := c.g.db.Begin(ctx)
		if err != nil {
			return err
		}
		c.tx = tx
	}
	c.height++
	if !c.hold {
		c.time += c.step
	}
	c.hold = false
	c.parent = c.blockID
	c.blockID = blockID(c)
	c.txIDs = c.txIDs[:0]
	c.size = 200
	c.reward = false
	return nil
}

// blockID derives a block's id from its chain and height (not from the
// generator's random stream, so the stream does not depend on the block
// layout).
func blockID(c *chain) ids.ID {
	var id ids.ID
	rand.New(rand.NewSource(c.height*31 + int64(c.key[0])<<40)).Read(id[:])
	return id
}

// closeBlock writes the open block (as xchain/pchain do) and commits every
// g.batch.px blocks.
func (c *chain) closeBlock(ctx context.Context) error {
	js, _ := json.Marshal(c.txIDs)
	pid, ppid, pnode := c.proposer()
	var err error
	if c.key == "X" {
		_, err = c.tx.Exec(ctx, `INSERT INTO px_blocks (chain_key, height, block_id, parent_id, timestamp, block_type,
			tx_count, tx_ids, size_bytes, proposer_id, proposer_parent_id, proposer_node_id, proposer_p_height, proposer_timestamp)
			VALUES ('X',$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)`,
			c.height, c.blockID.String(), c.parent.String(), c.time, "StandardBlock", len(c.txIDs), string(js), c.size,
			pid, ppid, pnode, c.height/2, c.time)
	} else {
		typ := "BanffStandardBlock"
		if c.reward {
			typ = "BanffProposalBlock"
		}
		_, err = c.tx.Exec(ctx, `INSERT INTO px_blocks (chain_key, height, block_id, parent_id, timestamp, block_type,
			tx_count, tx_ids, size_bytes, current_supply, l1_validators_accrued_fees, active_l1_validators,
			proposer_id, proposer_parent_id, proposer_node_id, proposer_p_height, proposer_timestamp)
			VALUES ('P',$1,$2,$3,$4,$5,$6,$7,$8,$9,0,0,$10,$11,$12,$13,$14)`,
			c.height, c.blockID.String(), c.parent.String(), c.time, typ, len(c.txIDs), string(js), c.size,
			"460000000000000000", pid, ppid, pnode, max(0, c.height-1), c.time)
	}
	if err != nil {
		return fmt.Errorf("put %s block %d: %w", c.key, c.height, err)
	}
	c.blocks++
	if c.blocks >= c.g.batch.px {
		if err := c.commit(ctx); err != nil {
			return err
		}
	}
	return nil
}

// proposer gives the block's proposervm wrapper: its id, its parent's and
// the proposing node, derived from the height (as blockID) so the
// generator's random stream does not depend on it. Proposers are skewed
// towards the first nodes (exponentially, as stake-weighted windows favour
// the heaviest validators); the genesis block has none.
func (c *chain) proposer() (id, parent, node string) {
	if c.height == 0 {
		return "", "", ""
	}
	wrapper := func(h int64) string {
		var w ids.ID
		rand.New(rand.NewSource(h*37 + int64(c.key[0])<<44)).Read(w[:])
		return w.String()
	}
	r := rand.New(rand.NewSource(c.height*53 + int64(c.key[0])<<48))
	n := int(r.ExpFloat64()*float64(c.g.cfg.Nodes)/8) % c.g.cfg.Nodes
	return wrapper(c.height), wrapper(c.height - 1), nodeIDOf(n)
}

func (c *chain) commit(ctx context.Context) error {
	if err := putCheckpoint(ctx, c.tx, c.key, c.height, c.blockID.String(), c.time); err != nil {
		c.tx.Rollback()
		return err
	}
	if err := c.tx.Commit(); err != nil {
		return fmt.Errorf("commit %s: %w", c.key, err)
	}
	c.tx, c.blocks = nil, 0
	return nil
}

// next closes the block when full and opens the next one.
func (c *chain) next(ctx context.Context) error {
	if len(c.txIDs) < c.g.cfg.TxsPerBlock {
		return nil
	}
	if err := c.closeBlock(ctx); err != nil {
		return err
	}
	return c.openBlock(ctx)
}

func (c *chain) finish(ctx context.Context) error {
	if err := c.closeBlock(ctx); err != nil {
		return err
	}
	if c.tx != nil {
		return c.commit(ctx)
	}
	return nil
}

// output is a UTXO a tx creates.
type output struct {
	addr   int
	asset  int
	amount uint64
	staked bool
	start  int64
	end    int64
	reward string
}

// txSpec is one tx to write.
type txSpec struct {
	id     ids.ID
	typ    string
	ins    []spent
	outs   []output
	src    string // source chain (imports)
	reward string // RewardValidatorTx: the staker tx
	extra  []string
}

type spent struct {
	ref   utxoRef
	asset int
	owner int
}

// write puts a tx with its inputs and outputs into the open block.
func (p *primaryGen) write(ctx context.Context, c *chain, t txSpec) error {
	txID := t.id.String()
	creds := make([][]map[string]string, len(t.ins))
	sig, pk := make([]byte, 65), make([]byte, 33)
	for i := range t.ins {
		p.rng.Read(sig)
		p.rng.Read(pk)
		creds[i] = []map[string]string{{"signature": base64.StdEncoding.EncodeToString(sig), "publicKey": base64.StdEncoding.EncodeToString(pk)}}
	}
	credJS, _ := json.Marshal(creds)
	raw := make([]byte, 200+120*len(t.ins)+80*len(t.outs))
	p.rng.Read(raw)
	height := c.height
	if height < 0 {
		height = 0
	}
	var err error
	if c.key == "X" {
		_, err = c.tx.Exec(ctx, `INSERT INTO px_txs (tx_id, chain_key, height, tx_index, block_id, timestamp, tx_type, memo,
			source_chain, destination_chain, credentials, tx_bytes) VALUES ($1,'X',$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)`,
			txID, c.height, len(c.txIDs), c.blockID.String(), c.time, t.typ, "", t.src, "", string(credJS), raw)
	} else {
		_, err = c.tx.Exec(ctx, `INSERT INTO px_txs (tx_id, chain_key, height, tx_index, block_id, timestamp, tx_type, memo,
			source_chain, destination_chain, credentials, tx_bytes, reward_staker_tx, rewarded)
			VALUES ($1,'P',$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)`,
			txID, c.height, len(c.txIDs), c.blockID.String(), c.time, t.typ, "", t.src, "", string(credJS), raw,
			t.reward, t.reward != "")
	}
	if err != nil {
		return fmt.Errorf("put %s tx: %w", c.key, err)
	}
	assets := map[int]bool{}
	addrs := map[string]bool{}
	for i, in := range t.ins {
		u := &avax.UTXOID{TxID: in.ref.tx, OutputIndex: in.ref.idx}
		if err := p.w.SpendUTXO(ctx, c.tx, u, primary.Spent{TxID: txID, ChainKey: c.key, Height: uint64(height),
			Time: c.time, InputIndex: i, AssetID: p.assets[in.asset].String(), Amount: in.ref.amount}); err != nil {
			return err
		}
		assets[in.asset] = true
		addrs[p.bech[in.owner]] = true
	}
	for i, o := range t.outs {
		idx := uint32(i)
		u := &avax.UTXO{UTXOID: avax.UTXOID{TxID: t.id, OutputIndex: idx}, Asset: avax.Asset{ID: p.assets[o.asset]},
			Out: &secp256k1fx.TransferOutput{Amt: o.amount, OutputOwners: secp256k1fx.OutputOwners{Threshold: 1,
				Addrs: []ids.ShortID{p.addrs[o.addr]}}}}
		b, err := ptxs.Codec.Marshal(ptxs.CodecVersion, u)
		if err != nil {
			return fmt.Errorf("marshal utxo: %w", err)
		}
		typ := c.utxoType
		if o.staked {
			typ = "STAKE"
		}
		if err := p.w.PutUTXO(ctx, c.tx, u, b, primary.Created{CreatedChain: c.key, ChainKey: c.key, Height: uint64(height),
			Time: c.time, UTXOType: typ, Staked: o.staked, StakeStart: o.start, StakeEnd: o.end, RewardType: o.reward}); err != nil {
			return err
		}
		if o.staked {
			if err := p.w.LockStake(ctx, c.tx, u.InputID().String()); err != nil {
				return fmt.Errorf("lock stake: %w", err)
			}
		} else {
			k := [2]int{o.addr, o.asset}
			c.unspent[k] = append(c.unspent[k], utxoRef{tx: t.id, idx: idx, amount: o.amount})
		}
		c.utxos[o.addr]++
		assets[o.asset] = true
		addrs[p.bech[o.addr]] = true
	}
	var as []ids.ID
	for a := range assets {
		as = append(as, p.assets[a])
	}
	sort.Slice(as, func(i, j int) bool { return as[i].Compare(as[j]) < 0 })
	var ad []string
	for a := range addrs {
		ad = append(ad, a)
	}
	sort.Strings(ad)
	for _, a := range t.extra {
		id, err := ids.FromString(a)
		if err != nil {
			return err
		}
		as = append(as, id)
	}
	if err := p.w.LinkTx(ctx, c.tx, c.key, txID, c.time, as, ad); err != nil {
		return err
	}
	c.txIDs = append(c.txIDs, txID)
	c.size += len(raw)
	c.txCount++
	return nil
}

// take removes a random spendable UTXO of (addr, asset).
func (p *primaryGen) take(c *chain, addr, asset int) (spent, bool) {
	k := [2]int{addr, asset}
	l := c.unspent[k]
	if len(l) == 0 {
		return spent{}, false
	}
	i := p.rng.Intn(len(l))
	r := l[i]
	l[i] = l[len(l)-1]
	c.unspent[k] = l[:len(l)-1]
	return spent{ref: r, asset: asset, owner: addr}, true
}

// takeLast removes the newest spendable UTXO of (addr, asset): the gift
// fund just made.
func (p *primaryGen) takeLast(c *chain, addr, asset int) spent {
	k := [2]int{addr, asset}
	l := c.unspent[k]
	r := l[len(l)-1]
	c.unspent[k] = l[:len(l)-1]
	return spent{ref: r, asset: asset, owner: addr}
}

// fund sends faucetGift AVAX from the faucet to addr.
func (p *primaryGen) fund(ctx context.Context, c *chain, addr int) error {
	in, ok := p.take(c, p.faucet, 0)
	if !ok || in.ref.amount < faucetGift+fee {
		return fmt.Errorf("%s faucet is empty", c.key)
	}
	t := txSpec{id: p.randID(), typ: "BaseTx", ins: []spent{in},
		outs: []output{{addr: addr, amount: faucetGift}, {addr: p.faucet, amount: in.ref.amount - faucetGift - fee}}}
	if err := p.write(ctx, c, t); err != nil {
		return err
	}
	return c.next(ctx)
}

// pickPair returns two distinct Zipf-distributed addresses.
func (p *primaryGen) pickPair() (int, int) {
	from := int(p.pick.Uint64())
	to := int(p.pick.Uint64())
	for to == from {
		to = p.rng.Intn(p.cfg.Addresses)
	}
	return from, to
}

// transfer writes one BaseTx: one or two UTXOs of an asset (and one AVAX
// UTXO for the fee when the asset is not AVAX) to a recipient, with change.
func (p *primaryGen) transfer(ctx context.Context, c *chain, withAssets bool) error {
	from, to := p.pickPair()
	asset := 0
	if withAssets && p.rng.Intn(100) < 15 {
		asset = 1 + p.rng.Intn(otherAssets)
		if len(c.unspent[[2]int{from, asset}]) == 0 {
			asset = 0
		}
	}
	if len(c.unspent[[2]int{from, 0}]) == 0 {
		if err := p.fund(ctx, c, from); err != nil {
			return err
		}
	}
	var ins []spent
	var total uint64
	for k := 0; k < 1+boolInt(p.rng.Intn(10) < 3); k++ {
		in, ok := p.take(c, from, asset)
		if !ok {
			break
		}
		ins = append(ins, in)
		total += in.ref.amount
	}
	var outs []output
	if asset == 0 {
		for total <= 2*fee {
			// Dust: top up from the faucet and spend the gift too.
			if err := p.fund(ctx, c, from); err != nil {
				return err
			}
			in := p.takeLast(c, from, 0)
			ins = append(ins, in)
			total += in.ref.amount
		}
		amount := 1 + uint64(p.rng.Int63n(int64((total-fee)/2)))
		outs = append(outs, output{addr: to, amount: amount})
		if change := total - fee - amount; change > 0 {
			outs = append(outs, output{addr: from, amount: change})
		}
	} else {
		feeIn, ok := p.take(c, from, 0)
		if !ok || feeIn.ref.amount <= fee {
			if ok {
				c.unspent[[2]int{from, 0}] = append(c.unspent[[2]int{from, 0}], feeIn.ref)
			}
			if err := p.fund(ctx, c, from); err != nil {
				return err
			}
			feeIn = p.takeLast(c, from, 0)
		}
		ins = append(ins, feeIn)
		amount := 1 + uint64(p.rng.Int63n(int64(total)))
		outs = append(outs, output{addr: to, asset: asset, amount: amount})
		if change := total - amount; change > 0 {
			outs = append(outs, output{addr: from, asset: asset, amount: change})
		}
		if change := feeIn.ref.amount - fee; change > 0 {
			outs = append(outs, output{addr: from, amount: change})
		}
	}
	if err := p.write(ctx, c, txSpec{id: p.randID(), typ: "BaseTx", ins: ins, outs: outs}); err != nil {
		return err
	}
	return c.next(ctx)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// xGenesis writes AVAX (a genesis CreateAssetTx whose UTXO is the faucet's)
// and the other assets (CreateAssetTx in block 1, their supply to an
// issuer among the busy addresses).
func (p *primaryGen) xGenesis(ctx context.Context, x *chain) error {
	// Block 0 holds no tx; genesis txs are at height -1 (xchain).
	if err := x.closeBlock(ctx); err != nil {
		return err
	}
	avaxTx := p.assets[0]
	x.height = -1
	if err := p.write(ctx, x, txSpec{id: avaxTx, typ: "CreateAssetTx", outs: []output{{addr: p.faucet, amount: faucetFunds}},
		extra: []string{avaxTx.String()}}); err != nil {
		return err
	}
	x.height = 0
	if err := p.putAsset(ctx, x, 0, "Avalanche", "AVAX", 9); err != nil {
		return err
	}
	if err := x.openBlock(ctx); err != nil {
		return err
	}
	for i := 1; i <= otherAssets; i++ {
		if err := p.write(ctx, x, txSpec{id: p.assets[i], typ: "CreateAssetTx", outs: []output{{addr: i, asset: i, amount: assetSupply}},
			extra: []string{p.assets[i].String()}}); err != nil {
			return err
		}
		if err := p.putAsset(ctx, x, i, fmt.Sprintf("Bench Token %d", i), fmt.Sprintf("BT%d", i), 6); err != nil {
			return err
		}
	}
	return x.next(ctx)
}

func (p *primaryGen) putAsset(ctx context.Context, c *chain, i int, name, symbol string, denom int) error {
	id := p.assets[i].String()
	if _, err := c.tx.Exec(ctx, `INSERT INTO assets (asset_id, name, symbol, denomination, asset_type, cap, created_tx, created_time)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8)`, id, name, symbol, denom, "secp256k1", "fixed", id, c.time); err != nil {
		return fmt.Errorf("put asset: %w", err)
	}
	return nil
}

// staker is a validation or delegation record being generated.
type staker struct {
	id        ids.ID
	kind      string // VALIDATOR, DELEGATOR, SUBNET_VALIDATOR
	node      int
	subnet    ids.ID
	owner     int
	weight    uint64
	start     int64
	end       int64
	potential uint64
	validator *staker
	feeDue    uint64 // validators: delegation fees of rewarded delegators
	height    int64  // added at
	stakeIdx  uint32
	rewarded  bool
}

type event struct {
	time   int64
	order  int // at the same time: delegator rewards, validator rewards, then additions
	s      *staker
	reward bool
}

// pChain writes the P-chain: transfers between addresses, interleaved with
// validators (primary network and three permissioned subnets), delegators
// and their rewards, in time order.
func (p *primaryGen) pChain(ctx context.Context, c *chain) error {
	if err := c.closeBlock(ctx); err != nil { // genesis block
		return err
	}
	if err := c.openBlock(ctx); err != nil {
		return err
	}
	// The faucet's funds arrive by an import from the X-chain.
	if err := p.write(ctx, c, txSpec{id: p.randID(), typ: "ImportTx", src: p.m.XBlockchainID,
		outs: []output{{addr: p.faucet, amount: faucetFunds}}}); err != nil {
		return err
	}
	tip := int64(genesisTime + pChainDays*day)
	events := p.stakers(tip, c.step)
	ev := 0
	for i := 0; i < p.cfg.PTxs; i++ {
		for ev < len(events) && events[ev].time <= c.time {
			if err := p.stakerTx(ctx, c, events[ev]); err != nil {
				return err
			}
			ev++
		}
		if err := p.transfer(ctx, c, false); err != nil {
			return err
		}
	}
	for ; ev < len(events) && events[ev].time <= c.time; ev++ {
		if err := p.stakerTx(ctx, c, events[ev]); err != nil {
			return err
		}
	}
	if err := c.finish(ctx); err != nil {
		return err
	}
	// The validator set at the tip: current stakers and their delegators.
	tipTime := c.time
	tx, err := p.db.Begin(ctx)
	if err != nil {
		return err
	}
	weights := map[*staker]uint64{}
	for _, e := range events {
		s := e.s
		if e.reward || s.height < 0 || s.start > tipTime || s.rewarded {
			continue
		}
		if s.kind == "DELEGATOR" {
			if !s.validator.rewarded && s.validator.height >= 0 {
				weights[s.validator] += s.weight
			}
			continue
		}
		weights[s] += s.weight
	}
	for s, w := range weights {
		if _, err := tx.Exec(ctx, `INSERT INTO p_validator_set (subnet_id, node_id, from_height, to_height, weight, public_key)
			VALUES ($1,$2,$3,$4,$5,$6)`, s.subnet.String(), p.nodeID(s.node), s.height, int64(maxHeight), primary.PadAmount(w), ""); err != nil {
			tx.Rollback()
			return fmt.Errorf("validator set: %w", err)
		}
	}
	return tx.Commit()
}

func (p *primaryGen) nodeID(i int) string { return nodeIDOf(i) }

// nodeIDOf is the node id of node index i.
func nodeIDOf(i int) string {
	var b [20]byte
	rand.New(rand.NewSource(int64(i) + 1e6)).Read(b[:])
	return ids.NodeID(b).String()
}

// stakers plans the validation records: each node validates the primary
// network in back-to-back periods of half a day to two days from a random
// start; the first tenth of the nodes (the hot ones) from genesis, and also
// validate three permissioned subnets in shorter periods. Validators get a
// Zipf-distributed number of delegators inside their period.
func (p *primaryGen) stakers(tip, step int64) []event {
	var out []event
	subnets := []ids.ID{p.randID(), p.randID(), p.randID()}
	primaryNet := ids.Empty
	add := func(s *staker) {
		out = append(out, event{time: s.start, order: 2, s: s})
		if s.end <= tip {
			order := 1
			if s.kind == "DELEGATOR" {
				order = 0
			}
			out = append(out, event{time: s.end, order: order, s: s, reward: true})
		}
	}
	pickDel := rand.NewZipf(p.rng, 1.2, 2, 150)
	hot := max(1, p.cfg.Nodes/10)
	for n := 0; n < p.cfg.Nodes; n++ {
		t := genesisTime + step*3
		if n >= hot {
			t += p.rng.Int63n(tip - genesisTime)
		}
		for t < tip {
			d := day/2 + p.rng.Int63n(3*day/2)
			v := &staker{id: p.randID(), kind: "VALIDATOR", node: n, subnet: primaryNet, owner: int(p.pick.Uint64()),
				weight: 2_000_000_000_000 + uint64(p.rng.Int63n(1e14)), start: t, end: t + d, height: -1}
			v.potential = v.weight / 1000 * uint64(d) / day
			add(v)
			if p.rng.Intn(10) >= 3 {
				for k := int(pickDel.Uint64()) - 1; k > 0; k-- {
					ds := t + p.rng.Int63n(d/2)
					de := ds + d/8 + p.rng.Int63n(t+d-ds-d/8)
					dl := &staker{id: p.randID(), kind: "DELEGATOR", node: n, subnet: primaryNet, owner: int(p.pick.Uint64()),
						weight: 25_000_000_000 + uint64(p.rng.Int63n(1e13)), start: ds, end: de, validator: v, height: -1}
					dl.potential = dl.weight / 1000 * uint64(de-ds) / day
					add(dl)
				}
			}
			t += d + int64(p.rng.Intn(3))*step
		}
		if n < hot {
			for _, sub := range subnets {
				for t := genesisTime + step*5; t < tip; {
					d := day/4 + p.rng.Int63n(day/2)
					add(&staker{id: p.randID(), kind: "SUBNET_VALIDATOR", node: n, subnet: sub, owner: int(p.pick.Uint64()),
						weight: 100, start: t, end: t + d, height: -1})
					t += d + step
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].time != out[j].time {
			return out[i].time < out[j].time
		}
		return out[i].order < out[j].order
	})
	for i := 0; i < hot && i < 10; i++ {
		p.m.HotNodes = append(p.m.HotNodes, p.nodeID(i))
	}
	for i := p.cfg.Nodes - 1; i >= hot && len(p.m.ColdNodes) < 50; i-- {
		p.m.ColdNodes = append(p.m.ColdNodes, p.nodeID(i))
	}
	return out
}

func owner(bech string) string {
	return `{"locktime":0,"threshold":1,"addresses":["` + bech + `"]}`
}

// stakerTx writes a staker's addition (its tx, stake output and p_stakers
// row) or its RewardValidatorTx (stake unlocked, reward UTXOs paid, the row
// ended), as internal/decode/pchain does.
func (p *primaryGen) stakerTx(ctx context.Context, c *chain, e event) error {
	s := e.s
	if !e.reward {
		// Delegators of a validator that was never added cannot be.
		if s.kind == "DELEGATOR" && s.validator.height < 0 {
			return nil
		}
		typ := map[string]string{"VALIDATOR": "AddPermissionlessValidatorTx", "DELEGATOR": "AddPermissionlessDelegatorTx",
			"SUBNET_VALIDATOR": "AddSubnetValidatorTx"}[s.kind]
		in, ok := p.take(c, p.faucet, 0)
		if !ok || in.ref.amount < s.weight+fee {
			return fmt.Errorf("P faucet is empty")
		}
		outs := []output{{addr: p.faucet, amount: in.ref.amount - s.weight - fee}}
		if s.kind != "SUBNET_VALIDATOR" {
			outs = append(outs, output{addr: s.owner, amount: s.weight, staked: true, start: s.start, end: s.end})
		} else {
			outs[0].amount = in.ref.amount - fee
		}
		if err := p.write(ctx, c, txSpec{id: s.id, typ: typ, ins: []spent{in}, outs: outs}); err != nil {
			return err
		}
		s.height, s.stakeIdx = c.height, 1
		var blsKey, blsPop, vOwner, dOwner, rOwner, valTx string
		shares := 0
		asset := ""
		amount := uint64(0)
		switch s.kind {
		case "VALIDATOR":
			k, pop := make([]byte, 48), make([]byte, 96)
			p.rng.Read(k)
			p.rng.Read(pop)
			blsKey, blsPop = "0x"+hex.EncodeToString(k), "0x"+hex.EncodeToString(pop)
			vOwner, dOwner, shares = owner(p.bech[s.owner]), owner(p.bech[s.owner]), 20_000
			asset, amount = p.assets[0].String(), s.weight
		case "DELEGATOR":
			rOwner, valTx = owner(p.bech[s.owner]), s.validator.id.String()
			asset, amount = p.assets[0].String(), s.weight
		}
		if _, err := c.tx.Exec(ctx, `INSERT INTO p_stakers (tx_id, tx_type, kind, subnet_id, node_id, weight, stake_asset,
			stake_amount, start_time, end_time, delegation_shares, bls_public_key, bls_pop, validation_reward_owner,
			delegation_reward_owner, reward_owner, validator_tx_id, potential_reward, accrued_delegatee_reward, priority,
			added_height, added_time, current_height, reward_amount, delegation_fee_amount)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$24)`,
			s.id.String(), typ, s.kind, s.subnet.String(), p.nodeID(s.node), primary.PadAmount(s.weight), asset,
			primary.PadAmount(amount), s.start, s.end, shares, blsKey, blsPop, vOwner, dOwner, rOwner, valTx,
			primary.PadAmount(s.potential), primary.PadAmount(0), 0, c.height, c.time, c.height, primary.PadAmount(0)); err != nil {
			return fmt.Errorf("put staker: %w", err)
		}
		if s.kind != "SUBNET_VALIDATOR" {
			if err := pchain.PutRewardOwners(ctx, c.tx, s.id.String(), s.start, []string{p.bech[s.owner]}); err != nil {
				return err
			}
		}
		if s.kind == "DELEGATOR" {
			// Current from its acceptance (post-Durango), as the indexer keeps it.
			if err := pchain.DelegationsChanged(ctx, c.tx, s.id.String(), 1, 1); err != nil {
				return err
			}
		}
		return c.next(ctx)
	}
	if s.height < 0 {
		return nil
	}
	// The reward: its own tx in its own (proposal) block, at the time of
	// the block before it.
	if len(c.txIDs) > 0 {
		if err := c.closeBlock(ctx); err != nil {
			return err
		}
		c.hold = true
		if err := c.openBlock(ctx); err != nil {
			return err
		}
	}
	c.reward = true
	rewardTx := p.randID()
	var paid, feePaid uint64
	if err := p.write(ctx, c, txSpec{id: rewardTx, typ: "RewardValidatorTx", reward: s.id.String()}); err != nil {
		return err
	}
	if s.kind != "SUBNET_VALIDATOR" {
		stakeID := (&avax.UTXOID{TxID: s.id, OutputIndex: s.stakeIdx}).InputID().String()
		if err := p.w.UnlockStake(ctx, c.tx, stakeID); err != nil {
			return fmt.Errorf("unlock stake: %w", err)
		}
		k := [2]int{s.owner, 0}
		c.unspent[k] = append(c.unspent[k], utxoRef{tx: s.id, idx: s.stakeIdx, amount: s.weight})
		var outs []output
		switch s.kind {
		case "VALIDATOR":
			paid = s.potential
			outs = append(outs, output{addr: s.owner, amount: paid, reward: "VALIDATOR"})
			if s.feeDue > 0 {
				feePaid = s.feeDue
				outs = append(outs, output{addr: s.owner, amount: feePaid, reward: "VALIDATOR_FEE"})
			}
		case "DELEGATOR":
			share := s.potential / 50 // 2% delegation fee
			paid = s.potential - share
			s.validator.feeDue += share
			outs = append(outs, output{addr: s.owner, amount: paid, reward: "DELEGATOR"})
		}
		// Reward UTXOs belong to the staker tx, after its outputs and stake.
		if err := p.putRewards(ctx, c, s, outs); err != nil {
			return err
		}
	}
	if s.kind == "DELEGATOR" {
		if err := pchain.DelegationsChanged(ctx, c.tx, s.id.String(), 0, -1); err != nil {
			return err
		}
	}
	s.rewarded = true
	if _, err := c.tx.Exec(ctx, `UPDATE p_stakers SET removed_height = $1, removed_time = $2, removal = $3,
		removal_tx_id = $4, reward_amount = $5, delegation_fee_amount = $6 WHERE tx_id = $7`,
		c.height, c.time, "REWARDED", rewardTx.String(), primary.PadAmount(paid), primary.PadAmount(feePaid), s.id.String()); err != nil {
		return fmt.Errorf("end staker: %w", err)
	}
	if err := c.closeBlock(ctx); err != nil {
		return err
	}
	c.hold = true
	return c.openBlock(ctx)
}

// putRewards writes reward UTXOs of staker s (tx id: the staker tx, as the node does).
func (p *primaryGen) putRewards(ctx context.Context, c *chain, s *staker, outs []output) error {
	for i, o := range outs {
		idx := s.stakeIdx + 1 + uint32(i)
		u := &avax.UTXO{UTXOID: avax.UTXOID{TxID: s.id, OutputIndex: idx}, Asset: avax.Asset{ID: p.assets[0]},
			Out: &secp256k1fx.TransferOutput{Amt: o.amount, OutputOwners: secp256k1fx.OutputOwners{Threshold: 1,
				Addrs: []ids.ShortID{p.addrs[o.addr]}}}}
		b, err := ptxs.Codec.Marshal(ptxs.CodecVersion, u)
		if err != nil {
			return fmt.Errorf("marshal reward: %w", err)
		}
		if err := p.w.PutUTXO(ctx, c.tx, u, b, primary.Created{CreatedChain: "P", ChainKey: "P", Height: uint64(c.height),
			Time: c.time, UTXOType: "TRANSFER", RewardType: o.reward}); err != nil {
			return err
		}
		k := [2]int{o.addr, 0}
		c.unspent[k] = append(c.unspent[k], utxoRef{tx: s.id, idx: idx, amount: o.amount})
		c.utxos[o.addr]++
		if len(p.m.RewardAddrs) < 100 && p.rng.Intn(20) == 0 {
			p.m.RewardAddrs = append(p.m.RewardAddrs, p.bech[o.addr])
		}
	}
	if err := p.w.LinkTx(ctx, c.tx, "P", c.txIDs[len(c.txIDs)-1], c.time, []ids.ID{p.assets[0]}, []string{p.bech[s.owner]}); err != nil {
		return err
	}
	return nil
}

// subnets writes the subnets and blockchains (p_subnets, p_blockchains, as
// internal/decode/pchain does): the primary network with the X- and
// C-chains of the genesis, then cfg.Subnets subnets created over the
// P-chain's span, each with one to three chains (an EVM genesis for most),
// a tenth of them converted to L1s. Derived from their index, apart from
// the random stream.
func (p *primaryGen) subnets(ctx context.Context, pc *chain) error {
	tx, err := p.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	put := func(id, created string, height, t int64, threshold int, owners, conv, mgr, mgrAddr string) error {
		_, err := tx.Exec(ctx, `INSERT INTO p_subnets (subnet_id, created_tx_id, created_height, created_time, owner_threshold,
			owner_locktime, owner_addresses, owner_height, conversion_tx_id, conversion_id, manager_chain_id, manager_address,
			converted_height, converted_time) VALUES ($1,$2,$3,$4,$5,0,$6,$3,$7,$7,$8,$9,$10,$11)`,
			id, created, height, t, threshold, owners, conv, mgr, mgrAddr, map[bool]int64{true: height, false: -1}[conv != ""], map[bool]int64{true: t, false: 0}[conv != ""])
		if err != nil {
			return fmt.Errorf("put subnet %s: %w", id, err)
		}
		return nil
	}
	chainRow := func(id, name, subnet string, genesis []byte, height, t int64) error {
		_, err := tx.Exec(ctx, `INSERT INTO p_blockchains (blockchain_id, name, subnet_id, vm_id, fx_ids, genesis_data,
			created_height, created_time) VALUES ($1,$2,$3,$4,'[]',$5,$6,$7)`, id, name, subnet, ids.Empty.Prefix(uint64(len(name))).String(), genesis, height, t)
		if err != nil {
			return fmt.Errorf("put blockchain %s: %w", id, err)
		}
		return nil
	}
	if err := put(ids.Empty.String(), "", 0, genesisTime, 0, "[]", "", "", ""); err != nil {
		return err
	}
	if err := chainRow(p.m.XBlockchainID, "X-Chain", ids.Empty.String(), []byte{0, 0, 1}, 0, genesisTime); err != nil {
		return err
	}
	if err := chainRow(p.m.CBlockchainID, "C-Chain", ids.Empty.String(), []byte(`{"config":{"chainId":43114},"gasLimit":"0x5f5e100"}`), 0, genesisTime); err != nil {
		return err
	}
	idOf := func(kind string, i int) string {
		var id ids.ID
		rand.New(rand.NewSource(int64(i)*7 + int64(kind[0])<<40)).Read(id[:])
		return id.String()
	}
	for i := 0; i < p.cfg.Subnets; i++ {
		height := 1 + int64(i)*max(1, pc.height-1)/int64(max(1, p.cfg.Subnets))
		t := genesisTime + height*pc.step
		owners, _ := json.Marshal([]string{p.bech[i%len(p.bech)], p.bech[(i*7+1)%len(p.bech)]})
		id, conv, mgr, addr := idOf("s", i), "", "", ""
		chains := 1 + i%3
		if i%10 == 0 {
			conv, mgr, addr = idOf("v", i), idOf("c", i*3), "0x0200000000000000000000000000000000000005"
		}
		if err := put(id, id, height, t, 1+i%2, string(owners), conv, mgr, addr); err != nil {
			return err
		}
		for k := 0; k < chains; k++ {
			genesis := []byte(fmt.Sprintf(`{"config":{"chainId":%d},"gasLimit":"0x7a1200","alloc":{}}`, 100_000+i*3+k))
			if k == 2 {
				genesis = []byte{0, 1, 2, 3}
			}
			if err := chainRow(idOf("c", i*3+k), fmt.Sprintf("chain%d", i*3+k), id, genesis, height, t); err != nil {
				return err
			}
		}
		p.m.SubnetIDs = append(p.m.SubnetIDs, id)
		p.m.ChainIDs = append(p.m.ChainIDs, idOf("c", i*3))
	}
	return tx.Commit()
}
