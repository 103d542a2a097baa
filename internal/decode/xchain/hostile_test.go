package xchain

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/hashing"

	"github.com/permafrost-dev/permafrost/internal/devnet/indextest"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// withUnknownTxType returns a copy of block bytes where the tx starting at
// offset has an unsigned-tx type ID no codec knows.
func withUnknownTxType(raw []byte, offset int) []byte {
	out := append([]byte{}, raw...)
	binary.BigEndian.PutUint32(out[offset:], 99)
	return out
}

func TestUndecodableTxsStoredRaw(t *testing.T) {
	g := indextest.Genesis(t)
	blocks := indextest.XBlocks(t)
	p, err := newParser()
	if err != nil {
		t.Fatal(err)
	}
	// Block 17 holds two txs; find where the second starts.
	orig, err := DecodeBlock(p, blocks[17].Bytes)
	if err != nil || len(orig.Txs) != 2 {
		t.Fatalf("block 17: %v, %d txs", err, len(orig.Txs))
	}
	second := headerLen + len(orig.Txs[0].Raw) - 2

	tests := []struct {
		name      string
		height    int
		offset    int
		wantKnown []string // txs decoded before the undecodable rest
	}{
		{"only tx", 1, headerLen, nil},
		{"second of two", 17, second, []string{orig.Txs[0].ID.String()}},
		{"first of two swallows the rest", 17, headerLen, nil},
	}
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				ix, err := NewIndexer(g, nil)
				if err != nil {
					t.Fatal(err)
				}
				raw := withUnknownTxType(blocks[tc.height].Bytes, tc.offset)
				rest := append([]byte{0, 0}, raw[tc.offset:]...)
				unknownID := ids.ID(hashing.ComputeHash256Array(rest))
				b := ingest.RawBlock{Height: uint64(tc.height), Hash: ids.ID(hashing.ComputeHash256Array(raw)).String(), Bytes: raw}
				indextest.Apply(t, db, ix, []ingest.RawBlock{b}, 1)

				var typ string
				var stored []byte
				if err := db.QueryRowContext(ctx, `SELECT tx_type, tx_bytes FROM px_txs WHERE tx_id = $1`, unknownID.String()).Scan(&typ, &stored); err != nil {
					t.Fatalf("unknown tx row: %v", err)
				}
				if typ != TypeUnknown || string(stored) != string(rest) {
					t.Errorf("unknown tx: type %s, %d bytes (want %d)", typ, len(stored), len(rest))
				}
				var txIDs string
				if err := db.QueryRowContext(ctx, `SELECT tx_ids FROM px_blocks WHERE chain_key = 'X' AND height = $1`, tc.height).Scan(&txIDs); err != nil {
					t.Fatal(err)
				}
				want, _ := json.Marshal(append(append([]string{}, tc.wantKnown...), unknownID.String()))
				if txIDs != string(want) {
					t.Errorf("block tx ids %s, want %s", txIDs, want)
				}
				for _, id := range tc.wantKnown {
					if err := db.QueryRowContext(ctx, `SELECT tx_type FROM px_txs WHERE tx_id = $1`, id).Scan(&typ); err != nil || typ != TypeBase {
						t.Errorf("decoded tx %s: %s %v", id, typ, err)
					}
				}
			})
		}
	})
}

func TestHostileBlocks(t *testing.T) {
	g := indextest.Genesis(t)
	blocks := indextest.XBlocks(t)
	good := blocks[3]
	tests := []struct {
		name  string
		block ingest.RawBlock
	}{
		{"empty", ingest.RawBlock{Height: 3}},
		{"truncated header", ingest.RawBlock{Height: 3, Bytes: good.Bytes[:40]}},
		// The driver always passes the node's block ID: a cut block cannot pass as one with an UNKNOWN tail.
		{"truncated tx", ingest.RawBlock{Height: 3, Hash: good.Hash, Bytes: good.Bytes[:len(good.Bytes)-70]}},
		{"not a block", ingest.RawBlock{Height: 3, Bytes: append([]byte{0, 0, 0, 0, 0, 7}, good.Bytes[6:]...)}},
		{"height mismatch", ingest.RawBlock{Height: 4, Hash: good.Hash, Bytes: good.Bytes}},
		{"hash mismatch", ingest.RawBlock{Height: 3, Hash: blocks[4].Hash, Bytes: good.Bytes}},
		{"huge tx count", ingest.RawBlock{Height: 3, Hash: good.Hash, Bytes: func() []byte {
			b := append([]byte{}, good.Bytes...)
			binary.BigEndian.PutUint32(b[headerLen-4:], 1<<31)
			return b[:headerLen+10]
		}()}},
	}
	ix, err := NewIndexer(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.Open(t, storetest.SQLiteDSN(t))
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tx, err := db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			err = ix.Apply(ctx, tx, tc.block)
			if err == nil {
				t.Fatalf("Apply accepted %s", tc.name)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// The tx-by-tx fallback must cut and identify txs exactly as the block parser
// does, so decodable txs before an undecodable one keep their real IDs.
func TestTxByTxMatchesParser(t *testing.T) {
	p, err := newParser()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range indextest.XBlocks(t) {
		want, err := DecodeBlock(p, b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeTxByTx(p, b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != want.ID || got.ParentID != want.ParentID || got.Height != want.Height || got.Time != want.Time || len(got.Txs) != len(want.Txs) {
			t.Fatalf("block %d: header %+v, parser %+v", b.Height, got, want)
		}
		for i := range want.Txs {
			g, w := got.Txs[i], want.Txs[i]
			if g.Err != nil || g.ID != w.ID || string(g.Raw) != string(w.Raw) || string(g.Tx.Unsigned.Bytes()) != string(w.Tx.Unsigned.Bytes()) {
				t.Errorf("block %d tx %d: %s (%v), parser %s", b.Height, i, g.ID, g.Err, w.ID)
			}
		}
	}
}
