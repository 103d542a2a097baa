package metrics_test

import (
	"context"
	"slices"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

// During a bulk catch-up (the deferrable indexes dropped) the metrics that
// read a deferrable index answer what the recording says, and again once the
// indexes are built: the rolling windows' address counts
// (metrics_evm_last_time) and the token holders above a threshold
// (evm_token_balances_token). A private index: the shared one keeps its
// indexes.
func TestMetricsDuringBulkCatchUp(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			e := testenv.Index(t, testenv.DevnetDir(t), backend, source.TracesAuto)
			s := serverOn(e)
			deferred, err := e.DB.DeferIndexes(ctx, store.Deferrable(e.DB.Dialect()))
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"metrics_evm_last_time", "evm_token_balances_token"} {
				if !slices.ContainsFunc(deferred, func(d store.DeferredIndex) bool { return d.Name == name }) {
					t.Fatalf("%s is not deferred: %v", name, deferred)
				}
			}
			t.Run("deferred", func(t *testing.T) {
				checkRollingWindows(t, s)
				checkTokenBalances(t, s)
			})
			if err := e.DB.BuildDeferredIndexes(ctx, nil); err != nil {
				t.Fatal(err)
			}
			t.Run("built", func(t *testing.T) {
				checkRollingWindows(t, s)
				checkTokenBalances(t, s)
			})
		})
	}
}
