// Package store owns the database: opening SQLite or PostgreSQL behind one API,
// the embedded migrations, and a transaction helper that caches prepared statements.
//
// One schema design serves both backends: migrations and queries are written in
// the common subset of SQL (see migrations/README.md) with $N placeholders,
// which both SQLite and PostgreSQL accept.
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib" // also registers the "pgx" database/sql driver
	"github.com/mattn/go-sqlite3"    // the writer's driver; registers "sqlite3" for the readers
)

// Dialect names the SQL backend.
type Dialect int

const (
	SQLite Dialect = iota + 1
	Postgres
)

func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	}
	return "unknown"
}

//go:embed migrations/*.sql
var migrationFS embed.FS

// DB is the handle every reader and writer shares. For SQLite it holds two pools:
// one writer connection (SQLite allows one writer; IMMEDIATE transactions avoid
// upgrade deadlocks) and a read pool that WAL lets run beside the writer.
type DB struct {
	dialect Dialect
	write   *sql.DB
	read    *sql.DB
	dsn     string
	ckpt    *checkpointer // file SQLite databases only
	path    string        // file SQLite databases only: the database file
	exec    *sqliteExec   // SQLite: the write transactions' statements (nil: all through the driver)
	// deferred is IndexDeferred's snapshot of the bulk catch-up's dropped
	// indexes (deferred.go).
	deferred deferredCache
}

// ErrNotFound is returned by lookups that find no row.
var ErrNotFound = errors.New("not found")

// Open connects to dsn: "sqlite:PATH", "sqlite::memory:" (a private in-memory
// database, for tests), or a "postgres://" / "postgresql://" URL.
func Open(ctx context.Context, dsn string) (*DB, error) {
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		return openSQLite(ctx, strings.TrimPrefix(dsn, "sqlite:"), dsn)
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return openPostgres(ctx, dsn)
	}
	return nil, fmt.Errorf("store: unsupported database %q (want sqlite:PATH or postgres://...)", redact(dsn))
}

func openSQLite(ctx context.Context, path, dsn string) (*DB, error) {
	memory := path == ":memory:" || path == ""
	var base string
	if memory {
		// A shared-cache in-memory database with a unique name, so the write and
		// read pools see the same data while separate test databases stay apart.
		base = fmt.Sprintf("file:mem%p?mode=memory&cache=shared", &path)
	} else {
		if dir := filepath.Dir(path); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("store: create database directory: %w", err)
			}
		}
		// The path goes into a URI: escape what SQLite would read as URI syntax.
		base = "file:" + strings.NewReplacer("%", "%25", "#", "%23", "?", "%3F").Replace(path) + "?"
	}
	sep := "&"
	if strings.HasSuffix(base, "?") {
		sep = ""
	}
	common := sep + "_busy_timeout=10000&_foreign_keys=off"
	if !memory {
		common += "&_synchronous=NORMAL"
	}
	// The writer gets the pragmas of a bulk writer (see writerPragmas), and
	// keeps its prepared statements across transactions (see Tx.Exec). It
	// sets WAL mode itself, after the page size of a new database. Its
	// connection takes no mutex per call (_mutex=no): database/sql hands a
	// connection to one goroutine at a time.
	wdsn := base + common + fmt.Sprintf("&_cache_size=-%d&_txlock=immediate&_mutex=no&_stmt_cache_size=%d",
		writerCacheKiB, writerStmtCache)
	if !memory && walBufferVFS != "" {
		// The writer's WAL frames go out in large writes (sqlite_walbuf.go).
		wdsn += "&vfs=" + walBufferVFS
	}
	w := sql.OpenDB(sqliteConnector{dsn: wdsn, pragmas: writerPragmas(!memory)})
	if !memory {
		common += "&_journal_mode=WAL"
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	db := &DB{dialect: SQLite, write: w, dsn: dsn, exec: newSQLiteExec()}
	if !memory {
		db.path = path
	}
	// The writer connects first: it creates a new database, with its page size.
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("store: connect sqlite %s: %w", path, err)
	}
	if memory {
		// Shared-cache memory databases lock at table level; one pool avoids
		// SQLITE_LOCKED between readers and the writer.
		db.read = w
	} else {
		r, err := sql.Open("sqlite3", base+common+fmt.Sprintf("&_cache_size=-%d&mode=ro", readerCacheKiB))
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("store: open sqlite reader: %w", err)
		}
		r.SetMaxOpenConns(8)
		r.SetMaxIdleConns(8)
		db.read = r
		if db.ckpt, err = startCheckpointer(base + common); err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}

func openPostgres(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres %s: %w", redact(dsn), err)
	}
	// Every session plans serially: the queries are short index walks, most
	// cut by a LIMIT, and the planner may still choose a parallel plan from
	// row counts the LIMIT never reads. Starting its workers then costs more
	// than the walk: a listStaking page of a busy address took 14 ms with two
	// workers and 1 ms without (x5px, docs/benchmarks.md "PostgreSQL at five
	// million UTXOs"). A DSN that sets the parameter keeps its value.
	if _, set := cfg.RuntimeParams[serialParam]; !set {
		cfg.RuntimeParams[serialParam] = "0"
	}
	p := stdlib.OpenDB(*cfg)
	p.SetMaxOpenConns(32)
	p.SetMaxIdleConns(16)
	if err := p.PingContext(ctx); err != nil {
		p.Close()
		return nil, fmt.Errorf("store: connect postgres %s: %w", redact(dsn), err)
	}
	return &DB{dialect: Postgres, write: p, read: p, dsn: dsn}, nil
}

// serialParam is the PostgreSQL setting openPostgres gives every session.
const serialParam = "max_parallel_workers_per_gather"

// redact hides a password in a connection string for error messages and logs.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// Dialect reports the backend.
func (db *DB) Dialect() Dialect { return db.dialect }

// IndexedBy is " INDEXED BY index" on SQLite, "" on PostgreSQL: it pins
// SQLite, which plans without statistics, to an index where it would rather
// walk a table's primary key (PostgreSQL plans from its statistics and has
// no such clause). A renamed index fails the query loudly. An index a bulk
// catch-up deferred is not pinned: the query answers by another plan, more
// slowly, until the index is built (docs/operations.md).
func (db *DB) IndexedBy(ctx context.Context, index string) string {
	if db.dialect == SQLite && !db.IndexDeferred(ctx, index) {
		return " INDEXED BY " + index
	}
	return ""
}

// String describes the database without secrets.
func (db *DB) String() string { return redact(db.dsn) }

// Close closes both pools.
func (db *DB) Close() error {
	var err error
	if db.ckpt != nil {
		err = db.ckpt.close()
	}
	if db.exec != nil {
		db.exec.close()
	}
	if werr := db.write.Close(); err == nil {
		err = werr
	}
	if db.read != db.write {
		if rerr := db.read.Close(); err == nil {
			err = rerr
		}
	}
	return err
}

// Ping checks that the store answers (health checks).
func (db *DB) Ping(ctx context.Context) error { return db.read.PingContext(ctx) }

// QueryContext runs a read query on the read pool.
func (db *DB) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return db.read.QueryContext(ctx, q, args...)
}

// QueryRowContext runs a single-row read query on the read pool.
func (db *DB) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return db.read.QueryRowContext(ctx, q, args...)
}

// ExecContext runs one statement on the writer in its own transaction
// (small writes outside ingestion: page tokens, jobs, keys).
func (db *DB) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return db.write.ExecContext(ctx, q, args...)
}

// ReaderDB exposes the read pool (its statistics, for metrics).
func (db *DB) ReaderDB() *sql.DB { return db.read }

// WALBytes is the size of a file SQLite database's write-ahead log (0 on
// PostgreSQL, in memory, or without a log file).
func (db *DB) WALBytes() int64 {
	if db.path == "" {
		return 0
	}
	fi, err := os.Stat(db.path + "-wal")
	if err != nil {
		return 0
	}
	return fi.Size()
}

// WriterDB exposes the writer pool for code that needs database/sql directly
// (e.g. PostgreSQL COPY through the pgx connection).
func (db *DB) WriterDB() *sql.DB { return db.write }

// Migrate applies every embedded migration not yet applied, in file-name order,
// each in its own transaction with its bookkeeping row.
func (db *DB) Migrate(ctx context.Context) error {
	st, err := db.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	if len(st.Unknown) > 0 {
		return fmt.Errorf("%w: it has migrations this build does not know (%s): run a Permafrost at least as new as the one that migrated it",
			ErrNewerSchema, strings.Join(st.Unknown, ", "))
	}
	if len(st.Pending) > 0 && slices.Contains(st.Applied, deferredMigration) {
		// A pending migration may change or drop an index a bulk catch-up
		// deferred: the schema it migrates is the complete one.
		if err := db.BuildDeferredIndexes(ctx, nil); err != nil {
			return fmt.Errorf("store: before migrating: %w", err)
		}
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("store: list migrations: %w", err)
	}
	sort.Strings(names)
	if db.dialect == SQLite {
		// Data migrations rewrite whole tables and build indexes over them.
		restore, err := db.bulkSort(ctx)
		if err != nil {
			return fmt.Errorf("store: migrations: %w", err)
		}
		defer restore()
	}
	for _, name := range names {
		base := filepath.Base(name)
		if !db.dialect.owns(base) {
			continue
		}
		var one int
		err := db.write.QueryRowContext(ctx, `SELECT 1 FROM schema_migrations WHERE name = $1`, base).Scan(&one)
		if err == nil {
			continue
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: check migration %s: %w", base, err)
		}
		body, err := migrationFS.ReadFile(name)
		if err != nil {
			return fmt.Errorf("store: read migration %s: %w", base, err)
		}
		if err := db.applyMigration(ctx, base, db.translate(string(body))); err != nil {
			return err
		}
	}
	return nil
}

// ErrNewerSchema says a newer Permafrost migrated the database.
var ErrNewerSchema = errors.New("store: the database was migrated by a newer version")

// Migrations is what MigrationStatus reports: this build's migrations that
// apply to the backend, split into applied and pending, and those the
// database has applied that this build does not know (a newer version's).
type Migrations struct {
	Applied, Pending, Unknown []string
	// AppliedAt is when each applied migration was applied (unix seconds).
	AppliedAt map[string]int64
}

// SchemaVersion is the newest migration this build has (its file name
// without .sql): what `permafrost version` prints.
func SchemaVersion() string {
	names, _ := fs.Glob(migrationFS, "migrations/*.sql")
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	v := strings.TrimSuffix(filepath.Base(names[len(names)-1]), ".sql")
	return strings.TrimSuffix(strings.TrimSuffix(v, ".postgres"), ".sqlite")
}

// MigrationStatus reads which migrations the database has applied, without
// applying any.
func (db *DB) MigrationStatus(ctx context.Context) (Migrations, error) {
	m := Migrations{AppliedAt: map[string]int64{}}
	if _, err := db.write.ExecContext(ctx,
		`CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return m, fmt.Errorf("store: create schema_migrations: %w", err)
	}
	rows, err := db.write.QueryContext(ctx, `SELECT name, applied_at FROM schema_migrations`)
	if err != nil {
		return m, fmt.Errorf("store: read schema_migrations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var at int64
		if err := rows.Scan(&name, &at); err != nil {
			return m, fmt.Errorf("store: read schema_migrations: %w", err)
		}
		m.AppliedAt[name] = at
	}
	if err := rows.Err(); err != nil {
		return m, fmt.Errorf("store: read schema_migrations: %w", err)
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return m, fmt.Errorf("store: list migrations: %w", err)
	}
	known := map[string]bool{}
	for _, name := range names {
		base := filepath.Base(name)
		known[base] = true
		if !db.dialect.owns(base) {
			continue
		}
		if _, ok := m.AppliedAt[base]; ok {
			m.Applied = append(m.Applied, base)
		} else {
			m.Pending = append(m.Pending, base)
		}
	}
	for name := range m.AppliedAt {
		if !known[name] {
			m.Unknown = append(m.Unknown, name)
		}
	}
	sort.Strings(m.Applied)
	sort.Strings(m.Pending)
	sort.Strings(m.Unknown)
	return m, nil
}

// owns reports whether a migration file applies to this backend: NAME.sql to
// both, NAME.postgres.sql or NAME.sqlite.sql to that backend only (settings
// that exist on one side alone, such as TOAST compression).
func (d Dialect) owns(file string) bool {
	switch {
	case strings.HasSuffix(file, ".postgres.sql"):
		return d == Postgres
	case strings.HasSuffix(file, ".sqlite.sql"):
		return d == SQLite
	}
	return true
}

func (db *DB) applyMigration(ctx context.Context, name, body string) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migration %s: begin: %w", name, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	for _, stmt := range splitStatements(body) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("store: migration %s: %w\n%s", name, err, stmt)
		}
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (name, applied_at) VALUES ($1, $2)`, name, time.Now().Unix()); err != nil {
		return fmt.Errorf("store: migration %s: record: %w", name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: migration %s: commit: %w", name, err)
	}
	return nil
}

// bulkSort readies the SQLite writer for statements that sort whole tables
// (index builds, data migrations) and returns what puts it back. Their
// temporary b-trees (an UPDATE of a primary key collects the rows first, an
// index build sorts its entries) go to temporary files, not to the writer's
// memory (writerPragmas); and the sorter may use the other cores: one
// helper thread on two cores took the deferred indexes' build at 270,000
// blocks from 57-64 s to 40-44 s, for 10% more CPU time (docs/benchmarks.md
// "Eighteenth session").
func (db *DB) bulkSort(ctx context.Context) (restore func(), err error) {
	threads := min(runtime.NumCPU()-1, 4)
	for _, p := range []string{"PRAGMA temp_store = FILE", fmt.Sprintf("PRAGMA threads = %d", threads)} {
		if _, err := db.write.ExecContext(ctx, p); err != nil {
			return nil, err
		}
	}
	return func() {
		// Best effort: only speed and memory.
		ctx := context.WithoutCancel(ctx)
		db.write.ExecContext(ctx, "PRAGMA temp_store = MEMORY") //nolint:errcheck
		db.write.ExecContext(ctx, "PRAGMA threads = 0")         //nolint:errcheck
	}, nil
}

// translate maps the shared schema dialect onto the backend: BLOB becomes BYTEA
// and SQLite's WITHOUT ROWID table option is dropped on PostgreSQL.
// Everything else in migrations is common SQL.
func (db *DB) translate(q string) string {
	if db.dialect == Postgres {
		q = strings.ReplaceAll(q, " BLOB", " BYTEA")
		q = strings.ReplaceAll(q, " WITHOUT ROWID", "")
	}
	return q
}

// splitStatements splits a migration on semicolons that end a line; comments
// starting with -- are dropped.
func splitStatements(body string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(body, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") || trimmed == "" {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// writerStmtCache is how many prepared statements the SQLite writer keeps
// between transactions, in sqliteExec (writes) and in the driver (queries
// inside transactions, and writes sqliteExec leaves to it): ingestion's
// multi-row inserts, one per table and row count, were prepared again in
// every transaction (4% of the writer's time).
const writerStmtCache = 512

// writerCacheKiB is the writer's page cache.
const writerCacheKiB = 65536

// readerCacheKiB is each read connection's page cache. The pages are in the
// OS page cache anyway (a miss here costs a read call and a copy); eight
// readers at the writer's 64 MiB each took an API replica to a 484 MB peak
// RSS under 8 clients on the five-times dataset (docs/benchmarks.md "Five
// million rows"), 16 MiB each bounds them to 128 MiB.
const readerCacheKiB = 16384

// pageSize is the page size of a new SQLite database (see writerPragmas).
const pageSize = 8192

// writerPragmas tune the SQLite writer connection for ingestion (measured
// with BenchmarkIngestEVM, see docs/benchmarks.md "Ingestion"):
//   - temp_store=MEMORY: a multi-row INSERT that can fail halfway keeps a
//     statement journal (the pages it changes, to undo just that statement);
//     in a temp file, that was three quarters of the bytes SQLite wrote.
//   - page_size=8192 (new databases only; a database keeps the page size it
//     was created with): each commit appends the pages the batch changed to
//     the WAL with two write calls per page, and the random-key indexes
//     change a page or more per row. Half as many pages: ingestion 3-7%
//     faster, for ~60 MB more peak memory (docs/benchmarks.md).
//   - journal_mode=WAL (file databases), after the page size: a database in
//     WAL mode cannot change its page size.
//   - wal_autocheckpoint (file databases): only a backstop; checkpoints run
//     on the checkpointer's connection (see checkpointer).
func writerPragmas(file bool) []string {
	p := []string{fmt.Sprintf("PRAGMA page_size = %d", pageSize), "PRAGMA temp_store = MEMORY"}
	if file {
		p = append(p, "PRAGMA journal_mode = WAL", fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", walBackstopPages))
	}
	return p
}

// sqliteConnector opens mattn/go-sqlite3 connections and runs pragmas the
// DSN cannot carry on each, without registering a driver name globally.
type sqliteConnector struct {
	dsn     string
	pragmas []string
}

func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) {
	return c.Driver().Open(c.dsn)
}

func (c sqliteConnector) Driver() driver.Driver {
	return &sqlite3.SQLiteDriver{ConnectHook: func(conn *sqlite3.SQLiteConn) error {
		for _, p := range c.pragmas {
			if _, err := conn.Exec(p, nil); err != nil {
				return fmt.Errorf("store: sqlite %s: %w", p, err)
			}
		}
		return nil
	}}
}

// MigrationText is an embedded migration's SQL (tests of data migrations).
func MigrationText(name string) (string, error) {
	b, err := migrationFS.ReadFile("migrations/" + name)
	return string(b), err
}

// IsTransient reports whether err is a write conflict that the same
// transaction, run again, gets past: PostgreSQL's deadlock and serialization
// failures (concurrent chain writers touch shared rows such as atomic UTXOs).
func IsTransient(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}
