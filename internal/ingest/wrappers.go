package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/hashing"

	"github.com/permafrost-dev/permafrost/internal/decode/proposervm"
)

// WrapperIndex serves a chain's accepted blocks by acceptance position, as
// consensus accepted them: in their proposervm wrappers (avalanchego's index
// API, --index-enabled).
type WrapperIndex interface {
	// Last returns the position and bytes of the last accepted block.
	Last(ctx context.Context) (uint64, []byte, error)
	// Range returns the blocks from position start on: at most n, fewer at
	// the end of the index.
	Range(ctx context.Context, start uint64, n int) ([][]byte, error)
}

var (
	// ErrNoIndex is a WrapperIndex's answer when the node serves no block
	// index (avalanchego without --index-enabled answers HTTP 404).
	ErrNoIndex = errors.New("the node has no block index")
	// ErrIndexEmpty is its answer while the index has accepted nothing.
	ErrIndexEmpty = errors.New("the node's block index is empty")
)

// maxWrapperRange is the most blocks one Range call asks for (the node's
// limit, indexer.MaxFetchedByRange).
const maxWrapperRange = 1024

// Defaults of Wrappers' knobs.
const (
	defaultIndexRetryAfter = time.Minute
	defaultIndexTimeout    = 30 * time.Second
)

// Wrappers swaps the P or X blocks a source fetched by height for their
// proposervm wrappers, so the indexers can store the proposer details
// (the data service's proposerDetails). Blocks accepted since the index began
// sit at consecutive positions, so position = height - offset, learned from
// the last accepted block and checked on every block: a wrapper must hold the
// very block fetched by height (same ID).
//
// The index is an extra: blocks by height are the data. When the index
// fails (unreachable, wrong answers, not holding the fetched blocks), blocks
// go on without wrappers: one ERROR line says so, Notice says so until the
// index answers again (asked again after RetryAfter), and the chain never
// stops for it. A node without the index API is noticed once and not asked
// again.
type Wrappers struct {
	idx   WrapperIndex
	chain string
	log   *slog.Logger

	// RetryAfter is how long a failed index is left alone (default 1 min).
	RetryAfter time.Duration
	// Timeout bounds the index calls of one batch (default 30 s).
	Timeout time.Duration

	mu      sync.Mutex
	offset  int64 // height - position
	known   bool
	absent  bool      // the node has no index API
	failure string    // why the index is not used, "" while it is
	retryAt time.Time // when a failed index is asked again
}

// NewWrappers returns the wrapper lookup of chain over idx.
func NewWrappers(chain string, idx WrapperIndex, log *slog.Logger) *Wrappers {
	if log == nil {
		log = slog.Default()
	}
	return &Wrappers{idx: idx, chain: chain, log: log, RetryAfter: defaultIndexRetryAfter, Timeout: defaultIndexTimeout}
}

// Notice says, while the index fails, that blocks are indexed without
// proposer details and why; "" otherwise.
func (w *Wrappers) Notice() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failure
}

// errMisaligned: the index's block at a position is not the block fetched
// at the height the offset maps it to.
var errMisaligned = errors.New("block index does not hold the blocks fetched by height")

// attach replaces the Bytes of blocks (consecutive heights, inner blocks
// whose Hash is their ID) by their wrappers where the index has them. height
// parses an inner block's height.
func (w *Wrappers) attach(ctx context.Context, blocks []RawBlock, height func([]byte) (uint64, error)) {
	if w == nil || len(blocks) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.absent || (w.failure != "" && time.Now().Before(w.retryAt)) {
		return
	}
	ictx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	err := w.tryAttach(ictx, blocks, height)
	first := blocks[0].Height
	switch {
	case err == nil:
		if w.failure != "" {
			w.log.Info("ingest: block index answers again; proposer details are indexed again", "chain", w.chain, "height", first)
			w.failure = ""
		}
	case ctx.Err() != nil:
		// Shutting down: not the index's fault.
	case errors.Is(err, ErrNoIndex):
		w.absent = true
		w.log.Info("ingest: node has no block index (avalanchego --index-enabled); blocks are indexed without proposer details", "chain", w.chain)
	case errors.Is(err, ErrIndexEmpty):
		// The index has not reached these heights: nothing to attach.
	default:
		if w.failure == "" {
			w.log.Error("ingest: block index failed; indexing blocks by height without proposer details", "chain", w.chain, "height", first, "err", err)
		}
		w.failure = fmt.Sprintf("the node's block index failed at height %d (%v); blocks are indexed without proposer details until it answers again", first, err)
		w.retryAt = time.Now().Add(w.RetryAfter)
		w.known = false
	}
}

// tryAttach wraps what it can; with a stale offset (the index was rebuilt)
// it learns the offset again once.
func (w *Wrappers) tryAttach(ctx context.Context, blocks []RawBlock, height func([]byte) (uint64, error)) error {
	fresh := !w.known
	if !w.known {
		if err := w.learn(ctx, height); err != nil {
			return err
		}
	}
	err := w.wrap(ctx, blocks)
	if errors.Is(err, errMisaligned) && !fresh {
		if err := w.learn(ctx, height); err != nil {
			return err
		}
		err = w.wrap(ctx, blocks)
	}
	if err != nil {
		w.known = false
	}
	return err
}

// indexBehindWaits are the pauses before asking again for blocks the index
// does not hold yet: the node indexes a block as it accepts it, so a block
// fetched by height is in its index a moment later at most.
var indexBehindWaits = []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second}

// wrap attaches the wrappers of blocks at the learned offset.
func (w *Wrappers) wrap(ctx context.Context, blocks []RawBlock) error {
	first := int64(blocks[0].Height)
	start := max(first-w.offset, 0)
	end := int64(blocks[len(blocks)-1].Height) - w.offset
	waits := indexBehindWaits
	for pos := start; pos <= end; {
		got, err := w.idx.Range(ctx, uint64(pos), int(min(end-pos+1, maxWrapperRange)))
		if err != nil && !errors.Is(err, ErrIndexEmpty) {
			return err
		}
		if len(got) == 0 {
			if len(waits) == 0 {
				return fmt.Errorf("the block index ends before height %d", pos+w.offset)
			}
			if err := sleep(ctx, waits[0]); err != nil {
				return err
			}
			waits = waits[1:]
			continue
		}
		for i, raw := range got {
			b := &blocks[pos+int64(i)+w.offset-first]
			inner, _, err := proposervm.Parse(raw)
			if err != nil {
				continue // a block from before the proposervm: no wrapper
			}
			if got := ids.ID(hashing.ComputeHash256Array(inner)).String(); got != b.Hash {
				return fmt.Errorf("%w: position %d holds block %s, height %d is block %s", errMisaligned, pos+int64(i), got, b.Height, b.Hash)
			}
			b.Bytes = raw
		}
		pos += int64(len(got))
	}
	return nil
}

// learn sets offset from the last accepted block's height and position.
func (w *Wrappers) learn(ctx context.Context, height func([]byte) (uint64, error)) error {
	pos, raw, err := w.idx.Last(ctx)
	if err != nil {
		return err
	}
	inner := raw
	if in, _, err := proposervm.Parse(raw); err == nil {
		inner = in
	}
	h, err := height(inner)
	if err != nil {
		return fmt.Errorf("the block index's last block: %w", err)
	}
	w.offset, w.known = int64(h)-int64(pos), true
	return nil
}
