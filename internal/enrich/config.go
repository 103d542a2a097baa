package enrich

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/permafrost-dev/permafrost/internal/source"
)

// Caller sends JSON-RPC batches to an EVM node (*source.EVM does).
type Caller interface {
	BatchCall(ctx context.Context, elems []source.BatchElem) error
}

// Chain is one indexed EVM chain to enrich.
type Chain struct {
	// Key is the chain's key in the index ("C", or an L1's EVM chain id).
	Key string
	// EVMChainID is its EVM chain id in decimal ("43114"); the registry and
	// the price providers name chains by it.
	EVMChainID string
	// RPC answers eth_call (and, when the node offers it,
	// debug_traceBlockByNumber) for the chain.
	RPC Caller
}

// Config configures the Service. Zero fields take the defaults documented
// on each (WithDefaults); a zero Config enriches nothing but serves the
// registry-free, price-free answers.
type Config struct {
	// Chains are the EVM chains whose contracts and NFTs are enriched.
	Chains []Chain
	// AVAXAssetID is the primary network's AVAX asset id (cb58): rewards
	// paid in it are priced as the native token of the C-chain (the chain
	// with Key "C"), which is AVAX too.
	AVAXAssetID string

	Tokens   TokenConfig
	NFT      NFTConfig
	Trace    TraceConfig
	Registry RegistryConfig
	Prices   PriceConfig
}

// TokenConfig configures the token-metadata worker: ERC type detection and
// name, symbol, decimals of every contract the index finds, read with
// batched eth_call at the chain's indexed tip.
type TokenConfig struct {
	// Disabled turns the worker off.
	Disabled bool
	// Interval is how often contracts without metadata are looked for.
	// Default 5s.
	Interval time.Duration
	// Batch is the number of contracts per JSON-RPC batch (8 calls each).
	// Default 25, at most 100.
	Batch int
	// MaxAttempts is how many times a contract whose calls fail at the
	// node (transport errors, missing state) is tried before it is given up
	// (state failed, fields NULL). Default 8. Reverts and garbage answers
	// are definitive at once.
	MaxAttempts int
	// RetryBase and RetryCap bound the exponential backoff between those
	// attempts. Default 30s and 1h.
	RetryBase, RetryCap time.Duration
}

// TraceConfig configures the factory-deployer step: a contract first seen
// emitting a log inside another contract's execution gets its creating
// transaction, sender and factory from debug_traceBlockByNumber with the
// callTracer. A node without that method (the usual public RPC) leaves
// deploymentDetails of such contracts absent; the method is asked again
// every Recheck in case the operator enables it.
type TraceConfig struct {
	// Disabled turns the step off.
	Disabled bool
	// Interval is how often untraced contracts are looked for. Default 30s.
	Interval time.Duration
	// Recheck is how long a node that does not offer
	// debug_traceBlockByNumber is left alone. Default 1h.
	Recheck time.Duration
	// MaxAttempts bounds the attempts per contract when tracing fails
	// (e.g. the block's state was pruned). Default 5.
	MaxAttempts int
	// RetryBase and RetryCap bound the backoff between them. Default 1m, 6h.
	RetryBase, RetryCap time.Duration
}

// NFTConfig configures the NFT metadata fetcher.
type NFTConfig struct {
	// Disabled turns the fetcher off (tokens stay UNINDEXED).
	Disabled bool
	// Workers is the number of tokens fetched at once. Default 8.
	Workers int
	// PerHost bounds concurrent requests to one host (the IPFS gateway
	// counts as one host). Default 4.
	PerHost int
	// Poll is how often due jobs and new tokens are looked for (a
	// :reindex request wakes the fetcher at once). Default 2s.
	Poll time.Duration
	// Batch is the number of jobs claimed (and tokenURI/uri calls batched)
	// per round. Default 32.
	Batch int
	// Lease is how long a claimed job belongs to its worker. Default 5m.
	Lease time.Duration
	// Timeout bounds one fetch: connection, redirects and body. Default 10s.
	Timeout time.Duration
	// MaxBytes bounds a metadata document (after decompression, and the
	// decoded content of a data: URI). Default 1 MiB.
	MaxBytes int64
	// MaxRedirects bounds the redirects followed. Default 5.
	MaxRedirects int
	// IPFSGateway is the HTTP gateway ipfs:// URIs are fetched through:
	// ipfs://CID/path -> IPFSGateway/ipfs/CID/path. Default https://ipfs.io;
	// NoIPFSGateway: ipfs:// URIs are not fetched (no outbound call).
	IPFSGateway string
	// AllowLoopback lets fetches reach loopback addresses (127.0.0.0/8,
	// ::1). Off by default: token URIs are chosen by anyone who deploys a
	// contract.
	AllowLoopback bool
	// AllowPrivate lets fetches reach private (RFC 1918, fc00::/7),
	// shared (100.64.0.0/10), link-local and cloud metadata-service
	// addresses. Off by default.
	AllowPrivate bool
	// ConnectTo sends connections for "host:port" to another "host:port"
	// (like curl's --connect-to), e.g. to reach a metadata host through a
	// local mirror. The address policy applies to the address dialed.
	ConnectTo map[string]string
	// Retry is the retry policy per outcome status; statuses without an
	// entry take DefaultRetry's, others are final at once.
	Retry map[string]RetryPolicy
	// ReindexInterval is how often one token accepts a :reindex request.
	// Default 1h (the published rule).
	ReindexInterval time.Duration
	// UserAgent is sent with every fetch. Default "permafrost-nft-metadata/1".
	UserAgent string
}

// RetryPolicy bounds the attempts that end in one status: Max attempts in
// a row (the last outcome stays), spaced by an exponential backoff from
// Base, doubling, at most Cap. A server's Retry-After is honoured up to Cap.
type RetryPolicy struct {
	Max       int
	Base, Cap time.Duration
}

// DefaultRetry is the retry policy of the statuses worth retrying; every
// other status is final at its first occurrence.
func DefaultRetry() map[string]RetryPolicy {
	return map[string]RetryPolicy{
		StatusUnreachable: {Max: 5, Base: time.Minute, Cap: 6 * time.Hour},
		StatusThrottled:   {Max: 8, Base: 2 * time.Minute, Cap: 6 * time.Hour},
		StatusInvalidJSON: {Max: 2, Base: 10 * time.Minute, Cap: time.Hour},  // a truncated answer of a flaky server
		StatusUnknown:     {Max: 10, Base: 30 * time.Second, Cap: time.Hour}, // the node failed to answer tokenURI/uri
	}
}

// RegistryConfig names the operator's contract registry: curated contract
// fields, token reputations and CoinGecko ids (see registry.go for the
// format). It is loaded by New (an invalid file is an error) and reloaded
// when its modification time or size changes, checked every Poll; an
// invalid new version is logged and the previous one kept.
type RegistryConfig struct {
	// Path is the YAML or JSON file; empty: no registry.
	Path string
	// Poll is how often the file is checked. Default 10s.
	Poll time.Duration
}

// PriceConfig chooses the price provider.
type PriceConfig struct {
	// Provider is "coingecko", "static" or "" (no prices: price,
	// balanceValue and historicalPrice are omitted).
	Provider string
	// CoinGecko configures the "coingecko" provider.
	CoinGecko CoinGeckoConfig
	// StaticFile is the "static" provider's file (reloaded like the
	// registry, every Registry.Poll).
	StaticFile string
	// CurrentTTL is how long a current price (or its absence) is cached.
	// Default 5m.
	CurrentTTL time.Duration
	// Timeout bounds the provider's part of one API request; a slower
	// provider leaves the prices out of that answer. Default 3s.
	Timeout time.Duration
}

// Defaults.
const (
	defaultTokenInterval = 5 * time.Second
	defaultTokenBatch    = 25
	maxTokenBatch        = 100
	defaultIPFSGateway   = "https://ipfs.io"
	// NoIPFSGateway as IPFSGateway fetches no ipfs:// URI.
	NoIPFSGateway    = "none"
	defaultUserAgent = "permafrost-nft-metadata/1"
)

// WithDefaults fills zero fields with their defaults.
func (c Config) WithDefaults() Config {
	t := &c.Tokens
	t.Interval = cmp.Or(t.Interval, defaultTokenInterval)
	t.Batch = cmp.Or(t.Batch, defaultTokenBatch)
	t.MaxAttempts = cmp.Or(t.MaxAttempts, 8)
	t.RetryBase = cmp.Or(t.RetryBase, 30*time.Second)
	t.RetryCap = cmp.Or(t.RetryCap, time.Hour)

	tr := &c.Trace
	tr.Interval = cmp.Or(tr.Interval, 30*time.Second)
	tr.Recheck = cmp.Or(tr.Recheck, time.Hour)
	tr.MaxAttempts = cmp.Or(tr.MaxAttempts, 5)
	tr.RetryBase = cmp.Or(tr.RetryBase, time.Minute)
	tr.RetryCap = cmp.Or(tr.RetryCap, 6*time.Hour)

	n := &c.NFT
	n.Workers = cmp.Or(n.Workers, 8)
	n.PerHost = cmp.Or(n.PerHost, 4)
	n.Poll = cmp.Or(n.Poll, 2*time.Second)
	n.Batch = cmp.Or(n.Batch, 32)
	n.Lease = cmp.Or(n.Lease, 5*time.Minute)
	n.Timeout = cmp.Or(n.Timeout, 10*time.Second)
	n.MaxBytes = cmp.Or(n.MaxBytes, 1<<20)
	n.MaxRedirects = cmp.Or(n.MaxRedirects, 5)
	n.IPFSGateway = cmp.Or(n.IPFSGateway, defaultIPFSGateway)
	n.ReindexInterval = cmp.Or(n.ReindexInterval, time.Hour)
	n.UserAgent = cmp.Or(n.UserAgent, defaultUserAgent)
	retry := DefaultRetry()
	for k, v := range n.Retry {
		retry[k] = v
	}
	n.Retry = retry

	c.Registry.Poll = cmp.Or(c.Registry.Poll, 10*time.Second)
	c.Prices.CurrentTTL = cmp.Or(c.Prices.CurrentTTL, 5*time.Minute)
	c.Prices.Timeout = cmp.Or(c.Prices.Timeout, 3*time.Second)
	c.Prices.CoinGecko = c.Prices.CoinGecko.WithDefaults()
	return c
}

func (c Config) validate() error {
	var errs []error
	seen := map[string]bool{}
	for i, ch := range c.Chains {
		switch {
		case ch.Key == "":
			errs = append(errs, fmt.Errorf("chains[%d]: empty key", i))
		case ch.RPC == nil:
			errs = append(errs, fmt.Errorf("chain %s: no RPC", ch.Key))
		case seen[ch.Key]:
			errs = append(errs, fmt.Errorf("chain %s: listed twice", ch.Key))
		}
		seen[ch.Key] = true
	}
	if c.Tokens.Batch < 1 || c.Tokens.Batch > maxTokenBatch {
		errs = append(errs, fmt.Errorf("tokens: batch %d: want 1..%d", c.Tokens.Batch, maxTokenBatch))
	}
	n := c.NFT
	for name, v := range map[string]int{"workers": n.Workers, "per-host": n.PerHost, "batch": n.Batch, "max-redirects": n.MaxRedirects} {
		if v < 1 {
			errs = append(errs, fmt.Errorf("nft: %s %d: want at least 1", name, v))
		}
	}
	if n.Batch > 500 {
		errs = append(errs, fmt.Errorf("nft: batch %d: at most 500", n.Batch))
	}
	if n.MaxBytes < 1 {
		errs = append(errs, fmt.Errorf("nft: max bytes %d: want at least 1", n.MaxBytes))
	}
	for _, d := range []time.Duration{n.Poll, n.Lease, n.Timeout, c.Tokens.Interval, c.Trace.Interval, c.Registry.Poll} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("durations must be positive, got %s", d))
			break
		}
	}
	if n.Lease < 2*n.Timeout {
		errs = append(errs, fmt.Errorf("nft: lease %s must be at least twice the fetch timeout %s", n.Lease, n.Timeout))
	}
	if u, err := url.Parse(n.IPFSGateway); n.IPFSGateway != NoIPFSGateway && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		errs = append(errs, fmt.Errorf("nft: IPFS gateway %q: want an http(s) URL or %q", n.IPFSGateway, NoIPFSGateway))
	}
	for st, p := range n.Retry {
		if !knownStatus[st] {
			errs = append(errs, fmt.Errorf("nft: retry policy for %q: not an NFT metadata status", st))
		}
		if p.Max < 1 || p.Base < 0 || p.Cap < p.Base {
			errs = append(errs, fmt.Errorf("nft: retry policy for %s: want max >= 1 and 0 <= base <= cap", st))
		}
	}
	for from, to := range n.ConnectTo {
		if !strings.Contains(from, ":") || !strings.Contains(to, ":") {
			errs = append(errs, fmt.Errorf("nft: connect-to %q -> %q: want host:port on both sides", from, to))
		}
	}
	switch c.Prices.Provider {
	case "", "coingecko":
	case "static":
		if c.Prices.StaticFile == "" {
			errs = append(errs, errors.New("prices: the static provider needs a file"))
		}
	default:
		errs = append(errs, fmt.Errorf("prices: provider %q: want coingecko, static or none", c.Prices.Provider))
	}
	return errors.Join(errs...)
}
