// Package balancesums recomputes, for tests, the balance rows the primary
// writer keeps (internal/decode/primary): utxo_plain_balances (0110) and
// utxo_stake_balances (0185), from the UTXO rows they sum.
package balancesums

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Tables are the balance tables and, for each, whether its UTXOs are
// locked stakes (utxos.stake_locked).
var Tables = map[string]bool{"utxo_plain_balances": false, "utxo_stake_balances": true}

// Report compares a balance table with the sums recomputed from the rows.
type Report struct {
	Sums   int // (address, chain, asset) groups of flagged unspent UTXOs
	Kept   int // rows of the table with utxo_count > 0
	Differ int // groups missing from the table or with another sum or count
	Zero   int // rows whose UTXOs all left (utxo_count 0)
	UTXOs  int // UTXOs summed
}

// OK reports whether the table holds exactly the recomputed sums.
func (r Report) OK() bool { return r.Kept == r.Sums && r.Differ == 0 }

// Querier is a *store.DB or a transaction of its writer (*sql.Tx).
type Querier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// Check recomputes table (one of Tables) from the unspent utxo_addresses
// rows flagged plain whose UTXO's stake_locked is the table's.
func Check(ctx context.Context, db Querier, table string) (Report, error) {
	locked, ok := Tables[table]
	if !ok {
		return Report{}, fmt.Errorf("balancesums: %q is no balance table", table)
	}
	sums := `SELECT ua.address, ua.chain_key, ua.asset_id, SUM(CAST(SUBSTR(ua.amount, 1, 10) AS BIGINT)) AS hi,
		SUM(CAST(SUBSTR(ua.amount, 11, 10) AS BIGINT)) AS lo, COUNT(*) AS n
		FROM utxo_addresses ua JOIN utxos u ON u.utxo_id = ua.utxo_id
		WHERE ua.spent = FALSE AND ua.plain = TRUE AND u.stake_locked = $1 GROUP BY ua.address, ua.chain_key, ua.asset_id`
	var r Report
	err := db.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM (`+sums+`) s),
		(SELECT COUNT(*) FROM `+table+` WHERE utxo_count > 0),
		(SELECT COUNT(*) FROM (`+sums+`) s LEFT JOIN `+table+` b
			ON b.address = s.address AND b.chain_key = s.chain_key AND b.asset_id = s.asset_id
			WHERE b.address IS NULL OR b.amount_hi <> s.hi OR b.amount_lo <> s.lo OR b.utxo_count <> s.n),
		(SELECT COUNT(*) FROM `+table+` WHERE utxo_count = 0),
		(SELECT COALESCE(SUM(n), 0) FROM (`+sums+`) s)`, locked).Scan(&r.Sums, &r.Kept, &r.Differ, &r.Zero, &r.UTXOs)
	if err != nil {
		return Report{}, fmt.Errorf("balancesums: %s: %w", table, err)
	}
	return r, nil
}

// Unfill takes a database back to before 0185: no locked stake flagged
// plain, no stake sums (what the balances read then from each UTXO).
var Unfill = []string{
	`UPDATE utxo_addresses SET plain = FALSE WHERE utxo_id IN (SELECT utxo_id FROM utxos WHERE stake_locked = TRUE)`,
	`DELETE FROM utxo_stake_balances`,
}

// Fill returns the statements of 0185_utxo_stake_balances.sql (under the
// module root) that fill an older database: its UPDATE and INSERT.
func Fill(root string) ([]string, error) {
	body, err := os.ReadFile(filepath.Join(root, "internal", "store", "migrations", "0185_utxo_stake_balances.sql"))
	if err != nil {
		return nil, fmt.Errorf("balancesums: %w", err)
	}
	var out []string
	for _, stmt := range strings.SplitAfter(string(body), ";\n") {
		var lines []string
		for _, l := range strings.Split(stmt, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "--") {
				lines = append(lines, l)
			}
		}
		if q := strings.TrimSpace(strings.Join(lines, "\n")); strings.HasPrefix(q, "UPDATE") || strings.HasPrefix(q, "INSERT") {
			out = append(out, q)
		}
	}
	if len(out) != 2 {
		return nil, fmt.Errorf("balancesums: 0185 has %d fill statements, want 2", len(out))
	}
	return out, nil
}
