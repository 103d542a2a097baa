package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// overlapIndexer writes one row per block at its batch's end, as the EVM
// indexer writes its address-keyed rows: on PostgreSQL queued for the
// commit (store.Tx.QueueAtCommit) and held back there, so that the commit
// of batch k is still running while the pipeline applies batch k+1. It
// records what breaks the overlap's rules: a block or a Flush that does not
// see every earlier batch's rows, a batch's end that runs before the
// earlier batches committed. The batch holding failAt fails once in its
// end-of-batch work.
type overlapIndexer struct {
	db     *store.DB
	failAt int64
	hold   time.Duration // how long each batch's end is held back

	mu         sync.Mutex
	first      int64 // the first height of the batch being applied, -1: none
	heights    []int64
	violations []string
	failed     int

	ending     atomic.Int32 // batch ends running now
	overlapped atomic.Int32 // blocks applied while a batch's end ran
}

func (ix *overlapIndexer) DerivedTables() []string { return []string{"ov_rows"} }

func (ix *overlapIndexer) violate(format string, args ...any) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.violations = append(ix.violations, fmt.Sprintf(format, args...))
}

// seesEarlierBatches checks that the transaction reads every row of the
// batches before the one from first on.
func (ix *overlapIndexer) seesEarlierBatches(ctx context.Context, tx *store.Tx, first int64, at string) error {
	var n, hi int64
	if err := tx.QueryRow(ctx, `SELECT COUNT(*), COALESCE(MAX(height), -1) FROM ov_rows`).Scan(&n, &hi); err != nil {
		return err
	}
	if n != first || hi != first-1 {
		ix.violate("%s read %d rows up to %d; want the %d rows of the batches before height %d", at, n, hi, first, first)
	}
	return nil
}

func (ix *overlapIndexer) Apply(ctx context.Context, tx *store.Tx, b RawBlock) error {
	if ix.ending.Load() > 0 {
		ix.overlapped.Add(1)
	}
	if ix.first < 0 {
		ix.first = int64(b.Height)
	}
	ix.heights = append(ix.heights, int64(b.Height))
	return ix.seesEarlierBatches(ctx, tx, ix.first, fmt.Sprintf("block %d", b.Height))
}

func (ix *overlapIndexer) Flush(ctx context.Context, tx *store.Tx) error {
	first, heights := ix.first, ix.heights
	ix.first, ix.heights = -1, nil
	if err := ix.seesEarlierBatches(ctx, tx, first, fmt.Sprintf("the Flush of the batch from %d", first)); err != nil {
		return err
	}
	rows := make([][]any, len(heights))
	fail := false
	for i, h := range heights {
		rows[i] = []any{h}
		fail = fail || h == ix.failAt
	}
	if fail {
		ix.failAt = -1
	}
	// end is the batch's end-of-batch work: by then every earlier batch
	// has committed (seen from another connection).
	end := func(ctx context.Context) error {
		var n int64
		if err := ix.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM ov_rows`).Scan(&n); err != nil {
			return err
		}
		if n != first {
			ix.violate("the end of the batch from %d ran with %d rows committed; want the %d of the batches before it", first, n, first)
		}
		if fail {
			ix.mu.Lock()
			ix.failed++
			ix.mu.Unlock()
			return errors.New("end of batch failed once")
		}
		return nil
	}
	if tx.Dialect() != store.Postgres {
		if err := end(ctx); err != nil {
			return err
		}
		return tx.CopyFrom(ctx, "ov_rows", []string{"height"}, rows)
	}
	return tx.QueueAtCommit(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		ix.ending.Add(1)
		defer ix.ending.Add(-1)
		time.Sleep(ix.hold)
		if err := end(ctx); err != nil {
			return err
		}
		_, err := conn.CopyFrom(ctx, pgx.Identifier{"ov_rows"}, []string{"height"}, pgx.CopyFromRows(rows))
		return err
	})
}

func (ix *overlapIndexer) Discard() { ix.first, ix.heights = -1, nil }

// On PostgreSQL an EVM chain's batch k commits while batch k+1 is applied
// (Pipeline.overlaps); on SQLite batches are sequential. Either way every
// block and every Flush reads all rows of the batches before its own,
// batches commit in order, a batch whose end-of-batch work fails leaves
// nothing and the batch applied meanwhile is not committed either: the
// rows end up exactly once each, the commits are reported in height order.
func TestPipelineOverlapsBatches(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		// No key: a row written twice stays twice.
		if _, err := db.ExecContext(ctx, `CREATE TABLE ov_rows (height BIGINT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		ix := &overlapIndexer{db: db, failAt: 77, hold: 30 * time.Millisecond, first: -1}
		var mu sync.Mutex
		var reported []uint64
		opts := Options{UntilTip: true, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond,
			AfterCommit: func(_ string, h uint64) {
				mu.Lock()
				reported = append(reported, h)
				mu.Unlock()
			}}
		chain := Chain{Key: "T", Kind: "EVM", BlockchainID: "bc", NetworkID: 1, Source: &flakySource{tip: 200}, Indexer: ix, BatchSize: 16, FetchSize: 4}
		if err := New(db, []Chain{chain}, opts, slog.New(slog.NewTextHandler(io.Discard, nil))).Run(ctx); err != nil {
			t.Fatal(err)
		}
		for _, v := range ix.violations {
			t.Error(v)
		}
		if ix.failed != 1 {
			t.Fatalf("the end of the batch holding height 77 failed %d times, want once", ix.failed)
		}
		var n, distinct, hi int64
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(DISTINCT height), MAX(height) FROM ov_rows`).Scan(&n, &distinct, &hi); err != nil {
			t.Fatal(err)
		}
		if n != 201 || distinct != 201 || hi != 200 {
			t.Fatalf("%d rows, %d heights, up to %d; want heights 0..200 once each", n, distinct, hi)
		}
		if h, err := Checkpoint(ctx, db, "T"); err != nil || h != 200 {
			t.Fatalf("checkpoint = %d, %v", h, err)
		}
		for i := 1; i < len(reported); i++ {
			if reported[i] <= reported[i-1] {
				t.Fatalf("commits reported out of order: %v", reported)
			}
		}
		if len(reported) == 0 || reported[len(reported)-1] != 200 {
			t.Fatalf("commits reported: %v; want the last at 200", reported)
		}
		if db.Dialect() == store.Postgres && ix.overlapped.Load() == 0 {
			t.Fatal("no block was applied while a batch's end ran: the overlap is not exercised")
		}
	})
}
