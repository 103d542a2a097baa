package livenet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/bls/signer/localsigner"
	"github.com/ava-labs/avalanchego/utils/units"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/platformvm"
	"github.com/ava-labs/avalanchego/vms/platformvm/reward"
	"github.com/ava-labs/avalanchego/vms/platformvm/signer"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/message"

	walletcommon "github.com/ava-labs/avalanchego/wallet/subnet/primary/common"
)

// OfflineValidator is a deterministic node identity that never runs: a
// node ID and a BLS key, for stakers and L1 validators without a node.
type OfflineValidator struct {
	Name   string
	NodeID ids.NodeID
	Signer *localsigner.LocalSigner
	PoP    *signer.ProofOfPossession
}

// NewOfflineValidator derives a validator identity from a name.
func NewOfflineValidator(name string) (*OfflineValidator, error) {
	seed := sha256.Sum256([]byte("permafrost-livenet/bls/" + name))
	seed[0] &= 0x3f // below the BLS12-381 group order
	sk, err := localsigner.FromBytes(seed[:])
	if err != nil {
		return nil, err
	}
	pop, err := signer.NewProofOfPossession(sk)
	if err != nil {
		return nil, err
	}
	idSeed := sha256.Sum256([]byte("permafrost-livenet/node/" + name))
	var short ids.ShortID
	copy(short[:], idSeed[:])
	return &OfflineValidator{Name: name, NodeID: ids.NodeID(short), Signer: sk, PoP: pop}, nil
}

// pStaking: a P-chain BaseTx, primary-network stakers (validator and
// delegator on the running L1 node, expected to be rewarded; validator and
// delegator on an offline node, expected not to be), and a permissioned
// subnet's lifecycle (CreateSubnetTx, CreateChainTx, AddSubnetValidatorTx x2
// (one expiring by time), RemoveSubnetValidatorTx, TransferSubnetOwnershipTx).
func (w *workload) pStaking(ctx context.Context) error {
	frank := w.key("frank")
	fw, err := newWallet(ctx, w.n.URI(), frank)
	if err != nil {
		return err
	}
	p := fw.P()
	ctxOpt := walletcommon.WithContext(ctx)
	avaxID := w.n.AVAXAssetID
	pAddrs := func(names ...string) []string { return w.addrs("P", names...) }

	if _, err := w.issue(ChainP, "p01-base-frank-carol", "BaseTx", "10 AVAX frank->carol on P", pAddrs("frank", "carol"), nil, func() (ids.ID, error) {
		tx, err := p.IssueBaseTx([]*avax.TransferableOutput{out(avaxID, 10*units.Avax, w.owners(1, "carol"))}, ctxOpt)
		return txID(tx, err)
	}); err != nil {
		return err
	}

	beta, err := NewOfflineValidator("beta")
	if err != nil {
		return err
	}
	l1Node := w.n.L1Node
	l1PoP, err := l1Node.GetProofOfPossession()
	if err != nil {
		return err
	}
	t0 := time.Now()
	d := w.cfg.StakeDuration
	shares := uint32(2 * reward.PercentDenominator / 100) // the minimum delegation fee, 2 %
	addStaker := func(st *Staker, step, purpose string, pop *signer.ProofOfPossession) error {
		st.Type = "AddPermissionlessDelegatorTx"
		if pop != nil {
			st.Type = "AddPermissionlessValidatorTx"
		}
		vdr := &txs.SubnetValidator{
			Validator: txs.Validator{NodeID: st.NodeID, End: uint64(st.End.Unix()), Wght: st.Weight},
			Subnet:    constants.PrimaryNetworkID,
		}
		id, err := w.issue(ChainP, step, st.Type, purpose, pAddrs("frank"),
			map[string]any{"nodeID": st.NodeID.String(), "endTime": st.End.Unix(), "weight": st.Weight, "expectReward": st.Running},
			func() (ids.ID, error) {
				if pop != nil {
					tx, err := p.IssueAddPermissionlessValidatorTx(vdr, pop, avaxID, w.owners(1, "frank"), w.owners(1, "frank"), shares, ctxOpt)
					return txID(tx, err)
				}
				tx, err := p.IssueAddPermissionlessDelegatorTx(vdr, avaxID, w.owners(1, "frank"), ctxOpt)
				return txID(tx, err)
			})
		if err != nil {
			return err
		}
		st.TxID = id
		w.mu.Lock()
		w.res.Stakers = append(w.res.Stakers, st)
		w.mu.Unlock()
		return nil
	}
	if err := addStaker(&Staker{Name: "l1node-validator", NodeID: l1Node.NodeID, End: t0.Add(d), Weight: 2000 * units.Avax, Running: true},
		"p02-add-validator-running", fmt.Sprintf("primary validator on the running L1 node, 2000 AVAX for %s (expect a reward)", d), l1PoP); err != nil {
		return err
	}
	if err := addStaker(&Staker{Name: "l1node-delegator", NodeID: l1Node.NodeID, End: t0.Add(d * 3 / 4), Weight: 500 * units.Avax, Running: true},
		"p03-add-delegator-running", "delegation of 500 AVAX to the running L1 node (expect a reward)", nil); err != nil {
		return err
	}
	if err := addStaker(&Staker{Name: "beta-validator", NodeID: beta.NodeID, End: t0.Add(d * 9 / 10), Weight: 2000 * units.Avax},
		"p04-add-validator-offline", "primary validator on node beta, which never runs (expect no reward)", beta.PoP); err != nil {
		return err
	}
	if err := addStaker(&Staker{Name: "beta-delegator", NodeID: beta.NodeID, End: t0.Add(d * 2 / 3), Weight: 300 * units.Avax},
		"p05-add-delegator-offline", "delegation of 300 AVAX to the offline node beta (expect no reward)", nil); err != nil {
		return err
	}

	// A permissioned subnet, never converted.
	subnetA, err := w.issue(ChainP, "p06-create-subnet-a", "CreateSubnetTx", "permissioned subnet A owned by frank", pAddrs("frank"), nil, func() (ids.ID, error) {
		tx, err := p.IssueCreateSubnetTx(w.owners(1, "frank"), ctxOpt)
		return txID(tx, err)
	})
	if err != nil {
		return err
	}
	genesisA, err := SubnetEVMGenesis(big.NewInt(int64(w.n.NetworkID)+2), w.key("trent"), nil)
	if err != nil {
		return err
	}
	chainA, err := w.issue(ChainP, "p07-create-chain-a", "CreateChainTx", "subnet-evm chain on subnet A (no node tracks it: it never runs)", pAddrs("frank"),
		map[string]any{"subnetID": subnetA.String(), "vmID": constants.SubnetEVMID.String(), "chainName": "permafrostA"}, func() (ids.ID, error) {
			tx, err := p.IssueCreateChainTx(subnetA, genesisA, constants.SubnetEVMID, nil, "permafrostA", ctxOpt)
			return txID(tx, err)
		})
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.res.Subnets["A"], w.res.Chains["A"] = subnetA, chainA
	w.mu.Unlock()

	v0, v1 := w.n.Validators[0].NodeID, w.n.Validators[1].NodeID
	addSubnetVdr := func(step, purpose string, nodeID ids.NodeID, end time.Time, weight uint64) error {
		_, err := w.issue(ChainP, step, "AddSubnetValidatorTx", purpose, pAddrs("frank"),
			map[string]any{"subnetID": subnetA.String(), "nodeID": nodeID.String(), "endTime": end.Unix(), "weight": weight}, func() (ids.ID, error) {
				tx, err := p.IssueAddSubnetValidatorTx(&txs.SubnetValidator{
					Validator: txs.Validator{NodeID: nodeID, End: uint64(end.Unix()), Wght: weight},
					Subnet:    subnetA,
				}, ctxOpt)
				return txID(tx, err)
			})
		return err
	}
	if err := addSubnetVdr("p08-add-subnet-validator-0", "genesis validator 0 validates subnet A for an hour (removed below)", v0, time.Now().Add(time.Hour), 10); err != nil {
		return err
	}
	expiry := t0.Add(d / 2)
	if err := addSubnetVdr("p09-add-subnet-validator-1", "genesis validator 1 validates subnet A until it expires by time during the workload", v1, expiry, 20); err != nil {
		return err
	}
	if _, err := w.issue(ChainP, "p10-remove-subnet-validator", "RemoveSubnetValidatorTx", "remove genesis validator 0 from subnet A", pAddrs("frank"),
		map[string]any{"subnetID": subnetA.String(), "nodeID": v0.String()}, func() (ids.ID, error) {
			tx, err := p.IssueRemoveSubnetValidatorTx(v0, subnetA, ctxOpt)
			return txID(tx, err)
		}); err != nil {
		return err
	}
	if _, err := w.issue(ChainP, "p11-transfer-subnet-ownership", "TransferSubnetOwnershipTx", "subnet A now owned by 2-of-2 carol+dave", pAddrs("frank", "carol", "dave"),
		map[string]any{"subnetID": subnetA.String()}, func() (ids.ID, error) {
			tx, err := p.IssueTransferSubnetOwnershipTx(subnetA, w.owners(2, "carol", "dave"), ctxOpt)
			return txID(tx, err)
		}); err != nil {
		return err
	}
	return nil
}

// pL1: a second L1 whose validators are offline keys (their BLS keys sign
// Warp messages locally, standing for a validator manager), covering
// CreateSubnetTx, CreateChainTx, ConvertSubnetToL1Tx, RegisterL1ValidatorTx,
// IncreaseL1ValidatorBalanceTx (also on the running L1's validator),
// SetL1ValidatorWeightTx (change, then 0 = removal) and DisableL1ValidatorTx.
func (w *workload) pL1(ctx context.Context) error {
	grace := w.key("grace")
	gw, err := newWallet(ctx, w.n.URI(), grace)
	if err != nil {
		return err
	}
	// Topping up the main L1's validator needs no owner: any wallet may pay.
	p := gw.P()
	ctxOpt := walletcommon.WithContext(ctx)
	pAddrs := w.addrs("P", "grace")

	subnetB, err := w.issue(ChainP, "l01-create-subnet-b", "CreateSubnetTx", "subnet B owned by grace (to be converted to an L1)", pAddrs, nil, func() (ids.ID, error) {
		tx, err := p.IssueCreateSubnetTx(w.owners(1, "grace"), ctxOpt)
		return txID(tx, err)
	})
	if err != nil {
		return err
	}
	genesisB, err := SubnetEVMGenesis(big.NewInt(int64(w.n.NetworkID)+3), w.key("trent"), nil)
	if err != nil {
		return err
	}
	chainB, err := w.issue(ChainP, "l02-create-chain-b", "CreateChainTx", "subnet-evm chain on subnet B: the L1's manager chain (never runs)", pAddrs,
		map[string]any{"subnetID": subnetB.String(), "vmID": constants.SubnetEVMID.String(), "chainName": "permafrostB"}, func() (ids.ID, error) {
			tx, err := p.IssueCreateChainTx(subnetB, genesisB, constants.SubnetEVMID, nil, "permafrostB", ctxOpt)
			return txID(tx, err)
		})
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.res.Subnets["B"], w.res.Chains["B"] = subnetB, chainB
	w.mu.Unlock()

	var vals []*OfflineValidator
	for _, name := range []string{"l1b-v1", "l1b-v2", "l1b-v3"} {
		v, err := NewOfflineValidator(name)
		if err != nil {
			return err
		}
		vals = append(vals, v)
	}
	ownerP := message.PChainOwner{Threshold: 1, Addresses: []ids.ShortID{grace.ShortID()}}
	const initialWeight = 1_000_000
	initial := []*txs.ConvertSubnetToL1Validator{}
	for _, v := range vals[:2] {
		initial = append(initial, &txs.ConvertSubnetToL1Validator{
			NodeID: v.NodeID.Bytes(), Weight: initialWeight, Balance: units.Avax, Signer: *v.PoP,
			RemainingBalanceOwner: ownerP, DeactivationOwner: ownerP,
		})
	}
	// Validation IDs are subnetID.Append(index) in the tx's (node ID) order.
	slices.SortFunc(initial, func(a, b *txs.ConvertSubnetToL1Validator) int { return bytes.Compare(a.NodeID, b.NodeID) })
	infos := map[ids.NodeID]*L1ValidatorInfo{}
	var validationIDs []string
	for i, v := range initial {
		nodeID, _ := ids.ToNodeID(v.NodeID)
		info := &L1ValidatorInfo{NodeID: nodeID, ValidationID: subnetB.Append(uint32(i)), Weight: initialWeight}
		for _, ov := range vals {
			if ov.NodeID == nodeID {
				info.Name, info.Signer = ov.Name, WarpSigner{Signer: ov.Signer, Weight: initialWeight}
			}
		}
		infos[nodeID] = info
		validationIDs = append(validationIDs, info.ValidationID.String())
	}
	manager := WarpAddr.Bytes()
	if _, err := w.issue(ChainP, "l03-convert-subnet-b", "ConvertSubnetToL1Tx", "convert subnet B: 2 offline L1 validators, weight 1e6 and 1 AVAX each", pAddrs,
		map[string]any{"subnetID": subnetB.String(), "chainID": chainB.String(), "managerAddress": WarpAddr.Hex(), "validationIDs": validationIDs}, func() (ids.ID, error) {
			tx, err := p.IssueConvertSubnetToL1Tx(subnetB, chainB, manager, initial, ctxOpt)
			return txID(tx, err)
		}); err != nil {
		return err
	}
	v1, v2 := infos[vals[0].NodeID], infos[vals[1].NodeID]
	w.mu.Lock()
	w.res.L1Validators = append(w.res.L1Validators, v1, v2)
	w.mu.Unlock()

	// The P-chain verifies Warp messages against the validator set at the
	// proposervm epoch's P-chain height: let an epoch pass (5 s) and cut a
	// block, as avalanchego's L1 e2e test does, before signing with the new set.
	step := 0
	advanceEpoch := func(after string) error {
		step++
		time.Sleep(6 * time.Second)
		_, err := w.issue(ChainP, fmt.Sprintf("l%02d-advance-epoch-%d", 3+step, step), "BaseTx", "epoch-advancing dummy transfer grace->carol 0.001 AVAX (after "+after+")",
			append(pAddrs, w.addrs("P", "carol")...), nil, func() (ids.ID, error) {
				tx, err := p.IssueBaseTx([]*avax.TransferableOutput{out(w.n.AVAXAssetID, units.MilliAvax, w.owners(1, "carol"))}, ctxOpt)
				return txID(tx, err)
			})
		return err
	}
	if err := advanceEpoch("ConvertSubnetToL1Tx"); err != nil {
		return err
	}

	const registerWeight = 150_000
	reg, err := message.NewRegisterL1Validator(subnetB, vals[2].NodeID, vals[2].PoP.PublicKey, uint64(time.Now().Add(5*time.Minute).Unix()), ownerP, ownerP, registerWeight)
	if err != nil {
		return err
	}
	regMsg, err := SignWarp(w.n.NetworkID, chainB, manager, reg.Bytes(), []WarpSigner{v1.Signer, v2.Signer})
	if err != nil {
		return err
	}
	v3 := &L1ValidatorInfo{Name: vals[2].Name, NodeID: vals[2].NodeID, ValidationID: reg.ValidationID(), Weight: registerWeight, Signer: WarpSigner{Signer: vals[2].Signer, Weight: registerWeight}}
	if _, err := w.issue(ChainP, "l05-register-l1-validator", "RegisterL1ValidatorTx", "register a third (offline) L1 validator on B, weight 150000, balance 1 AVAX; Warp message signed by B's two validators", pAddrs,
		map[string]any{"subnetID": subnetB.String(), "nodeID": v3.NodeID.String(), "validationID": v3.ValidationID.String(), "weight": registerWeight}, func() (ids.ID, error) {
			tx, err := p.IssueRegisterL1ValidatorTx(units.Avax, vals[2].PoP.ProofOfPossession, regMsg, ctxOpt)
			return txID(tx, err)
		}); err != nil {
		return err
	}
	w.mu.Lock()
	w.res.L1Validators = append(w.res.L1Validators, v3)
	w.mu.Unlock()

	if _, err := w.issue(ChainP, "l06-increase-balance-b", "IncreaseL1ValidatorBalanceTx", "add 0.5 AVAX to an initial validator of B", pAddrs,
		map[string]any{"validationID": v1.ValidationID.String()}, func() (ids.ID, error) {
			tx, err := p.IssueIncreaseL1ValidatorBalanceTx(v1.ValidationID, units.Avax/2, ctxOpt)
			return txID(tx, err)
		}); err != nil {
		return err
	}
	mainVID := w.n.L1.ValidationIDs[0]
	if _, err := w.issue(ChainP, "l07-increase-balance-main", "IncreaseL1ValidatorBalanceTx", "add 1 AVAX to the running main L1 validator's balance", pAddrs,
		map[string]any{"validationID": mainVID.String()}, func() (ids.ID, error) {
			tx, err := p.IssueIncreaseL1ValidatorBalanceTx(mainVID, units.Avax, ctxOpt)
			return txID(tx, err)
		}); err != nil {
		return err
	}
	if err := advanceEpoch("RegisterL1ValidatorTx"); err != nil {
		return err
	}
	all := []WarpSigner{v1.Signer, v2.Signer, v3.Signer}
	for nonce, weight := range []uint64{200_000, 0} {
		msg, err := message.NewL1ValidatorWeight(v3.ValidationID, uint64(nonce), weight)
		if err != nil {
			return err
		}
		signed, err := SignWarp(w.n.NetworkID, chainB, manager, msg.Bytes(), all)
		if err != nil {
			return err
		}
		purpose := "set the registered validator's weight to 200000 (nonce 0)"
		if weight == 0 {
			purpose = "set the registered validator's weight to 0 (nonce 1): removes it, its balance goes back to grace"
		}
		if _, err := w.issue(ChainP, fmt.Sprintf("l%02d-set-l1-validator-weight-%d", 9+nonce, nonce), "SetL1ValidatorWeightTx", purpose, pAddrs,
			map[string]any{"validationID": v3.ValidationID.String(), "nonce": nonce, "weight": weight}, func() (ids.ID, error) {
				tx, err := p.IssueSetL1ValidatorWeightTx(signed, ctxOpt)
				return txID(tx, err)
			}); err != nil {
			return err
		}
		v3.Weight = weight
	}
	if _, err := w.issue(ChainP, "l11-disable-l1-validator", "DisableL1ValidatorTx", "grace (deactivation owner) disables an initial validator of B; its remaining balance returns to grace", pAddrs,
		map[string]any{"validationID": v2.ValidationID.String()}, func() (ids.ID, error) {
			tx, err := p.IssueDisableL1ValidatorTx(v2.ValidationID, ctxOpt)
			return txID(tx, err)
		}); err != nil {
		return err
	}
	return nil
}

// waitStakersGone waits until every staker the workload added left the
// current validator set (the P-chain issued its RewardValidatorTx).
func (w *workload) waitStakersGone(ctx context.Context) error {
	pc := platformvm.NewClient(w.n.URI())
	var last time.Time
	for _, s := range w.res.Stakers {
		if s.End.After(last) {
			last = s.End
		}
	}
	w.logf("livenet: waiting for %d stakers to end (last at %s, in %s)", len(w.res.Stakers), last.Format(time.TimeOnly), time.Until(last).Round(time.Second))
	deadline := last.Add(2 * time.Minute)
	// Delegators are listed only for the node IDs asked about.
	var nodeIDs []ids.NodeID
	for _, s := range w.res.Stakers {
		if !slices.Contains(nodeIDs, s.NodeID) {
			nodeIDs = append(nodeIDs, s.NodeID)
		}
	}
	for {
		vdrs, err := pc.GetCurrentValidators(ctx, constants.PrimaryNetworkID, nodeIDs)
		if err != nil {
			return err
		}
		current := map[ids.ID]bool{}
		for _, v := range vdrs {
			current[v.TxID] = true
			for _, d := range v.Delegators {
				current[d.TxID] = true
			}
		}
		left := 0
		for _, s := range w.res.Stakers {
			if current[s.TxID] {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d stakers still current 2 min after the last end time", left)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
