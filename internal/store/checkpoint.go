package store

import (
	"context"
	"database/sql"
	"fmt"
)

// walBackstopPages is the writer's own wal_autocheckpoint, so the WAL cannot
// grow without bound: reached when the background checkpointer falls behind
// (e.g. long readers hold old snapshots), and every few batches of a bulk
// catch-up: SQLite restarts the WAL only when a write transaction begins
// with every frame copied, which back-to-back batches never see, so there
// the WAL grows until a commit passes this and checkpoints on the writer
// (docs/benchmarks.md "Eleventh session": 250,000 pages did not help).
const walBackstopPages = 100000 // 800 MB at 8 KiB pages (400 MB at 4 KiB)

// checkpointer copies the WAL back into a file database on its own
// connection, right after each commit (PASSIVE: it never blocks the writer or
// readers). Left to the writer (SQLite's default, at commit once the WAL
// holds 1,000 pages), every ingest batch's commit also paid for copying the
// batch's pages into the database and its fsync, on the ingest's critical
// path (docs/benchmarks.md "Ingestion").
type checkpointer struct {
	conn   *sql.DB
	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

func startCheckpointer(dsn string) (*checkpointer, error) {
	conn, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite checkpointer: %w", err)
	}
	conn.SetMaxOpenConns(1)
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{conn: conn, kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go c.run(ctx)
	return c, nil
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
			// A busy or failed attempt is retried after the next commit; the
			// writer's backstop bounds the WAL meanwhile.
			_, _ = c.conn.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
		}
	}
}

// committed asks for a checkpoint; it never waits.
func (c *checkpointer) committed() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *checkpointer) close() error {
	c.cancel()
	<-c.done
	return c.conn.Close()
}
