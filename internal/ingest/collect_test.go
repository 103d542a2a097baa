package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// collectIndexer records the order of its Prepare, Collect and Apply calls,
// fails the Apply of height failAt (0: none), and takes applyTime per Apply.
type collectIndexer struct {
	mu        sync.Mutex
	events    []string
	running   int // Collect calls running
	failAt    uint64
	maxRun    int
	applyTime time.Duration
}

func (ix *collectIndexer) note(format string, args ...any) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.events = append(ix.events, fmt.Sprintf(format, args...))
}

func (ix *collectIndexer) Prepare(b *RawBlock) { ix.note("prepare %d", b.Height) }

func (ix *collectIndexer) Collect(b *RawBlock) {
	ix.mu.Lock()
	ix.running++
	ix.maxRun = max(ix.maxRun, ix.running)
	ix.mu.Unlock()
	ix.note("collect %d", b.Height)
	ix.mu.Lock()
	ix.running--
	ix.mu.Unlock()
}

func (ix *collectIndexer) Apply(ctx context.Context, tx *store.Tx, b RawBlock) error {
	ix.note("apply %d", b.Height)
	time.Sleep(ix.applyTime)
	if b.Height == ix.failAt {
		return errors.New("refused")
	}
	return nil
}

func (ix *collectIndexer) DerivedTables() []string { return nil }

// decorated wraps an indexer as the metrics and webhook decorators do: its
// own Apply, no Prepare or Collect of its own.
type decorated struct{ inner Indexer }

func (d decorated) Apply(ctx context.Context, tx *store.Tx, b RawBlock) error {
	return d.inner.Apply(ctx, tx, b)
}
func (d decorated) DerivedTables() []string { return d.inner.DerivedTables() }
func (d decorated) Unwrap() Indexer         { return d.inner }

// ApplyBlocks applies every block once, in order (none after a failed
// Apply); Prepare prepares each and collects the first; every other block
// is collected at most once, never by two Collect calls at once, never after
// its Apply began (an Apply then collects itself), and no Collect runs once
// ApplyBlocks returned (the caller may discard the batch then). With an
// Apply slower than Collect, each block is collected ahead of its Apply; all
// of it also through decorators (Unwrap).
func TestApplyBlocksCollectsAhead(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		failAt uint64
		wraps  int // decorators around the indexer
		slow   bool
	}{
		{"one block", 1, 0, 0, false},
		{"a chunk", 7, 0, 0, false},
		{"failed at the fourth", 7, 13, 0, false},
		{"a chunk, decorated", 7, 0, 1, false},
		{"a chunk, slow apply", 7, 0, 0, true},
		{"a chunk, slow apply, decorated twice", 7, 0, 2, true},
		{"failed at the fourth, slow apply, decorated twice", 7, 13, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := &collectIndexer{failAt: tt.failAt}
			if tt.slow {
				ix.applyTime = 5 * time.Millisecond
			}
			var top Indexer = ix
			for range tt.wraps {
				top = decorated{top}
			}
			blocks := make([]RawBlock, tt.n)
			for i := range blocks {
				blocks[i].Height = uint64(10 + i)
			}
			Prepare(top, blocks)
			err := ApplyBlocks(context.Background(), nil, top, blocks)
			if (err != nil) != (tt.failAt != 0) {
				t.Fatalf("ApplyBlocks: %v", err)
			}
			ix.mu.Lock()
			returned := len(ix.events)
			ix.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			ix.mu.Lock()
			defer ix.mu.Unlock()
			if len(ix.events) != returned {
				t.Fatalf("calls after ApplyBlocks returned: %v", ix.events[returned:])
			}
			if ix.running != 0 || ix.maxRun > 1 {
				t.Fatalf("%d Collect calls still running, up to %d at once", ix.running, ix.maxRun)
			}
			at := map[string]int{}
			for i, e := range ix.events {
				if _, dup := at[e]; dup {
					t.Fatalf("%q twice: %v", e, ix.events)
				}
				at[e] = i
			}
			last := uint64(10 + tt.n - 1)
			if tt.failAt != 0 {
				last = tt.failAt
			}
			for h := uint64(10); h <= last; h++ {
				c, collected := at[fmt.Sprintf("collect %d", h)]
				a, applied := at[fmt.Sprintf("apply %d", h)]
				if !applied || (collected && c > a) || (!collected && (h == 10 || tt.slow)) {
					t.Fatalf("block %d: collected %v (at %d), applied %v (at %d): %v", h, collected, c, applied, a, ix.events)
				}
				if p, prepared := at[fmt.Sprintf("prepare %d", h)]; !prepared || (collected && p > c) {
					t.Fatalf("block %d: prepared %v (at %d), collected at %d: %v", h, prepared, p, c, ix.events)
				}
				if h > 10 && a < at[fmt.Sprintf("apply %d", h-1)] {
					t.Fatalf("block %d applied before %d: %v", h, h-1, ix.events)
				}
			}
			for h := last + 1; h < uint64(10+tt.n); h++ {
				if _, applied := at[fmt.Sprintf("apply %d", h)]; applied {
					t.Fatalf("block %d applied after a failure: %v", h, ix.events)
				}
			}
		})
	}
}
