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

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// flakySource serves heights 0..tip and misbehaves on demand.
type flakySource struct {
	mu        sync.Mutex
	tip       uint64
	failEvery int // every n-th Fetch returns an error
	wrongOnce bool
	calls     int
}

func (s *flakySource) Tip(ctx context.Context) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tip, nil
}

func (s *flakySource) Fetch(ctx context.Context, from, to uint64) ([]RawBlock, error) {
	s.mu.Lock()
	s.calls++
	calls, wrong := s.calls, s.wrongOnce
	s.wrongOnce = false
	s.mu.Unlock()
	if s.failEvery > 0 && calls%s.failEvery == 0 {
		return nil, errors.New("node hiccup")
	}
	var out []RawBlock
	for h := from; h <= to; h++ {
		hh := h
		if wrong && h == to {
			hh++ // a node answering the wrong height must not be indexed
		}
		out = append(out, RawBlock{Height: hh, Hash: fmt.Sprintf("h%d", hh), Bytes: []byte{byte(hh)}, Timestamp: int64(1000 + hh)})
	}
	return out, nil
}

// rowIndexer writes one row per block; it can be told to fail at one height.
type rowIndexer struct {
	failAt atomic.Int64
	delay  time.Duration // each block's Apply takes this long
}

func (ix *rowIndexer) Apply(ctx context.Context, tx *store.Tx, b RawBlock) error {
	if ix.delay > 0 {
		time.Sleep(ix.delay)
	}
	if int64(b.Height) == ix.failAt.Load() {
		ix.failAt.Store(-1)
		return errors.New("decode failed once")
	}
	_, err := tx.Exec(ctx, `INSERT INTO test_rows (height) VALUES ($1)`, int64(b.Height))
	return err
}

func (ix *rowIndexer) DerivedTables() []string { return []string{"test_rows"} }

// createTestRows creates rowIndexer's table.
func createTestRows(ctx context.Context, t *testing.T, db *store.DB) {
	t.Helper()
	if _, err := db.ExecContext(ctx, `CREATE TABLE test_rows (height BIGINT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
}

func TestPipelineExactlyOnce(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		createTestRows(ctx, t, db)
		src := &flakySource{tip: 200, failEvery: 3, wrongOnce: true}
		ix := &rowIndexer{}
		ix.failAt.Store(77)
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		chain := Chain{Key: "T", Kind: "EVM", BlockchainID: "bc", NetworkID: 1, Source: src, Indexer: ix, BatchSize: 16}
		opts := Options{UntilTip: true, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond}
		if err := New(db, []Chain{chain}, opts, log).Run(ctx); err != nil {
			t.Fatal(err)
		}
		var n, maxH int64
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*), MAX(height) FROM test_rows`).Scan(&n, &maxH); err != nil {
			t.Fatal(err)
		}
		if n != 201 || maxH != 200 {
			t.Fatalf("rows = %d, max = %d; want 201, 200", n, maxH)
		}
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM raw_blocks WHERE chain_key = 'T'`).Scan(&n); err != nil || n != 201 {
			t.Fatalf("raw blocks = %d, %v", n, err)
		}
		// A second run continues from the checkpoint and writes nothing twice.
		src.tip = 250
		if err := New(db, []Chain{chain}, opts, log).Run(ctx); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM test_rows`).Scan(&n); err != nil || n != 251 {
			t.Fatalf("after resume rows = %d, %v", n, err)
		}
		if h, err := Checkpoint(ctx, db, "T"); err != nil || h != 250 {
			t.Fatalf("checkpoint = %d, %v", h, err)
		}
	})
}

func TestReindexRebuildsFromRaw(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		createTestRows(ctx, t, db)
		ix := &rowIndexer{}
		ix.failAt.Store(-1)
		chain := Chain{Key: "T", Kind: "EVM", BlockchainID: "bc", Source: &flakySource{tip: 40}, Indexer: ix, BatchSize: 7}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		if err := New(db, []Chain{chain}, Options{UntilTip: true}, log).Run(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `DELETE FROM test_rows WHERE height > 10`); err != nil {
			t.Fatal(err)
		}
		if err := Reindex(ctx, db, []Chain{chain}, 8, log); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM test_rows`).Scan(&n); err != nil || n != 41 {
			t.Fatalf("rows after reindex = %d, %v", n, err)
		}
	})
}

// sumIndexer defers its one write per batch: the count of blocks applied
// since the last Flush, added to a single counter row.
type sumIndexer struct {
	rowIndexer
	pending, flushes, discards int
}

func (ix *sumIndexer) Apply(ctx context.Context, tx *store.Tx, b RawBlock) error {
	if err := ix.rowIndexer.Apply(ctx, tx, b); err != nil {
		return err
	}
	ix.pending++
	return nil
}

func (ix *sumIndexer) Flush(ctx context.Context, tx *store.Tx) error {
	_, err := tx.Exec(ctx, `INSERT INTO test_sum (k, n) VALUES (1, $1) ON CONFLICT (k) DO UPDATE SET n = test_sum.n + excluded.n`, ix.pending)
	ix.pending = 0
	ix.flushes++
	return err
}

func (ix *sumIndexer) Discard() { ix.pending = 0; ix.discards++ }

func (ix *sumIndexer) DerivedTables() []string { return []string{"test_rows", "test_sum"} }

// A Batcher's deferred writes land once per committed batch: an abandoned
// batch (a block fails to index) is discarded, then applied again.
func TestPipelineFlushesBatches(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, q := range []string{`CREATE TABLE test_rows (height BIGINT PRIMARY KEY)`, `CREATE TABLE test_sum (k INTEGER PRIMARY KEY, n BIGINT NOT NULL)`} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		ix := &sumIndexer{}
		ix.failAt.Store(77)
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		chain := Chain{Key: "T", Kind: "EVM", BlockchainID: "bc", NetworkID: 1, Source: &flakySource{tip: 200}, Indexer: ix, BatchSize: 16}
		opts := Options{UntilTip: true, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond}
		if err := New(db, []Chain{chain}, opts, log).Run(ctx); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT n FROM test_sum`).Scan(&n); err != nil || n != 201 {
			t.Fatalf("sum = %d, %v; want 201", n, err)
		}
		if ix.discards != 1 || ix.flushes < 201/16 {
			t.Fatalf("%d discards, %d flushes", ix.discards, ix.flushes)
		}
		// Reindex (which empties the derived tables first) flushes too.
		if err := Reindex(ctx, db, []Chain{chain}, 8, log); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, `SELECT n FROM test_sum`).Scan(&n); err != nil || n != 201 {
			t.Fatalf("sum after reindex = %d, %v; want 201", n, err)
		}
	})
}

// recordingSource serves heights 0..tip, at most max per Fetch (0: all
// asked), records the ranges asked, and stalls on heights from stallAt until
// release is closed.
type recordingSource struct {
	tip       uint64
	max       int
	stallAt   uint64
	release   chan struct{}
	delay     time.Duration // every slowEvery-th fetch (every fetch if 0) takes this long
	slowEvery int
	fetches   int

	mu     sync.Mutex
	ranges [][2]uint64
}

func (s *recordingSource) Tip(context.Context) (uint64, error) { return s.tip, nil }

func (s *recordingSource) Fetch(ctx context.Context, from, to uint64) ([]RawBlock, error) {
	s.mu.Lock()
	s.ranges = append(s.ranges, [2]uint64{from, to})
	s.fetches++
	slow := s.delay > 0 && (s.slowEvery == 0 || s.fetches%s.slowEvery == 0)
	s.mu.Unlock()
	if slow {
		time.Sleep(s.delay)
	}
	if s.release != nil && to >= s.stallAt {
		select {
		case <-s.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if s.max > 0 && to-from >= uint64(s.max) {
		to = from + uint64(s.max) - 1
	}
	var out []RawBlock
	for h := from; h <= to; h++ {
		out = append(out, RawBlock{Height: h, Hash: fmt.Sprintf("h%d", h), Bytes: []byte{byte(h)}, Timestamp: int64(1000 + h)})
	}
	return out, nil
}

// Fetching is cut in chunks of FetchSize heights (the first a quarter of
// that) that never straddle a batch, and a transaction commits at each
// multiple of BatchSize heights (and at the tip), whatever the source answers
// per call.
func TestPipelineChunksAndBatches(t *testing.T) {
	tests := []struct {
		name         string
		batch, fetch int
		max          int
		wantRanges   string
		wantCommits  string
	}{
		{"chunks of 4 in batches of 10", 10, 4, 0,
			"[[0 0] [1 4] [5 8] [9 9] [10 13] [14 17] [18 19] [20 23] [24 25]]", "[9 19 25]"},
		{"default chunk", 10, 0, 0, "[[0 1] [2 9] [10 19] [20 25]]", "[9 19 25]"},
		{"chunk larger than the batch", 8, 20, 0, "[[0 1] [2 7] [8 15] [16 23] [24 25]]", "[7 15 23 25]"},
		{"short answers", 10, 5, 3,
			"[[0 0] [1 5] [4 8] [7 9] [10 14] [13 17] [16 19] [19 19] [20 24] [23 25]]", "[9 19 25]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := storetest.Open(t, storetest.DSNFor(t, "sqlite"))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			createTestRows(ctx, t, db)
			src := &recordingSource{tip: 25, max: tt.max}
			var commits []uint64
			opts := Options{UntilTip: true, AfterCommit: func(_ string, h uint64) { commits = append(commits, h) }}
			ix := &rowIndexer{}
			ix.failAt.Store(-1)
			chain := Chain{Key: "T", Kind: "EVM", BlockchainID: "bc", Source: src, Indexer: ix, BatchSize: tt.batch, FetchSize: tt.fetch}
			if err := New(db, []Chain{chain}, opts, slog.New(slog.NewTextHandler(io.Discard, nil))).Run(ctx); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(src.ranges); got != tt.wantRanges {
				t.Errorf("fetched %s, want %s", got, tt.wantRanges)
			}
			if got := fmt.Sprint(commits); got != tt.wantCommits {
				t.Errorf("committed at %s, want %s", got, tt.wantCommits)
			}
			var n int
			if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM test_rows`).Scan(&n); err != nil || n != 26 {
				t.Fatalf("rows = %d, %v", n, err)
			}
		})
	}
}

// A transaction does not wait for a stalled source longer than MaxBatchWait:
// the blocks applied so far are committed, the rest when they come.
func TestPipelineCommitsWhenSourceStalls(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		createTestRows(ctx, t, db)
		src := &recordingSource{tip: 20, stallAt: 9, release: make(chan struct{})}
		committed := make(chan uint64, 10)
		opts := Options{UntilTip: true, MaxBatchWait: 20 * time.Millisecond,
			AfterCommit: func(_ string, h uint64) { committed <- h }}
		ix := &rowIndexer{}
		ix.failAt.Store(-1)
		chain := Chain{Key: "T", Kind: "EVM", BlockchainID: "bc", Source: src, Indexer: ix, BatchSize: 100, FetchSize: 5}
		done := make(chan error, 1)
		go func() { done <- New(db, []Chain{chain}, opts, slog.New(slog.NewTextHandler(io.Discard, nil))).Run(ctx) }()
		select {
		case h := <-committed:
			if h != 5 { // chunks 0..0 and 1..5 came; 6..10 stalls
				t.Fatalf("first commit at %d while the source stalls, want 5", h)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("nothing committed while the source stalls")
		}
		close(src.release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if h, err := Checkpoint(ctx, db, "T"); err != nil || h != 20 {
			t.Fatalf("checkpoint = %d, %v", h, err)
		}
	})
}

// MaxBatchWait bounds a transaction's waits for chunks in all, not its age:
// a writer slower than the fetch, which waits for it only now and then (a
// loaded host), fills whole batches however long they take; a slow node,
// whose every chunk keeps the writer waiting, still has the blocks applied
// so far committed and the writer lock released. (The bound was once the
// transaction's age, and cut a long batch at its first wait.)
func TestPipelineBatchWaits(t *testing.T) {
	tests := []struct {
		name      string
		maxWait   time.Duration
		fetch     time.Duration // every slowEvery-th fetch
		slowEvery int
		apply     time.Duration // a block
		whole     bool          // commits at the batch ends only
	}{
		// 100 chunks of 2 heights a batch, 4 ms to apply each: with the
		// stalls ~0.6 s a batch, past maxWait, for ~0.16 s of waits.
		{"writer slower than the fetch", 400 * time.Millisecond, 40 * time.Millisecond, 25, 2 * time.Millisecond, true},
		// every chunk waited for: the waits pass maxWait within a few chunks.
		{"slow node", 45 * time.Millisecond, 15 * time.Millisecond, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				createTestRows(ctx, t, db)
				src := &recordingSource{tip: 399, delay: tt.fetch, slowEvery: tt.slowEvery}
				var (
					mu      sync.Mutex
					commits []uint64
				)
				opts := Options{UntilTip: true, MaxBatchWait: tt.maxWait,
					AfterCommit: func(_ string, h uint64) { mu.Lock(); commits = append(commits, h); mu.Unlock() }}
				ix := &rowIndexer{delay: tt.apply}
				ix.failAt.Store(-1)
				chain := Chain{Key: "T", Kind: "EVM", BlockchainID: "bc", Source: src, Indexer: ix, BatchSize: 200, FetchSize: 2}
				if err := New(db, []Chain{chain}, opts, slog.New(slog.NewTextHandler(io.Discard, nil))).Run(ctx); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				defer mu.Unlock()
				got := fmt.Sprint(commits)
				if tt.whole && got != "[199 399]" {
					t.Fatalf("commits at %s, want [199 399]: one per batch", got)
				}
				if !tt.whole && (len(commits) == 0 || commits[0] >= 50) {
					t.Fatalf("commits at %s: want the first well before the batch's end (199)", got)
				}
			})
		})
	}
}

// During a bulk catch-up on SQLite a transaction carries at least
// catchUpBatch blocks (fewer commits, each writing a key's tail page once);
// elsewhere, and on PostgreSQL, the chain's BatchSize. The deferred indexes
// are built before Run returns.
func TestPipelineCatchUpBatches(t *testing.T) {
	tests := []struct {
		backend     string
		catchUp     bool
		wantCommits string
	}{
		{"sqlite", true, "[1999 3999 4499]"},
		{"sqlite", false, "[499 999 1499 1999 2499 2999 3499 3999 4499]"},
		{"postgres", true, "[499 999 1499 1999 2499 2999 3499 3999 4499]"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s catch-up %v", tt.backend, tt.catchUp), func(t *testing.T) {
			db := storetest.Open(t, storetest.DSNFor(t, tt.backend))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			createTestRows(ctx, t, db)
			var commits []uint64
			opts := Options{UntilTip: true, CatchUp: tt.catchUp, AfterCommit: func(_ string, h uint64) { commits = append(commits, h) }}
			ix := &rowIndexer{}
			ix.failAt.Store(-1)
			chain := Chain{Key: "T", Kind: "EVM", BlockchainID: "bc", Source: &recordingSource{tip: 4499}, Indexer: ix, BatchSize: 500, FetchSize: 100}
			if err := New(db, []Chain{chain}, opts, slog.New(slog.NewTextHandler(io.Discard, nil))).Run(ctx); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(commits); got != tt.wantCommits {
				t.Errorf("committed at %s, want %s", got, tt.wantCommits)
			}
			if list, err := db.DeferredIndexes(ctx); err != nil || len(list) != 0 {
				t.Errorf("deferred after Run: %v (%v)", list, err)
			}
		})
	}
}
