package evm

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// binaryCopy streams a pgCopy's rows to the server in PostgreSQL's binary
// COPY format (https://www.postgresql.org/docs/15/sql-copy.html, "Binary
// Format"), encoding the kept rows' Go types (string, int64, []byte; nil is
// NULL) for the column types they go to directly. pgx's CopyFrom encodes
// every value through its type map (a plan lookup and interface calls per
// value): 11% of the indexer's CPU on the sustained PostgreSQL benchmark
// (docs/benchmarks.md, "Eleventh session (s11-pgcpu)"). Any other value or
// column type still goes through pgx's type map.
type binaryCopy struct {
	c    *pgCopy
	oids []uint32
	m    *pgtype.Map
	buf  []byte
	off  int
	head bool // the header is written
	end  bool // the trailer is written
}

// copyBufSize is about what pgconn sends per CopyData message.
const copyBufSize = 64 << 10

// copy runs COPY ... FROM STDIN BINARY of c's rows, in c's order, on conn.
func (b *binaryCopy) copy(ctx context.Context, conn *pgx.Conn, c *pgCopy) error {
	cols := make([]string, len(c.spec.cols))
	for i, col := range c.spec.cols {
		cols[i] = pgx.Identifier{col.name}.Sanitize()
	}
	list := strings.Join(cols, ", ")
	table := pgx.Identifier{c.spec.table}.Sanitize()
	// The column types, found as pgx's CopyFrom finds them: a statement
	// description, kept by the connection under the statement's text.
	sel := "select " + list + " from " + table
	sd, err := conn.Prepare(ctx, sel, sel)
	if err != nil {
		return fmt.Errorf("column types: %w", err)
	}
	b.oids = b.oids[:0]
	for _, f := range sd.Fields {
		b.oids = append(b.oids, f.DataTypeOID)
	}
	if len(b.oids) != len(c.spec.cols) {
		return fmt.Errorf("%d column types for %d columns", len(b.oids), len(c.spec.cols))
	}
	b.c, b.m = c, conn.TypeMap()
	b.buf, b.off, b.head, b.end = b.buf[:0], 0, false, false
	_, err = conn.PgConn().CopyFrom(ctx, b, "copy "+table+" ( "+list+" ) from stdin binary")
	b.c, b.m = nil, nil
	return err
}

// Read hands out the encoded stream, encoding rows as it goes.
func (b *binaryCopy) Read(p []byte) (int, error) {
	for b.off == len(b.buf) {
		if b.end {
			return 0, io.EOF
		}
		if err := b.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, b.buf[b.off:])
	b.off += n
	return n, nil
}

// fill encodes the next rows into buf, about copyBufSize bytes, and the
// trailer after the last row.
func (b *binaryCopy) fill() error {
	b.buf, b.off = b.buf[:0], 0
	if !b.head {
		b.buf = append(b.buf, "PGCOPY\n\377\r\n\000"...)
		b.buf = binary.BigEndian.AppendUint32(b.buf, 0) // flags
		b.buf = binary.BigEndian.AppendUint32(b.buf, 0) // header extension length
		b.head = true
	}
	c := b.c
	w := len(c.spec.cols)
	for len(b.buf) < copyBufSize {
		if !c.Next() {
			b.buf = binary.BigEndian.AppendUint16(b.buf, 0xffff) // trailer: -1
			b.end = true
			return nil
		}
		i := int(c.order[c.next-1])
		b.buf = binary.BigEndian.AppendUint16(b.buf, uint16(w))
		for j, v := range c.vals[i*w : (i+1)*w] {
			var err error
			if b.buf, err = b.value(b.buf, b.oids[j], v); err != nil {
				return fmt.Errorf("column %s: %w", c.spec.cols[j].name, err)
			}
		}
	}
	return nil
}

// value appends one field: its length, then its bytes (length -1: NULL).
func (b *binaryCopy) value(buf []byte, oid uint32, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return binary.BigEndian.AppendUint32(buf, math.MaxUint32), nil
	case string:
		if oid == pgtype.TextOID || oid == pgtype.VarcharOID {
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(x)))
			return append(buf, x...), nil
		}
	case []byte:
		if x == nil {
			return binary.BigEndian.AppendUint32(buf, math.MaxUint32), nil
		}
		if oid == pgtype.ByteaOID {
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(x)))
			return append(buf, x...), nil
		}
	case int64:
		switch {
		case oid == pgtype.Int8OID:
			buf = binary.BigEndian.AppendUint32(buf, 8)
			return binary.BigEndian.AppendUint64(buf, uint64(x)), nil
		case oid == pgtype.Int4OID && x >= math.MinInt32 && x <= math.MaxInt32:
			buf = binary.BigEndian.AppendUint32(buf, 4)
			return binary.BigEndian.AppendUint32(buf, uint32(int32(x))), nil
		}
	}
	// Anything else as pgx's CopyFrom encodes it (its errors too, e.g. an
	// integer out of an INTEGER column's range).
	sp := len(buf)
	buf = binary.BigEndian.AppendUint32(buf, math.MaxUint32)
	out, err := b.m.Encode(oid, pgtype.BinaryFormatCode, v, buf)
	if err != nil {
		return nil, err
	}
	if out == nil { // NULL
		return buf, nil
	}
	binary.BigEndian.PutUint32(out[sp:], uint32(len(out)-sp-4))
	return out, nil
}
