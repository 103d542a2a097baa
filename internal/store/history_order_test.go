package store_test

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// Migration 0200 (SQLite) clusters the five address-keyed histories by
// block. The test takes a current database back to the tables as 0005 and
// 0060 made them (keyed by address first), writes rows of several chains,
// addresses and blocks, migrates again, and finds the same rows, the tables
// keyed by block first, and each address query answered from the table's
// covering address index.
func TestHistoryBlockOrderMigration(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t, storetest.SQLiteDSN(t))
	body, err := store.MigrationText("0200_history_block_order.sqlite.sql")
	if err != nil {
		t.Fatal(err)
	}
	addr := func(i int) []byte { return []byte(strings.Repeat(string(rune('a'+i%7)), 20)) }
	chain := func(i int) string { return []string{"C", "C", "D"}[i%3] }
	for _, c := range []struct {
		table, oldKey, index, byAddress string
		row                             func(i int) []any // the table's columns in order
	}{
		{"evm_address_txs", "chain_key, address, block_number, tx_index", "evm_address_txs_address",
			"address = $1 ORDER BY block_number DESC, tx_index DESC",
			func(i int) []any { return []any{chain(i), addr(i), i / 3, i % 3} }},
		{"evm_address_internals", "chain_key, address, block_number, tx_index, trace_index", "evm_address_internals_address",
			"address = $1 ORDER BY block_number DESC, tx_index DESC, trace_index DESC",
			func(i int) []any { return []any{chain(i), addr(i), i / 5, i % 5 / 2, i % 2} }},
		{"evm_native_balance_history", "chain_key, address, block_number", "evm_native_balance_history_address",
			"address = $1 AND block_number <= 40 ORDER BY block_number DESC LIMIT 1",
			func(i int) []any { return []any{chain(i), addr(i), i, fmt.Sprint(i * 1000)} }},
		{"evm_token_balance_history", "chain_key, holder, erc_type, token, token_id, block_number", "evm_token_balance_history_holder",
			"holder = $1 AND erc_type = 'ERC-20' AND token = $1 AND token_id = '' AND block_number <= 40 ORDER BY block_number DESC LIMIT 1",
			func(i int) []any {
				return []any{chain(i), addr(i), []string{"ERC-20", "ERC-1155"}[i%2], addr(i / 2), []string{"", "7"}[i%2], i, fmt.Sprint(i)}
			}},
		{"evm_nft_owner_history", "chain_key, token, token_id, block_number", "evm_nft_owner_history_token",
			"token = $1 AND token_id = '3' AND block_number <= 40 ORDER BY block_number DESC LIMIT 1",
			func(i int) []any { return []any{chain(i), addr(i), fmt.Sprint(i % 4), i, addr(i + 1)} }},
	} {
		t.Run(c.table, func(t *testing.T) {
			// Back to the old table: its definition now, keyed by address.
			var def string
			if err := db.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = $1`, c.table).Scan(&def); err != nil {
				t.Fatal(err)
			}
			key := regexp.MustCompile(`PRIMARY KEY \(([^)]*)\)`)
			if m := key.FindStringSubmatch(def); m == nil || !strings.HasPrefix(m[1], "chain_key, block_number") {
				t.Fatalf("%s is not keyed by block first after 0200:\n%s", c.table, def)
			}
			for _, q := range []string{`DROP TABLE ` + c.table, key.ReplaceAllString(def, "PRIMARY KEY ("+c.oldKey+")")} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			const n = 200
			marks := strings.TrimSuffix(strings.Repeat("?, ", len(c.row(0))), ", ")
			for i := range n {
				if _, err := db.ExecContext(ctx, `INSERT INTO `+c.table+` VALUES (`+marks+`)`, c.row(i)...); err != nil {
					t.Fatal(err)
				}
			}
			all := `SELECT * FROM ` + c.table + ` ORDER BY ` + c.oldKey
			before := storetest.Rows(t, db, all)
			if len(before) != n {
				t.Fatalf("%d rows written, want %d", len(before), n)
			}
			// The migration's statements for this table (up to the next
			// table's), as a database migrated before 0200 runs them.
			stmts := body[strings.Index(body, "CREATE TABLE "+c.table+"_by_block"):]
			if end := strings.Index(stmts[1:], "\nCREATE TABLE "); end >= 0 {
				stmts = stmts[:end+1]
			}
			if _, err := db.ExecContext(ctx, stmts); err != nil {
				t.Fatal(err)
			}
			if got := storetest.Rows(t, db, all); !reflect.DeepEqual(got, before) {
				t.Errorf("the rows differ after the migration:\n%v\nwant\n%v", got, before)
			}
			plan := strings.Split(strings.TrimSpace(storetest.SQLitePlan(t, db,
				`SELECT * FROM `+c.table+` WHERE chain_key = 'C' AND `+c.byAddress, addr(3))), "\n")
			if len(plan) != 1 || !strings.HasPrefix(plan[0], "SEARCH "+c.table+" USING COVERING INDEX "+c.index+" (chain_key=? AND ") {
				t.Errorf("the address query's plan is not a seek of %s alone: %q", c.index, plan)
			}
		})
	}
}
