package enrichapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	evmdata "github.com/permafrost-dev/permafrost/internal/api/data/evm"
	primarydata "github.com/permafrost-dev/permafrost/internal/api/data/primary"
	"github.com/permafrost-dev/permafrost/internal/api/enrichapi"
	"github.com/permafrost-dev/permafrost/internal/enrich"
	"github.com/permafrost-dev/permafrost/internal/keys"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

func TestMain(m *testing.M) { storetest.Main(m) }

const (
	cid  = "bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi"
	dave = "0x97962fd085b56702d6117ccd744d38335e1fcfe3" // holds DevToken, the factory's token and DevNFT 1, 2
)

// hostDocs are what the metadata host stand-ins serve at the recorded
// URIs' paths (http://127.0.0.1:8080/... and ipfs://<cid>/...).
var hostDocs = map[string]string{
	"/nft/2.json":                    `{"name":"Devnet Collectible #2","description":"over http","image":"https://devnet.example.org/2.png","attributes":[{"trait_type":"color","value":"blue"}]}`,
	"/ipfs/" + cid + "/3.json":       `{"name":"Devnet Collectible #3","image":"ipfs://` + cid + `/3.png","background_color":"00ff00"}`,
	"/ipfs/" + cid + "/multi/2.json": `{"name":"Devnet Silver","decimals":2,"properties":{"rarity":"common"}}`,
	"/multi/3.json":                  `{"name":"Devnet Bronze","decimals":0,"description":"over http"}`,
}

// docHost serves hostDocs (replaceable per path) and counts requests.
type docHost struct {
	srv  *httptest.Server
	mu   sync.Mutex
	docs map[string]string
	hits map[string]int
}

func newDocHost(t *testing.T) *docHost {
	h := &docHost{docs: map[string]string{}, hits: map[string]int{}}
	for k, v := range hostDocs {
		h.docs[k] = v
	}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.hits[r.URL.Path]++
		doc, ok := h.docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, doc)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *docHost) set(path, doc string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.docs[path] = doc
}

// gecko speaks the CoinGecko subset the provider uses.
func gecko(t *testing.T, tokens map[string]float64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		out := map[string]any{}
		switch {
		case r.URL.Path == "/simple/price" && q.Get("ids") == "avalanche-2":
			out["avalanche-2"] = map[string]any{"usd": 35.25, "eur": 32.5, "jpy": 5400}
		case r.URL.Path == "/simple/token_price/devnet-a":
			for _, a := range strings.Split(q.Get("contract_addresses"), ",") {
				if p, ok := tokens[a]; ok {
					out[a] = map[string]any{"usd": p * 1.1, "eur": p}
				}
			}
		case r.URL.Path == "/coins/avalanche-2/history" && q.Get("date") == "22-11-2026":
			out["market_data"] = map[string]any{"current_price": map[string]any{"usd": 29.75, "eur": 27.25}}
		default:
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type env struct {
	*testenv.Env
	mux        *api.Mux
	svc        *enrich.Service
	host, gw   *docHost
	contracts  map[string]string
	key, plain string // API keys: with the reindex scope, without
	avax       string
}

func logger() *slog.Logger {
	if os.Getenv("ENRICH_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// setup serves the devnet index with the guard, the data routes and the
// reindex route, and a running enrichment (its results from earlier tests
// cleared) over stand-ins of the recorded metadata hosts, an IPFS gateway,
// a CoinGecko server and a registry file; it returns once every NFT and
// contract is enriched.
func setup(t *testing.T, backend string, withPrices bool) *env {
	t.Helper()
	te := testenv.Devnet(t, backend)
	ctx := t.Context()
	for _, q := range []string{`DELETE FROM enrich_nft_jobs`, `DELETE FROM enrich_token_meta`, `DELETE FROM enrich_token_reputation`,
		`DELETE FROM enrich_price_history`,
		`UPDATE evm_nft_tokens SET token_uri = NULL, metadata = NULL, metadata_status = 'unknown', metadata_updated_at = 0`,
		`UPDATE evm_contracts SET name = NULL, symbol = NULL, decimals = NULL, metadata_status = 'unknown', metadata_updated_at = 0`} {
		if _, err := te.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(filepath.Join(te.Dir, "network.json"))
	if err != nil {
		t.Fatal(err)
	}
	var nw struct {
		AvaxAssetID     string            `json:"avaxAssetID"`
		CChainContracts map[string]string `json:"cChainContracts"`
	}
	if err := json.Unmarshal(raw, &nw); err != nil {
		t.Fatal(err)
	}
	e := &env{Env: te, host: newDocHost(t), gw: newDocHost(t), contracts: map[string]string{}, avax: nw.AvaxAssetID}
	for k, v := range nw.CChainContracts {
		e.contracts[k] = strings.ToLower(v)
	}
	registry := filepath.Join(t.TempDir(), "registry.yaml")
	if err := os.WriteFile(registry, []byte(`contracts:
  - chainId: "88888"
    address: "`+e.contracts["erc20"]+`"
    description: "The devnet's ERC-20"
    officialSite: "https://devnet.example.org"
    email: "team@devnet.example.org"
    logoAsset: {assetId: devt-logo, imageUri: "https://devnet.example.org/devt.png"}
    color: "#E84142"
    resourceLinks: [{type: Website, url: "https://devnet.example.org"}, {type: Github, url: "https://github.com/example/devnet"}]
    tags: [test, erc20]
    tokenReputation: Benign
  - chainId: "88888"
    address: "`+e.contracts["factoryChild"]+`"
    tokenReputation: Malicious
  - chainId: "88888"
    address: "`+e.contracts["factory"]+`"
    name: "Token Factory"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	rpc, err := source.NewEVM(ctx, te.NodeURL+source.PathCRPC, source.EVMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rpc.Close)
	cfg := enrich.Config{
		Chains:      []enrich.Chain{{Key: "C", EVMChainID: "88888", RPC: rpc}},
		AVAXAssetID: e.avax,
		Tokens:      enrich.TokenConfig{Interval: 10 * time.Millisecond},
		Trace:       enrich.TraceConfig{Disabled: true},
		NFT: enrich.NFTConfig{Poll: 10 * time.Millisecond, Timeout: time.Second, IPFSGateway: e.gw.srv.URL, AllowLoopback: true,
			ConnectTo: map[string]string{"127.0.0.1:8080": e.host.srv.Listener.Addr().String()}},
		Registry: enrich.RegistryConfig{Path: registry, Poll: 20 * time.Millisecond},
	}
	if withPrices {
		g := gecko(t, map[string]float64{e.contracts["erc20"]: 1.25, e.contracts["factoryChild"]: 0.5})
		cfg.Prices = enrich.PriceConfig{Provider: "coingecko", CoinGecko: enrich.CoinGeckoConfig{BaseURL: g.URL,
			Platforms: map[string]string{"88888": "devnet-a"}, NativeCoins: map[string]string{"88888": "avalanche-2"}}}
	}
	// Three days after the recording: its rewards are old enough to price.
	clock := func() time.Time { return time.Unix(1795348000, 0).Add(72 * time.Hour).Add(time.Since(started)) }
	log := logger()
	svc, err := enrich.New(ctx, te.DB, cfg, log, enrich.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	e.svc = svc

	e.mux = api.NewMux(log)
	api.NewGuard(te.DB, api.LimitsConfig{Tiers: map[string]int64{"pro": 1 << 40}, AnonymousCU: 1 << 40, KeyCacheTTL: -1}, log).Install(e.mux)
	evmdata.Register(e.mux, evmdata.Deps{DB: te.DB, Network: te.Network, Pager: te.Pager, Log: log, Enrichment: enrichapi.EVM(svc)})
	primarydata.Register(e.mux, primarydata.Deps{DB: te.DB, Network: te.Network, Pager: te.Pager, Log: log, Prices: svc})
	enrichapi.Register(e.mux, enrichapi.Deps{Service: svc, Network: te.Network, Log: log})
	if e.key, err = keys.Create(ctx, te.DB, "reindexer", "pro", []string{api.ScopeReindex}, 0); err != nil {
		t.Fatal(err)
	}
	if e.plain, err = keys.Create(ctx, te.DB, "reader", "pro", nil, 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		// The registry's two reputations too: it is read on its own poll,
		// and a listing before it showed the Malicious token unfiltered.
		var pending, unknown, reputations int
		if err := te.DB.QueryRowContext(ctx, `SELECT
				(SELECT COUNT(*) FROM evm_nft_tokens WHERE chain_key = 'C') - (SELECT COUNT(*) FROM enrich_nft_jobs WHERE state = 'done'),
				(SELECT COUNT(*) FROM evm_contracts WHERE chain_key = 'C' AND metadata_status = 'unknown'),
				(SELECT COUNT(*) FROM enrich_token_reputation)`).Scan(&pending, &unknown, &reputations); err != nil {
			t.Fatal(err)
		}
		if pending == 0 && unknown == 0 && reputations >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("enrichment unfinished: %d NFT jobs, %d contracts, %d of 2 reputations", pending, unknown, reputations)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return e
}

var started = time.Now()

// moneyAsNumber rewrites Money values for the published schema, which
// types Money.value as a number although its example is the string
// "42.42" and spec 2.1 makes it a decimal string (what we serve); and
// tokenReputation null as in the evm handlers' tests (the schema's enum
// lacks null although the field is nullable).
var reMoney = regexp.MustCompile(`("currencyCode":"[a-z]{3}","value":)"([0-9.]+)"`)

func forSchema(body []byte) []byte {
	body = reMoney.ReplaceAll(body, []byte(`${1}${2}`))
	return bytes.ReplaceAll(body, []byte(`"tokenReputation":null`), []byte(`"tokenReputation":"Benign"`))
}

// do serves a request (with an API key when key is set) and validates the
// answer against the published document.
func (e *env) do(t *testing.T, method, path, key string) (int, []byte, http.Header) {
	t.Helper()
	code, body, hdr := e.serve(t, method, path, key)
	apitest.Load(t).ValidateResponse(t, method, path, code, forSchema(body))
	return code, body, hdr
}

// serve is do without the published document, for requests outside its
// operations (ErrorBody is still checked).
func (e *env) serve(t *testing.T, method, path, key string) (int, []byte, http.Header) {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	if key != "" {
		r.Header.Set("x-data-api-key", key)
	}
	w := httptest.NewRecorder()
	e.mux.ServeHTTP(w, r)
	body := w.Body.Bytes()
	if w.Code >= 400 {
		if err := apitest.CheckErrorBody(w.Code, body); err != nil {
			t.Errorf("%s %s: %v", method, path, err)
		}
	}
	return w.Code, body, w.Header()
}

func (e *env) get(t *testing.T, path string, out any) {
	t.Helper()
	code, body, _ := e.do(t, "GET", path, "")
	if code != 200 {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

type money struct {
	CurrencyCode string `json:"currencyCode"`
	Value        string `json:"value"`
}

type tokenOut struct {
	Address  string `json:"address"`
	Name     string `json:"name"`
	Symbol   string `json:"symbol"`
	ErcType  string `json:"ercType"`
	TokenID  string `json:"tokenId"`
	TokenURI string `json:"tokenUri"`
	Metadata struct {
		IndexStatus string `json:"indexStatus"`
		Updated     int64  `json:"metadataLastUpdatedTimestamp"`
		Name        string `json:"name"`
		Description string `json:"description"`
		ImageURI    string `json:"imageUri"`
		Background  string `json:"background"`
		Attributes  string `json:"attributes"`
		Decimals    *int   `json:"decimals"`
		Properties  string `json:"properties"`
	} `json:"metadata"`
}

// NFT tokens through the API: every recorded URI scheme ends INDEXED with
// its document's fields, the empty ERC-1155 URIs INVALID_TOKEN_URI.
func TestNFTsThroughAPI(t *testing.T) {
	for _, b := range storetest.Backends {
		t.Run(b, func(t *testing.T) {
			e := setup(t, b, false)
			nft, multi := e.contracts["erc721"], e.contracts["erc1155"]
			var l struct{ Tokens []tokenOut }
			e.get(t, "/v1/chains/88888/nfts/collections/"+nft+"/tokens", &l)
			if len(l.Tokens) != 4 {
				t.Fatalf("%d ERC-721 tokens", len(l.Tokens))
			}
			want := map[string]struct{ name, image, attrs string }{
				"1": {"Devnet Collectible #1", "data:image/svg+xml;base64,", `[{"trait_type":"color","value":"red"}]`},
				"2": {"Devnet Collectible #2", "https://devnet.example.org/2.png", `[{"trait_type":"color","value":"blue"}]`},
				"3": {"Devnet Collectible #3", "ipfs://" + cid + "/3.png", ""},
				"4": {"Devnet Collectible #4", "ipfs://" + cid + "/4.png", ""},
			}
			for _, tk := range l.Tokens {
				w := want[tk.TokenID]
				m := tk.Metadata
				if m.IndexStatus != "INDEXED" || m.Name != w.name || !strings.HasPrefix(m.ImageURI, w.image) || m.Attributes != w.attrs ||
					m.Updated == 0 || tk.Name != "Devnet Collectible" || tk.Symbol != "DNFT" {
					t.Errorf("ERC-721 %s: %+v", tk.TokenID, tk)
				}
			}
			var one tokenOut
			e.get(t, "/v1/chains/88888/nfts/collections/"+nft+"/tokens/3", &one)
			if one.Metadata.Background != "00ff00" || one.TokenURI != "ipfs://"+cid+"/3.json" {
				t.Errorf("token 3: %+v", one)
			}
			for id, w := range map[string]struct {
				status, name, props string
				dec                 int
			}{
				"1": {"INDEXED", "Devnet Gold", "", 0}, "2": {"INDEXED", "Devnet Silver", `{"rarity":"common"}`, 2},
				"3": {"INDEXED", "Devnet Bronze", "", 0}, "4": {"INVALID_TOKEN_URI", "", "", -1}, "5": {"INVALID_TOKEN_URI", "", "", -1},
			} {
				var tk tokenOut
				e.get(t, "/v1/chains/88888/nfts/collections/"+multi+"/tokens/"+id, &tk)
				m := tk.Metadata
				dec := -1
				if m.Decimals != nil {
					dec = *m.Decimals
				}
				if m.IndexStatus != w.status || m.Name != w.name || m.Properties != w.props || dec != w.dec || m.Updated == 0 {
					t.Errorf("ERC-1155 %s: %+v", id, tk)
				}
			}
			var c struct {
				CollectibleBalances []tokenOut `json:"collectibleBalances"`
			}
			e.get(t, "/v1/chains/88888/addresses/"+dave+"/balances:listCollectibles", &c)
			for _, tk := range c.CollectibleBalances {
				if tk.Metadata.IndexStatus == "UNINDEXED" || tk.Metadata.IndexStatus == "" {
					t.Errorf("collectible %s/%s: %+v", tk.Address, tk.TokenID, tk.Metadata)
				}
			}
		})
	}
}

// Contract metadata: the enrichment's names and types and the registry's
// curated fields.
func TestContractsThroughAPI(t *testing.T) {
	for _, b := range storetest.Backends {
		t.Run(b, func(t *testing.T) {
			e := setup(t, b, false)
			var devt map[string]any
			e.get(t, "/v1/chains/88888/addresses/"+e.contracts["erc20"], &devt)
			links, _ := json.Marshal(devt["resourceLinks"])
			logo, _ := devt["logoAsset"].(map[string]any)
			if devt["name"] != "Devnet Token" || devt["symbol"] != "DEVT" || devt["decimals"] != 18.0 || devt["ercType"] != "ERC-20" ||
				devt["description"] != "The devnet's ERC-20" || devt["officialSite"] != "https://devnet.example.org" ||
				devt["email"] != "team@devnet.example.org" || devt["color"] != "#E84142" || logo["imageUri"] != "https://devnet.example.org/devt.png" ||
				string(links) != `[{"type":"Website","url":"https://devnet.example.org"},{"type":"Github","url":"https://github.com/example/devnet"}]` ||
				fmt.Sprint(devt["tags"]) != "[test erc20]" {
				t.Errorf("DevToken: %v", devt)
			}
			for name, w := range map[string]struct{ name, symbol, typ string }{
				"erc721": {"Devnet Collectible", "DNFT", "ERC-721"}, "erc1155": {"Devnet Multi Token", "DMT", "ERC-1155"},
				"factoryChild": {"Factory Token", "FTK", "ERC-20"}, "factory": {"Token Factory", "", "UNKNOWN"},
			} {
				var m map[string]any
				e.get(t, "/v1/chains/88888/addresses/"+e.contracts[name], &m)
				sym, _ := m["symbol"].(string)
				if m["name"] != w.name || sym != w.symbol || m["ercType"] != w.typ {
					t.Errorf("%s: %v", name, m)
				}
				if name == "factory" && (len(m["tags"].([]any)) != 0 || m["description"] != nil) {
					t.Errorf("factory curated beyond its name: %v", m)
				}
			}
		})
	}
}

type erc20Out struct {
	Address         string  `json:"address"`
	Symbol          string  `json:"symbol"`
	Decimals        int     `json:"decimals"`
	LogoURI         string  `json:"logoUri"`
	Balance         string  `json:"balance"`
	Price           *money  `json:"price"`
	BalanceValue    *money  `json:"balanceValue"`
	TokenReputation *string `json:"tokenReputation"`
}

type nativeOut struct {
	Balance      string `json:"balance"`
	Decimals     int    `json:"decimals"`
	Price        *money `json:"price"`
	BalanceValue *money `json:"balanceValue"`
}

// value is balance / 10^decimals × price to 6 places, computed here.
func value(t *testing.T, balance string, decimals int, price string) string {
	t.Helper()
	b, ok1 := new(big.Rat).SetString(balance)
	p, ok2 := new(big.Rat).SetString(price)
	if !ok1 || !ok2 {
		t.Fatalf("value of %s × %s", balance, price)
	}
	v := new(big.Rat).Quo(b, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)), nil)))
	return strings.TrimSuffix(strings.TrimRight(v.Mul(v, p).FloatString(6), "0"), ".")
}

// Balances with prices from the CoinGecko stand-in: price and balanceValue
// in the asked currency; the spam filter hides the registry's Malicious
// token unless filterSpamTokens=false; reputations and the curated logo
// show. Without a provider the price fields are absent.
func TestBalancesThroughAPI(t *testing.T) {
	for _, b := range storetest.Backends {
		t.Run(b, func(t *testing.T) {
			e := setup(t, b, true)
			devt, ftk := e.contracts["erc20"], e.contracts["factoryChild"]
			var l struct {
				Native nativeOut  `json:"nativeTokenBalance"`
				Tokens []erc20Out `json:"erc20TokenBalances"`
			}
			e.get(t, "/v1/chains/88888/addresses/"+dave+"/balances:listErc20?currency=eur", &l)
			if len(l.Tokens) != 1 || l.Tokens[0].Address != devt {
				t.Fatalf("filtered listing: %+v", l.Tokens)
			}
			tk := l.Tokens[0]
			if tk.Price == nil || *tk.Price != (money{"eur", "1.25"}) || tk.BalanceValue == nil ||
				tk.BalanceValue.Value != value(t, tk.Balance, 18, "1.25") || tk.TokenReputation == nil || *tk.TokenReputation != "Benign" ||
				tk.LogoURI != "https://devnet.example.org/devt.png" {
				t.Errorf("DevToken: %+v price %v value %v", tk, tk.Price, tk.BalanceValue)
			}
			if l.Native.Price == nil || *l.Native.Price != (money{"eur", "32.5"}) || l.Native.BalanceValue == nil ||
				l.Native.BalanceValue.Value != value(t, l.Native.Balance, 18, "32.5") {
				t.Errorf("native: %+v", l.Native)
			}
			e.get(t, "/v1/chains/88888/addresses/"+dave+"/balances:listErc20?filterSpamTokens=false", &l)
			if len(l.Tokens) != 2 || l.Tokens[1].Address != ftk || l.Tokens[1].TokenReputation == nil || *l.Tokens[1].TokenReputation != "Malicious" ||
				l.Tokens[1].Price == nil || l.Tokens[1].Price.CurrencyCode != "usd" || l.Tokens[1].Price.Value != "0.55" {
				t.Errorf("unfiltered listing: %+v", l.Tokens)
			}
			// Pagination over the filter: one token per page, never the spam one.
			e.get(t, "/v1/chains/88888/addresses/"+dave+"/balances:listErc20?pageSize=1", &l)
			if len(l.Tokens) != 1 || l.Tokens[0].Address != devt {
				t.Errorf("page 1: %+v", l.Tokens)
			}
			var n struct {
				Native nativeOut `json:"nativeTokenBalance"`
			}
			e.get(t, "/v1/chains/88888/addresses/"+dave+"/balances:getNative?currency=jpy", &n)
			if n.Native.Price == nil || *n.Native.Price != (money{"jpy", "5400"}) || n.Native.BalanceValue.Value != value(t, n.Native.Balance, 18, "5400") {
				t.Errorf("getNative: %+v", n.Native)
			}
			e.get(t, "/v1/chains/88888/addresses/"+dave+"/balances:getNative?blockNumber=20", &n)
			if n.Native.Price == nil || n.Native.Price.CurrencyCode != "usd" {
				t.Errorf("getNative at block 20: %+v", n.Native)
			}
		})
	}
}

// No provider: prices are omitted, not zero; reputations still apply.
func TestNoPricesThroughAPI(t *testing.T) {
	e := setup(t, "sqlite", false)
	code, body, _ := e.do(t, "GET", "/v1/chains/88888/addresses/"+dave+"/balances:listErc20?filterSpamTokens=false", "")
	if code != 200 || bytes.Contains(body, []byte(`"price"`)) || bytes.Contains(body, []byte(`"balanceValue"`)) ||
		!bytes.Contains(body, []byte(`"tokenReputation":"Malicious"`)) {
		t.Errorf("%d %s", code, body)
	}
	code, body, _ = e.do(t, "GET", "/v1/networks/testnet/rewards?nodeIds=NodeID-J8u5V9afjBJZah9aYANnYTsdQZSoADEDC", "")
	if code != 200 || bytes.Contains(body, []byte("historicalPrice")) {
		t.Errorf("rewards: %d %s", code, body)
	}
}

// Rewards carry the AVAX price of their day.
func TestRewardPricesThroughAPI(t *testing.T) {
	for _, b := range storetest.Backends {
		t.Run(b, func(t *testing.T) {
			e := setup(t, b, true)
			var l struct {
				HistoricalRewards []struct {
					Reward struct {
						AssetID         string `json:"assetId"`
						HistoricalPrice *money `json:"historicalPrice"`
					} `json:"reward"`
				} `json:"historicalRewards"`
			}
			e.get(t, "/v1/networks/testnet/rewards?nodeIds=NodeID-J8u5V9afjBJZah9aYANnYTsdQZSoADEDC&currency=eur", &l)
			if len(l.HistoricalRewards) == 0 {
				t.Fatal("no rewards for alpha")
			}
			for _, r := range l.HistoricalRewards {
				if r.Reward.AssetID != e.avax || r.Reward.HistoricalPrice == nil || *r.Reward.HistoricalPrice != (money{"eur", "27.25"}) {
					t.Errorf("reward: %+v %v", r.Reward, r.Reward.HistoricalPrice)
				}
			}
		})
	}
}

// POST .../tokens/{tokenId}:reindex: a key with the reindex scope queues a
// refetch (201) whose new document the API then shows; once per token per
// hour (429 with Retry-After); 401 without a key, 403 without the scope,
// 404 for tokens and chains not indexed, 400 for malformed ids.
func TestReindexRoute(t *testing.T) {
	for _, b := range storetest.Backends {
		t.Run(b, func(t *testing.T) {
			e := setup(t, b, false)
			nft := e.contracts["erc721"]
			path := "/v1/chains/88888/nfts/collections/" + nft + "/tokens/2:reindex"
			for _, c := range []struct {
				key  string
				code int
			}{{"", 401}, {e.plain, 403}, {"not-a-key", 401}} {
				if code, body, _ := e.do(t, "POST", path, c.key); code != c.code {
					t.Errorf("key %q: %d %s, want %d", c.key, code, body, c.code)
				}
			}
			e.host.set("/nft/2.json", `{"name":"Devnet Collectible #2 (revealed)","attributes":[{"trait_type":"eyes","value":"laser"}]}`)
			code, body, _ := e.do(t, "POST", "/v1/chains/c-chain/nfts/collections/0x"+strings.ToUpper(nft[2:])+"/tokens/02:reindex", e.key)
			if code != 201 || strings.TrimSpace(string(body)) != "{}" {
				t.Fatalf("reindex: %d %s", code, body)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				var tk tokenOut
				e.get(t, "/v1/chains/88888/nfts/collections/"+nft+"/tokens/2", &tk)
				if tk.Metadata.Name == "Devnet Collectible #2 (revealed)" && tk.Metadata.Attributes == `[{"trait_type":"eyes","value":"laser"}]` {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after reindex: %+v", tk.Metadata)
				}
				time.Sleep(10 * time.Millisecond)
			}
			code, body, hdr := e.do(t, "POST", path, e.key)
			if code != 429 || hdr.Get("Retry-After") == "" || !strings.Contains(string(body), "reindexed recently") {
				t.Errorf("second reindex: %d %s %v", code, body, hdr)
			}
			for _, c := range []struct {
				path string
				code int
				msg  string
			}{
				{"/v1/chains/88888/nfts/collections/" + nft + "/tokens/3:reindex", 201, ""},
				{"/v1/chains/88888/nfts/collections/" + nft + "/tokens/99:reindex", 404, "not indexed"},
				{"/v1/chains/88888/nfts/collections/" + e.contracts["erc20"] + "/tokens/1:reindex", 404, "not indexed"},
				{"/v1/chains/43114/nfts/collections/" + nft + "/tokens/2:reindex", 404, "43114"},
				{"/v1/chains/88888/nfts/collections/" + nft + "/tokens/-1:reindex", 400, "tokenId"},
				{"/v1/chains/88888/nfts/collections/" + nft + "/tokens/0x2:reindex", 400, "tokenId"},
				{"/v1/chains/88888/nfts/collections/0x12/tokens/2:reindex", 400, "address"},
			} {
				code, body, _ := e.do(t, "POST", c.path, e.key)
				if code != c.code || !strings.Contains(apitest.ErrorMessage(body), c.msg) {
					t.Errorf("POST %s: %d %s, want %d naming %q", c.path, code, body, c.code, c.msg)
				}
			}
			// Not operations of the published API.
			if code, body, hdr := e.serve(t, "POST", "/v1/chains/88888/nfts/collections/"+nft+"/tokens/2", e.key); code != 405 || hdr.Get("Allow") != "GET, HEAD" {
				t.Errorf("POST on a token: %d %s %v", code, body, hdr)
			}
			if code, body, _ := e.serve(t, "POST", "/v1/chains/88888/nfts/collections/"+nft+"/tokens/2:refresh", e.key); code != 404 ||
				!strings.Contains(apitest.ErrorMessage(body), ":reindex") {
				t.Errorf("POST :refresh: %d %s", code, body)
			}
			// GET of the token is the data route's, untouched.
			if code, body, _ := e.do(t, "GET", "/v1/chains/88888/nfts/collections/"+nft+"/tokens/2", ""); code != 200 {
				t.Errorf("GET token: %d %s", code, body)
			}
		})
	}
}
