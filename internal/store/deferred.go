package store

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Bulk catch-up: while ingestion is far behind the tip, the secondary
// indexes listed in migrations/deferrable.txt are dropped (DeferIndexes) and
// built again once it is caught up (BuildDeferredIndexes). Which indexes are
// deferred is kept in the database (deferred_indexes, migration 0150), with
// each index's definition as the database printed it, so a crash at any
// point resumes: a deferred index stays listed until its build committed.
// Readers work meanwhile, more slowly: queries plan without the index, and
// SQLite's INDEXED BY hints are left out for a deferred index
// (IndexDeferred). docs/operations.md "Bulk catch-up".

//go:embed migrations/deferrable.txt
var deferrableText string

// deferredMigration creates deferred_indexes.
const deferredMigration = "0150_deferred_indexes.sql"

// Deferrable is the list of indexes a bulk catch-up may drop on backend d:
// a line of deferrable.txt names an index, optionally followed by the one
// backend that has it (a PostgreSQL primary key: SQLite's WITHOUT ROWID
// tables are their key).
func Deferrable(d Dialect) []string {
	var out []string
	for _, line := range strings.Split(deferrableText, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") || (len(f) > 1 && f[1] != d.String()) {
			continue
		}
		out = append(out, f[0])
	}
	return out
}

// DeferredIndex is an index dropped for a bulk catch-up, to be built again.
type DeferredIndex struct {
	Name, Table, Definition string
	DeferredAt              time.Time
}

// DeferIndexes drops those of the indexes names the database has (a bulk
// catch-up: Deferrable), recording each one's definition, in one
// transaction. It returns the indexes now deferred (those of an earlier,
// unfinished catch-up included); BuildDeferredIndexes builds them again.
func (db *DB) DeferIndexes(ctx context.Context, names []string) ([]DeferredIndex, error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: defer indexes: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	// This process's readers leave the hints out from now on, before the
	// indexes go, until the commit shows what is deferred.
	db.deferred.hold(names)
	defer db.deferred.forget()
	catalog := `SELECT tbl_name, sql FROM sqlite_master WHERE type = 'index' AND name = $1`
	if db.dialect == Postgres {
		// A primary key's index is dropped with its constraint, and
		// recorded as the constraint (as pg_dump prints it) to be added
		// back over the rebuilt index.
		catalog = `SELECT i.tablename, COALESCE('ALTER TABLE ' || format('%I.%I', i.schemaname, i.tablename) ||
				' ADD CONSTRAINT ' || quote_ident(c.conname) || ' ' || pg_get_constraintdef(c.oid), i.indexdef)
			FROM pg_indexes i LEFT JOIN pg_constraint c
				ON c.conindid = format('%I.%I', i.schemaname, i.indexname)::regclass AND c.contype = 'p'
			WHERE i.schemaname = current_schema() AND i.indexname = $1`
	}
	now := time.Now().Unix()
	for _, name := range names {
		var table, def string
		err := tx.QueryRowContext(ctx, catalog, name).Scan(&table, &def)
		if errors.Is(err, sql.ErrNoRows) {
			continue // deferred already, or gone from the schema
		}
		if err != nil {
			return nil, fmt.Errorf("store: defer index %s: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO deferred_indexes (name, table_name, definition, deferred_at)
			VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING`, name, table, def, now); err != nil {
			return nil, fmt.Errorf("store: defer index %s: %w", name, err)
		}
		drop := `DROP INDEX ` + quoteIdent(name)
		if addPrimaryKey.MatchString(def) {
			drop = `ALTER TABLE ` + quoteIdent(table) + ` DROP CONSTRAINT ` + quoteIdent(name)
		}
		if _, err := tx.ExecContext(ctx, drop); err != nil {
			return nil, fmt.Errorf("store: defer index %s: %w", name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: defer indexes: %w", err)
	}
	list, err := db.DeferredIndexes(ctx)
	if err == nil && len(list) > 0 {
		err = db.setWriterCache(ctx, writerCatchUpCacheKiB)
	}
	return list, err
}

// writerCatchUpCacheKiB is the SQLite writer's page cache while indexes are
// deferred (a bulk catch-up, whose batches are bigger: ingest.catchUpBatch).
// It was sized for the address-keyed histories, whose rows then landed on
// random leaves (256 MiB took the peak RSS to 483–496 MB, too close to the
// 500 MB bound; docs/benchmarks.md "Bulk catch-up, bigger batches"). Since
// migration 0200 those rows append, but the current balances' upserts still
// gain from it over a long catch-up: 64 MiB was 11% slower over 100,000
// blocks at 250,000, for 110 MB less peak RSS (docs/benchmarks.md
// "Eighteenth session").
const writerCatchUpCacheKiB = 196608

// setWriterCache sets the SQLite writer connection's page cache (no-op on
// PostgreSQL). The setting lives as long as the connection: the writer pool
// keeps its one connection open.
func (db *DB) setWriterCache(ctx context.Context, kib int) error {
	if db.dialect != SQLite {
		return nil
	}
	if _, err := db.write.ExecContext(ctx, fmt.Sprintf("PRAGMA cache_size = -%d", kib)); err != nil {
		return fmt.Errorf("store: writer page cache: %w", err)
	}
	return nil
}

// DeferredIndexes lists the indexes a bulk catch-up dropped and that are
// not built yet.
func (db *DB) DeferredIndexes(ctx context.Context) ([]DeferredIndex, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT name, table_name, definition, deferred_at FROM deferred_indexes ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("store: deferred indexes: %w", err)
	}
	defer rows.Close()
	var out []DeferredIndex
	for rows.Next() {
		var d DeferredIndex
		var at int64
		if err := rows.Scan(&d.Name, &d.Table, &d.Definition, &at); err != nil {
			return nil, fmt.Errorf("store: deferred indexes: %w", err)
		}
		d.DeferredAt = time.Unix(at, 0)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: deferred indexes: %w", err)
	}
	return out, nil
}

// createIndex matches the head of an index definition as SQLite and
// PostgreSQL print it.
var createIndex = regexp.MustCompile(`(?i)^\s*CREATE\s+(UNIQUE\s+)?INDEX\s+`)

// addPrimaryKey matches a deferred PostgreSQL primary key as DeferIndexes
// records it: the table, the constraint's name and its columns.
var addPrimaryKey = regexp.MustCompile(`^ALTER TABLE (\S+) ADD CONSTRAINT (\S+) PRIMARY KEY (\(.+\))$`)

// BuildDeferredIndexes builds every deferred index and forgets it. On
// SQLite each index is built and forgotten in one write transaction (it
// holds the writer for the build); on PostgreSQL it is built CONCURRENTLY
// (writers and readers go on), then forgotten; an invalid index a crashed
// concurrent build left is dropped and built again. progress, if not nil,
// is told of each index before its build.
func (db *DB) BuildDeferredIndexes(ctx context.Context, progress func(DeferredIndex)) error {
	list, err := db.DeferredIndexes(ctx)
	if err != nil || len(list) == 0 {
		return err
	}
	if db.dialect == SQLite {
		// The catch-up's page cache goes first: SQLite's sorter takes as
		// much memory as the cache before it spills.
		if err := db.setWriterCache(ctx, writerCacheKiB); err != nil {
			return err
		}
		// The pages the cache let go are free in malloc, not returned to
		// the OS: without this, the sorter's memory came on top of them.
		trimCHeap()
		// An index build sorts the whole table (as a migration may).
		restore, err := db.bulkSort(ctx)
		if err != nil {
			return fmt.Errorf("store: build indexes: %w", err)
		}
		defer restore()
	}
	for _, d := range list {
		if progress != nil {
			progress(d)
		}
		if pk := addPrimaryKey.FindStringSubmatch(d.Definition); pk != nil && db.dialect == Postgres {
			if err := db.buildConcurrently(ctx, d, "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "+pk[2]+" ON "+pk[1]+" "+pk[3],
				"ALTER TABLE "+pk[1]+" ADD CONSTRAINT "+pk[2]+" PRIMARY KEY USING INDEX "+pk[2]); err != nil {
				return err
			}
			continue
		}
		loc := createIndex.FindStringIndex(d.Definition)
		if loc == nil {
			return fmt.Errorf("store: build index %s: unexpected definition %q", d.Name, d.Definition)
		}
		head, rest := d.Definition[:loc[1]], d.Definition[loc[1]:]
		if db.dialect == Postgres {
			if err := db.buildConcurrently(ctx, d, head+"CONCURRENTLY IF NOT EXISTS "+rest, ""); err != nil {
				return err
			}
			continue
		}
		tx, err := db.write.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("store: build index %s: %w", d.Name, err)
		}
		if _, err := tx.ExecContext(ctx, head+"IF NOT EXISTS "+rest); err != nil {
			tx.Rollback() //nolint:errcheck // the build's error is the one to report
			return fmt.Errorf("store: build index %s: %w", d.Name, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM deferred_indexes WHERE name = $1`, d.Name); err != nil {
			tx.Rollback() //nolint:errcheck
			return fmt.Errorf("store: build index %s: %w", d.Name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("store: build index %s: %w", d.Name, err)
		}
		db.deferred.forget()
	}
	return nil
}

// buildConcurrently runs create (a concurrent build), then attach if not
// empty (a primary key's constraint over the new index) and forgets d in
// one transaction: a crash before its commit builds (or finds the valid
// index) and attaches again.
func (db *DB) buildConcurrently(ctx context.Context, d DeferredIndex, create, attach string) error {
	// A concurrent build that did not finish (a crash, a cancel) leaves an
	// invalid index of that name, which IF NOT EXISTS would keep.
	var valid bool
	err := db.write.QueryRowContext(ctx, `SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`, d.Name).Scan(&valid)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("store: build index %s: %w", d.Name, err)
	case !valid:
		if _, err := db.write.ExecContext(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+quoteIdent(d.Name)); err != nil {
			return fmt.Errorf("store: build index %s: drop the invalid one: %w", d.Name, err)
		}
	}
	if _, err := db.write.ExecContext(ctx, create); err != nil {
		return fmt.Errorf("store: build index %s: %w", d.Name, err)
	}
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: build index %s: %w", d.Name, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	if attach != "" {
		if _, err := tx.ExecContext(ctx, attach); err != nil {
			return fmt.Errorf("store: build index %s: attach: %w", d.Name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM deferred_indexes WHERE name = $1`, d.Name); err != nil {
		return fmt.Errorf("store: build index %s: %w", d.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: build index %s: %w", d.Name, err)
	}
	db.deferred.forget()
	return nil
}

// IndexDeferred reports whether index is deferred by a bulk catch-up, from
// a snapshot at most deferredTTL old (this process's own changes show at
// once). Readers that pin an index (SQLite's INDEXED BY) leave the pin out
// for a deferred one: the query still answers, by another plan.
func (db *DB) IndexDeferred(ctx context.Context, index string) bool {
	return db.deferred.has(ctx, db, index)
}

const deferredTTL = 2 * time.Second

// deferredCache is IndexDeferred's snapshot of deferred_indexes.
type deferredCache struct {
	mu    sync.Mutex
	names map[string]bool
	at    time.Time
	held  bool // a DeferIndexes in progress
}

// hold answers deferred for names until the next forget.
func (c *deferredCache) hold(names []string) {
	c.mu.Lock()
	c.names = map[string]bool{}
	for _, n := range names {
		c.names[n] = true
	}
	c.held = true
	c.mu.Unlock()
}

func (c *deferredCache) forget() {
	c.mu.Lock()
	c.at = time.Time{}
	c.names = nil
	c.held = false
	c.mu.Unlock()
}

func (c *deferredCache) has(ctx context.Context, db *DB, index string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.held && (c.names == nil || time.Since(c.at) > deferredTTL) {
		names := map[string]bool{}
		list, err := db.DeferredIndexes(ctx)
		if err != nil {
			// Unknown: assume deferred (an unpinned query answers either way).
			return true
		}
		for _, d := range list {
			names[d.Name] = true
		}
		c.names, c.at = names, time.Now()
	}
	return c.names[index]
}

func quoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
