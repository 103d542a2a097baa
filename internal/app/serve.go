package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"

	"github.com/permafrost-dev/permafrost/internal/api"
	evmdata "github.com/permafrost-dev/permafrost/internal/api/data/evm"
	primarydata "github.com/permafrost-dev/permafrost/internal/api/data/primary"
	"github.com/permafrost-dev/permafrost/internal/api/enrichapi"
	"github.com/permafrost-dev/permafrost/internal/api/exportapi"
	"github.com/permafrost-dev/permafrost/internal/api/icm"
	apimetrics "github.com/permafrost-dev/permafrost/internal/api/metrics"
	"github.com/permafrost-dev/permafrost/internal/api/platform"
	"github.com/permafrost-dev/permafrost/internal/api/warpapi"
	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/config"
	"github.com/permafrost-dev/permafrost/internal/enrich"
	"github.com/permafrost-dev/permafrost/internal/export"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/warpindex"
)

// start opens (and migrates) the store and asks the node for the network and
// its chains: what every ingesting or serving command begins with.
func start(ctx context.Context, cfg *config.Config, log *slog.Logger) (*store.DB, *chains.Set, error) {
	db, err := openDB(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	set, err := chains.Build(ctx, chains.Options{
		NodeURL: cfg.Node, GenesisPath: cfg.Genesis, EVMRPCs: cfg.EVMRPC, BatchSize: cfg.BatchSize, Log: log,
		RPCBatch: cfg.RPCBatch, RPCConcurrency: cfg.RPCConcurrency,
	})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, set, nil
}

func index(ctx context.Context, cfg *config.Config, untilTip bool, log *slog.Logger) error {
	db, set, err := start(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer db.Close()
	pipe := ingest.New(db, set.Chains, ingest.Options{UntilTip: untilTip, Poll: cfg.Poll}, log)
	if isTerminal(os.Stderr) {
		pctx, stop := context.WithCancel(ctx)
		defer stop()
		go showProgress(pctx, os.Stderr, pipe)
	}
	return pipe.Run(ctx)
}

func reindex(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	db, set, err := start(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer db.Close()
	return ingest.Reindex(ctx, db, set.Chains, 256, log)
}

func serve(ctx context.Context, cfg *config.Config, stdout io.Writer, log *slog.Logger) error {
	db, set, err := start(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer db.Close()
	return run(ctx, cfg, db, set, stdout, log, nil)
}

// run ingests continuously and serves every API until ctx ends; ready, when
// set, is called once the listeners are up.
func run(ctx context.Context, cfg *config.Config, db *store.DB, set *chains.Set, stdout io.Writer, log *slog.Logger, ready func(addr string)) error {
	// Chains are registered before the API loads the network from them.
	for _, c := range set.Chains {
		if err := ingest.RegisterChain(ctx, db, c); err != nil {
			return err
		}
	}
	guard, err := newGuard(db, cfg, log)
	if err != nil {
		return err
	}
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
		pipe := ingest.New(db, set.Chains, ingest.Options{Poll: cfg.Poll}, log)
		go func() { ingestDone <- pipe.Run(ingestCtx) }()
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
	apimetrics.Register(mux, apimetrics.Deps{DB: db, Network: network, Tokens: api.NewServerTokens(db, nil), Log: log})
	evmdata.Register(mux, evmdata.Deps{DB: db, Network: network, Pager: pager, Log: log, Health: guard.Health(),
		Enrichment: enrichapi.EVM(enr)})

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

	upstream := cfg.Upstream
	if upstream == "" {
		upstream = cfg.Node
	}
	rpc, err := platform.New(platform.Deps{DB: db, NetworkID: set.NetworkID, Genesis: set.Genesis, Upstream: upstream, Log: log})
	if err != nil {
		return nil, nil, err
	}
	platform.Mount(mux, rpc)

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

// newGuard builds the API keys / rate limits / health guard from the config.
func newGuard(db *store.DB, cfg *config.Config, log *slog.Logger) (*api.Guard, error) {
	limits := api.LimitsConfig{
		AnonymousCU:           cfg.AnonymousCU,
		MetricsPerIPPerMinute: cfg.MetricsCU,
		LagThreshold:          cfg.LagThreshold,
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
	return api.NewGuard(db, limits, log), nil
}
