package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// A commit's pages reach the database file without another commit or a
// close: the background checkpointer copied them (the writer's own
// autocheckpoint is only a backstop at 100,000 pages).
func TestCheckpointerCopiesWALAfterCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ck.db")
	db, err := store.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE big (k INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	size := func(p string) int64 {
		fi, err := os.Stat(p)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	// Let the table creation's checkpoint finish first.
	waitFor(t, func() bool { return size(path) > 0 })
	before := size(path)

	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v := strings.Repeat("x", 1000)
	for i := 0; i < 2000; i++ { // ~2 MB: 500 pages, below the backstop
		if _, err := tx.Exec(ctx, `INSERT INTO big (k, v) VALUES ($1, $2)`, i, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return size(path) >= before+2_000_000 })
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM big`).Scan(&n); err != nil || n != 2000 {
		t.Fatalf("count %d, %v", n, err)
	}
}

// waitFor polls cond for up to 10 s (a bound on a background step, not a
// timing assertion).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not reached in 10 s")
}
