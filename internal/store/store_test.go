package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"

	_ "github.com/mattn/go-sqlite3" // the older database is made without the store
)

func TestMain(m *testing.M) { storetest.Main(m) }

func TestMigrateTwiceAndTx(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("second migrate: %v", err)
		}
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for h := 0; h < 3; h++ {
			if _, err := tx.Exec(ctx, `INSERT INTO raw_blocks (chain_key, height, hash, block_time, body) VALUES ($1, $2, $3, $4, $5)`,
				"P", h, "hash", 7, []byte{1, 2, byte(h)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		var n int
		var body []byte
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM raw_blocks`).Scan(&n); err != nil || n != 3 {
			t.Fatalf("count = %d, %v", n, err)
		}
		if err := db.QueryRowContext(ctx, `SELECT body FROM raw_blocks WHERE height = $1`, 2).Scan(&body); err != nil || string(body) != "\x01\x02\x02" {
			t.Fatalf("body = %v, %v", body, err)
		}
		// A rolled-back transaction leaves nothing behind.
		tx, _ = db.Begin(ctx)
		if _, err := tx.Exec(ctx, `INSERT INTO raw_blocks (chain_key, height, hash, block_time, body) VALUES ($1, $2, $3, $4, $5)`, "X", 1, "h", 1, []byte{}); err != nil {
			t.Fatal(err)
		}
		tx.Rollback()
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM raw_blocks`).Scan(&n); err != nil || n != 3 {
			t.Fatalf("after rollback count = %d, %v", n, err)
		}
	})
}

// A path with URI syntax characters is one file, not a truncated name.
func TestSQLitePathEscaping(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := store.Open(ctx, "sqlite:"+dir+"/a#1?x.db")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := store.Open(ctx, "sqlite:"+dir+"/a#2?x.db")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.ExecContext(ctx, `CREATE TABLE only_in_a (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ExecContext(ctx, `CREATE TABLE only_in_a (x INTEGER)`); err != nil {
		t.Fatalf("second database shares the first one's file: %v", err)
	}
	if _, err := os.Stat(dir + "/a#1?x.db"); err != nil {
		t.Fatalf("file not created under its own name: %v", err)
	}
}

// Backend-only migrations apply to their backend alone: raw block bodies are
// lz4-compressed on PostgreSQL (0016), and SQLite never sees that file.
func TestBackendOnlyMigration(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		var n int
		err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE name = '0016_raw_blocks_lz4.postgres.sql'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[store.Dialect]int{store.SQLite: 0, store.Postgres: 1}[db.Dialect()]; n != want {
			t.Fatalf("0016 recorded %d times, want %d", n, want)
		}
		if db.Dialect() != store.Postgres {
			return
		}
		var lz4 bool
		if err := db.QueryRowContext(ctx, `SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'`).Scan(&lz4); err != nil {
			t.Fatal(err)
		}
		if !lz4 {
			t.Skip("this PostgreSQL is built without lz4: the migration keeps pglz")
		}
		var method string
		if err := db.QueryRowContext(ctx, `SELECT attcompression::text FROM pg_attribute
			WHERE attrelid = 'raw_blocks'::regclass AND attname = 'body'`).Scan(&method); err != nil {
			t.Fatal(err)
		}
		if method != "l" {
			t.Fatalf("raw_blocks.body compression %q, want l (lz4)", method)
		}
	})
}

// Raw block bodies are stored on PostgreSQL without TOAST's compression
// (0191): they arrive S2-compressed (ingest.RawS2), so a second compression
// costs server CPU for a few percent. A body lz4 would shrink to almost
// nothing is stored whole, out of line, and reads back as written.
func TestRawBodiesStoredUncompressed(t *testing.T) {
	db := storetest.Open(t, storetest.DSNFor(t, "postgres"))
	ctx := context.Background()
	body := bytes.Repeat([]byte("permafrost "), 6000) // 66,000 bytes
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO raw_blocks (chain_key, height, hash, block_time, body) VALUES ($1, $2, $3, $4, $5)`,
		"C", 1, "h", 1, body); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var method sql.NullString
	var size int
	var got []byte
	if err := db.QueryRowContext(ctx, `SELECT pg_column_compression(body), pg_column_size(body), body FROM raw_blocks
		WHERE chain_key = 'C' AND height = 1`).Scan(&method, &size, &got); err != nil {
		t.Fatal(err)
	}
	if method.Valid || size < len(body) {
		t.Errorf("body stored compressed (%q, %d of %d bytes)", method.String, size, len(body))
	}
	if !bytes.Equal(got, body) {
		t.Errorf("body read back as %d bytes, want the %d written", len(got), len(body))
	}
}

// A new SQLite database gets the writer's page size and WAL mode; one created
// with another page size keeps it (a WAL database cannot change it) and opens
// as before.
func TestSQLitePageSize(t *testing.T) {
	ctx := context.Background()
	pragmas := func(t *testing.T, path string) (size int, mode string) {
		t.Helper()
		db, err := store.Open(ctx, "sqlite:"+path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS t (x INTEGER)`); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&size); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		return size, mode
	}
	dir := t.TempDir()
	if size, mode := pragmas(t, dir+"/new.db"); size != 8192 || mode != "wal" {
		t.Errorf("new database: page size %d, journal %s; want 8192, wal", size, mode)
	}

	// An older database: 4096-byte pages, already in WAL mode.
	old, err := sql.Open("sqlite3", "file:"+dir+"/old.db?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`PRAGMA page_size = 4096`, `CREATE TABLE t (x INTEGER)`, `INSERT INTO t VALUES (1)`} {
		if _, err := old.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	if size, mode := pragmas(t, dir+"/old.db"); size != 4096 || mode != "wal" {
		t.Errorf("older database: page size %d, journal %s; want 4096, wal", size, mode)
	}
}

type heightKind int32 // a named integer type, converted like database/sql does

// A transaction reads its own writes, takes what database/sql takes as
// arguments, is done after Commit or Rollback, and leaves the writer's
// connection outside any transaction, even after a failed statement.
func TestTxLifecycle(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		if _, err := db.ExecContext(ctx, `CREATE TABLE tx_test (k BIGINT PRIMARY KEY, s TEXT, b BOOLEAN)`); err != nil {
			t.Fatal(err)
		}
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		args := [][]any{
			{int64(1), "one", true},
			{heightKind(2), sql.NullString{String: "two", Valid: true}, false},
			{3, nil, nil},
		}
		for _, a := range args {
			if _, err := tx.Exec(ctx, `INSERT INTO tx_test (k, s, b) VALUES ($1, $2, $3)`, a...); err != nil {
				t.Fatalf("insert %v: %v", a, err)
			}
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM tx_test WHERE s IS NOT NULL`).Scan(&n); err != nil || n != 2 {
			t.Fatalf("own writes: %d, %v", n, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM tx_test`); err == nil {
			t.Error("Exec after Commit succeeded")
		}
		if err := tx.Rollback(); !errors.Is(err, sql.ErrTxDone) {
			t.Errorf("Rollback after Commit: %v", err)
		}

		tx, err = db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO tx_test (k, s) VALUES ($1, $2)`, 1, "again"); err == nil {
			t.Fatal("duplicate key accepted")
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		// The connection is back in autocommit: this insert stays.
		if _, err := db.ExecContext(ctx, `INSERT INTO tx_test (k, s) VALUES (4, 'four')`); err != nil {
			t.Fatal(err)
		}
		tx, err = db.Begin(ctx)
		if err != nil {
			t.Fatalf("begin after a rolled-back failure: %v", err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		var s string
		if err := db.QueryRowContext(ctx, `SELECT s FROM tx_test WHERE k = 4`).Scan(&s); err != nil || s != "four" {
			t.Fatalf("autocommit insert: %q, %v", s, err)
		}
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM tx_test`).Scan(&n); err != nil || n != 4 {
			t.Fatalf("rows = %d, %v", n, err)
		}
	})
}

func TestIsTransient(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("store: exec %q: %w", "INSERT", &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}), true},
		{&pgconn.PgError{Code: "40001"}, true},
		{&pgconn.PgError{Code: "23505"}, false}, // unique violation: a bug, not a conflict
		{errors.New("deadlock detected"), false},
		{nil, false},
	} {
		if got := store.IsTransient(tt.err); got != tt.want {
			t.Errorf("IsTransient(%v) = %v", tt.err, got)
		}
	}
}

// One writer: a second process (here a second handle) cannot take the lock
// while the first holds it, and is told who holds it; after a release it can.
// (A killed writer's lock going with it is what the crash test relies on:
// it restarts the indexer after every SIGKILL.)
func TestWriterLock(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			dsn := storetest.DSNFor(t, backend)
			a, b := storetest.Open(t, dsn), storetest.Open(t, dsn)
			ctx := context.Background()
			wa, err := a.AcquireWriter(ctx, "first writer pid 1")
			if err != nil {
				t.Fatal(err)
			}
			_, err = b.AcquireWriter(ctx, "second writer pid 2")
			if !errors.Is(err, store.ErrWriterBusy) || !strings.Contains(err.Error(), "first writer pid 1") {
				t.Fatalf("second writer: %v", err)
			}
			if err := wa.Release(); err != nil {
				t.Fatal(err)
			}
			wb, err := b.AcquireWriter(ctx, "second writer pid 2")
			if err != nil {
				t.Fatalf("after release: %v", err)
			}
			if _, err := a.AcquireWriter(ctx, "first again"); !errors.Is(err, store.ErrWriterBusy) || !strings.Contains(err.Error(), "second writer pid 2") {
				t.Fatalf("first again: %v", err)
			}
			wb.Release()
		})
	}
}

// Every PostgreSQL session plans serially (openPostgres), unless the DSN
// sets max_parallel_workers_per_gather itself.
func TestPostgresSessionsPlanSerially(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	ctx := context.Background()
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	for _, c := range []struct{ dsn, want string }{
		{dsn, "0"},
		{dsn + sep + "max_parallel_workers_per_gather=2", "2"},
	} {
		db, err := store.Open(ctx, c.dsn)
		if err != nil {
			t.Fatal(err)
		}
		// Several sessions of the pool at once: each one has the setting.
		conns := make([]*sql.Conn, 3)
		for i := range conns {
			if conns[i], err = db.ReaderDB().Conn(ctx); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := conns[i].QueryRowContext(ctx, "SHOW max_parallel_workers_per_gather").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("%s: session %d has max_parallel_workers_per_gather %s, want %s", c.dsn, i, got, c.want)
			}
		}
		for _, c := range conns {
			c.Close()
		}
		db.Close()
	}
}
