package metrics

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/ingest"
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
		// evm_token_balance_buckets, kept by the indexer batch after batch,
		// equals migration 0190's fill from the history.
		spans := storetest.Rows(t, db, `SELECT token, erc_type, bucket, holder, first_block, entering, last_block, last_balance, hi
			FROM evm_token_balance_buckets WHERE chain_key = 'C'`)
		if buckets := storetest.Rows(t, db, `SELECT DISTINCT bucket FROM evm_token_balance_buckets`); len(spans) < 500 || len(buckets) < 20 {
			t.Errorf("%d bucket rows in %d buckets: the test proves little", len(spans), len(buckets))
		}
		body, err = os.ReadFile("../store/migrations/0190_token_balance_buckets_rows.sql")
		if err != nil {
			t.Fatal(err)
		}
		fill = strings.ReplaceAll(strings.TrimSuffix(strings.TrimSpace(string(body)), ";"), "4096", fmt.Sprint(1<<testBucketBits))
		if _, err := db.ExecContext(ctx, `DELETE FROM evm_token_balance_buckets`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, fill); err != nil {
			t.Fatal(err)
		}
		if got := storetest.Rows(t, db, `SELECT token, erc_type, bucket, holder, first_block, entering, last_block, last_balance, hi
			FROM evm_token_balance_buckets WHERE chain_key = 'C'`); !reflect.DeepEqual(got, spans) {
			t.Errorf("migration 0190's evm_token_balance_buckets (%d rows) differs from the indexer's (%d rows)", len(got), len(spans))
		}

		var tokens, types []string
		for _, tok := range holderTokens(t, db) {
			tokens, types = append(tokens, tok[0]), append(types, tok[1])
		}
		partial := 0 // cases where some holders are in and some out
		resumes := 0 // pages that went on from the previous page's walk
		for i, token := range tokens {
			holders := len(o.HeldAbove(token, big.NewInt(0), -1, tip))
			for _, thr := range []string{"1", "2", "1000000", "1000000000000000000", "1000000000000000000000"} {
				threshold, _ := new(big.Int).SetString(thr, 10)
				for _, r := range [][2]int64{{-1, tip}, {-1, 150}, {40, tip}, {120, 260}, {300, 301}, {200, 200}, {0, 1}} {
					w := o.HeldAbove(token, threshold, r[0], r[1])
					// Pages of 3 and all at once: the walk by largest
					// balance stops early and resumes after a holder, each
					// page from the start or from where the previous
					// page's walk stopped (HeldResume).
					for _, n := range []int{3, 5000} {
						for _, resume := range []bool{false, true} {
							got, resumed := pageHeld(t, db, token, types[i], threshold, r, n, resume)
							checkHeld(t, fmt.Sprintf("%s %s >= %s over %v, pages of %d, resumed %v", types[i], token, thr, r, n, resume), got, w)
							resumes += resumed
						}
					}
					if len(w) > 0 && len(w) < holders {
						partial++
					}
				}
			}
		}
		if resumes < 100 {
			t.Errorf("%d pages went on from the previous page's walk: the test proves little", resumes)
		}
		// The balances after a past block the walk knows without a seek
		// (every holder's: threshold 0) are the replay's, many of them from
		// the bucket rows.
		fromBuckets := 0
		for i, token := range tokens {
			for end := int64(0); end < tip; end += 5 {
				want := o.HeldAbove(token, big.NewInt(-1), -1, end)
				q := heldQuery(token, types[i], big.NewInt(0), [2]int64{-1, end})
				walk, err := readCandidates(ctx, db, q, "0")
				if err != nil {
					t.Fatal(err)
				}
				if err := boundAtEnd(ctx, db, q, walk); err != nil {
					t.Fatal(err)
				}
				for _, c := range walk {
					if !c.exact {
						continue
					}
					if c.changed > end {
						fromBuckets++
					}
					if c.bound != want[c.addr] {
						t.Errorf("%s %s after %d: %s walks with %q (last change %d), want %q", types[i], token, end, c.addr, c.bound, c.changed, want[c.addr])
					}
				}
			}
		}
		if fromBuckets < 5000 {
			t.Errorf("%d balances after a past block came from the bucket rows: the test proves little", fromBuckets)
		}
		if len(tokens) < 3 || partial < 20 {
			t.Fatalf("%d tokens, %d cases with some holders in and some out: the test proves little", len(tokens), partial)
		}
	})
}

// TestHeldAboveResumeAfterNewBlocks pages holders over ranges ending before
// the tip while more blocks are indexed between the pages: the next pages
// go on from the first page's walk (HeldResume) although holders' largest
// balances grew and new holders appeared, and the pages together equal the
// replay of the blocks' Transfer logs.
func TestHeldAboveResumeAfterNewBlocks(t *testing.T) {
	g, blocks := generatedSpanning(11)
	o := oracleOf(t, blocks)
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ix := newEVMRollup(t, g, time.Unix(1_800_000_000, 0))
		type paging struct {
			what       string
			token, typ string
			threshold  *big.Int
			r          [2]int64
			n          int
			after      *HeldBalance
			walk       *HeldResume
			got        []HeldBalance
			want       map[string]string
		}
		// next reads p's next page; done when there is none.
		next := func(p *paging) (done bool) {
			page, walk, more, err := HeldAbove(ctx, db, heldQuery(p.token, p.typ, p.threshold, p.r), p.after, p.walk, p.n)
			if err != nil {
				t.Fatal(err)
			}
			p.got = append(p.got, page...)
			if !more {
				return true
			}
			p.after, p.walk = &page[len(page)-1], walk
			return false
		}
		var open []*paging
		resumed := 0
		for _, part := range []struct {
			blocks []ingest.RawBlock
			ranges [][2]int64 // each ends before the part's last block
		}{
			{blocks[:150], [][2]int64{{-1, 30}, {-1, 60}, {20, 100}, {-1, 140}}},
			{blocks[150:300], [][2]int64{{-1, 160}, {-1, 200}, {100, 210}, {230, 260}}},
			{blocks[300:], nil},
		} {
			applyBlocks(t, db, ix, part.blocks, 7, 3)
			// The pagings begun before these blocks go on to their end.
			for _, p := range open {
				if p.walk != nil {
					resumed++
				}
				for !next(p) {
				}
				checkHeld(t, p.what, p.got, p.want)
			}
			open = nil
			// New ones read their first page now, the rest after the next part.
			for _, token := range holderTokens(t, db) {
				for _, thr := range []string{"1", "1000000000000000000"} {
					threshold, _ := new(big.Int).SetString(thr, 10)
					for _, r := range part.ranges {
						for _, n := range []int{1, 2} {
							p := &paging{what: fmt.Sprintf("%s %s >= %s over %v, pages of %d", token[1], token[0], thr, r, n), token: token[0], typ: token[1],
								threshold: threshold, r: r, n: n, want: o.HeldAbove(token[0], threshold, r[0], r[1])}
							if next(p) {
								checkHeld(t, p.what, p.got, p.want)
							} else {
								open = append(open, p)
							}
						}
					}
				}
			}
		}
		if resumed < 10 {
			t.Fatalf("%d pagings went on from a walk made before new blocks: the test proves little", resumed)
		}
	})
}

// heldQuery is HeldAbove's question on the test chain "C" (testBucketBits).
func heldQuery(token, typ string, threshold *big.Int, r [2]int64) HeldQuery {
	return HeldQuery{Chain: "C", Token: token, ErcType: typ, Threshold: threshold, Start: r[0], End: r[1], BucketBits: testBucketBits}
}

// holderTokens is the ERC-20 and ERC-721 tokens with balances: address, type.
func holderTokens(t *testing.T, db *store.DB) [][2]string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT DISTINCT token, erc_type FROM evm_token_balances WHERE chain_key = 'C' AND erc_type IN ('ERC-20', 'ERC-721')`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var tok, typ string
		if err := rows.Scan(store.ScanHex(&tok), &typ); err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]string{tok, typ})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// pageHeld reads every page of the holders of token >= threshold over r,
// n a page, each page going on from the previous page's walk when resume;
// resumed counts the pages that did.
func pageHeld(t *testing.T, db *store.DB, token, typ string, threshold *big.Int, r [2]int64, n int, resume bool) (got []HeldBalance, resumed int) {
	t.Helper()
	var after *HeldBalance
	var walk *HeldResume
	for pages := 0; ; pages++ {
		if pages > 10_000 {
			t.Fatal("pages without end")
		}
		if walk != nil {
			resumed++
		}
		page, next, more, err := HeldAbove(context.Background(), db, heldQuery(token, typ, threshold, r), after, walk, n)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		if !more {
			return got, resumed
		}
		after = &page[len(page)-1]
		if resume {
			walk = next
		}
	}
}

// checkHeld compares pages of holders with the oracle's answer: the same
// holders and balances, in the route's order (balance descending, then
// address).
func checkHeld(t *testing.T, what string, got []HeldBalance, want map[string]string) {
	t.Helper()
	gotMap := map[string]string{}
	for j, h := range got {
		gotMap[h.Address] = h.Balance.String()
		if j == 0 {
			continue
		}
		if c := got[j-1].Balance.Cmp(h.Balance); c < 0 || c == 0 && got[j-1].Address >= h.Address {
			t.Errorf("%s: not ordered by balance, then address", what)
		}
	}
	if !reflect.DeepEqual(gotMap, want) || len(got) != len(want) {
		t.Errorf("%s: %d holders, want %d", what, len(got), len(want))
	}
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

// A next page takes a candidate as decided by the previous page's walk when
// it is kept, or came before the walk's stop and has not changed since; a
// candidate whose bound grew after the walk (so that it now comes before the
// stop) or that is new is walked again. A walk of another range, page size
// or bucket size is not resumed.
func TestHeldResumeCovers(t *testing.T) {
	r := &HeldResume{Start: -1, End: 10, Size: 3, Bits: 12, Changed: 500, Bound: "1000", Addr: "0x20", Undecided: []held{{Addr: "0x99", Bal: "5"}}}
	all := &HeldResume{Start: -1, End: 10, Size: 3, Bits: 12, Changed: 500, All: true}
	q := HeldQuery{Start: -1, End: 10, BucketBits: 12}
	for _, tc := range []struct {
		r    *HeldResume
		c    candidate
		want bool
	}{
		{r, candidate{addr: "0x10", changed: 400, bound: "2000"}, true},  // larger bound
		{r, candidate{addr: "0x10", changed: 500, bound: "1000"}, true},  // same bound, address before
		{r, candidate{addr: "0x20", changed: 400, bound: "1000"}, false}, // the stop
		{r, candidate{addr: "0x30", changed: 400, bound: "1000"}, false}, // after it
		{r, candidate{addr: "0x10", changed: 400, bound: "999"}, false},  // smaller bound
		{r, candidate{addr: "0x10", changed: 501, bound: "2000"}, false}, // changed since: its bound may have grown
		{r, candidate{addr: "0x99", changed: 900, bound: "1"}, true},     // kept
		{all, candidate{addr: "0x10", changed: 500, bound: "1"}, true},
		{all, candidate{addr: "0x10", changed: 501, bound: "1"}, false},
	} {
		w := tc.r.walked(q, 3, &HeldBalance{})
		if got := w.covers(&tc.c); got != tc.want {
			t.Errorf("%+v: covered %v, want %v", tc.c, got, tc.want)
		}
	}
	if w := r.walked(q, 3, nil); w.covers(&candidate{addr: "0x10", changed: 400, bound: "2000"}) {
		t.Error("a first page went on from a walk")
	}
	for _, other := range [][4]int64{{0, 10, 3, 12}, {-1, 11, 3, 12}, {-1, 10, 4, 12}, {-1, 10, 3, 4}} {
		oq := HeldQuery{Start: other[0], End: other[1], BucketBits: int(other[3])}
		if w := r.walked(oq, int(other[2]), &HeldBalance{}); w != nil {
			t.Errorf("range, size and bucket size %v went on from a walk of (-1, 10, 3, 12)", other)
		}
	}
}

// On SQLite a page's candidates are read from the token index alone
// (0198), with or without the hint: no descent of the balances' primary key
// a holder.
func TestCandidatesReadTokenIndexAlone(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t, storetest.SQLiteDSN(t))
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	args := []any{"C", store.Hex("0x45f353b4b83db50bedd3bf99d42bde6363fd6212"), "ERC-20", 1, "1"}
	for _, q := range []string{candidatesQuery(ctx, db), strings.Replace(candidatesQuery(ctx, db), " INDEXED BY evm_token_balances_token", "", 1)} {
		plan := storetest.SQLitePlan(t, db, q, args...)
		if !strings.Contains(plan, "USING COVERING INDEX evm_token_balances_token") {
			t.Errorf("plan does not read evm_token_balances_token alone:\n%s\n%s", plan, q)
		}
	}
}
