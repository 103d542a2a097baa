package enrich

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"gopkg.in/yaml.v3"
)

// StaticPrices is the price provider of air-gapped installs: prices from
// an operator file (YAML or JSON), reloaded when it changes.
//
//	prices:
//	  - chainId: "43114"       # EVM chain id (or chain key); "primary" for primary-network assets other than AVAX
//	    token: ""              # ERC-20 address (or a primary-network asset id); empty: the native token (AVAX)
//	    current: {usd: "35.12", eur: "32.80"}
//	    daily:                 # UTC days
//	      "2026-11-20": {usd: "34.90", eur: "32.55"}
//
// Values are non-negative decimals (strings or numbers); currencies are
// the 14 published codes.
type StaticPrices struct {
	table atomic.Pointer[staticTable]
}

type staticTable struct {
	current map[Asset]Quotes
	daily   map[histKey]Quotes
}

// Name implements PriceProvider.
func (p *StaticPrices) Name() string { return "static" }

// Current implements PriceProvider.
func (p *StaticPrices) Current(_ context.Context, assets []Asset) (map[Asset]Quotes, error) {
	t := p.table.Load()
	out := map[Asset]Quotes{}
	if t == nil {
		return out, nil
	}
	for _, a := range assets {
		if q, ok := t.current[a]; ok {
			out[a] = q
		}
	}
	return out, nil
}

// Historical implements PriceProvider.
func (p *StaticPrices) Historical(_ context.Context, a Asset, day time.Time) (Quotes, error) {
	t := p.table.Load()
	if t == nil {
		return nil, ErrNoPrice
	}
	q, ok := t.daily[histKey{a: a, day: day.UTC().Format(time.DateOnly)}]
	if !ok {
		return nil, ErrNoPrice
	}
	return q, nil
}

// load parses a prices file and swaps it in; a bad file changes nothing.
func (p *StaticPrices) load(data []byte, chainIDs map[string]string) error {
	var doc struct {
		Prices *[]struct {
			ChainID string                       `yaml:"chainId"`
			Token   string                       `yaml:"token"`
			Current map[string]string            `yaml:"current"`
			Daily   map[string]map[string]string `yaml:"daily"`
		} `yaml:"prices"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("prices file: %w", err)
	}
	if doc.Prices == nil {
		return errors.New("prices file: no prices key (write \"prices: []\" for none)")
	}
	t := &staticTable{current: map[Asset]Quotes{}, daily: map[histKey]Quotes{}}
	var errs []error
	for i, e := range *doc.Prices {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("prices file: prices[%d]: %s", i, fmt.Sprintf(format, args...)))
		}
		chain := strings.TrimSpace(e.ChainID)
		if id, ok := chainIDs[chain]; ok {
			chain = id
		} else if chain != PrimaryNetwork && !reChainID.MatchString(chain) {
			bad("chainId %q is neither an EVM chain id, an indexed chain nor %q", clip(chain), PrimaryNetwork)
			continue
		}
		tok := strings.TrimSpace(e.Token)
		if chain != PrimaryNetwork {
			if tok != "" && !reAddress.MatchString(tok) {
				bad("token %q is not an EVM address", clip(tok))
				continue
			}
			tok = strings.ToLower(tok)
		} else if tok == "" {
			bad("primary-network entries name an asset id (AVAX is priced as the C-chain's native token)")
			continue
		}
		a := Asset{Chain: chain, Token: tok}
		if _, dup := t.current[a]; dup {
			bad("asset listed twice")
			continue
		}
		conv := func(where string, m map[string]string) Quotes {
			q := Quotes{}
			for cur, v := range m {
				if !currencySet[cur] {
					bad("%s: currency %q is not one of %s", where, clip(cur), strings.Join(Currencies, ", "))
					continue
				}
				d, ok := normDecimal(v)
				if !ok {
					bad("%s: %s value %q is not a non-negative decimal", where, cur, clip(v))
					continue
				}
				q[cur] = d
			}
			return q
		}
		t.current[a] = conv("current", e.Current)
		for day, m := range e.Daily {
			if _, err := time.Parse(time.DateOnly, day); err != nil {
				bad("daily: %q is not a YYYY-MM-DD day", clip(day))
				continue
			}
			t.daily[histKey{a: a, day: day}] = conv("daily "+day, m)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	p.table.Store(t)
	return nil
}
