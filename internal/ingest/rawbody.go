package ingest

import (
	"bytes"
	"fmt"

	"github.com/klauspost/compress/s2"
)

// RawEncoding is how raw_blocks.body holds a block (its encoding column).
type RawEncoding int64

const (
	// RawPlain is the block as fetched.
	RawPlain RawEncoding = 0
	// RawS2 is the block compressed with S2 (github.com/klauspost/compress,
	// block format). An EVM block with its receipts is tens of KB of hex JSON
	// that S2 shrinks 3-5× at ~2 GB/s: on SQLite its overflow pages were the
	// largest single cost of the ingest writer (docs/benchmarks.md). zstd
	// compresses further at four times the CPU; the compression runs in the
	// fetch stage, on the same two cores as the writer.
	RawS2 RawEncoding = 1
)

// compressMin is the smallest body worth compressing (P/X blocks are a few
// hundred bytes).
const compressMin = 2 << 10

// maxRawBody bounds a decoded body: a stored length is hostile input too.
const maxRawBody = 256 << 20

// rawEncoder sets blocks' stored forms. Its scratch buffer (S2 wants room
// for the worst case, more than the body) is reused: each stored body is a
// copy of just the bytes it needs.
type rawEncoder struct{ scratch []byte }

// encode sets each block's stored form: S2 when the body is large enough and
// smaller that way, else the body itself.
func (e *rawEncoder) encode(blocks []RawBlock) {
	for i := range blocks {
		b := &blocks[i]
		b.Stored, b.Encoding = nil, RawPlain
		if len(b.Bytes) < compressMin {
			continue
		}
		if n := s2.MaxEncodedLen(len(b.Bytes)); cap(e.scratch) < n {
			e.scratch = make([]byte, n)
		}
		if z := s2.Encode(e.scratch[:cap(e.scratch)], b.Bytes); len(z) < len(b.Bytes) {
			b.Stored, b.Encoding = bytes.Clone(z), RawS2
		}
	}
}

// RawBody returns the block stored in raw_blocks as body with encoding enc.
func RawBody(body []byte, enc RawEncoding) ([]byte, error) {
	switch enc {
	case RawPlain:
		return body, nil
	case RawS2:
		n, err := s2.DecodedLen(body)
		if err != nil {
			return nil, fmt.Errorf("stored raw block: %w", err)
		}
		if n > maxRawBody {
			return nil, fmt.Errorf("stored raw block: %d bytes decoded, at most %d", n, maxRawBody)
		}
		out, err := s2.Decode(make([]byte, n), body)
		if err != nil {
			return nil, fmt.Errorf("stored raw block: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("stored raw block: unknown encoding %d", int64(enc))
}
