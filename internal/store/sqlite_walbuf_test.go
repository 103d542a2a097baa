package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/mattn/go-sqlite3"
)

// writerConn is the SQLite writer's one connection, held by the test.
func writerConn(t *testing.T, db *DB) *sql.Conn {
	t.Helper()
	if walBufferVFS == "" {
		t.Fatal("the WAL buffer VFS is not registered")
	}
	c, err := db.write.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func walStats(t *testing.T, c *sql.Conn) walBufferStats {
	t.Helper()
	var st walBufferStats
	err := c.Raw(func(dc any) error {
		var ok bool
		if st, ok = walBufferStatsOf(dc.(*sqlite3.SQLiteConn)); !ok {
			return fmt.Errorf("the writer's WAL is not open through %s", walBufferVFS)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// querier is a connection or a pool.
type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// digest is the table's rows as q sees them: their count and a hash.
func digest(t *testing.T, q querier) (int, string) {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), `SELECT k, v FROM t ORDER BY k`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	h, n := sha256.New(), 0
	for rows.Next() {
		var k int64
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%d:%x;", k, v)
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n, fmt.Sprintf("%x", h.Sum(nil))
}

// sameRows checks that who (q) sees the n rows of digest want.
func sameRows(t *testing.T, who string, q querier, n int, want string) {
	t.Helper()
	if got, sum := digest(t, q); got != n || sum != want {
		t.Fatalf("%s: %d rows (%s), the writer %d (%s)", who, got, sum, n, want)
	}
}

func integrityOK(t *testing.T, who string, q querier) {
	t.Helper()
	var ok string
	if err := q.QueryRowContext(context.Background(), `PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("%s: integrity_check %q, %v", who, ok, err)
	}
}

// crashCopy copies the database and its WAL as a killed process leaves them
// (no checkpoint, no shared memory), opens the copy through the default VFS,
// which recovers it from the WAL alone, and checks it is sound.
func crashCopy(t *testing.T, path string) *sql.DB {
	t.Helper()
	dir := t.TempDir()
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "c.db"+suffix), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	integrityOK(t, "the crash copy", c)
	return c
}

func fill(t *testing.T, tx *sql.Tx, r *rand.Rand, n, size int) {
	t.Helper()
	for i := 0; i < n; i++ {
		v := make([]byte, size)
		for j := range v {
			v[j] = byte(r.Uint32())
		}
		if _, err := tx.Exec(`INSERT OR REPLACE INTO t (k, v) VALUES (?, ?)`, r.Int64N(1<<40), v); err != nil {
			t.Fatal(err)
		}
	}
}

// A commit's frames reach the WAL file in a few large writes, every one of
// them before the commit returns: a reader, and a copy of the files taken
// right after (as a crash would leave them), see every row.
func TestWALBufferGathersCommitFrames(t *testing.T) {
	ctx := context.Background()
	db := testSQLite(t)
	c := writerConn(t, db)
	if _, err := c.ExecContext(ctx, `CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)`); err != nil {
		t.Fatal(err)
	}
	before := walStats(t, c)
	r := rand.New(rand.NewPCG(1, 2))
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, tx, r, 3000, 2000) // ~750 pages of 8 KiB, in key order
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	st := walStats(t, c)
	writes, calls := st.Writes-before.Writes, st.Calls-before.Calls
	// SQLite writes a frame in two calls (header, page).
	if writes < 1400 {
		t.Fatalf("SQLite wrote %d times to the WAL: the transaction is smaller than meant", writes)
	}
	t.Logf("SQLite's writes to the WAL %d, write calls to the file %d, bytes %d", writes, calls, st.Bytes-before.Bytes)
	if calls*10 > writes {
		t.Fatalf("%d of SQLite's %d writes reached the file as calls of their own: not gathered", calls, writes)
	}
	if st.Bytes-before.Bytes < 700*8192 {
		t.Fatalf("%d bytes written to the WAL for ~750 pages", st.Bytes-before.Bytes)
	}
	n, want := digest(t, c)
	if n != 3000 {
		t.Fatalf("the writer reads %d rows, want 3000", n)
	}
	sameRows(t, "a reader", db.read, n, want)
	sameRows(t, "the crash copy", crashCopy(t, db.path), n, want)
}

// A transaction bigger than the writer's page cache spills pages to the WAL
// before its commit, reads them back (from the buffer while they are in it)
// and writes them again in place at the commit, where SQLite rewrites the
// frames' checksums: every path of the buffer (with a cache this small most
// pages are rewritten in place after the buffer has gone to the file, so
// few writes are gathered). A transaction rolled back after spilling leaves
// nothing behind.
func TestWALBufferSpilledTransactions(t *testing.T) {
	ctx := context.Background()
	db := testSQLite(t)
	c := writerConn(t, db)
	for _, q := range []string{
		`PRAGMA cache_size = 40`, // pages: the transactions below spill
		`CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)`,
		`CREATE INDEX t_v ON t (v)`, // random keys: each insert touches an old page
	} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	before := walStats(t, c)
	var want string
	var rows int
	for i, commit := range []bool{true, false, true, true} {
		tx, err := c.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		fill(t, tx, r, 1500, 300)
		// Rows written earlier in the transaction, changed again: their
		// pages were spilled and are read back.
		if _, err := tx.Exec(`UPDATE t SET v = randomblob(300) WHERE k % 7 = ?`, i); err != nil {
			t.Fatal(err)
		}
		if !commit {
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		rows, want = digest(t, c)
	}
	st := walStats(t, c)
	if st.Served == before.Served {
		t.Fatal("no read was served from the buffer: the transactions did not spill into it")
	}
	integrityOK(t, "the writer", c)
	sameRows(t, "a reader", db.read, rows, want)
	sameRows(t, "the crash copy", crashCopy(t, db.path), rows, want)
}
