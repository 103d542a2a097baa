package evm

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// binaryCopy must load exactly what pgx's CopyFrom loads from the same
// values (the reference encoder), for every column type the kept tables
// have, NULLs, empty values, the integer limits, types it leaves to pgx, and
// streams longer than one buffer; and fail where pgx's CopyFrom fails.
// PostgreSQL only: SQLite never copies.
func TestBinaryCopyMatchesPgxCopyFrom(t *testing.T) {
	long := make([][]any, 3000)
	for i := range long {
		long[i] = []any{int64(i), bytes.Repeat([]byte{byte(i)}, 100+i%37), strings.Repeat("x", i%300)}
	}
	cases := []struct {
		name    string
		cols    []string // name type
		rows    [][]any
		wantErr string
	}{
		{
			name: "every kept column type, NULLs and limits",
			cols: []string{"a BIGINT", "b INTEGER", "c TEXT", "d BYTEA", "e VARCHAR(20)", "f BYTEA", "g TEXT"},
			rows: [][]any{
				{int64(1), int64(2), "0x12", []byte{0, 1, 2, 255}, "v", nil, nil},
				{int64(math.MaxInt64), int64(math.MaxInt32), "", []byte{}, "", []byte(nil), "ünï"},
				{int64(math.MinInt64), int64(math.MinInt32), "ERC-20", []byte("x"), "a'b", []byte{9}, "\\"},
				{int64(0), int64(-1), "115792089237316195423570985008687907853269984665640564039457584007913129639935", nil, "z", []byte{}, ""},
			},
		},
		{
			name: "types left to pgx",
			cols: []string{"a SMALLINT", "b DOUBLE PRECISION", "c BOOLEAN"},
			rows: [][]any{{int64(7), float64(1.5), true}, {int64(-7), nil, false}},
		},
		{
			name: "rows over several buffers",
			cols: []string{"a BIGINT", "b BYTEA", "c TEXT"},
			rows: long,
		},
		{
			name:    "an integer out of an INTEGER column's range",
			cols:    []string{"a INTEGER"},
			rows:    [][]any{{int64(1)}, {int64(math.MaxInt32) + 1}},
			wantErr: "column a: ",
		},
	}
	db := storetest.Open(t, storetest.PostgresDSN(t))
	ctx := context.Background()
	for n, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, got := fmt.Sprintf("copy_want_%d", n), fmt.Sprintf("copy_got_%d", n)
			spec := &insertSpec{table: got}
			for _, c := range tc.cols {
				spec.cols = append(spec.cols, column{name: strings.Fields(c)[0]})
			}
			for _, tbl := range []string{want, got} {
				if _, err := db.ExecContext(ctx, "CREATE TABLE "+tbl+" ("+strings.Join(tc.cols, ", ")+")"); err != nil {
					t.Fatal(err)
				}
			}
			c := &pgCopy{spec: spec}
			for i, r := range tc.rows {
				c.vals = append(c.vals, r...)
				c.order = append(c.order, int32(i))
			}
			names := make([]string, len(spec.cols))
			for i, col := range spec.cols {
				names[i] = col.name
			}
			var wantErr, gotErr error
			run := func(fn func(ctx context.Context, conn *pgx.Conn) error) error {
				tx, err := db.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := tx.Pgx(ctx, fn); err != nil {
					tx.Rollback()
					return err
				}
				return tx.Commit()
			}
			wantErr = run(func(ctx context.Context, conn *pgx.Conn) error {
				_, err := conn.CopyFrom(ctx, pgx.Identifier{want}, names, pgx.CopyFromRows(tc.rows))
				return err
			})
			gotErr = run(func(ctx context.Context, conn *pgx.Conn) error {
				var b binaryCopy
				return b.copy(ctx, conn, c)
			})
			if tc.wantErr != "" {
				if wantErr == nil || gotErr == nil || !strings.Contains(gotErr.Error(), tc.wantErr) {
					t.Fatalf("want both to fail (%q): pgx %v, binaryCopy %v", tc.wantErr, wantErr, gotErr)
				}
				return
			}
			if wantErr != nil || gotErr != nil {
				t.Fatalf("pgx %v, binaryCopy %v", wantErr, gotErr)
			}
			var rows, diff int
			q := fmt.Sprintf("SELECT (SELECT COUNT(*) FROM %[1]s), (SELECT COUNT(*) FROM ((TABLE %[1]s EXCEPT ALL TABLE %[2]s) UNION ALL (TABLE %[2]s EXCEPT ALL TABLE %[1]s)) d)", want, got)
			if err := db.QueryRowContext(ctx, q).Scan(&rows, &diff); err != nil {
				t.Fatal(err)
			}
			if rows != len(tc.rows) || diff != 0 {
				t.Fatalf("%d rows loaded of %d, %d differ from pgx's", rows, len(tc.rows), diff)
			}
		})
	}
}
