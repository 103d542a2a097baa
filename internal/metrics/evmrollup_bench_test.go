package metrics

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkEVMRollupSee measures the address sets a batch's rows feed
// (evmRollup.see): 2,000 blocks of 20 txs, each with a sender and a
// recipient among 10,000 addresses, as the ingest benchmark's generator
// spreads them:
//
//	go test ./internal/metrics/ -run '^$' -bench EVMRollupSee -benchmem
func BenchmarkEVMRollupSee(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	addrs := make([][]byte, 10000)
	for i := range addrs {
		addrs[i] = make([]byte, 20)
		for j := range addrs[i] {
			addrs[i][j] = byte(rng.IntN(256))
		}
	}
	const blocks, txs = 2000, 20
	b.ResetTimer()
	for range b.N {
		e := evmRollup{sets: map[seenKey]map[string]struct{}{}, ever: map[int]map[string]int64{}, last: map[int]map[string]int64{}}
		for blk := range blocks {
			ms := int64(1_700_000_000_000 + blk*2000)
			for range txs {
				from, to := addrs[rng.IntN(len(addrs))], addrs[rng.IntN(len(addrs))]
				e.see(roleActive, from, ms)
				e.see(roleSender, from, ms)
				e.see(roleActive, to, ms)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*blocks), "µs/block")
}
