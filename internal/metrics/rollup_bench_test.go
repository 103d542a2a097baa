package metrics_test

import (
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/decode/pchain"
	"github.com/permafrost-dev/permafrost/internal/devnet/indextest"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/metrics"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// BenchmarkRollupP measures what the metrics rollups add to indexing a
// P-chain block (the avg_tps buckets, staking totals and L1 fees of issue
// #21): devnet-a's 42 P-chain blocks (staking, delegations, rewards, an L1
// with fee-paying validators) applied in batches of 8 by the P-chain indexer
// alone and wrapped by metrics.WithRollup, on a fresh database each round:
//
//	go test ./internal/metrics/ -run '^$' -bench RollupP -benchtime 20x
//
// It reports ms/block.
func BenchmarkRollupP(b *testing.B) {
	blocks := indextest.PBlocks(b)
	g := indextest.Genesis(b)
	for _, backend := range storetest.Backends {
		for _, wrapped := range []bool{false, true} {
			name := backend + "/indexer"
			if wrapped {
				name = backend + "/indexer+rollups"
			}
			b.Run(name, func(b *testing.B) {
				var total time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					db := storetest.Open(b, storetest.DSNFor(b, backend))
					p, err := pchain.NewIndexer(g)
					if err != nil {
						b.Fatal(err)
					}
					var ix ingest.Indexer = p
					if wrapped {
						ix = metrics.WithRollup("P", metrics.KindP, p)
					}
					b.StartTimer()
					t0 := time.Now()
					indextest.Apply(b, db, ix, blocks, 8)
					total += time.Since(t0)
				}
				b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N*len(blocks)), "ms/block")
			})
		}
	}
}
