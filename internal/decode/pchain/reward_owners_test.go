package pchain

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// rewardOwners checks p_staker_reward_owners against the owners of the
// p_stakers rows (validation_reward_owner, reward_owner: checked against the
// node's getCurrentValidators in currentValidators): one row per address,
// with the staker's start time. Then refills it with migration 0181 (the
// path of a database indexed before it) and checks it again.
func (c *checker) rewardOwners(t *testing.T) {
	rows, err := c.db.QueryContext(c.ctx, `SELECT tx_id, start_time, validation_reward_owner, reward_owner FROM p_stakers`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for rows.Next() {
		var id, vOwner, rOwner string
		var start int64
		if err := rows.Scan(&id, &start, &vOwner, &rOwner); err != nil {
			t.Fatal(err)
		}
		for _, js := range []string{vOwner, rOwner} {
			if js == "" {
				continue
			}
			var o Owner
			if err := json.Unmarshal([]byte(js), &o); err != nil {
				t.Fatalf("%s: owner %q: %v", id, js, err)
			}
			for _, a := range o.Addresses {
				want[fmt.Sprint(a, " ", start, " ", id)] = true
			}
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("no staker with a reward owner")
	}
	check := func(t *testing.T) {
		rows, err := c.db.QueryContext(c.ctx, `SELECT address, start_time, tx_id FROM p_staker_reward_owners`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		got := map[string]bool{}
		for rows.Next() {
			var a, id string
			var start int64
			if err := rows.Scan(&a, &start, &id); err != nil {
				t.Fatal(err)
			}
			got[fmt.Sprint(a, " ", start, " ", id)] = true
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, want) {
			t.Errorf("p_staker_reward_owners:\n%s\nthe stakers' owners:\n%s", strings.Join(slices.Sorted(maps.Keys(got)), "\n"),
				strings.Join(slices.Sorted(maps.Keys(want)), "\n"))
		}
	}
	t.Run("indexer", check)

	name := "0181_staker_reward_owners_fill.sqlite.sql"
	if c.db.Dialect() == store.Postgres {
		name = "0181_staker_reward_owners_fill.postgres.sql"
	}
	body, err := store.MigrationText(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.db.ExecContext(c.ctx, `DELETE FROM p_staker_reward_owners`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.db.ExecContext(c.ctx, body); err != nil {
		t.Fatalf("migration 0181: %v", err)
	}
	t.Run("migration", check)
}
