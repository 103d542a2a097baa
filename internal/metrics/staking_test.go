package metrics_test

import (
	"context"
	"math/big"
	"strconv"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/vms/platformvm/block"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"

	"github.com/permafrost-dev/permafrost/internal/decode/pchain"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/devnet/indextest"
	"github.com/permafrost-dev/permafrost/internal/metrics"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// TestStakingRollupPerBlock applies devnet-a's P-chain one block per batch
// and, after every block the node answered platform.getValidatorsAt for,
// compares the staking totals the rollup holds with the node's validator set
// at that height (validators, and their weight with their delegations), and
// the delegator totals with the delegations the recorded blocks had started
// and not yet ended (AddPermissionlessDelegatorTx, then the option block
// after its RewardValidatorTx).
func TestStakingRollupPerBlock(t *testing.T) {
	calls := devnet.LoadRPC(t, devnet.P)
	blocks := indextest.PBlocks(t)
	parsed := devnet.PBlocks(t, calls)
	sets := map[string]map[ids.ID]map[ids.NodeID]devnet.Validator{} // height -> subnet -> set
	for _, vs := range devnet.ValidatorsAt(t, calls) {
		if sets[vs.Height] == nil {
			sets[vs.Height] = map[ids.ID]map[ids.NodeID]devnet.Validator{}
		}
		sets[vs.Height][vs.SubnetID] = vs.Set
	}
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ix, err := pchain.NewIndexer(indextest.Genesis(t))
		if err != nil {
			t.Fatal(err)
		}
		r := metrics.WithRollup("P", metrics.KindP, ix)
		delegations := map[ids.ID]uint64{} // delegator tx -> weight, while current
		var pendingEnd []ids.ID            // delegations a proposal block ends at its option block
		compared := 0
		for i, b := range blocks {
			indextest.Apply(t, db, r, blocks[i:i+1], 1)
			for _, id := range pendingEnd {
				delete(delegations, id)
			}
			pendingEnd = nil
			for _, tx := range parsed[b.Height].Txs() {
				switch u := tx.Unsigned.(type) {
				case *txs.AddPermissionlessDelegatorTx:
					delegations[tx.ID()] = u.Validator.Wght
				case *txs.RewardValidatorTx:
					if _, ok := delegations[u.TxID]; ok {
						pendingEnd = append(pendingEnd, u.TxID)
					}
				}
			}
			if _, ok := parsed[b.Height].(*block.BanffProposalBlock); !ok {
				for _, id := range pendingEnd {
					delete(delegations, id)
				}
				pendingEnd = nil
			}
			var dw uint64
			for _, w := range delegations {
				dw += w
			}
			primary := latest(t, db, constants.PrimaryNetworkID.String())
			if primary.Delegators != int64(len(delegations)) || primary.DelegatorWeight.Uint64() != dw {
				t.Errorf("height %d: %d delegators weighing %s, the blocks say %d weighing %d", b.Height,
					primary.Delegators, primary.DelegatorWeight, len(delegations), dw)
			}
			for subnet, set := range sets[strconv.FormatUint(b.Height, 10)] {
				got := latest(t, db, subnet.String())
				var w big.Int
				for _, v := range set {
					w.Add(&w, new(big.Int).SetUint64(v.Weight))
				}
				gotW := new(big.Int).Add(got.ValidatorWeight, got.L1Weight)
				gotW.Add(gotW, got.DelegatorWeight)
				if got.Validators+got.L1Validators != int64(len(set)) || gotW.Cmp(&w) != 0 {
					t.Errorf("height %d, subnet %s: %d validators weighing %s (with delegations), node says %d weighing %s",
						b.Height, subnet, got.Validators+got.L1Validators, gotW, len(set), &w)
				}
				compared++
			}
		}
		if compared < 10 {
			t.Errorf("compared %d validator sets", compared)
		}
	})
}

// latest reads a subnet's staking totals after the last applied block (the
// recording spans one day: its newest row).
func latest(t *testing.T, db *store.DB, subnet string) *metrics.StakeTotals {
	t.Helper()
	pts := map[string]string{}
	for _, m := range metrics.StakingMetrics {
		p, _, _, err := metrics.StakingPage(context.Background(), db, subnet, m, 0, metrics.Day.Floor(1<<40), 1)
		if err != nil {
			t.Fatal(err)
		}
		pts[m] = p[0].Value
	}
	n := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	b := func(s string) *big.Int { v, _ := new(big.Int).SetString(s, 10); return v }
	// Value folds L1 validators into validators; keep them there.
	return &metrics.StakeTotals{Validators: n(pts["validatorCount"]), ValidatorWeight: b(pts["validatorWeight"]),
		L1Weight: new(big.Int), Delegators: n(pts["delegatorCount"]), DelegatorWeight: b(pts["delegatorWeight"])}
}
