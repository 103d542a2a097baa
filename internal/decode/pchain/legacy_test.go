package pchain

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/upgrade"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/units"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/platformvm/block"
	"github.com/ava-labs/avalanchego/vms/platformvm/reward"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/devnet/indextest"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// legacyChain builds a pre-Banff P-chain on the devnet-a genesis (the
// recording has none): proposal blocks for staker txs and time, option blocks
// deciding them, an atomic block and a standard block.
type legacyChain struct {
	t      *testing.T
	blocks []ingest.RawBlock
	parent ids.ID
	avax   ids.ID
	owner  secp256k1fx.OutputOwners
}

func (c *legacyChain) add(b block.Block, err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
	c.blocks = append(c.blocks, ingest.RawBlock{Height: b.Height(), Hash: b.ID().String(), Bytes: b.Bytes()})
	c.parent = b.ID()
}

func (c *legacyChain) next() uint64 { return uint64(len(c.blocks)) }

func (c *legacyChain) signed(u txs.UnsignedTx) *txs.Tx {
	c.t.Helper()
	stx := &txs.Tx{Unsigned: u}
	if err := stx.Initialize(txs.Codec); err != nil {
		c.t.Fatal(err)
	}
	return stx
}

func (c *legacyChain) propose(u txs.UnsignedTx, commit bool) *txs.Tx {
	stx := c.signed(u)
	c.add(block.NewApricotProposalBlock(c.parent, c.next(), stx))
	if commit {
		c.add(block.NewApricotCommitBlock(c.parent, c.next()))
	} else {
		c.add(block.NewApricotAbortBlock(c.parent, c.next()))
	}
	return stx
}

func (c *legacyChain) out(amount uint64) *avax.TransferableOutput {
	return &avax.TransferableOutput{Asset: avax.Asset{ID: c.avax}, Out: &secp256k1fx.TransferOutput{Amt: amount, OutputOwners: c.owner}}
}

func (c *legacyChain) in(txID ids.ID, index uint32, amount uint64) *avax.TransferableInput {
	return &avax.TransferableInput{UTXOID: avax.UTXOID{TxID: txID, OutputIndex: index}, Asset: avax.Asset{ID: c.avax},
		In: &secp256k1fx.TransferInput{Amt: amount, Input: secp256k1fx.Input{SigIndices: []uint32{0}}}}
}

func (c *legacyChain) base(ins []*avax.TransferableInput, outs ...*avax.TransferableOutput) txs.BaseTx {
	return txs.BaseTx{BaseTx: avax.BaseTx{NetworkID: 88888, BlockchainID: constants.PlatformChainID, Ins: ins, Outs: outs}}
}

// TestApricotLegacyFlow replays pre-Banff rules: AddValidatorTx as a committed
// proposal (pending until an AdvanceTimeTx reaches its start, then current
// with its potential reward minted), an aborted AddDelegatorTx (its stake
// comes back as plain outputs), an aborted AdvanceTimeTx, the reward at the
// end, an export in an atomic block, a subnet validator that expires.
func TestApricotLegacyFlow(t *testing.T) {
	rec := devnet.LoadRPC(t, devnet.P)
	g := indextest.Genesis(t)
	genesisBlock := recordedBlocks(t, rec)[0]

	// A genesis UTXO with plain AVAX to spend.
	var src *avax.UTXO
	for _, u := range g.P.UTXOs {
		if o, ok := u.Out.(*secp256k1fx.TransferOutput); ok && o.Amt >= 1_000_000*units.Avax {
			src = &u.UTXO
			break
		}
	}
	if src == nil {
		t.Fatal("no spendable genesis utxo")
	}
	srcAmt := src.Out.(*secp256k1fx.TransferOutput).Amt

	c := &legacyChain{t: t, avax: g.AvaxAssetID, owner: secp256k1fx.OutputOwners{Threshold: 1, Addrs: []ids.ShortID{{7}}}}
	c.blocks = []ingest.RawBlock{genesisBlock}
	c.parent = ids.ID(hash256(genesisBlock.Bytes))
	t0 := int64(g.P.Timestamp)
	fee := units.Avax
	node := ids.BuildTestNodeID([]byte{1, 2, 3})
	const stake, dur = 2000 * units.Avax, 86400

	// 1-2: validator, committed; pending until t0+100.
	vtx := c.propose(&txs.AddValidatorTx{
		BaseTx:           c.base([]*avax.TransferableInput{c.in(src.TxID, src.OutputIndex, srcAmt)}, c.out(srcAmt-stake-fee)),
		Validator:        txs.Validator{NodeID: node, Start: uint64(t0 + 100), End: uint64(t0 + 100 + dur), Wght: stake},
		StakeOuts:        []*avax.TransferableOutput{c.out(stake)},
		RewardsOwner:     &c.owner,
		DelegationShares: 20_000,
	}, true)
	change := srcAmt - stake - fee
	// 3-4: delegator, aborted: its inputs are spent anyway, its stake comes back.
	dtx := c.propose(&txs.AddDelegatorTx{
		BaseTx:                 c.base([]*avax.TransferableInput{c.in(vtx.ID(), 0, change)}, c.out(change-500*units.Avax-fee)),
		Validator:              txs.Validator{NodeID: node, Start: uint64(t0 + 150), End: uint64(t0 + 200), Wght: 500 * units.Avax},
		StakeOuts:              []*avax.TransferableOutput{c.out(500 * units.Avax)},
		DelegationRewardsOwner: &c.owner,
	}, false)
	// 5-6: time to the validator's start; 7-8 an aborted advance; 9-10 to its end.
	c.propose(&txs.AdvanceTimeTx{Time: uint64(t0 + 100)}, true)
	aborted := c.propose(&txs.AdvanceTimeTx{Time: uint64(t0 + 100 + dur)}, false)
	c.propose(&txs.AdvanceTimeTx{Time: uint64(t0 + 100 + dur)}, true)
	// 11-12: reward.
	rtx := c.propose(&txs.RewardValidatorTx{TxID: vtx.ID()}, true)
	// 13: export to X in an atomic block; 14: a subnet in a standard block.
	xID, _, err := g.Chain(constants.AVMID)
	if err != nil {
		t.Fatal(err)
	}
	dChange := change - 500*units.Avax - fee
	etx := c.signed(&txs.ExportTx{
		BaseTx:           c.base([]*avax.TransferableInput{c.in(dtx.ID(), 0, dChange)}, c.out(dChange-10*units.Avax-fee)),
		DestinationChain: xID.ID(),
		ExportedOutputs:  []*avax.TransferableOutput{c.out(10 * units.Avax)},
	})
	c.add(block.NewApricotAtomicBlock(c.parent, c.next(), etx))
	eChange := dChange - 10*units.Avax - fee
	stx := c.signed(&txs.CreateSubnetTx{
		BaseTx: c.base([]*avax.TransferableInput{c.in(etx.ID(), 0, eChange)}, c.out(eChange-fee)),
		Owner:  &c.owner,
	})
	c.add(block.NewApricotStandardBlock(c.parent, c.next(), []*txs.Tx{stx}))
	// 15-16: a subnet validator on a genesis validator's node, 17-18 it starts, 19-20 it expires.
	gNode := g.P.Validators[0].Unsigned.(txs.ValidatorTx).NodeID()
	t1 := t0 + 100 + dur
	c.propose(&txs.AddSubnetValidatorTx{
		BaseTx: c.base([]*avax.TransferableInput{c.in(stx.ID(), 0, eChange-fee)}, c.out(eChange-2*fee)),
		SubnetValidator: txs.SubnetValidator{
			Validator: txs.Validator{NodeID: gNode, Start: uint64(t1 + 10), End: uint64(t1 + 20), Wght: 7},
			Subnet:    stx.ID(),
		},
		SubnetAuth: &secp256k1fx.Input{SigIndices: []uint32{0}},
	}, true)
	c.propose(&txs.AdvanceTimeTx{Time: uint64(t1 + 10)}, true)
	c.propose(&txs.AdvanceTimeTx{Time: uint64(t1 + 20)}, true)

	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ix, err := NewIndexer(g)
		if err != nil {
			t.Fatal(err)
		}
		up := upgrade.Default
		up.BanffTime, up.CortinaTime, up.DurangoTime, up.EtnaTime = upgrade.UnscheduledActivationTime,
			upgrade.UnscheduledActivationTime, upgrade.UnscheduledActivationTime, upgrade.UnscheduledActivationTime
		up.FortunaTime, up.GraniteTime = upgrade.UnscheduledActivationTime, upgrade.UnscheduledActivationTime
		ix.Params.Upgrades = up
		indextest.Apply(t, db, ix, c.blocks, 5)

		state := func(h uint64) State {
			st, err := StateAt(ctx, db, h)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		one := func(q string, args ...any) string {
			var s string
			if err := db.QueryRowContext(ctx, q, args...).Scan(&s); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			return s
		}

		// Statuses.
		// The aborted AdvanceTimeTx was proposed again with the same bytes:
		// one tx, the later block wins.
		for id, want := range map[ids.ID]string{vtx.ID(): "Committed/1", dtx.ID(): "Aborted/3", aborted.ID(): "Committed/9",
			rtx.ID(): "Committed/11", etx.ID(): "Committed/13"} {
			if got := one(`SELECT status || '/' || height FROM p_txs WHERE tx_id = $1`, id.String()); got != want {
				t.Errorf("status of %s = %s, want %s", id, got, want)
			}
		}

		// The validator was pending until height 6, then current with its reward minted.
		supply5 := state(5).CurrentSupply
		potential := reward.NewCalculator(ix.Params.Reward).Calculate(dur*time.Second, stake, supply5)
		if potential == 0 {
			t.Fatal("zero potential reward")
		}
		if got := state(2).CurrentSupply; got != supply5 {
			t.Errorf("supply changed by a pending staker: %d -> %d", supply5, got)
		}
		if got := state(6).CurrentSupply; got != supply5+potential {
			t.Errorf("supply after promotion = %d, want %d", got, supply5+potential)
		}
		if got := one(`SELECT potential_reward || '/' || current_height || '/' || start_time FROM p_stakers WHERE tx_id = $1`,
			vtx.ID().String()); got != fmt.Sprintf("%s/6/%d", padded(potential), t0+100) {
			t.Errorf("validator = %s", got)
		}
		if st := state(6); st.Time != t0+100 {
			t.Errorf("time after advance = %d, want %d", st.Time, t0+100)
		}
		if st := state(8); st.Time != t0+100 {
			t.Errorf("time after aborted advance = %d, want %d", st.Time, t0+100)
		}
		for h, want := range map[uint64]int{5: 2, 6: 3, 11: 3, 12: 2} {
			set, err := ValidatorSetAt(ctx, db, constants.PrimaryNetworkID, h)
			if err != nil {
				t.Fatal(err)
			}
			if len(set) != want {
				t.Errorf("primary set at %d has %d validators, want %d", h, len(set), want)
			}
		}

		// Rewarded: stake back unlocked, reward paid after it, supply unchanged by the commit.
		if got := one(`SELECT removal || '/' || removed_height FROM p_stakers WHERE tx_id = $1`, vtx.ID().String()); got != "REWARDED/12" {
			t.Errorf("validator end = %s", got)
		}
		stakeID := (&avax.UTXOID{TxID: vtx.ID(), OutputIndex: 1}).InputID().String()
		rewardID := (&avax.UTXOID{TxID: vtx.ID(), OutputIndex: 2}).InputID().String()
		if got := one(`SELECT utxo_type || '/' || amount FROM utxos WHERE utxo_id = $1 AND stake_locked = $2`, stakeID, false); got != "STAKE/"+padded(stake) {
			t.Errorf("returned stake = %s", got)
		}
		if got := one(`SELECT reward_type || '/' || amount FROM utxos WHERE utxo_id = $1`, rewardID); got != "VALIDATOR/"+padded(potential) {
			t.Errorf("reward utxo = %s", got)
		}
		if got := state(12).CurrentSupply; got != supply5+potential {
			t.Errorf("supply after commit = %d, want %d", got, supply5+potential)
		}

		// Aborted delegator: spent its input, its stake is a plain output, no staker.
		if got := one(`SELECT consumed_tx FROM utxos WHERE utxo_id = $1`, (&avax.UTXOID{TxID: vtx.ID()}).InputID().String()); got != dtx.ID().String() {
			t.Errorf("delegator input consumed by %s", got)
		}
		if got := one(`SELECT utxo_type || '/' || staked FROM utxos WHERE utxo_id = $1`,
			(&avax.UTXOID{TxID: dtx.ID(), OutputIndex: 1}).InputID().String()); got != "TRANSFER/false" && got != "TRANSFER/0" {
			t.Errorf("aborted delegator stake = %s", got)
		}
		if got := one(`SELECT COUNT(*) FROM p_stakers WHERE tx_id = $1`, dtx.ID().String()); got != "0" {
			t.Errorf("aborted delegator has a staker row")
		}

		// Export keyed to X.
		if got := one(`SELECT chain_key FROM utxos WHERE utxo_id = $1`, (&avax.UTXOID{TxID: etx.ID(), OutputIndex: 1}).InputID().String()); got != "X" {
			t.Errorf("exported utxo chain = %s", got)
		}

		// Subnet validator: pending, current at 18 with the node's primary key, expired at 20.
		for h, want := range map[uint64]int{16: 0, 18: 1, 19: 1, 20: 0} {
			set, err := ValidatorSetAt(ctx, db, stx.ID(), h)
			if err != nil {
				t.Fatal(err)
			}
			if len(set) != want {
				t.Errorf("subnet set at %d has %d validators, want %d", h, len(set), want)
			}
			if len(set) == 1 && (set[0].NodeID != gNode || set[0].Weight != 7 || len(set[0].PublicKey) != 48) {
				t.Errorf("subnet set at %d = %+v", h, set[0])
			}
		}
		if got := one(`SELECT removal || '/' || removed_height FROM p_stakers WHERE subnet_id = $1`, stx.ID().String()); got != "EXPIRED/20" {
			t.Errorf("subnet validator end = %s", got)
		}
	})
}

func padded(v uint64) string { return fmt.Sprintf("%020d", v) }
