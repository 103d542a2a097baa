package metrics

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/decode/evm"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testing/chainmetrics"
)

// generatedSpanning is a generated chain over about four months: 5-hour
// blocks for six weeks, a 40-day gap (empty weeks and a whole empty month,
// across which the cumulative metrics carry), then 197-minute blocks.
func generatedSpanning(seed int64) (*evm.Generator, []ingest.RawBlock) {
	g := evm.NewGenerator(seed, 5)
	var blocks []ingest.RawBlock
	for i := 0; i < 420; i++ {
		switch i {
		case 1:
			g.SetSpacing(5 * 3600)
		case 200:
			g.SetSpacing(40 * 86400)
		case 201:
			g.SetSpacing(197 * 60)
		}
		blocks = append(blocks, g.Next())
	}
	return g, blocks
}

// applyBlocks runs blocks through ix in batches of the given sizes (cycled),
// each in its own transaction with one Flush, as the pipeline does.
func applyBlocks(t *testing.T, db *store.DB, ix ingest.Indexer, blocks []ingest.RawBlock, sizes ...int) {
	t.Helper()
	applyChainBlocks(t, db, "C", ix, blocks, sizes...)
}

// applyChainBlocks is applyBlocks for the chain of key chain.
func applyChainBlocks(t *testing.T, db *store.DB, chain string, ix ingest.Indexer, blocks []ingest.RawBlock, sizes ...int) {
	t.Helper()
	ctx := context.Background()
	for i, k := 0, 0; i < len(blocks); k++ {
		n := sizes[k%len(sizes)]
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks[i:min(i+n, len(blocks))] {
			if _, err := tx.Exec(ctx, `INSERT INTO raw_blocks (chain_key, height, hash, block_time, body) VALUES ($1,$2,$3,$4,$5)`,
				chain, int64(b.Height), b.Hash, b.Timestamp, b.Bytes); err != nil {
				t.Fatal(err)
			}
			if err := ix.Apply(ctx, tx, b); err != nil {
				t.Fatalf("block %d: %v", b.Height, err)
			}
		}
		if err := ingest.Flush(ctx, ix, tx); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		i += n
	}
}

// newEVMRollup is the real EVM indexer of g's chain wrapped by the rollup,
// its lastRun clock stopped at clock.
func newEVMRollup(t *testing.T, g *evm.Generator, clock time.Time) ingest.Indexer {
	t.Helper()
	return newChainRollup(t, "C", g, clock)
}

// testBucketBits sizes the test indexers' evm_token_balance_buckets: 16
// blocks, so that the generated chains' few hundred blocks cross buckets
// (HeldAbove reads with the same, heldQuery).
const testBucketBits = 4

// newChainRollup is newEVMRollup for the chain of key chain.
func newChainRollup(t *testing.T, chain string, g *evm.Generator, clock time.Time) ingest.Indexer {
	t.Helper()
	inner, err := evm.NewIndexer(evm.Config{ChainKey: chain, GenesisAlloc: g.Alloc(), HolderBucketBits: testBucketBits,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return WithRollup(chain, KindEVM, inner, WithClock(func() time.Time { return clock }))
}

// oracleOf parses generated blocks (their JSON, as a node would answer) for
// the metrics oracle.
func oracleOf(t *testing.T, blocks []ingest.RawBlock) chainmetrics.Oracle {
	t.Helper()
	var o chainmetrics.Oracle
	for _, b := range blocks {
		var raw struct {
			Block    json.RawMessage `json:"block"`
			Receipts json.RawMessage `json:"receipts"`
		}
		if err := json.Unmarshal(b.Bytes, &raw); err != nil {
			t.Fatal(err)
		}
		ob, err := chainmetrics.Parse(raw.Block, raw.Receipts)
		if err != nil {
			t.Fatal(err)
		}
		o.Blocks = append(o.Blocks, ob)
	}
	return o
}

// checkSeries pages metric at iv over chains (n points a page) from the
// interval of time first to that of tip and compares it with window's
// recomputation of each interval; it returns the number of intervals.
func checkSeries(t *testing.T, db *store.DB, chains []string, metric string, iv Interval, first, tip int64, n int, window func(metric string, from, to int64) float64) int {
	t.Helper()
	var got []Point
	lo, from := iv.Floor(first), iv.Floor(tip)
	for {
		pts, next, more, err := EVMPage(context.Background(), db, chains, metric, iv, lo, from, n)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, pts...)
		if !more {
			break
		}
		from = next
	}
	var want []Point
	for s := iv.Floor(tip); s >= iv.Floor(first); s = iv.Prev(s) {
		want = append(want, Point{Timestamp: s, Value: window(metric, s, iv.Next(s))})
	}
	if !reflect.DeepEqual(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Errorf("%s %s: point %d of %d is %+v, want %+v", metric, iv, i, len(want), got[i], want[i])
				break
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s %s: %d points, want %d", metric, iv, len(got), len(want))
		}
	}
	return len(want)
}

// Every metric at every interval over months of generated blocks (written
// in uneven batches) equals its recomputation from the blocks' JSON, and
// reindex rebuilds the same rollup rows.
func TestEVMMetricsGeneratedChain(t *testing.T) {
	g, blocks := generatedSpanning(21)
	o := oracleOf(t, blocks)
	first, tip := o.Blocks[0].Ms/1000, o.Blocks[len(o.Blocks)-1].Ms/1000
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		applyBlocks(t, db, newEVMRollup(t, g, time.Unix(1_800_000_000, 0)), blocks, 37, 1, 64, 5)
		counts := map[Interval]int{}
		for _, metric := range chainmetrics.ChainMetrics {
			for _, iv := range evmKinds {
				counts[iv] = checkSeries(t, db, []string{"C"}, metric, iv, first, tip, MaxPoints, o.Window)
			}
		}
		if counts[Week] < 15 || counts[Month] < 4 {
			t.Fatalf("the chain spans %d weeks and %d months: too few to prove the week and month buckets", counts[Week], counts[Month])
		}
		// Reindex from the raw blocks rebuilds exactly the same rows.
		before := dumpTables(t, db, evmTables...)
		if err := ingest.Reindex(ctx, db, []ingest.Chain{{Key: "C", Kind: "EVM", Indexer: newEVMRollup(t, g, time.Unix(1_800_000_000, 0))}}, 50, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
			t.Fatal(err)
		}
		if after := dumpTables(t, db, evmTables...); !reflect.DeepEqual(before, after) || len(before["metrics_evm_buckets"]) == 0 {
			t.Errorf("reindex changed the chain metrics rollups (%d bucket rows before, %d after)", len(before["metrics_evm_buckets"]), len(after["metrics_evm_buckets"]))
		}
		// A backfill from the indexed rows (no rollup rows yet) writes the same rows.
		for _, table := range evmTables {
			if _, err := db.ExecContext(ctx, `DELETE FROM `+table); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := BackfillEVM(ctx, db, "C", 77); err != nil || n != int64(len(blocks)) {
			t.Fatalf("backfill: %d blocks, %v", n, err)
		}
		if after := dumpTables(t, db, evmTables...); !reflect.DeepEqual(before, after) {
			t.Errorf("backfill wrote other chain metrics rows (%d bucket rows before, %d after)", len(before["metrics_evm_buckets"]), len(after["metrics_evm_buckets"]))
		}
		if n, err := BackfillEVM(ctx, db, "C", 77); err != nil || n != 0 {
			t.Errorf("a second backfill: %d blocks, %v (want none: the rows exist)", n, err)
		}
	})
}
