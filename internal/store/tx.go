package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Tx is one write transaction. Ingestion writes a batch of blocks and the
// chain checkpoint through one Tx, so a crash leaves either all or none.
// A batch executes the same few inserts thousands of times: statements stay
// prepared (see Exec).
type Tx struct {
	db    *DB
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
}

// Begin starts a write transaction on the writer.
func (db *DB) Begin(ctx context.Context) (*Tx, error) {
	t, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: begin: %w", err)
	}
	return &Tx{db: db, tx: t, stmts: make(map[string]*sql.Stmt)}, nil
}

// Dialect reports the backend of the transaction.
func (t *Tx) Dialect() Dialect { return t.db.dialect }

func (t *Tx) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
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

// Exec runs a statement. On SQLite the writer connection's own statement
// cache keeps it prepared across transactions (writerStmtCache); on
// PostgreSQL it is prepared once per transaction.
func (t *Tx) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	ctx = t.stmtCtx(ctx)
	var (
		res sql.Result
		err error
	)
	if t.db.dialect == SQLite {
		res, err = t.tx.ExecContext(ctx, q, args...)
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

// Query runs a query inside the transaction (reads its own writes).
func (t *Tx) Query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	ctx = t.stmtCtx(ctx)
	if t.db.dialect == SQLite {
		return t.tx.QueryContext(ctx, q, args...)
	}
	s, err := t.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

// QueryRow runs a single-row query inside the transaction.
func (t *Tx) QueryRow(ctx context.Context, q string, args ...any) *sql.Row {
	ctx = t.stmtCtx(ctx)
	if t.db.dialect == SQLite {
		return t.tx.QueryRowContext(ctx, q, args...)
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
		return t.Pgx(ctx, func(ctx context.Context, conn *pgx.Conn) error {
			if _, err := conn.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows)); err != nil {
				return fmt.Errorf("copy into %s: %w", table, err)
			}
			return nil
		})
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

// SQL exposes the underlying transaction for code that needs database/sql directly.
func (t *Tx) SQL() *sql.Tx { return t.tx }

// Commit commits and releases cached statements.
func (t *Tx) Commit() error {
	t.closeStmts()
	if err := t.tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	if t.db.ckpt != nil {
		t.db.ckpt.committed()
	}
	return nil
}

// Rollback aborts; safe to call after Commit (returns sql.ErrTxDone then).
func (t *Tx) Rollback() error {
	t.closeStmts()
	return t.tx.Rollback()
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
