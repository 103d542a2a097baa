package primary_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"
)

func (e *env) listAll(t testing.TB, path string, q url.Values, size int, field string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	e.walk(t, path+"?"+q.Encode(), size, func(body []byte) {
		var p map[string]json.RawMessage
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(p[field], &items); err != nil {
			t.Fatal(err)
		}
		out = append(out, items...)
	})
	return out
}

func decodeAll[T any](t testing.TB, raws []json.RawMessage) []T {
	t.Helper()
	out := make([]T, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestValidatorList compares GET /validators with the staker txs the node
// answered (platform.getTx) and its current set (getCurrentValidators).
func TestValidatorList(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		stakers := e.stakers(t)
		primaryNet := "11111111111111111111111111111111LpoYY"
		list := func(q url.Values, size int) []validatorOut {
			return decodeAll[validatorOut](t, e.listAll(t, "/v1/networks/testnet/validators", q, size, "validators"))
		}
		all := list(url.Values{}, 3)
		got := map[string]validatorOut{}
		for _, v := range all {
			if _, dup := got[v.TxHash]; dup {
				t.Errorf("validator %s listed twice", v.TxHash)
			}
			got[v.TxHash] = v
		}
		nValidators := 0
		for id, s := range stakers {
			if s.Delegator {
				continue
			}
			nValidators++
			v, ok := got[id]
			if !ok {
				t.Errorf("staker tx %s (%s) not listed", id, s.NodeID)
				continue
			}
			if v.NodeID != s.NodeID || v.EndTimestamp != s.End || v.AmountStaked != fmt.Sprint(s.Weight) {
				t.Errorf("%s: listed %+v, node's tx %+v", id, v, *s)
			}
		}
		if len(all) != nValidators {
			t.Errorf("%d validators listed, the node's txs have %d", len(all), nValidators)
		}
		// Default order: newest start first.
		for i := 1; i < len(all); i++ {
			if all[i].StartTimestamp > all[i-1].StartTimestamp {
				t.Errorf("not sorted by start desc at %d", i)
			}
		}

		// validationStatus=active on the primary network: getCurrentValidators.
		active := list(url.Values{"validationStatus": {"active"}, "subnetId": {primaryNet}}, 10)
		var gotIDs, wantIDs []string
		for _, v := range active {
			gotIDs = append(gotIDs, v.TxHash)
			if v.ValidationStatus != "active" || v.SubnetID != primaryNet {
				t.Errorf("active filter gave %+v", v)
			}
		}
		potential := map[string]string{}
		for _, v := range e.currentValidators(t, "") {
			wantIDs = append(wantIDs, v["txID"].(string))
			potential[v["txID"].(string)] = v["potentialReward"].(string)
		}
		sort.Strings(gotIDs)
		sort.Strings(wantIDs)
		if fmt.Sprint(gotIDs) != fmt.Sprint(wantIDs) {
			t.Errorf("active primary validators %v, node %v", gotIDs, wantIDs)
		}

		// nodeIds: substring matching.
		for _, v := range e.currentValidators(t, "") {
			node := v["nodeID"].(string)
			part := strings.TrimPrefix(node, "NodeID-")[:8]
			for _, x := range list(url.Values{"nodeIds": {part}}, 10) {
				if !strings.Contains(x.NodeID, part) {
					t.Errorf("nodeIds=%s gave %s", part, x.NodeID)
				}
			}
			if len(list(url.Values{"nodeIds": {part}}, 10)) == 0 {
				t.Errorf("nodeIds=%s matched nothing", part)
			}
		}

		// Fee filters leave out subnet validations.
		for _, v := range list(url.Values{"minFeePercentage": {"2"}}, 10) {
			if v.SubnetID != primaryNet || v.DelegationFee == "" {
				t.Errorf("minFeePercentage gave a subnet validation %+v", v)
			}
		}
		// Time remaining: only validations not ended, within the bounds.
		tipTime := int64(0)
		for _, v := range all {
			tipTime = max(tipTime, v.StartTimestamp)
		}
		for _, v := range list(url.Values{"minTimeRemaining": {"1000"}, "sortBy": {"timeRemaining"}, "sortOrder": {"asc"}}, 2) {
			if v.ValidationStatus != "active" && v.ValidationStatus != "pending" {
				t.Errorf("time filter gave %+v", v)
			}
		}
		byLeft := list(url.Values{"sortBy": {"timeRemaining"}, "sortOrder": {"asc"}}, 2)
		for i := 1; i < len(byLeft); i++ {
			if byLeft[i].EndTimestamp < byLeft[i-1].EndTimestamp {
				t.Errorf("sortBy=timeRemaining asc out of order at %d", i)
			}
		}
		if len(byLeft) != len(all) {
			t.Errorf("sortBy=timeRemaining listed %d of %d", len(byLeft), len(all))
		}
		// Delegation capacity: the current primary validators only.
		for _, v := range list(url.Values{"minDelegationCapacity": {"0"}, "sortBy": {"delegationCapacity"}}, 1) {
			if v.ValidationStatus != "active" || v.SubnetID != primaryNet {
				t.Errorf("capacity filter gave %+v", v)
			}
		}
		if n := len(list(url.Values{"maxDelegationCapacity": {"0"}}, 10)); n != 0 {
			t.Errorf("maxDelegationCapacity=0 gave %d genesis validators with room", n)
		}
		// Uptime: as our node measures it (the recorded answer).
		// (a subnet validation on a measured node has that node's uptime).
		measured := map[string]bool{}
		for _, v := range e.currentValidators(t, "") {
			measured[v["nodeID"].(string)] = true
		}
		wantUp := 0
		for _, v := range all {
			if v.ValidationStatus == "active" && measured[v.NodeID] {
				wantUp++
			}
		}
		up := list(url.Values{"minUptimePerformance": {"0"}, "sortBy": {"uptimePerformance"}}, 1)
		if len(up) != wantUp || wantUp == 0 {
			t.Errorf("uptime filter listed %d, node measures %d", len(up), wantUp)
		}

		for _, c := range []struct{ q, want string }{
			{"pageSize=0", "pageSize"},
			{"sortBy=fee", "sortBy"},
			{"validationStatus=gone", "validationStatus"},
			{"nodeIds=NodeID-0OIl", "nodeIds"},
			{"subnetId=xyz", "subnetId"},
			{"minDelegationCapacity=-1", "minDelegationCapacity"},
			{"maxDelegationCapacity=720000000000000001", "maxDelegationCapacity"},
			{"minFeePercentage=1", "minFeePercentage"},
			{"maxUptimePerformance=101", "maxUptimePerformance"},
			{"minTimeRemaining=abc", "minTimeRemaining"},
			{"pageToken=abc", "pageToken"},
		} {
			e.fails(t, "/v1/networks/testnet/validators?"+c.q, 400, c.want)
		}
	})
}

type delegatorOut struct {
	TxHash               string   `json:"txHash"`
	NodeID               string   `json:"nodeId"`
	RewardAddresses      []string `json:"rewardAddresses"`
	AmountDelegated      string   `json:"amountDelegated"`
	DelegationFee        string   `json:"delegationFee"`
	EndTimestamp         int64    `json:"endTimestamp"`
	GrossReward          string   `json:"grossReward"`
	NetReward            string   `json:"netReward"`
	EstimatedGrossReward string   `json:"estimatedGrossReward"`
	DelegationStatus     string   `json:"delegationStatus"`
}

// rewardUTXOAmounts sums the reward UTXOs the node answered for a staker tx.
func (e *env) rewardUTXOAmounts(t testing.TB, txID string) (sum uint64, found bool) {
	t.Helper()
	e.rec.each("P", "platform.getRewardUTXOs", func(params, result json.RawMessage) {
		var p struct{ TxID string }
		var r struct{ Utxos []string }
		if json.Unmarshal(params, &p) != nil || p.TxID != txID || json.Unmarshal(result, &r) != nil {
			return
		}
		found, sum = true, 0
		for _, u := range decodeUTXOs(t, "P", "custom", r.Utxos) {
			sum += u.Amount
		}
	})
	return sum, found
}

func TestDelegatorList(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		stakers := e.stakers(t)
		all := decodeAll[delegatorOut](t, e.listAll(t, "/v1/networks/testnet/delegators", url.Values{}, 1, "delegators"))
		got := map[string]delegatorOut{}
		for _, d := range all {
			got[d.TxHash] = d
		}
		n := 0
		for id, s := range stakers {
			if !s.Delegator {
				continue
			}
			n++
			d, ok := got[id]
			if !ok {
				t.Errorf("delegator %s not listed", id)
				continue
			}
			var validatorFee int64
			for _, v := range stakers {
				if !v.Delegator && v.NodeID == s.NodeID && v.SubnetID == s.SubnetID {
					validatorFee = v.Shares
				}
			}
			if d.NodeID != s.NodeID || d.AmountDelegated != fmt.Sprint(s.Weight) || d.EndTimestamp != s.End ||
				fmt.Sprint(d.RewardAddresses) != fmt.Sprint(s.RewardOwner) ||
				d.DelegationFee != fmt.Sprintf("%d.%04d", validatorFee/10000, validatorFee%10000) {
				t.Errorf("%s: listed %+v, node's tx %+v", id, d, *s)
			}
			// Every workload delegator has ended: the net reward is what
			// getRewardUTXOs pays it (nothing when not rewarded).
			paid, found := e.rewardUTXOAmounts(t, id)
			if !found {
				t.Errorf("%s: no recorded getRewardUTXOs", id)
			}
			if d.DelegationStatus != "completed" || d.NetReward != fmt.Sprint(paid) || (paid == 0) != (d.GrossReward == "0") {
				t.Errorf("%s: %s gross %s net %s, node paid %d", id, d.DelegationStatus, d.GrossReward, d.NetReward, paid)
			}
		}
		if len(all) != n || n == 0 {
			t.Errorf("%d delegators listed, node's txs have %d", len(all), n)
		}
		// Filters.
		for id, s := range stakers {
			if !s.Delegator {
				continue
			}
			for _, q := range []url.Values{{"nodeIds": {s.NodeID}}, {"rewardAddresses": {"P-" + s.RewardOwner[0]}}} {
				found := false
				for _, d := range decodeAll[delegatorOut](t, e.listAll(t, "/v1/networks/testnet/delegators", q, 10, "delegators")) {
					found = found || d.TxHash == id
					if q.Has("nodeIds") && d.NodeID != s.NodeID {
						t.Errorf("%v gave %+v", q, d)
					}
				}
				if !found {
					t.Errorf("%v does not list %s", q, id)
				}
			}
		}
		if n := len(e.listAll(t, "/v1/networks/testnet/delegators", url.Values{"delegationStatus": {"active"}}, 10, "delegators")); n != 0 {
			t.Errorf("%d active delegators at the tip, the node has none", n)
		}
		for _, c := range []struct{ q, want string }{
			{"delegationStatus=removed", "delegationStatus"},
			{"nodeIds=NodeID-xyz", "nodeIds"},
			{"rewardAddresses=P-avax1xyz", "rewardAddresses"},
			{"sortOrder=up", "sortOrder"},
		} {
			e.fails(t, "/v1/networks/testnet/delegators?"+c.q, 400, c.want)
		}
	})
}

func TestPendingRewards(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		type pendingOut struct {
			TxHash          string   `json:"txHash"`
			NodeID          string   `json:"nodeId"`
			Addresses       []string `json:"addresses"`
			AmountStaked    string   `json:"amountStaked"`
			RewardType      string   `json:"rewardType"`
			Progress        float64  `json:"progress"`
			EstimatedReward struct {
				Amount  string `json:"amount"`
				AssetID string `json:"assetId"`
			} `json:"estimatedReward"`
		}
		for _, v := range e.currentValidators(t, "") {
			node := v["nodeID"].(string)
			owner := v["validationRewardOwner"].(map[string]any)["addresses"].([]any)
			for _, q := range []url.Values{{"nodeIds": {node}}, {"addresses": {owner[0].(string)}}} {
				got := decodeAll[pendingOut](t, e.listAll(t, "/v1/networks/testnet/rewards:listPending", q, 1, "pendingRewards"))
				var rec *pendingOut
				for i := range got {
					if got[i].TxHash == v["txID"] {
						rec = &got[i]
					}
				}
				if rec == nil {
					t.Errorf("%v: %s not listed in %+v", q, v["txID"], got)
					continue
				}
				if rec.EstimatedReward.Amount != v["potentialReward"] || rec.AmountStaked != v["weight"] || rec.RewardType != "VALIDATOR" ||
					rec.EstimatedReward.AssetID != e.net.AvaxAssetID || rec.Progress <= 0 || rec.Progress >= 100 ||
					fmt.Sprint(rec.Addresses) != fmt.Sprint(stripP([]string{owner[0].(string)})) {
					t.Errorf("%v: %+v, node %v", q, *rec, v)
				}
			}
		}
		e.fails(t, "/v1/networks/testnet/rewards:listPending", 400, "addresses or nodeIds")
		e.fails(t, "/v1/networks/testnet/rewards:listPending?nodeIds=abc", 400, "nodeIds")
		e.fails(t, "/v1/networks/testnet/rewards:listPending?addresses=P-avax1abc", 400, "addresses")
	})
}

func TestL1ValidatorList(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		type l1Out struct {
			ValidationID     string `json:"validationId"`
			ValidationIDHex  string `json:"validationIdHex"`
			NodeID           string `json:"nodeId"`
			SubnetID         string `json:"subnetId"`
			Weight           uint64 `json:"weight"`
			RemainingBalance uint64 `json:"remainingBalance"`
			CreationTime     int64  `json:"creationTimestamp"`
			BLS              struct {
				PublicKey string `json:"publicKey"`
			} `json:"blsCredentials"`
			RemainingBalanceOwner struct {
				Addresses []string `json:"addresses"`
				Threshold uint32   `json:"threshold"`
			} `json:"remainingBalanceOwner"`
			DeactivationOwner struct {
				Addresses []string `json:"addresses"`
			} `json:"deactivationOwner"`
		}
		all := decodeAll[l1Out](t, e.listAll(t, "/v1/networks/testnet/l1Validators", url.Values{"includeInactiveL1Validators": {"true"}}, 1, "validators"))
		got := map[string]l1Out{}
		for _, v := range all {
			got[v.ValidationID] = v
		}
		n := 0
		for _, call := range e.rec.calls["P"] {
			if call.Method != "platform.getL1Validator" {
				continue
			}
			var p struct{ ValidationID string }
			if err := json.Unmarshal(call.Params, &p); err != nil {
				t.Fatal(err)
			}
			if call.Response.Error != nil {
				// The removed validator: the node does not know it any more.
				if _, ok := got[p.ValidationID]; ok {
					t.Errorf("removed L1 validator %s listed", p.ValidationID)
				}
				e.ok(t, "/v1/networks/testnet/l1Validators?l1ValidationId="+p.ValidationID, &struct{}{})
				continue
			}
			n++
			var w struct {
				NodeID, Weight, StartTime, PublicKey, Balance, SubnetID string
				RemainingBalanceOwner                                   struct {
					Threshold string
					Addresses []string
				}
				DeactivationOwner struct{ Addresses []string }
			}
			if err := json.Unmarshal(call.Response.Result, &w); err != nil {
				t.Fatal(err)
			}
			v, ok := got[p.ValidationID]
			if !ok {
				t.Errorf("L1 validator %s not listed", p.ValidationID)
				continue
			}
			if v.NodeID != w.NodeID || fmt.Sprint(v.Weight) != w.Weight || fmt.Sprint(v.CreationTime) != w.StartTime ||
				v.BLS.PublicKey != w.PublicKey || fmt.Sprint(v.RemainingBalance) != w.Balance || v.SubnetID != w.SubnetID ||
				fmt.Sprint(v.RemainingBalanceOwner.Threshold) != w.RemainingBalanceOwner.Threshold ||
				fmt.Sprint(v.RemainingBalanceOwner.Addresses) != fmt.Sprint(stripP(w.RemainingBalanceOwner.Addresses)) ||
				fmt.Sprint(v.DeactivationOwner.Addresses) != fmt.Sprint(stripP(w.DeactivationOwner.Addresses)) {
				t.Errorf("%s: listed %+v, node %+v", p.ValidationID, v, w)
			}
			// Each filter finds it.
			for _, q := range []string{"l1ValidationId=" + p.ValidationID, "l1ValidationId=" + v.ValidationIDHex,
				"nodeId=" + w.NodeID, "subnetId=" + w.SubnetID} {
				one := decodeAll[l1Out](t, e.listAll(t, "/v1/networks/testnet/l1Validators", mustQuery(t, q), 10, "validators"))
				found := false
				for _, x := range one {
					found = found || x.ValidationID == p.ValidationID
				}
				if !found {
					t.Errorf("%s does not find %s", q, p.ValidationID)
				}
			}
		}
		if n == 0 || len(all) != n {
			t.Errorf("%d L1 validators listed, node knows %d", len(all), n)
		}
		for _, c := range []struct{ q, want string }{
			{"l1ValidationId=xyz", "l1ValidationId"},
			{"nodeId=xyz", "nodeId"},
			{"subnetId=xyz", "subnetId"},
			{"includeInactiveL1Validators=maybe", "includeInactiveL1Validators"},
			{"pageSize=101", "pageSize"},
		} {
			e.fails(t, "/v1/networks/testnet/l1Validators?"+c.q, 400, c.want)
		}
	})
}

func mustQuery(t testing.TB, q string) url.Values {
	t.Helper()
	v, err := url.ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
