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
