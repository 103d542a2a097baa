package metrics

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/decode/evm"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testing/chainmetrics"
)

// aggregateOracle recomputes a metric over several chains from their blocks:
// the per-block rates (maxTps, maxGps) are each chain's own, so their
// aggregate is the largest chain's; every other metric is the metric of all
// the chains' blocks taken together in time order (sums; distinct addresses
// once whichever chain they were seen on; averages over the newest block).
type aggregateOracle []chainmetrics.Oracle

func (a aggregateOracle) Window(metric string, from, to int64) float64 {
	if metric == "maxTps" || metric == "maxGps" {
		v := 0.0
		for _, o := range a {
			v = max(v, o.Window(metric, from, to))
		}
		return v
	}
	var all chainmetrics.Oracle
	for _, o := range a {
		all.Blocks = append(all.Blocks, o.Blocks...)
	}
	slices.SortStableFunc(all.Blocks, func(x, y chainmetrics.Block) int { return int(x.Ms - y.Ms) })
	return all.Window(metric, from, to)
}

// The aggregate chain ids fold several chains: two generated chains of the
// same accounts on different schedules (so some addresses are active on
// both in one interval, and the distinct counts are not sums) give, for
// every metric at every interval and every rolling window, the
// recomputation from both chains' blocks.
func TestEVMMetricsAggregateChains(t *testing.T) {
	g1, blocks1 := generatedSpanning(21)
	g2 := evm.NewGenerator(21, 5)
	var blocks2 []ingest.RawBlock
	for i := 0; i < 300; i++ {
		if i == 1 {
			g2.SetSpacing(3*3600 + 17)
		}
		blocks2 = append(blocks2, g2.Next())
	}
	a := aggregateOracle{oracleOf(t, blocks1), oracleOf(t, blocks2)}
	chains := []string{"C", "L1"}
	first := min(a[0].Blocks[0].Ms, a[1].Blocks[0].Ms) / 1000
	tip := max(a[0].Blocks[len(a[0].Blocks)-1].Ms, a[1].Blocks[len(a[1].Blocks)-1].Ms) / 1000
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := time.Unix(1_800_000_000, 0)
		applyChainBlocks(t, db, "C", newChainRollup(t, "C", g1, clock), blocks1, 37, 1, 64, 5)
		applyChainBlocks(t, db, "L1", newChainRollup(t, "L1", g2, clock), blocks2, 50)
		span, ok, err := LoadSpan(ctx, db, chains...)
		if err != nil || !ok || span.FirstTime != first || span.TipTime != tip {
			t.Fatalf("span %+v %v %v, want %d..%d", span, ok, err, first, tip)
		}
		overlap := false // an interval whose distinct count is below the chains' sum
		for _, metric := range chainmetrics.ChainMetrics {
			for _, iv := range evmKinds {
				checkSeries(t, db, chains, metric, iv, first, tip, 500, a.Window)
				for s := iv.Floor(tip); metric == "activeAddresses" && s >= iv.Floor(first); s = iv.Prev(s) {
					if a.Window(metric, s, iv.Next(s)) < a[0].Window(metric, s, iv.Next(s))+a[1].Window(metric, s, iv.Next(s)) {
						overlap = true
					}
				}
			}
		}
		if !overlap {
			t.Fatal("no interval has an address active on both chains: the distinct counts are not proven")
		}
		hour, day := Hour.Floor(tip), Day.Floor(tip)
		windows := map[string]int64{"lastHour": hour, "lastDay": hour - 23*3600, "lastWeek": day - 6*86400,
			"lastMonth": day - 29*86400, "last90Days": day - 89*86400, "lastYear": day - 364*86400, "allTime": first}
		for _, metric := range chainmetrics.RollingMetrics {
			got, err := EVMRolling(ctx, db, chains, metric, first, tip)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]float64{}
			for name, from := range windows {
				if (metric == "activeAddresses" || metric == "activeSenders") && name != "lastHour" && name != "lastDay" && name != "lastWeek" {
					continue
				}
				want[name] = a.Window(metric, from, tip+1)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("rolling %s: %v, want %v", metric, got, want)
			}
		}
		// No chain: no span.
		if _, ok, err := LoadSpan(ctx, db); ok || err != nil {
			t.Errorf("the span of no chain: %v %v", ok, err)
		}
	})
}
