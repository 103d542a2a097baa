package evm

import (
	"bytes"
	"cmp"
	"context"
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
// written per block: their rows are kept until the batch's Flush and loaded
// by one binary COPY per table (flushCopies), still in the batch's
// transaction, before its checkpoint. Per block, a table's 4-40
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

	copies []*pgCopy // one per copyBatch spec, in first-use order
	arena  []byte    // the copies' byte values (the parsed block is reused)
}

// pgCopy holds one table's rows of the batch, full rows back to back, and
// the order to send them in.
type pgCopy struct {
	spec  *insertSpec
	vals  []any
	order []int32 // row numbers, sorted by the table's key (sortRows)
	next  int     // CopyFromSource position in order
}

func (c *pgCopy) Next() bool {
	if c.next >= len(c.order) {
		return false
	}
	c.next++
	return true
}

func (c *pgCopy) Values() ([]any, error) {
	w := len(c.spec.cols)
	i := int(c.order[c.next-1])
	return c.vals[i*w : (i+1)*w], nil
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
	slices.SortStableFunc(c.order, func(a, b int32) int {
		ra, rb := c.vals[int(a)*w:], c.vals[int(b)*w:]
		for _, k := range key {
			if d := compareValue(ra[k], rb[k]); d != 0 {
				return d
			}
		}
		return 0
	})
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

func (c *pgCopy) Err() error { return nil }

// keep appends r's rows to its table's batch buffer, bytes copied into the
// arena.
func (p *pgWriter) keep(r *rowSet) {
	var c *pgCopy
	for _, x := range p.copies {
		if x.spec == r.spec {
			c = x
			break
		}
	}
	if c == nil {
		c = &pgCopy{spec: r.spec}
		p.copies = append(p.copies, c)
	}
	start := len(c.vals)
	for i := range r.rows() {
		c.vals = r.fullRow(c.vals, i)
	}
	for i, v := range c.vals[start:] {
		if b, ok := v.([]byte); ok && b != nil {
			n := len(p.arena)
			p.arena = append(p.arena, b...)
			c.vals[start+i] = p.arena[n:len(p.arena):len(p.arena)]
		}
	}
}

// flushCopies loads the batch's kept rows, one COPY per table.
func (p *pgWriter) flushCopies(ctx context.Context, tx *store.Tx) error {
	defer p.discard()
	for _, c := range p.copies {
		if len(c.vals) == 0 {
			continue
		}
		c.sortRows()
		c.next = 0
		cols := make([]string, len(c.spec.cols))
		for i, col := range c.spec.cols {
			cols[i] = col.name
		}
		err := tx.Pgx(ctx, func(ctx context.Context, conn *pgx.Conn) error {
			_, err := conn.CopyFrom(ctx, pgx.Identifier{c.spec.table}, cols, c)
			return err
		})
		if err != nil {
			return fmt.Errorf("evm: copy into %s: %w", c.spec.table, err)
		}
	}
	return nil
}

// discard forgets the kept rows (flushed, or the batch is abandoned).
func (p *pgWriter) discard() {
	for _, c := range p.copies {
		clear(c.vals)
		c.vals = c.vals[:0]
		c.order = c.order[:0]
	}
	// A fresh arena: the copied rows' slices point into the old one.
	p.arena = nil
}

// write queues every non-empty row set and runs the batch in tx.
func (p *pgWriter) write(ctx context.Context, tx *store.Tx, sets []*rowSet) error {
	p.batch.QueuedQueries = p.batch.QueuedQueries[:0]
	p.nt, p.ni, p.nb = 0, 0, 0
	var tables []string
	for _, r := range sets {
		n := r.rows()
		if n == 0 {
			continue
		}
		if err := r.check(); err != nil {
			return err
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
			return err
		}
		p.batch.Queue(r.spec.unnest, args...)
	}
	if len(tables) == 0 {
		return nil
	}
	run := func(ctx context.Context, conn *pgx.Conn) error {
		br := conn.SendBatch(ctx, &p.batch)
		for _, t := range tables {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return fmt.Errorf("insert %s: %w", t, err)
			}
		}
		return br.Close()
	}
	// The batch needs the pgx connection under the database/sql transaction.
	if err := tx.Pgx(ctx, run); err != nil {
		return fmt.Errorf("evm: write block: %w", err)
	}
	return nil
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
