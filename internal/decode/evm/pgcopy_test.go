package evm

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
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

// sortRows orders the kept rows as compareValue does over the table's key
// columns, then by row number (the reference: a stable sort by the key
// alone), whatever the values' first bytes share: equal 8-byte prefixes,
// values shorter than 8 bytes, empty values, negative integers (key
// columns are never NULL).
func TestSortRowsInKeyOrder(t *testing.T) {
	p8 := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	vals := []any{
		[]byte{}, []byte{0}, []byte{0, 0, 0, 0, 0, 0, 0, 0, 1}, []byte{1}, p8,
		append(p8[:8:8], 0), append(p8[:8:8], 9), append(p8[:8:8], 1, 2), []byte{255, 255},
	}
	texts := []any{"", "ERC-20", "ERC-721", "ERC-1155", "ERC-20\x00", "ERC-20x"}
	ints := []any{int64(-1), int64(0), int64(1), int64(math.MinInt64), int64(math.MaxInt64)}
	cols := [][]any{vals, texts, ints}
	cases := []struct {
		name string
		key  []int
		pick func(r, c int) int // row r's value of column c: cols[c][pick(r, c) % len]
	}{
		{"bytes then text then integer", []int{0, 1, 2}, func(r, c int) int { return r*7 + c*3 + r/5 }},
		{"text first", []int{1, 0}, func(r, c int) int { return r*5 + c }},
		{"integer first", []int{2, 1}, func(r, c int) int { return r*3 + c*2 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const n, w = 400, 3
			c := &pgCopy{spec: &insertSpec{cols: make([]column, w), copyKey: tc.key}}
			for r := range n {
				for col := range w {
					c.vals = append(c.vals, cols[col][tc.pick(r, col)%len(cols[col])])
				}
			}
			want := make([]int32, n)
			for i := range want {
				want[i] = int32(i)
			}
			slices.SortStableFunc(want, func(a, b int32) int {
				for _, k := range tc.key {
					if d := compareValue(c.vals[int(a)*w+k], c.vals[int(b)*w+k]); d != 0 {
						return d
					}
				}
				return 0
			})
			c.sortRows()
			if !slices.Equal(c.order, want) {
				t.Fatalf("order %v\nwant  %v", c.order[:20], want[:20])
			}
		})
	}
}
