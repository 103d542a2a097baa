package primary

import (
	"context"
	"math/big"
	"testing"

	"github.com/ava-labs/avalanchego/utils/constants"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// The network's active stake is read once per P-chain tip (tipSums): at the
// same tip the kept sums are the query's, and at a new tip, after the
// active set changed, they are recomputed (checked against the stakers'
// rows summed here).
func TestActiveSumsFollowTheTip(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		seedRewardOwners(t, db, 3000, 300)
		want := func(tipTime int64) stakeSums {
			rows, err := db.QueryContext(ctx, `SELECT kind, stake_amount, potential_reward FROM p_stakers
				WHERE subnet_id = $1 AND removed_height < 0 AND start_time <= $2`, constants.PrimaryNetworkID.String(), tipTime)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			s := stakeSums{vStake: new(big.Int), dStake: new(big.Int), reward: new(big.Int)}
			for rows.Next() {
				var kind, stake, reward string
				if err := rows.Scan(&kind, &stake, &reward); err != nil {
					t.Fatal(err)
				}
				st, _ := new(big.Int).SetString(unpad(stake), 10)
				r, _ := new(big.Int).SetString(unpad(reward), 10)
				s.reward.Add(s.reward, r)
				if kind == "VALIDATOR" {
					s.vCount++
					s.vStake.Add(s.vStake, st)
				} else {
					s.dCount++
					s.dStake.Add(s.dStake, st)
				}
			}
			return s
		}
		same := func(got *stakeSums, w stakeSums) bool {
			return got.vCount == w.vCount && got.dCount == w.dCount && got.vStake.Cmp(w.vStake) == 0 &&
				got.dStake.Cmp(w.dStake) == 0 && got.reward.Cmp(w.reward) == 0
		}
		h := &handlers{d: Deps{DB: db}}
		for i, c := range []struct {
			height, time int64
			change       string // applied before the request
		}{
			{10, 2000, ""},
			{10, 2000, ""}, // the kept sums
			{11, 2000, `UPDATE p_stakers SET removed_height = 11 WHERE tx_id IN ('tx00010', 'tx00011')`},
			{12, 2500, ""}, // later stakers start
		} {
			if c.change != "" {
				if _, err := db.ExecContext(ctx, c.change); err != nil {
					t.Fatal(err)
				}
			}
			got, err := h.activeSums(ctx, c.height, c.time)
			if err != nil {
				t.Fatal(err)
			}
			if w := want(c.time); !same(got, w) || w.vCount == 0 || w.dCount == 0 {
				t.Errorf("request %d (tip %d at %d): %d validators staking %s, %d delegators staking %s, rewards %s; the rows: %+v",
					i, c.height, c.time, got.vCount, got.vStake, got.dCount, got.dStake, got.reward, w)
			}
		}
	})
}
