package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/platformvm"
	"github.com/ava-labs/avalanchego/vms/platformvm/status"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	platformapi "github.com/ava-labs/avalanchego/vms/platformvm/api"

	"github.com/permafrost-dev/permafrost/internal/decode/pchain"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

const tipHeight = 41

// TestHistory: the state the methods read is a function of the height, and
// as of past heights it equals what the chain had then.
func TestHistory(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			e := setup(t, backend, setupOpts{})
			t.Run("validator sets", e.validatorSets)
			t.Run("supply", e.supplyHistory)
			t.Run("delegatee rewards", e.delegateeRewards)
			t.Run("balances", e.balanceHistory)
			t.Run("blockchains", e.chainHistory)
		})
	}
}

// weights sums getCurrentValidators as of h into a validator set: per node
// its validator and delegator weights; for an L1 the active validators.
func (e *env) weights(t *testing.T, subnet ids.ID, h uint64) map[string]uint64 {
	t.Helper()
	ctx := context.Background()
	vdrs, err := e.svc.validatorsAt(ctx, subnet, nil, h, nil)
	if err != nil {
		t.Fatalf("validators of %s at %d: %v", subnet, h, err)
	}
	out := map[string]uint64{}
	for _, v := range vdrs {
		switch v := v.(type) {
		case platformapi.PermissionlessValidator:
			out[v.NodeID.String()] += uint64(v.Weight) + uint64(*v.DelegatorWeight)
		case platformapi.Staker:
			out[v.NodeID.String()] += uint64(v.Weight)
		case platformapi.APIL1Validator:
			if *v.Balance > 0 {
				out[v.NodeID.String()] += uint64(v.Weight)
			}
		default:
			t.Fatalf("validator of type %T", v)
		}
	}
	return out
}

// validatorSets: at every height and for every subnet, the current
// validators (validator plus delegators per node) are the validator set the
// indexer recorded (pchain.ValidatorSetAt, checked there against the
// node), and the recorded getValidatorsAt answers.
func (e *env) validatorSets(t *testing.T) {
	ctx := context.Background()
	n := devnet.LoadNetwork(t)
	subnets := []ids.ID{constants.PrimaryNetworkID}
	for _, s := range n.Subnets {
		id, err := ids.FromString(s.SubnetID)
		if err != nil {
			t.Fatal(err)
		}
		subnets = append(subnets, id)
	}
	checked := 0
	for h := uint64(0); h <= tipHeight; h++ {
		sh, err := e.svc.stateAt(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, subnet := range subnets {
			set, err := pchain.ValidatorSetAt(ctx, e.te.DB, subnet, h)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]uint64{}
			for _, v := range set {
				if v.NodeID != ids.EmptyNodeID { // inactive L1 validators, summed
					want[v.NodeID.String()] = v.Weight
				}
			}
			if got := e.weights(t, subnet, sh); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s at %d: %v, want %v", subnet, h, got, want)
			}
			checked++
		}
	}
	// The recorded answers of the node for past heights.
	recorded := 0
	for _, x := range pCalls(t) {
		if x.Method != "platform.getValidatorsAt" {
			continue
		}
		var p platformvm.GetValidatorsAtArgs
		if err := json.Unmarshal(x.Params, &p); err != nil || p.Height.IsProposed() {
			continue
		}
		var res map[string]struct {
			Weight string `json:"weight"`
		}
		mustResult(t, x.Response, &res)
		want := map[string]uint64{}
		for node, v := range res {
			if node != ids.EmptyNodeID.String() {
				want[node] = mustUint(t, v.Weight)
			}
		}
		h := uint64(p.Height)
		sh, err := e.svc.stateAt(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.weights(t, p.SubnetID, sh); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("recorded getValidatorsAt %s: ours %v, node %v", x.Params, got, want)
		}
		recorded++
	}
	if checked != 42*3 || recorded < 20 {
		t.Errorf("checked %d sets and %d recorded answers", checked, recorded)
	}
}

func mustUint(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := parseUint(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// supplyHistory: the supply replayed from the genesis supply and the
// stakers' potential rewards equals the indexer's per-height supply at every
// height (the derivation elastic subnets use).
func (e *env) supplyHistory(t *testing.T) {
	ctx := context.Background()
	g := e.te.Chains.Genesis.P
	for h := uint64(0); h <= tipHeight; h++ {
		sh, err := e.svc.stateAt(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		want, err := e.svc.supplyAt(ctx, constants.PrimaryNetworkID, sh)
		if err != nil {
			t.Fatal(err)
		}
		st, err := pchain.StateAt(ctx, e.te.DB, sh)
		if err != nil || st.CurrentSupply != want {
			t.Errorf("supply at %d: %d, StateAt %d (%v)", h, want, st.CurrentSupply, err)
		}
		got, err := e.svc.mintedSupply(ctx, constants.PrimaryNetworkID, g.InitialSupply, sh)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("replayed supply at %d = %d, want %d", h, got, want)
		}
	}
	if want := uint64(210582228871568098); mustSupplyAt(t, e, tipHeight) != want {
		t.Errorf("tip supply %d, want %d", mustSupplyAt(t, e, tipHeight), want)
	}
}

func mustSupplyAt(t *testing.T, e *env, h uint64) uint64 {
	t.Helper()
	v, err := e.svc.supplyAt(context.Background(), constants.PrimaryNetworkID, h)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// delegateeRewards: alpha's accrued delegation fee, from its delegator's
// reward (decided at height 31) until alpha leaves (37), equals the
// VALIDATOR_FEE reward UTXO alpha was finally paid (recorded by
// getRewardUTXOs), and appears in getCurrentValidators as of those heights.
func (e *env) delegateeRewards(t *testing.T) {
	ctx := context.Background()
	n := devnet.LoadNetwork(t)
	alpha := n.Stakers["alpha"]
	alphaTx, err := ids.FromString(alpha.ValidatorTxID)
	if err != nil {
		t.Fatal(err)
	}
	var fee uint64
	for _, x := range pCalls(t) {
		if x.Method != "platform.getRewardUTXOs" || !bytes.Contains(x.Params, []byte(alpha.ValidatorTxID)) {
			continue
		}
		var res struct {
			UTXOs []string `json:"utxos"`
		}
		mustResult(t, x.Response, &res)
		// The fee UTXO is the one below alpha's own (potential) reward.
		var amounts []uint64
		for _, h := range res.UTXOs {
			amounts = append(amounts, utxoAmount(t, h))
		}
		sort.Slice(amounts, func(i, j int) bool { return amounts[i] < amounts[j] })
		if len(amounts) != 2 {
			t.Fatalf("alpha reward utxos %v", amounts)
		}
		fee = amounts[0]
	}
	if fee == 0 {
		t.Fatal("alpha's delegation fee not recorded")
	}
	for h := uint64(28); h <= tipHeight; h++ {
		sh, err := e.svc.stateAt(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.svc.delegateeRewardsAt(ctx, constants.PrimaryNetworkID, sh)
		if err != nil {
			t.Fatal(err)
		}
		var want uint64
		if sh >= 31 && sh < 37 {
			want = fee
		}
		if got[alphaTx] != want {
			t.Errorf("alpha's accrued fee at %d = %d, want %d", h, got[alphaTx], want)
		}
		node, _ := ids.NodeIDFromString(alpha.NodeID)
		vdrs, err := e.svc.validatorsAt(ctx, constants.PrimaryNetworkID, set.Of(node), sh, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sh >= 37 {
			if len(vdrs) != 0 {
				t.Errorf("alpha still a validator at %d", h)
			}
			continue
		}
		if len(vdrs) != 1 {
			t.Errorf("alpha at %d: %d entries", h, len(vdrs))
			continue
		}
		v := vdrs[0].(platformapi.PermissionlessValidator)
		if uint64(*v.AccruedDelegateeReward) != want || v.Delegators == nil {
			t.Errorf("alpha at %d: accrued %d, delegators %v", h, *v.AccruedDelegateeReward, v.Delegators)
			continue
		}
		// Its delegator until its reward, with its owner (a single-node query).
		ds := *v.Delegators
		if sh < 31 {
			if len(ds) != 1 || ds[0].TxID.String() != alpha.DelegatorTxID || ds[0].RewardOwner == nil ||
				len(ds[0].RewardOwner.Addresses) == 0 || uint64(*v.DelegatorCount) != 1 {
				t.Errorf("alpha's delegators at %d: %+v", h, ds)
			}
		} else if len(ds) != 0 || uint64(*v.DelegatorWeight) != 0 {
			t.Errorf("alpha's delegators at %d: %+v", h, ds)
		}
	}
	// At the tip, derived equals what the indexer keeps for the current set.
	rows, err := e.te.DB.QueryContext(ctx, `SELECT tx_id, accrued_delegatee_reward FROM p_stakers WHERE kind = 'VALIDATOR'
		AND current_height >= 0 AND removed_height = -1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got, err := e.svc.delegateeRewardsAt(ctx, constants.PrimaryNetworkID, tipHeight)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, acc string
		if err := rows.Scan(&id, &acc); err != nil {
			t.Fatal(err)
		}
		tx, _ := ids.FromString(id)
		if got[tx] != mustUint(t, acc) {
			t.Errorf("accrued of %s = %d, stored %s", id, got[tx], acc)
		}
	}
}

func utxoAmount(t *testing.T, hexUTXO string) uint64 {
	t.Helper()
	b, err := decodeHex(hexUTXO)
	if err != nil || len(b) < 4 {
		t.Fatalf("utxo %s: %v", hexUTXO, err)
	}
	u := parseUTXO(t, b[:len(b)-4])
	out, ok := u.Out.(*secp256k1fx.TransferOutput)
	if !ok {
		t.Fatalf("reward utxo is a %T", u.Out)
	}
	return out.Amt
}

// balanceHistory: at height 0 every address holds its genesis allocation;
// a stake output is outside the spendable set from its staker's add until
// the staker is rewarded (option block of network.json), then back in.
func (e *env) balanceHistory(t *testing.T) {
	ctx := context.Background()
	g := e.te.Chains.Genesis
	alloc := map[ids.ShortID]uint64{}
	for _, u := range g.P.UTXOs {
		out := u.UTXO.Out
		if lo, ok := out.(interface{ Addresses() [][]byte }); ok {
			addrs := lo.Addresses()
			if len(addrs) != 1 {
				continue
			}
			id, _ := ids.ToShortID(addrs[0])
			alloc[id] += u.UTXO.Out.(interface{ Amount() uint64 }).Amount()
		}
	}
	if len(alloc) < 4 {
		t.Fatalf("genesis allocations: %d", len(alloc))
	}
	for addr, want := range alloc {
		utxos, err := e.svc.utxosAt(ctx, set.Of(addr), 0)
		if err != nil {
			t.Fatal(err)
		}
		var got uint64
		for _, u := range utxos {
			got += u.utxo.Out.(interface{ Amount() uint64 }).Amount()
			if u.inserted != 0 {
				t.Errorf("genesis utxo inserted at %d", u.inserted)
			}
		}
		if got != want {
			t.Errorf("balance of %s at genesis = %d, want %d", addr, got, want)
		}
	}

	// alpha's stake output: added with its tx, back with its reward.
	n := devnet.LoadNetwork(t)
	for _, who := range []string{"alpha", "beta"} {
		stakerTx := n.Stakers[who].ValidatorTxID
		var back uint64
		for _, r := range n.RewardValidatorTxs {
			if r.StakerTxID == stakerTx {
				back = r.OutcomeBlockHeight
			}
		}
		var (
			utxoID, addrsJSON string
			added             int64
		)
		if err := e.te.DB.QueryRowContext(ctx, `SELECT u.utxo_id, u.addresses, u.created_height FROM utxos u
			WHERE u.tx_id = $1 AND u.staked = $2`, stakerTx, true).Scan(&utxoID, &addrsJSON, &added); err != nil {
			t.Fatalf("%s stake: %v", who, err)
		}
		var addrs []string
		if err := json.Unmarshal([]byte(addrsJSON), &addrs); err != nil || len(addrs) == 0 {
			t.Fatalf("%s stake owners %s: %v", who, addrsJSON, err)
		}
		owner, err := e.svc.addrs.ParseLocalAddress("P-" + addrs[0])
		if err != nil {
			t.Fatal(err)
		}
		for h := uint64(added) - 1; h <= tipHeight; h++ {
			sh, err := e.svc.stateAt(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			utxos, err := e.svc.utxosAt(ctx, set.Of(owner), sh)
			if err != nil {
				t.Fatal(err)
			}
			present := false
			for _, u := range utxos {
				if u.id.String() == utxoID {
					present = true
					if u.inserted != back {
						t.Errorf("%s stake inserted at %d, want %d", who, u.inserted, back)
					}
				}
			}
			if want := sh >= back; present != want {
				t.Errorf("%s stake at %d: spendable %v, want %v", who, h, present, want)
			}
		}
	}
}

// chainHistory: blockchains and their status as of past heights, including
// Preferred (created by the next block).
func (e *env) chainHistory(t *testing.T) {
	ctx := context.Background()
	n := devnet.LoadNetwork(t)
	createdAt := map[string]uint64{}
	for _, b := range n.PBlocks {
		for _, x := range b.Txs {
			createdAt[x.TxID] = b.Height
		}
	}
	for _, name := range []string{"A", "B"} {
		chain := n.Subnets[name].ChainID
		hc, ok := createdAt[chain]
		if !ok || hc < 2 {
			t.Fatalf("creation of chain %s: %d", name, hc)
		}
		for h, want := range map[uint64]status.BlockchainStatus{
			hc - 2: status.UnknownChain, hc - 1: status.Preferred, hc: status.Created, tipHeight: status.Created,
		} {
			got, err := e.svc.chainStatusAt(ctx, chain, h)
			if err != nil || got != want {
				t.Errorf("chain %s at %d: %s (%v), want %s", name, h, got, err, want)
			}
			list, err := e.svc.blockchainsAt(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			listed := false
			for _, c := range list {
				listed = listed || c.ID.String() == chain
			}
			if listed != (want == status.Created) {
				t.Errorf("blockchains at %d list chain %s: %v", h, name, listed)
			}
		}
	}
	list, err := e.svc.blockchainsAt(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "C-Chain,X-Chain" {
		t.Errorf("genesis blockchains %v", names)
	}
}

func parseUTXO(t *testing.T, b []byte) *avax.UTXO {
	t.Helper()
	u := &avax.UTXO{}
	if _, err := txs.Codec.Unmarshal(b, u); err != nil {
		t.Fatal(err)
	}
	return u
}
