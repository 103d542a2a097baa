package apibench

import (
	"context"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"testing"

	avagenesis "github.com/ava-labs/avalanchego/genesis"
	"github.com/ava-labs/avalanchego/utils/constants"
)

// TestValidatorCapacityOrder: /validators?sortBy=delegationCapacity, paged
// both ways, lists the current primary validators of the generated
// network (validators with delegations) in the order of their capacity as
// avalanchego bounds a delegation, recomputed here from each validator's
// stake and its current delegators' stakes: min(MaxValidatorStake, 5 x
// own) - own - delegated, at least 0; and min/maxDelegationCapacity cut
// that list. On each backend.
func TestValidatorCapacityOrder(t *testing.T) {
	ctx := context.Background()
	_, dbs := smokeOnBothBackends(t)
	maxStake := new(big.Int).SetUint64(avagenesis.GetStakingConfig(networkID).MaxValidatorStake)
	for name, db := range dbs {
		t.Run(name, func(t *testing.T) {
			// The recomputation: each validator's delegators current at
			// the tip, summed from their own rows.
			type want struct {
				id  string
				cap *big.Int
			}
			var all []want
			rows, err := db.QueryContext(ctx, `SELECT v.tx_id, v.weight, d.stake_amount FROM p_stakers v
				LEFT JOIN p_stakers d ON d.validator_tx_id = v.tx_id AND d.kind = 'DELEGATOR' AND d.removed_height < 0 AND d.current_height >= 0
				WHERE v.kind = 'VALIDATOR' AND v.removed_height < 0 AND v.subnet_id = $1 ORDER BY v.tx_id`, constants.PrimaryNetworkID.String())
			if err != nil {
				t.Fatal(err)
			}
			delegated := map[string]*big.Int{}
			own := map[string]*big.Int{}
			for rows.Next() {
				var id, w string
				var d *string
				if err := rows.Scan(&id, &w, &d); err != nil {
					t.Fatal(err)
				}
				if own[id] == nil {
					own[id], _ = new(big.Int).SetString(w, 10)
					delegated[id] = new(big.Int)
				}
				if d != nil {
					v, _ := new(big.Int).SetString(*d, 10)
					delegated[id].Add(delegated[id], v)
				}
			}
			rows.Close()
			withDelegations := 0
			for id, w := range own {
				limit := new(big.Int).Mul(w, big.NewInt(5)) // --stake-max-validator-weight-factor
				if limit.Cmp(maxStake) > 0 {
					limit.Set(maxStake)
				}
				c := limit.Sub(limit, w)
				c.Sub(c, delegated[id])
				if c.Sign() < 0 {
					c.SetInt64(0)
				}
				if delegated[id].Sign() > 0 {
					withDelegations++
				}
				all = append(all, want{id, c})
			}
			sort.Slice(all, func(i, j int) bool {
				if c := all[i].cap.Cmp(all[j].cap); c != 0 {
					return c < 0
				}
				return all[i].id < all[j].id
			})
			if len(all) < 5 || withDelegations == 0 {
				t.Fatalf("%d current validators, %d with delegations", len(all), withDelegations)
			}
			base, stop := serveFor(t, db)
			defer stop()
			list := func(v url.Values) []string {
				t.Helper()
				v.Set("pageSize", "3")
				var ids []string
				for page := 0; page < 1000; page++ {
					resp, err := http.Get(base + "/v1/networks/" + networkName + "/validators?" + v.Encode())
					if err != nil {
						t.Fatal(err)
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("%v: %d %s", v, resp.StatusCode, body)
					}
					var out struct {
						Validators []struct {
							TxHash string `json:"txHash"`
						} `json:"validators"`
						NextPageToken string `json:"nextPageToken"`
					}
					if err := json.Unmarshal(body, &out); err != nil {
						t.Fatal(err)
					}
					for _, x := range out.Validators {
						ids = append(ids, x.TxHash)
					}
					if out.NextPageToken == "" {
						return ids
					}
					v.Set("pageToken", out.NextPageToken)
				}
				t.Fatalf("%v: over 1000 pages", v)
				return nil
			}
			var asc []string
			for _, w := range all {
				asc = append(asc, w.id)
			}
			desc := slices.Clone(asc)
			slices.Reverse(desc)
			mid := all[len(all)/2].cap
			var from []string
			for _, w := range all {
				if w.cap.Cmp(mid) >= 0 {
					from = append(from, w.id)
				}
			}
			for _, c := range []struct {
				q    url.Values
				want []string
			}{
				{url.Values{"sortBy": {"delegationCapacity"}, "sortOrder": {"asc"}}, asc},
				{url.Values{"sortBy": {"delegationCapacity"}, "sortOrder": {"desc"}}, desc},
				{url.Values{"sortBy": {"delegationCapacity"}, "sortOrder": {"asc"}, "minDelegationCapacity": {mid.String()}}, from},
				{url.Values{"sortBy": {"delegationCapacity"}, "sortOrder": {"asc"}, "maxDelegationCapacity": {mid.String()},
					"minDelegationCapacity": {mid.String()}}, nil},
			} {
				got := list(c.q)
				if c.want == nil { // exactly mid
					for _, w := range all {
						if w.cap.Cmp(mid) == 0 {
							c.want = append(c.want, w.id)
						}
					}
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("%v: %d validators\n%v\nwant %d\n%v", c.q, len(got), got, len(c.want), c.want)
				}
			}
		})
	}
}
