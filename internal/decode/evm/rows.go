package evm

import (
	"context"
	"fmt"
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

// rowSet collects the rows of one table for one block and writes them with
// multi-row INSERT ... VALUES (...),(...) statements.
type rowSet struct {
	spec *insertSpec
	args []any
}

func (r *rowSet) reset()    { clear(r.args); r.args = r.args[:0] }
func (r *rowSet) rows() int { return len(r.args) / len(r.spec.cols) }

func (r *rowSet) flush(ctx context.Context, tx *store.Tx) error {
	n := r.rows()
	if n == 0 {
		return nil
	}
	if len(r.args)%len(r.spec.cols) != 0 {
		return fmt.Errorf("evm: %s: %d values for %d columns", r.spec.table, len(r.args), len(r.spec.cols))
	}
	per := r.spec.chunk()
	cols := len(r.spec.cols)
	for i := 0; i < n; i += per {
		k := min(per, n-i)
		if _, err := tx.Exec(ctx, r.spec.query(k), r.args[i*cols:(i+k)*cols]...); err != nil {
			return fmt.Errorf("evm: insert %s: %w", r.spec.table, err)
		}
	}
	return nil
}

// insertSpec describes one INSERT and caches its text per row count.
type insertSpec struct {
	table  string
	cols   []string
	suffix string // e.g. ON CONFLICT ... DO UPDATE ...

	mu      sync.Mutex
	queries map[int]string
}

func newInsert(table string, cols []string, suffix string) *insertSpec {
	return &insertSpec{table: table, cols: cols, suffix: suffix, queries: make(map[int]string)}
}

func (s *insertSpec) chunk() int { return min(maxRows, maxParams/len(s.cols)) }

func (s *insertSpec) query(rows int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.queries[rows]; ok {
		return q
	}
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(s.table)
	b.WriteString(" (")
	b.WriteString(strings.Join(s.cols, ", "))
	b.WriteString(") VALUES ")
	p := 1
	for r := 0; r < rows; r++ {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for c := range s.cols {
			if c > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(p))
			p++
		}
		b.WriteByte(')')
	}
	if s.suffix != "" {
		b.WriteByte(' ')
		b.WriteString(s.suffix)
	}
	q := b.String()
	s.queries[rows] = q
	return q
}

// inQuery caches, per list length, a read of the current balances of the keys
// a block touches in one statement: "prefix $2,$3,... suffix" for one key
// column, or "prefix (c1 = $2 AND c2 = $3) OR (...) suffix" for composite
// keys. SQLite plans row-value IN (VALUES ...) and "k = $1 AND (OR ...)" as a
// scan of the chain; an OR of full-key equalities is one index seek per key
// on both backends.
type inQuery struct {
	prefix string // ends just before the list, e.g. "... IN (" or "... AND ("
	suffix string
	first  int      // number of the first list parameter
	cols   []string // composite key columns; nil for a single-column IN list
	each   string   // prepended to every composite item, e.g. "chain_key = $1 AND "
	width  int      // parameters per item

	mu      sync.Mutex
	queries map[int]string
}

func (q *inQuery) chunk() int {
	if q.cols != nil {
		return min(200, maxParams/q.width) // an OR chain is an expression tree as deep as it is long
	}
	return min(maxRows, maxParams/q.width)
}

func (q *inQuery) query(items int) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.queries == nil {
		q.queries = make(map[int]string)
	}
	if s, ok := q.queries[items]; ok {
		return s
	}
	var b strings.Builder
	b.WriteString(q.prefix)
	p := q.first
	for i := 0; i < items; i++ {
		if q.cols == nil {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(p))
			p++
			continue
		}
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('(')
		b.WriteString(q.each)
		for c, col := range q.cols {
			if c > 0 {
				b.WriteString(" AND ")
			}
			b.WriteString(col)
			b.WriteString(" = $")
			b.WriteString(strconv.Itoa(p))
			p++
		}
		b.WriteByte(')')
	}
	b.WriteString(q.suffix)
	s := b.String()
	q.queries[items] = s
	return s
}
