package enrich

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// CoinGeckoConfig configures the CoinGecko-compatible provider. It speaks
// the CoinGecko API v3: GET /simple/price (native tokens and registry coin
// ids), /simple/token_price/{platform} (ERC-20s by contract), and
// /coins/{id}/history (daily prices; a token's coin id comes from
// /coins/{platform}/contract/{address}).
type CoinGeckoConfig struct {
	// BaseURL is the API root. Default https://api.coingecko.com/api/v3
	// (https://pro-api.coingecko.com/api/v3 for paid plans).
	BaseURL string
	// APIKey is sent in KeyHeader when set.
	APIKey string
	// KeyHeader defaults to x-cg-pro-api-key for a pro-api host, else
	// x-cg-demo-api-key.
	KeyHeader string
	// RequestsPerMinute is the provider's own rate limit, never exceeded:
	// a request finding it spent leaves its prices out. A 429 pauses all
	// requests for its Retry-After (default 60s). Default 30 (the demo plan).
	RequestsPerMinute int
	// MaxAddresses bounds contract addresses per token_price request.
	// Default 30.
	MaxAddresses int
	// Timeout bounds one HTTP request. Default 10s.
	Timeout time.Duration
	// Platforms maps EVM chain ids to CoinGecko asset platform ids.
	// Default {"43114": "avalanche"}.
	Platforms map[string]string
	// NativeCoins maps EVM chain ids to the coin id of their native token.
	// Default {"43114": "avalanche-2"} (AVAX on mainnet; test networks have
	// no price). Primary-network AVAX is priced as the C-chain's native token.
	NativeCoins map[string]string
	// HTTPClient sends the requests (default: a client with Timeout).
	HTTPClient *http.Client
}

// WithDefaults fills zero fields.
func (c CoinGeckoConfig) WithDefaults() CoinGeckoConfig {
	c.BaseURL = cmp.Or(c.BaseURL, "https://api.coingecko.com/api/v3")
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.KeyHeader == "" {
		c.KeyHeader = "x-cg-demo-api-key"
		if u, err := url.Parse(c.BaseURL); err == nil && strings.HasPrefix(u.Hostname(), "pro-api.") {
			c.KeyHeader = "x-cg-pro-api-key"
		}
	}
	c.RequestsPerMinute = cmp.Or(c.RequestsPerMinute, 30)
	c.MaxAddresses = cmp.Or(c.MaxAddresses, 30)
	c.Timeout = cmp.Or(c.Timeout, 10*time.Second)
	if c.Platforms == nil {
		c.Platforms = map[string]string{"43114": "avalanche"}
	}
	if c.NativeCoins == nil {
		c.NativeCoins = map[string]string{"43114": "avalanche-2"}
	}
	return c
}

// CoinGecko is the CoinGecko-compatible provider.
type CoinGecko struct {
	cfg    CoinGeckoConfig
	client *http.Client
	bucket *tokenBucket
	// coinOf, when set, gives a registry coin id for a token.
	coinOf func(Asset) string

	mu    sync.Mutex
	coins map[Asset]string // token -> coin id resolved by contract ("" none)
}

// NewCoinGecko returns the provider; now is its clock (nil: time.Now).
func NewCoinGecko(cfg CoinGeckoConfig, now func() time.Time) (*CoinGecko, error) {
	cfg = cfg.WithDefaults()
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("coingecko: base URL %q: want an http(s) URL", cfg.BaseURL)
	}
	if cfg.RequestsPerMinute < 1 || cfg.MaxAddresses < 1 {
		return nil, errors.New("coingecko: requests per minute and max addresses must be positive")
	}
	if now == nil {
		now = time.Now
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: cfg.Timeout}
	}
	burst := min(cfg.RequestsPerMinute, 5)
	return &CoinGecko{cfg: cfg, client: hc, bucket: newTokenBucket(cfg.RequestsPerMinute, burst, now),
		coins: map[Asset]string{}}, nil
}

// Name implements PriceProvider.
func (c *CoinGecko) Name() string { return "coingecko" }

var vsCurrencies = strings.Join(Currencies, ",")

// Current implements PriceProvider.
func (c *CoinGecko) Current(ctx context.Context, assets []Asset) (map[Asset]Quotes, error) {
	out := map[Asset]Quotes{}
	byCoin := map[string][]Asset{}
	byPlatform := map[string][]Asset{}
	for _, a := range assets {
		if id := c.coinID(a); id != "" {
			byCoin[id] = append(byCoin[id], a)
			continue
		}
		if a.Token != "" && a.Chain != PrimaryNetwork {
			if p := c.cfg.Platforms[a.Chain]; p != "" {
				byPlatform[p] = append(byPlatform[p], a)
			}
		}
	}
	var errs []error
	if len(byCoin) > 0 {
		ids := make([]string, 0, len(byCoin))
		for id := range byCoin {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for len(ids) > 0 {
			n := min(len(ids), 100)
			var res map[string]map[string]json.Number
			err := c.get(ctx, "/simple/price", url.Values{"ids": {strings.Join(ids[:n], ",")}, "vs_currencies": {vsCurrencies}}, &res)
			if err != nil {
				errs = append(errs, err)
				break
			}
			for _, id := range ids[:n] {
				if q := quotes(res[id]); q != nil {
					for _, a := range byCoin[id] {
						out[a] = q
					}
				}
			}
			ids = ids[n:]
		}
	}
	platforms := make([]string, 0, len(byPlatform))
	for p := range byPlatform {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)
	for _, p := range platforms {
		list := byPlatform[p]
		for len(list) > 0 {
			n := min(len(list), c.cfg.MaxAddresses)
			addrs := make([]string, n)
			for i, a := range list[:n] {
				addrs[i] = a.Token
			}
			var res map[string]map[string]json.Number
			err := c.get(ctx, "/simple/token_price/"+url.PathEscape(p),
				url.Values{"contract_addresses": {strings.Join(addrs, ",")}, "vs_currencies": {vsCurrencies}}, &res)
			if err != nil {
				errs = append(errs, err)
				break
			}
			lower := make(map[string]map[string]json.Number, len(res))
			for k, v := range res {
				lower[strings.ToLower(k)] = v
			}
			for _, a := range list[:n] {
				if q := quotes(lower[a.Token]); q != nil {
					out[a] = q
				}
			}
			list = list[n:]
		}
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Historical implements PriceProvider.
func (c *CoinGecko) Historical(ctx context.Context, a Asset, day time.Time) (Quotes, error) {
	id := c.coinID(a)
	if id == "" && a.Token != "" && a.Chain != PrimaryNetwork {
		var err error
		if id, err = c.coinByContract(ctx, a); err != nil {
			return nil, err
		}
	}
	if id == "" {
		return nil, ErrNoPrice
	}
	var res struct {
		MarketData *struct {
			CurrentPrice map[string]json.Number `json:"current_price"`
		} `json:"market_data"`
	}
	err := c.get(ctx, "/coins/"+url.PathEscape(id)+"/history",
		url.Values{"date": {day.UTC().Format("02-01-2006")}, "localization": {"false"}}, &res)
	if err != nil {
		return nil, err
	}
	if res.MarketData == nil {
		return nil, ErrNoPrice
	}
	q := quotes(res.MarketData.CurrentPrice)
	if q == nil {
		return nil, ErrNoPrice
	}
	return q, nil
}

// coinID is the coin id of a native token or a registry-listed token.
func (c *CoinGecko) coinID(a Asset) string {
	if a.Token == "" {
		return c.cfg.NativeCoins[a.Chain]
	}
	if c.coinOf != nil {
		return c.coinOf(a)
	}
	return ""
}

// coinByContract resolves (and remembers) a token's coin id.
func (c *CoinGecko) coinByContract(ctx context.Context, a Asset) (string, error) {
	c.mu.Lock()
	id, ok := c.coins[a]
	c.mu.Unlock()
	if ok {
		return id, nil
	}
	p := c.cfg.Platforms[a.Chain]
	if p == "" {
		return "", ErrNoPrice
	}
	var res struct {
		ID string `json:"id"`
	}
	err := c.get(ctx, "/coins/"+url.PathEscape(p)+"/contract/"+url.PathEscape(a.Token), nil, &res)
	var he *httpStatusError
	if errors.As(err, &he) && he.code == http.StatusNotFound {
		err, res.ID = nil, ""
	}
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	if len(c.coins) > maxCacheEntries {
		clear(c.coins)
	}
	c.coins[a] = res.ID
	c.mu.Unlock()
	return res.ID, nil
}

type httpStatusError struct {
	code int
	path string
}

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("coingecko %s: HTTP %d", e.path, e.code)
}

const maxProviderBody = 4 << 20

// get sends one request within the rate limit and decodes its JSON answer.
func (c *CoinGecko) get(ctx context.Context, path string, q url.Values, out any) error {
	if !c.bucket.allow() {
		return ErrRateLimited
	}
	u := c.cfg.BaseURL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("coingecko %s: %w", path, err)
	}
	req.Header.Set("Accept", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set(c.cfg.KeyHeader, c.cfg.APIKey)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("coingecko %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxProviderBody+1))
	if err != nil {
		return fmt.Errorf("coingecko %s: %w", path, err)
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		d := retryAfter(resp.Header.Get("Retry-After"), time.Now())
		if d <= 0 {
			d = time.Minute
		}
		c.bucket.pause(d)
		return fmt.Errorf("%w (HTTP 429 from %s; paused %s)", ErrRateLimited, path, d)
	case resp.StatusCode != http.StatusOK:
		return &httpStatusError{code: resp.StatusCode, path: path}
	case len(body) > maxProviderBody:
		return fmt.Errorf("coingecko %s: answer larger than %d bytes", path, maxProviderBody)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("coingecko %s: %w", path, err)
	}
	return nil
}

// quotes keeps the known currencies with valid non-negative values.
func quotes(m map[string]json.Number) Quotes {
	var q Quotes
	for cur, v := range m {
		cur = strings.ToLower(cur)
		if !currencySet[cur] {
			continue
		}
		d, ok := normDecimal(v.String())
		if !ok {
			continue
		}
		if q == nil {
			q = Quotes{}
		}
		q[cur] = d
	}
	return q
}
