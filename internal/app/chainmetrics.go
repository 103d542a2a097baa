package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/metrics"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// backfillChainMetrics rolls up the EVM chain metrics of an index made
// before migration 0120 (a no-op once a chain has them), under the writer
// lock, before ingestion resumes.
func backfillChainMetrics(ctx context.Context, db *store.DB, set *chains.Set, log *slog.Logger) error {
	for _, c := range set.Chains {
		if c.Kind != metrics.KindEVM {
			continue
		}
		start := time.Now()
		n, err := metrics.BackfillEVM(ctx, db, c.Key, 500)
		if err != nil {
			return err
		}
		if n > 0 {
			log.Info("chain metrics backfilled", "chain", c.Key, "blocks", n, "elapsed", time.Since(start).Round(time.Millisecond))
		}
	}
	return nil
}
