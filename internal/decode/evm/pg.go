package evm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// pgWriter writes a block's rows on PostgreSQL in one round trip: one
// INSERT ... SELECT FROM unnest(typed arrays) per table (a fixed statement per
// table, prepared once per connection, whatever the row count), all sent as
// one pipelined pgx batch inside the store transaction. Its buffers live
// across blocks.
//
// The tables of insert specs marked copyBatch (nothing reads them in the
// batch's transaction before its Flush: blocks, txs, transfers, internal
// txs, address links, balance histories, logs, NFT owner history) are not
// written per block: their rows are kept and loaded by binary COPY, still in
// the batch's transaction, before its checkpoint: the block-keyed tables'
// in lots queued mid-batch (store.Tx.Queue: the server loads one lot while
// the writer builds the next), the address-keyed tables' at the batch's
// Flush (flushCopies), one COPY per table sorted by key. Per block, a table's 4-40
// rows cost a statement's planning and executor start-up on the server; a
// batch's thousands of rows in one COPY go through its multi-insert path
// (docs/benchmarks.md, "PostgreSQL write path").
type pgWriter struct {
	batch pgx.Batch
	texts [][]string
	ints  [][]int64
	blobs [][][]byte
	nt    int
	ni    int
	nb    int

	// kept holds the rows of the tables whose keys start with the block
	// (no copyKey) since the last send: they go to the server in lots of
	// streamRows, mid-batch, while the writer builds the next lot. sorted
	// holds the address-keyed tables' rows (copyKey) for the batch's Flush:
	// sorted over the whole batch, their index entries find more neighbours
	// (streamed in lots, the server's CPU per block grew by a quarter on the
	// 100,000-block base; docs/benchmarks.md, "PostgreSQL write path",
	// ninth session).
	kept, sorted *pgKept
	free         chan *pgKept // sent and copied, for reuse (filled by the queue's goroutine)
	streamRows   int          // 0: streamRows
	// late writes the rows queued for the commit (writeAtCommit): its
	// buffers stay the queue's until the batch committed.
	late *pgWriter
}

// pgKept is one lot of kept rows: one pgCopy per copyBatch spec, in
// first-use order, and their byte values, copied into one arena (the parsed
// block is reused).
type pgKept struct {
	copies []*pgCopy
	arena  []byte
	rows   int
	enc    binaryCopy // its buffer is reused with the lot
}

// streamRows is the default pgWriter.streamRows: about 100 blocks of 20 txs.
const streamRows = 8192

// pgCopy holds one table's rows of the batch, full rows back to back, and
// the order to send them in.
type pgCopy struct {
	spec   *insertSpec
	vals   []any
	order  []int32  // row numbers, sorted by the table's key (sortRows)
	prefix []uint64 // per row, prefix8 of its first key column (sortRows)
	next   int      // rows sent so far, in order (binaryCopy)
}

// Next moves to the next row in order (c.order[c.next-1]), false at the end.
func (c *pgCopy) Next() bool {
	if c.next >= len(c.order) {
		return false
	}
	c.next++
	return true
}

// sortRows orders the rows by the table's key columns (copyKey), stable:
// rows were kept in block order, the key's last column. Index entries then
// go in key order: each B-tree leaf is found once per run of neighbours
// instead of once per row at a random place (the history tables' and the
// address links' keys start with an address).
func (c *pgCopy) sortRows() {
	w := len(c.spec.cols)
	n := len(c.vals) / w
	c.order = c.order[:0]
	for i := range n {
		c.order = append(c.order, int32(i))
	}
	key := c.spec.copyKey
	if len(key) == 0 {
		return
	}
	// The first key column's leading 8 bytes as an integer, compared first:
	// most comparisons end there (the keys start with an address), without
	// compareValue's type switches (a third of the sort's CPU).
	c.prefix = c.prefix[:0]
	for i := range n {
		c.prefix = append(c.prefix, prefix8(c.vals[i*w+key[0]]))
	}
	// Stable by the row number as the last key: pdqsort (SortFunc) takes
	// about a sixth less CPU than SortStableFunc's insertion sorts and merges.
	slices.SortFunc(c.order, func(a, b int32) int {
		if d := cmp.Compare(c.prefix[a], c.prefix[b]); d != 0 {
			return d
		}
		ra, rb := c.vals[int(a)*w:], c.vals[int(b)*w:]
		for _, k := range key {
			if d := compareValue(ra[k], rb[k]); d != 0 {
				return d
			}
		}
		return cmp.Compare(a, b)
	})
}

// prefix8 maps a value to an integer in compareValue's order, equal when
// the order needs the whole values: bytes and text by their first 8 bytes
// (zero-padded), integers with the sign bit flipped, NULL 0.
func prefix8(v any) uint64 {
	var a [8]byte
	switch x := v.(type) {
	case []byte:
		copy(a[:], x)
	case string:
		copy(a[:], x)
	case int64:
		return uint64(x) ^ 1<<63
	}
	return binary.BigEndian.Uint64(a[:])
}

// compareValue orders two values of one column (bytes, text or integers;
// NULL first).
func compareValue(a, b any) int {
	switch x := a.(type) {
	case []byte:
		y, _ := b.([]byte)
		return bytes.Compare(x, y)
	case string:
		y, _ := b.(string)
		return strings.Compare(x, y)
	case int64:
		y, _ := b.(int64)
		return cmp.Compare(x, y)
	case nil:
		if b == nil {
			return 0
		}
		return -1
	}
	return 0
}

// keep appends r's rows to its table's lot, bytes copied into the arena.
func (p *pgWriter) keep(r *rowSet) {
	lot := &p.kept
	if len(r.spec.copyKey) > 0 {
		lot = &p.sorted
	}
	if *lot == nil {
		*lot = p.lot()
	}
	(*lot).add(r)
}

// add appends r's rows to its table's rows in the lot, bytes copied into
// the arena.
func (k *pgKept) add(r *rowSet) {
	var c *pgCopy
	for _, x := range k.copies {
		if x.spec == r.spec {
			c = x
			break
		}
	}
	if c == nil {
		c = &pgCopy{spec: r.spec}
		k.copies = append(k.copies, c)
	}
	start := len(c.vals)
	for i := range r.rows() {
		c.vals = r.fullRow(c.vals, i)
	}
	k.rows += r.rows()
	for i, v := range c.vals[start:] {
		if b, ok := v.([]byte); ok && b != nil {
			n := len(k.arena)
			k.arena = append(k.arena, b...)
			c.vals[start+i] = k.arena[n:len(k.arena):len(k.arena)]
		}
	}
}

// lot is an empty lot: one the queue has copied, or a new one.
func (p *pgWriter) lot() *pgKept {
	select {
	case k := <-p.free:
		return k
	default:
		return new(pgKept)
	}
}

// send queues the kept rows' COPYs on tx (store.Tx.Queue: the server loads
// them while the writer goes on) and starts a new lot. The queued lot is
// the queue's until copied; its COPYs run in the batch's transaction, in
// the order sent, before anything the writer sends on tx later.
func (p *pgWriter) send(ctx context.Context, tx *store.Tx, lot **pgKept) error {
	return p.sendWith(ctx, tx.Queue, lot)
}

// sendWith is send through queue (store.Tx.Queue or QueueAtCommit).
func (p *pgWriter) sendWith(ctx context.Context, queue func(context.Context, func(context.Context, *pgx.Conn) error) error, lot **pgKept) error {
	k := *lot
	if k == nil || k.rows == 0 {
		return nil
	}
	*lot = nil
	if p.free == nil {
		p.free = make(chan *pgKept, 4)
	}
	free := p.free
	err := queue(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		defer func() {
			k.reset()
			select {
			case free <- k:
			default:
			}
		}()
		return k.copy(ctx, conn)
	})
	if err != nil {
		return fmt.Errorf("evm: %w", err)
	}
	return nil
}

// copy loads the lot, one COPY per table, each sorted by the table's key.
func (k *pgKept) copy(ctx context.Context, conn *pgx.Conn) error {
	for _, c := range k.copies {
		if len(c.vals) == 0 {
			continue
		}
		c.sortRows()
		c.next = 0
		if err := k.enc.copy(ctx, conn, c); err != nil {
			return fmt.Errorf("evm: copy into %s: %w", c.spec.table, err)
		}
	}
	return nil
}

// reset empties the lot for reuse: nothing points into its arena after.
func (k *pgKept) reset() {
	for _, c := range k.copies {
		clear(c.vals)
		c.vals = c.vals[:0]
		c.order = c.order[:0]
		c.prefix = c.prefix[:0]
	}
	k.arena = k.arena[:0]
	k.rows = 0
}

// flushCopies sends the batch's last kept rows: the block-keyed ones
// queued now (the batch's Flush reads them back: the rollups, the webhook
// events), the address-keyed ones when the batch commits
// (store.Tx.QueueAtCommit): nothing in the batch's transaction reads those
// tables, so with the pipeline's overlap (ingest, CommitAsync) the server
// loads them while the writer applies the next batch. The commit waits for
// both and fails if a COPY did.
func (p *pgWriter) flushCopies(ctx context.Context, tx *store.Tx) error {
	if err := p.send(ctx, tx, &p.kept); err != nil {
		return err
	}
	return p.sendWith(ctx, tx.QueueAtCommit, &p.sorted)
}

// discard forgets the rows kept and not sent (the batch is abandoned; the
// lots already sent die with its transaction).
func (p *pgWriter) discard() {
	for _, k := range []*pgKept{p.kept, p.sorted} {
		if k != nil {
			k.reset()
		}
	}
}

// write queues every non-empty row set and runs the batch in tx.
func (p *pgWriter) write(ctx context.Context, tx *store.Tx, sets []*rowSet) error {
	tables, err := p.build(sets)
	if err != nil {
		return err
	}
	if len(tables) > 0 {
		// The batch needs the pgx connection under the database/sql transaction.
		if err := tx.Pgx(ctx, p.run(tables)); err != nil {
			return fmt.Errorf("evm: write block: %w", err)
		}
	}
	return p.sendFull(ctx, tx)
}

// writeAtCommit writes sets like write, but queued when tx commits
// (store.Tx.QueueAtCommit), with buffers of its own (late): for rows that
// nothing in the batch's transaction reads back after the writer's Flush
// (the current native balances, the NFT ids), so that with the pipeline's
// overlap the server writes them while the next batch is applied. The next
// batch reads them only after this one committed (its Flush) or from memory
// (flushedN).
func (p *pgWriter) writeAtCommit(ctx context.Context, tx *store.Tx, sets []*rowSet) error {
	if p.late == nil {
		p.late = new(pgWriter)
	}
	tables, err := p.late.build(sets)
	if err != nil || len(tables) == 0 {
		return err
	}
	if err := tx.QueueAtCommit(ctx, p.late.run(tables)); err != nil {
		return fmt.Errorf("evm: %w", err)
	}
	return nil
}

// build starts a new pipelined batch of the non-empty row sets' inserts
// (the copyBatch ones are kept for COPY instead) and returns their tables.
func (p *pgWriter) build(sets []*rowSet) ([]string, error) {
	p.batch.QueuedQueries = p.batch.QueuedQueries[:0]
	p.nt, p.ni, p.nb = 0, 0, 0
	var tables []string
	for _, r := range sets {
		n := r.rows()
		if n == 0 {
			continue
		}
		if err := r.check(); err != nil {
			return nil, err
		}
		if r.spec.copyBatch {
			p.keep(r)
			continue
		}
		tables = append(tables, r.spec.table)
		if n == 1 {
			args := r.fullRow(make([]any, 0, len(r.spec.cols)), 0)
			p.batch.Queue(r.spec.pgOne, args...)
			continue
		}
		args, err := p.arrays(r)
		if err != nil {
			return nil, err
		}
		p.batch.Queue(r.spec.unnest, args...)
	}
	return tables, nil
}

// run sends the built batch on a connection and checks each table's insert.
func (p *pgWriter) run(tables []string) func(ctx context.Context, conn *pgx.Conn) error {
	return func(ctx context.Context, conn *pgx.Conn) error {
		br := conn.SendBatch(ctx, &p.batch)
		for _, t := range tables {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return fmt.Errorf("insert %s: %w", t, err)
			}
		}
		return br.Close()
	}
}

// sendFull sends the kept rows once they are streamRows or more.
func (p *pgWriter) sendFull(ctx context.Context, tx *store.Tx) error {
	limit := p.streamRows
	if limit == 0 {
		limit = streamRows
	}
	if p.kept == nil || p.kept.rows < limit {
		return nil
	}
	return p.send(ctx, tx, &p.kept)
}

// arrays turns a row set into its unnest arguments: the block values, then
// one typed slice per other column.
func (p *pgWriter) arrays(r *rowSet) ([]any, error) {
	n, w := r.rows(), r.spec.perRow
	args := append(make([]any, 0, len(r.spec.cols)), r.blockArgs...)
	j := 0 // index among the per-row columns
	for _, col := range r.spec.cols {
		if col.block {
			continue
		}
		switch col.kind {
		case colText:
			dst := p.text(n)
			for i := range n {
				v, ok := r.args[i*w+j].(string)
				if !ok {
					return nil, fmt.Errorf("evm: %s.%s: %T is not a string", r.spec.table, col.name, r.args[i*w+j])
				}
				dst[i] = v
			}
			args = append(args, dst)
		case colInt:
			dst := p.int(n)
			for i := range n {
				v, ok := r.args[i*w+j].(int64)
				if !ok {
					return nil, fmt.Errorf("evm: %s.%s: %T is not an int64", r.spec.table, col.name, r.args[i*w+j])
				}
				dst[i] = v
			}
			args = append(args, dst)
		case colBlob:
			dst := p.blob(n)
			for i := range n {
				switch v := r.args[i*w+j].(type) {
				case []byte:
					dst[i] = v
				case nil:
					dst[i] = nil
				default:
					return nil, fmt.Errorf("evm: %s.%s: %T is not bytes", r.spec.table, col.name, v)
				}
			}
			args = append(args, dst)
		}
		j++
	}
	return args, nil
}

// text, int and blob hand out reusable column slices of length n.
func (p *pgWriter) text(n int) []string {
	if p.nt == len(p.texts) {
		p.texts = append(p.texts, nil)
	}
	s := p.texts[p.nt]
	if cap(s) < n {
		s = make([]string, n)
	}
	s = s[:n]
	p.texts[p.nt] = s
	p.nt++
	return s
}

func (p *pgWriter) int(n int) []int64 {
	if p.ni == len(p.ints) {
		p.ints = append(p.ints, nil)
	}
	s := p.ints[p.ni]
	if cap(s) < n {
		s = make([]int64, n)
	}
	s = s[:n]
	p.ints[p.ni] = s
	p.ni++
	return s
}

func (p *pgWriter) blob(n int) [][]byte {
	if p.nb == len(p.blobs) {
		p.blobs = append(p.blobs, nil)
	}
	s := p.blobs[p.nb]
	if cap(s) < n {
		s = make([][]byte, n)
	}
	s = s[:n]
	p.blobs[p.nb] = s
	p.nb++
	return s
}
