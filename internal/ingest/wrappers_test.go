package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/vms/proposervm/block"
)

// fakeIndex holds wrappers of blocks whose bytes are their height (8 bytes),
// the block at height h at position h - offset.
type fakeIndex struct {
	offset, last int64
	fail         bool
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
	if f.fail {
		return 0, nil, errors.New("index down")
	}
	return uint64(f.last), f.wrapper(f.last), nil
}

func (f *fakeIndex) Range(_ context.Context, start uint64, n int) ([][]byte, error) {
	if f.fail {
		return nil, errors.New("index down")
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
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	idx := &fakeIndex{offset: 10, last: 2000} // heights 10..2010 indexed
	w := NewWrappers("P", idx, log)

	// Heights before the index began keep their bytes; a range beyond one
	// Range call (1,024) is fetched in several.
	bs := fetched(5, 1500)
	w.attach(context.Background(), bs, heightOf)
	if got := wrapped(bs); len(got) != 1491 || got[0] != 10 || got[len(got)-1] != 1500 {
		t.Fatalf("wrapped %d heights, %v..", len(got), got[:min(3, len(got))])
	}
	// Beyond the index's end: none.
	bs = fetched(2011, 2020)
	if w.attach(context.Background(), bs, heightOf); len(wrapped(bs)) != 0 {
		t.Fatalf("wrapped %v beyond the index", wrapped(bs))
	}
	// The index shifted (rebuilt): the mismatch is detected, nothing wrong
	// is attached, and the next batch learns the new offset.
	idx.offset = 7
	bs = fetched(100, 110)
	if w.attach(context.Background(), bs, heightOf); len(wrapped(bs)) != 0 {
		t.Fatalf("wrapped %v from a shifted index", wrapped(bs))
	}
	bs = fetched(100, 110)
	if w.attach(context.Background(), bs, heightOf); len(wrapped(bs)) != 11 {
		t.Fatalf("after relearning wrapped %v", wrapped(bs))
	}
	// An index that fails leaves the blocks as fetched.
	idx.fail = true
	bs = fetched(200, 210)
	if w.attach(context.Background(), bs, heightOf); len(wrapped(bs)) != 0 {
		t.Fatalf("wrapped %v from a failing index", wrapped(bs))
	}
	// No index at all.
	var none *Wrappers
	bs = fetched(1, 3)
	if none.attach(context.Background(), bs, heightOf); len(wrapped(bs)) != 0 {
		t.Fatal("nil Wrappers changed blocks")
	}
}
