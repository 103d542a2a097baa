package pvmoracle_test

import (
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/upgrade"
	"github.com/ava-labs/avalanchego/utils"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/bls/signer/localsigner"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/utils/units"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/platformvm/signer"
	"github.com/ava-labs/avalanchego/vms/platformvm/stakeable"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	avagenesis "github.com/ava-labs/avalanchego/genesis"

	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testing/pvmoracle"
)

func TestMain(m *testing.M) { storetest.Main(m) }

const (
	day  = 24 * time.Hour
	hour = time.Hour
)

// genesisTime is when the legacy network starts: mainnet's history begins
// in 2020; any time before the upgrades below would do.
var genesisTime = time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)

// legacyUpgrades activates the P-chain upgrades one after the other inside
// the test chain's span, as mainnet and Fuji saw them: Apricot Phase 5
// (atomic txs move from atomic blocks to standard ones), Banff (block
// timestamps, permissionless stakers, elastic subnets), Cortina (delegatee
// rewards accrue), Durango (stakers start when accepted; AddValidatorTx and
// AddDelegatorTx disabled) and Etna (dynamic fees).
func legacyUpgrades() upgrade.Config {
	at := func(d time.Duration) time.Time { return genesisTime.Add(d) }
	up := upgrade.Default
	up.ApricotPhase5Time, up.ApricotPhasePre6Time, up.ApricotPhase6Time, up.ApricotPhasePost6Time = at(2*day), at(2*day), at(2*day), at(2*day)
	up.BanffTime, up.CortinaTime, up.DurangoTime, up.EtnaTime = at(6*day), at(12*day), at(18*day), at(24*day)
	up.FortunaTime, up.GraniteTime, up.HeliconTime = upgrade.UnscheduledActivationTime, upgrade.UnscheduledActivationTime, upgrade.UnscheduledActivationTime
	return up
}

// keys of the legacy network.
var (
	kFund  = pvmoracle.Key("fund")    // spends, stakes
	kGen   = pvmoracle.Key("genesis") // the genesis validator's stake and rewards
	kVal   = pvmoracle.Key("validator-rewards")
	kDel   = pvmoracle.Key("delegator-rewards")
	nodeG  = ids.BuildTestNodeID([]byte("genesis"))
	legacy = []*secp256k1.PrivateKey{kFund, kGen, kVal, kDel}
)

// legacyGenesis is a network (ID 1337, the local network's staking and fee
// rules) with one genesis validator staking until day 60, unlocked P-chain
// AVAX for kFund and a stakeable output of kFund locked until day 10.
func legacyGenesis() *avagenesis.Config {
	return &avagenesis.Config{
		NetworkID: 1337,
		Allocations: []avagenesis.Allocation{
			{ETHAddr: kFund.Address(), AVAXAddr: kFund.Address(), InitialAmount: 1000 * units.Avax, UnlockSchedule: []avagenesis.LockedAmount{
				{Amount: 1_000_000 * units.Avax},
				{Amount: 50_000 * units.Avax, Locktime: uint64(genesisTime.Add(10 * day).Unix())},
			}},
			{ETHAddr: kGen.Address(), AVAXAddr: kGen.Address(), UnlockSchedule: []avagenesis.LockedAmount{{Amount: 2_000_000 * units.Avax}}},
		},
		StartTime:            uint64(genesisTime.Unix()),
		InitialStakeDuration: uint64((60 * day).Seconds()),
		InitialStakedFunds:   []ids.ShortID{kGen.Address()},
		InitialStakers:       []avagenesis.Staker{{NodeID: nodeG, RewardAddress: kGen.Address(), DelegationFee: 20_000}},
		CChainGenesis:        avagenesis.LocalConfig.CChainGenesis,
	}
}

// legacyRun builds the legacy chain step by step on the oracle; after every
// step each Permafrost catches up and is compared with the VM.
type legacyRun struct {
	t  *testing.T
	c  *pvmoracle.Chain
	pf []*permafrost
	d  *differ
}

func (r *legacyRun) step(name string, err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatalf("%s: %v", name, err)
	}
	for _, p := range r.pf {
		p.catchUp(r.t, r.d.g)
		r.d.compare(r.t, name, p)
	}
}

// fund spends amount (plus burn) of kFund.
func (r *legacyRun) fund(amount, burn uint64) pvmoracle.Spend {
	r.t.Helper()
	s, err := r.c.Fund(kFund, r.c.AVAX, amount, burn)
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

func (r *legacyRun) sign(u txs.UnsignedTx, signers ...[]*secp256k1.PrivateKey) *txs.Tx {
	r.t.Helper()
	tx, err := r.c.Sign(u, signers...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.d.txs = append(r.d.txs, tx.ID())
	return tx
}

func (r *legacyRun) base(s pvmoracle.Spend, outs ...*avax.TransferableOutput) txs.BaseTx {
	outs = append(outs, s.Change...)
	avax.SortTransferableOutputs(outs, txs.Codec)
	return txs.BaseTx{BaseTx: avax.BaseTx{NetworkID: 1337, BlockchainID: constants.PlatformChainID, Ins: s.Ins, Outs: outs}}
}

// validator adds a primary-network validator of node: with legacy set an
// AddValidatorTx (a proposal before Banff, committed or aborted; a standard
// tx until Durango), else an AddPermissionlessValidatorTx.
func (r *legacyRun) validator(name string, node ids.NodeID, start, end time.Time, shares uint32, legacy, commit bool) ids.ID {
	r.t.Helper()
	const stake = 2000 * units.Avax
	s := r.fund(stake, units.MilliAvax)
	v := txs.Validator{NodeID: node, Start: uint64(start.Unix()), End: uint64(end.Unix()), Wght: stake}
	var tx *txs.Tx
	if legacy {
		tx = r.sign(&txs.AddValidatorTx{BaseTx: r.base(s), Validator: v, StakeOuts: []*avax.TransferableOutput{r.c.Out(kFund, stake)},
			RewardsOwner: pvmoracle.Owner(kVal), DelegationShares: shares}, s.Signers()...)
		if r.c.O.Upgrades.IsBanffActivated(r.c.Time) {
			// After Banff they are standard txs (until Durango).
			r.step(name, r.c.BanffStandard(tx))
		} else {
			r.step(name, r.c.ApricotPropose(tx, commit))
		}
	} else {
		sk, err := localsigner.New()
		if err != nil {
			r.t.Fatal(err)
		}
		pop, err := signer.NewProofOfPossession(sk)
		if err != nil {
			r.t.Fatal(err)
		}
		tx = r.sign(&txs.AddPermissionlessValidatorTx{BaseTx: r.base(s), Validator: v, Subnet: constants.PrimaryNetworkID, Signer: pop,
			StakeOuts: []*avax.TransferableOutput{r.c.Out(kFund, stake)}, ValidatorRewardsOwner: pvmoracle.Owner(kVal),
			DelegatorRewardsOwner: pvmoracle.Owner(kVal), DelegationShares: shares}, s.Signers()...)
		r.step(name, r.c.BanffStandard(tx))
	}
	r.d.stakers = append(r.d.stakers, tx.ID())
	return tx.ID()
}

// delegator delegates amount to node, like validator.
func (r *legacyRun) delegator(name string, node ids.NodeID, start, end time.Time, amount uint64, legacy, commit bool) ids.ID {
	r.t.Helper()
	s := r.fund(amount, units.MilliAvax)
	v := txs.Validator{NodeID: node, Start: uint64(start.Unix()), End: uint64(end.Unix()), Wght: amount}
	var tx *txs.Tx
	if legacy {
		tx = r.sign(&txs.AddDelegatorTx{BaseTx: r.base(s), Validator: v, StakeOuts: []*avax.TransferableOutput{r.c.Out(kFund, amount)},
			DelegationRewardsOwner: pvmoracle.Owner(kDel)}, s.Signers()...)
		if r.c.O.Upgrades.IsBanffActivated(r.c.Time) {
			// After Banff they are standard txs (until Durango).
			r.step(name, r.c.BanffStandard(tx))
		} else {
			r.step(name, r.c.ApricotPropose(tx, commit))
		}
	} else {
		tx = r.sign(&txs.AddPermissionlessDelegatorTx{BaseTx: r.base(s), Validator: v, Subnet: constants.PrimaryNetworkID,
			StakeOuts: []*avax.TransferableOutput{r.c.Out(kFund, amount)}, DelegationRewardsOwner: pvmoracle.Owner(kDel)}, s.Signers()...)
		r.step(name, r.c.BanffStandard(tx))
	}
	r.d.stakers = append(r.d.stakers, tx.ID())
	return tx.ID()
}

// importTx imports amount of asset that the X-chain exported to kFund (the
// fee, in AVAX, comes from the imported AVAX or from kFund's UTXOs).
func (r *legacyRun) importTx(asset ids.ID, amount uint64, seed string) *txs.Tx {
	r.t.Helper()
	xID := r.c.O.Network.XChainID
	u, err := r.c.ExportedToP(xID, asset, kFund, amount, seed)
	if err != nil {
		r.t.Fatal(err)
	}
	in := &avax.TransferableInput{UTXOID: u.UTXOID, Asset: u.Asset,
		In: &secp256k1fx.TransferInput{Amt: amount, Input: secp256k1fx.Input{SigIndices: []uint32{0}}}}
	out := &avax.TransferableOutput{Asset: u.Asset, Out: &secp256k1fx.TransferOutput{Amt: amount, OutputOwners: *pvmoracle.Owner(kFund)}}
	s := pvmoracle.Spend{}
	if asset == r.c.AVAX {
		out.Out.(*secp256k1fx.TransferOutput).Amt -= units.MilliAvax
	} else {
		s = r.fund(0, units.MilliAvax)
	}
	return r.sign(&txs.ImportTx{BaseTx: r.base(s, out), SourceChain: xID, ImportedInputs: []*avax.TransferableInput{in}},
		append(s.Signers(), []*secp256k1.PrivateKey{kFund})...)
}

// fundAsset spends amount of asset and a fee of kFund.
func (r *legacyRun) fundAsset(asset ids.ID, amount uint64) pvmoracle.Spend {
	r.t.Helper()
	s, err := r.c.Fund(kFund, asset, amount, units.MilliAvax)
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

// lockedValidator adds an AddValidatorTx (a Banff standard tx) staking
// 2,000 AVAX of kFund's locked genesis output: the stake and the change
// stay locked until the output's locktime.
func (r *legacyRun) lockedValidator(name string, node ids.NodeID, start, end time.Time) ids.ID {
	r.t.Helper()
	const stake = 2000 * units.Avax
	utxos, err := r.c.UTXOs(kFund.Address())
	if err != nil {
		r.t.Fatal(err)
	}
	var locked *avax.UTXO
	for _, u := range utxos {
		if _, ok := u.Out.(*stakeable.LockOut); ok {
			locked = u
		}
	}
	if locked == nil {
		r.t.Fatal("no locked output of kFund")
	}
	lo := locked.Out.(*stakeable.LockOut)
	lockOut := func(amount uint64) *avax.TransferableOutput {
		return &avax.TransferableOutput{Asset: locked.Asset, Out: &stakeable.LockOut{Locktime: lo.Locktime,
			TransferableOut: &secp256k1fx.TransferOutput{Amt: amount, OutputOwners: *pvmoracle.Owner(kFund)}}}
	}
	s := r.fund(0, units.MilliAvax)
	s.Ins = append(s.Ins, &avax.TransferableInput{UTXOID: locked.UTXOID, Asset: locked.Asset, In: &stakeable.LockIn{Locktime: lo.Locktime,
		TransferableIn: &secp256k1fx.TransferInput{Amt: lo.Amount(), Input: secp256k1fx.Input{SigIndices: []uint32{0}}}}})
	utils.Sort(s.Ins)
	tx := r.sign(&txs.AddValidatorTx{BaseTx: r.base(s, lockOut(lo.Amount()-stake)),
		Validator: txs.Validator{NodeID: node, Start: uint64(start.Unix()), End: uint64(end.Unix()), Wght: stake},
		StakeOuts: []*avax.TransferableOutput{lockOut(stake)}, RewardsOwner: pvmoracle.Owner(kVal), DelegationShares: 20_000}, s.Signers()...)
	r.step(name, r.c.BanffStandard(tx))
	r.d.stakers = append(r.d.stakers, tx.ID())
	return tx.ID()
}

// advance moves the chain time to at: an AdvanceTimeTx before Banff, a
// standard block's timestamp after (which must change the staker set).
func (r *legacyRun) advance(name string, at time.Duration, commit bool) {
	r.t.Helper()
	if r.c.O.Upgrades.IsBanffActivated(genesisTime.Add(at)) {
		r.c.Time = genesisTime.Add(at)
		r.step(name, r.c.BanffStandard())
		return
	}
	tx := r.sign(&txs.AdvanceTimeTx{Time: uint64(genesisTime.Add(at).Unix())})
	r.c.Time = genesisTime.Add(at)
	r.step(name, r.c.ApricotPropose(tx, commit))
}

// reward proposes the RewardValidatorTx of staker at its end time.
func (r *legacyRun) reward(name string, staker ids.ID, end time.Duration, commit bool) {
	r.t.Helper()
	tx := r.sign(&txs.RewardValidatorTx{TxID: staker})
	if r.c.O.Upgrades.IsBanffActivated(genesisTime.Add(end)) {
		r.c.Time = genesisTime.Add(end)
		r.step(name, r.c.BanffPropose(tx, commit))
		return
	}
	r.step(name, r.c.ApricotPropose(tx, commit))
}

// TestLegacyPChainAgainstPlatformVM builds a P-chain that crosses Apricot
// Phase 5, Banff, Cortina, Durango and Etna with avalanchego's own block and
// tx constructors, has avalanchego's platformvm verify and accept every
// block, and after every block compares what the VM's service answers with
// what Permafrost, fed the same blocks by that VM's node, answers on its
// platform RPC and data service, on both backends (differ.compare lists what).
func TestLegacyPChainAgainstPlatformVM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs avalanchego's platformvm")
	}
	o := pvmoracle.New(t, legacyGenesis(), legacyUpgrades())
	c := &pvmoracle.Chain{O: o, Time: genesisTime}
	d := newDiffer(t, o, legacy)
	c.AVAX = d.g.AvaxAssetID
	r := &legacyRun{t: t, c: c, d: d}
	for _, b := range storetest.Backends {
		r.pf = append(r.pf, newPermafrost(t, b, o, func() time.Time { return c.Time }))
	}
	at := func(x time.Duration) time.Time { return genesisTime.Add(x) }
	xID := o.Network.XChainID
	r.step("genesis", nil)

	// Apricot, before Phase 5: an import in an ApricotAtomicBlock, a subnet
	// in an ApricotStandardBlock, stakers as proposals.
	itx := r.importTx(c.AVAX, 100*units.Avax, "import-1")
	r.step("apricot atomic import", c.ApricotAtomic(itx))

	s := r.fund(0, units.MilliAvax)
	subnet := r.sign(&txs.CreateSubnetTx{BaseTx: r.base(s), Owner: pvmoracle.Owner(kFund)}, s.Signers()...)
	r.step("apricot standard subnet", c.ApricotStandard(subnet))
	d.subnets = append(d.subnets, subnet.ID())
	s = r.fund(0, units.MilliAvax)
	chain := r.sign(&txs.CreateChainTx{BaseTx: r.base(s), SubnetID: subnet.ID(), ChainName: "legacy",
		VMID: ids.ID(hashing.ComputeHash256Array([]byte("legacy vm"))), GenesisData: []byte("{}"),
		SubnetAuth: &secp256k1fx.Input{SigIndices: []uint32{0}}}, append(s.Signers(), []*secp256k1.PrivateKey{kFund})...)
	r.step("apricot CreateChainTx", c.ApricotStandard(chain))

	nodeA, nodeB := ids.BuildTestNodeID([]byte("A")), ids.BuildTestNodeID([]byte("B"))
	v1 := r.validator("V1 AddValidatorTx committed", nodeA, at(hour), at(3*day+hour), 20_000, true, true)
	d1 := r.delegator("D1 AddDelegatorTx committed", nodeA, at(2*hour), at(day+2*hour), 100*units.Avax, true, true)
	r.delegator("D2 AddDelegatorTx aborted", nodeA, at(2*hour), at(day+3*hour), 50*units.Avax, true, false)
	v2 := r.validator("V2 AddValidatorTx committed", nodeB, at(hour), at(day+hour), 100_000, true, true)

	s = r.fund(0, units.MilliAvax)
	sv := r.sign(&txs.AddSubnetValidatorTx{BaseTx: r.base(s),
		SubnetValidator: txs.SubnetValidator{Validator: txs.Validator{NodeID: nodeA, Start: uint64(at(3 * hour).Unix()), End: uint64(at(day + 3*hour).Unix()), Wght: 10},
			Subnet: subnet.ID()},
		SubnetAuth: &secp256k1fx.Input{SigIndices: []uint32{0}}}, append(s.Signers(), []*secp256k1.PrivateKey{kFund})...)
	r.step("AddSubnetValidatorTx committed", c.ApricotPropose(sv, true))

	r.advance("AdvanceTimeTx to V1/V2 start", hour, true)
	r.advance("AdvanceTimeTx aborted", 2*hour, false)
	r.advance("AdvanceTimeTx to D1 start", 2*hour, true)

	s = r.fund(50*units.Avax, units.MilliAvax)
	etx := r.sign(&txs.ExportTx{BaseTx: r.base(s), DestinationChain: xID, ExportedOutputs: []*avax.TransferableOutput{c.Out(kFund, 50*units.Avax)}}, s.Signers()...)
	r.step("apricot atomic export", c.ApricotAtomic(etx))

	r.advance("AdvanceTimeTx to the subnet validator's start", 3*hour, true)
	r.advance("AdvanceTimeTx to V2's end", day+hour, true)
	r.reward("V2 reward aborted", v2, day+hour, false)
	r.advance("AdvanceTimeTx to D1's end", day+2*hour, true)
	r.reward("D1 reward committed (delegatee cut paid at once)", d1, day+2*hour, true)
	r.advance("AdvanceTimeTx to the subnet validator's end", day+3*hour, true)

	// Apricot after Phase 5: atomic txs in an ApricotStandardBlock.
	r.advance("AdvanceTimeTx past Apricot Phase 5", 2*day+hour, true)
	itx2 := r.importTx(c.AVAX, 30*units.Avax, "import-2")
	s = r.fund(20*units.Avax, units.MilliAvax)
	etx2 := r.sign(&txs.ExportTx{BaseTx: r.base(s), DestinationChain: xID, ExportedOutputs: []*avax.TransferableOutput{c.Out(kFund, 20*units.Avax)}}, s.Signers()...)
	r.step("apricot standard import+export", c.ApricotStandard(itx2, etx2))
	r.advance("AdvanceTimeTx to V1's end", 3*day+hour, true)
	r.reward("V1 reward committed", v1, 3*day+hour, true)
	r.advance("AdvanceTimeTx before Banff", 5*day, true)

	// Banff: block timestamps; an elastic subnet (its asset imported, the
	// part of its maximum supply not yet minted burnt) with a permissionless
	// validator rewarded in that asset; permissionless primary stakers; an
	// AddValidatorTx now a standard tx, one staking a locked genesis output
	// (mainnet's genesis allocations were staked this way).
	c.Time = at(6*day + hour)
	asset := ids.ID(hashing.ComputeHash256Array([]byte("subnet asset")))
	r.step("banff import of the subnet asset", c.BanffStandard(r.importTx(asset, 2_000_000, "import-asset")))
	s = r.fundAsset(asset, 1_000_000)
	transform := r.sign(&txs.TransformSubnetTx{BaseTx: r.base(s), Subnet: subnet.ID(), AssetID: asset,
		InitialSupply: 1_000_000, MaximumSupply: 2_000_000, MinConsumptionRate: 100_000, MaxConsumptionRate: 120_000,
		MinValidatorStake: 1, MaxValidatorStake: 1_000_000, MinStakeDuration: 1, MaxStakeDuration: uint32((365 * day).Seconds()),
		MinDelegationFee: 0, MinDelegatorStake: 1, MaxValidatorWeightFactor: 5, UptimeRequirement: 800_000,
		SubnetAuth: &secp256k1fx.Input{SigIndices: []uint32{0}}}, append(s.Signers(), []*secp256k1.PrivateKey{kFund})...)
	r.step("banff TransformSubnetTx", c.BanffStandard(transform))
	nodeC, nodeD, nodeL := ids.BuildTestNodeID([]byte("C")), ids.BuildTestNodeID([]byte("D")), ids.BuildTestNodeID([]byte("L"))
	v3 := r.validator("V3 AddPermissionlessValidatorTx", nodeC, at(6*day+2*hour), at(8*day+2*hour), 30_000, false, true)
	d3 := r.delegator("D3 AddPermissionlessDelegatorTx", nodeC, at(6*day+3*hour), at(7*day+3*hour), 100*units.Avax, false, true)
	v4 := r.validator("V4 AddValidatorTx in a Banff standard block", nodeD, at(6*day+4*hour), at(13*day+4*hour), 40_000, true, true)
	vl := r.lockedValidator("VL stakes a locked output", nodeL, at(6*day+5*hour), at(7*day+5*hour))
	s = r.fundAsset(asset, 500_000)
	esv := r.sign(&txs.AddPermissionlessValidatorTx{BaseTx: r.base(s),
		Validator: txs.Validator{NodeID: nodeC, Start: uint64(at(6*day + 3*hour).Unix()), End: uint64(at(7*day + 2*hour).Unix()), Wght: 500_000},
		Subnet:    subnet.ID(), Signer: &signer.Empty{},
		StakeOuts:             []*avax.TransferableOutput{{Asset: avax.Asset{ID: asset}, Out: &secp256k1fx.TransferOutput{Amt: 500_000, OutputOwners: *pvmoracle.Owner(kFund)}}},
		ValidatorRewardsOwner: pvmoracle.Owner(kVal), DelegatorRewardsOwner: pvmoracle.Owner(kVal), DelegationShares: 10_000}, s.Signers()...)
	r.step("elastic subnet validator", c.BanffStandard(esv))
	d.stakers = append(d.stakers, esv.ID())
	r.advance("V3 starts", 6*day+2*hour, true)
	r.advance("D3 and the elastic subnet validator start", 6*day+3*hour, true)
	r.advance("V4 starts", 6*day+4*hour, true)
	r.advance("VL starts", 6*day+5*hour, true)
	r.reward("elastic subnet validator reward committed", esv.ID(), 7*day+2*hour, true)
	r.reward("D3 reward committed (before Cortina: cut paid at once)", d3, 7*day+3*hour, true)
	r.reward("VL reward committed (stake returns locked)", vl, 7*day+5*hour, true)
	r.reward("V3 reward committed", v3, 8*day+2*hour, true)

	// Cortina: the delegatee's cut accrues for validators that started after
	// it (and is still paid at once for V4, which started before); an
	// aborted validator reward still pays the accrued cut.
	c.Time = at(12*day + hour)
	nodeE, nodeH := ids.BuildTestNodeID([]byte("E")), ids.BuildTestNodeID([]byte("H"))
	d4 := r.delegator("D4 to V4 (started before Cortina)", nodeD, at(12*day+2*hour), at(13*day+2*hour), 100*units.Avax, false, true)
	v5 := r.validator("V5 after Cortina", nodeE, at(12*day+2*hour), at(14*day+2*hour), 50_000, false, true)
	d5 := r.delegator("D5 to V5", nodeE, at(12*day+3*hour), at(13*day+3*hour), 200*units.Avax, false, true)
	v7 := r.validator("V7 after Cortina", nodeH, at(12*day+2*hour), at(14*day+3*hour), 80_000, false, true)
	d7 := r.delegator("D7 to V7", nodeH, at(12*day+3*hour), at(13*day+5*hour), 300*units.Avax, false, true)
	r.advance("D4, V5 and V7 start", 12*day+2*hour, true)
	r.advance("D5 and D7 start", 12*day+3*hour, true)
	r.reward("D4 reward committed (cut paid at once)", d4, 13*day+2*hour, true)
	r.reward("D5 reward committed (cut accrues)", d5, 13*day+3*hour, true)
	r.reward("V4 reward committed", v4, 13*day+4*hour, true)
	r.reward("D7 reward committed (cut accrues)", d7, 13*day+5*hour, true)
	r.reward("V5 reward committed (with the accrued cut)", v5, 14*day+2*hour, true)
	r.reward("V7 reward aborted (the accrued cut is paid)", v7, 14*day+3*hour, false)

	// Durango: stakers start when accepted.
	c.Time = at(18*day + hour)
	nodeF := ids.BuildTestNodeID([]byte("F"))
	v6 := r.validator("V6 after Durango", nodeF, at(18*day+hour), at(19*day+2*hour), 20_000, false, true)
	d6 := r.delegator("D6 after Durango", nodeF, at(18*day+hour), at(19*day+hour), 100*units.Avax, false, true)
	// A permissioned subnet's validator removed by its owner, then the
	// subnet's ownership transferred.
	s = r.fund(0, units.MilliAvax)
	subnet2 := r.sign(&txs.CreateSubnetTx{BaseTx: r.base(s), Owner: pvmoracle.Owner(kFund)}, s.Signers()...)
	r.step("durango subnet", c.BanffStandard(subnet2))
	d.subnets = append(d.subnets, subnet2.ID())
	subnetAuth := &secp256k1fx.Input{SigIndices: []uint32{0}}
	s = r.fund(0, units.MilliAvax)
	r.step("durango AddSubnetValidatorTx", c.BanffStandard(r.sign(&txs.AddSubnetValidatorTx{BaseTx: r.base(s),
		SubnetValidator: txs.SubnetValidator{Validator: txs.Validator{NodeID: nodeF, End: uint64(at(19*day + 2*hour).Unix()), Wght: 5}, Subnet: subnet2.ID()},
		SubnetAuth:      subnetAuth}, append(s.Signers(), []*secp256k1.PrivateKey{kFund})...)))
	s = r.fund(0, units.MilliAvax)
	r.step("RemoveSubnetValidatorTx", c.BanffStandard(r.sign(&txs.RemoveSubnetValidatorTx{BaseTx: r.base(s), NodeID: nodeF,
		Subnet: subnet2.ID(), SubnetAuth: subnetAuth}, append(s.Signers(), []*secp256k1.PrivateKey{kFund})...)))
	s = r.fund(0, units.MilliAvax)
	r.step("TransferSubnetOwnershipTx", c.BanffStandard(r.sign(&txs.TransferSubnetOwnershipTx{BaseTx: r.base(s), Subnet: subnet2.ID(),
		SubnetAuth: subnetAuth, Owner: pvmoracle.Owner(kDel)}, append(s.Signers(), []*secp256k1.PrivateKey{kFund})...)))
	r.reward("D6 reward committed", d6, 19*day+hour, true)
	r.reward("V6 reward aborted", v6, 19*day+2*hour, false)

	// Etna: dynamic fees.
	c.Time = at(24*day + hour)
	s = r.fund(units.Avax, units.Avax/10)
	r.step("etna BaseTx", c.BanffStandard(r.sign(&txs.BaseTx{BaseTx: avax.BaseTx{NetworkID: 1337, BlockchainID: constants.PlatformChainID,
		Ins: s.Ins, Outs: sortedOuts(append(s.Change, c.Out(kDel, units.Avax)))}}, s.Signers()...)))
	d.report(t)
}

func sortedOuts(outs []*avax.TransferableOutput) []*avax.TransferableOutput {
	avax.SortTransferableOutputs(outs, txs.Codec)
	return outs
}
