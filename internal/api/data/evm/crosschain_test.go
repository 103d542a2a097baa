package evm_test

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/api"
	apievm "github.com/permafrost-dev/permafrost/internal/api/data/evm"
	decodeevm "github.com/permafrost-dev/permafrost/internal/decode/evm"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// The cross-chain listings over two generated EVM chains (the same blocks'
// times, so most blocks tie across chains; one chain longer than the other)
// are the chains' own listings merged newest first, ties by chain key, at
// every page size.
func TestCrossChainListings(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		chainsByID := map[string]string{} // EVM chain id -> chain key
		for _, c := range []struct {
			key, evmID string
			blocks     int
			seed       int64
		}{{"C", "43112", 14, 1}, {"99999", "99999", 9, 2}} {
			chainsByID[c.evmID] = c.key
			ch := ingest.Chain{Key: c.key, Kind: "EVM", BlockchainID: "chain-" + c.key, EVMChainID: c.evmID, NetworkID: 12345, Name: c.key}
			if err := ingest.RegisterChain(ctx, db, ch); err != nil {
				t.Fatal(err)
			}
			gen := decodeevm.NewGenerator(c.seed, 3)
			ix, err := decodeevm.NewIndexer(decodeevm.Config{ChainKey: c.key, GenesisAlloc: gen.Alloc(), Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			for h := 0; h < c.blocks; h++ {
				rb := gen.Next()
				tx, err := db.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := ix.Apply(ctx, tx, rb); err != nil {
					t.Fatal(err)
				}
				if err := ingest.Flush(ctx, ix, tx); err != nil {
					t.Fatal(err)
				}
				if err := ingest.SetCheckpoint(ctx, tx, c.key, rb, uint64(c.blocks-1)); err != nil {
					t.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
			}
		}
		network, err := api.LoadNetwork(ctx, db, "testnet")
		if err != nil {
			t.Fatal(err)
		}
		mux := api.NewMux(log)
		apievm.Register(mux, apievm.Deps{DB: db, Network: network, Pager: api.NewPager([]byte("k")), Log: log})
		e := &env{mux: mux}

		type item struct {
			ts    int64
			key   string
			block int64
			index int64
			text  string
		}
		sortItems := func(xs []item) {
			sort.Slice(xs, func(i, j int) bool {
				a, b := xs[i], xs[j]
				if a.ts != b.ts {
					return a.ts > b.ts
				}
				if a.key != b.key {
					return a.key < b.key
				}
				if a.block != b.block {
					return a.block > b.block
				}
				return a.index > b.index
			})
		}
		texts := func(xs []item) string {
			s := make([]string, len(xs))
			for i, x := range xs {
				s[i] = x.text
			}
			return strings.Join(s, "\n")
		}
		var blocks, txs []item
		for id, key := range chainsByID {
			for _, b := range allPages(t, e, "/v1/chains/"+id+"/blocks?pageSize=100", blockPage) {
				ts, _ := b.BlockTimestamp.Int64()
				blocks = append(blocks, item{ts: ts, key: key, block: num(b.BlockNumber), text: b.String()})
			}
			for _, x := range allPages(t, e, "/v1/chains/"+id+"/transactions?pageSize=100", func(l nativeTxList) ([]nativeTx, string) { return l.Transactions, l.NextPageToken }) {
				ts, _ := x.BlockTimestamp.Int64()
				i, _ := x.BlockIndex.Int64()
				txs = append(txs, item{ts: ts, key: key, block: num(x.BlockNumber), index: i, text: x.key()})
			}
		}
		if len(blocks) != 23 || len(txs) < 30 {
			t.Fatalf("%d blocks, %d txs", len(blocks), len(txs))
		}
		sortItems(blocks)
		sortItems(txs)
		for _, size := range []string{"1", "2", "5", "100"} {
			var got []item
			for _, b := range allPages(t, e, "/v1/blocks?pageSize="+size, blockPage) {
				got = append(got, item{text: b.String()})
			}
			if texts(got) != texts(blocks) {
				t.Errorf("/v1/blocks?pageSize=%s:\n%s\n--- merged:\n%s", size, texts(got), texts(blocks))
			}
			got = got[:0]
			for _, x := range allPages(t, e, "/v1/transactions?pageSize="+size, func(l nativeTxList) ([]nativeTx, string) { return l.Transactions, l.NextPageToken }) {
				got = append(got, item{text: x.key()})
			}
			if texts(got) != texts(txs) {
				t.Errorf("/v1/transactions?pageSize=%s:\n%s\n--- merged:\n%s", size, texts(got), texts(txs))
			}
		}
	})
}
