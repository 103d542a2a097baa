package warp

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
)

// BenchmarkAggregate100Validators measures the latency of one aggregation
// over 100 in-process avalanchego validators on loopback (equal weights,
// connections already up, a new message each time so nothing is cached).
// It reports the p50 and p99 latency of the calls.
//
//	quorum67: the default request (stops at 67 % of the weight)
//	all100:   quorum 67 + buffer 33 (waits for every validator)
func BenchmarkAggregate100Validators(b *testing.B) {
	const n = 100
	chainID, subnetID := ids.GenerateTestID(), ids.GenerateTestID()
	vals := make([]*testValidator, n)
	weights := make([]uint64, n)
	for i := range vals {
		vals[i] = startValidator(b, validatorOpts{chains: []ids.ID{chainID}})
		weights[i] = 1_000
	}
	sets := newMemValidatorSets(1)
	sets.set(subnetID, 1, weighted(vals, weights))
	sets.chains[chainID] = subnetID
	agg := startAggregator(b, testAggOpts{sets: sets, bootstrap: peersOf(vals)})
	waitConnected(b, agg, nodeIDsOf(vals))

	for _, bc := range []struct {
		name           string
		quorum, buffer int
	}{
		{"quorum67", 67, 0},
		{"all100", 67, 33},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				msg, err := warp.NewUnsignedMessage(testNetworkID, chainID, []byte(fmt.Sprintf("%s %d %d", bc.name, i, time.Now().UnixNano())))
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				_, err = agg.Aggregate(context.Background(), Request{
					Message:                hexOf(msg),
					QuorumPercentage:       num(bc.quorum),
					QuorumPercentageBuffer: num(bc.buffer),
				})
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			pct := func(p float64) float64 {
				i := int(p*float64(len(lat))+0.999999) - 1
				return float64(lat[max(i, 0)].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
		})
	}
}
