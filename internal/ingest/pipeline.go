package ingest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// Source is where a chain's blocks come from (a node, or a generator in benchmarks).
type Source interface {
	// Tip is the newest accepted height.
	Tip(ctx context.Context) (uint64, error)
	// Fetch returns the blocks from..to inclusive, in height order. It retries
	// transient failures itself; an error means the context ended or the
	// failure is definitive.
	Fetch(ctx context.Context, from, to uint64) ([]RawBlock, error)
}

// Noticer is a Source that can say it works in a lesser way (P/X blocks
// without proposer details while the node's block index fails): the
// pipeline records what it says for status and health.
type Noticer interface {
	Notice() string // "" when all is well
}

// Chain is one chain to follow.
type Chain struct {
	Key          string // P, X, C, or an EVM chain id
	Kind         string // P, X, EVM
	BlockchainID string
	EVMChainID   string
	NetworkID    uint32
	Name         string
	Source       Source
	Indexer      Indexer
	// History, when set, is ingested before the chain's blocks.
	History History
	// BatchSize is how many blocks one write transaction carries.
	BatchSize int
	// FetchSize is how many heights one Source.Fetch asks for (at most
	// BatchSize; default min(BatchSize, 64)). Each fetched chunk is written
	// as it arrives.
	FetchSize int
}

// Options tune a pipeline.
type Options struct {
	// UntilTip stops each chain once it reaches the tip seen at start.
	UntilTip bool
	// Poll is how long to wait for new blocks at the tip.
	Poll time.Duration
	// RetryBase and RetryMax bound the backoff after a failed batch.
	RetryBase, RetryMax time.Duration
	// AfterCommit, when set, is called after each committed batch (tests use it
	// to kill ingestion at chosen points).
	AfterCommit func(chain string, height uint64)
	// MaxBatchWait bounds how long an open write transaction waits for
	// fetched chunks, in all (default 1s): with a slow node, the blocks
	// already applied are committed, and SQLite's single writer lock
	// released, instead of waiting for a full batch.
	MaxBatchWait time.Duration
	// Discover, when set, returns chains to follow beyond the configured
	// ones (L1s created on the P-chain); known holds the keys followed
	// already. It is asked every DiscoverEvery (default 10 s).
	Discover      func(ctx context.Context, known map[string]bool) ([]Chain, error)
	DiscoverEvery time.Duration
	// Observer, when set, is told of each committed batch (metrics).
	Observer Observer
	// CatchUp enters a bulk catch-up at start (catchup.go); CatchUpLag
	// enters one when a chain is more than that many blocks behind its
	// node's tip (0: only when asked). Either way the deferred indexes are
	// built once every chain is within CatchUpLag blocks (at least a batch)
	// of its tip, and before Run returns with UntilTip.
	CatchUp    bool
	CatchUpLag uint64
}

// Observer receives the ingest measurements (internal/obs implements it).
type Observer interface {
	// Batch is one committed batch of chain: its blocks and wall time.
	Batch(chain string, blocks uint64, took time.Duration)
}

// Pipeline follows a set of chains into one store.
type Pipeline struct {
	db     *store.DB
	chains []Chain
	opts   Options
	log    *slog.Logger

	mu       sync.Mutex
	progress map[string]Progress

	catchUp catchUp
}

// Progress is a chain's ingestion state for logs and the status command.
type Progress struct {
	Chain       string
	Indexed     int64 // -1 before genesis is indexed
	Tip         uint64
	BlocksPerS  float64
	LastUpdated time.Time
}

// New builds a pipeline. Chains are registered in the chains table on Run.
func New(db *store.DB, chains []Chain, opts Options, log *slog.Logger) *Pipeline {
	if opts.Poll == 0 {
		opts.Poll = time.Second
	}
	if opts.RetryBase == 0 {
		opts.RetryBase = 200 * time.Millisecond
	}
	if opts.RetryMax == 0 {
		opts.RetryMax = 30 * time.Second
	}
	if opts.MaxBatchWait <= 0 {
		opts.MaxBatchWait = time.Second
	}
	if opts.DiscoverEvery <= 0 {
		opts.DiscoverEvery = 10 * time.Second
	}
	return &Pipeline{db: db, chains: chains, opts: opts, log: log, progress: map[string]Progress{}}
}

// Progress returns a snapshot of every chain's progress.
func (p *Pipeline) Progress() []Progress {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Progress, 0, len(p.chains))
	for _, c := range p.chains {
		out = append(out, p.progress[c.Key])
	}
	return out
}

// Run follows every chain until ctx ends (or, with UntilTip, until each chain
// reached the tip it saw at start). With Options.Discover, chains found while
// indexing (L1s) are followed too: every DiscoverEvery, and with UntilTip
// each time the chains followed so far have reached their tips, until no
// new chain turns up. The first definitive error of any chain is returned
// after the others stop.
func (p *Pipeline) Run(ctx context.Context) error {
	for _, c := range p.chains {
		if err := RegisterChain(ctx, p.db, c); err != nil {
			return err
		}
	}
	if err := p.startCatchUp(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go p.watchCatchUp(ctx)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	start := func(c Chain) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.follow(ctx, c); err != nil && !errors.Is(err, context.Canceled) {
				errOnce.Do(func() { firstErr = fmt.Errorf("ingest %s: %w", c.Key, err) })
				cancel()
			}
		}()
	}
	for _, c := range p.chains {
		start(c)
	}
	if p.opts.Discover == nil {
		wg.Wait()
		if firstErr == nil && p.opts.UntilTip && ctx.Err() == nil {
			return p.endCatchUp(ctx)
		}
		return firstErr
	}
	if p.opts.UntilTip {
		for {
			wg.Wait()
			if firstErr != nil || ctx.Err() != nil {
				return firstErr
			}
			added, err := p.discover(ctx)
			if err != nil {
				return err
			}
			if len(added) == 0 {
				return p.endCatchUp(ctx)
			}
			for _, c := range added {
				start(c)
			}
		}
	}
	t := time.NewTicker(p.opts.DiscoverEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return firstErr
		case <-t.C:
			added, err := p.discover(ctx)
			if err != nil {
				if ctx.Err() == nil {
					p.log.Warn("ingest: discovering chains", "err", err)
				}
				continue
			}
			for _, c := range added {
				start(c)
			}
		}
	}
}

// discover asks Options.Discover for chains and registers the new ones.
func (p *Pipeline) discover(ctx context.Context) ([]Chain, error) {
	p.mu.Lock()
	known := make(map[string]bool, len(p.chains))
	for _, c := range p.chains {
		known[c.Key] = true
	}
	p.mu.Unlock()
	found, err := p.opts.Discover(ctx, known)
	if err != nil {
		return nil, fmt.Errorf("ingest: discover chains: %w", err)
	}
	var added []Chain
	for _, c := range found {
		if known[c.Key] {
			continue
		}
		if err := RegisterChain(ctx, p.db, c); err != nil {
			return added, err
		}
		known[c.Key] = true
		p.log.Info("ingest: following a new chain", "chain", c.Key, "name", c.Name, "blockchain_id", c.BlockchainID)
		p.mu.Lock()
		p.chains = append(p.chains, c)
		p.mu.Unlock()
		added = append(added, c)
	}
	return added, nil
}

// RegisterChain records a chain in the chains table (idempotent).
func RegisterChain(ctx context.Context, db *store.DB, c Chain) error {
	var evmID any
	if c.EVMChainID != "" {
		evmID = c.EVMChainID
	}
	_, err := db.ExecContext(ctx, `INSERT INTO chains (chain_key, kind, blockchain_id, evm_chain_id, network_id, name)
		VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT (chain_key) DO UPDATE SET kind=excluded.kind,
		blockchain_id=excluded.blockchain_id, evm_chain_id=excluded.evm_chain_id, network_id=excluded.network_id, name=excluded.name`,
		c.Key, c.Kind, c.BlockchainID, evmID, int64(c.NetworkID), c.Name)
	if err != nil {
		return fmt.Errorf("ingest: register chain %s: %w", c.Key, err)
	}
	return nil
}

// Checkpoint returns the last indexed height of a chain, or -1 if none.
func Checkpoint(ctx context.Context, db *store.DB, chain string) (int64, error) {
	var h int64
	err := db.QueryRowContext(ctx, `SELECT height FROM checkpoints WHERE chain_key = $1`, chain).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return -1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("ingest: read checkpoint %s: %w", chain, err)
	}
	return h, nil
}

func (p *Pipeline) follow(ctx context.Context, c Chain) error {
	next, err := Checkpoint(ctx, p.db, c.Key)
	if err != nil {
		return err
	}
	next++
	// A stall or notice a previous run left is its own: this run says anew.
	st := &streamState{rate: newRate(), lastLog: time.Now()}
	if err := p.recordState(ctx, c, st, nil); err != nil {
		return err
	}
	tip, err := p.tip(ctx, c, st)
	if err != nil {
		return err
	}
	// The node answered: the history before the first block comes first.
	if c.History != nil {
		if err := c.History.Ingest(ctx, p.db); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The blocks go on: spends of outputs the history will create
			// are kept until it does (primary.Writer), and the source's
			// notice says the history is missing.
			p.log.Error("ingest: history before the first block failed; indexing blocks", "chain", c.Key, "err", err)
		}
		// The history may have ended a notice (recordState at start said it).
		st.recorded = false
		if err := p.recordState(ctx, c, st, nil); err != nil {
			return err
		}
	}
	target := tip
	p.setProgress(c.Key, next-1, tip, 0)
	p.log.Info("ingest start", "chain", c.Key, "from", next, "tip", tip)

	backoff := p.opts.RetryBase
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if uint64(next) > target {
			if p.opts.UntilTip {
				p.log.Info("ingest reached tip", "chain", c.Key, "height", next-1)
				return nil
			}
			if err := sleep(ctx, p.opts.Poll); err != nil {
				return err
			}
			t, err := p.tip(ctx, c, st)
			if err != nil {
				return err
			}
			target, tip = t, t
			p.setProgress(c.Key, next-1, tip, st.rate.value())
			continue
		}
		n, err := p.ingestRange(ctx, c, uint64(next), target, tip, st)
		next += int64(n)
		if n > 0 {
			backoff = p.opts.RetryBase
		}
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && store.IsTransient(err) {
			// Another chain's writer held the rows: not a stall, run it again.
			p.log.Warn("ingest: write conflict; retrying the batch", "chain", c.Key, "height", next, "err", err)
			if err := sleep(ctx, p.opts.RetryBase); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			err = fmt.Errorf("height %d: %w", next, err)
			// The node's real tip, for status and health: the tip this
			// range began with may be long gone.
			if t, terr := p.nodeTip(ctx, c); terr == nil {
				tip, target = t, max(target, t)
				p.setProgress(c.Key, next-1, tip, 0)
			}
		}
		if err != nil {
			if rerr := p.recordState(ctx, c, st, err); rerr != nil {
				p.log.Warn("ingest: record chain state", "chain", c.Key, "err", rerr)
			}
			if err := sleep(ctx, backoff); err != nil {
				return err
			}
			backoff = min(backoff*2, p.opts.RetryMax)
		}
	}
}

// streamState is a chain's progress bookkeeping across ranges.
type streamState struct {
	rate    *rateMeter
	lastLog time.Time
	// stalled and notice are what the chains table says of the chain now.
	stalled   bool
	stallSeen string
	notice    string
	recorded  bool // the state was written at least once this run
}

// recordState keeps the chain's stall and notice (chains.stall_error,
// chains.notice) in step with the last range's outcome: failed is its error,
// nil when it committed. A stall is logged once as an ERROR (with the height
// and what went wrong), again only when it ends; the pipeline goes on
// retrying with backoff meanwhile.
func (p *Pipeline) recordState(ctx context.Context, c Chain, st *streamState, failed error) error {
	notice := ""
	if n, ok := c.Source.(Noticer); ok {
		notice = n.Notice()
	}
	now := time.Now().Unix()
	switch {
	case failed != nil && !st.stalled:
		p.log.Error("ingest: chain stalled; retrying", "chain", c.Key, "err", failed)
	case failed != nil:
		p.log.Debug("ingest: chain still stalled", "chain", c.Key, "err", failed)
	case st.stalled:
		p.log.Info("ingest: chain resumed", "chain", c.Key)
	}
	var stallErr string
	if failed != nil {
		stallErr = failed.Error()
	}
	if st.recorded && stallErr == st.stallSeen && notice == st.notice {
		return nil
	}
	// The since columns keep the start of a stall (or notice) that goes on.
	_, err := p.db.ExecContext(ctx, `UPDATE chains SET
		stalled_since = CASE WHEN $1 = '' THEN NULL WHEN stall_error IS NULL THEN $2 ELSE stalled_since END,
		stall_error = NULLIF($1, ''),
		notice_since = CASE WHEN $3 = '' THEN NULL WHEN notice IS NULL THEN $2 ELSE notice_since END,
		notice = NULLIF($3, '')
		WHERE chain_key = $4`, stallErr, now, notice, c.Key)
	if err != nil {
		return fmt.Errorf("ingest: record state of %s: %w", c.Key, err)
	}
	st.stalled, st.stallSeen, st.notice, st.recorded = failed != nil, stallErr, notice, true
	return nil
}

// prefetchChunks is how many fetched chunks may wait for the writer (the
// prefetcher holds one more while it waits to hand it over). One is enough to
// keep the writer fed; more only held prepared blocks longer: with 4,
// ingestion was 4% slower (more for the garbage collector to scan) and took
// 80 MB more memory (docs/benchmarks.md).
const prefetchChunks = 1

// chunk is one Source.Fetch answer on its way to the writer.
type chunk struct {
	blocks []RawBlock
	err    error
	// endsBatch: the chunk's last block closes a write transaction (every
	// BatchSize heights from the range's start, and at the range's end).
	endsBatch bool
}

// ingestRange streams heights from..to from the source into the store. A
// prefetcher fetches chunks of FetchSize heights in order, up to
// prefetchChunks ahead, while the writer applies each chunk as it arrives,
// so writing starts after one chunk instead of one batch and fetching never
// waits for a commit. A transaction ends every BatchSize heights (chunks are
// cut at those boundaries), or early when the chunks stop. It returns how
// many blocks it committed, and the error that stopped it, if any.
func (p *Pipeline) ingestRange(ctx context.Context, c Chain, from, to, tip uint64, st *streamState) (uint64, error) {
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batch := c.BatchSize
	if batch <= 0 {
		batch = 64
	}
	size := min(c.FetchSize, batch)
	batch = p.catchUpBatchSize(batch)
	if size <= 0 {
		size = min(batch, 64)
	}
	chunks := prefetch(fctx, c, from, to, size, batch)
	// done: blocks committed; queued: blocks applied, committed or with
	// their commit in flight (prev).
	var (
		done, queued uint64
		prev         *inflight
	)
	// settle waits for the batch whose commit is in flight and records it
	// once committed. After a failed commit the indexer's in-memory state
	// (caches, what it deferred) may hold what never got stored: dropped.
	settle := func() error {
		if prev == nil {
			return nil
		}
		b := prev
		prev = nil
		if err := b.pend.Wait(); err != nil {
			Discard(c.Indexer)
			return err
		}
		done += b.n
		p.batchCommitted(ctx, c, from+done-1, b.n, tip, b.began, st)
		return nil
	}
	for from+queued <= to {
		began := time.Now()
		n, pend, err := p.writeBatch(ctx, c, chunks, tip, prev, settle)
		queued += n
		if pend != nil {
			prev = &inflight{pend: pend, n: n, began: began}
		} else if n > 0 {
			done += n
			p.batchCommitted(ctx, c, from+done-1, n, tip, began, st)
		}
		if err != nil {
			if serr := settle(); serr != nil {
				p.log.Warn("ingest: the previous batch failed too", "chain", c.Key, "err", serr)
			}
			return done, err
		}
		if n == 0 {
			break // the prefetcher stopped (ctx ended)
		}
	}
	if err := settle(); err != nil {
		return done, err
	}
	return done, ctx.Err()
}

// inflight is a batch whose commit runs while the next batch is applied.
type inflight struct {
	pend  *store.Pending
	n     uint64
	began time.Time
}

// batchCommitted records a committed batch: the observer, progress and the
// chain's state.
func (p *Pipeline) batchCommitted(ctx context.Context, c Chain, last, n, tip uint64, began time.Time, st *streamState) {
	if p.opts.Observer != nil {
		p.opts.Observer.Batch(c.Key, n, time.Since(began))
	}
	p.committed(c, last, n, tip, st)
	if rerr := p.recordState(ctx, c, st, nil); rerr != nil {
		p.log.Warn("ingest: record chain state", "chain", c.Key, "err", rerr)
	}
}

// overlaps says whether c's batches overlap: batch k's end (the work its
// Flush queued, the checkpoint, the commit) runs on its connection while
// the writer applies batch k+1 on another (store.Tx.CommitAsync,
// BeginAfter). PostgreSQL only (SQLite has one writer connection), and EVM
// chains only: their Apply reads nothing batch k wrote but through the
// store's reads, which wait for k's commit, and updates no row k inserted
// (the P- and X-chain indexers update the UTXOs earlier blocks created).
// k+1's Flush, which reads back rollups and balances, runs after k
// committed; k+1 commits only after k did; if k fails, k+1 is rolled back
// and the chain restarts from the last committed checkpoint (docs/benchmarks.md,
// "PostgreSQL write path", tenth session).
func (p *Pipeline) overlaps(c Chain) bool {
	return p.db.Dialect() == store.Postgres && c.Kind == "EVM"
}

// prefetch fetches from..to in order, in chunks of at most size heights that
// never straddle a multiple of batch heights from from, and stores and
// prepares them (rawEncoder, Preparer) ahead of the writer. The channel closes
// after the last chunk, after a failed one, or when ctx ends.
func prefetch(ctx context.Context, c Chain, from, to uint64, size, batch int) <-chan chunk {
	out := make(chan chunk, prefetchChunks)
	var enc rawEncoder
	go func() {
		defer close(out)
		// The first chunk is smaller: the writer starts sooner.
		n := uint64(max(size/4, 1))
		for lo := from; ; {
			batchEnd := lo + uint64(batch) - 1 - (lo-from)%uint64(batch)
			hi := min(to, batchEnd)
			if hi-lo >= n {
				hi = lo + n - 1
			}
			n = uint64(size)
			blocks, err := c.Source.Fetch(ctx, lo, hi)
			if err == nil {
				err = validateBatch(blocks, lo, hi)
			}
			if err == nil {
				// Here, off the writer's goroutine.
				enc.encode(blocks)
				Prepare(c.Indexer, blocks)
			}
			var last uint64
			if err == nil {
				last = blocks[len(blocks)-1].Height
			}
			select {
			case out <- chunk{blocks: blocks, err: err, endsBatch: err == nil && (last == to || last == batchEnd)}:
			case <-ctx.Done():
				return
			}
			if err != nil || last == to {
				return
			}
			lo = last + 1
		}
	}()
	return out
}

// validateBatch refuses a chunk with gaps, wrong heights or heights outside
// from..to: never skip a height.
func validateBatch(blocks []RawBlock, from, to uint64) error {
	if len(blocks) == 0 {
		return errors.New("source returned no blocks")
	}
	if uint64(len(blocks)-1) > to-from {
		return fmt.Errorf("source returned %d blocks for heights %d..%d", len(blocks), from, to)
	}
	for i, b := range blocks {
		if b.Height != from+uint64(i) {
			return fmt.Errorf("source returned height %d at position %d, want %d", b.Height, i, from+uint64(i))
		}
	}
	return nil
}

// writeBatch writes chunks from the prefetcher in one transaction with their
// raw blocks and the checkpoint, until a chunk ends the batch. It commits
// what it applied, and stops early, when the chunks stop (a fetch error, or
// ctx ended) or none arrives within Options.MaxBatchWait. It returns the blocks
// committed and the fetch error that stopped it, if any; after a write error
// nothing of the batch is kept.
//
// prev is the batch whose commit is still in flight, if any; settle waits
// for it (and records it) and runs before this batch's Flush, which reads
// what prev wrote. When c's batches overlap (overlaps) the commit runs on
// its own: writeBatch returns the blocks applied and their pending commit
// (settle's next call waits for it); else it commits and returns a nil
// Pending.
func (p *Pipeline) writeBatch(ctx context.Context, c Chain, chunks <-chan chunk, tip uint64, prev *inflight, settle func() error) (uint64, *store.Pending, error) {
	// A batch that started writing finishes even if shutdown begins: the
	// pipeline stops between batches, never inside one. Its context lasts
	// until its commit ended (CommitAsync's release).
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer func() {
		if cancel != nil {
			cancel()
		}
	}()
	var (
		tx       *store.Tx
		n        uint64
		last     RawBlock
		fetchErr error
		// wait bounds the transaction's waits for chunks, all of them
		// together (waited so far): nil before it began, wait without limit.
		wait   *time.Timer
		waited time.Duration
	)
	defer func() {
		if tx != nil {
			tx.Rollback() //nolint:errcheck // the batch's error is the one to report
			Discard(c.Indexer)
		}
	}()
	// prevDone: prev's commit ended; it is recorded then (progress, status,
	// AfterCommit), not when this batch ends, which at the tip may be long.
	var prevDone <-chan struct{}
	if prev != nil {
		prevDone = prev.pend.Done()
	}
	for {
		ch, ok, ended, w := nextChunk(chunks, wait, p.opts.MaxBatchWait-waited, prevDone)
		if wait != nil {
			waited += w
		}
		if ended {
			if err := settle(); err != nil {
				return 0, nil, err
			}
			prevDone = nil
			continue
		}
		if !ok {
			break // closed, or waited too long with blocks applied
		}
		if ch.err != nil {
			fetchErr = ch.err
			break
		}
		if tx == nil {
			var after *store.Pending
			if prevDone != nil {
				after = prev.pend
			}
			var err error
			if tx, err = p.db.BeginAfter(wctx, after); err != nil {
				return 0, nil, err
			}
			wait = time.NewTimer(p.opts.MaxBatchWait)
			defer wait.Stop()
		}
		if err := applyChunk(wctx, tx, c, ch.blocks); err != nil {
			return 0, nil, err
		}
		n += uint64(len(ch.blocks))
		last = ch.blocks[len(ch.blocks)-1]
		if ch.endsBatch {
			break
		}
	}
	if tx == nil {
		return 0, nil, fetchErr
	}
	if err := settle(); err != nil {
		return 0, nil, err
	}
	if err := Flush(wctx, c.Indexer, tx); err != nil {
		return 0, nil, fmt.Errorf("index blocks ..%d: %w", last.Height, err)
	}
	if err := SetCheckpoint(wctx, tx, c.Key, last, tip); err != nil {
		return 0, nil, err
	}
	if p.overlaps(c) {
		pend := tx.CommitAsync(cancel)
		tx, cancel = nil, nil
		return n, pend, fetchErr
	}
	err := tx.Commit()
	tx = nil
	if err != nil {
		return 0, nil, err
	}
	return n, nil, fetchErr
}

// nextChunk takes the next chunk, preferring one that is ready; if none is,
// it waits at most d more on the wait timer (nil before the transaction
// began: wait without limit) and reports how long it waited. The bound is
// on the transaction's waits in all, not on its age: with a slow node they
// add up and the applied blocks are committed, but a batch that merely took
// long is not cut at its first short wait (under load a sustained catch-up's
// 2,000-block batches were, when the bound was the transaction's age: more
// commits, each writing the address-keyed tails again, docs/benchmarks.md
// "Fourteenth session"). ended reports instead that prevDone closed (nil:
// not watched).
func nextChunk(chunks <-chan chunk, wait *time.Timer, d time.Duration, prevDone <-chan struct{}) (ch chunk, ok, ended bool, waited time.Duration) {
	select {
	case ch, ok := <-chunks:
		return ch, ok, false, 0
	default:
	}
	start := time.Now()
	var expired <-chan time.Time
	if wait != nil {
		wait.Reset(max(d, 0)) // Go 1.23 timers: no stale expiry survives a Reset
		expired = wait.C
	}
	select {
	case ch, ok := <-chunks:
		return ch, ok, false, time.Since(start)
	case <-expired:
		return chunk{}, false, false, time.Since(start)
	case <-prevDone:
		return chunk{}, false, true, time.Since(start)
	}
}

// applyChunk stores a chunk's raw blocks in one bulk load (COPY on
// PostgreSQL, queued: the server loads them while the blocks are indexed;
// store.Tx.Queue) and indexes each block, inside tx.
func applyChunk(ctx context.Context, tx *store.Tx, c Chain, blocks []RawBlock) error {
	raw := make([][]any, len(blocks))
	for i, b := range blocks {
		raw[i] = []any{c.Key, int64(b.Height), b.Hash, b.Timestamp, b.stored(), int64(b.Encoding)}
	}
	if err := tx.QueueCopy(ctx, "raw_blocks", rawBlockColumns, raw); err != nil {
		return fmt.Errorf("store raw blocks %d..%d: %w", blocks[0].Height, blocks[len(blocks)-1].Height, err)
	}
	return ApplyBlocks(ctx, tx, c.Indexer, blocks)
}

// committed records a committed batch: progress, rate, the periodic log line
// and the AfterCommit hook.
func (p *Pipeline) committed(c Chain, last, n, tip uint64, st *streamState) {
	st.rate.add(int(n))
	p.setProgress(c.Key, int64(last), tip, st.rate.value())
	if p.opts.AfterCommit != nil {
		p.opts.AfterCommit(c.Key, last)
	}
	if time.Since(st.lastLog) > 5*time.Second || last >= tip {
		st.lastLog = time.Now()
		eta := ""
		if r := st.rate.value(); r > 0 && tip > last {
			eta = (time.Duration(float64(tip-last)/r) * time.Second).String()
		}
		p.log.Info("ingest progress", "chain", c.Key, "height", last, "tip", tip, "blocks_per_s", fmt.Sprintf("%.1f", st.rate.value()), "eta", eta)
	}
}

var rawBlockColumns = []string{"chain_key", "height", "hash", "block_time", "body", "encoding"}

// SetCheckpoint records the last indexed block of a chain inside tx.
func SetCheckpoint(ctx context.Context, tx *store.Tx, chain string, last RawBlock, tip uint64) error {
	if _, err := tx.Exec(ctx, `INSERT INTO checkpoints (chain_key, height, block_hash, block_time, node_height, updated_at)
		VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT (chain_key) DO UPDATE SET height=excluded.height, block_hash=excluded.block_hash,
		block_time=excluded.block_time, node_height=excluded.node_height, updated_at=excluded.updated_at`,
		chain, int64(last.Height), last.Hash, last.Timestamp, int64(tip), time.Now().Unix()); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// MarkWaiting records, for every registered chain, that ingestion waits
// (why: msg), as a stall that status and the health check show; each
// chain's pipeline clears it when it starts.
func MarkWaiting(ctx context.Context, db *store.DB, msg string) error {
	if _, err := db.ExecContext(ctx, `UPDATE chains SET stall_error = $1, stalled_since = COALESCE(stalled_since, $2)`,
		msg, time.Now().Unix()); err != nil {
		return fmt.Errorf("ingest: mark chains waiting: %w", err)
	}
	return nil
}

// nodeTipTimeout bounds the tip asked for while a chain is stalled.
const nodeTipTimeout = 10 * time.Second

// nodeTip asks the node's tip once (bounded), recording it like tip does.
func (p *Pipeline) nodeTip(ctx context.Context, c Chain) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, nodeTipTimeout)
	defer cancel()
	t, err := c.Source.Tip(ctx)
	if err != nil {
		return 0, err
	}
	_, _ = p.db.ExecContext(ctx, `UPDATE checkpoints SET node_height = $1, updated_at = $2 WHERE chain_key = $3`, int64(t), time.Now().Unix(), c.Key)
	return t, nil
}

// tip asks the node for the chain's tip until it answers (or ctx ends).
// While it does not, the chain is stalled (recordState: one ERROR line, the
// state in the chains table for status and health).
func (p *Pipeline) tip(ctx context.Context, c Chain, st *streamState) (uint64, error) {
	backoff := p.opts.RetryBase
	for {
		t, err := c.Source.Tip(ctx)
		if err == nil {
			// updated_at doubles as the ingester's heartbeat for health checks.
			_, _ = p.db.ExecContext(ctx, `UPDATE checkpoints SET node_height = $1, updated_at = $2 WHERE chain_key = $3`, int64(t), time.Now().Unix(), c.Key)
			if st.stalled {
				if err := p.recordState(ctx, c, st, nil); err != nil {
					p.log.Warn("ingest: record chain state", "chain", c.Key, "err", err)
				}
			}
			return t, nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if err := p.recordState(ctx, c, st, fmt.Errorf("node tip: %w", err)); err != nil {
			p.log.Warn("ingest: record chain state", "chain", c.Key, "err", err)
		}
		if err := sleep(ctx, backoff); err != nil {
			return 0, err
		}
		backoff = min(backoff*2, p.opts.RetryMax)
	}
}

func (p *Pipeline) setProgress(chain string, indexed int64, tip uint64, r float64) {
	p.mu.Lock()
	p.progress[chain] = Progress{Chain: chain, Indexed: indexed, Tip: tip, BlocksPerS: r, LastUpdated: time.Now()}
	p.mu.Unlock()
	_, _ = p.db.ExecContext(context.Background(), `UPDATE checkpoints SET rate = $1 WHERE chain_key = $2`, r, chain)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// rate is a blocks/s estimate over the last ~10 seconds.
type rateMeter struct {
	samples []rateSample
}

type rateSample struct {
	at time.Time
	n  int
}

func newRate() *rateMeter { return &rateMeter{} }

func (r *rateMeter) add(n int) {
	now := time.Now()
	r.samples = append(r.samples, rateSample{now, n})
	for len(r.samples) > 1 && now.Sub(r.samples[0].at) > 10*time.Second {
		r.samples = r.samples[1:]
	}
}

func (r *rateMeter) value() float64 {
	if len(r.samples) < 2 {
		return 0
	}
	total := 0
	for _, s := range r.samples[1:] {
		total += s.n
	}
	d := r.samples[len(r.samples)-1].at.Sub(r.samples[0].at).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(total) / d
}
