// Package app wires the subcommands: configuration, store, sources, indexers,
// the ingest pipeline and the HTTP interfaces.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/permafrost-dev/permafrost/internal/config"
	"github.com/permafrost-dev/permafrost/internal/keys"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// ErrUsage marks a command line that cannot be run.
var ErrUsage = errors.New("usage error")

// Run runs one subcommand.
func Run(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("permafrost "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := config.Register(fs)
	var run func(ctx context.Context) error
	switch cmd {
	case "serve":
		run = func(ctx context.Context) error { return serve(ctx, cfg, stdout, newLogger(cfg, stderr)) }
	case "index":
		untilTip := fs.Bool("until-tip", false, "stop once every chain reached the tip seen at start")
		run = func(ctx context.Context) error { return index(ctx, cfg, *untilTip, newLogger(cfg, stderr)) }
	case "replay":
		fixture := fs.String("fixture", "testdata/devnet-a", "recording directory")
		run = func(ctx context.Context) error {
			return replayCmd(ctx, *fixture, cfg.Listen, stdout, newLogger(cfg, stderr))
		}
	case "demo":
		fixture := fs.String("fixture", "testdata/devnet-a", "recording directory")
		run = func(ctx context.Context) error { return demo(ctx, cfg, *fixture, stdout, newLogger(cfg, stderr)) }
	case "status":
		asJSON := fs.Bool("json", false, "print JSON")
		run = func(ctx context.Context) error { return status(ctx, cfg, *asJSON, stdout) }
	case "migrate":
		run = func(ctx context.Context) error {
			db, err := openDB(ctx, cfg)
			if err != nil {
				return err
			}
			defer db.Close()
			fmt.Fprintln(stdout, "migrations applied to", db)
			return nil
		}
	case "reindex":
		run = func(ctx context.Context) error { return reindex(ctx, cfg, newLogger(cfg, stderr)) }
	case "keys":
		run = func(ctx context.Context) error {
			db, err := openDB(ctx, cfg)
			if err != nil {
				return err
			}
			defer db.Close()
			err = keys.Command(ctx, db, fs.Args(), stdout)
			if errors.Is(err, keys.ErrUsage) {
				return fmt.Errorf("%w: %v", ErrUsage, err)
			}
			return err
		}
	case "-h", "--help", "help":
		return flag.ErrHelp
	default:
		return fmt.Errorf("%w: unknown command %q", ErrUsage, cmd)
	}
	if err := config.Parse(fs, args); err != nil {
		return err
	}
	return run(ctx)
}

func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// openDB opens and migrates the configured database.
func openDB(ctx context.Context, cfg *config.Config) (*store.DB, error) {
	db, err := store.Open(ctx, cfg.DB)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
