package evm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/api"
	apievm "github.com/permafrost-dev/permafrost/internal/api/data/evm"
	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

// page is any list answer: its items (raw, in order), the native balance
// of balance listings, and the token.
type page struct {
	items  []string
	native string
	next   string
}

var listKeys = []string{"erc20TokenBalances", "erc721TokenBalances", "erc1155TokenBalances", "collectibleBalances",
	"transfers", "transactions", "tokens", "blocks", "contracts"}

func (e *env) page(t testing.TB, path string) page {
	t.Helper()
	code, body := e.do(t, path)
	if code != 200 {
		t.Fatalf("%s: %d %s", path, code, body)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	var p page
	for _, k := range listKeys {
		if raw, ok := m[k]; ok {
			var items []json.RawMessage
			if err := json.Unmarshal(raw, &items); err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				var buf bytes.Buffer
				_ = json.Compact(&buf, it)
				p.items = append(p.items, buf.String())
			}
		}
	}
	p.native = string(m["nativeTokenBalance"])
	if tok, ok := m["nextPageToken"]; ok {
		if err := json.Unmarshal(tok, &p.next); err != nil || p.next == "" {
			t.Fatalf("%s: nextPageToken %s", path, tok)
		}
	}
	return p
}

func withQuery(path string, kv ...string) string {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	for i := 0; i+1 < len(kv); i += 2 {
		path += sep + kv[i] + "=" + url.QueryEscape(kv[i+1])
		sep = "&"
	}
	return path
}

// listings are the paths of every list endpoint over the devnet's
// addresses and contracts, with their largest page size.
func listings(e *env, t *testing.T) map[string]int {
	out := map[string]int{}
	var addrs []string
	addrs = append(addrs, holders(e, t)...)
	for _, a := range addrs {
		for _, r := range []string{"listErc20", "listErc721", "listErc1155", "listCollectibles"} {
			out["/v1/chains/88888/addresses/"+a+"/balances:"+r] = 500
		}
		out["/v1/chains/88888/addresses/"+a+"/transactions:listNative"] = 100
		out["/v1/chains/88888/addresses/"+a+"/transactions:listNative?startBlock=9&endBlock=33"] = 100
		out["/v1/chains/88888/addresses/"+a+"/transactions"] = 100
		out["/v1/chains/88888/addresses/"+a+"/transactions?sortOrder=asc&startBlock=9"] = 100
		out["/v2/chains/88888/addresses/"+a+"/transactions"] = 100
		for _, r := range []string{"listErc20", "listErc721", "listErc1155"} {
			out["/v1/chains/88888/addresses/"+a+"/transactions:"+r] = 100
		}
		out["/v1/chains/88888/contracts/"+a+"/deployments"] = 100
	}
	for _, p := range []string{"/v1/chains/88888/blocks", "/v1/blocks", "/v1/chains/88888/transactions",
		"/v1/chains/88888/transactions?status=success", "/v1/transactions", "/v1/transactions?status=failed"} {
		out[p] = 100
	}
	for _, c := range e.net.CChainContracts {
		out["/v1/chains/88888/tokens/"+c+"/transfers"] = 100
		out["/v1/chains/88888/tokens/"+c+"/transfers?startBlock=20"] = 100
		out["/v1/chains/88888/nfts/collections/"+c+"/tokens"] = 100
		out["/v1/chains/88888/addresses/"+c+"/transactions:listNative"] = 100
	}
	return out
}

// Property: following nextPageToken with page sizes drawn at random for
// every page returns the full listing, in order, each item once; the last
// page has no token.
func TestPaginationProperty(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		seed := rand.Uint64()
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 7))
		lists := listings(e, t)
		nonEmpty := 0
		for path, max := range lists {
			full := e.page(t, withQuery(path, "pageSize", itoa(max)))
			if full.next != "" {
				t.Fatalf("%s: more than %d items", path, max)
			}
			if len(full.items) > 1 {
				nonEmpty++
			}
			for round := 0; round < 4; round++ {
				var got []string
				tok := ""
				for n := 0; ; n++ {
					if n > len(full.items)+1 {
						t.Fatalf("%s: more pages than items", path)
					}
					size := 1 + rng.IntN(min(len(full.items)+1, 4))
					if rng.IntN(6) == 0 {
						size = 1 + rng.IntN(max)
					}
					q := []string{"pageSize", itoa(size)}
					if tok != "" {
						q = append(q, "pageToken", tok)
					}
					p := e.page(t, withQuery(path, q...))
					if len(p.items) > size {
						t.Fatalf("%s: %d items for pageSize %d", path, len(p.items), size)
					}
					if p.next != "" && len(p.items) != size {
						t.Errorf("%s: a short page (%d of %d) with a nextPageToken", path, len(p.items), size)
					}
					if p.native != full.native {
						t.Errorf("%s: native balance %s on a later page, %s on the first", path, p.native, full.native)
					}
					got = append(got, p.items...)
					if p.next == "" {
						break
					}
					tok = p.next
				}
				if strings.Join(got, "\n") != strings.Join(full.items, "\n") {
					t.Errorf("%s: paged listing differs from the full one:\n%s\n---\n%s", path, strings.Join(got, "\n"), strings.Join(full.items, "\n"))
				}
				seen := map[string]bool{}
				for _, it := range got {
					if seen[it] {
						t.Errorf("%s: item twice: %s", path, it)
					}
					seen[it] = true
				}
			}
		}
		if nonEmpty < 20 {
			t.Fatalf("only %d listings with several items: the property says little", nonEmpty)
		}
	})
}

// tamper changes one character inside a token's signature. (Replacing the
// last characters is not enough: the signature is random, and the last
// base64 character also carries padding bits a decoder may ignore.)
func tamper(tok string) string {
	i := len(tok) - 5
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	return tok[:i] + string(c) + tok[i+1:]
}

// A page token continues only the query that made it.
func TestPageTokenBinding(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		alice := "0x03623add7ec6f6426d6266ed2e5a4734c786e73e"
		carol := "0xcd315311aaea7571750fd94311410035d1c5a951"
		erc20 := e.net.CChainContracts["erc20"]
		native := "/v1/chains/88888/addresses/" + alice + "/transactions:listNative"
		tok := e.page(t, withQuery(native, "pageSize", "1")).next
		if tok == "" {
			t.Fatal("no token")
		}
		// The same query continues, whatever the page size and chainId form.
		for _, p := range []string{
			withQuery(native, "pageToken", tok),
			withQuery(native, "pageToken", tok, "pageSize", "7"),
			withQuery("/v1/chains/c-chain/addresses/"+strings.ToUpper(alice[:1])+"x"+alice[2:]+"/transactions:listNative", "pageToken", tok),
		} {
			if code, body := e.do(t, p); code != 200 {
				t.Errorf("%s: %d %s", p, code, body)
			}
		}
		for _, c := range []struct{ path, want string }{
			{withQuery(native, "pageToken", tok, "startBlock", "3"), "other parameters"},
			{withQuery(native, "pageToken", tok, "endBlock", "30"), "other parameters"},
			{withQuery("/v1/chains/88888/addresses/"+carol+"/transactions:listNative", "pageToken", tok), "other parameters"},
			{withQuery("/v1/chains/88888/tokens/"+erc20+"/transfers", "pageToken", tok), "another endpoint"},
			{withQuery("/v1/chains/88888/addresses/"+alice+"/balances:listErc20", "pageToken", tok), "another endpoint"},
			{withQuery(native, "pageToken", tamper(tok)), "pageToken"},
			{withQuery(native, "pageToken", "A"+tok), "pageToken"},
			{withQuery(native, "pageToken", strings.Repeat("x", 3000)), "pageToken"},
		} {
			e.fails(t, c.path, 400, c.want)
		}
		bal := "/v1/chains/88888/addresses/" + alice + "/balances:listErc1155"
		btok := e.page(t, withQuery(bal, "pageSize", "1")).next
		if btok == "" {
			t.Fatal("no balance token")
		}
		e.fails(t, withQuery(bal, "pageToken", btok, "blockNumber", "30"), 400, "other parameters")
		e.fails(t, withQuery(bal, "pageToken", btok, "contractAddress", e.net.CChainContracts["erc1155"]), 400, "other parameters")
		// A token of another server (another signing key) is refused.
		other := api.NewPager([]byte("another key"))
		forged := other.Encode("evm.listNative", api.FilterKey(url.Values{}, "chain=C", "address="+alice), map[string]int64{"t": 37, "b": 5, "i": 0})
		e.fails(t, withQuery(native, "pageToken", forged), 400, "pageToken")
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

// Listings started while the index was at block K and continued after more
// blocks were indexed answer exactly what a single page at K answered:
// nothing skipped, nothing repeated, nothing from after K.
func TestListingsHoldTheirBlock(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		set, err := chains.Build(ctx, chains.Options{NodeURL: testenv.ReplayNode(t),
			GenesisPath: filepath.Join(testenv.DevnetDir(t), "genesis.json"), Log: log, BatchSize: 16})
		if err != nil {
			t.Fatal(err)
		}
		var c ingest.Chain
		for _, ch := range set.Chains {
			if ch.Key == "C" {
				c = ch
			}
		}
		blocks, err := c.Source.Fetch(ctx, 0, recordedTip)
		if err != nil {
			t.Fatal(err)
		}
		if err := ingest.RegisterChain(ctx, db, c); err != nil {
			t.Fatal(err)
		}
		apply := func(b ingest.RawBlock) {
			tx, err := db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			if err := c.Indexer.Apply(ctx, tx, b); err != nil {
				t.Fatal(err)
			}
			if err := ingest.Flush(ctx, c.Indexer, tx); err != nil {
				t.Fatal(err)
			}
			if err := ingest.SetCheckpoint(ctx, tx, "C", b, recordedTip); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		network, err := api.LoadNetwork(ctx, db, "testnet")
		if err != nil {
			t.Fatal(err)
		}
		mux := api.NewMux(log)
		apievm.Register(mux, apievm.Deps{DB: db, Network: network, Pager: api.NewPager([]byte("k")), Log: log})
		full := setup0(t)
		e := &env{mux: mux, net: full.net, rec: full.rec}

		type listing struct {
			path      string
			max       int
			want      page // one page at K
			got       []string
			next      string
			natives   []string
			started   int
			completed bool
		}
		var open []*listing
		paths := listings(e, t)
		for k := 0; k <= recordedTip; k++ {
			apply(blocks[k])
			if k >= 8 && k%5 == 0 {
				for p, max := range paths {
					l := &listing{path: p, max: max, started: k, want: e.page(t, withQuery(p, "pageSize", itoa(max)))}
					first := e.page(t, withQuery(p, "pageSize", "1"))
					l.got, l.next, l.natives = first.items, first.next, []string{first.native}
					l.completed = first.next == ""
					if !l.completed {
						open = append(open, l)
					}
					if len(l.got) > 0 || !l.completed {
						continue
					}
					if len(l.want.items) != 0 {
						t.Errorf("%s at %d: empty first page, %d items in one page", p, k, len(l.want.items))
					}
				}
			}
			// Every open listing moves on by one page per indexed block.
			for _, l := range open {
				if l.completed {
					continue
				}
				p := e.page(t, withQuery(l.path, "pageSize", "1", "pageToken", l.next))
				l.got = append(l.got, p.items...)
				l.natives = append(l.natives, p.native)
				l.next = p.next
				l.completed = p.next == ""
			}
		}
		moved := 0
		for _, l := range open {
			for !l.completed {
				p := e.page(t, withQuery(l.path, "pageSize", "2", "pageToken", l.next))
				l.got = append(l.got, p.items...)
				l.natives = append(l.natives, p.native)
				l.next, l.completed = p.next, p.next == ""
			}
			if strings.Join(l.got, "\n") != strings.Join(l.want.items, "\n") {
				t.Errorf("%s started at block %d:\n%s\n--- one page at %d:\n%s", l.path, l.started,
					strings.Join(l.got, "\n"), l.started, strings.Join(l.want.items, "\n"))
			}
			for _, n := range l.natives {
				if n != l.want.native {
					t.Errorf("%s started at %d: native balance %s, %s at the start", l.path, l.started, n, l.want.native)
				}
			}
			now := e.page(t, withQuery(l.path, "pageSize", itoa(l.max)))
			if strings.Join(now.items, "\n") != strings.Join(l.want.items, "\n") || now.native != l.want.native {
				moved++
			}
		}
		// The test means something only if the data moved under listings.
		if len(open) < 50 || moved < 20 {
			t.Fatalf("%d listings spanned new blocks, %d of them changed meanwhile", len(open), moved)
		}
	})
}

// setup0 loads the recording facts without an index.
func setup0(t *testing.T) *env {
	return &env{net: loadNetwork(t), rec: loadRecording(t)}
}
