// Command permafrost indexes an Avalanche network and serves the data API,
// the metrics API and the platform-chain JSON-RPC from its own index.
//
//	permafrost serve     index continuously and serve every API
//	permafrost index     index (with --until-tip: stop at the tip seen at start)
//	permafrost replay    serve a recording as an avalanchego-compatible node
//	permafrost demo      replay the bundled recording, index it, serve every API
//	permafrost status    per-chain indexed height, node tip, lag, blocks/s
//	permafrost migrate   apply database migrations
//	permafrost reindex   rebuild derived tables from stored raw blocks
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/permafrost-dev/permafrost/internal/app"
)

func main() {
	if len(os.Args) < 2 {
		app.Usage(os.Stderr)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd, args := os.Args[1], os.Args[2:]
	err := app.Run(ctx, cmd, args, os.Stdout, os.Stderr)
	switch {
	case err == nil, errors.Is(err, context.Canceled):
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, app.ErrUsage):
		fmt.Fprintln(os.Stderr, err)
		app.Usage(os.Stderr)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "permafrost:", err)
		os.Exit(1)
	}
}
