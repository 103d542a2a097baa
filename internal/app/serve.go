package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/apidoc"
	evmdata "github.com/permafrost-dev/permafrost/internal/api/data/evm"
	primarydata "github.com/permafrost-dev/permafrost/internal/api/data/primary"
	"github.com/permafrost-dev/permafrost/internal/api/enrichapi"
	"github.com/permafrost-dev/permafrost/internal/api/exportapi"
	"github.com/permafrost-dev/permafrost/internal/api/icm"
	apimetrics "github.com/permafrost-dev/permafrost/internal/api/metrics"
	"github.com/permafrost-dev/permafrost/internal/api/platform"
	"github.com/permafrost-dev/permafrost/internal/api/warpapi"
	webhooksapi "github.com/permafrost-dev/permafrost/internal/api/webhooks"
	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/config"
	"github.com/permafrost-dev/permafrost/internal/enrich"
	"github.com/permafrost-dev/permafrost/internal/export"
	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/obs"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/warpindex"
	"github.com/permafrost-dev/permafrost/internal/webhooks"
)

// start opens (and migrates) the store, takes its writer lock for cmd and
// asks the node for the network and its chains: what every ingesting
// command begins with. The caller releases the lock and closes the store.
func start(ctx context.Context, cfg *config.Config, log *slog.Logger, cmd string) (*store.DB, *store.Writer, *chains.Set, error) {
	db, err := openDB(ctx, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	w, err := writerLock(ctx, db, cmd)
	if err != nil {
		db.Close()
		return nil, nil, nil, err
	}
	opts, err := chainOptions(cfg, log)
	if err == nil {
		var set *chains.Set
		if set, err = chains.Build(ctx, opts); err == nil {
			// Chain metrics of blocks indexed before their rollups existed (issue #21).
			if err = backfillChainMetrics(ctx, db, set, log); err == nil {
				return db, w, set, nil
			}
		}
	}
	w.Release()
	db.Close()
	return nil, nil, nil, err
}

// chainOptions turns the configuration into chains.Options (reading the
// --evm-genesis files).
func chainOptions(cfg *config.Config, log *slog.Logger) (chains.Options, error) {
	o := chains.Options{
		NodeURL: cfg.Node, GenesisPath: cfg.Genesis, EVMRPCs: cfg.EVMRPC, BatchSize: cfg.BatchSize, Log: log, Metrics: obs.New(),
		RPCBatch: cfg.RPCBatch, RPCConcurrency: cfg.RPCConcurrency, EVMGenesis: map[uint64]map[common.Address]*big.Int{},
		Traces: traceMode(cfg),
	}
	for _, a := range cfg.ICMAllow {
		o.ICMAllow = append(o.ICMAllow, common.HexToAddress(a))
	}
	for _, a := range cfg.ICMDeny {
		o.ICMDeny = append(o.ICMDeny, common.HexToAddress(a))
	}
	for _, path := range cfg.EVMGenesis {
		b, err := os.ReadFile(path)
		if err != nil {
			return o, fmt.Errorf("--evm-genesis: %w", err)
		}
		g, err := genesis.ParseEVM(b)
		if err != nil {
			return o, fmt.Errorf("--evm-genesis %s: %w", path, err)
		}
		o.EVMGenesis[g.ChainID] = g.Alloc
	}
	return o, nil
}

// writerLock takes the database's writer lock for the command, or fails
// naming the process that holds it.
func writerLock(ctx context.Context, db *store.DB, cmd string) (*store.Writer, error) {
	host, _ := os.Hostname()
	w, err := db.AcquireWriter(ctx, fmt.Sprintf("permafrost %s, pid %d on %s", cmd, os.Getpid(), host))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return w, nil
}

func index(ctx context.Context, cfg *config.Config, untilTip, catchUp bool, log *slog.Logger) error {
	db, w, set, err := start(ctx, cfg, log, "index")
	if err != nil {
		return err
	}
	defer db.Close()
	defer w.Release()
	opts := pipelineOptions(cfg, db, set, untilTip)
	opts.CatchUp = catchUp
	pipe := ingest.New(db, set.Chains, opts, log)
	if isTerminal(os.Stderr) {
		pctx, stop := context.WithCancel(ctx)
		defer stop()
		go showProgress(pctx, os.Stderr, pipe)
	}
	return pipe.Run(ctx)
}

// pipelineOptions: every chain of the set, and the L1 chains created on the
// P-chain that the node serves, found as the P-chain is indexed.
func pipelineOptions(cfg *config.Config, db *store.DB, set *chains.Set, untilTip bool) ingest.Options {
	return ingest.Options{UntilTip: untilTip, Poll: cfg.Poll, Discover: set.Discover(db), DiscoverEvery: max(10*cfg.Poll, 2*time.Second),
		Observer: set.Metrics(), CatchUpLag: cfg.CatchUpLag}
}

// reindex rebuilds every chain's rows from the stored raw blocks; it reads no
// node (the chains come from what the index recorded).
func reindex(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	w, err := writerLock(ctx, db, "reindex")
	if err != nil {
		return err
	}
	defer w.Release()
	opts, err := chainOptions(cfg, log)
	if err != nil {
		return err
	}
	set, err := chains.Offline(ctx, db, opts)
	if err != nil {
		return err
	}
	err = ingest.Reindex(ctx, db, set.Chains, 256, log)
	if ctx.Err() != nil {
		// Not a clean stop: the derived tables are half rebuilt.
		return errors.New("reindex interrupted: the derived tables are incomplete; run reindex again before serving")
	}
	return err
}

// nodeWait bounds how long serve waits for the node before it serves the
// index it has without it.
const nodeWait = 3 * time.Second

func serve(ctx context.Context, cfg *config.Config, stdout io.Writer, log *slog.Logger) error {
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	if cfg.Ingest {
		w, err := writerLock(ctx, db, "serve")
		if err != nil {
			return fmt.Errorf("%w (run API-only replicas with --ingest=false)", err)
		}
		defer w.Release()
	} else if p, l := api.ReplicaGC(os.Getenv); p != 0 {
		log.Info("serve: API-only replica, Go collector set (GOGC or GOMEMLIMIT in the environment override it)", "gogc", p, "memory_limit_mib", l>>20)
	}
	opts, err := chainOptions(cfg, log)
	if err != nil {
		return err
	}
	bctx, cancel := context.WithTimeout(ctx, nodeWait)
	set, err := chains.Build(bctx, opts)
	cancel()
	if err == nil {
		return run(ctx, cfg, db, set, stdout, log, nil, nil)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	online := func(ctx context.Context) (*chains.Set, error) { return waitForNode(ctx, opts, log) }
	offline, oerr := chains.Offline(ctx, db, opts)
	if oerr != nil {
		// Nothing indexed yet: there is nothing to serve without the node.
		log.Error("serve: the node does not answer and nothing is indexed yet; waiting for the node", "node", cfg.Node, "err", err)
		set, err := online(ctx)
		if err != nil {
			return err
		}
		return run(ctx, cfg, db, set, stdout, log, nil, nil)
	}
	log.Error("serve: the node does not answer; serving the existing index, ingestion starts when the node answers", "node", cfg.Node, "err", err)
	if err := ingest.MarkWaiting(ctx, db, fmt.Sprintf("waiting for the node at %s: %v", cfg.Node, err)); err != nil {
		return err
	}
	return run(ctx, cfg, db, offline, stdout, log, nil, online)
}

// waitForNode builds the chains once the node answers, asking again with
// backoff (the failures are not logged again: serve said it waits).
func waitForNode(ctx context.Context, opts chains.Options, log *slog.Logger) (*chains.Set, error) {
	backoff := time.Second
	for {
		set, err := chains.Build(ctx, opts)
		if err == nil {
			log.Info("serve: the node answers; ingestion starts", "node", opts.NodeURL)
			return set, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		log.Debug("serve: the node does not answer yet", "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// run ingests continuously and serves every API until ctx ends; ready, when
// set, is called once the listeners are up. online, when set, is how the
// ingester gets its chains: set was built from the index without the node
// (serving starts at once), and ingestion starts when online returns.
func run(ctx context.Context, cfg *config.Config, db *store.DB, set *chains.Set, stdout io.Writer, log *slog.Logger,
	ready func(addr string), online func(ctx context.Context) (*chains.Set, error)) error {
	// Chains are registered before the API loads the network from them.
	for _, c := range set.Chains {
		if err := ingest.RegisterChain(ctx, db, c); err != nil {
			return err
		}
	}
	guard, err := newGuard(db, cfg, log, set.Metrics())
	if err != nil {
		return err
	}
	stopAdmin, err := startAdmin(cfg.AdminListen, set.Metrics(), log)
	if err != nil {
		return err
	}
	defer stopAdmin()
	handler, closers, err := buildAPI(ctx, cfg, db, set, guard, log)
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range closers {
			c()
		}
	}()

	listeners := []string{cfg.Listen}
	if cfg.MetricsListen != "" {
		listeners = append(listeners, cfg.MetricsListen)
	}
	errc := make(chan error, len(listeners))
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	for i, addr := range listeners {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", addr, err)
		}
		srv := api.NewHTTPServerLimits(addr, handler, guard.Config())
		go func() { errc <- guard.Serve(serveCtx, srv, l) }()
		log.Info("serving", "addr", l.Addr().String())
		if i == 0 && ready != nil {
			ready(l.Addr().String())
		}
	}
	ingestCtx, stopIngest := context.WithCancel(ctx)
	defer stopIngest()
	ingestDone := make(chan error, 1)
	if cfg.Ingest {
		go func() {
			ingestSet := set
			if online != nil {
				var err error
				if ingestSet, err = online(ingestCtx); err != nil {
					ingestDone <- err
					return
				}
			}
			ingestDone <- ingest.New(db, ingestSet.Chains, pipelineOptions(cfg, db, ingestSet, false), log).Run(ingestCtx)
		}()
	} else {
		log.Info("ingestion off: serving what another process indexes")
		go func() { <-ingestCtx.Done(); ingestDone <- nil }()
	}

	select {
	case <-ctx.Done():
	case err = <-errc:
	case err = <-ingestDone:
		ingestDone <- err
	}
	// Graceful shutdown: health turns 503, in-flight requests drain, and the
	// ingest batch in progress commits (the pipeline stops between batches).
	stopServing()
	stopIngest()
	for range listeners {
		if serr := <-errc; serr != nil && err == nil && !errors.Is(serr, http.ErrServerClosed) {
			err = serr
		}
	}
	if ierr := <-ingestDone; ierr != nil && !errors.Is(ierr, context.Canceled) && err == nil {
		err = ierr
	}
	return err
}

// traceMode is the EVM sources' call-trace setting.
func traceMode(cfg *config.Config) source.TraceMode {
	if cfg.NoTraces {
		return source.TracesOff
	}
	return source.TracesAuto
}

// buildAPI registers every interface on one router.
// Closers it returns release what the interfaces hold (p2p connections, workers).
func buildAPI(ctx context.Context, cfg *config.Config, db *store.DB, set *chains.Set, guard *api.Guard, log *slog.Logger) (_ http.Handler, closers []func(), _ error) {
	network, err := api.LoadNetwork(ctx, db, cfg.NetworkName)
	if err != nil {
		return nil, nil, err
	}
	pager, err := api.LoadPager(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	mux := api.NewMux(log)
	guard.Install(mux)
	icm.Register(mux, icm.Deps{DB: db, Network: network, Pager: pager, Log: log})
	enr, err := enrich.New(ctx, db, enrich.Config{
		Chains: enrichapi.ChainsFrom(set), AVAXAssetID: set.Genesis.AvaxAssetID.String(),
		NFT:      enrich.NFTConfig{IPFSGateway: cfg.IPFSGateway, AllowLoopback: cfg.NFTAllowLoopback, AllowPrivate: cfg.NFTAllowPrivate},
		Registry: enrich.RegistryConfig{Path: cfg.ContractRegistry},
		Prices: enrich.PriceConfig{Provider: cfg.PriceProvider, StaticFile: cfg.PricesFile,
			CoinGecko: enrich.CoinGeckoConfig{BaseURL: cfg.CoinGeckoURL, APIKey: cfg.CoinGeckoKey, RequestsPerMinute: cfg.CoinGeckoRPM}},
	}, log)
	if err != nil {
		return nil, nil, err
	}
	enrCtx, stopEnrich := context.WithCancel(context.WithoutCancel(ctx))
	if cfg.Ingest {
		// Background workers write enrichment rows: they run where ingestion runs.
		if err := enr.Start(enrCtx); err != nil {
			stopEnrich()
			return nil, nil, err
		}
	}
	closers = append(closers, func() { stopEnrich(); _ = enr.Close() })
	enrichapi.Register(mux, enrichapi.Deps{Service: enr, Network: network, Log: log})

	primarydata.Register(mux, primarydata.Deps{DB: db, Network: network, Pager: pager, Log: log, Health: guard.Health(),
		Node: primarydata.NewRPCNodeView(set.Node, 0), Prices: enr, AVAXAssetID: set.Genesis.AvaxAssetID.String()})
	apimetrics.Register(mux, apimetrics.Deps{DB: db, Network: network, Tokens: api.NewServerTokens(db, nil), Log: log,
		Health: guard.Health()}) // Health: /v2/health-check, /v2/live-check (issue #21)
	balanceNodes := &balanceNodes{set: set, log: log, nodes: map[string]*source.EVM{}}
	closers = append(closers, balanceNodes.close)
	evmdata.Register(mux, evmdata.Deps{DB: db, Network: network, Pager: pager, Log: log, Health: guard.Health(),
		Enrichment: enrichapi.EVM(enr), BalanceNodes: balanceNodes})

	publicURL := cfg.PublicURL
	if publicURL == "" {
		publicURL = "http://" + cfg.Listen
	}
	exp, err := export.New(ctx, db, export.Config{Dir: cfg.ExportDir, PublicURL: publicURL, RowCap: cfg.ExportRowCap,
		Retention: cfg.ExportRetention, Workers: cfg.ExportWorkers, URLTTL: cfg.ExportURLTTL}, log)
	if err != nil {
		return nil, nil, err
	}
	expCtx, stopExports := context.WithCancel(context.WithoutCancel(ctx))
	if err := exp.Start(expCtx); err != nil {
		stopExports()
		return nil, nil, err
	}
	closers = append(closers, func() { stopExports(); _ = exp.Close() })
	exportapi.Register(mux, exportapi.Deps{Service: exp, Network: network, Log: log})

	// Webhooks (issue #20): registrations; deliveries where ingestion runs. See internal/webhooks.
	hookPolicy := webhooks.URLPolicy{AllowLoopback: cfg.WebhookAllowLoopback, AllowPrivate: cfg.WebhookAllowPrivate}
	webhooksapi.Register(mux, webhooksapi.Deps{Registry: webhooks.NewRegistry(db, nil), Network: network, Pager: pager, Log: log, Policy: hookPolicy})
	if cfg.Ingest {
		hooks := webhooks.NewDeliverer(db, webhooks.DeliveryConfig{Policy: hookPolicy}, log)
		if err := hooks.Start(context.WithoutCancel(ctx)); err != nil {
			return nil, nil, err
		}
		closers = append(closers, func() { _ = hooks.Close() })
	}

	upstream := cfg.Upstream
	if upstream == "" {
		upstream = cfg.Node
	}
	rpc, err := platform.New(platform.Deps{DB: db, NetworkID: set.NetworkID, Genesis: set.Genesis, Upstream: upstream, Log: log})
	if err != nil {
		return nil, nil, err
	}
	platform.Mount(mux, rpc)

	// Its own documentation, built from the routes registered here.
	v, _ := Version()
	docs := apidoc.New(mux, v)
	mux.HandleHTTP("GET /openapi.json", http.HandlerFunc(docs.OpenAPI))
	mux.HandleHTTP("GET /docs", http.HandlerFunc(docs.Docs))

	agg, err := warpindex.NewAggregator(ctx, warpindex.AggregatorConfig{
		DB: db, NetworkID: network.ID, Node: set.Node,
		TLSKeyFile: cfg.WarpStakingKey, TLSCertFile: cfg.WarpStakingCert, Log: log,
	})
	if err != nil {
		// Warp needs the p2p network; the other interfaces do not. Its routes answer 503.
		log.Warn("warp signature aggregation disabled", "err", err)
		warpapi.Register(mux, warpapi.Deps{Network: network, Log: log})
	} else {
		closers = append(closers, func() { _ = agg.Close() })
		warpapi.Register(mux, warpapi.Deps{Aggregator: agg, Network: network, Log: log})
	}
	return mux, closers, nil
}

// balanceNodes asks the chains' nodes for the native balances the index
// cannot vouch for, while a request waits: one client per chain (L1s found
// after start included), made on first use, with a short retry policy of
// its own.
type balanceNodes struct {
	set   *chains.Set
	log   *slog.Logger
	mu    sync.Mutex
	nodes map[string]*source.EVM
}

func (b *balanceNodes) BalanceNode(c api.ChainRef) evmdata.BalanceNode {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n, ok := b.nodes[c.Key]; ok {
		return n
	}
	url := b.set.EVMNodeURL(c.Key, c.BlockchainID)
	if url == "" {
		return nil
	}
	n, err := source.NewEVM(context.Background(), url, source.EVMOptions{Traces: source.TracesOff,
		Retry: source.Retry{MaxAttempts: 2, AttemptTimeout: 5 * time.Second, Logger: b.log}})
	if err != nil {
		b.log.Warn("balance node", "chain", c.Key, "err", err)
		return nil
	}
	b.nodes[c.Key] = n
	return n
}

func (b *balanceNodes) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range b.nodes {
		n.Close()
	}
}

// newGuard builds the API keys / rate limits / health guard from the config.
func newGuard(db *store.DB, cfg *config.Config, log *slog.Logger, m *obs.Metrics) (*api.Guard, error) {
	limits := api.LimitsConfig{
		AnonymousCU:           cfg.AnonymousCU,
		MetricsPerIPPerMinute: cfg.MetricsCU,
		LagThreshold:          cfg.LagThreshold,
		HeartbeatTimeout:      cfg.HeartbeatTimeout,
		MaxBlockInterval:      cfg.MaxBlockInterval,
		CORSOrigins:           cfg.CORSOrigins,
	}
	if len(cfg.Tiers) > 0 {
		limits.Tiers = cfg.Tiers
	}
	for _, p := range cfg.TrustedProxies {
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			addr, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return nil, fmt.Errorf("--trusted-proxy %q: want a CIDR or an IP", p)
			}
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		limits.TrustedProxies = append(limits.TrustedProxies, prefix)
	}
	m.WatchStore(db)
	return api.NewGuard(db, limits, log, api.WithObserver(m)), nil
}
