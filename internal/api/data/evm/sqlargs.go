package evm

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// named rewrites @name markers in q to $1, $2, ... numbered in order of
// first appearance (SQLite numbers $N parameters that way, PostgreSQL by N:
// numbering by appearance makes both agree) and returns the matching
// arguments. A name used twice is one parameter. Every marker must have a
// value: a missing one is a programming error, returned as an error.
func named(q string, vals map[string]any) (string, []any, error) {
	var b strings.Builder
	b.Grow(len(q))
	idx := map[string]int{}
	var args []any
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c != '@' {
			b.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(q) && (q[j] == '_' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= 'A' && q[j] <= 'Z' || q[j] >= '0' && q[j] <= '9') {
			j++
		}
		name := q[i+1 : j]
		if name == "" {
			return "", nil, fmt.Errorf("query: '@' without a name at byte %d", i)
		}
		n, ok := idx[name]
		if !ok {
			v, has := vals[name]
			if !has {
				return "", nil, fmt.Errorf("query: no value for @%s", name)
			}
			args = append(args, v)
			n = len(args)
			idx[name] = n
		}
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
		i = j - 1
	}
	return b.String(), args, nil
}

// inHexList adds addresses or hashes vs to vals as @prefix0, @prefix1, ...
// (bound as stored: store.Hex) and returns the list of their markers for an
// IN (...) clause.
func inHexList(vals map[string]any, prefix string, vs []string) string {
	marks := make([]string, len(vs))
	for i, v := range vs {
		name := prefix + strconv.Itoa(i)
		vals[name] = store.Hex(v)
		marks[i] = "@" + name
	}
	return strings.Join(marks, ", ")
}

// query runs q (with @name markers) on the read pool.
func (h *handlers) query(ctx context.Context, q string, vals map[string]any) (*sql.Rows, error) {
	text, args, err := named(q, vals)
	if err != nil {
		return nil, err
	}
	if h.trace != nil {
		h.trace(text, args)
	}
	return h.d.DB.QueryContext(ctx, text, args...)
}
