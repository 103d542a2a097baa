package store_test

import (
	"context"
	"database/sql"
	"errors"
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
	for _, name := range store.Deferrable() {
		var def string
		err := db.QueryRowContext(context.Background(), q, name).Scan(&def)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
		out[name] = def
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
			cache := writerCacheKiB(t, db)
			deferred, err := db.DeferIndexes(ctx, store.Deferrable())
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
			if again, err := db.DeferIndexes(ctx, store.Deferrable()); err != nil || len(again) != len(want) {
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
			if list, err := db.DeferredIndexes(ctx); err != nil || len(list) != 0 {
				t.Fatalf("after the build: %v deferred (%v)", list, err)
			}
		})
	}
}

// TestBuildReplacesInvalidIndex: a concurrent build that failed half-way
// leaves an invalid index of the name on PostgreSQL; the build drops it and
// builds the recorded definition.
func TestBuildReplacesInvalidIndex(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t, storetest.PostgresDSN(t))
	for _, q := range []string{
		`CREATE TABLE t (x INTEGER)`,
		`INSERT INTO t VALUES (1), (1)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
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
		if _, err := db.DeferIndexes(context.Background(), store.Deferrable()); err != nil {
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
