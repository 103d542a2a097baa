package store_test

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// indexDefinitions reads each deferrable index's definition from the
// database's catalog ("" when it has none).
func indexDefinitions(t *testing.T, db *store.DB) map[string]string {
	t.Helper()
	q := `SELECT sql FROM sqlite_master WHERE type = 'index' AND name = $1`
	if db.Dialect() == store.Postgres {
		q = `SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1`
	}
	out := map[string]string{}
	for _, name := range store.Deferrable(db.Dialect()) {
		var def string
		err := db.QueryRowContext(context.Background(), q, name).Scan(&def)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
		out[name] = def
	}
	return out
}

// primaryKeys lists the deferrable indexes that are a primary key
// constraint's, with the constraint's definition (PostgreSQL; none on
// SQLite).
func primaryKeys(t *testing.T, db *store.DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	if db.Dialect() != store.Postgres {
		return out
	}
	for _, name := range store.Deferrable(db.Dialect()) {
		var def string
		err := db.QueryRowContext(context.Background(), `SELECT pg_get_constraintdef(oid) FROM pg_constraint
			WHERE conname = $1 AND contype = 'p'`, name).Scan(&def)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			t.Fatal(err)
		default:
			out[name] = def
		}
	}
	return out
}

// TestDeferAndBuildIndexes drops the deferrable indexes, reopens the
// database (a restart in the middle of a catch-up), and builds them again:
// the catalog holds the migrations' definitions again, nothing is left
// deferred, and IndexDeferred follows each step.
func TestDeferAndBuildIndexes(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.DSNFor(t, backend)
			db := storetest.Open(t, dsn)
			want := indexDefinitions(t, db)
			for name, def := range want {
				if def == "" {
					t.Fatalf("deferrable index %s is not in the migrated schema", name)
				}
			}
			keys := primaryKeys(t, db)
			if backend == "postgres" && len(keys) == 0 {
				t.Fatal("no deferrable primary key on PostgreSQL")
			}
			cache := writerCacheKiB(t, db)
			deferred, err := db.DeferIndexes(ctx, store.Deferrable(db.Dialect()))
			if err != nil {
				t.Fatal(err)
			}
			if len(deferred) != len(want) {
				t.Fatalf("deferred %d indexes, want %d", len(deferred), len(want))
			}
			// SQLite: the writer's page cache is the catch-up's while deferred.
			if got := writerCacheKiB(t, db); backend == "sqlite" && got <= cache {
				t.Errorf("writer page cache %d KiB while deferred, want more than %d", got, cache)
			}
			for name, def := range indexDefinitions(t, db) {
				if def != "" {
					t.Errorf("%s still in the catalog: %s", name, def)
				}
				if !db.IndexDeferred(ctx, name) {
					t.Errorf("IndexDeferred(%s) = false while deferred", name)
				}
			}
			// Deferring again (a restart that enters catch-up again) keeps the
			// recorded definitions.
			if again, err := db.DeferIndexes(ctx, store.Deferrable(db.Dialect())); err != nil || len(again) != len(want) {
				t.Fatalf("defer again: %d, %v", len(again), err)
			}
			db.Close()

			db = storetest.Open(t, dsn)
			if list, err := db.DeferredIndexes(ctx); err != nil || len(list) != len(want) {
				t.Fatalf("after reopening: %d deferred (%v), want %d", len(list), err, len(want))
			}
			var built []string
			if err := db.BuildDeferredIndexes(ctx, func(d store.DeferredIndex) { built = append(built, d.Name) }); err != nil {
				t.Fatal(err)
			}
			if len(built) != len(want) {
				t.Errorf("built %v, want %d indexes", built, len(want))
			}
			if got := writerCacheKiB(t, db); got != cache {
				t.Errorf("writer page cache %d KiB after the build, want %d", got, cache)
			}
			for name, def := range indexDefinitions(t, db) {
				if def != want[name] {
					t.Errorf("%s after the build: %q, want %q", name, def, want[name])
				}
				if db.IndexDeferred(ctx, name) {
					t.Errorf("IndexDeferred(%s) = true after the build", name)
				}
			}
			if got := primaryKeys(t, db); !maps.Equal(got, keys) {
				t.Errorf("primary keys after the build %v, want %v", got, keys)
			}
			noneDeferred(t, db)
		})
	}
}

// TestBuildReplacesInvalidIndex: a concurrent build that failed half-way
// leaves an invalid index of the name on PostgreSQL; the build drops it and
// builds the recorded definition.
func TestBuildReplacesInvalidIndex(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t, storetest.PostgresDSN(t))
	execAll(t, db, `CREATE TABLE t (x INTEGER)`, `INSERT INTO t VALUES (1), (1)`)
	if _, err := db.ExecContext(ctx, `CREATE UNIQUE INDEX CONCURRENTLY t_x ON t (x)`); err == nil {
		t.Fatal("a unique index over duplicates was built")
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO deferred_indexes (name, table_name, definition, deferred_at)
		VALUES ('t_x', 't', 'CREATE INDEX t_x ON public.t USING btree (x)', 0)`); err != nil {
		t.Fatal(err)
	}
	if err := db.BuildDeferredIndexes(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var valid, unique bool
	if err := db.QueryRowContext(ctx, `SELECT i.indisvalid, i.indisunique FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relname = 't_x'`).Scan(&valid, &unique); err != nil {
		t.Fatal(err)
	}
	if !valid || unique {
		t.Errorf("t_x valid %v unique %v, want the recorded (valid, not unique) index", valid, unique)
	}
}

// TestInterruptedBuildResumes: a build stopped after some indexes (a crash,
// a shutdown) leaves the others deferred; the next build finishes them.
func TestInterruptedBuildResumes(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		want := indexDefinitions(t, db)
		if _, err := db.DeferIndexes(context.Background(), store.Deferrable(db.Dialect())); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		built := 0
		err := db.BuildDeferredIndexes(ctx, func(store.DeferredIndex) {
			if built++; built == 3 {
				cancel()
			}
		})
		if err == nil {
			t.Fatal("a cancelled build reported success")
		}
		left, err := db.DeferredIndexes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != len(want)-2 {
			t.Fatalf("%d indexes left deferred after 2 builds, want %d", len(left), len(want)-2)
		}
		if err := db.BuildDeferredIndexes(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		for name, def := range indexDefinitions(t, db) {
			if def != want[name] {
				t.Errorf("%s: %q, want %q", name, def, want[name])
			}
		}
	})
}

// writerCacheKiB is the SQLite writer connection's page cache in KiB (0 on
// PostgreSQL).
func writerCacheKiB(t *testing.T, db *store.DB) int64 {
	t.Helper()
	if db.Dialect() != store.SQLite {
		return 0
	}
	var n int64
	if err := db.WriterDB().QueryRowContext(context.Background(), "PRAGMA cache_size").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return -n // the writer sets it in KiB: negative
}

// TestDeferrableByBackend: the primary keys are PostgreSQL's only, the
// histories' address indexes SQLite's only (migration 0200), and SQLite's
// DeferIndexes skips the names its schema lacks (every name of the list
// given: a caller's list need not be the backend's).
func TestDeferrableByBackend(t *testing.T) {
	pg, lite := store.Deferrable(store.Postgres), store.Deferrable(store.SQLite)
	for _, name := range []string{"evm_address_txs_pkey", "evm_token_balance_history_pkey", "evm_native_balance_history_pkey"} {
		if !slices.Contains(pg, name) || slices.Contains(lite, name) {
			t.Errorf("%s: on PostgreSQL %v, on SQLite %v; want PostgreSQL only", name, slices.Contains(pg, name), slices.Contains(lite, name))
		}
	}
	var shared int
	for _, name := range lite {
		if slices.Contains(pg, name) {
			shared++
		}
	}
	if len(lite)-shared != 5 {
		t.Errorf("SQLite has %d deferrable indexes of its own, want the five histories' address indexes", len(lite)-shared)
	}
	db := storetest.Open(t, storetest.SQLiteDSN(t))
	deferred, err := db.DeferIndexes(context.Background(), pg)
	if err != nil {
		t.Fatal(err)
	}
	if len(deferred) != shared {
		t.Fatalf("SQLite deferred %d indexes of the PostgreSQL list, want the %d it shares", len(deferred), shared)
	}
	if err := db.BuildDeferredIndexes(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

// TestDeferredPrimaryKeyResumes: each point a crash can leave a deferred
// primary key at on PostgreSQL is finished by the next build: the index
// not built, built but invalid (an interrupted concurrent build), built and
// valid but not yet the table's key. The table's key afterwards is the
// recorded one, over a valid index.
func TestDeferredPrimaryKeyResumes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup []string // after the key is deferred
	}{
		{"not built", nil},
		{"invalid", []string{
			`INSERT INTO t VALUES (1)`, // a duplicate fails the concurrent build half-way
			`CREATE UNIQUE INDEX CONCURRENTLY t_pkey ON t (x)`,
			`DELETE FROM t WHERE ctid = (SELECT max(ctid) FROM t)`,
		}},
		{"built, not attached", []string{`CREATE UNIQUE INDEX t_pkey ON t (x)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Open(t, storetest.PostgresDSN(t))
			execAll(t, db, `CREATE TABLE t (x INTEGER PRIMARY KEY)`, `INSERT INTO t VALUES (1), (2)`)
			deferred, err := db.DeferIndexes(ctx, []string{"t_pkey"})
			if err != nil || len(deferred) != 1 {
				t.Fatalf("deferred %v, %v", deferred, err)
			}
			for _, q := range tc.setup {
				// The invalid case's build is meant to fail.
				_, _ = db.ExecContext(ctx, q)
			}
			if err := db.BuildDeferredIndexes(ctx, nil); err != nil {
				t.Fatal(err)
			}
			var def string
			var valid bool
			if err := db.QueryRowContext(ctx, `SELECT pg_get_constraintdef(c.oid), i.indisvalid FROM pg_constraint c
				JOIN pg_index i ON i.indexrelid = c.conindid WHERE c.conrelid = 't'::regclass AND c.contype = 'p'`).Scan(&def, &valid); err != nil {
				t.Fatalf("the table's key: %v", err)
			}
			if def != "PRIMARY KEY (x)" || !valid {
				t.Errorf("key %q valid %v, want PRIMARY KEY (x) over a valid index", def, valid)
			}
			noneDeferred(t, db)
		})
	}
}

// TestDeferIsOneTransaction: a drop that fails (here a primary key a
// foreign key refers to) leaves every index of the call in place and
// nothing recorded.
func TestDeferIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t, storetest.PostgresDSN(t))
	execAll(t, db, `CREATE TABLE p (x INTEGER PRIMARY KEY)`, `CREATE TABLE q (x INTEGER REFERENCES p)`)
	want := indexDefinitions(t, db)
	if _, err := db.DeferIndexes(ctx, []string{"evm_blocks_hash", "p_pkey"}); err == nil {
		t.Fatal("a referenced primary key was deferred")
	}
	if got := indexDefinitions(t, db); !maps.Equal(got, want) {
		t.Errorf("indexes after the failed defer %v, want %v", got, want)
	}
	noneDeferred(t, db)
}

// execAll runs each statement, failing the test at the first error.
func execAll(t *testing.T, db *store.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
}

// noneDeferred fails the test if any index is recorded as deferred.
func noneDeferred(t *testing.T, db *store.DB) {
	t.Helper()
	if list, err := db.DeferredIndexes(context.Background()); err != nil || len(list) != 0 {
		t.Errorf("deferred: %v (%v), want none", list, err)
	}
}
