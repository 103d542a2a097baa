package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/decode/evm"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// tableDump reads every row of the rollup tables, as text, sorted.
func tableDump(t *testing.T, db *store.DB) map[string][]string {
	t.Helper()
	return dumpTables(t, db, append(append([]string(nil), rollupTables...), nftTables...)...)
}

// dumpTables reads every row of tables, as text, sorted.
func dumpTables(t *testing.T, db *store.DB, tables ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, table := range tables {
		rows, err := db.QueryContext(context.Background(), "SELECT * FROM "+table)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out[table] = append(out[table], fmt.Sprint(vals...))
		}
		rows.Close()
		sort.Strings(out[table])
	}
	return out
}

// Blocks of the EVM generator (ERC-721 mints and transfers among Zipf-skewed
// accounts) through the real EVM indexer wrapped by the rollup: the holder
// rows equal the owners of evm_nft_tokens counted from scratch, the tx
// buckets equal the counts read from the raw block JSON, and reindex rebuilds
// the same tables from the raw blocks.
func TestRollupGeneratedChain(t *testing.T) {
	blocks := evm.GenerateBlocks(150, 30, 7)
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		g := evm.NewGenerator(7, 30)
		clock := time.Unix(1_800_000_000, 0)
		applyBlocks(t, db, newEVMRollup(t, g, clock), blocks, 50)

		// Holders from ERC-721 ownership, independent of evm_token_balances.
		rows, err := db.QueryContext(ctx, `SELECT token, owner FROM evm_nft_tokens WHERE chain_key = 'C' AND erc_type = 'ERC-721'`)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]map[string]int{}
		tokens := 0
		for rows.Next() {
			var tok, owner string
			if err := rows.Scan(&tok, &owner); err != nil {
				t.Fatal(err)
			}
			if owner == zeroAddress || owner == "" {
				continue
			}
			if counts[tok] == nil {
				counts[tok] = map[string]int{}
			}
			counts[tok][owner]++
			tokens++
		}
		rows.Close()
		want := map[string]map[string]string{}
		for tok, hs := range counts {
			want[tok] = map[string]string{}
			for h, n := range hs {
				want[tok][h] = strconv.Itoa(n)
			}
		}
		got := holderState(t, db)
		if len(want) == 0 || tokens < 100 {
			t.Fatalf("generator made only %d NFTs in %d collections: the test would prove nothing", tokens, len(want))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("holders differ from evm_nft_tokens ownership:\n got %v\nwant %v", got, want)
		}
		checkCollections(t, db, got)

		// Tx counts per hour and day from the raw JSON.
		hourly, daily := map[int64]int64{}, map[int64]int64{}
		first, tip := int64(1<<62), int64(0)
		for _, b := range blocks {
			var body struct {
				Block struct {
					Timestamp    string            `json:"timestamp"`
					Transactions []json.RawMessage `json:"transactions"`
				} `json:"block"`
			}
			if err := json.Unmarshal(b.Bytes, &body); err != nil {
				t.Fatal(err)
			}
			ts, err := strconv.ParseInt(strings.TrimPrefix(body.Block.Timestamp, "0x"), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			hourly[ts-ts%3600] += int64(len(body.Block.Transactions))
			daily[ts-ts%86400] += int64(len(body.Block.Transactions))
			first, tip = min(first, ts), max(tip, ts)
		}
		dump := tableDump(t, db)
		var wantHourly, wantDaily []string
		for _, m := range []struct {
			in  map[int64]int64
			out *[]string
		}{{hourly, &wantHourly}, {daily, &wantDaily}} {
			for b, n := range m.in {
				*m.out = append(*m.out, fmt.Sprint("C", b, n))
			}
		}
		if fmt.Sprint(sorted(wantHourly)) != fmt.Sprint(dump["metrics_tx_hourly"]) || fmt.Sprint(sorted(wantDaily)) != fmt.Sprint(dump["metrics_tx_daily"]) {
			t.Errorf("tx buckets:\nhourly %v want %v\ndaily %v want %v", dump["metrics_tx_hourly"], wantHourly, dump["metrics_tx_daily"], wantDaily)
		}
		wantSpan := fmt.Sprint("C", first, tip, len(blocks)-1, clock.Unix())
		if len(dump["metrics_chains"]) != 1 || dump["metrics_chains"][0] != wantSpan {
			t.Errorf("span %v, want %s", dump["metrics_chains"], wantSpan)
		}

		// Reindex from the raw blocks rebuilds exactly the same rollups.
		ix2 := newEVMRollup(t, g, clock)
		if err := ingest.Reindex(ctx, db, []ingest.Chain{{Key: "C", Kind: "EVM", Indexer: ix2}}, 64, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
			t.Fatal(err)
		}
		if again := tableDump(t, db); !reflect.DeepEqual(again, dump) {
			t.Errorf("reindex changed the rollups:\nbefore %v\nafter  %v", dump, again)
		}
	})
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
