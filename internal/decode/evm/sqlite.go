package evm

import (
	"context"
	"fmt"
	"math/bits"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// sqliteSorted keeps, on SQLite, the rows of the address-keyed tables (the
// insert specs with a sort key: address links, token, native and NFT owner
// histories) and inserts them in key order, up to sortedRows at a time and
// at the batch's Flush, in the batch's transaction. The tables are clustered
// by block (migration 0200): a block's rows append to their last leaves. But
// each row also has an entry in the table's address-ordered index
// (sortedIndex), and in block order each of those lands on its key's own
// leaf, at a random place in an index bigger than the writer's page cache: a
// page-cache miss (a read and an eviction) and a seek from the root per row,
// 3.6-14 µs per row at 250,000 blocks against 1.4 µs for the tables keyed by
// block (docs/benchmarks.md, "Ninth session"). In key order a leaf is read
// once per run of its keys. While a bulk catch-up defers those indexes the
// rows are written with their block, in block order, which the tables'
// leaves want (docs/benchmarks.md "Eighteenth session"). Nothing reads these
// tables inside the batch before its Flush (the PostgreSQL path loads them by
// COPY there: pgWriter).
//
// A full lot is sorted on a goroutine of its own while the writer goes on
// with the next blocks (the sort was 33 µs of the writer's CPU per block,
// about 5%), and inserted by the first write that finds it sorted, or at
// the batch's Flush: the writer's goroutine runs the statements only.
type sqliteSorted struct {
	// kept is a lot of the PostgreSQL writer's row store (add, sortRows,
	// reset), used here only for those tables; sorting is the lot being
	// sorted (nil: none), done closed once it is; spare a lot to reuse.
	kept, sorting, spare *pgKept
	done                 chan struct{}
	max                  int // rows kept before they are written; 0: written with their block
	buf                  []any
}

// sortedRows bounds the rows kept (about 150 bytes each: values and bytes
// copied): at 88 rows a block, a 2,000-block catch-up batch is written in
// six sorted runs, about 5 MB held at most. Twice as many took the peak RSS
// of a catch-up, whose writer cache is 192 MiB, to 474-501 MB under load
// (the bound is 500 MB; docs/benchmarks.md "Ninth session").
const sortedRows = 1 << 15

// sortedChunk is the rows of the next statement when n are left: 64, or
// the largest power of two up to n. Few row counts, so few statements: each
// is prepared once and kept (a statement of 400 rows of 7 columns is a few
// hundred KB, and one per row count added up to 20 MB or more of RSS).
func sortedChunk(n int) int {
	if n >= 64 {
		return 64
	}
	return 1 << (bits.Len(uint(n)) - 1)
}

// keep takes r's rows if its table is one kept and its index is not
// deferred; false: write them now.
func (s *sqliteSorted) keep(ctx context.Context, tx *store.Tx, r *rowSet) bool {
	n := r.rows()
	if s.max == 0 || r.spec.sorted == nil || n == 0 || tx.IndexDeferred(ctx, r.spec.sortedIndex) {
		return false
	}
	if s.kept == nil {
		s.kept, s.spare = s.spare, nil
		if s.kept == nil {
			s.kept = new(pgKept)
		}
	}
	s.kept.add(r)
	return true
}

// write hands the kept rows to a sorting goroutine once they are max or
// more, and inserts a lot sorted since (it waits for the sort if another
// lot is due).
func (s *sqliteSorted) write(ctx context.Context, tx *store.Tx) error {
	full := s.max > 0 && s.kept != nil && s.kept.rows >= s.max
	if s.sorting != nil {
		select {
		case <-s.done:
		default:
			if !full {
				return nil
			}
		}
		if err := s.insert(ctx, tx); err != nil {
			return err
		}
	}
	if full {
		s.sortAhead()
	}
	return nil
}

// sortAhead starts sorting the kept rows on a goroutine of their own (the
// batch's Flush starts the last lot's before it writes the balances).
func (s *sqliteSorted) sortAhead() {
	if s.kept == nil || s.kept.rows == 0 || s.sorting != nil {
		return
	}
	lot, done := s.kept, make(chan struct{})
	s.sorting, s.done, s.kept = lot, done, nil
	go func() {
		defer close(done)
		for _, c := range lot.copies {
			c.sortRows()
		}
	}()
}

// flush inserts every kept row: the lot being sorted, then the rest.
func (s *sqliteSorted) flush(ctx context.Context, tx *store.Tx) error {
	defer s.discard()
	if s.sorting != nil {
		if err := s.insert(ctx, tx); err != nil {
			return err
		}
	}
	s.sortAhead()
	if s.sorting == nil {
		return nil
	}
	return s.insert(ctx, tx)
}

// insert waits for the lot being sorted and inserts it, table by table in
// key order, with multi-row statements whose every column is bound per row
// (the rows are of many blocks).
func (s *sqliteSorted) insert(ctx context.Context, tx *store.Tx) error {
	<-s.done
	lot := s.sorting
	s.sorting = nil
	defer s.recycle(lot)
	for _, c := range lot.copies {
		w := len(c.spec.cols)
		n := len(c.vals) / w
		spec := c.spec.sorted
		for i, k := 0, 0; i < n; i += k {
			k = sortedChunk(n - i)
			s.buf = s.buf[:0]
			for _, j := range c.order[i : i+k] {
				s.buf = append(s.buf, c.vals[int(j)*w:(int(j)+1)*w]...)
			}
			_, err := tx.Exec(ctx, spec.values(k), s.buf...)
			clear(s.buf)
			if err != nil {
				return fmt.Errorf("evm: insert %s: %w", c.spec.table, err)
			}
		}
	}
	return nil
}

// recycle empties lot and keeps it for the next rows.
func (s *sqliteSorted) recycle(lot *pgKept) {
	lot.reset()
	s.spare = lot
}

// discard forgets the kept rows (written, or the batch is abandoned), once
// a sort running is done with them.
func (s *sqliteSorted) discard() {
	if s.sorting != nil {
		<-s.done
		s.recycle(s.sorting)
		s.sorting = nil
	}
	if s.kept != nil {
		s.recycle(s.kept)
		s.kept = nil
	}
}
