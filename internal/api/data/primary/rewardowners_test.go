package primary_test

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The reward-owner filters with several addresses (one walk per address of
// p_staker_reward_owners, merged) list exactly the stakers whose reward
// owner, in the node's answers, names one of them, once each, in the
// page's order, on every page size.
func TestRewardOwnerFiltersOfSeveralAddresses(t *testing.T) {
	type listed struct {
		TxHash         string `json:"txHash"`
		StartTimestamp int64  `json:"startTimestamp"`
	}
	// groups are each of addrs alone and up to 3 of them together.
	groups := func(t *testing.T, addrs []string) [][]string {
		sort.Strings(addrs)
		addrs = slices.Compact(addrs)
		if len(addrs) < 2 {
			t.Fatalf("too few reward owners in the recording: %v", addrs)
		}
		var out [][]string
		for i := range addrs {
			out = append(out, addrs[i:i+1])
		}
		return append(out, addrs[:min(3, len(addrs))])
	}
	check := func(t *testing.T, e *env, path, param, field string, extra url.Values, want map[string]bool, addrs []string) {
		for _, size := range []int{1, 2, 100} {
			for _, order := range []string{"asc", "desc"} {
				q := url.Values{param: {strings.Join(addrs, ",")}, "sortOrder": {order}}
				for k, v := range extra {
					q[k] = v
				}
				got := decodeAll[listed](t, e.listAll(t, path, q, size, field))
				seen := map[string]bool{}
				for i, g := range got {
					if !want[g.TxHash] || seen[g.TxHash] {
						t.Errorf("%s %v size %d: %s listed (again or not the owners')", path, q, size, g.TxHash)
					}
					seen[g.TxHash] = true
					if i > 0 {
						p := got[i-1]
						before := p.StartTimestamp < g.StartTimestamp || p.StartTimestamp == g.StartTimestamp && p.TxHash < g.TxHash
						if before != (order == "asc") {
							t.Errorf("%s %v size %d: %+v before %+v", path, q, size, p, g)
						}
					}
				}
				if len(seen) != len(want) {
					t.Errorf("%s %v size %d: listed %d stakers, the node's owners have %d", path, q, size, len(seen), len(want))
				}
			}
		}
	}
	forEachBackend(t, func(t *testing.T, e *env) {
		stakers := e.stakers(t)
		var owners []string
		for _, s := range stakers {
			if s.Delegator {
				owners = append(owners, s.RewardOwner...)
			}
		}
		for _, g := range groups(t, owners) {
			want := map[string]bool{}
			for id, s := range stakers {
				if s.Delegator && slices.ContainsFunc(s.RewardOwner, func(a string) bool { return slices.Contains(g, a) }) {
					want[id] = true
				}
			}
			var addrs []string
			for _, a := range g {
				addrs = append(addrs, "P-"+a)
			}
			check(t, e, "/v1/networks/testnet/delegators", "rewardAddresses", "delegators", nil, want, addrs)
			// Every workload delegator has completed (TestDelegatorList).
			check(t, e, "/v1/networks/testnet/delegators", "rewardAddresses", "delegators",
				url.Values{"delegationStatus": {"completed"}}, want, addrs)
		}

		// The current validators share an owner; the delegators' (all
		// completed) have no pending reward: their walks are empty.
		validators := e.currentValidators(t, "")
		ownersOf := map[string][]string{}
		for _, v := range validators {
			for _, a := range v["validationRewardOwner"].(map[string]any)["addresses"].([]any) {
				owners = append(owners, a.(string))
				ownersOf[v["txID"].(string)] = append(ownersOf[v["txID"].(string)], a.(string))
			}
		}
		for _, g := range groups(t, owners) {
			want := map[string]bool{}
			for id, as := range ownersOf {
				if slices.ContainsFunc(as, func(a string) bool { return slices.Contains(g, a) }) {
					want[id] = true
				}
			}
			check(t, e, "/v1/networks/testnet/rewards:listPending", "addresses", "pendingRewards", nil, want, g)
		}
		if t.Failed() {
			t.Log(fmt.Sprint(len(stakers), " staker txs, ", len(validators), " current validators"))
		}
	})
}
