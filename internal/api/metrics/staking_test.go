package metrics_test

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/vms/platformvm/block"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/api/metrics"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

// The recordings the v2 staking, L1 fee and ICM tests run on.
var v2Recordings = []string{"devnet-a", "devnet-d"}

// v2Server serves the metrics routes over the index of recording rec.
type v2Server struct {
	*server
	rec  string
	dir  string
	p    devnet.Calls
	spec *apitest.Spec
}

func newV2Server(t *testing.T, rec, backend string) *v2Server {
	t.Helper()
	e := testenv.Recording(t, rec, backend)
	mux := api.NewMux(discard())
	metrics.Register(mux, metrics.Deps{DB: e.DB, Network: e.Network, Log: discard()})
	return &v2Server{server: &server{env: e, mux: mux}, rec: rec, dir: e.Dir,
		p: devnet.LoadRPCIn(t, e.Dir, devnet.P), spec: apitest.LoadMetrics(t)}
}

// forEachV2 runs body on each recording's index on each backend.
func forEachV2(t *testing.T, body func(t *testing.T, s *v2Server)) {
	for _, backend := range storetest.Backends {
		for _, rec := range v2Recordings {
			t.Run(backend+"/"+rec, func(t *testing.T) { body(t, newV2Server(t, rec, backend)) })
		}
	}
}

// getOK asks path, checks a 200 valid against the document, and decodes it.
func (s *v2Server) getOK(t *testing.T, path string, out any) {
	t.Helper()
	code, body := s.get(t, path)
	if code != http.StatusOK {
		t.Fatalf("%s: %d %s", path, code, body)
	}
	if err := s.spec.CheckResponse(http.MethodGet, path, code, body); err != nil {
		t.Errorf("%s: not the document's shape: %v", path, err)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("%s: %v: %s", path, err, body)
	}
}

type series struct {
	Results []struct {
		Timestamp int64       `json:"timestamp"`
		Value     json.Number `json:"value"`
	} `json:"results"`
	NextPageToken string `json:"nextPageToken"`
}

// newest is the value of the newest point (the series is newest first).
func (s series) newest(t *testing.T, what string) string {
	t.Helper()
	if len(s.Results) == 0 {
		t.Fatalf("%s: empty series", what)
	}
	return s.Results[0].Value.String()
}

// recordedValidators is a platform.getCurrentValidators answer of the
// recording for subnet ("" for the call without params).
type recordedValidators struct {
	Validators []struct {
		TxID            string `json:"txID"`
		StartTime       string `json:"startTime"`
		Weight          string `json:"weight"`
		NodeID          string `json:"nodeID"`
		DelegatorCount  string `json:"delegatorCount"`
		DelegatorWeight string `json:"delegatorWeight"`
		RewardOwner     *struct {
			Addresses []string `json:"addresses"`
		} `json:"validationRewardOwner"`
	} `json:"validators"`
}

func currentValidators(t *testing.T, calls devnet.Calls, subnet string) recordedValidators {
	t.Helper()
	var r recordedValidators
	if !calls.FindResult(t, &r, "platform.getCurrentValidators", devnet.ParamsEqual(fmt.Sprintf(`{"subnetID":%q}`, subnet))) {
		t.Fatalf("no recorded getCurrentValidators of %s", subnet)
	}
	return r
}

// TestStakingMetricsAtTip compares the staking metrics of the tip's day with
// the node's platform.getCurrentValidators at the tip, for the primary
// network, a permissioned subnet and an L1 of each recording, on both
// backends.
func TestStakingMetricsAtTip(t *testing.T) {
	forEachV2(t, func(t *testing.T, s *v2Server) {
		var subnets []string
		for _, x := range s.p.Method("platform.getCurrentValidators") {
			var p struct {
				SubnetID string   `json:"subnetID"`
				NodeIDs  []string `json:"nodeIDs"`
			}
			devnet.Params(t, x, &p)
			if p.SubnetID != "" && p.NodeIDs == nil && x.Response.Result != nil {
				subnets = append(subnets, p.SubnetID)
			}
		}
		if len(subnets) < 3 {
			t.Fatalf("recorded subnets %v", subnets)
		}
		for _, subnet := range subnets {
			// A subnet the node does not know (getSubnet: not found)
			// has no validators there and is a 404 here.
			if x := s.p.Method("platform.getSubnet", devnet.ParamsEqual(fmt.Sprintf(`{"subnetID":%q}`, subnet))); len(x) > 0 &&
				x[0].Response.Error != nil && x[0].Response.Error.Message == "not found" {
				code, body := s.get(t, "/v2/networks/testnet/metrics/validatorCount?subnetId="+subnet)
				checkError(t, code, body, http.StatusNotFound, subnet)
				continue
			}
			r := currentValidators(t, s.p, subnet)
			var vw, dw big.Int
			var dc int64
			for _, v := range r.Validators {
				vw.Add(&vw, mustBig(t, v.Weight))
				if v.DelegatorCount != "" {
					n, _ := strconv.ParseInt(v.DelegatorCount, 10, 64)
					dc += n
					dw.Add(&dw, mustBig(t, v.DelegatorWeight))
				}
			}
			want := map[string]string{
				"validatorCount": fmt.Sprint(len(r.Validators)), "validatorWeight": vw.String(),
				"delegatorCount": fmt.Sprint(dc), "delegatorWeight": dw.String(),
			}
			for metric, w := range want {
				var got series
				q := "?subnetId=" + subnet
				if subnet == constants.PrimaryNetworkID.String() {
					q = "" // the default
				}
				s.getOK(t, "/v2/networks/testnet/metrics/"+metric+q, &got)
				if v := got.newest(t, metric); v != w {
					t.Errorf("%s of %s at the tip = %s, node says %s", metric, subnet, v, w)
				}
			}
		}
	})
}

func mustBig(t *testing.T, s string) *big.Int {
	t.Helper()
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("number %q", s)
	}
	return v
}

// errorCase is a request and the metrics error it must get: its status and
// a text one of the messages contains (the parameter's name, say).
type errorCase struct {
	path   string
	status int
	want   string
}

func (s *v2Server) checkErrors(t *testing.T, cases []errorCase) {
	t.Helper()
	for _, c := range cases {
		code, body := s.get(t, c.path)
		checkError(t, code, body, c.status, c.want)
	}
}

// TestStakingMetricsBadInput: bad names and ranges are 400s naming the
// parameter, unknown subnets and other networks 404s (metrics error shape).
func TestStakingMetricsBadInput(t *testing.T) {
	s := newV2Server(t, "devnet-a", "sqlite")
	s.checkErrors(t, []errorCase{
		{"/v2/networks/testnet/metrics/validatorcount", 400, "metric"},
		{"/v2/networks/testnet/metrics/validatorCount?pageSize=0", 400, "pageSize"},
		{"/v2/networks/testnet/metrics/validatorCount?pageSize=2161", 400, "pageSize"},
		{"/v2/networks/testnet/metrics/validatorCount?startTimestamp=-1", 400, "startTimestamp"},
		{"/v2/networks/testnet/metrics/validatorCount?startTimestamp=20&endTimestamp=10", 400, "endTimestamp"},
		{"/v2/networks/testnet/metrics/validatorCount?subnetId=xyz", 400, "subnetId"},
		{"/v2/networks/devnet/metrics/validatorCount", 400, "network"},
		{"/v2/networks/mainnet/metrics/validatorCount", 404, "mainnet"},
		{"/v2/networks/testnet/metrics/validatorCount?subnetId=" + ids.GenerateTestID().String(), 404, "subnet"},
		{"/v2/subnets/xyz/validators:getAddresses", 400, "subnetId"},
		{"/v2/subnets/" + ids.GenerateTestID().String() + "/validators:getAddresses", 404, "subnet"},
		{"/v2/subnets/11111111111111111111111111111111LpoYY/validators:getAddresses?pageSize=5001", 400, "pageSize"},
		{"/v2/subnets/11111111111111111111111111111111LpoYY/validators:getAddresses?network=mainnet", 404, "mainnet"},
	})
}

// TestValidatorAddresses compares validators:getAddresses with the recorded
// validator txs: every primary-network validator tx in a recorded P block
// (its block's time, its validation reward owner, its end time) and the
// genesis validators platform.getCurrentValidators shows, in time order, and
// paged; a time frame after the short validations leaves only the genesis
// validators.
func TestValidatorAddresses(t *testing.T) {
	forEachV2(t, func(t *testing.T, s *v2Server) {
		var netInfo struct{ HRP string }
		b, err := os.ReadFile(filepath.Join(s.dir, "network.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &netInfo); err != nil {
			t.Fatal(err)
		}
		type want struct {
			time, end int64
			txID      string
			addrs     []string
		}
		var all []want
		inBlock := map[string]bool{}
		for _, blk := range devnet.PBlocks(t, s.p) {
			bb, ok := blk.(block.BanffBlock)
			if !ok {
				continue
			}
			for _, tx := range blk.Txs() {
				inBlock[tx.ID().String()] = true
				v, ok := tx.Unsigned.(*txs.AddPermissionlessValidatorTx)
				if !ok || v.Subnet != constants.PrimaryNetworkID {
					continue
				}
				o := v.ValidatorRewardsOwner.(*secp256k1fx.OutputOwners)
				var addrs []string
				for _, a := range o.Addrs {
					f, err := address.Format("P", netInfo.HRP, a.Bytes())
					if err != nil {
						t.Fatal(err)
					}
					addrs = append(addrs, f)
				}
				all = append(all, want{bb.Timestamp().Unix(), v.EndTime().Unix(), tx.ID().String(), addrs})
			}
		}
		genesisEnd := int64(0)
		for _, v := range currentValidators(t, s.p, constants.PrimaryNetworkID.String()).Validators {
			if inBlock[v.TxID] {
				continue
			}
			start, _ := strconv.ParseInt(v.StartTime, 10, 64)
			all = append(all, want{time: start, end: 1 << 62, txID: v.TxID, addrs: v.RewardOwner.Addresses})
			genesisEnd = max(genesisEnd, start)
		}
		sort.Slice(all, func(i, j int) bool {
			if all[i].time != all[j].time {
				return all[i].time < all[j].time
			}
			return all[i].txID < all[j].txID
		})
		if len(all) < 4 {
			t.Fatalf("%d recorded validator txs", len(all))
		}
		lastEnd := int64(0)
		for _, w := range all {
			if w.end < 1<<62 {
				lastEnd = max(lastEnd, w.end)
			}
		}
		base := "/v2/subnets/" + constants.PrimaryNetworkID.String() + "/validators:getAddresses"
		for _, c := range []struct {
			query string
			keep  func(w want) bool
		}{
			{"", func(want) bool { return true }},
			{"?startTimestamp=" + fmt.Sprint(lastEnd+1), func(w want) bool { return w.end > lastEnd }},
			{"?endTimestamp=" + fmt.Sprint(genesisEnd), func(w want) bool { return w.time <= genesisEnd }},
		} {
			var exp []metrics.PChainAddressDetails
			for _, w := range all {
				if c.keep(w) {
					exp = append(exp, metrics.PChainAddressDetails{Addresses: w.addrs, SortKey: fmt.Sprint(w.time)})
				}
			}
			// One page, and pages of one.
			for _, size := range []int{1000, 1} {
				var got []metrics.PChainAddressDetails
				path := base + c.query
				sep := "?"
				if c.query != "" {
					sep = "&"
				}
				path += sep + "pageSize=" + fmt.Sprint(size)
				for page := 0; page < 20; page++ {
					var r metrics.AddressesResponse
					s.getOK(t, path, &r)
					got = append(got, r.Addresses...)
					if r.NextPageToken == "" {
						break
					}
					path = base + "?pageToken=" + r.NextPageToken
				}
				if !slices.EqualFunc(got, exp, func(a, b metrics.PChainAddressDetails) bool {
					return a.SortKey == b.SortKey && slices.Equal(a.Addresses, b.Addresses)
				}) {
					t.Errorf("%s pageSize %d:\n got %v\nwant %v", c.query, size, got, exp)
				}
			}
		}
	})
}
