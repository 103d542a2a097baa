package store_test

import (
	"context"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// TestHexStringLengths compares HexString with encoding/hex on every length
// up to past two of its 32-byte chunks.
func TestHexStringLengths(t *testing.T) {
	b := make([]byte, 80)
	for i := range b {
		b[i] = byte(i*37 + 11)
	}
	for n := 1; n <= len(b); n++ {
		if got, want := store.HexString(b[:n]), "0x"+hex.EncodeToString(b[:n]); got != want {
			t.Fatalf("%d bytes: %s, want %s", n, got, want)
		}
	}
	if got := store.HexString(nil); got != "" {
		t.Fatalf("no bytes: %q", got)
	}
}

func TestHexValue(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []byte
		bad  bool
	}{
		{"", []byte{}, false},
		{"0x", []byte{}, false},
		{"0xAbCd", []byte{0xab, 0xcd}, false},
		{"0X00ff", []byte{0, 0xff}, false},
		{"abcd", nil, true},
		{"0xabc", nil, true},
		{"0xzz", nil, true},
		{"x", nil, true},
	} {
		v, err := store.Hex(c.in).Value()
		if c.bad {
			if err == nil {
				t.Errorf("%q: no error", c.in)
			}
			continue
		}
		b, ok := v.([]byte)
		if err != nil || !ok || string(b) != string(c.want) || b == nil {
			t.Errorf("%q: %#v, %v; want %#v", c.in, v, err, c.want)
		}
	}
	var s string
	for _, c := range []struct {
		src  any
		want string
		bad  bool
	}{
		{[]byte{0xab, 0x01}, "0xab01", false},
		{[]byte{}, "", false},
		{nil, "", false},
		{"", "", false},
		{"0xab", "", true}, // text where bytes are stored
		{int64(1), "", true},
	} {
		s = "unchanged"
		err := store.ScanHex(&s).Scan(c.src)
		if (err != nil) != c.bad || !c.bad && s != c.want {
			t.Errorf("scan %#v: %q, %v; want %q (error %v)", c.src, s, err, c.want, c.bad)
		}
	}
}

// Migration 0020 turns the 0x-hex text of an older database into bytes. The
// test takes a current database back to text (every column the migration
// lists), writes rows as the old indexer did, and migrates again.
func TestBinaryKeysMigration(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Open(t, storetest.DSNFor(t, backend))
			name := "0020_evm_binary_keys.sqlite.sql"
			if db.Dialect() == store.Postgres {
				name = "0020_evm_binary_keys.postgres.sql"
			}
			body, err := store.MigrationText(name)
			if err != nil {
				t.Fatal(err)
			}
			cols := migratedColumns(t, body)
			if len(cols) < 10 {
				t.Fatalf("%d tables found in %s", len(cols), name)
			}
			for table, cs := range cols {
				var sets []string
				for _, c := range cs {
					if db.Dialect() == store.Postgres {
						sets = append(sets, "ALTER COLUMN "+c+" TYPE TEXT USING (CASE WHEN length("+c+") = 0 THEN '' ELSE "+
							db.Dialect().HexExpr(c)+" END)")
					}
				}
				if len(sets) > 0 {
					if _, err := db.ExecContext(ctx, "ALTER TABLE "+table+" "+strings.Join(sets, ", ")); err != nil {
						t.Fatal(err)
					}
				}
			}
			const (
				from = "0x00000000000000000000000000000000000000aa"
				tok  = "0x00000000000000000000000000000000000000bb"
				hash = "0x1111111111111111111111111111111111111111111111111111111111111111"
			)
			for _, q := range []string{
				`INSERT INTO evm_txs (chain_key, block_number, tx_index, hash, block_hash, block_time, from_addr, to_addr, value,
					gas_limit, gas_price, gas_used, nonce, tx_type, status, method_id, input_size, contract_address, log_count)
					VALUES ('C', 1, 0, '` + hash + `', '` + hash + `', 1, '` + from + `', '', '0', 0, '0', 0, 0, 0, 1, '', 0, '` + tok + `', 0)`,
				`INSERT INTO evm_token_balance_history (chain_key, holder, erc_type, token, token_id, block_number, balance)
					VALUES ('C', '` + from + `', 'ERC-20', '` + tok + `', '', 1, '5')`,
			} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := db.ExecContext(ctx, `DELETE FROM schema_migrations WHERE name = $1`, name); err != nil {
				t.Fatal(err)
			}
			if err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}

			var h, f, to, c string
			var n int
			if err := db.QueryRowContext(ctx, `SELECT hash, from_addr, to_addr, contract_address, length(to_addr) FROM evm_txs
				WHERE chain_key = 'C' AND hash = $1 AND from_addr = $2`, store.Hex(hash), store.Hex(from)).
				Scan(store.ScanHex(&h), store.ScanHex(&f), store.ScanHex(&to), store.ScanHex(&c), &n); err != nil {
				t.Fatal(err)
			}
			if h != hash || f != from || to != "" || c != tok || n != 0 {
				t.Errorf("evm_txs after migration: %s %s %q %s (to length %d)", h, f, to, c, n)
			}
			var bal string
			if err := db.QueryRowContext(ctx, `SELECT balance FROM evm_token_balance_history
				WHERE chain_key = 'C' AND holder = $1 AND erc_type = 'ERC-20' AND token = $2 AND token_id = ''`,
				store.Hex(from), store.Hex(tok)).Scan(&bal); err != nil || bal != "5" {
				t.Errorf("balance history after migration: %q, %v", bal, err)
			}
			// Every listed column holds bytes (or nothing) now.
			for table, cs := range cols {
				for _, c := range cs {
					var text int
					q := "SELECT COUNT(*) FROM " + table + " WHERE typeof(" + c + ") <> 'blob'"
					if db.Dialect() == store.Postgres {
						q = "SELECT COUNT(*) FROM information_schema.columns WHERE table_name = '" + table +
							"' AND column_name = '" + c + "' AND data_type <> 'bytea'"
					}
					if err := db.QueryRowContext(ctx, q).Scan(&text); err != nil || text != 0 {
						t.Errorf("%s.%s: %d values or types not bytes (%v)", table, c, text, err)
					}
				}
			}
		})
	}
}

// migratedColumns reads the table -> columns of migration 0020 from its text.
func migratedColumns(t *testing.T, body string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	stmt := regexp.MustCompile(`(?m)^(?:UPDATE OR FAIL|ALTER TABLE) (\w+) (.*);$`)
	col := regexp.MustCompile(`(?:SET |, |ALTER COLUMN )(\w+) (?:= unhex|TYPE BYTEA)`)
	for _, m := range stmt.FindAllStringSubmatch(body, -1) {
		for _, c := range col.FindAllStringSubmatch(m[2], -1) {
			out[m[1]] = append(out[m[1]], c[1])
		}
	}
	return out
}
