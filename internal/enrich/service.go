package enrich

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ava-labs/libevm/common/hexutil"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// Service runs the enrichment workers and answers the API's questions
// about prices, curated contracts and NFT reindex requests.
type Service struct {
	db     *store.DB
	cfg    Config
	log    *slog.Logger
	now    func() time.Time
	chains map[string]Chain // by key
	evmIDs map[string]string

	reg      atomic.Pointer[registry]
	fileMu   sync.Mutex // guards the file watches
	regWatch *fileWatch

	prices      PriceProvider
	static      *StaticPrices
	staticWatch *fileWatch
	pcache      priceCache

	fetch *fetcher
	wake  chan struct{} // nudges the NFT dispatcher

	traceMu  sync.Mutex
	traceOff map[string]time.Time // chain key -> until when its node is not asked for traces

	runMu   sync.Mutex
	running bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Option adjusts a Service.
type Option func(*Service)

// WithClock sets the clock (tests).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithPriceProvider sets the price provider, overriding Config.Prices.Provider.
func WithPriceProvider(p PriceProvider) Option { return func(s *Service) { s.prices = p } }

// New prepares the service: validates the configuration, loads the registry
// and the static prices file (a bad file is an error) and builds the price
// provider. Workers start with Start.
func New(ctx context.Context, db *store.DB, cfg Config, log *slog.Logger, opts ...Option) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("enrich: config: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Service{db: db, cfg: cfg, log: log.With("component", "enrich"), now: time.Now,
		chains: map[string]Chain{}, evmIDs: map[string]string{}, wake: make(chan struct{}, 1),
		traceOff: map[string]time.Time{},
		pcache:   priceCache{cur: map[Asset]curEntry{}, miss: map[histKey]time.Time{}}}
	for _, c := range cfg.Chains {
		s.chains[c.Key] = c
		s.evmIDs[c.Key] = c.EVMChainID
	}
	for _, o := range opts {
		o(s)
	}
	if cfg.Registry.Path != "" {
		s.regWatch = &fileWatch{path: cfg.Registry.Path}
		if err := s.reloadRegistry(); err != nil {
			return nil, fmt.Errorf("enrich: %w", err)
		}
	}
	if s.prices == nil {
		switch cfg.Prices.Provider {
		case "coingecko":
			cg, err := NewCoinGecko(cfg.Prices.CoinGecko, s.now)
			if err != nil {
				return nil, fmt.Errorf("enrich: %w", err)
			}
			cg.coinOf = s.registryCoinID
			s.prices = cg
		case "static":
			s.static = &StaticPrices{}
			s.staticWatch = &fileWatch{path: cfg.Prices.StaticFile}
			if err := s.reloadStatic(); err != nil {
				return nil, fmt.Errorf("enrich: %w", err)
			}
			s.prices = s.static
		}
	}
	n := cfg.NFT
	policy := addrPolicy{allowLoopback: n.AllowLoopback, allowPrivate: n.AllowPrivate}
	s.fetch = &fetcher{client: newSafeClient(policy, n), policy: policy, gateway: strings.TrimRight(n.IPFSGateway, "/"),
		maxBytes: n.MaxBytes, ua: n.UserAgent, hosts: newHostLimiter(n.PerHost), timeout: n.Timeout}
	_ = ctx
	return s, nil
}

// Config returns the effective configuration.
func (s *Service) Config() Config { return s.cfg }

// Start runs the workers until ctx ends or Close. Ingestion never waits
// for them: they read the index and write only enrichment columns and
// tables, one short statement at a time.
func (s *Service) Start(ctx context.Context) error {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.running {
		return errors.New("enrich: already started")
	}
	ctx, s.cancel = context.WithCancel(ctx)
	s.running = true
	run := func(name string, f func(context.Context)) {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				if r := recover(); r != nil {
					s.log.Error("enrichment worker crashed", "worker", name, "panic", r)
				}
			}()
			f(ctx)
		}()
	}
	run("files", s.watchLoop)
	if len(s.cfg.Chains) > 0 {
		if !s.cfg.Tokens.Disabled {
			run("tokens", s.tokenLoop)
		}
		if !s.cfg.Trace.Disabled {
			run("trace", s.traceLoop)
		}
		if !s.cfg.NFT.Disabled {
			jobs := make(chan *nftJob)
			run("nft-dispatch", func(ctx context.Context) { s.dispatchLoop(ctx, jobs) })
			for i := 0; i < s.cfg.NFT.Workers; i++ {
				run("nft-worker", func(ctx context.Context) { s.workerLoop(ctx, jobs) })
			}
		}
	}
	return nil
}

// Close stops the workers and waits for them. Jobs in flight keep their
// lease, which expires: the next start takes them up again.
func (s *Service) Close() error {
	s.runMu.Lock()
	if !s.running {
		s.runMu.Unlock()
		return nil
	}
	s.cancel()
	s.running = false
	s.runMu.Unlock()
	s.wg.Wait()
	return nil
}

// every runs f now and then every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		f(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// watchLoop reloads the registry and the static prices file when they
// change, and keeps reputations in step with the registry.
func (s *Service) watchLoop(ctx context.Context) {
	first := true
	every(ctx, s.cfg.Registry.Poll, func(ctx context.Context) {
		changed := first
		first = false
		if s.regWatch != nil {
			before := s.reg.Load()
			if err := s.reloadRegistry(); err != nil {
				s.log.Error("contract registry not reloaded; keeping the previous version", "path", s.cfg.Registry.Path, "err", err)
			} else if s.reg.Load() != before {
				changed = true
			}
		}
		if s.staticWatch != nil {
			if err := s.reloadStatic(); err != nil {
				s.log.Error("prices file not reloaded; keeping the previous version", "path", s.cfg.Prices.StaticFile, "err", err)
			}
		}
		if changed && len(s.cfg.Chains) > 0 {
			if err := s.syncReputation(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("token reputations not synchronised", "err", err)
			}
		}
	})
}

// ReloadRegistry re-reads the registry file now (whatever its mtime) and
// synchronises reputations; on error the previous version stays.
func (s *Service) ReloadRegistry(ctx context.Context) error {
	if s.regWatch == nil {
		return errors.New("enrich: no registry file configured")
	}
	s.fileMu.Lock()
	s.regWatch.seen = false
	s.fileMu.Unlock()
	if err := s.reloadRegistry(); err != nil {
		return err
	}
	return s.syncReputation(ctx)
}

// reloadRegistry parses the registry file when it changed.
func (s *Service) reloadRegistry() error {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	data, changed, err := s.regWatch.changed()
	if err != nil {
		return fmt.Errorf("registry %s: %w", s.cfg.Registry.Path, err)
	}
	if !changed {
		return nil
	}
	r, err := parseRegistry(data, s.evmIDs)
	if err != nil {
		// Read again next time: the operator may be mid-edit.
		s.regWatch.seen = false
		return err
	}
	s.reg.Store(r)
	s.log.Info("contract registry loaded", "path", s.cfg.Registry.Path, "contracts", len(r.list))
	return nil
}

func (s *Service) reloadStatic() error {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	data, changed, err := s.staticWatch.changed()
	if err != nil {
		return fmt.Errorf("prices file %s: %w", s.cfg.Prices.StaticFile, err)
	}
	if !changed {
		return nil
	}
	if err := s.static.load(data, s.evmIDs); err != nil {
		s.staticWatch.seen = false
		return err
	}
	// Cached current prices may come from the old file.
	s.pcache.mu.Lock()
	clear(s.pcache.cur)
	clear(s.pcache.miss)
	s.pcache.mu.Unlock()
	return nil
}

// Curated returns the registry entry of a contract (evmChainID: the EVM
// chain id or the index's chain key; address in any case).
func (s *Service) Curated(evmChainID, address string) (ContractInfo, bool) {
	r := s.reg.Load()
	if r == nil {
		return ContractInfo{}, false
	}
	if id, ok := s.evmIDs[evmChainID]; ok {
		evmChainID = id
	}
	e, ok := r.byKey[regKey{evmChainID, strings.ToLower(address)}]
	if !ok {
		return ContractInfo{}, false
	}
	return *e, true
}

func (s *Service) registryCoinID(a Asset) string {
	if e, ok := s.Curated(a.Chain, a.Token); ok {
		return e.CoinGeckoCoinID
	}
	return ""
}

// callBlock is the block eth_calls are made at: the chain's indexed tip,
// so metadata agrees with the index; "latest" when nothing is indexed.
func (s *Service) callBlock(ctx context.Context, chainKey string) (string, error) {
	var h int64
	err := s.db.QueryRowContext(ctx, `SELECT height FROM checkpoints WHERE chain_key = $1`, chainKey).Scan(&h)
	if err == nil {
		return hexutil.EncodeUint64(uint64(h)), nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("checkpoint of %s: %w", chainKey, err)
	}
	var m sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT MAX(number) FROM evm_blocks WHERE chain_key = $1`, chainKey).Scan(&m); err != nil {
		return "", fmt.Errorf("tip of %s: %w", chainKey, err)
	}
	if !m.Valid || m.Int64 < 0 {
		return "latest", nil
	}
	return hexutil.EncodeUint64(uint64(m.Int64)), nil
}
