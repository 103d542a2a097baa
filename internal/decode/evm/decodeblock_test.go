package evm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/replay"
	"github.com/permafrost-dev/permafrost/internal/source"
)

// TestDecodeBlockInTheFetch: with the indexer decoding each block in the
// fetch for the source's checks (source.EVM.DecodeBlocks, as the pipeline
// wires it), the source keeps exactly the blocks of the real nodes' answers
// it keeps with its own scan (Blocks), each decoded, and refuses the same
// distorted answers, with an error of the same kind (malformed or
// inconsistent, which decides the retries). devnet-c's C-chain comes with
// call traces; devnet-d's L1 is subnet-evm.
func TestDecodeBlockInTheFetch(t *testing.T) {
	// A receipt of the first block with txs, or its block, edited in the
	// batch answer.
	type edit struct {
		name     string
		receipts func(rs []map[string]json.RawMessage) []map[string]json.RawMessage
		block    func(b map[string]json.RawMessage)
		want     error
	}
	other := json.RawMessage(`"0x00000000000000000000000000000000000000000000000000000000000000ab"`)
	edits := []edit{
		{name: "receipt names another block", want: source.ErrInconsistent,
			receipts: func(rs []map[string]json.RawMessage) []map[string]json.RawMessage {
				rs[0]["blockHash"] = other
				return rs
			}},
		{name: "receipt names another height", want: source.ErrInconsistent,
			receipts: func(rs []map[string]json.RawMessage) []map[string]json.RawMessage {
				rs[0]["blockNumber"] = json.RawMessage(`"0x4d2"`)
				return rs
			}},
		{name: "receipt of another tx", want: source.ErrInconsistent,
			receipts: func(rs []map[string]json.RawMessage) []map[string]json.RawMessage {
				rs[0]["transactionHash"] = other
				return rs
			}},
		{name: "a receipt missing", want: source.ErrInconsistent,
			receipts: func(rs []map[string]json.RawMessage) []map[string]json.RawMessage { return rs[1:] }},
		{name: "receipt without blockHash", want: source.ErrMalformed,
			receipts: func(rs []map[string]json.RawMessage) []map[string]json.RawMessage {
				delete(rs[0], "blockHash")
				return rs
			}},
		{name: "receipt with a null blockNumber", want: source.ErrMalformed,
			receipts: func(rs []map[string]json.RawMessage) []map[string]json.RawMessage {
				rs[0]["blockNumber"] = json.RawMessage(`null`)
				return rs
			}},
		{name: "block of another height", want: source.ErrInconsistent,
			block: func(b map[string]json.RawMessage) { b["number"] = json.RawMessage(`"0x4d2"`) }},
		{name: "timestamp beyond int64", want: source.ErrMalformed,
			block: func(b map[string]json.RawMessage) { b["timestamp"] = json.RawMessage(`"0xffffffffffffffff"`) }},
		{name: "block without parentHash", want: source.ErrMalformed,
			block: func(b map[string]json.RawMessage) { delete(b, "parentHash") }},
	}
	chains := []struct {
		recording, path string
		traced          bool
	}{
		{"devnet-a", source.PathCRPC, false},
		{"devnet-c", source.PathCRPC, true},
		{"devnet-d", source.PathCRPC, false},
		{"devnet-d", "/ext/bc/sHxnmMgaL8gohip8Sa9Ege9Bz1r3MjsKZNkNVnRHhPbBMvUCe/rpc", false},
	}
	ctx := context.Background()
	for _, c := range chains {
		t.Run(c.recording+c.path, func(t *testing.T) {
			rec, err := replay.Load(filepath.Join(devnet.Root(t), "testdata", c.recording))
			if err != nil {
				t.Fatal(err)
			}
			var distort func([]byte) []byte // of the answer being served; nil: none
			node := replay.NewHandler(rec)
			// httptest listens on 127.0.0.1.
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if distort == nil {
					node.ServeHTTP(w, r)
					return
				}
				rr := httptest.NewRecorder()
				node.ServeHTTP(rr, r)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(rr.Code)
				_, _ = w.Write(distort(rr.Body.Bytes()))
			}))
			t.Cleanup(srv.Close)
			url := srv.URL + c.path
			// One attempt, one batch: each distorted answer is the error.
			e, err := source.NewEVM(ctx, url, source.EVMOptions{BatchSize: 300, Concurrency: 1, Retry: source.Retry{MaxAttempts: 1}})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			tip, err := e.BlockNumber(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ix, err := NewIndexer(Config{ChainKey: "C"})
			if err != nil {
				t.Fatal(err)
			}
			want, err := e.Blocks(ctx, 0, tip)
			if err != nil {
				t.Fatal(err)
			}
			// Small batches, four in flight: blocks decoded concurrently.
			par, err := source.NewEVM(ctx, url, source.EVMOptions{BatchSize: 3, Concurrency: 4, Retry: source.Retry{MaxAttempts: 1}})
			if err != nil {
				t.Fatal(err)
			}
			defer par.Close()
			got, err := par.DecodeBlocks(ctx, 0, tip, ix)
			if err != nil {
				t.Fatal(err)
			}
			if e.Traces() != c.traced || par.Traces() != c.traced {
				t.Fatalf("traces %v and %v, want %v", e.Traces(), par.Traces(), c.traced)
			}
			withTxs := -1
			for h := range want {
				g, w := got[h], want[h]
				if g.Height != w.Height || g.Hash != w.Hash || g.ParentHash != w.ParentHash || g.Timestamp != w.Timestamp ||
					g.TxCount != w.TxCount || !bytes.Equal(g.Bytes(), w.Bytes()) || w.Decoded != nil {
					t.Fatalf("block %d: decoded %+v, scanned %+v", h, g, w)
				}
				p, ok := g.Decoded.(*preparedBlock)
				if !ok || p.b.number != uint64(h) || len(p.b.txs) != w.TxCount || (c.traced && !p.b.hasTraces) {
					t.Fatalf("block %d: decoded into %T", h, g.Decoded)
				}
				if withTxs < 0 && w.TxCount > 0 {
					withTxs = h
				}
			}
			if withTxs < 0 {
				t.Fatal("no block with txs")
			}
			target := json.RawMessage(`"0x` + strconv.FormatUint(uint64(withTxs), 16) + `"`)
			for _, ed := range edits {
				t.Run(ed.name, func(t *testing.T) {
					distort = func(body []byte) []byte {
						var answers []map[string]json.RawMessage
						if err := json.Unmarshal(body, &answers); err != nil {
							t.Fatalf("batch answer: %v", err)
						}
						for _, a := range answers {
							var blk map[string]json.RawMessage
							var rs []map[string]json.RawMessage
							switch {
							case ed.block != nil && json.Unmarshal(a["result"], &blk) == nil && bytes.Equal(blk["number"], target):
								ed.block(blk)
								a["result"], _ = json.Marshal(blk)
							case ed.receipts != nil && json.Unmarshal(a["result"], &rs) == nil && len(rs) > 0 &&
								bytes.Equal(rs[0]["blockNumber"], target):
								a["result"], _ = json.Marshal(ed.receipts(rs))
							}
						}
						out, _ := json.Marshal(answers)
						if bytes.Equal(out, body) {
							t.Fatal("nothing distorted")
						}
						return out
					}
					defer func() { distort = nil }()
					_, scanErr := e.Blocks(ctx, 0, tip)
					_, decErr := e.DecodeBlocks(ctx, 0, tip, ix)
					if !errors.Is(scanErr, ed.want) || !errors.Is(decErr, ed.want) {
						t.Fatalf("scanned: %v\ndecoded: %v\nwant both %v", scanErr, decErr, ed.want)
					}
				})
			}
		})
	}
}
