package evm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	apievm "github.com/permafrost-dev/permafrost/internal/api/data/evm"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

// TestAnswersDuringBulkCatchUp: while a bulk catch-up has the deferrable
// indexes dropped, every route that reads through one of them answers what
// it answers with the index (by another plan: SQLite's INDEXED BY hints are
// left out), and again once the indexes are built. The keys asked for are
// every indexed block and transaction, and the addresses and tokens of the
// recorded transfers and transactions.
func TestAnswersDuringBulkCatchUp(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			te := testenv.Index(t, testenv.DevnetDir(t), backend, source.TracesAuto)
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			mux := api.NewMux(log)
			apievm.Register(mux, apievm.Deps{DB: te.DB, Network: te.Network, Pager: te.Pager, Log: log})
			paths := append(catchUpPaths(t, te.DB), nftPages(t, mux, te.DB)...)
			serve := func() map[string]string {
				out := map[string]string{}
				for _, p := range paths {
					code, body := apitest.ServeUnvalidated(t, mux, "GET", p)
					out[p] = string(rune('0'+code/100)) + " " + string(body)
				}
				return out
			}
			want := serve()
			ok := 0
			for _, a := range want {
				if a[0] == '2' {
					ok++
				}
			}
			if ok < len(paths)*9/10 {
				t.Fatalf("only %d of %d requests answered 2xx with the indexes", ok, len(paths))
			}
			// The owner index's listings are asked of an owner that holds a token.
			owned := 0
			for p, a := range want {
				if strings.Contains(p, "balances:listErc721") && strings.Contains(a, `"tokenId"`) {
					owned++
				}
			}
			if owned == 0 {
				t.Fatal("no balances:listErc721 answer lists a token")
			}
			if _, err := te.DB.DeferIndexes(ctx, store.Deferrable(te.DB.Dialect())); err != nil {
				t.Fatal(err)
			}
			compare := func(stage string, got map[string]string) {
				for p, w := range want {
					if got[p] != w {
						t.Errorf("%s: %s\n got %.300s\nwant %.300s", stage, p, got[p], w)
					}
				}
			}
			compare("indexes deferred", serve())
			if err := te.DB.BuildDeferredIndexes(ctx, nil); err != nil {
				t.Fatal(err)
			}
			compare("indexes built", serve())
		})
	}
}

// catchUpPaths lists requests of every route that reads a deferrable index
// (or a deferrable primary key).
func catchUpPaths(t *testing.T, db *store.DB) []string {
	t.Helper()
	const base = "/v1/chains/88888"
	var paths []string
	list := func(q string, each func(v string)) {
		rows, err := db.QueryContext(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var v string
			if err := rows.Scan(store.ScanHex(&v)); err != nil {
				t.Fatal(err)
			}
			each(v)
		}
	}
	list(`SELECT hash FROM evm_txs WHERE chain_key = 'C'`, func(h string) { paths = append(paths, base+"/transactions/"+h) })
	list(`SELECT hash FROM evm_blocks WHERE chain_key = 'C'`, func(h string) { paths = append(paths, base+"/blocks/"+h) })
	list(`SELECT DISTINCT token FROM evm_transfers WHERE chain_key = 'C'`, func(a string) {
		paths = append(paths, base+"/tokens/"+a+"/transfers?pageSize=100")
	})
	// The balances as of a block before the tip read the balance histories
	// (their primary keys deferred on PostgreSQL).
	var mid int64
	if err := db.QueryRowContext(context.Background(), `SELECT MAX(number) / 2 FROM evm_blocks WHERE chain_key = 'C'`).Scan(&mid); err != nil {
		t.Fatal(err)
	}
	at := fmt.Sprintf("blockNumber=%d", mid)
	list(`SELECT DISTINCT address FROM evm_address_txs WHERE chain_key = 'C' UNION SELECT from_addr FROM evm_transfers WHERE chain_key = 'C'
		UNION SELECT to_addr FROM evm_transfers WHERE chain_key = 'C' UNION SELECT owner FROM evm_nft_owner_history WHERE chain_key = 'C'`, func(a string) {
		for _, r := range []string{"/transactions?pageSize=100", "/transactions:listNative?pageSize=100", "/transactions:listErc20?pageSize=100",
			"/transactions:listErc721?pageSize=100", "/transactions:listErc1155?pageSize=100", "/transactions:listInternals?pageSize=100", "",
			"/balances:listErc721?pageSize=100", "/balances:listCollectibles?pageSize=100", "/balances:getNative?" + at,
			"/balances:listErc20?pageSize=100&" + at, "/balances:listErc1155?pageSize=100&" + at} {
			paths = append(paths, base+"/addresses/"+a+r)
		}
		paths = append(paths, base+"/contracts/"+a+"/deployments", "/v2/chains/88888/addresses/"+a+"/transactions?pageSize=100")
	})
	paths = append(paths, base+"/transactions?pageSize=100", base+"/transactions?pageSize=100&status=failed", base+"/blocks?pageSize=100")
	if len(paths) < 50 {
		t.Fatalf("only %d requests from the index", len(paths))
	}
	return paths
}

// nftPages lists every page of each collection's NFT ids (the numeric order
// reads through a deferrable index), two ids a page: continued pages read
// two id ranges (listNFTTokens).
func nftPages(t *testing.T, mux http.Handler, db *store.DB) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT DISTINCT token FROM evm_nft_tokens WHERE chain_key = 'C'`)
	if err != nil {
		t.Fatal(err)
	}
	var tokens []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, a)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, a := range tokens {
		p := "/v1/chains/88888/nfts/collections/" + a + "/tokens?pageSize=2"
		for page := 0; page < 50; page++ {
			paths = append(paths, p)
			code, body := apitest.ServeUnvalidated(t, mux, "GET", p)
			var r struct {
				NextPageToken string `json:"nextPageToken"`
			}
			if code != http.StatusOK || json.Unmarshal(body, &r) != nil || r.NextPageToken == "" {
				break
			}
			p = "/v1/chains/88888/nfts/collections/" + a + "/tokens?pageSize=2&pageToken=" + url.QueryEscape(r.NextPageToken)
		}
	}
	if len(tokens) == 0 || len(paths) < 2*len(tokens) {
		t.Fatalf("%d NFT listing pages for %d collections: no listing goes past one page", len(paths), len(tokens))
	}
	return paths
}
