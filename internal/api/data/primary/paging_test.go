package primary_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/utils/formatting/address"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/api/data/primary"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// ids returns the identities of a page's items, in order.
func pageIDs(t testing.TB, body []byte) (ids []string, next string) {
	t.Helper()
	var p map[string]json.RawMessage
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	if n, ok := p["nextPageToken"]; ok {
		if err := json.Unmarshal(n, &next); err != nil || next == "" {
			t.Fatalf("nextPageToken %s", n)
		}
	}
	for list, key := range map[string]string{"blocks": "blockHash", "utxos": "utxoId", "transactions": "txHash",
		"historicalRewards": "utxoId", "validators": "txHash", "delegators": "txHash"} {
		raw, ok := p[list]
		if !ok {
			continue
		}
		var items []map[string]any
		if err := json.Unmarshal(raw, &items); err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			id, ok := it[key]
			if !ok {
				id = it["validationId"] // L1 validators
			}
			ids = append(ids, fmt.Sprint(id))
		}
		return ids, next
	}
	t.Fatalf("no list in %s", body)
	return nil, ""
}

// walkRandom lists target with a random page size on every page.
func (e *env) walkRandom(t testing.TB, target string, rng *rand.Rand) []string {
	t.Helper()
	u, _ := url.Parse(target)
	var out []string
	for pages := 0; ; pages++ {
		q := u.Query()
		q.Set("pageSize", strconv.Itoa(1+rng.IntN(5)))
		u.RawQuery = q.Encode()
		code, body := e.get(t, u.String())
		if code != 200 {
			t.Fatalf("GET %s: %d %s", u, code, body)
		}
		ids, next := pageIDs(t, body)
		if len(ids) == 0 && next != "" {
			t.Fatalf("GET %s: an empty page with a next page", u)
		}
		out = append(out, ids...)
		if next == "" {
			return out
		}
		q.Set("pageToken", next)
		u.RawQuery = q.Encode()
		if pages > 1000 {
			t.Fatal("pagination does not end")
		}
	}
}

// Walking every page with random page sizes gives exactly the whole list
// (one page of 100), in its order: nothing skipped, nothing repeated.
func TestPaginationProperty(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		alice, carol := "X-custom1js9jhzvc6j53vp53h8cutnrv4lt4292t58me5h", "custom1w98xaclyc635teqmegl22hn756zrlu26x2u7mz"
		targets := []string{
			"/v1/networks/testnet/blockchains/p-chain/blocks",
			"/v1/networks/testnet/blockchains/x-chain/blocks?startTimestamp=1795348150",
			"/v1/networks/testnet/blockchains/x-chain/utxos?includeSpent=true&addresses=" + alice + "," + carol,
			"/v1/networks/testnet/blockchains/x-chain/utxos?sortBy=amount&sortOrder=desc&includeSpent=true&addresses=" + alice,
			"/v1/networks/testnet/blockchains/x-chain/utxos?sortBy=amount&addresses=" + alice,
			"/v1/networks/testnet/blockchains/p-chain/utxos?includeSpent=true&sortOrder=desc&addresses=P-" + carol,
			"/v1/networks/testnet/blockchains/p-chain/utxos?sortBy=amount&includeSpent=true&addresses=P-" + carol,
			"/v1/networks/testnet/blockchains/x-chain/assets/" + e.net.AvaxAssetID + "/transactions",
			"/v1/networks/testnet/blockchains/x-chain/assets/" + e.net.CreatedAssets["nft_DART"] + "/transactions?txTypes=OperationTx,CreateAssetTx",
			"/v1/networks/testnet/rewards?sortOrder=asc&nodeIds=" + e.net.Stakers["alpha"].NodeID,
			"/v1/networks/testnet/validators/NodeID-PhPSRYpAVkb24819fsf9xQw66dPn13tu8",
			"/v1/networks/testnet/validators/NodeID-G7oukoeZdnw9yNpwJBgso24HiJntdGXZP?sortOrder=asc",
			"/v1/networks/testnet/blockchains/p-chain/transactions",
			"/v1/networks/testnet/blockchains/x-chain/transactions?sortOrder=asc&addresses=" + alice + "," + carol,
			"/v1/networks/testnet/blockchains/c-chain/transactions",
			"/v1/networks/testnet/validators",
			"/v1/networks/testnet/validators?sortBy=timeRemaining&sortOrder=asc",
			"/v1/networks/testnet/validators?sortBy=delegationFee",
			"/v1/networks/testnet/validators?sortBy=delegationCapacity&minDelegationCapacity=0",
			"/v1/networks/testnet/delegators?sortOrder=asc",
			"/v1/networks/testnet/l1Validators?includeInactiveL1Validators=true",
		}
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 7))
		for _, target := range targets {
			u, _ := url.Parse(target)
			q := u.Query()
			q.Set("pageSize", "100")
			u.RawQuery = q.Encode()
			code, body := e.get(t, u.String())
			if code != 200 {
				t.Fatalf("GET %s: %d %s", u, code, body)
			}
			whole, next := pageIDs(t, body)
			if next != "" || len(whole) < 2 {
				t.Fatalf("%s: the whole list must fit one page of 100 and have several items: %d, next %q", target, len(whole), next)
			}
			seen := map[string]bool{}
			for _, id := range whole {
				if seen[id] {
					t.Errorf("%s: %s twice in one page", target, id)
				}
				seen[id] = true
			}
			for round := 0; round < 5; round++ {
				got := e.walkRandom(t, target, rng)
				if fmt.Sprint(got) != fmt.Sprint(whole) {
					t.Errorf("%s (seed %d):\n paged %v\n whole %v", target, seed, got, whole)
				}
			}
		}
	})
}

// Keyset pages stay exact while blocks are indexed between two requests:
// a newest-first list (blocks) does not repeat or skip older items, and an
// oldest-first list (UTXOs) gets the new items at its end.
func TestPagesWhileIndexing(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := db.ExecContext(ctx, q, args...); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range [][]string{{"P", "P", "11111111111111111111111111111111LpoYY"}, {"X", "X", "2JVSBoinj9C2J33VntvzYtVJNZdN2NKiwwKjcumHUWEb5DbBrm"}} {
			exec(`INSERT INTO chains (chain_key, kind, blockchain_id, network_id, name) VALUES ($1,$2,$3,5,'')`, c[0], c[1], c[2])
		}
		addr, err := address.FormatBech32("fuji", make([]byte, 20))
		if err != nil {
			t.Fatal(err)
		}
		block := func(h int64) {
			exec(`INSERT INTO px_blocks (chain_key, height, block_id, parent_id, timestamp, block_type, tx_count, tx_ids, size_bytes)
				VALUES ('X',$1,$2,$3,$4,'StandardBlock',0,'[]',10)`, h, fmt.Sprintf("b%03d", h), fmt.Sprintf("b%03d", h-1), 1000+h/2)
		}
		utxo := func(i int64) {
			id := fmt.Sprintf("u%03d", i)
			exec(`INSERT INTO utxos (utxo_id, tx_id, output_index, created_chain, chain_key, asset_id, amount, fx_type, utxo_type,
				addresses, threshold, locktime, utxo_bytes, created_height, created_time) VALUES ($1,'t',$2,'X','X','a',$3,
				'secp256k1fx.TransferOutput','transfer',$4,1,0,$5,$6,$7)`, id, i, fmt.Sprintf("%020d", 5), `["`+addr+`"]`, []byte{1}, i, 1000+i/2)
			exec(`INSERT INTO utxo_addresses (address, chain_key, spent, created_time, amount, utxo_id) VALUES ($1,'X',$2,$3,$4,$5)`,
				addr, false, 1000+i/2, fmt.Sprintf("%020d", 5), id)
		}
		tx := func(i int64) {
			exec(`INSERT INTO px_txs (tx_id, chain_key, height, tx_index, block_id, timestamp, tx_type, tx_bytes)
				VALUES ($1,'X',$2,0,$3,$4,'BaseTx',$5)`, fmt.Sprintf("t%03d", i), i, fmt.Sprintf("b%03d", i), 1000+i/2, []byte{1})
		}
		for i := int64(0); i < 20; i++ {
			block(i)
			utxo(i)
			tx(i)
		}
		network, err := api.LoadNetwork(ctx, db, "testnet")
		if err != nil {
			t.Fatal(err)
		}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		mux := api.NewMux(log)
		primary.Register(mux, primary.Deps{DB: db, Network: network, Pager: api.NewPager([]byte("k")), Log: log})
		spec := apitest.Load(t)
		e := &env{mux: mux, spec: spec}

		type walk struct {
			target string
			add    func(n int64)
			want   func(n int64) []string // all ids once n more were added
		}
		for _, w := range []walk{
			{"/v1/networks/fuji/blockchains/x-chain/blocks", block, func(int64) []string {
				var out []string
				for h := 19; h >= 0; h-- {
					out = append(out, fmt.Sprintf("b%03d", h))
				}
				return out // the first page was taken before the new blocks
			}},
			{"/v1/networks/fuji/blockchains/x-chain/transactions", tx, func(int64) []string {
				var out []string
				for i := 19; i >= 0; i-- {
					out = append(out, fmt.Sprintf("t%03d", i))
				}
				return out // newest first: the txs that arrive are newer than the first page
			}},
			{"/v1/networks/fuji/blockchains/x-chain/utxos?addresses=" + addr, utxo, func(n int64) []string {
				var out []string
				for i := int64(0); i < 20+n; i++ {
					out = append(out, fmt.Sprintf("u%03d", i))
				}
				return out
			}},
		} {
			code, body := e.get(t, w.target+sep(w.target)+"pageSize=6")
			if code != 200 {
				t.Fatalf("%s: %d %s", w.target, code, body)
			}
			got, next := pageIDs(t, body)
			n := int64(0)
			for next != "" {
				// New blocks arrive between pages.
				for k := 0; k < 3; k++ {
					w.add(20 + n)
					n++
				}
				code, body := e.get(t, w.target+sep(w.target)+"pageSize=6&pageToken="+url.QueryEscape(next))
				if code != 200 {
					t.Fatalf("%s: %d %s", w.target, code, body)
				}
				var ids []string
				ids, next = pageIDs(t, body)
				got = append(got, ids...)
			}
			if fmt.Sprint(got) != fmt.Sprint(w.want(n)) {
				t.Errorf("%s:\n got %v\nwant %v", w.target, got, w.want(n))
			}
			_, _ = db.ExecContext(ctx, `DELETE FROM px_blocks WHERE height >= 20`)
			_, _ = db.ExecContext(ctx, `DELETE FROM px_txs WHERE height >= 20`)
		}
	})
}

func sep(target string) string {
	for _, c := range target {
		if c == '?' {
			return "&"
		}
	}
	return "?"
}
