package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestRawBodyEncoding(t *testing.T) {
	big := []byte(strings.Repeat(`{"hash":"0x00aa","logs":[]},`, 200))
	blocks := []RawBlock{{Bytes: []byte("small")}, {Bytes: big}}
	var enc rawEncoder
	enc.encode(blocks)
	if blocks[0].Encoding != RawPlain || blocks[0].Stored != nil {
		t.Errorf("a small body was encoded: %d", blocks[0].Encoding)
	}
	if blocks[1].Encoding != RawS2 || len(blocks[1].Stored) >= len(big)/2 {
		t.Fatalf("a large JSON body: encoding %d, %d of %d bytes", blocks[1].Encoding, len(blocks[1].Stored), len(big))
	}
	if got, err := RawBody(blocks[1].stored(), blocks[1].Encoding); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("round trip: %v", err)
	}
	if got, err := RawBody(blocks[0].stored(), RawPlain); err != nil || string(got) != "small" {
		t.Fatalf("plain: %q, %v", got, err)
	}

	// An S2 block starts with its decoded length (a uvarint).
	tooLarge := append(binary.AppendUvarint(nil, maxRawBody+1), 0, 0, 0)
	tests := []struct {
		name string
		body []byte
		enc  RawEncoding
		want string
	}{
		{"unknown encoding", big, 7, "unknown encoding 7"},
		{"corrupt", []byte{0x10, 0xff, 0xff, 0xff}, RawS2, "stored raw block"},
		{"truncated", blocks[1].Stored[:len(blocks[1].Stored)/2], RawS2, "stored raw block"},
		{"too large", tooLarge, RawS2, "at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := RawBody(tt.body, tt.enc); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// bigSource serves blocks with large JSON-like bodies.
type bigSource struct{ tip uint64 }

func (s bigSource) Tip(context.Context) (uint64, error) { return s.tip, nil }

func (s bigSource) Fetch(_ context.Context, from, to uint64) ([]RawBlock, error) {
	var out []RawBlock
	for h := from; h <= to; h++ {
		body := fmt.Sprintf(`{"number":%d,"txs":[%s]}`, h, strings.Repeat(fmt.Sprintf(`{"from":"0x%040x"},`, h), 100))
		out = append(out, RawBlock{Height: h, Hash: fmt.Sprintf("h%d", h), Bytes: []byte(body), Timestamp: int64(h)})
	}
	return out, nil
}

// bodyIndexer records each body it is given.
type bodyIndexer struct{}

func (bodyIndexer) Apply(ctx context.Context, tx *store.Tx, b RawBlock) error {
	_, err := tx.Exec(ctx, `INSERT INTO test_bodies (height, body) VALUES ($1, $2)`, int64(b.Height), string(b.Bytes))
	return err
}

func (bodyIndexer) DerivedTables() []string { return []string{"test_bodies"} }

// Large raw blocks are stored compressed; indexers, reindex included, see
// the bodies as fetched.
func TestRawBlocksStoredCompressed(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		if _, err := db.ExecContext(ctx, `CREATE TABLE test_bodies (height BIGINT PRIMARY KEY, body TEXT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		src := bigSource{tip: 30}
		chain := Chain{Key: "T", Kind: "EVM", BlockchainID: "bc", Source: src, Indexer: bodyIndexer{}, BatchSize: 8}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		if err := New(db, []Chain{chain}, Options{UntilTip: true}, log).Run(ctx); err != nil {
			t.Fatal(err)
		}
		var n, stored, plain int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*), SUM(LENGTH(body)) FROM raw_blocks WHERE chain_key = 'T' AND encoding = 1`).Scan(&n, &stored); err != nil || n != 31 {
			t.Fatalf("%d compressed raw blocks, %v", n, err)
		}
		if err := db.QueryRowContext(ctx, `SELECT SUM(LENGTH(body)) FROM test_bodies`).Scan(&plain); err != nil || stored*3 > plain {
			t.Fatalf("stored %d bytes for %d (%v)", stored, plain, err)
		}
		want := dumpBodies(t, db)
		if err := Reindex(ctx, db, []Chain{chain}, 8, log); err != nil {
			t.Fatal(err)
		}
		if got := dumpBodies(t, db); got != want {
			t.Fatal("reindex did not see the bodies as fetched")
		}
		blocks, err := src.Fetch(ctx, 0, 30)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if !strings.Contains(want, string(b.Bytes)) {
				t.Fatalf("block %d indexed with another body", b.Height)
			}
		}
	})
}

func dumpBodies(t *testing.T, db *store.DB) string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT height, body FROM test_bodies ORDER BY height`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var h int64
		var body string
		if err := rows.Scan(&h, &body); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%d %s\n", h, body)
	}
	return b.String()
}
