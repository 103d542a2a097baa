package metrics_test

import (
	"fmt"
	"math/big"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/message"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/payload"

	"github.com/permafrost-dev/permafrost/internal/devnet"
)

// l1Deposits is what the recorded P-chain txs put into each L1 validation:
// its conversion or registration balance plus every balance increase, with
// its node and subnet; disabled marks the validations a DisableL1ValidatorTx
// refunded (their refund is not in the node's answers).
type l1Deposits struct {
	paid     map[ids.ID]uint64
	node     map[ids.ID]string
	subnet   map[ids.ID]string
	disabled map[ids.ID]bool
}

func recordedDeposits(t *testing.T, calls devnet.Calls) l1Deposits {
	t.Helper()
	d := l1Deposits{paid: map[ids.ID]uint64{}, node: map[ids.ID]string{}, subnet: map[ids.ID]string{}, disabled: map[ids.ID]bool{}}
	for _, tx := range devnet.PTxs(t, calls) {
		switch u := tx.Unsigned.(type) {
		case *txs.ConvertSubnetToL1Tx:
			for i, v := range u.Validators {
				id := u.Subnet.Append(uint32(i))
				node, err := ids.ToNodeID(v.NodeID)
				if err != nil {
					t.Fatal(err)
				}
				d.paid[id] += v.Balance
				d.node[id], d.subnet[id] = node.String(), u.Subnet.String()
			}
		case *txs.RegisterL1ValidatorTx:
			msg, err := warp.ParseMessage(u.Message)
			if err != nil {
				t.Fatal(err)
			}
			call, err := payload.ParseAddressedCall(msg.Payload)
			if err != nil {
				t.Fatal(err)
			}
			reg, err := message.ParseRegisterL1Validator(call.Payload)
			if err != nil {
				t.Fatal(err)
			}
			id := reg.ValidationID()
			d.paid[id] += u.Balance
			d.node[id], d.subnet[id] = ids.NodeID(reg.NodeID).String(), reg.SubnetID.String()
		case *txs.IncreaseL1ValidatorBalanceTx:
			d.paid[u.ValidationID] += u.Balance
		case *txs.DisableL1ValidatorTx:
			d.disabled[u.ValidationID] = true
		}
	}
	return d
}

// TestL1FeeMetrics compares the L1 fee metrics with the node: a validation's
// fees paid up to the tip are what the recorded txs deposited minus the
// balance platform.getL1Validator answers at the tip. The node's and the
// subnet's series are compared where every validation behind them is
// answered for; the total is the sum of the subnets'.
func TestL1FeeMetrics(t *testing.T) {
	forEachV2(t, func(t *testing.T, s *v2Server) {
		dep := recordedDeposits(t, s.p)
		want := map[ids.ID]uint64{}
		for _, x := range s.p.Method("platform.getL1Validator") {
			if x.Response.Result == nil {
				continue // a removed validation: not found
			}
			var r struct {
				ValidationID ids.ID `json:"validationID"`
				Balance      string `json:"balance"`
			}
			devnet.Result(t, x, &r)
			if dep.disabled[r.ValidationID] {
				continue
			}
			bal := mustBig(t, r.Balance).Uint64()
			if dep.paid[r.ValidationID] < bal {
				t.Fatalf("%s: balance %d above its deposits %d", r.ValidationID, bal, dep.paid[r.ValidationID])
			}
			want[r.ValidationID] = dep.paid[r.ValidationID] - bal
		}
		if len(want) < 2 {
			t.Fatalf("%d L1 validations answered for", len(want))
		}
		sumSeries := func(path string) (cum, daily string, days int) {
			var c, d series
			s.getOK(t, path+"CumulativeFeesDaily", &c)
			s.getOK(t, path+"FeesDaily", &d)
			var sum big.Int
			for _, p := range d.Results {
				sum.Add(&sum, mustBig(t, p.Value.String()))
			}
			return c.newest(t, path), sum.String(), len(d.Results)
		}
		for id, w := range want {
			cum, daily, _ := sumSeries("/v2/validation/" + id.String() + "/metrics/validation")
			if cum != fmt.Sprint(w) || daily != fmt.Sprint(w) {
				t.Errorf("validation %s paid %s (cumulative), %s (sum of days); node's balance says %d", id, cum, daily, w)
			}
		}
		// Nodes and subnets all of whose validations the node answered for.
		for _, by := range []struct {
			of    map[ids.ID]string
			route string
		}{{dep.node, "/v2/validator/%s/metrics/perNode%s"}, {dep.subnet, "/v2/subnet/%s/metrics/perSubnet%s"}} {
			total, complete, paying := map[string]uint64{}, map[string]bool{}, map[string]int{}
			for id, key := range by.of {
				if _, ok := complete[key]; !ok {
					complete[key] = true
				}
				w, ok := want[id]
				complete[key] = complete[key] && ok
				total[key] += w
				if w > 0 {
					paying[key]++
				}
			}
			compared := 0
			for key, ok := range complete {
				if !ok {
					continue
				}
				compared++
				var cum, daily series
				s.getOK(t, fmt.Sprintf(by.route, key, "CumulativeFeesPaid"), &cum)
				s.getOK(t, fmt.Sprintf(by.route, key, "DailyFeesPaid"), &daily)
				if got := cum.newest(t, key); got != fmt.Sprint(total[key]) {
					t.Errorf("%s: cumulative fees %s, node's balances say %d", key, got, total[key])
				}
				if by.route[4] == 's' && len(daily.Results) == 1 { // one day recorded: its payers are all payers
					var p series
					s.getOK(t, fmt.Sprintf(by.route, key, "PayingValidators"), &p)
					if got := p.newest(t, key); got != fmt.Sprint(paying[key]) {
						t.Errorf("%s: %s paying validators, node's balances say %d", key, got, paying[key])
					}
				}
			}
			// Every node is answered for; devnet-a's one L1 has a removed
			// validation (its refund is not in the answers), devnet-d's
			// second L1 none.
			if compared == 0 && (by.route[4] == 'v' || s.rec == "devnet-d") {
				t.Errorf("%s: no scope with every validation answered for", by.route)
			}
		}
		// The total is the sum of the subnets'.
		var tot series
		s.getOK(t, "/v2/validators/metrics/totalCumulativeFeesDaily", &tot)
		var sum big.Int
		for _, subnet := range uniq(dep.subnet) {
			var c series
			s.getOK(t, "/v2/subnet/"+subnet+"/metrics/perSubnetCumulativeFeesPaid", &c)
			sum.Add(&sum, mustBig(t, c.newest(t, subnet)))
		}
		if got := tot.newest(t, "total"); got != sum.String() {
			t.Errorf("total cumulative fees %s, sum of the subnets' %s", got, sum.String())
		}
	})
}

func uniq(m map[ids.ID]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range m {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// TestL1FeeMetricsBadInput: bad metric names and ids are 400s naming the
// parameter; well-formed ids of nothing L1 are 404s.
func TestL1FeeMetricsBadInput(t *testing.T) {
	s := newV2Server(t, "devnet-a", "sqlite")
	s.checkErrors(t, []errorCase{
		{"/v2/validators/metrics/totalFees", 400, "metric"},
		{"/v2/validators/metrics/totalValidatorFeesDaily?startTimestamp=x", 400, "startTimestamp"},
		{"/v2/validation/abc/metrics/validationFeesDaily", 400, "l1ValidationId"},
		{"/v2/validation/" + ids.GenerateTestID().String() + "/metrics/validationFeesDaily", 404, "L1 validation"},
		{"/v2/validation/" + ids.GenerateTestID().String() + "/metrics/perNodeDailyFeesPaid", 400, "metric"},
		{"/v2/validator/NodeID-xyz/metrics/perNodeDailyFeesPaid", 400, "nodeId"},
		{"/v2/validator/" + ids.GenerateTestNodeID().String() + "/metrics/perNodeDailyFeesPaid", 404, "node"},
		{"/v2/subnet/abc/metrics/perSubnetDailyFeesPaid", 400, "subnetId"},
		{"/v2/subnet/" + ids.GenerateTestID().String() + "/metrics/perSubnetDailyFeesPaid", 404, "subnet"},
	})
	// A subnet that is not an L1 pays no fee: an empty series.
	var r series
	s.getOK(t, "/v2/subnet/"+devnet.LoadNetwork(t).Subnets["A"].SubnetID+"/metrics/perSubnetDailyFeesPaid", &r)
	if len(r.Results) != 0 {
		t.Errorf("permissioned subnet's fees: %v", r.Results)
	}
}
