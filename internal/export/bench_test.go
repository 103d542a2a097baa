package export

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// BenchmarkExport1M exports 1,000,000 rows (999,990 ERC-20 transfers and 10
// native transactions of one address over 10 days) from SQLite through the
// whole job path: create, claim, stream, file, complete. It reports rows/s,
// the peak Go heap while exporting (HeapAlloc from runtime.MemStats, live
// and not yet collected, sampled every 2 ms), the peak live heap (marked
// live by the last GC), and the file size.
//
//	go test ./internal/export/ -run '^$' -bench 'BenchmarkExport' -benchtime 1x
func BenchmarkExport1M(b *testing.B) { benchExport(b, 1_000_000) }

// BenchmarkExport100k is the same with a tenth of the rows: the peak heap
// should not grow with the export's size.
func BenchmarkExport100k(b *testing.B) { benchExport(b, 100_000) }

func benchExport(b *testing.B, rows int) {
	const days = 10
	db := storetest.Open(b, storetest.SQLiteDSN(b))
	perDay := make([]int, days)
	for i := range perDay {
		perDay[i] = rows/days - 1 // plus the day's NATIVE row
	}
	genStart := time.Now()
	genDays(b, db, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), perDay, 100, false)
	b.Logf("generated %d rows in %s", rows, time.Since(genStart).Round(time.Millisecond))
	dir := b.TempDir()
	s := newService(b, db, Config{Dir: dir, RowCap: -1, Workers: 1})
	start(b, s)
	spec := evmSpec(b, db, "2025-01-01", "2025-01-31")

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak, peakLive atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			metrics.Read(live)
			if v := live[0].Value.Uint64(); v > peakLive.Load() {
				peakLive.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	var size int64
	b.ResetTimer()
	for range b.N {
		op, err := s.Create(context.Background(), spec, "")
		if err != nil {
			b.Fatal(err)
		}
		for op.OperationStatus == StatusRunning {
			time.Sleep(2 * time.Millisecond)
			if op, err = s.Get(context.Background(), op.OperationID, ""); err != nil {
				b.Fatal(err)
			}
		}
		j := jobRow(b, db, op.OperationID)
		if op.OperationStatus != StatusCompleted || j.RowCount != int64(rows) {
			b.Fatalf("export ended %s with %d rows", op.OperationStatus, j.RowCount)
		}
		st, err := os.Stat(filepath.Join(dir, j.FileName))
		if err != nil {
			b.Fatal(err)
		}
		size = st.Size()
	}
	b.StopTimer()
	close(stop)
	<-sampled
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(peakLive.Load())/(1<<20), "peak-live-heap-MB")
	b.ReportMetric(float64(before.HeapAlloc)/(1<<20), "heap-before-MB")
	b.ReportMetric(float64(size)/(1<<20), "file-MB")
}
