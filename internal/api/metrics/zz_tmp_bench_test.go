package metrics_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
	rollup "github.com/permafrost-dev/permafrost/internal/metrics"
)

func BenchmarkZZParts(b *testing.B) {
	db := benchDB(b, "sqlite")
	ctx := context.Background()
	toks := api.NewServerTokens(db, nil)
	var q, s []time.Duration
	var cur *rollup.HolderCursor
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		hs, err := rollup.Holders(ctx, db, "C", benchContract, cur, 1001)
		if err != nil {
			b.Fatal(err)
		}
		q = append(q, time.Since(t0))
		t0 = time.Now()
		if _, err := toks.Save(ctx, "x", map[string]string{"a": "b"}); err != nil {
			b.Fatal(err)
		}
		s = append(s, time.Since(t0))
		if len(hs) > 1000 {
			cur = &rollup.HolderCursor{Key: hs[999].Key, Address: hs[999].Address}
		} else {
			cur = nil
		}
	}
	for _, x := range [][]time.Duration{q, s} {
		sort.Slice(x, func(i, j int) bool { return x[i] < x[j] })
		b.Logf("p50 %v p90 %v p99 %v max %v", x[len(x)/2], x[len(x)*9/10], x[len(x)*99/100], x[len(x)-1])
	}
}
