package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/vms/proposervm/block"
)

// fakeIndex holds wrappers of blocks whose bytes are their height (8 bytes),
// the block at height h at position h - offset. err, when set, is every
// call's answer.
type fakeIndex struct {
	offset, last int64
	err          error
	calls        int
}

func innerAt(h uint64) []byte { return binary.BigEndian.AppendUint64(nil, h) }

func (f *fakeIndex) wrapper(pos int64) []byte {
	b, err := block.BuildOption(ids.Empty, innerAt(uint64(pos+f.offset)))
	if err != nil {
		panic(err)
	}
	return b.Bytes()
}

func (f *fakeIndex) Last(context.Context) (uint64, []byte, error) {
	f.calls++
	if f.err != nil {
		return 0, nil, f.err
	}
	return uint64(f.last), f.wrapper(f.last), nil
}

func (f *fakeIndex) Range(_ context.Context, start uint64, n int) ([][]byte, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	var out [][]byte
	for p := int64(start); p <= f.last && len(out) < n; p++ {
		out = append(out, f.wrapper(p))
	}
	return out, nil
}

func heightOf(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, errors.New("not a test block")
	}
	return binary.BigEndian.Uint64(b), nil
}

func fetched(from, to uint64) []RawBlock {
	var out []RawBlock
	for h := from; h <= to; h++ {
		b := innerAt(h)
		out = append(out, RawBlock{Height: h, Hash: ids.ID(hashing.ComputeHash256Array(b)).String(), Bytes: b})
	}
	return out
}

// wrapped lists the heights whose bytes were swapped for a wrapper.
func wrapped(bs []RawBlock) []uint64 {
	var out []uint64
	for _, b := range bs {
		if !bytes.Equal(b.Bytes, innerAt(b.Height)) {
			out = append(out, b.Height)
		}
	}
	return out
}

func TestWrappersAttach(t *testing.T) {
	waits := indexBehindWaits
	indexBehindWaits = []time.Duration{time.Millisecond}
	t.Cleanup(func() { indexBehindWaits = waits })
	logs := &strings.Builder{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	idx := &fakeIndex{offset: 10, last: 2000} // heights 10..2010 indexed
	w := NewWrappers("P", idx, log)
	w.RetryAfter = time.Hour
	ctx := context.Background()

	// Heights before the index began keep their bytes; a range beyond one
	// Range call (1,024) is fetched in several.
	bs := fetched(5, 1500)
	w.attach(ctx, bs, heightOf)
	if got := wrapped(bs); len(got) != 1491 || got[0] != 10 || got[len(got)-1] != 1500 {
		t.Fatalf("wrapped %d heights, %v..", len(got), got[:min(3, len(got))])
	}
	// The index shifted (rebuilt): the mismatch is detected and the offset
	// learnt again at once; nothing wrong is attached.
	idx.offset = 7
	bs = fetched(100, 110)
	if w.attach(ctx, bs, heightOf); len(wrapped(bs)) != 11 || w.Notice() != "" {
		t.Fatalf("after relearning wrapped %v, notice %q", wrapped(bs), w.Notice())
	}
	idx.offset = 10

	// Failures fall back to blocks as fetched: one ERROR line, a notice,
	// and the index left alone until RetryAfter.
	for _, tt := range []struct {
		name string
		err  error
		from uint64
	}{
		{"index ends before the blocks", nil, 2005},
		{"index down", errors.New("index down"), 200},
		{"wrong answers", errors.New("inconsistent answer: container 3: node says A, bytes are B"), 300},
	} {
		t.Run(tt.name, func(t *testing.T) {
			logs.Reset()
			w.failure, w.retryAt = "", time.Time{}
			idx.err = tt.err
			bs := fetched(tt.from, tt.from+10)
			w.attach(ctx, bs, heightOf)
			if tt.err != nil && len(wrapped(bs)) != 0 {
				t.Fatalf("wrapped %v from a failing index", wrapped(bs))
			}
			if n := strings.Count(logs.String(), "level=ERROR"); n != 1 || !strings.Contains(w.Notice(), "without proposer details") {
				t.Fatalf("%d ERROR lines, notice %q: %s", n, w.Notice(), logs.String())
			}
			calls := idx.calls
			for range 3 {
				bs := fetched(tt.from+11, tt.from+20)
				if w.attach(ctx, bs, heightOf); len(wrapped(bs)) != 0 {
					t.Fatal("wrapped while the index is left alone")
				}
			}
			if idx.calls != calls || strings.Count(logs.String(), "level=ERROR") != 1 {
				t.Fatalf("index asked %d times, %d ERROR lines while left alone", idx.calls-calls, strings.Count(logs.String(), "level=ERROR"))
			}
			// RetryAfter passed and the index answers: details again.
			idx.err = nil
			w.retryAt = time.Time{}
			bs = fetched(500, 510)
			if w.attach(ctx, bs, heightOf); len(wrapped(bs)) != 11 || w.Notice() != "" || !strings.Contains(logs.String(), "block index answers again") {
				t.Fatalf("after recovery wrapped %v, notice %q", wrapped(bs), w.Notice())
			}
		})
	}

	// An empty index is no failure; a node without one is not asked again.
	idx = &fakeIndex{err: fmt.Errorf("%w: json-rpc error -32000: no containers have been accepted", ErrIndexEmpty)}
	w = NewWrappers("P", idx, log)
	bs = fetched(600, 610)
	if w.attach(ctx, bs, heightOf); len(wrapped(bs)) != 0 || w.Notice() != "" {
		t.Fatalf("empty index: wrapped %v, notice %q", wrapped(bs), w.Notice())
	}
	idx.err = fmt.Errorf("%w: http status 404", ErrNoIndex)
	w.attach(ctx, fetched(600, 610), heightOf)
	calls := idx.calls
	if w.attach(ctx, fetched(611, 620), heightOf); idx.calls != calls || w.Notice() != "" {
		t.Fatalf("no index: asked again (%d calls), notice %q", idx.calls-calls, w.Notice())
	}

	// No index at all.
	var none *Wrappers
	bs = fetched(1, 3)
	if none.attach(ctx, bs, heightOf); len(wrapped(bs)) != 0 || none.Notice() != "" {
		t.Fatal("nil Wrappers changed blocks")
	}
}
