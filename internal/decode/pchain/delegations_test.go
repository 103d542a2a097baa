package pchain

import (
	"math/big"
	"os"
	"strings"
	"testing"
)

// delegationTotals are a validator's delegation sums (migration 0113).
type delegationTotals struct {
	all, cur            int64
	allAmt, curAmt, fee string
}

// storedDelegations reads the sums the indexer (or the migration) keeps on
// each primary or elastic validator row.
func (c *checker) storedDelegations(t *testing.T) map[string]delegationTotals {
	t.Helper()
	rows, err := c.db.QueryContext(c.ctx, `SELECT tx_id, all_delegators, all_delegated_hi, all_delegated_lo, cur_delegators,
		cur_delegated_hi, cur_delegated_lo, cur_delegatee_hi, cur_delegatee_lo FROM p_stakers WHERE kind = $1`, KindValidator)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	halves := func(hi, lo int64) string {
		v := new(big.Int).Mul(big.NewInt(hi), big.NewInt(1e10))
		return v.Add(v, big.NewInt(lo)).String()
	}
	out := map[string]delegationTotals{}
	for rows.Next() {
		var id string
		var d delegationTotals
		var ah, al, ch, cl, fh, fl int64
		if err := rows.Scan(&id, &d.all, &ah, &al, &d.cur, &ch, &cl, &fh, &fl); err != nil {
			t.Fatal(err)
		}
		d.allAmt, d.curAmt, d.fee = halves(ah, al), halves(ch, cl), halves(fh, fl)
		out[id] = d
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// delegationSums checks the delegation sums kept on the validator rows
// against the delegator rows themselves (count, stake and the validator's
// share of the current ones' potential rewards, with the node's formula of
// reward.Split computed exactly); then recomputes them with migration
// 0113's statements (the path of a database indexed before it) and checks
// that they give the same sums.
func (c *checker) delegationSums(t *testing.T) {
	rows, err := c.db.QueryContext(c.ctx, `SELECT d.validator_tx_id, d.stake_amount, d.potential_reward, d.removed_height,
		d.current_height, v.delegation_shares FROM p_stakers d JOIN p_stakers v ON v.tx_id = d.validator_tx_id WHERE d.kind = $1`,
		KindDelegator)
	if err != nil {
		t.Fatal(err)
	}
	type sums struct {
		all, cur            int64
		allAmt, curAmt, fee *big.Int
	}
	want := map[string]*sums{}
	var ended int
	for rows.Next() {
		var v, amount, potential string
		var removed, current, shares int64
		if err := rows.Scan(&v, &amount, &potential, &removed, &current, &shares); err != nil {
			t.Fatal(err)
		}
		s := want[v]
		if s == nil {
			s = &sums{allAmt: new(big.Int), curAmt: new(big.Int), fee: new(big.Int)}
			want[v] = s
		}
		a, _ := new(big.Int).SetString(amount, 10)
		p, _ := new(big.Int).SetString(potential, 10)
		s.all++
		s.allAmt.Add(s.allAmt, a)
		if removed >= 0 {
			ended++
			continue
		}
		if current < 0 {
			continue
		}
		s.cur++
		s.curAmt.Add(s.curAmt, a)
		rest := new(big.Int).Mul(p, big.NewInt(1_000_000-shares))
		rest.Quo(rest, big.NewInt(1_000_000))
		s.fee.Add(s.fee, rest.Sub(p, rest))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 || ended == 0 {
		t.Fatalf("devnet-a: %d validators with delegators, %d delegators ended: the check would test nothing", len(want), ended)
	}
	check := func(t *testing.T) {
		got := c.storedDelegations(t)
		for id, g := range got {
			w := want[id]
			if w == nil {
				w = &sums{allAmt: new(big.Int), curAmt: new(big.Int), fee: new(big.Int)}
			}
			if g.all != w.all || g.allAmt != w.allAmt.String() || g.cur != w.cur || g.curAmt != w.curAmt.String() ||
				g.fee != w.fee.String() {
				t.Errorf("validator %s: stored %+v, delegator rows all %d/%s current %d/%s fee %s", id, g, w.all, w.allAmt,
					w.cur, w.curAmt, w.fee)
			}
		}
	}
	t.Run("indexer", check)

	// An older database: the migration's statements over zeroed sums.
	body, err := os.ReadFile("../../store/migrations/0113_validator_delegations.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.db.ExecContext(c.ctx, `UPDATE p_stakers SET all_delegators = 0, all_delegated_hi = 0, all_delegated_lo = 0,
		cur_delegators = 0, cur_delegated_hi = 0, cur_delegated_lo = 0, cur_delegatee_hi = 0, cur_delegatee_lo = 0`); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range strings.Split(string(body), ";\n") {
		if i := strings.Index(stmt, "UPDATE p_stakers"); i >= 0 {
			if _, err := c.db.ExecContext(c.ctx, stmt[i:]); err != nil {
				t.Fatalf("migration 0113 backfill: %v", err)
			}
		}
	}
	t.Run("migration", check)
}
