package metrics

import (
	"context"
	"math/big"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// Over months of generated ERC-20 and ERC-721 traffic written in uneven
// batches, the holders above a threshold over a range, with their balance at
// its end, equal the replay of the blocks' Transfer logs
// (chainmetrics.Oracle.HeldAbove), for ranges with and without a start or an
// end before the tip; evm_token_balances.max_balance, kept per batch by the
// EVM indexer and filled by migration 0122 for an older index, equals the
// largest non-negative balance of each holder's history.
func TestHeldAboveGeneratedChain(t *testing.T) {
	g, blocks := generatedSpanning(7)
	o := oracleOf(t, blocks)
	tip := int64(len(blocks) - 1)
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		applyBlocks(t, db, newEVMRollup(t, g, time.Unix(1_800_000_000, 0)), blocks, 37, 1, 64, 5)
		want := maxFromHistory(t, db)
		if got := maxBalances(t, db); !reflect.DeepEqual(got, want) || len(want) < 50 {
			t.Errorf("max_balance of %d keys differs from the history's (%d keys)", len(got), len(want))
		}
		// The migration's fill from the history gives the same.
		body, err := os.ReadFile("../store/migrations/0122_token_balance_max.sql")
		if err != nil {
			t.Fatal(err)
		}
		fill := string(body[strings.Index(string(body), "UPDATE evm_token_balances"):])
		if _, err := db.ExecContext(ctx, `UPDATE evm_token_balances SET max_balance = 'x'`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, strings.TrimSuffix(strings.TrimSpace(fill), ";")); err != nil {
			t.Fatal(err)
		}
		if got := maxBalances(t, db); !reflect.DeepEqual(got, want) {
			t.Errorf("migration 0122's max_balance differs from the history's")
		}

		rows, err := db.QueryContext(ctx, `SELECT DISTINCT token, erc_type FROM evm_token_balances WHERE chain_key = 'C' AND erc_type IN ('ERC-20', 'ERC-721')`)
		if err != nil {
			t.Fatal(err)
		}
		var tokens, types []string
		for rows.Next() {
			var tok, typ string
			if err := rows.Scan(store.ScanHex(&tok), &typ); err != nil {
				t.Fatal(err)
			}
			tokens, types = append(tokens, tok), append(types, typ)
		}
		rows.Close()
		partial := 0 // cases where some holders are in and some out
		for i, token := range tokens {
			holders := len(o.HeldAbove(token, big.NewInt(0), -1, tip))
			for _, thr := range []string{"1", "2", "1000000", "1000000000000000000", "1000000000000000000000"} {
				threshold, _ := new(big.Int).SetString(thr, 10)
				for _, r := range [][2]int64{{-1, tip}, {-1, 150}, {40, tip}, {120, 260}, {300, 301}, {200, 200}, {0, 1}} {
					w := o.HeldAbove(token, threshold, r[0], r[1])
					// Pages of 3 and all at once: the walk by largest
					// balance stops early and resumes after a holder.
					for _, n := range []int{3, 5000} {
						var got []HeldBalance
						var after *HeldBalance
						for pages := 0; pages <= len(w); pages++ {
							page, more, err := HeldAbove(ctx, db, "C", token, types[i], threshold, r[0], r[1], after, n)
							if err != nil {
								t.Fatal(err)
							}
							got = append(got, page...)
							if !more {
								break
							}
							after = &page[len(page)-1]
						}
						gotMap := map[string]string{}
						for j, h := range got {
							gotMap[h.Address] = h.Balance.String()
							if j == 0 {
								continue
							}
							if c := got[j-1].Balance.Cmp(h.Balance); c < 0 || c == 0 && got[j-1].Address >= h.Address {
								t.Errorf("%s %s %v: not ordered by balance, then address", token, thr, r)
							}
						}
						if !reflect.DeepEqual(gotMap, w) || len(got) != len(w) {
							t.Errorf("%s %s >= %s over %v, pages of %d: %d holders, want %d", types[i], token, thr, r, n, len(got), len(w))
						}
					}
					if len(w) > 0 && len(w) < holders {
						partial++
					}
				}
			}
		}
		if len(tokens) < 3 || partial < 20 {
			t.Fatalf("%d tokens, %d cases with some holders in and some out: the test proves little", len(tokens), partial)
		}
	})
}

// maxBalances reads evm_token_balances.max_balance by key.
func maxBalances(t *testing.T, db *store.DB) map[string]string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT holder, erc_type, token, token_id, max_balance FROM evm_token_balances WHERE chain_key = 'C'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var holder, typ, token, id, m string
		if err := rows.Scan(store.ScanHex(&holder), &typ, store.ScanHex(&token), &id, &m); err != nil {
			t.Fatal(err)
		}
		out[holder+" "+typ+" "+token+" "+id] = m
	}
	return out
}

// maxFromHistory recomputes max_balance from every balance-history row: the
// largest non-negative balance per key (” when none), compared as numbers.
func maxFromHistory(t *testing.T, db *store.DB) map[string]string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT holder, erc_type, token, token_id, balance FROM evm_token_balance_history WHERE chain_key = 'C'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	maxes := map[string]*big.Int{}
	for rows.Next() {
		var holder, typ, token, id, bal string
		if err := rows.Scan(store.ScanHex(&holder), &typ, store.ScanHex(&token), &id, &bal); err != nil {
			t.Fatal(err)
		}
		v, ok := new(big.Int).SetString(bal, 10)
		if !ok {
			t.Fatalf("balance %q", bal)
		}
		k := holder + " " + typ + " " + token + " " + id
		if _, seen := maxes[k]; !seen {
			maxes[k] = nil
		}
		if v.Sign() >= 0 && (maxes[k] == nil || v.Cmp(maxes[k]) > 0) {
			maxes[k] = v
		}
	}
	out := map[string]string{}
	for k, v := range maxes {
		out[k] = ""
		if v != nil {
			out[k] = v.String()
		}
	}
	return out
}
