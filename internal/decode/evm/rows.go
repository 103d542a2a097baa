package evm

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// maxParams bounds the parameters of one statement below SQLite's limit
// (32766) and PostgreSQL's (65535).
const maxParams = 30000

// maxRows bounds the rows of one multi-row statement: past a few hundred rows
// the statement text and its cached preparation cost more than they save.
const maxRows = 400

// colKind is a column's SQL type, for PostgreSQL's typed arrays.
type colKind uint8

const (
	colText colKind = iota
	colInt
	colBlob // nil is NULL
)

// column is one column of an insert. A block column has the same value in
// every row of a block (chain, block number, ...): it is bound once per
// statement rather than once per row, which saves most of the binding work
// on the narrow tables.
type column struct {
	name  string
	kind  colKind
	block bool
}

func cText(name string) column { return column{name: name, kind: colText} }
func cInt(name string) column  { return column{name: name, kind: colInt} }
func cBlob(name string) column { return column{name: name, kind: colBlob} }
func bBlob(name string) column { return column{name: name, kind: colBlob, block: true} }
func bText(name string) column { return column{name: name, kind: colText, block: true} }
func bInt(name string) column  { return column{name: name, kind: colInt, block: true} }
func (c column) sqlType() string {
	return [...]string{colText: "text", colInt: "bigint", colBlob: "bytea"}[c.kind]
}

// rowSet collects the rows of one table for one block: the block columns'
// values once (blockArgs), and the other columns' values row after row (args),
// both in column order.
type rowSet struct {
	spec      *insertSpec
	blockArgs []any
	args      []any
	buf       []any // statement arguments (SQLite)
}

func (r *rowSet) reset() {
	clear(r.blockArgs)
	r.blockArgs = r.blockArgs[:0]
	clear(r.args)
	r.args = r.args[:0]
}

func (r *rowSet) rows() int { return len(r.args) / r.spec.perRow }

func (r *rowSet) check() error {
	if len(r.blockArgs) != len(r.spec.cols)-r.spec.perRow || len(r.args)%r.spec.perRow != 0 {
		return fmt.Errorf("evm: %s: %d block values and %d row values for %d columns", r.spec.table,
			len(r.blockArgs), len(r.args), len(r.spec.cols))
	}
	return nil
}

// flush writes the rows with multi-row INSERT ... VALUES statements (SQLite;
// PostgreSQL uses pgWriter).
func (r *rowSet) flush(ctx context.Context, tx *store.Tx) error {
	n := r.rows()
	if n == 0 {
		return nil
	}
	if err := r.check(); err != nil {
		return err
	}
	per := r.spec.chunk()
	w := r.spec.perRow
	for i := 0; i < n; i += per {
		k := min(per, n-i)
		r.buf = append(r.fullRow(r.buf[:0], i), r.args[(i+1)*w:(i+k)*w]...)
		_, err := tx.Exec(ctx, r.spec.values(k), r.buf...)
		clear(r.buf)
		if err != nil {
			return fmt.Errorf("evm: insert %s: %w", r.spec.table, err)
		}
	}
	return nil
}

// fullRow appends the values of row i, block columns included, in column order.
func (r *rowSet) fullRow(dst []any, i int) []any {
	b, j := 0, i*r.spec.perRow
	for _, c := range r.spec.cols {
		if c.block {
			dst = append(dst, r.blockArgs[b])
			b++
		} else {
			dst = append(dst, r.args[j])
			j++
		}
	}
	return dst
}

// insertSpec describes one INSERT and caches its statements.
type insertSpec struct {
	table  string
	cols   []column
	suffix string // e.g. ON CONFLICT ... DO UPDATE ...
	perRow int    // columns that are not block columns
	// copyBatch: on PostgreSQL the rows wait for the batch's Flush and go
	// by one COPY per batch (pgWriter). Only for tables nothing reads inside
	// the batch's transaction before its Flush (wrappers read them back after
	// the inner Flush) and without a conflict clause.
	copyBatch bool
	copyKey   []int // column positions to sort the batch's rows by (batchCopied)
	// sorted: the same insert with every column bound per row, for rows of
	// many blocks in key order on SQLite (sqliteSorted); nil if no copyKey.
	// sortedIndex is the SQLite index in that order (migration 0200).
	sorted      *insertSpec
	sortedIndex string

	mu      sync.Mutex
	queries map[int]string // SQLite: VALUES statement per row count
	unnest  string         // PostgreSQL, any row count
	pgOne   string         // PostgreSQL, one row
}

func newInsert(table string, cols []column, suffix string) *insertSpec {
	s := &insertSpec{table: table, cols: cols, suffix: suffix, queries: make(map[int]string)}
	for _, c := range cols {
		if !c.block {
			s.perRow++
		}
	}
	s.unnest = s.buildUnnest()
	s.pgOne = s.buildValues(1, false)
	return s
}

// batchCopied marks s's rows to be loaded once per batch on PostgreSQL
// (copyBatch), sorted by the named columns: the primary key's columns before
// block_number (the rows come in block order, and stay so within a key).
func batchCopied(s *insertSpec, key ...string) *insertSpec {
	s.copyBatch = true
	for _, name := range key {
		i := slices.IndexFunc(s.cols, func(c column) bool { return c.name == name })
		if i < 0 {
			panic("evm: " + s.table + " has no column " + name) // a typo in the declarations below
		}
		s.copyKey = append(s.copyKey, i)
	}
	if len(key) > 0 {
		cols := slices.Clone(s.cols)
		for i := range cols {
			cols[i].block = false
		}
		s.sorted = newInsert(s.table, cols, s.suffix)
	}
	return s
}

// sortedFor names the SQLite index whose order s's rows are sorted for
// (sqliteSorted): s's table is clustered by block, the index is by key.
func sortedFor(index string, s *insertSpec) *insertSpec {
	s.sortedIndex = index
	return s
}

func (s *insertSpec) chunk() int { return min(maxRows, (maxParams-len(s.cols))/s.perRow) }

func (s *insertSpec) head(b *strings.Builder, sqlite bool) {
	if sqlite {
		// FAIL rather than the default ABORT: no statement journal (a
		// copy of every page the statement changes, to undo just this
		// statement on a constraint error). Any error fails the whole
		// block and the driver rolls the transaction back.
		b.WriteString("INSERT OR FAIL INTO ")
	} else {
		b.WriteString("INSERT INTO ")
	}
	b.WriteString(s.table)
	b.WriteString(" (")
	for i, c := range s.cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.name)
	}
	b.WriteString(") ")
}

func (s *insertSpec) tail(b *strings.Builder) string {
	if s.suffix != "" {
		b.WriteByte(' ')
		b.WriteString(s.suffix)
	}
	return b.String()
}

// values is SQLite's INSERT ... VALUES (...),... for rows rows. Parameters are
// numbered in order of first appearance (SQLite binds $N by that order, not
// by N): the first row has them all, the next rows repeat the block columns'
// numbers and number their own values on. fullRow and the other rows' values
// are the arguments.
func (s *insertSpec) values(rows int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.queries[rows]; ok {
		return q
	}
	q := s.buildValues(rows, true)
	s.queries[rows] = q
	return q
}

// buildValues is the VALUES statement for rows rows (see values).
func (s *insertSpec) buildValues(rows int, sqlite bool) string {
	var b strings.Builder
	s.head(&b, sqlite)
	b.WriteString("VALUES ")
	p := 1
	for r := 0; r < rows; r++ {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for c, col := range s.cols {
			if c > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('$')
			if col.block && r > 0 {
				b.WriteString(strconv.Itoa(c + 1)) // its number in the first row
				continue
			}
			b.WriteString(strconv.Itoa(p))
			p++
		}
		b.WriteByte(')')
	}
	return s.tail(&b)
}

// buildUnnest is the PostgreSQL form for any number of rows: block columns as
// scalars, the others as one typed array each, so one fixed statement (one
// plan) serves every block:
//
//	INSERT INTO t (a, b, c) SELECT $1::text, u.b, u.c FROM unnest($2::bigint[], $3::text[]) AS u(b, c)
func (s *insertSpec) buildUnnest() string {
	var b strings.Builder
	s.head(&b, false)
	b.WriteString("SELECT ")
	var arrays, names []string
	bi, ai := 1, len(s.cols)-s.perRow+1
	for c, col := range s.cols {
		if c > 0 {
			b.WriteString(", ")
		}
		if col.block {
			fmt.Fprintf(&b, "$%d::%s", bi, col.sqlType())
			bi++
			continue
		}
		fmt.Fprintf(&b, "u.%s", col.name)
		arrays = append(arrays, fmt.Sprintf("$%d::%s[]", ai, col.sqlType()))
		names = append(names, col.name)
		ai++
	}
	fmt.Fprintf(&b, " FROM unnest(%s) AS u(%s)", strings.Join(arrays, ", "), strings.Join(names, ", "))
	return s.tail(&b)
}
