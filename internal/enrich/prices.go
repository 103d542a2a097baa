package enrich

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Currencies is the published CurrencyCode set (spec 2.17).
var Currencies = []string{"usd", "eur", "aud", "cad", "chf", "clp", "cny", "czk", "dkk", "gbp", "hkd", "huf", "jpy", "nzd"}

var currencySet = func() map[string]bool {
	m := map[string]bool{}
	for _, c := range Currencies {
		m[c] = true
	}
	return m
}()

// PrimaryNetwork is Asset.Chain of primary-network assets other than AVAX
// (AVAX itself is priced as the C-chain's native token).
const PrimaryNetwork = "primary"

// Asset names what a price is of.
type Asset struct {
	// Chain is an EVM chain id in decimal ("43114"), or PrimaryNetwork.
	Chain string
	// Token is an ERC-20 contract (0x-lowercase) or, on PrimaryNetwork, an
	// asset id (cb58); "" is the chain's native token.
	Token string
}

// Quotes are an asset's prices by currency code (lowercase), as decimal
// strings.
type Quotes map[string]string

// PriceProvider is a source of prices.
type PriceProvider interface {
	// Name identifies the provider in the historical price cache.
	Name() string
	// Current returns the current quotes of the assets it can price (in
	// any of Currencies); assets it cannot price are absent.
	Current(ctx context.Context, assets []Asset) (map[Asset]Quotes, error)
	// Historical returns the asset's quotes on day (a UTC date), or
	// ErrNoPrice.
	Historical(ctx context.Context, a Asset, day time.Time) (Quotes, error)
}

var (
	// ErrNoPrice says the provider has no price for the asset (or day).
	ErrNoPrice = errors.New("no price")
	// ErrRateLimited says the provider's own rate limit is spent for now;
	// the price is left out rather than waited for.
	ErrRateLimited = errors.New("price provider rate limit reached")
)

var reDecimal = regexp.MustCompile(`^[0-9]{1,40}(\.[0-9]{1,40})?$`)

// normDecimal renders a non-negative number (JSON number text, possibly
// with an exponent) as a plain decimal.
func normDecimal(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if reDecimal.MatchString(s) {
		return s, true
	}
	if len(s) > 64 {
		return "", false
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || r.Sign() < 0 {
		return "", false
	}
	return trimZeros(r.FloatString(18)), true
}

// trimZeros drops trailing fractional zeros ("1.500" -> "1.5", "2.000" -> "2").
func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// priceCache holds current quotes (and their absence) for CurrentTTL.
type priceCache struct {
	mu   sync.Mutex
	cur  map[Asset]curEntry
	miss map[histKey]time.Time // historical lookups without a price, until
}

type curEntry struct {
	q       Quotes // nil: the provider has no price
	expires time.Time
}

type histKey struct {
	a   Asset
	day string
}

const maxCacheEntries = 100_000

// CurrentPrices returns the current price in currency of each token of the
// EVM chain evmChainID that has one, keyed by the token's 0x-lowercase
// address ("" is the native token), as decimal strings. Without a provider, or when it fails or is rate limited, prices
// are absent: never zero.
func (s *Service) CurrentPrices(ctx context.Context, evmChainID string, tokens []string, currency string) map[string]string {
	if s.prices == nil || len(tokens) == 0 || !currencySet[currency] {
		return nil
	}
	now := s.now()
	out := map[string]string{}
	var miss []Asset
	s.pcache.mu.Lock()
	for _, t := range tokens {
		a := Asset{Chain: evmChainID, Token: strings.ToLower(t)}
		if e, ok := s.pcache.cur[a]; ok && now.Before(e.expires) {
			if v, ok := e.q[currency]; ok {
				out[a.Token] = v
			}
			continue
		}
		miss = append(miss, a)
	}
	s.pcache.mu.Unlock()
	if len(miss) == 0 {
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Prices.Timeout)
	defer cancel()
	got, err := s.prices.Current(ctx, miss)
	if err != nil {
		s.log.Debug("current prices unavailable", "provider", s.prices.Name(), "chain", evmChainID, "err", err)
		return out
	}
	exp := now.Add(s.cfg.Prices.CurrentTTL)
	s.pcache.mu.Lock()
	if len(s.pcache.cur) > maxCacheEntries {
		clear(s.pcache.cur)
	}
	for _, a := range miss {
		q := got[a]
		s.pcache.cur[a] = curEntry{q: q, expires: exp}
		if v, ok := q[currency]; ok {
			out[a.Token] = v
		}
	}
	s.pcache.mu.Unlock()
	return out
}

// HistoricalPrice returns the price in currency of the primary-network
// asset assetID on the UTC day of at, when at is more than 24 hours ago
// (the published rule for reward prices) and the provider knows it. Daily
// prices are kept in enrich_price_history.
func (s *Service) HistoricalPrice(ctx context.Context, assetID, currency string, at time.Time) (string, bool) {
	if s.prices == nil || !currencySet[currency] {
		return "", false
	}
	now := s.now()
	if now.Sub(at) < 24*time.Hour {
		return "", false
	}
	a := Asset{Chain: PrimaryNetwork, Token: assetID}
	if assetID != "" && assetID == s.cfg.AVAXAssetID {
		c, ok := s.chains["C"]
		if !ok {
			return "", false
		}
		a = Asset{Chain: c.EVMChainID}
	}
	return s.historical(ctx, a, currency, at)
}

// historical looks up one daily price: the database, then the provider.
func (s *Service) historical(ctx context.Context, a Asset, currency string, at time.Time) (string, bool) {
	day := at.UTC().Format(time.DateOnly)
	name := s.prices.Name()
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM enrich_price_history
		WHERE provider = $1 AND asset_chain = $2 AND asset_token = $3 AND currency = $4 AND day = $5`,
		name, a.Chain, a.Token, currency, day).Scan(&v)
	if err == nil {
		return v, true
	}
	if !errors.Is(err, sql.ErrNoRows) {
		s.log.Warn("historical price cache", "err", err)
		return "", false
	}
	now := s.now()
	k := histKey{a: a, day: day}
	s.pcache.mu.Lock()
	until, missed := s.pcache.miss[k]
	s.pcache.mu.Unlock()
	if missed && now.Before(until) {
		return "", false
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Prices.Timeout)
	defer cancel()
	dayT, _ := time.Parse(time.DateOnly, day)
	q, err := s.prices.Historical(ctx, a, dayT)
	if err != nil {
		if errors.Is(err, ErrNoPrice) {
			s.pcache.mu.Lock()
			if len(s.pcache.miss) > maxCacheEntries {
				clear(s.pcache.miss)
			}
			s.pcache.miss[k] = now.Add(s.cfg.Prices.CurrentTTL)
			s.pcache.mu.Unlock()
		} else {
			s.log.Debug("historical price unavailable", "provider", name, "asset", a, "day", day, "err", err)
		}
		return "", false
	}
	for cur, val := range q {
		if !currencySet[cur] {
			continue
		}
		if _, err := s.db.ExecContext(ctx, `INSERT INTO enrich_price_history (provider, asset_chain, asset_token, currency, day, value, fetched_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`, name, a.Chain, a.Token, cur, day, val, now.Unix()); err != nil {
			s.log.Warn("historical price cache", "err", fmt.Errorf("store: %w", err))
			break
		}
	}
	v, ok := q[currency]
	return v, ok
}
