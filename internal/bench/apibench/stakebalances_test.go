package apibench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testing/balancesums"
)

// TestStakeBalances: on the generated primary network (stakers added and
// rewarded, so stakes locked and unlocked), on each backend,
//   - the balance rows the writer kept equal the sums recomputed from the
//     UTXO rows (locked stakes summed, rewarded ones moved to the plain sums);
//   - P-chain balances of the stakers' addresses are the same with the
//     stake sums and without them (the database as before 0185: every
//     locked stake read from its UTXO row);
//   - 0185's fill of that older database flags and sums the same stakes.
func TestStakeBalances(t *testing.T) {
	ctx := context.Background()
	fill, err := balancesums.Fill(devnet.Root(t))
	if err != nil {
		t.Fatal(err)
	}
	m, dbs := smokeOnBothBackends(t)
	for name, db := range dbs {
		t.Run(name, func(t *testing.T) {
			checkSums := func(stage string) {
				t.Helper()
				for table, locked := range balancesums.Tables {
					r, err := balancesums.Check(ctx, db, table)
					if err != nil {
						t.Fatal(err)
					}
					// Rewarded stakers' stakes left the stake sums (rows
					// at zero), except in a freshly filled table.
					if !r.OK() || r.Sums == 0 || (locked && stage == "kept" && r.Zero == 0) {
						t.Errorf("%s: %s: %+v", stage, table, r)
					}
				}
			}
			checkSums("kept")
			kept := storetest.Rows(t, db, `SELECT * FROM utxo_stake_balances WHERE utxo_count > 0`)
			// Stakers' addresses (locked stakes summed, and returned ones)
			// and the busiest ones.
			var addrs []string
			if err := sampleStrings(ctx, db, `SELECT DISTINCT address FROM utxo_addresses ua JOIN utxos u ON u.utxo_id = ua.utxo_id
				WHERE u.utxo_type = 'STAKE' ORDER BY address LIMIT 40`, &addrs); err != nil {
				t.Fatal(err)
			}
			addrs = append(addrs, m.PHotAddresses...)
			balances := func() map[string]string {
				t.Helper()
				base, stop := serveFor(t, db)
				defer stop()
				out := map[string]string{}
				for i, a := range addrs {
					q := a
					if i > 0 && i%7 == 0 {
						q += "," + addrs[i-1] // two addresses, one of them a staker's
					}
					resp, err := http.Get(base + "/v1/networks/" + networkName + "/blockchains/p-chain/balances?addresses=" + url.QueryEscape(q))
					if err != nil {
						t.Fatal(err)
					}
					body, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != http.StatusOK {
						t.Fatalf("%s: %d %s %v", q, resp.StatusCode, body, err)
					}
					out[q] = string(body)
				}
				return out
			}
			with := balances()
			staked := 0
			for _, b := range with {
				if !strings.Contains(b, `"unlockedStaked":[]`) {
					staked++
				}
			}
			if staked == 0 {
				t.Fatalf("no address with unlockedStaked of %d", len(with))
			}
			exec := func(qs []string) {
				t.Helper()
				for _, q := range qs {
					if _, err := db.ExecContext(ctx, q); err != nil {
						t.Fatalf("%v\n%s", err, q)
					}
				}
			}
			exec(balancesums.Unfill)
			compare := func(stage string, got map[string]string) {
				t.Helper()
				for q, b := range with {
					if got[q] != b {
						t.Errorf("%s: %s:\n%s\nwith the stake sums:\n%s", stage, q, got[q], b)
					}
				}
			}
			compare("each stake read", balances())
			exec(fill)
			checkSums("filled")
			if got := storetest.Rows(t, db, `SELECT * FROM utxo_stake_balances WHERE utxo_count > 0`); fmt.Sprint(got) != fmt.Sprint(kept) {
				t.Errorf("0185's fill: %d rows, the writer's %d:\n%v\n%v", len(got), len(kept), got, kept)
			}
			compare("filled", balances())
		})
	}
}

// smokeOnBothBackends generates the smoke dataset into the test's temporary
// directory (SQLite) and copies it into a throwaway PostgreSQL cluster
// (skipped with -short).
func smokeOnBothBackends(t *testing.T) (*Manifest, map[string]*store.DB) {
	t.Helper()
	if testing.Short() {
		t.Skip("generates a small dataset")
	}
	ctx := context.Background()
	cache := &Cache{Dir: t.TempDir(), Log: slog.New(slog.DiscardHandler)}
	src, err := cache.OpenSQLite(ctx, SmokeConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	pg := storetest.Open(t, storetest.PostgresDSN(t))
	if err := copyDatabase(ctx, src.DB, pg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	return src.Manifest, map[string]*store.DB{"sqlite": src.DB, "postgres": pg}
}

// serveFor serves db (Serve) until stop, which waits for the server to end.
func serveFor(tb testing.TB, db *store.DB) (base string, stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	base, done, err := Serve(ctx, db, nil)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	return base, func() { cancel(); <-done }
}
