package apibench

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// TestBulkGenerationMatchesIngestBatches generates the smoke dataset twice
// on each backend, in the ingest driver's transactions (100 EVM blocks, 20
// P/X blocks) and in the generator's bulk ones (2,000 and 400 blocks, a
// 1 GiB SQLite writer cache, the deferred indexes dropped and built again
// on both backends), and compares every table row for row: the
// indexers carry state across the blocks of a transaction (the EVM
// balances flushed at its end), so a larger transaction could write other
// rows. Left out: the checkpoints' wall-clock updated_at and the migrations'
// bookkeeping (applied times).
func TestBulkGenerationMatchesIngestBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("generates the smoke dataset four times")
	}
	ctx := context.Background()
	cfg := SmokeConfig()
	// More EVM blocks than one ingest batch, so that balances are flushed
	// at several batch ends in the reference and at one in the bulk run.
	cfg.EVMBlocks = 450
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			dumps := map[string]map[string]string{}
			for _, run := range []struct {
				name  string
				batch batching
			}{{"ingest", ingestBatches}, {"bulk", bulkBatches}} {
				db := storetest.Open(t, storetest.DSNFor(t, backend))
				m, err := generate(ctx, db, cfg, run.batch, nil)
				if err != nil {
					t.Fatalf("%s: %v", run.name, err)
				}
				if m.EVMTransfers == 0 || m.UTXOs == 0 {
					t.Fatalf("%s: %d transfers, %d UTXOs", run.name, m.EVMTransfers, m.UTXOs)
				}
				dumps[run.name] = dumpTables(ctx, t, db)
			}
			sameTables(t, dumps["ingest"], dumps["bulk"], "the bulk run")
		})
	}
}

// TestPostgresGeneratedInPlaceMatchesCopy: a PostgreSQL dataset generated
// in the cluster itself (Cache.OpenPostgres without a cached SQLite one)
// holds the rows of the SQLite dataset copied into PostgreSQL (the copy
// path), table for table, the chain metrics rolled up on each as the cache
// does, so both backends answer the same queries whichever way the
// cluster was filled.
func TestPostgresGeneratedInPlaceMatchesCopy(t *testing.T) {
	_, dbs := smokeOnBothBackends(t)
	ctx := context.Background()
	inPlace := storetest.Open(t, storetest.PostgresDSN(t))
	if _, err := generateVacuumed(ctx, inPlace, SmokeConfig(), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if err := (&Cache{Log: slog.New(slog.DiscardHandler)}).backfillMetrics(ctx, inPlace); err != nil {
		t.Fatal(err)
	}
	sameTables(t, dumpTables(ctx, t, dbs["postgres"]), dumpTables(ctx, t, inPlace), "the dataset generated in place")
}

// sameTables fails unless got (dumpTables of the run named what) holds the
// tables of want, row for row, and no other; want must have at least 30
// tables with rows, so that an empty dataset cannot pass.
func sameTables(t *testing.T, want, got map[string]string, what string) {
	t.Helper()
	if len(want) < 30 {
		t.Fatalf("only %d tables with rows", len(want))
	}
	for table, h := range want {
		if got[table] != h {
			t.Errorf("%s: rows of %s differ (%s vs %s)", table, what, got[table], h)
		}
	}
	for table := range got {
		if _, ok := want[table]; !ok {
			t.Errorf("%s: rows only in %s", table, what)
		}
	}
}

// dumpTables returns, per table with rows, its row count and a hash of its
// rows in a canonical order (each row's printed values, sorted).
func dumpTables(ctx context.Context, t *testing.T, db *store.DB) map[string]string {
	t.Helper()
	q := `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`
	if db.Dialect() == store.Postgres {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()
			AND table_type = 'BASE TABLE' ORDER BY table_name`
	}
	var tables []string
	if err := sampleStrings(ctx, db, q, &tables); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, table := range tables {
		if table == "schema_migrations" {
			continue
		}
		var skip []string
		if table == "checkpoints" || table == "metrics_chains" {
			skip = []string{"updated_at"} // wall-clock times of the writes
		}
		lines := storetest.Rows(t, db, `SELECT * FROM `+table, skip...)
		if len(lines) == 0 {
			continue
		}
		out[table] = fmt.Sprintf("%d rows %x", len(lines), sha256.Sum256([]byte(strings.Join(lines, "\n"))))
	}
	return out
}
