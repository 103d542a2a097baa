package chains

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// stagedIndexer counts the stages each block went through.
type stagedIndexer struct {
	mu                           sync.Mutex
	prepared, collected, applied map[uint64]int
}

func (ix *stagedIndexer) count(m map[uint64]int, h uint64) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	m[h]++
}

func (ix *stagedIndexer) Prepare(b *ingest.RawBlock) { ix.count(ix.prepared, b.Height) }
func (ix *stagedIndexer) Collect(b *ingest.RawBlock) { ix.count(ix.collected, b.Height) }
func (ix *stagedIndexer) Apply(_ context.Context, _ *store.Tx, b ingest.RawBlock) error {
	ix.count(ix.applied, b.Height)
	time.Sleep(5 * time.Millisecond) // the collector's turn: it collects every block ahead
	return nil
}
func (ix *stagedIndexer) DerivedTables() []string { return nil }

// The production decorators (metrics rollups, webhook events) leave the EVM
// indexer's Prepare and Collect to the pipeline's stages ahead of the writer:
// with an Apply slower than Collect, each block is prepared, collected and
// applied once (a decorator that forwarded Prepare but not Collect left every
// Collect to the writer).
func TestDecorateKeepsStagesAhead(t *testing.T) {
	inner := &stagedIndexer{prepared: map[uint64]int{}, collected: map[uint64]int{}, applied: map[uint64]int{}}
	ix := Decorate("C", "EVM", inner)
	blocks := make([]ingest.RawBlock, 5)
	for i := range blocks {
		blocks[i].Height = uint64(100 + i)
	}
	ingest.Prepare(ix, blocks)
	if err := ingest.ApplyBlocks(context.Background(), nil, ix, blocks); err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		h := b.Height
		if inner.prepared[h] != 1 || inner.collected[h] != 1 || inner.applied[h] != 1 {
			t.Fatalf("block %d: prepared %d, collected %d, applied %d times, want once each",
				h, inner.prepared[h], inner.collected[h], inner.applied[h])
		}
	}
}
