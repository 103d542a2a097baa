package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// collectIndexer records the order of its Prepare, Collect and Apply calls,
// and fails the Apply of height failAt (0: none).
type collectIndexer struct {
	mu      sync.Mutex
	events  []string
	running int // Collect calls running
	failAt  uint64
	maxRun  int
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
	if b.Height == ix.failAt {
		return errors.New("refused")
	}
	return nil
}

func (ix *collectIndexer) DerivedTables() []string { return nil }

// ApplyBlocks collects each block (ingest.Collector) before it is applied,
// never more than one block ahead of Apply, applies every block once in
// order, and returns only once no Collect runs (the caller may discard the
// batch then), also after a failed Apply.
func TestApplyBlocksCollectsOneAhead(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		failAt uint64
	}{
		{"one block", 1, 0},
		{"a chunk", 7, 0},
		{"failed at the fourth", 7, 13},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := &collectIndexer{failAt: tt.failAt}
			blocks := make([]RawBlock, tt.n)
			for i := range blocks {
				blocks[i].Height = uint64(10 + i)
			}
			Prepare(ix, blocks)
			err := ApplyBlocks(context.Background(), nil, ix, blocks)
			if (err != nil) != (tt.failAt != 0) {
				t.Fatalf("ApplyBlocks: %v", err)
			}
			ix.mu.Lock()
			defer ix.mu.Unlock()
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
				if !collected || !applied || c > a {
					t.Fatalf("block %d: collected %v (at %d), applied %v (at %d): %v", h, collected, c, applied, a, ix.events)
				}
				if h > 10 && a < at[fmt.Sprintf("apply %d", h-1)] {
					t.Fatalf("block %d applied before %d: %v", h, h-1, ix.events)
				}
				if h > 11 && c < at[fmt.Sprintf("apply %d", h-2)] {
					t.Fatalf("block %d collected before %d was applied: more than one ahead: %v", h, h-2, ix.events)
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
