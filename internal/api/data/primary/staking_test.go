package primary_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
)

// stakerFacts is a staker tx as the node's platform.getTx (json) shows it.
type stakerFacts struct {
	TxID, NodeID, SubnetID     string
	End, Weight                int64
	Shares                     int64
	ValidationOwner, DelegOwn  []string // validators
	RewardOwner                []string // delegators
	Delegator, PermissionedSub bool
	BLSKey, BLSPoP             string
	AcceptTime                 int64 // time of the block holding it
}

func stripP(as []string) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = strings.TrimPrefix(a, "P-")
	}
	sort.Strings(out)
	return out
}

// stakers reads every staker tx from the recorded platform.getTx answers,
// with the time of the block that accepted it (recorded blocks).
func (e *env) stakers(t testing.TB) map[string]*stakerFacts {
	t.Helper()
	out := map[string]*stakerFacts{}
	type owner struct {
		Addresses []string `json:"addresses"`
	}
	e.rec.each("P", "platform.getTx", func(params, result json.RawMessage) {
		if !strings.Contains(string(params), `"json"`) {
			return
		}
		var r struct {
			Tx struct {
				ID       string `json:"id"`
				Unsigned struct {
					Validator *struct {
						NodeID string `json:"nodeID"`
						End    int64  `json:"end"`
						Weight int64  `json:"weight"`
					} `json:"validator"`
					SubnetValidator *struct {
						NodeID string `json:"nodeID"`
						End    int64  `json:"end"`
						Weight int64  `json:"weight"`
						Subnet string `json:"subnetID"`
					} `json:"subnetValidator"`
					SubnetID   string `json:"subnetID"`
					Shares     int64  `json:"shares"`
					ValOwner   *owner `json:"validationRewardsOwner"`
					DelegOwner *owner `json:"delegationRewardsOwner"`
					RewOwner   *owner `json:"rewardsOwner"`
					Signer     *struct {
						PublicKey string `json:"publicKey"`
						PoP       string `json:"proofOfPossession"`
					} `json:"signer"`
				} `json:"unsignedTx"`
			} `json:"tx"`
		}
		if err := json.Unmarshal(result, &r); err != nil {
			t.Fatal(err)
		}
		u := r.Tx.Unsigned
		s := &stakerFacts{TxID: r.Tx.ID, SubnetID: u.SubnetID, Shares: u.Shares}
		switch {
		case u.SubnetValidator != nil:
			s.NodeID, s.End, s.Weight, s.SubnetID, s.PermissionedSub = u.SubnetValidator.NodeID, u.SubnetValidator.End, u.SubnetValidator.Weight, u.SubnetValidator.Subnet, true
		case u.Validator != nil:
			s.NodeID, s.End, s.Weight = u.Validator.NodeID, u.Validator.End, u.Validator.Weight
		default:
			return
		}
		if u.ValOwner != nil {
			s.ValidationOwner, s.DelegOwn = stripP(u.ValOwner.Addresses), stripP(u.DelegOwner.Addresses)
		}
		if u.RewOwner != nil {
			s.RewardOwner, s.Delegator = stripP(u.RewOwner.Addresses), true
		}
		if u.Signer != nil {
			s.BLSKey, s.BLSPoP = u.Signer.PublicKey, u.Signer.PoP
		}
		out[s.TxID] = s
	})
	blocks := e.recordedBlocks(t, "P")
	for _, b := range blocks {
		for _, id := range b.TxIDs {
			if s := out[id]; s != nil && b.Time != nil {
				s.AcceptTime = *b.Time
			}
		}
	}
	return out
}

// blockTimeOf is the time of the recorded P block holding tx id.
func (e *env) blockTimeOf(t testing.TB, id string) int64 {
	t.Helper()
	for _, b := range e.recordedBlocks(t, "P") {
		for _, x := range b.TxIDs {
			if x == id && b.Time != nil {
				return *b.Time
			}
		}
	}
	t.Fatalf("tx %s in no recorded block", id)
	return 0
}

type rewardOut struct {
	Addresses      []string `json:"addresses"`
	TxHash         string   `json:"txHash"`
	AmountStaked   string   `json:"amountStaked"`
	NodeID         string   `json:"nodeId"`
	StartTimestamp int64    `json:"startTimestamp"`
	EndTimestamp   int64    `json:"endTimestamp"`
	RewardType     string   `json:"rewardType"`
	UtxoID         string   `json:"utxoId"`
	OutputIndex    int64    `json:"outputIndex"`
	Reward         struct {
		AssetID         string          `json:"assetId"`
		Symbol          string          `json:"symbol"`
		Amount          string          `json:"amount"`
		HistoricalPrice json.RawMessage `json:"historicalPrice"`
	} `json:"reward"`
	RewardTxHash string `json:"rewardTxHash"`
}

func (e *env) allRewards(t testing.TB, q url.Values, size int) []rewardOut {
	t.Helper()
	var out []rewardOut
	e.walk(t, "/v1/networks/testnet/rewards?"+q.Encode(), size, func(body []byte) {
		var p struct{ HistoricalRewards []rewardOut }
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p.HistoricalRewards...)
	})
	return out
}

// Rewards are the node's getRewardUTXOs of every staker, with the staker's
// facts from its tx and the RewardValidatorTx that paid them.
func TestRewards(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		stakers := e.stakers(t)
		type expected struct {
			utxo       nodeUTXO
			staker     *stakerFacts
			rewardTx   string
			rewardType string
		}
		want := map[string]expected{}
		byNode := map[string]int{}
		rewardTx := map[string]string{}
		for _, r := range e.net.RewardValidatorTxs {
			rewardTx[r.StakerTxID] = r.RewardTxID
		}
		e.rec.each("P", "platform.getRewardUTXOs", func(params, result json.RawMessage) {
			var p struct{ TxID string }
			var r struct{ UTXOs []string }
			if json.Unmarshal(params, &p) != nil || json.Unmarshal(result, &r) != nil {
				t.Fatal("getRewardUTXOs")
			}
			s := stakers[p.TxID]
			if s == nil {
				t.Fatalf("staker %s unknown", p.TxID)
			}
			for _, u := range decodeUTXOs(t, "P", e.net.HRP, r.UTXOs) {
				typ := "DELEGATOR"
				if !s.Delegator {
					typ = "VALIDATOR_FEE"
					if strings.Join(u.Addresses, ",") == strings.Join(s.ValidationOwner, ",") {
						typ = "VALIDATOR"
					}
				}
				if _, dup := want[u.ID]; !dup {
					byNode[s.NodeID]++
				}
				want[u.ID] = expected{utxo: u, staker: s, rewardTx: rewardTx[p.TxID], rewardType: typ}
			}
		})
		if len(want) != 3 {
			t.Fatalf("the node lists %d reward UTXOs, the README says 3", len(want))
		}
		alpha, beta := e.net.Stakers["alpha"].NodeID, e.net.Stakers["beta"].NodeID
		check := func(name string, got []rewardOut, filter func(expected) bool) {
			t.Helper()
			n := 0
			for _, w := range want {
				if filter(w) {
					n++
				}
			}
			if len(got) != n {
				t.Errorf("%s: %d rewards, want %d", name, len(got), n)
			}
			for _, g := range got {
				w, ok := want[g.UtxoID]
				if !ok || !filter(w) {
					t.Errorf("%s: reward %s not expected", name, g.UtxoID)
					continue
				}
				s := w.staker
				if g.TxHash != s.TxID || g.NodeID != s.NodeID || g.AmountStaked != fmt.Sprint(s.Weight) ||
					g.EndTimestamp != s.End || g.StartTimestamp != s.AcceptTime || g.RewardType != w.rewardType ||
					g.OutputIndex != int64(w.utxo.OutputIndex) || g.Reward.Amount != fmt.Sprint(w.utxo.Amount) ||
					g.Reward.AssetID != w.utxo.AssetID || g.Reward.Symbol != "AVAX" || g.RewardTxHash != w.rewardTx ||
					strings.Join(g.Addresses, ",") != strings.Join(w.utxo.Addresses, ",") || w.rewardTx == "" {
					t.Errorf("%s: reward %s\n got %+v\nwant %+v staker %+v", name, g.UtxoID, g, w, *s)
				}
				if g.Reward.HistoricalPrice != nil {
					t.Errorf("%s: historicalPrice %s: prices are not this index's", name, g.Reward.HistoricalPrice)
				}
			}
		}
		all := func(expected) bool { return true }
		check("alpha", e.allRewards(t, url.Values{"nodeIds": {alpha}}, 1), func(w expected) bool { return w.staker.NodeID == alpha })
		check("beta", e.allRewards(t, url.Values{"nodeIds": {beta}}, 2), func(w expected) bool { return w.staker.NodeID == beta })
		check("both", e.allRewards(t, url.Values{"nodeIds": {alpha + "," + beta}, "currency": {"eur"}}, 2), all)
		if byNode[alpha] != 3 || byNode[beta] != 0 {
			t.Errorf("node rewards by node: %v", byNode)
		}
		// By reward address, with or without the P- prefix.
		for _, w := range want {
			for _, a := range []string{w.utxo.Addresses[0], "P-" + w.utxo.Addresses[0]} {
				addr := strings.TrimPrefix(a, "P-")
				check("address "+a, e.allRewards(t, url.Values{"addresses": {a}}, 3), func(x expected) bool {
					return strings.Contains(","+strings.Join(x.utxo.Addresses, ",")+",", ","+addr+",")
				})
			}
			// Both filters: an AND.
			check("address and beta", e.allRewards(t, url.Values{"addresses": {w.utxo.Addresses[0]}, "nodeIds": {beta}}, 3),
				func(expected) bool { return false })
		}
		// Several addresses (one walk each, merged): the union, each reward
		// once, in order, at every page size. The extra address owns none.
		var owners []string
		owned := map[string]bool{}
		for _, w := range want {
			for _, a := range w.utxo.Addresses {
				if !owned[a] {
					owned[a] = true
					owners = append(owners, a)
				}
			}
		}
		sort.Strings(owners)
		several := strings.Join(append(owners, "custom1js9jhzvc6j53vp53h8cutnrv4lt4292t58me5h"), ",")
		for _, size := range []int{1, 2, 10} {
			for _, order := range []string{"asc", "desc"} {
				got := e.allRewards(t, url.Values{"addresses": {several}, "sortOrder": {order}}, size)
				check(fmt.Sprintf("addresses %s, %s, pages of %d", several, order, size), got, all)
				var keys []string
				for _, g := range got {
					keys = append(keys, fmt.Sprintf("%d|%s", e.blockTimeOf(t, g.RewardTxHash), g.UtxoID))
				}
				ordered := slices.IsSorted(keys)
				if order == "desc" {
					ordered = slices.IsSortedFunc(keys, func(a, b string) int { return strings.Compare(b, a) })
				}
				if !ordered || len(slices.Compact(slices.Clone(keys))) != len(keys) {
					t.Errorf("addresses %s, %s: %v", several, order, keys)
				}
			}
		}
		check("addresses and alpha", e.allRewards(t, url.Values{"addresses": {several}, "nodeIds": {alpha}}, 2),
			func(w expected) bool { return w.staker.NodeID == alpha })
		// Orders: newest first by default, asc on request; ties by utxo id.
		for _, order := range []string{"", "asc", "desc"} {
			q := url.Values{"nodeIds": {alpha}}
			if order != "" {
				q.Set("sortOrder", order)
			}
			got := e.allRewards(t, q, 1)
			var times []string
			for _, g := range got {
				times = append(times, fmt.Sprintf("%d|%s", e.blockTimeOf(t, g.RewardTxHash), g.UtxoID))
			}
			sorted := sort.SliceIsSorted(times, func(i, j int) bool { return times[i] < times[j] })
			reversed := sort.SliceIsSorted(times, func(i, j int) bool { return times[i] > times[j] })
			if (order == "asc" && !sorted) || (order != "asc" && !reversed) {
				t.Errorf("sortOrder %q: %v", order, times)
			}
		}
	})
}

type validatorOut struct {
	TxHash           string  `json:"txHash"`
	NodeID           string  `json:"nodeId"`
	SubnetID         string  `json:"subnetId"`
	AmountStaked     string  `json:"amountStaked"`
	DelegationFee    string  `json:"delegationFee"`
	StartTimestamp   int64   `json:"startTimestamp"`
	EndTimestamp     int64   `json:"endTimestamp"`
	ValidationStatus string  `json:"validationStatus"`
	DelegatorCount   *int64  `json:"delegatorCount"`
	AmountDelegated  string  `json:"amountDelegated"`
	StakePercentage  float64 `json:"stakePercentage"`
	Uptime           float64 `json:"uptimePerformance"`
	Version          string  `json:"avalancheGoVersion"`
	BLS              *struct {
		PublicKey         string `json:"publicKey"`
		ProofOfPossession string `json:"proofOfPossession"`
	} `json:"blsCredentials"`
	Rewards          *rewardsOut `json:"rewards"`
	PotentialRewards *rewardsOut `json:"potentialRewards"`
	RemoveTxHash     string      `json:"removeTxHash"`
	RemoveTimestamp  int64       `json:"removeTimestamp"`
	Health           *struct {
		Reachability float64 `json:"reachabilityPercent"`
	} `json:"validatorHealth"`
}

type rewardsOut struct {
	ValidationRewardAmount string   `json:"validationRewardAmount"`
	DelegationRewardAmount string   `json:"delegationRewardAmount"`
	RewardAddresses        []string `json:"rewardAddresses"`
	RewardTxHash           string   `json:"rewardTxHash"`
}

func (e *env) allValidators(t testing.TB, nodeID string, q url.Values, size int) []validatorOut {
	t.Helper()
	var out []validatorOut
	e.walk(t, "/v1/networks/testnet/validators/"+nodeID+"?"+q.Encode(), size, func(body []byte) {
		var p struct{ Validators []validatorOut }
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Validators...)
	})
	return out
}

// currentValidators is the node's getCurrentValidators answer for a subnet
// ("" = the call without params).
func (e *env) currentValidators(t testing.TB, subnet string) []map[string]any {
	t.Helper()
	want := "{}"
	if subnet != "" {
		want = `{"subnetID":"` + subnet + `"}`
	}
	var out []map[string]any
	e.rec.each("P", "platform.getCurrentValidators", func(params, result json.RawMessage) {
		if string(params) == want {
			var r struct{ Validators []map[string]any }
			if err := json.Unmarshal(result, &r); err != nil {
				t.Fatal(err)
			}
			out = r.Validators
		}
	})
	if out == nil {
		t.Fatalf("no recorded getCurrentValidators %s", want)
	}
	return out
}

func TestValidators(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		stakers := e.stakers(t)
		primaryNet := "11111111111111111111111111111111LpoYY"
		subnetA := e.net.Subnets["A"].SubnetID

		// Active primary-network validators: as getCurrentValidators says.
		cur := e.currentValidators(t, "")
		total := 0.0
		for _, v := range cur {
			var w, d float64
			fmt.Sscan(v["weight"].(string), &w)
			fmt.Sscan(v["delegatorWeight"].(string), &d)
			total += w + d
		}
		for _, v := range cur {
			node := v["nodeID"].(string)
			got := e.allValidators(t, node, url.Values{"validationStatus": {"active"}}, 3)
			var rec *validatorOut
			for i := range got {
				if got[i].SubnetID == primaryNet {
					rec = &got[i]
				}
			}
			if rec == nil {
				t.Errorf("%s: no active primary record in %+v", node, got)
				continue
			}
			signer := v["signer"].(map[string]any)
			owner := v["validationRewardOwner"].(map[string]any)["addresses"].([]any)
			var w float64
			fmt.Sscan(v["weight"].(string), &w)
			if rec.TxHash != v["txID"] || fmt.Sprint(rec.StartTimestamp) != v["startTime"] || fmt.Sprint(rec.EndTimestamp) != v["endTime"] ||
				rec.AmountStaked != v["weight"] || rec.DelegationFee != v["delegationFee"] ||
				rec.PotentialRewards == nil || rec.PotentialRewards.ValidationRewardAmount != v["potentialReward"] ||
				rec.DelegatorCount == nil || fmt.Sprint(*rec.DelegatorCount) != v["delegatorCount"] || rec.AmountDelegated != v["delegatorWeight"] ||
				rec.BLS == nil || rec.BLS.PublicKey != signer["publicKey"] || rec.BLS.ProofOfPossession != signer["proofOfPossession"] ||
				fmt.Sprint(rec.PotentialRewards.RewardAddresses) != fmt.Sprint(stripP([]string{owner[0].(string)})) {
				t.Errorf("%s: active record %+v\nnode %v", node, *rec, v)
			}
			if up := fmt.Sprintf("%.4f", rec.Uptime); up != v["uptime"] || rec.Health == nil || (rec.Health.Reachability == 100) != v["connected"] || rec.Version == "" {
				t.Errorf("%s: observed uptime %v health %+v version %q, node %v %v", node, rec.Uptime, rec.Health, rec.Version, v["uptime"], v["connected"])
			}
			if d := rec.StakePercentage - 100*w/total; d > 1e-9 || d < -1e-9 {
				t.Errorf("%s: stakePercentage %v, node's weights give %v", node, rec.StakePercentage, 100*w/total)
			}
		}

		// Subnet A: the active one as the node lists it, the removed one and the expired one.
		subCur := e.currentValidators(t, subnetA)
		if len(subCur) != 1 {
			t.Fatalf("subnet A validators at the tip: %d", len(subCur))
		}
		var removeTx string
		for _, w := range loadWorkload(t) {
			if w.Type == "RemoveSubnetValidatorTx" {
				removeTx = w.TxID
			}
		}
		for _, s := range stakers {
			if !s.PermissionedSub {
				continue
			}
			got := e.allValidators(t, s.NodeID, url.Values{}, 2)
			var rec *validatorOut
			for i := range got {
				if got[i].TxHash == s.TxID {
					rec = &got[i]
				}
			}
			if rec == nil || rec.SubnetID != s.SubnetID || rec.AmountStaked != fmt.Sprint(s.Weight) || rec.EndTimestamp != s.End ||
				rec.StartTimestamp != s.AcceptTime || rec.DelegationFee != "" || rec.BLS != nil {
				t.Errorf("subnet validator %s: %+v, node %+v", s.TxID, rec, *s)
				continue
			}
			want := "completed" // left by expiry
			switch {
			case s.TxID == subCur[0]["txID"]:
				want = "active"
			case s.End > e.blockTimeOf(t, removeTx) && s.NodeID == "NodeID-PhPSRYpAVkb24819fsf9xQw66dPn13tu8":
				want = "removed"
				if rec.RemoveTxHash != removeTx || rec.RemoveTimestamp != e.blockTimeOf(t, removeTx) {
					t.Errorf("removed %s: by %s at %d, node %s at %d", s.TxID, rec.RemoveTxHash, rec.RemoveTimestamp, removeTx, e.blockTimeOf(t, removeTx))
				}
			}
			if rec.ValidationStatus != want {
				t.Errorf("subnet validator %s: %s, want %s", s.TxID, rec.ValidationStatus, want)
			}
		}

		// alpha and beta: completed, paid as getRewardUTXOs says.
		paid := map[string]map[string]uint64{} // staker -> VALIDATOR / VALIDATOR_FEE amounts
		e.rec.each("P", "platform.getRewardUTXOs", func(params, result json.RawMessage) {
			var p struct{ TxID string }
			var r struct{ UTXOs []string }
			_ = json.Unmarshal(params, &p)
			_ = json.Unmarshal(result, &r)
			s := stakers[p.TxID]
			paid[p.TxID] = map[string]uint64{}
			for _, u := range decodeUTXOs(t, "P", e.net.HRP, r.UTXOs) {
				if strings.Join(u.Addresses, ",") == strings.Join(s.ValidationOwner, ",") {
					paid[p.TxID]["VALIDATOR"] = u.Amount
				} else {
					paid[p.TxID]["VALIDATOR_FEE"] = u.Amount
				}
			}
		})
		for _, name := range []string{"alpha", "beta"} {
			st := e.net.Stakers[name]
			s, d := stakers[st.ValidatorTxID], stakers[st.DelegatorTxID]
			got := e.allValidators(t, st.NodeID, url.Values{}, 1)
			if len(got) != 1 {
				t.Fatalf("%s: %d records", name, len(got))
			}
			r := got[0]
			var rewardTx string
			for _, x := range e.net.RewardValidatorTxs {
				if x.StakerTxID == s.TxID {
					rewardTx = x.RewardTxID
				}
			}
			if r.ValidationStatus != "completed" || r.TxHash != s.TxID || r.AmountStaked != fmt.Sprint(s.Weight) ||
				r.StartTimestamp != s.AcceptTime || r.EndTimestamp != s.End || r.DelegationFee != fmt.Sprintf("%d.%04d", s.Shares/10000, s.Shares%10000) ||
				r.DelegatorCount == nil || *r.DelegatorCount != 1 || r.AmountDelegated != fmt.Sprint(d.Weight) ||
				r.BLS == nil || r.BLS.PublicKey != s.BLSKey || r.Rewards == nil || r.Rewards.RewardTxHash != rewardTx ||
				r.Rewards.ValidationRewardAmount != fmt.Sprint(paid[s.TxID]["VALIDATOR"]) ||
				r.Rewards.DelegationRewardAmount != fmt.Sprint(paid[s.TxID]["VALIDATOR_FEE"]) ||
				fmt.Sprint(r.Rewards.RewardAddresses) != fmt.Sprint(s.ValidationOwner) {
				t.Errorf("%s: %+v rewards %+v\nnode %+v paid %v", name, r, r.Rewards, *s, paid[s.TxID])
			}
		}

		// validationStatus partitions a node's records; sortOrder orders them.
		node := "NodeID-PhPSRYpAVkb24819fsf9xQw66dPn13tu8"
		all := e.allValidators(t, node, url.Values{"sortOrder": {"asc"}}, 1)
		n := 0
		for _, st := range []string{"active", "completed", "pending", "removed"} {
			part := e.allValidators(t, node, url.Values{"validationStatus": {st}}, 2)
			for _, v := range part {
				if v.ValidationStatus != st {
					t.Errorf("validationStatus=%s: got %s", st, v.ValidationStatus)
				}
			}
			n += len(part)
		}
		if n != len(all) || len(all) != 3 {
			t.Errorf("%s: %d records, partitions %d", node, len(all), n)
		}
		for i := 1; i < len(all); i++ {
			if all[i-1].StartTimestamp > all[i].StartTimestamp {
				t.Errorf("asc order: %d then %d", all[i-1].StartTimestamp, all[i].StartTimestamp)
			}
		}
		desc := e.allValidators(t, node, url.Values{}, 2)
		for i := range desc {
			if desc[i].TxHash != all[len(all)-1-i].TxHash {
				t.Errorf("default order is not the reverse of asc")
			}
		}
	})
}
