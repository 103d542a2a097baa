package evm

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// BenchmarkApply ingests generated 20-tx blocks (native, ERC-20 and ERC-721
// transfers with receipts) in store transactions of 100 blocks, as the ingest
// driver does, and reports blocks/s (wall clock) and blocks per CPU-second of
// the process (less sensitive to other load on a shared machine). Blocks are
// generated before the timer starts.
//
//	go test ./internal/decode/evm/ -run '^$' -bench BenchmarkApply -benchtime 5000x
func BenchmarkApply(b *testing.B) {
	const txPerBlock, batch = 20, 100
	// sqlite-memory separates the CPU cost from the disk's (WAL checkpoints fsync).
	for _, backend := range []string{"sqlite", "sqlite-memory", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			dsn := "sqlite::memory:"
			if backend != "sqlite-memory" {
				dsn = storetest.DSNFor(b, backend)
			}
			db := storetest.Open(b, dsn)
			gen := NewGenerator(1, txPerBlock)
			ix, err := NewIndexer(Config{ChainKey: "bench", GenesisAlloc: gen.Alloc()})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			// Block 0 loads the 2,001-account genesis alloc: not a 20-tx block.
			tx, err := db.Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := ix.Apply(ctx, tx, gen.Next()); err != nil {
				b.Fatal(err)
			}
			if err := ix.Flush(ctx, tx); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			blocks := make([][]byte, 0, b.N)
			heights := make([]uint64, 0, b.N)
			var bytes int64
			for i := 0; i < b.N; i++ {
				blk := gen.Next()
				bytes += int64(len(blk.Bytes))
				blocks = append(blocks, blk.Bytes)
				heights = append(heights, blk.Height)
			}
			cpu0 := cpuTime()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += batch {
				tx, err := db.Begin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				for j := i; j < min(i+batch, b.N); j++ {
					if err := ix.Apply(ctx, tx, rawBlock(heights[j], blocks[j])); err != nil {
						b.Fatalf("block %d: %v", heights[j], err)
					}
				}
				if err := ix.Flush(ctx, tx); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu := (cpuTime() - cpu0).Seconds()
			secs := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N)/secs, "blocks/s")
			b.ReportMetric(float64(b.N)/cpu, "blocks/cpu-s")
			b.ReportMetric(float64(bytes)/float64(b.N), "json_bytes/block")
			if strings.HasPrefix(dsn, "sqlite:/") {
				if fi, err := os.Stat(strings.TrimPrefix(dsn, "sqlite:")); err == nil {
					b.ReportMetric(float64(fi.Size())/float64(b.N+1), "db_bytes/block")
				}
			}
		})
	}
}

// cpuTime is the process's user+system CPU time (all threads, including
// SQLite's work in cgo calls and, for PostgreSQL, none of the server's).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkParse measures the JSON decoding alone.
func BenchmarkParse(b *testing.B) {
	blocks := GenerateBlocks(50, 20, 1)
	var blk block
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		raw := blocks[2+i%48].Bytes
		b.SetBytes(int64(len(raw)))
		if err := blk.parse(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func rawBlock(h uint64, body []byte) ingest.RawBlock { return ingest.RawBlock{Height: h, Bytes: body} }
