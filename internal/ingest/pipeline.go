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
	// BatchSize is how many blocks one write transaction carries.
	BatchSize int
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
}

// Pipeline follows a set of chains into one store.
type Pipeline struct {
	db     *store.DB
	chains []Chain
	opts   Options
	log    *slog.Logger

	mu       sync.Mutex
	progress map[string]Progress
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
// reached the tip it saw at start). The first definitive error of any chain is
// returned after the others stop.
func (p *Pipeline) Run(ctx context.Context) error {
	for _, c := range p.chains {
		if err := RegisterChain(ctx, p.db, c); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(p.chains))
	var wg sync.WaitGroup
	for _, c := range p.chains {
		wg.Add(1)
		go func(c Chain) {
			defer wg.Done()
			if err := p.follow(ctx, c); err != nil && !errors.Is(err, context.Canceled) {
				errs <- fmt.Errorf("ingest %s: %w", c.Key, err)
				cancel()
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	return <-errs
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
	batch := c.BatchSize
	if batch <= 0 {
		batch = 64
	}
	next, err := Checkpoint(ctx, p.db, c.Key)
	if err != nil {
		return err
	}
	next++
	tip, err := p.tip(ctx, c)
	if err != nil {
		return err
	}
	target := tip
	p.setProgress(c.Key, next-1, tip, 0)
	p.log.Info("ingest start", "chain", c.Key, "from", next, "tip", tip)

	// Fetching the next batch overlaps with writing the current one.
	type fetched struct {
		blocks []RawBlock
		err    error
	}
	var pending chan fetched
	startFetch := func(from, to uint64) chan fetched {
		ch := make(chan fetched, 1)
		go func() {
			b, err := c.Source.Fetch(ctx, from, to)
			ch <- fetched{b, err}
		}()
		return ch
	}
	var pendingFrom uint64
	rate := newRate()
	lastLog := time.Now()
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
			t, err := p.tip(ctx, c)
			if err != nil {
				p.log.Warn("ingest: tip", "chain", c.Key, "err", err)
				continue
			}
			target, tip = t, t
			p.setProgress(c.Key, next-1, tip, rate.value())
			continue
		}
		from := uint64(next)
		to := min(from+uint64(batch)-1, target)
		var res fetched
		if pending != nil && pendingFrom == from {
			res = <-pending
		} else {
			if pending != nil {
				<-pending // stale prefetch (after a failed write); drop it
			}
			res = <-startFetch(from, to)
		}
		pending = nil
		if res.err == nil && len(res.blocks) > 0 {
			if nf := from + uint64(len(res.blocks)); nf <= target {
				pendingFrom = nf
				pending = startFetch(nf, min(nf+uint64(batch)-1, target))
			}
		}
		if res.err == nil {
			res.err = validateBatch(res.blocks, from)
		}
		if res.err == nil {
			// A batch that started writing finishes even if shutdown begins:
			// the pipeline stops between batches, never inside one.
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			res.err = p.write(wctx, c, res.blocks, tip)
			cancel()
		}
		if res.err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			p.log.Error("ingest batch failed; retrying", "chain", c.Key, "from", from, "to", to, "err", res.err, "backoff", backoff)
			if err := sleep(ctx, backoff); err != nil {
				return err
			}
			backoff = min(backoff*2, p.opts.RetryMax)
			continue
		}
		backoff = p.opts.RetryBase
		last := res.blocks[len(res.blocks)-1].Height
		next = int64(last) + 1
		rate.add(len(res.blocks))
		p.setProgress(c.Key, int64(last), tip, rate.value())
		if p.opts.AfterCommit != nil {
			p.opts.AfterCommit(c.Key, last)
		}
		if time.Since(lastLog) > 5*time.Second || uint64(next) > target {
			lastLog = time.Now()
			eta := ""
			if r := rate.value(); r > 0 && tip > last {
				eta = (time.Duration(float64(tip-last)/r) * time.Second).String()
			}
			p.log.Info("ingest progress", "chain", c.Key, "height", last, "tip", tip, "blocks_per_s", fmt.Sprintf("%.1f", rate.value()), "eta", eta)
		}
	}
}

// validateBatch refuses a batch with gaps or wrong heights: never skip a height.
func validateBatch(blocks []RawBlock, from uint64) error {
	if len(blocks) == 0 {
		return errors.New("source returned no blocks")
	}
	for i, b := range blocks {
		if b.Height != from+uint64(i) {
			return fmt.Errorf("source returned height %d at position %d, want %d", b.Height, i, from+uint64(i))
		}
	}
	return nil
}

// write applies a batch in one transaction with the raw blocks and the checkpoint.
func (p *Pipeline) write(ctx context.Context, c Chain, blocks []RawBlock, tip uint64) error {
	tx, err := p.db.Begin(ctx)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			tx.Rollback() //nolint:errcheck // the batch's error is the one to report
			Discard(c.Indexer)
		}
	}()
	// The batch's raw blocks in one bulk load (COPY on PostgreSQL): a
	// height is written once, its batch rolled back whole on failure.
	raw := make([][]any, len(blocks))
	for i, b := range blocks {
		raw[i] = []any{c.Key, int64(b.Height), b.Hash, b.Timestamp, b.Bytes}
	}
	if err := tx.CopyFrom(ctx, "raw_blocks", rawBlockColumns, raw); err != nil {
		return fmt.Errorf("store raw blocks %d..%d: %w", blocks[0].Height, blocks[len(blocks)-1].Height, err)
	}
	for _, b := range blocks {
		if err := c.Indexer.Apply(ctx, tx, b); err != nil {
			return fmt.Errorf("index block %d: %w", b.Height, err)
		}
	}
	if err := Flush(ctx, c.Indexer, tx); err != nil {
		return fmt.Errorf("index blocks %d..%d: %w", blocks[0].Height, blocks[len(blocks)-1].Height, err)
	}
	last := blocks[len(blocks)-1]
	if err := SetCheckpoint(ctx, tx, c.Key, last, tip); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	committed = true
	return nil
}

var rawBlockColumns = []string{"chain_key", "height", "hash", "block_time", "body"}

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

func (p *Pipeline) tip(ctx context.Context, c Chain) (uint64, error) {
	backoff := p.opts.RetryBase
	for {
		t, err := c.Source.Tip(ctx)
		if err == nil {
			// updated_at doubles as the ingester's heartbeat for health checks.
			_, _ = p.db.ExecContext(ctx, `UPDATE checkpoints SET node_height = $1, updated_at = $2 WHERE chain_key = $3`, int64(t), time.Now().Unix(), c.Key)
			return t, nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		p.log.Warn("ingest: node tip unavailable; retrying", "chain", c.Key, "err", err, "backoff", backoff)
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
