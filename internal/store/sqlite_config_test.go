package store

import (
	"context"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/testing/memstat"
)

// With memory statistics on, SQLite counts the bytes of every connection and
// statement; with them off (init), the count stays 0.
func TestSQLiteMemoryStatisticsOff(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, "sqlite:"+t.TempDir()+"/m.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (x TEXT); INSERT INTO t VALUES ('a'), ('b')`); err != nil {
		t.Fatal(err)
	}
	if used := sqliteMemoryUsed(); used != 0 {
		t.Fatalf("sqlite3_memory_used = %d with connections open; want 0 (statistics off)", used)
	}
}

// A page cache that shrinks hands its pages back to the OS (trimCHeap):
// the writer's cache filled with 96 MiB of pages, then cut to 2 MiB, leaves
// the process's anonymous resident memory at least 64 MiB smaller. Without
// the trim glibc kept the freed pages resident (a bulk catch-up's cache
// stayed under its index build: docs/benchmarks.md, "Twelfth session").
func TestShrunkWriterCacheLeavesRSS(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, "sqlite:"+t.TempDir()+"/m.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.setWriterCache(ctx, 128<<10); err != nil {
		t.Fatal(err)
	}
	// 24,000 rows of 4,000 bytes: about 96 MiB of pages, all in the cache.
	if _, err := db.write.ExecContext(ctx, `CREATE TABLE t (x BLOB);
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 24000)
		INSERT INTO t SELECT randomblob(4000) FROM n`); err != nil {
		t.Fatal(err)
	}
	var total int64
	if err := db.write.QueryRowContext(ctx, `SELECT sum(length(x)) FROM t`).Scan(&total); err != nil {
		t.Fatal(err)
	}
	full := memstat.Read().Anon
	if full == 0 {
		t.Skip("no RssAnon in /proc/self/status")
	}
	if err := db.setWriterCache(ctx, 2<<10); err != nil {
		t.Fatal(err)
	}
	shrunk := memstat.Read().Anon
	trimCHeap()
	trimmed := memstat.Read().Anon
	t.Logf("RssAnon: cache full %d MiB, shrunk %d MiB, trimmed %d MiB", full>>20, shrunk>>20, trimmed>>20)
	if full-trimmed < 64<<20 {
		t.Fatalf("RssAnon %d MiB with the cache full, %d MiB after it shrank to 2 MiB and the trim: want at least 64 MiB less", full>>20, trimmed>>20)
	}
}
