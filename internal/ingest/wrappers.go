package ingest

import (
	"context"
	"log/slog"
	"sync"

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

// maxWrapperRange is the most blocks one Range call asks for (the node's
// limit, indexer.MaxFetchedByRange).
const maxWrapperRange = 1024

// Wrappers swaps the P or X blocks a source fetched by height for their
// proposervm wrappers, so the indexers can store the proposer details
// (the data service's proposerDetails). Blocks accepted since the index began
// sit at consecutive positions, so position = height - offset, learned from
// the last accepted block and checked on every block: a wrapper must hold the
// very block fetched by height (same ID), or the offset is learned again.
// The index is an extra: when it fails, blocks go on without wrappers and a
// warning is logged.
type Wrappers struct {
	idx   WrapperIndex
	chain string
	log   *slog.Logger

	mu     sync.Mutex
	offset int64 // height - position
	known  bool
}

// NewWrappers returns the wrapper lookup of chain over idx.
func NewWrappers(chain string, idx WrapperIndex, log *slog.Logger) *Wrappers {
	if log == nil {
		log = slog.Default()
	}
	return &Wrappers{idx: idx, chain: chain, log: log}
}

// attach replaces the Bytes of blocks (consecutive heights, inner blocks
// whose Hash is their ID) by their wrappers where the index has them. height
// parses an inner block's height.
func (w *Wrappers) attach(ctx context.Context, blocks []RawBlock, height func([]byte) (uint64, error)) {
	if w == nil || len(blocks) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.known {
		if err := w.learn(ctx, height); err != nil {
			w.log.Warn("ingest: block index unavailable; blocks stored without proposer details", "chain", w.chain, "err", err)
			return
		}
	}
	first := int64(blocks[0].Height)
	start := max(first-w.offset, 0)
	end := int64(blocks[len(blocks)-1].Height) - w.offset
	for pos := start; pos <= end; {
		got, err := w.idx.Range(ctx, uint64(pos), int(min(end-pos+1, maxWrapperRange)))
		if err != nil {
			w.log.Warn("ingest: block index failed; blocks stored without proposer details", "chain", w.chain,
				"heights", [2]int64{pos + w.offset, end + w.offset}, "err", err)
			return
		}
		if len(got) == 0 {
			return // the index has not reached these heights
		}
		for i, raw := range got {
			b := &blocks[pos+int64(i)+w.offset-first]
			inner, _, err := proposervm.Parse(raw)
			if err != nil {
				continue // a block from before the proposervm: no wrapper
			}
			if ids.ID(hashing.ComputeHash256Array(inner)).String() != b.Hash {
				w.known = false
				w.log.Warn("ingest: block index is not aligned with heights; learning its offset again", "chain", w.chain, "height", b.Height)
				return
			}
			b.Bytes = raw
		}
		pos += int64(len(got))
	}
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
		return err
	}
	w.offset, w.known = int64(h)-int64(pos), true
	return nil
}
