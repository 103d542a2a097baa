package storetest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// Rows reads every row of q as a line of its values ("%v|" each, without the
// columns named in skip), sorted: tables compared whatever their row order.
func Rows(t testing.TB, db *store.DB, q string, skip ...string) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var out []string
	vals, ptrs := make([]any, len(cols)), make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var b strings.Builder
		for i, v := range vals {
			if !slices.Contains(skip, cols[i]) {
				fmt.Fprintf(&b, "%v|", v)
			}
		}
		out = append(out, b.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	sort.Strings(out)
	return out
}

// SQLitePlan is SQLite's EXPLAIN QUERY PLAN of q, one step's detail a line.
func SQLitePlan(t testing.TB, db *store.DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, q)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		b.WriteString(detail + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("explain: %v\n%s", err, q)
	}
	return b.String()
}
