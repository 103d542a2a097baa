package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"
)

// ErrWriterBusy says another process holds the database's writer lock.
var ErrWriterBusy = errors.New("another process is writing to this database")

// writerLockKey is the PostgreSQL advisory lock of the one writer (any
// 64-bit number no other application on the database uses).
const writerLockKey = 0x5045524d4146 // "PERMAF"

// Writer is the database's writer lock, held for as long as a process
// ingests or reindexes: two writers would interleave checkpoints and
// derived rows. It is tied to the holding process (a PostgreSQL session's
// advisory lock, an flock on a file beside a SQLite database), so a
// crashed writer's lock goes with it.
type Writer struct {
	release func() error
}

// Release gives the lock up.
func (w *Writer) Release() error {
	if w == nil || w.release == nil {
		return nil
	}
	err := w.release()
	w.release = nil
	return err
}

// AcquireWriter takes the writer lock for holder (e.g. "serve pid 123 on
// host"), or fails at once with ErrWriterBusy naming the process that holds
// it. An in-memory SQLite database is private to its process: no lock.
func (db *DB) AcquireWriter(ctx context.Context, holder string) (*Writer, error) {
	holder = fmt.Sprintf("%s (since %s)", holder, time.Now().UTC().Format(time.RFC3339))
	if db.dialect == Postgres {
		return db.acquirePostgresWriter(ctx, holder)
	}
	path := db.sqlitePath()
	if path == "" {
		return &Writer{}, nil
	}
	return acquireFileWriter(path+"-writer.lock", holder)
}

// sqlitePath is the file of a SQLite database ("" in memory).
func (db *DB) sqlitePath() string {
	p := strings.TrimPrefix(db.dsn, "sqlite:")
	p, _, _ = strings.Cut(p, "?")
	if p == "" || p == ":memory:" {
		return ""
	}
	return p
}

func acquireFileWriter(path, holder string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: writer lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := io.ReadAll(io.LimitReader(f, 1024))
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s (lock file %s)", ErrWriterBusy, strings.TrimSpace(string(b)), path)
		}
		return nil, fmt.Errorf("store: writer lock %s: %w", path, err)
	}
	// The holder, for the next process that finds the lock taken.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(holder+"\n"), 0)
	}
	return &Writer{release: func() error {
		_ = f.Truncate(0)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return f.Close()
	}}, nil
}

func (db *DB) acquirePostgresWriter(ctx context.Context, holder string) (*Writer, error) {
	// The lock belongs to one session: keep its connection out of the pool.
	conn, err := db.write.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: writer lock: %w", err)
	}
	var ok bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, int64(writerLockKey)).Scan(&ok); err != nil {
		conn.Close()
		return nil, fmt.Errorf("store: writer lock: %w", err)
	}
	if !ok {
		var who string
		err := conn.QueryRowContext(ctx, `SELECT holder FROM writer_lease WHERE id = 1`).Scan(&who)
		conn.Close()
		if errors.Is(err, sql.ErrNoRows) {
			who = "an unnamed process"
		}
		return nil, fmt.Errorf("%w: %s", ErrWriterBusy, who)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO writer_lease (id, holder) VALUES (1, $1)
		ON CONFLICT (id) DO UPDATE SET holder = excluded.holder`, holder); err != nil {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(writerLockKey))
		conn.Close()
		return nil, fmt.Errorf("store: writer lock: %w", err)
	}
	return &Writer{release: func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, int64(writerLockKey))
		return conn.Close()
	}}, nil
}
