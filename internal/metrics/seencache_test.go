package metrics

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/decode/evm"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testing/chainmetrics"
)

// TestSeenCacheKeepsCounts: the distinct-address counts of a chain whose
// batches share their hours and days (the in-memory set of stored seen
// addresses skips most probes) equal the oracle's from the blocks' JSON,
// through an abandoned batch applied again and a reindex by the same
// indexer (whose deleted rows the set must not claim stored).
func TestSeenCacheKeepsCounts(t *testing.T) {
	g := evm.NewGenerator(13, 5)
	g.SetSpacing(60) // 400 blocks: ~7 hours across a midnight
	var blocks []ingest.RawBlock
	for range 400 {
		blocks = append(blocks, g.Next())
	}
	o := oracleOf(t, blocks)
	first, tip := o.Blocks[0].Ms/1000, o.Blocks[len(o.Blocks)-1].Ms/1000
	check := func(t *testing.T, db *store.DB, when string) {
		t.Helper()
		for _, metric := range chainmetrics.ChainMetrics {
			for _, iv := range []Interval{Hour, Day} {
				t.Run(when+"/"+metric+"/"+iv.String(), func(t *testing.T) {
					checkSeries(t, db, []string{"C"}, metric, iv, first, tip, MaxPoints, o.Window)
				})
			}
		}
	}
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ix := newEVMRollup(t, g, time.Unix(1_800_000_000, 0))
		// Ten batches, then the eleventh flushed and abandoned (as the
		// pipeline abandons a batch whose commit failed), then applied again.
		applyBlocks(t, db, ix, blocks[:127], 7, 30, 3)
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks[127:157] {
			if err := ix.Apply(ctx, tx, b); err != nil {
				t.Fatalf("block %d: %v", b.Height, err)
			}
		}
		if err := ingest.Flush(ctx, ix, tx); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		ingest.Discard(ix)
		applyBlocks(t, db, ix, blocks[127:], 30, 3, 7)
		known := ix.(*Rollup).evm.known.sets[seenSlot{roleActive, Hour}]
		if known == nil || len(known.addrs) == 0 {
			t.Fatal("no address known stored after the last batch: the test would not exercise the set")
		}
		check(t, db, "ingested")
		if err := ingest.Reindex(ctx, db, []ingest.Chain{{Key: "C", Kind: "EVM", Indexer: ix}}, 25,
			slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
			t.Fatal(err)
		}
		check(t, db, "reindexed")
	})
}

// TestSeenCacheBounded: a set stops at seenCap addresses, a newer bucket
// replaces the slot's, an older one is not recorded, and the addresses a
// set holds are the ones unknown leaves out. It logs the heap a full cache
// takes (14 sets: docs/benchmarks.md, "Thirteenth session").
func TestSeenCacheBounded(t *testing.T) {
	addr := func(i int) string {
		var a [20]byte
		a[0], a[1], a[2], a[19] = byte(i>>16), byte(i>>8), byte(i), 0xAA
		return string(a[:])
	}
	many := make([]string, seenCap+100)
	for i := range many {
		many[i] = addr(i)
	}
	var c seenCache
	hour := seenKey{roleActive, bucketKey{Hour, 3600}}
	c.add(hour, many)
	if n := len(c.sets[seenSlot{roleActive, Hour}].addrs); n != seenCap {
		t.Fatalf("set holds %d addresses, want the cap %d", n, seenCap)
	}
	if got := c.unknown(hour, []string{many[0], many[seenCap-1], many[seenCap], "short"}); len(got) != 2 || got[0] != many[seenCap] || got[1] != "short" {
		t.Errorf("unknown left %q, want the address past the cap and the short one", got)
	}
	c.add(seenKey{roleActive, bucketKey{Hour, 0}}, []string{addr(1 << 20)}) // older bucket: ignored
	if got := c.unknown(hour, []string{addr(1 << 20)}); len(got) != 1 {
		t.Error("an older bucket's address was recorded in the newest bucket's set")
	}
	next := seenKey{roleActive, bucketKey{Hour, 7200}}
	c.add(next, many[:1])
	if got := c.unknown(next, many[:2]); len(got) != 1 || got[0] != many[1] {
		t.Errorf("after the next bucket: unknown left %q, want only the second address", got)
	}
	if got := c.unknown(hour, many[:1]); len(got) != 1 {
		t.Error("the replaced bucket still answers")
	}
	c.end(99)
	c.begin(100)
	if len(c.sets) == 0 {
		t.Error("a batch following the last one dropped the cache")
	}
	c.begin(50)
	if len(c.sets) != 0 {
		t.Error("a batch not following the last one kept the cache")
	}

	// The heap of a full cache: every slot of the rollup at the cap.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var full seenCache
	for _, role := range []int{roleActive, roleSender, roleDeployer} {
		for _, k := range append([]Interval{kindEver}, evmKinds[:]...) {
			if k == kindEver && role == roleSender {
				continue
			}
			full.add(seenKey{role, bucketKey{k, 1}}, many)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("a full cache (%d sets of %d addresses): %.1f MB of heap", len(full.sets), seenCap, float64(after.HeapAlloc-before.HeapAlloc)/(1<<20))
	runtime.KeepAlive(&full)
}
