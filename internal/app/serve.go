package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/icm"
	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/config"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// buildChains asks the node for the network and builds every chain.
func buildChains(ctx context.Context, cfg *config.Config, log *slog.Logger) (*chains.Set, error) {
	return chains.Build(ctx, chains.Options{
		NodeURL: cfg.Node, GenesisPath: cfg.Genesis, EVMRPCs: cfg.EVMRPC, BatchSize: cfg.BatchSize, Log: log,
	})
}

func index(ctx context.Context, cfg *config.Config, untilTip bool, log *slog.Logger) error {
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	set, err := buildChains(ctx, cfg, log)
	if err != nil {
		return err
	}
	return ingest.New(db, set.Chains, ingest.Options{UntilTip: untilTip, Poll: cfg.Poll}, log).Run(ctx)
}

func reindex(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	set, err := buildChains(ctx, cfg, log)
	if err != nil {
		return err
	}
	return ingest.Reindex(ctx, db, set.Chains, 256, log)
}

func serve(ctx context.Context, cfg *config.Config, stdout io.Writer, log *slog.Logger) error {
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	set, err := buildChains(ctx, cfg, log)
	if err != nil {
		return err
	}
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
	handler, err := buildAPI(ctx, cfg, db, set, log)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	listeners := []string{cfg.Listen}
	if cfg.MetricsListen != "" {
		listeners = append(listeners, cfg.MetricsListen)
	}
	var servers []*http.Server
	errc := make(chan error, len(listeners)+1)
	for i, addr := range listeners {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", addr, err)
		}
		srv := api.NewHTTPServer(addr, handler)
		servers = append(servers, srv)
		go func() { errc <- srv.Serve(l) }()
		log.Info("serving", "addr", l.Addr().String())
		if i == 0 && ready != nil {
			ready(l.Addr().String())
		}
	}
	pipe := ingest.New(db, set.Chains, ingest.Options{Poll: cfg.Poll}, log)
	ingestDone := make(chan error, 1)
	go func() { ingestDone <- pipe.Run(ctx) }()

	select {
	case <-ctx.Done():
	case err = <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
	case err = <-ingestDone:
		ingestDone <- err
	}
	// Graceful shutdown: drain in-flight requests, let the ingest batch in
	// progress commit (the pipeline stops between batches when ctx ends).
	shutdownCtx, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	for _, srv := range servers {
		_ = srv.Shutdown(shutdownCtx)
	}
	cancel()
	if ierr := <-ingestDone; ierr != nil && !errors.Is(ierr, context.Canceled) && err == nil {
		err = ierr
	}
	return err
}

// buildAPI registers every interface on one router.
func buildAPI(ctx context.Context, cfg *config.Config, db *store.DB, set *chains.Set, log *slog.Logger) (http.Handler, error) {
	network, err := api.LoadNetwork(ctx, db, cfg.NetworkName)
	if err != nil {
		return nil, err
	}
	pager, err := api.LoadPager(ctx, db)
	if err != nil {
		return nil, err
	}
	mux := api.NewMux(log)
	icm.Register(mux, icm.Deps{DB: db, Network: network, Pager: pager, Log: log})
	return mux, nil
}
