package store

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

func testSQLite(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), "sqlite:"+t.TempDir()+"/x.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if db.exec == nil {
		t.Fatal("no fast path: SQLite's symbols did not resolve")
	}
	return db
}

func begin(t *testing.T, db *DB) *Tx {
	t.Helper()
	tx, err := db.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// The fast path stores every value exactly as the driver does: each value is
// written once through each, and SQLite's typeof and quote must agree.
func TestSQLiteExecStoresWhatTheDriverStores(t *testing.T) {
	ctx := context.Background()
	db := testSQLite(t)
	if _, err := db.ExecContext(ctx, `CREATE TABLE v (path TEXT, name TEXT, t TEXT, x)`); err != nil {
		t.Fatal(err)
	}
	values := []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"int", int64(42)},
		{"int max", int64(math.MaxInt64)},
		{"int min", int64(math.MinInt64)},
		{"true", true},
		{"false", false},
		{"float", 1.5},
		{"float nan-free tiny", math.SmallestNonzeroFloat64},
		{"text", "0xabc"},
		{"empty text", ""},
		{"text with NUL", "a\x00b"},
		{"utf-8", "héllo ✓"},
		{"raw key bytes as text", string([]byte{0xff, 0x00, 0x10})},
		{"blob", []byte{0, 1, 2, 0xff}},
		{"empty blob", []byte{}},
		{"nil blob", []byte(nil)},
		{"int32", int32(-7)}, // converted to int64 by driverValue
	}
	const ins = `INSERT INTO v (path, name, x) VALUES ($1, $2, $3)`
	tx := begin(t, db)
	for _, c := range values {
		if _, err := tx.Exec(ctx, ins, "fast", c.name, c.v); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	if _, ok := db.exec.stmts[ins]; !ok {
		t.Fatal("the insert did not take the fast path")
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, c := range values {
		if _, err := db.ExecContext(ctx, ins, "driver", c.name, c.v); err != nil {
			t.Fatalf("%s through the driver: %v", c.name, err)
		}
	}
	rows, err := db.QueryContext(ctx, `SELECT f.name, typeof(f.x), quote(f.x), typeof(d.x), quote(d.x)
		FROM v f JOIN v d ON d.name = f.name AND d.path = 'driver' WHERE f.path = 'fast' ORDER BY f.rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var name, ft, fq, dt, dq string
		if err := rows.Scan(&name, &ft, &fq, &dt, &dq); err != nil {
			t.Fatal(err)
		}
		if ft != dt || fq != dq {
			t.Errorf("%s: fast path stored %s %s, the driver %s %s", name, ft, fq, dt, dq)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(values) {
		t.Fatalf("%d values compared, want %d", n, len(values))
	}
}

func TestSQLiteExecResultsAndErrors(t *testing.T) {
	ctx := context.Background()
	db := testSQLite(t)
	if _, err := db.ExecContext(ctx, `CREATE TABLE k (id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	tx := begin(t, db)
	res, err := tx.Exec(ctx, `INSERT INTO k (v) VALUES ($1), ($2), ($3)`, "a", "b", "c")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 3 {
		t.Errorf("insert: %d rows affected, want 3", n)
	}
	if id, _ := res.LastInsertId(); id != 3 {
		t.Errorf("insert: last id %d, want 3", id)
	}
	res, err = tx.Exec(ctx, `UPDATE k SET v = v || 'x' WHERE id >= $1`, int64(2))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 2 {
		t.Errorf("update: %d rows affected, want 2", n)
	}

	// A constraint error fails the statement with SQLite's message; the
	// statement stays usable and the transaction can go on.
	_, err = tx.Exec(ctx, `INSERT INTO k (v) VALUES ($1)`, "a")
	if err == nil || !strings.Contains(err.Error(), "UNIQUE constraint failed") {
		t.Fatalf("duplicate: err %v, want a UNIQUE constraint error", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO k (v) VALUES ($1)`, "d"); err != nil {
		t.Fatalf("the same statement after its error: %v", err)
	}
	// A NOT NULL failure after a value of the same statement was text.
	if _, err := tx.Exec(ctx, `INSERT INTO k (v) VALUES ($1)`, nil); err == nil || !strings.Contains(err.Error(), "NOT NULL") {
		t.Fatalf("null: err %v, want a NOT NULL error", err)
	}

	// What the fast path leaves to the driver: two statements in one query,
	// too few arguments, a value it does not encode, a syntax error.
	if _, err := tx.Exec(ctx, `INSERT INTO k (v) VALUES ($1); INSERT INTO k (v) VALUES ($2)`, "e", "f"); err != nil {
		t.Fatalf("two statements: %v", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO k (v) VALUES ($1)`); err == nil {
		t.Fatal("missing argument: no error")
	}
	if _, err := tx.Exec(ctx, `INSERT INTO k (v) VALUES ($1)`, time.Unix(0, 0).UTC()); err != nil {
		t.Fatalf("time value: %v", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO nowhere VALUES ($1)`, "x"); err == nil || !strings.Contains(err.Error(), "no such table") {
		t.Fatalf("missing table: err %v", err)
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM k`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 7 { // a, b, c, d, e, f and the time
		t.Errorf("%d rows inside the transaction, want 7", n)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM k`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d rows after rollback, want 0", n)
	}
}

// The statement cache stays within its bound, and a database with cached
// statements closes and opens again.
func TestSQLiteExecStatementBound(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(ctx, "sqlite:"+dir+"/x.db")
	if err != nil {
		t.Fatal(err)
	}
	db.exec.maxStmts = 3
	if _, err := db.ExecContext(ctx, `CREATE TABLE c (a INTEGER, b INTEGER)`); err != nil {
		t.Fatal(err)
	}
	tx := begin(t, db)
	for i := range 50 {
		q := `INSERT INTO c (a, b) VALUES ($1, ` + strings.Repeat("1+", i%7) + `$2)`
		if _, err := tx.Exec(ctx, q, int64(i), int64(1)); err != nil {
			t.Fatal(err)
		}
		if len(db.exec.stmts) > 3 {
			t.Fatalf("%d statements cached, bound 3", len(db.exec.stmts))
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(ctx, "sqlite:"+dir+"/x.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, sum int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*), SUM(b) FROM c`).Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := range 50 {
		want += i%7 + 1
	}
	if n != 50 || sum != want {
		t.Errorf("%d rows, sum %d; want 50, %d", n, sum, want)
	}
}
