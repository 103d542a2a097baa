package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mattn/go-sqlite3"
)

// Tx is one write transaction. Ingestion writes a batch of blocks and the
// chain checkpoint through one Tx, so a crash leaves either all or none.
//
// On SQLite the transaction is begun by hand (BEGIN IMMEDIATE) on the
// writer's connection, and Exec hands statements straight to that
// connection: database/sql's Tx offers no access to it, and its per-call
// argument conversion and locking were a tenth of the ingest writer's time.
// Exec runs a statement through sqliteExec (one cgo call per statement) and
// leaves what that does not take to the driver; queries go to the driver.
// Both keep statements prepared across transactions (writerStmtCache). On
// PostgreSQL it is a database/sql transaction whose statements are prepared
// once per transaction; its bulk loads may be queued (Queue) to run on its
// connection while the caller goes on.
type Tx struct {
	db *DB
	// PostgreSQL
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
	q     *txQueue // Queue's work, started by its first call
	// atCommit is QueueAtCommit's work, queued when the transaction commits.
	atCommit []queued
	// prev is the transaction this one follows (BeginAfter): a commit still
	// in flight, nil once it has been seen to succeed.
	prev *Pending
	// SQLite
	conn  *sql.Conn
	named []driver.NamedValue
	done  bool
}

// Begin starts a write transaction on the writer.
func (db *DB) Begin(ctx context.Context) (*Tx, error) {
	return db.BeginAfter(ctx, nil)
}

// BeginAfter starts a write transaction that follows prev, a transaction
// whose commit may still be running (CommitAsync; nil: none). On
// PostgreSQL it runs on another connection while prev commits, with these
// rules (docs/benchmarks.md, "PostgreSQL write path", tenth session):
// every read in the transaction (Query, QueryRow) first waits for prev's
// commit, so it sees prev's rows (QueryCommitted does not: see there);
// Commit waits for it too, and fails without committing anything if prev
// failed. Writes (Exec, Pgx, CopyFrom,
// queued work) do not wait: PostgreSQL makes a write of a row prev wrote
// wait for prev's end, and rows of prev's that an UPDATE or DELETE would
// miss (uncommitted inserts are invisible) must be locked or read first
// by the caller, which then waits. On SQLite (one writer connection) prev
// has committed already (CommitAsync commits at once).
func (db *DB) BeginAfter(ctx context.Context, prev *Pending) (*Tx, error) {
	if db.dialect == SQLite {
		conn, err := db.write.Conn(ctx)
		if err != nil {
			return nil, fmt.Errorf("store: begin: %w", err)
		}
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			conn.Close()
			return nil, fmt.Errorf("store: begin: %w", err)
		}
		return &Tx{db: db, conn: conn}, nil
	}
	t, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: begin: %w", err)
	}
	return &Tx{db: db, tx: t, stmts: make(map[string]*sql.Stmt), prev: prev}, nil
}

// Pending is a commit running on its own (Tx.CommitAsync).
type Pending struct {
	done chan struct{}
	err  error
}

// Wait returns once the commit ended, with its error (nil: committed). A
// nil Pending has nothing to wait for.
func (p *Pending) Wait() error {
	if p == nil {
		return nil
	}
	<-p.done
	return p.err
}

// Done is closed once the commit ended.
func (p *Pending) Done() <-chan struct{} { return p.done }

// waitPrev waits for the transaction this one follows to commit.
func (t *Tx) waitPrev() error {
	if t.prev == nil {
		return nil
	}
	if err := t.prev.Wait(); err != nil {
		return fmt.Errorf("store: the previous transaction failed: %w", err)
	}
	t.prev = nil
	return nil
}

// Dialect reports the backend of the transaction.
func (t *Tx) Dialect() Dialect { return t.db.dialect }

// IndexDeferred is the database's IndexDeferred: whether a bulk catch-up
// has index deferred.
func (t *Tx) IndexDeferred(ctx context.Context, index string) bool {
	return t.db.IndexDeferred(ctx, index)
}

func (t *Tx) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if err := t.wait(); err != nil {
		return nil, err
	}
	if s, ok := t.stmts[q]; ok {
		return s, nil
	}
	s, err := t.tx.PrepareContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("store: prepare %q: %w", abbreviate(q), err)
	}
	t.stmts[q] = s
	return s, nil
}

// stmtCtx is the context a statement of the transaction runs with. On SQLite
// it cannot be cancelled: mattn/go-sqlite3 runs each statement of a
// cancellable context on a goroutine of its own (to interrupt it on
// cancellation), a goroutine start and a wake-up across threads per
// statement, a tenth of the ingest writer's time. A write transaction's
// statements are short and in-process; its caller decides between them
// whether to go on.
func (t *Tx) stmtCtx(ctx context.Context) context.Context {
	if t.db.dialect == SQLite {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// Exec runs a statement.
func (t *Tx) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	ctx = t.stmtCtx(ctx)
	var (
		res sql.Result
		err error
	)
	if t.conn != nil {
		if t.done {
			return nil, sql.ErrTxDone
		}
		res, err = t.execDriver(ctx, q, args)
	} else {
		var s *sql.Stmt
		if s, err = t.stmt(ctx, q); err != nil {
			return nil, err
		}
		res, err = s.ExecContext(ctx, args...)
	}
	if err != nil {
		return nil, fmt.Errorf("store: exec %q: %w", abbreviate(q), err)
	}
	return res, nil
}

// execDriver runs q on the SQLite driver connection.
func (t *Tx) execDriver(ctx context.Context, q string, args []any) (sql.Result, error) {
	t.named = t.named[:0]
	for i, a := range args {
		v, err := driverValue(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		t.named = append(t.named, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	var res driver.Result
	err := t.conn.Raw(func(dc any) error {
		if sc, ok := dc.(*sqlite3.SQLiteConn); ok && t.db.exec != nil {
			r, done, err := t.db.exec.exec(sc, q, t.named)
			if done {
				res = r
				return err
			}
		}
		ex, ok := dc.(driver.ExecerContext)
		if !ok {
			return fmt.Errorf("driver connection %T cannot execute statements", dc)
		}
		var err error
		res, err = ex.ExecContext(ctx, q, t.named)
		return err
	})
	clear(t.named) // the values may be large; do not keep them alive
	return res, err
}

// driverValue is a value as the driver takes it: what the ingest writers
// bind (strings, int64s, bytes) as is, anything else as database/sql would
// convert it.
func driverValue(a any) (driver.Value, error) {
	switch a.(type) {
	case nil, string, int64, []byte, float64, bool, time.Time:
		return a, nil
	}
	return driver.DefaultParameterConverter.ConvertValue(a)
}

// Query runs a query inside the transaction (reads its own writes).
func (t *Tx) Query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	ctx = t.stmtCtx(ctx)
	if err := t.waitPrev(); err != nil {
		return nil, err
	}
	if t.conn != nil {
		if t.done {
			return nil, sql.ErrTxDone
		}
		return t.conn.QueryContext(ctx, q, args...)
	}
	s, err := t.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

// QueryCommitted runs a read of tables the transaction has not written: on
// PostgreSQL on another connection of the pool (it sees what is committed,
// which is then what the transaction sees), so it does not wait for queued
// work (Queue) on the transaction's connection, nor for the commit of the
// transaction this one follows (BeginAfter): the caller holds in memory
// what that one changed in the rows it reads. On SQLite inside the
// transaction. For what the ingest writer reads mid-batch of tables it
// writes only at the batch's Flush (the current balances).
func (t *Tx) QueryCommitted(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if t.db.dialect != Postgres {
		return t.Query(ctx, q, args...)
	}
	return t.db.read.QueryContext(ctx, q, args...)
}

// QueryRow runs a single-row query inside the transaction.
func (t *Tx) QueryRow(ctx context.Context, q string, args ...any) *sql.Row {
	ctx = t.stmtCtx(ctx)
	if t.conn != nil {
		// After Commit or Rollback the connection is closed: Scan reports it.
		return t.conn.QueryRowContext(ctx, q, args...)
	}
	err := t.waitPrev()
	if err == nil {
		err = t.wait()
	}
	if err != nil {
		// Queued work or the previous transaction failed: Scan reports
		// the error (pgx runs the rewriter, which fails, before it sends
		// anything).
		return t.tx.QueryRowContext(ctx, q, pgxCall(func(context.Context, *pgx.Conn) error { return err }))
	}
	s, err := t.stmt(ctx, q)
	if err != nil {
		// A failed prepare surfaces at Scan through the transaction's own QueryRow.
		return t.tx.QueryRowContext(ctx, q, args...)
	}
	return s.QueryRowContext(ctx, args...)
}

// Pgx runs fn with the pgx connection under the transaction (PostgreSQL
// only), for what database/sql cannot express: COPY, pipelined batches.
func (t *Tx) Pgx(ctx context.Context, fn func(ctx context.Context, conn *pgx.Conn) error) error {
	if t.db.dialect != Postgres {
		return errors.New("store: no pgx connection under a SQLite transaction")
	}
	if err := t.wait(); err != nil {
		return err
	}
	return t.pgx(ctx, fn)
}

// pgx runs fn on the connection now: the caller has waited for Queue's work.
func (t *Tx) pgx(ctx context.Context, fn func(ctx context.Context, conn *pgx.Conn) error) error {
	// pgx's stdlib driver passes Exec arguments through, and pgx calls a
	// QueryRewriter first argument with its *pgx.Conn: fn runs there, then
	// the empty statement ";".
	if _, err := t.tx.ExecContext(ctx, ";", pgxCall(fn)); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

type pgxCall func(ctx context.Context, conn *pgx.Conn) error

func (f pgxCall) RewriteQuery(ctx context.Context, conn *pgx.Conn, sql string, args []any) (string, []any, error) {
	if err := f(ctx, conn); err != nil {
		return "", nil, err
	}
	return sql, args, nil
}

// CopyFrom loads rows into table's columns: one COPY on PostgreSQL, one
// prepared INSERT per row on SQLite (in-process: no round trips to save).
func (t *Tx) CopyFrom(ctx context.Context, table string, cols []string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	if t.db.dialect == Postgres {
		return t.Pgx(ctx, copyRows(table, cols, rows))
	}
	q := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES ("
	for i := range cols {
		if i > 0 {
			q += ", "
		}
		q += fmt.Sprintf("$%d", i+1)
	}
	q += ")"
	for _, r := range rows {
		if _, err := t.Exec(ctx, q, r...); err != nil {
			return err
		}
	}
	return nil
}

// Commit commits and releases the transaction's connection. It fails, and
// rolls back, if any of Queue's work failed or the transaction it follows
// (BeginAfter) did.
func (t *Tx) Commit() error {
	if err := t.waitPrev(); err != nil {
		_ = t.Rollback()
		return fmt.Errorf("store: commit: %w", err)
	}
	for _, w := range t.atCommit {
		if err := t.Queue(w.ctx, w.fn); err != nil {
			break // stopQueue below reports it
		}
	}
	t.atCommit = nil
	if t.q != nil {
		if err := t.stopQueue(); err != nil {
			t.closeStmts()
			_ = t.tx.Rollback()
			return fmt.Errorf("store: commit: %w", err)
		}
	}
	if t.conn != nil {
		if t.done {
			return sql.ErrTxDone
		}
		t.done = true
		defer t.conn.Close()
		if _, err := t.conn.ExecContext(context.Background(), "COMMIT"); err != nil {
			// The connection goes back to the pool: never inside a transaction.
			_, _ = t.conn.ExecContext(context.Background(), "ROLLBACK")
			return fmt.Errorf("store: commit: %w", err)
		}
	} else {
		t.closeStmts()
		if err := t.tx.Commit(); err != nil {
			return fmt.Errorf("store: commit: %w", err)
		}
	}
	if t.db.ckpt != nil {
		t.db.ckpt.committed()
	}
	return nil
}

// Rollback aborts; safe to call after Commit (returns sql.ErrTxDone then).
func (t *Tx) Rollback() error {
	if t.conn != nil {
		if t.done {
			return sql.ErrTxDone
		}
		t.done = true
		defer t.conn.Close()
		_, err := t.conn.ExecContext(context.Background(), "ROLLBACK")
		return err
	}
	t.atCommit = nil
	if t.q != nil {
		_ = t.stopQueue() // the caller has its own error to report
	}
	t.closeStmts()
	return t.tx.Rollback()
}

// CommitAsync commits like Commit, on a goroutine of its own on
// PostgreSQL: the queued work, the commit and then release run there while
// the caller goes on (a transaction begun with BeginAfter(ctx, pending)
// follows it). On SQLite it commits at once. release, if set, runs once
// the commit ended (the caller's context of the queued work, for one).
func (t *Tx) CommitAsync(release func()) *Pending {
	p := &Pending{done: make(chan struct{})}
	finish := func() {
		p.err = t.Commit()
		if release != nil {
			release()
		}
		close(p.done)
	}
	if t.db.dialect != Postgres {
		finish()
		return p
	}
	go finish()
	return p
}

func (t *Tx) closeStmts() {
	for q, s := range t.stmts {
		s.Close()
		delete(t.stmts, q)
	}
}

func abbreviate(q string) string {
	if len(q) > 80 {
		return q[:77] + "..."
	}
	return q
}

// QueueCopy loads rows into table's columns like CopyFrom, but on PostgreSQL
// the COPY is queued (Queue) and QueueCopy returns at once: rows must not
// change until the transaction ends. On SQLite it is CopyFrom.
func (t *Tx) QueueCopy(ctx context.Context, table string, cols []string, rows [][]any) error {
	if t.db.dialect != Postgres {
		return t.CopyFrom(ctx, table, cols, rows)
	}
	if len(rows) == 0 {
		return nil
	}
	return t.Queue(ctx, copyRows(table, cols, rows))
}

// copyRows is one COPY of rows into table's columns.
func copyRows(table string, cols []string, rows [][]any) func(ctx context.Context, conn *pgx.Conn) error {
	return func(ctx context.Context, conn *pgx.Conn) error {
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("copy into %s: %w", table, err)
		}
		return nil
	}
}

// Queue hands fn, a use of the transaction's pgx connection (PostgreSQL
// only), to a goroutine of the transaction that runs queued work in order,
// and returns without waiting for it: the server runs a batch's bulk loads
// while the ingest writer builds the next rows (docs/benchmarks.md,
// "PostgreSQL write path", ninth session). A connection runs one statement
// at a time, so every other use of the transaction (Exec, Query, QueryRow,
// Pgx, CopyFrom, Commit, Rollback) first waits until the queue is empty: a
// statement sees the rows of all work queued before it, in order. The
// first failure is the transaction's: Queue and every later use return it,
// later work is skipped, and Commit rolls back. Queue blocks while
// queueDepth calls wait (backpressure: the rows they hold are bounded).
// fn runs with ctx, which must last until the transaction ends.
func (t *Tx) Queue(ctx context.Context, fn func(ctx context.Context, conn *pgx.Conn) error) error {
	if t.db.dialect != Postgres {
		return errors.New("store: no queue under a SQLite transaction")
	}
	if t.q == nil {
		t.q = &txQueue{work: make(chan queued, queueDepth)}
		t.q.stopped.Add(1)
		go t.q.run(t)
	}
	if err := t.q.failed(); err != nil {
		return err
	}
	t.q.pending.Add(1)
	t.q.work <- queued{ctx: ctx, fn: fn}
	return nil
}

// QueueAtCommit queues fn (like Queue) when the transaction commits, after
// all other work: for rows that nothing in the transaction reads back, so
// that with CommitAsync they are loaded while the caller goes on. Rollback
// drops it. PostgreSQL only.
func (t *Tx) QueueAtCommit(ctx context.Context, fn func(ctx context.Context, conn *pgx.Conn) error) error {
	if t.db.dialect != Postgres {
		return errors.New("store: no queue under a SQLite transaction")
	}
	if t.q != nil {
		if err := t.q.failed(); err != nil {
			return err
		}
	}
	t.atCommit = append(t.atCommit, queued{ctx: ctx, fn: fn})
	return nil
}

// queueDepth is how many Queue calls may wait behind the one running.
const queueDepth = 2

// txQueue runs a transaction's queued work in order on one goroutine.
type txQueue struct {
	work    chan queued
	pending sync.WaitGroup // queued and not finished
	stopped sync.WaitGroup // the goroutine
	mu      sync.Mutex
	err     error // the first failure
}

type queued struct {
	ctx context.Context
	fn  func(ctx context.Context, conn *pgx.Conn) error
}

func (q *txQueue) run(t *Tx) {
	defer q.stopped.Done()
	for w := range q.work {
		if q.failed() == nil {
			if err := t.pgx(w.ctx, w.fn); err != nil {
				q.mu.Lock()
				q.err = fmt.Errorf("queued: %w", err)
				q.mu.Unlock()
			}
		}
		q.pending.Done()
	}
}

func (q *txQueue) failed() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// wait returns once the queued work has run, with its failure if any.
func (t *Tx) wait() error {
	if t.q == nil {
		return nil
	}
	t.q.pending.Wait()
	return t.q.failed()
}

// stopQueue waits for the queued work and ends the queue's goroutine.
func (t *Tx) stopQueue() error {
	err := t.wait()
	close(t.q.work)
	t.q.stopped.Wait()
	t.q = nil
	return err
}
