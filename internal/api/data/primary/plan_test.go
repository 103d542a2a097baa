package primary

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"strings"
	"testing"

	avagenesis "github.com/ava-labs/avalanchego/genesis"
	"github.com/ava-labs/avalanchego/utils/constants"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// plan explains q on db: SQLite's query plan, or PostgreSQL's with
// sequential scans discouraged (its tables here are empty, which would
// make any plan a sequential scan).
func plan(t *testing.T, db *store.DB, q string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	if db.Dialect() == store.SQLite {
		return storetest.SQLitePlan(t, db, q, args...)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, "EXPLAIN "+q, args...)
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, q)
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// A UTXO page of one address walks an index in the page's order: no sort
// of the address's UTXOs, whatever their number (the 1M-UTXO benchmark).
func TestUTXOQueriesUseIndexes(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		for _, c := range []struct {
			f     utxoFilter
			index string
		}{
			{utxoFilter{byAmount: false}, "utxo_addresses_time"},
			{utxoFilter{byAmount: false, desc: true, after: &utxoCursor{T: 5, ID: "x"}}, "utxo_addresses_time"},
			{utxoFilter{byAmount: true, minAmount: 7}, "utxo_addresses_amount"},
			{utxoFilter{byAmount: true, desc: true, after: &utxoCursor{A: pad(9), ID: "x"}}, "utxo_addresses_amount"},
			{utxoFilter{includeSpent: true}, "utxo_addresses_any_time"},
			{utxoFilter{includeSpent: true, desc: true, after: &utxoCursor{T: 5, ID: "x"}}, "utxo_addresses_any_time"},
			{utxoFilter{includeSpent: true, byAmount: true}, "utxo_addresses_any_amount"},
			// One asset of the address (0015): never its UTXOs of other assets.
			{utxoFilter{assetID: "a"}, "utxo_addresses_x_asset_time"},
			{utxoFilter{assetID: "a", desc: true, after: &utxoCursor{T: 5, ID: "x"}}, "utxo_addresses_x_asset_time"},
			{utxoFilter{assetID: "a", byAmount: true, minAmount: 7}, "utxo_addresses_x_asset_amount"},
			{utxoFilter{assetID: "a", includeSpent: true}, "utxo_addresses_x_asset_any_time"},
			{utxoFilter{assetID: "a", includeSpent: true, byAmount: true, desc: true, after: &utxoCursor{A: pad(9), ID: "x"}},
				"utxo_addresses_x_asset_any_amount"},
		} {
			c.f.chain, c.f.addrs, c.f.limit = "X", []string{"custom1abc"}, 11
			q, args := c.f.sql()
			p := plan(t, db, q, args...)
			index := c.index
			if db.Dialect() == store.Postgres && c.f.assetID != "" {
				index = "utxo_addresses_x_asset_"
			} else if db.Dialect() == store.Postgres {
				// On empty tables PostgreSQL may prefer the index without
				// the spent column (filtering it); either walks in order.
				index = "utxo_addresses_"
			}
			if !strings.Contains(p, index) || strings.Contains(p, "TEMP B-TREE") || strings.Contains(p, "Sort") {
				t.Errorf("%+v: plan does not walk %s in order:\n%s\n%s", c.f, c.index, q, p)
			}
		}
	})
}

// Several addresses are one ordered index walk each, cut at the page size
// and merged: never a sort of all their UTXOs.
func TestUTXOQueriesOfSeveralAddresses(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		for _, f := range []utxoFilter{
			{},
			{byAmount: true, desc: true, after: &utxoCursor{A: pad(9), ID: "x"}},
			{includeSpent: true, after: &utxoCursor{T: 5, ID: "x"}, assetID: "a"},
		} {
			f.chain, f.addrs, f.limit = "X", []string{"custom1abc", "custom1def", "custom1ghi"}, 11
			q, args := f.sql()
			p := plan(t, db, q, args...)
			sorts := strings.Count(p, "USE TEMP B-TREE FOR ORDER BY") + strings.Count(p, "->  Sort ")
			if strings.Count(p, "utxo_addresses_") < 3 || sorts > 0 || strings.HasPrefix(p, "Sort ") {
				t.Errorf("%+v: plan does not merge one index walk per address:\n%s\n%s", f, q, p)
			}
		}
	})
}

// A page of rewards by address walks the address's reward UTXOs in order
// (utxo_addresses_rewards), one walk per address: never the address's other
// UTXOs, however many.
func TestRewardQueriesUseIndexes(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		for _, f := range []rewardFilter{
			{},
			{desc: true, after: &rewardCursor{T: 5, ID: "x"}},
			{nodes: []string{"NodeID-a", "NodeID-b"}, after: &rewardCursor{T: 5, ID: "x"}},
		} {
			for _, addrs := range [][]string{{"custom1abc"}, {"custom1abc", "custom1def", "custom1ghi"}} {
				f.addrs, f.limit = addrs, 11
				q, args := f.sql()
				p := plan(t, db, q, args...)
				sorts := strings.Count(p, "USE TEMP B-TREE FOR ORDER BY") + strings.Count(p, "->  Sort ")
				if strings.Count(p, "utxo_addresses_rewards") < len(addrs) || sorts > 0 || strings.HasPrefix(p, "Sort ") {
					t.Errorf("%+v: plan does not walk utxo_addresses_rewards in order per address:\n%s\n%s", f, q, p)
				}
			}
		}
	})
}

// The balances' UTXOs that utxo_plain_balances does not sum are read
// through the partial index of exactly those rows (0175): never the
// address's other UTXOs, of which a busy address has 100,000s.
func TestBalanceQueriesUseIndexes(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		for _, addrs := range []int{1, 3} {
			args := []any{"P"}
			for i := range addrs {
				args = append(args, fmt.Sprintf("custom1a%d", i))
			}
			q := balanceUTXOsSQL(addrs, false)
			if p := plan(t, db, q, args...); !strings.Contains(p, "utxo_addresses_balance") {
				t.Errorf("%d addresses: plan does not read utxo_addresses_balance:\n%s\n%s", addrs, q, p)
			}
		}
	})
}

// The network details' sums of the active stakers read one covering index
// (0177), a walk per kind: no staker's table row, no sort for the grouping.
func TestNetworkDetailsQueryUsesCoveringIndex(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		p := plan(t, db, activeStakerSums, "11111111111111111111111111111111LpoYY", int64(1700000000))
		want := "USING COVERING INDEX p_stakers_subnet_active"
		if db.Dialect() == store.Postgres {
			want = "Index Only Scan using p_stakers_subnet_active"
		}
		if !strings.Contains(p, want) || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("plan does not read p_stakers_subnet_active alone:\n%s", p)
		}
	})
}

// A page of delegators or pending rewards by reward owner is one walk per
// address of p_staker_reward_owners in key order (0180), cut at the page and
// merged: never the start-time walk of every staker (p_stakers_start) with
// the owner matched on each, nor a sort of the owner's stakes. The stakers
// are many and each owner's few, as at five million UTXOs, with PostgreSQL's
// statistics taken (SQLite's planner has none).
func TestRewardOwnerQueriesUseIndexes(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		seedRewardOwners(t, db, 3000, 300)
		nodes := []string{"NodeID-n1", "NodeID-n2"}
		for _, owners := range [][]string{{"custom1o1"}, {"custom1o1", "custom1o2", "custom1o3"}} {
			for _, c := range []struct {
				name string
				sp   *stakerPage
				has  bool
				desc bool
			}{
				{"delegators", delegatorsPage(db.Dialect(), owners, nil, "", 0), false, true},
				{"active delegators", delegatorsPage(db.Dialect(), owners, nil, "active", 1500), true, false},
				{"pending delegators", delegatorsPage(db.Dialect(), owners, nil, "pending", 1500), false, false},
				{"completed delegators of nodes", delegatorsPage(db.Dialect(), owners, nodes, "completed", 1500), true, true},
				{"pending rewards", pendingRewardsPage(db.Dialect(), owners, nil), true, true},
				{"pending rewards of nodes", pendingRewardsPage(db.Dialect(), owners, nodes), false, false},
			} {
				q := c.sp.sql(c.has, validatorCursor{T: 2000, ID: "x"}, c.desc, 11)
				if p := plan(t, db, q, c.sp.args...); !walksOwners(db.Dialect(), p, len(owners)) {
					t.Errorf("%s, %d owners: plan does not walk p_staker_reward_owners per address:\n%s\n%s",
						c.name, len(owners), q, p)
				}
			}
		}
	})
}

// A page of validators by delegation capacity walks the index of the
// capacity expression (0186) in either order, first page or later, with
// the capacity filters: no sort of every current validator.
func TestCapacityPageUsesIndex(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		for _, c := range []struct {
			vq        validatorQuery
			desc, has bool
		}{
			{validatorQuery{sortBy: "delegationCapacity", needCapacity: true}, false, false},
			{validatorQuery{sortBy: "delegationCapacity", needCapacity: true}, true, true},
			{validatorQuery{sortBy: "delegationCapacity", needCapacity: true, minCap: big.NewInt(1), status: "active", tipTime: 1}, false, true},
		} {
			where, args := c.vq.sql()
			if c.has {
				args = append(args, int64(5), "x")
			}
			hint := db.IndexedBy(context.Background(), "p_validators_capacity")
			q := validatorPageSQL(db.Dialect(), where, sortColumn[c.vq.sortBy], hint, c.desc, c.has, len(args), 10)
			p := plan(t, db, q, args...)
			if !strings.Contains(p, "p_validators_capacity") || strings.Contains(p, "TEMP B-TREE") || strings.Contains(p, "Sort") {
				t.Errorf("%+v: plan does not walk p_validators_capacity:\n%s\n%s", c, q, p)
			}
		}
	})
}

// A page of validators sorted by a column walks that column's partial
// index (p_validators_start, _end, _fee) in order, with no sort of the
// matches. On PostgreSQL the walk is an index-only scan, which tests the
// filters on index entries, and the page's rows are read by id: a nodeIds
// part (LIKE) or a status that few validators match never reads every
// validator's row (x5px: 15,000 rows per page). SQLite tests index
// columns before reading a row in its one walk.
func TestValidatorPageFiltersIndexEntries(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		seedRewardOwners(t, db, 3000, 300)
		if db.Dialect() == store.Postgres {
			// The visibility map an index-only scan relies on, as
			// autovacuum would set it.
			if _, err := db.ExecContext(context.Background(), "VACUUM ANALYZE p_stakers"); err != nil {
				t.Fatal(err)
			}
		}
		walk := "USING INDEX p_validators_"
		if db.Dialect() == store.Postgres {
			walk = "Index Only Scan"
		}
		for _, c := range []struct {
			vq        validatorQuery
			desc, has bool
		}{
			{validatorQuery{sortBy: "blockIndex", nodeParts: []string{"n1"}}, true, false},
			{validatorQuery{sortBy: "blockIndex", nodeParts: []string{"n1", "NodeID-n2"}, status: "completed"}, true, true},
			{validatorQuery{sortBy: "timeRemaining", nodeParts: []string{"n1"}, status: "active", tipTime: 1500}, false, true},
			{validatorQuery{sortBy: "delegationFee", nodeParts: []string{"n1"}, status: "pending", tipTime: 1500}, true, false},
			{validatorQuery{sortBy: "delegationFee", status: "removed", minFee: new(float64)}, false, true},
		} {
			where, args := c.vq.sql()
			if c.has {
				args = append(args, int64(5), "x")
			}
			q := validatorPageSQL(db.Dialect(), where, sortColumn[c.vq.sortBy], "", c.desc, c.has, len(args), 10)
			p := plan(t, db, q, args...)
			if !strings.Contains(p, walk) || !strings.Contains(p, "p_validators_") || strings.Contains(p, "Seq Scan") ||
				strings.Contains(p, "TEMP B-TREE") {
				t.Errorf("%+v: the page's walk reads table rows:\n%s\n%s", c.vq, q, p)
			}
		}
	})
}

// walksOwners tells whether plan p reads p_staker_reward_owners' key once
// per owner and p_stakers only by tx id. SQLite walks each owner's key in
// the page's order; PostgreSQL may instead sort an owner's few stakes
// (bitmap scan), as its statistics say: either reads that owner's rows only.
func walksOwners(d store.Dialect, p string, owners int) bool {
	walk, scan, byID := "SEARCH o USING PRIMARY KEY (address=?", "p_stakers", "p_stakers_1 (tx_id=?)"
	if d == store.Postgres {
		walk, scan, byID = "p_staker_reward_owners_pkey", " on p_stakers ", "p_stakers_pkey on p_stakers "
	}
	if strings.Count(p, walk) < owners || strings.Contains(p, "TEMP B-TREE FOR ORDER BY") {
		return false
	}
	for _, line := range strings.Split(p, "\n") {
		if strings.Contains(line, scan) && !strings.Contains(line, byID) || strings.HasPrefix(line, "SCAN s") {
			return false
		}
	}
	return true
}

// seedRewardOwners writes n primary-network stakers (one validator in 10,
// a third of them removed) whose rewards go to one of owners addresses
// custom1oN, and takes PostgreSQL's statistics.
func seedRewardOwners(t *testing.T, db *store.DB, n, owners int) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	for i := range n {
		id, owner := fmt.Sprintf("tx%05d", i), fmt.Sprintf("custom1o%d", i%owners)
		js := `{"locktime":0,"threshold":1,"addresses":["` + owner + `"]}`
		kind, vOwner, rOwner := "DELEGATOR", "", js
		if i%10 == 0 {
			kind, vOwner, rOwner = "VALIDATOR", js, ""
		}
		removed := int64(-1)
		if i%3 == 0 {
			removed = int64(i)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO p_stakers (tx_id, tx_type, kind, subnet_id, node_id, weight, stake_amount,
			start_time, end_time, validation_reward_owner, reward_owner, potential_reward, accrued_delegatee_reward,
			priority, added_height, added_time, removed_height, reward_amount, delegation_fee_amount)
			VALUES ($1, 'AddPermissionlessDelegatorTx', $2, '11111111111111111111111111111111LpoYY', $3, '1', '1', $4, $5,
			$6, $7, '0', '0', 0, $8, $4, $9, '0', '0')`,
			id, kind, fmt.Sprintf("NodeID-n%d", i%50), int64(i), int64(i+1000), vOwner, rOwner, int64(i), removed); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO p_staker_reward_owners (address, start_time, tx_id) VALUES ($1, $2, $3)`,
			owner, int64(i), id); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if db.Dialect() == store.Postgres {
		if _, err := db.ExecContext(ctx, "ANALYZE"); err != nil {
			t.Fatal(err)
		}
	}
}

// capacitySQL assumes every network's MaxValidatorStake (avalanchego's
// genesis parameters) and is the expression 0186 indexes.
func TestCapacitySQLMatchesIndexAndNetworks(t *testing.T) {
	for _, id := range []uint32{constants.MainnetID, constants.FujiID, constants.LocalID, 1337} {
		if m := avagenesis.GetStakingConfig(id).MaxValidatorStake; m != capacityStake {
			t.Errorf("network %d: MaxValidatorStake %d, capacitySQL assumes %d", id, m, capacityStake)
		}
	}
	body, err := os.ReadFile("../../../store/migrations/0186_validator_capacity.sql")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "("+capacitySQL+", tx_id)") || !strings.Contains(string(body), capacityWhere) {
		t.Error("0186 does not index capacitySQL where capacityWhere")
	}
}
