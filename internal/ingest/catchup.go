package ingest

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// Bulk catch-up (docs/operations.md "Bulk catch-up"): while a chain is far
// behind its node's tip, the deferrable secondary indexes
// (store/migrations/deferrable.txt) are dropped, so each block costs fewer
// B-tree writes and none into indexes whose keys are random; once every
// chain is caught up they are built again. The state is the database's
// (store.DeferIndexes): a pipeline that starts while indexes are deferred
// resumes the catch-up, whatever its options.

// catchUp is the pipeline's bulk catch-up state.
type catchUp struct {
	mu       sync.Mutex
	active   bool          // indexes are deferred
	building chan struct{} // closed when a build started by finish ends
	err      error         // the last build's error
}

// startCatchUp enters a bulk catch-up when asked (Options.CatchUp), when a
// chain is more than Options.CatchUpLag blocks behind its node's tip, or
// resumes one the database records.
func (p *Pipeline) startCatchUp(ctx context.Context) error {
	deferred, err := p.db.DeferredIndexes(ctx)
	if err != nil {
		return err
	}
	enter := p.opts.CatchUp || len(deferred) > 0
	if !enter && p.opts.CatchUpLag > 0 {
		for _, c := range p.chains {
			next, err := Checkpoint(ctx, p.db, c.Key)
			if err != nil {
				return err
			}
			tip, err := p.nodeTip(ctx, c)
			if err != nil {
				continue // the chain's own loop reports the node
			}
			if int64(tip)-next > int64(p.opts.CatchUpLag) {
				p.log.Info("ingest: far behind the tip, bulk catch-up", "chain", c.Key, "indexed", next, "tip", tip)
				enter = true
				break
			}
		}
	}
	if !enter {
		return nil
	}
	if deferred, err = p.db.DeferIndexes(ctx, store.Deferrable(p.db.Dialect())); err != nil {
		return err
	}
	if len(deferred) == 0 {
		return nil // nothing the schema lets defer
	}
	names := make([]string, len(deferred))
	for i, d := range deferred {
		names[i] = d.Name
	}
	p.log.Info("ingest: bulk catch-up: indexes deferred until caught up", "indexes", names)
	p.catchUp.mu.Lock()
	p.catchUp.active = true
	p.catchUp.mu.Unlock()
	return nil
}

// catchUpBatch is the least blocks per write transaction during a bulk
// catch-up on SQLite. Each address-keyed history table (balance histories,
// address links) changes about one leaf per distinct key a batch touches, so
// a batch four times the usual one writes those pages about a quarter as
// often per block; the writer's page cache is raised to hold them meanwhile
// (store.DeferIndexes); without that, bigger batches cost more than they
// save. Over 20,000 blocks into a 250,000-block base: CPU per block about
// −20%, bytes written per block about −40% (docs/benchmarks.md "Bulk
// catch-up, bigger batches"). Not on PostgreSQL, which writes a WAL
// record per row whatever the batch and keeps a batch's rows in memory
// until its COPY (not measured there).
const catchUpBatch = 2000

// catchUpBatchSize is the batch of a range that starts now: at least
// catchUpBatch while a bulk catch-up is active on SQLite, else batch. The
// fetch chunks stay as they are; only the commits are fewer.
func (p *Pipeline) catchUpBatchSize(batch int) int {
	p.catchUp.mu.Lock()
	active := p.catchUp.active
	p.catchUp.mu.Unlock()
	if !active || p.db.Dialect() != store.SQLite {
		return batch
	}
	return max(batch, catchUpBatch)
}

// caughtUp reports whether every chain's last commit was within
// Options.CatchUpLag blocks (at least one batch) of its tip.
func (p *Pipeline) caughtUp() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.chains {
		pr, ok := p.progress[c.Key]
		lag := max(p.opts.CatchUpLag, uint64(max(c.BatchSize, 1)))
		if !ok || pr.Indexed < 0 || int64(pr.Tip)-pr.Indexed > int64(lag) {
			return false
		}
	}
	return true
}

// watchCatchUp finishes the catch-up once every chain is caught up.
func (p *Pipeline) watchCatchUp(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.maybeFinishCatchUp(ctx)
		}
	}
}

// maybeFinishCatchUp starts building the deferred indexes, in the
// background, once every chain is caught up (after a committed batch).
func (p *Pipeline) maybeFinishCatchUp(ctx context.Context) {
	p.catchUp.mu.Lock()
	busy := !p.catchUp.active || p.catchUp.building != nil
	p.catchUp.mu.Unlock()
	if busy || !p.caughtUp() {
		return
	}
	p.finishCatchUp(ctx)
}

// finishCatchUp starts the build of the deferred indexes unless one runs,
// and returns a channel closed when it ends.
func (p *Pipeline) finishCatchUp(ctx context.Context) <-chan struct{} {
	p.catchUp.mu.Lock()
	defer p.catchUp.mu.Unlock()
	if p.catchUp.building != nil {
		return p.catchUp.building
	}
	done := make(chan struct{})
	p.catchUp.building = done
	go func() {
		defer close(done)
		start := time.Now()
		// The catch-up's garbage goes back to the OS before the build,
		// whose sorter and cache come on top of the Go heap (the peak RSS
		// of a catch-up was the build's: docs/benchmarks.md, "Twelfth
		// session"). One collection, once per catch-up.
		debug.FreeOSMemory()
		err := p.db.BuildDeferredIndexes(ctx, func(d store.DeferredIndex) {
			p.log.Info("ingest: bulk catch-up: building index", "index", d.Name, "table", d.Table)
		})
		p.catchUp.mu.Lock()
		defer p.catchUp.mu.Unlock()
		p.catchUp.building = nil
		if err != nil {
			// Still deferred (the database says so): the next caught-up
			// batch, or the next start, tries again.
			p.catchUp.err = err
			p.log.Error("ingest: bulk catch-up: building the deferred indexes", "err", err)
			return
		}
		p.catchUp.active, p.catchUp.err = false, nil
		p.log.Info("ingest: bulk catch-up done: indexes built", "took", time.Since(start).Round(time.Millisecond))
	}()
	return done
}

// endCatchUp builds what is still deferred before Run returns at the tip
// (UntilTip): the index it leaves is complete.
func (p *Pipeline) endCatchUp(ctx context.Context) error {
	p.catchUp.mu.Lock()
	active := p.catchUp.active
	p.catchUp.mu.Unlock()
	if !active {
		return nil
	}
	for {
		<-p.finishCatchUp(ctx)
		p.catchUp.mu.Lock()
		active, err := p.catchUp.active, p.catchUp.err
		p.catchUp.mu.Unlock()
		if !active {
			return nil
		}
		if err != nil {
			return fmt.Errorf("bulk catch-up: %w", err)
		}
	}
}
