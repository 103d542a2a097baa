package apibench

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// copyDatabase copies every table of a migrated SQLite database into a
// PostgreSQL database (migrated here), with COPY. Secondary indexes are
// dropped during the copy and rebuilt after it, as a bulk load would.
func copyDatabase(ctx context.Context, src, dst *store.DB, log *slog.Logger) error {
	if err := dst.Migrate(ctx); err != nil {
		return err
	}
	type index struct{ name, def string }
	var idx []index
	rows, err := dst.QueryContext(ctx, `SELECT i.indexname, i.indexdef FROM pg_indexes i
		WHERE i.schemaname = 'public' AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var x index
		if err := rows.Scan(&x.name, &x.def); err != nil {
			rows.Close()
			return err
		}
		idx = append(idx, x)
	}
	rows.Close()
	for _, x := range idx {
		if _, err := dst.ExecContext(ctx, `DROP INDEX `+pgx.Identifier{x.name}.Sanitize()); err != nil {
			return fmt.Errorf("drop index %s: %w", x.name, err)
		}
	}
	tables, err := sqliteTables(ctx, src)
	if err != nil {
		return err
	}
	for _, t := range tables {
		start := time.Now()
		// Rows the migrations seed (e.g. api_keys_version's counter) come
		// with the copy: the source's replace them.
		if _, err := dst.ExecContext(ctx, `DELETE FROM `+pgx.Identifier{t}.Sanitize()); err != nil {
			return fmt.Errorf("table %s: %w", t, err)
		}
		n, err := copyTable(ctx, src, dst, t)
		if err != nil {
			return fmt.Errorf("table %s: %w", t, err)
		}
		if n > 0 {
			log.Info("copied table", "table", t, "rows", n, "elapsed", time.Since(start).Round(time.Millisecond))
		}
	}
	for _, x := range idx {
		if _, err := dst.ExecContext(ctx, x.def); err != nil {
			return fmt.Errorf("create index %s: %w", x.name, err)
		}
	}
	_, err = dst.ExecContext(ctx, `VACUUM ANALYZE`)
	return err
}

func sqliteTables(ctx context.Context, db *store.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table'
		AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

type pgColumn struct {
	name     string
	typ      string
	nullable bool
}

func copyTable(ctx context.Context, src, dst *store.DB, table string) (int64, error) {
	rows, err := dst.QueryContext(ctx, `SELECT column_name, data_type, is_nullable = 'YES' FROM information_schema.columns
		WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`, table)
	if err != nil {
		return 0, err
	}
	var cols []pgColumn
	for rows.Next() {
		var c pgColumn
		if err := rows.Scan(&c.name, &c.typ, &c.nullable); err != nil {
			rows.Close()
			return 0, err
		}
		cols = append(cols, c)
	}
	rows.Close()
	if len(cols) == 0 {
		return 0, fmt.Errorf("no such table in postgres")
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	srows, err := src.QueryContext(ctx, `SELECT `+strings.Join(names, ", ")+` FROM `+table)
	if err != nil {
		return 0, err
	}
	defer srows.Close()
	conn, err := dst.WriterDB().Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var n int64
	err = conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		n, err = pc.CopyFrom(ctx, pgx.Identifier{table}, names, &rowSource{rows: srows, cols: cols})
		return err
	})
	return n, err
}

// rowSource feeds SQLite rows to COPY, in the PostgreSQL column types.
type rowSource struct {
	rows *sql.Rows
	cols []pgColumn
	vals []any
}

func (s *rowSource) Next() bool { return s.rows.Next() }

func (s *rowSource) Values() ([]any, error) {
	if s.vals == nil {
		s.vals = make([]any, len(s.cols))
	}
	ptrs := make([]any, len(s.cols))
	for i := range s.vals {
		ptrs[i] = &s.vals[i]
	}
	if err := s.rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	for i, c := range s.cols {
		v := s.vals[i]
		switch c.typ {
		case "bytea":
			if v == nil && !c.nullable {
				s.vals[i] = []byte{}
			}
		case "boolean":
			if n, ok := v.(int64); ok {
				s.vals[i] = n != 0
			}
		case "text":
			if b, ok := v.([]byte); ok {
				s.vals[i] = string(b)
			}
		}
	}
	return s.vals, nil
}

func (s *rowSource) Err() error { return s.rows.Err() }
