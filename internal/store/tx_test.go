package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// Queued COPYs (Tx.QueueCopy; queued on PostgreSQL, run at once on SQLite)
// land in order before any later statement of the transaction, which reads
// them; a failed one is the transaction's error: a later statement or the
// commit reports it and nothing of the transaction stays, the rows queued
// before the failure included.
func TestQueuedCopies(t *testing.T) {
	cols := []string{"k", "s"}
	lot := func(from, n int) [][]any {
		rows := make([][]any, n)
		for i := range rows {
			rows[i] = []any{int64(from + i), "v"}
		}
		return rows
	}
	cases := []struct {
		name string
		lots [][][]any // queued in order; a statement runs after the second
		// fails: a lot repeats a key; the error names this text.
		fails string
		// commitFirst: after the lots, Commit is the first call to wait
		// for them (no statement in between).
		commitFirst bool
		want        int // rows after
	}{
		{name: "three lots and a statement between", lots: [][][]any{lot(1, 5000), lot(5001, 3000), lot(8001, 2)}, want: 8002},
		{name: "the second lot fails", lots: [][][]any{lot(1, 5000), lot(4000, 10), lot(9000, 5)}, fails: "q_test"},
		{name: "the last lot fails, the commit reports it", lots: [][][]any{lot(1, 100), lot(101, 100), lot(150, 1)}, fails: "q_test", commitFirst: true},
	}
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if _, err := db.ExecContext(ctx, `DROP TABLE IF EXISTS q_test`); err != nil {
					t.Fatal(err)
				}
				if _, err := db.ExecContext(ctx, `CREATE TABLE q_test (k BIGINT PRIMARY KEY, s TEXT NOT NULL)`); err != nil {
					t.Fatal(err)
				}
				tx, err := db.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var first error
				step := func(err error) {
					if first == nil {
						first = err
					}
				}
				for i, rows := range c.lots {
					step(tx.QueueCopy(ctx, "q_test", cols, rows))
					if i != 1 || c.commitFirst {
						continue
					}
					// Reads what the lots before it wrote: the first two, whole.
					var n, hi int64
					err := tx.QueryRow(ctx, `SELECT COUNT(*), COALESCE(MAX(k), 0) FROM q_test`).Scan(&n, &hi)
					step(err)
					if first == nil && (n != int64(len(c.lots[0])+len(c.lots[1])) || hi != c.lots[1][len(c.lots[1])-1][0].(int64)) {
						t.Fatalf("mid-transaction read: %d rows up to %d; want the two lots queued before it", n, hi)
					}
					_, err = tx.Exec(ctx, `INSERT INTO q_test (k, s) VALUES (100000, 'exec')`)
					step(err)
				}
				if first == nil {
					first = tx.Commit()
				} else if err := tx.Rollback(); err != nil {
					t.Fatal(err)
				}
				if c.fails == "" {
					if first != nil {
						t.Fatal(first)
					}
				} else if first == nil || !strings.Contains(first.Error(), c.fails) {
					t.Fatalf("error %v; want the failed COPY's, naming %s", first, c.fails)
				}
				want := c.want
				if c.want > 0 && !c.commitFirst {
					want++ // the statement's row
				}
				var n int
				if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM q_test`).Scan(&n); err != nil || n != want {
					t.Fatalf("%d rows stay (%v); want %d", n, err, want)
				}
				// The writer's connection is usable again.
				tx2, err := db.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx2.Exec(ctx, `INSERT INTO q_test (k, s) VALUES (200000, 'next')`); err != nil {
					t.Fatal(err)
				}
				if err := tx2.Commit(); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}
