package store

import (
	"context"
	"testing"
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
