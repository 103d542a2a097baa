package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/permafrost-dev/permafrost/internal/replay"
)

// startReplay serves the recording in dir on addr and returns its base URL.
func startReplay(ctx context.Context, dir, addr string, log *slog.Logger) (string, func(), error) {
	rec, err := replay.Load(dir)
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("replay: listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: replay.NewHandler(rec), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && err != http.ErrServerClosed {
			log.Error("replay server", "err", err)
		}
	}()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
	return "http://" + l.Addr().String(), stop, nil
}

func replayCmd(ctx context.Context, dir, addr string, stdout io.Writer, log *slog.Logger) error {
	url, stop, err := startReplay(ctx, dir, addr, log)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(stdout, "replaying %s as an avalanchego node at %s (/ext/info, /ext/bc/P, /ext/bc/X, /ext/bc/C/rpc, /ext/bc/C/avax)\n", dir, url)
	<-ctx.Done()
	return nil
}
