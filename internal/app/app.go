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
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
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
		catchUp := fs.Bool("catch-up", false, "bulk catch-up: defer the secondary indexes (store/migrations/deferrable.txt) until every chain is caught up")
		run = func(ctx context.Context) error { return index(ctx, cfg, *untilTip, *catchUp, newLogger(cfg, stderr)) }
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
		statusOnly := fs.Bool("status", false, "list the applied and pending migrations, apply none")
		run = func(ctx context.Context) error {
			if *statusOnly {
				return migrationStatus(ctx, cfg, stdout)
			}
			db, err := openDB(ctx, cfg)
			if err != nil {
				return err
			}
			defer db.Close()
			fmt.Fprintln(stdout, "migrations applied to", db)
			return nil
		}
	case "version":
		run = func(context.Context) error {
			v, commit := Version()
			fmt.Fprintf(stdout, "permafrost %s\ncommit %s\nschema %s\n", v, commit, store.SchemaVersion())
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
			// The budgets serve uses (newGuard): --tier's, or the defaults.
			budgets := cfg.Tiers
			if len(budgets) == 0 {
				budgets = api.DefaultLimits().Tiers
			}
			err = keys.Command(ctx, db, fs.Args(), slices.Collect(maps.Keys(budgets)), stdout)
			if errors.Is(err, keys.ErrUsage) {
				return fmt.Errorf("%w: %v", ErrUsage, err)
			}
			return err
		}
	case "-h", "--help", "help":
		Usage(stdout)
		return flag.ErrHelp
	default:
		return fmt.Errorf("%w: unknown command %q", ErrUsage, cmd)
	}
	if err := config.Parse(fs, cmd, args); err != nil {
		return err
	}
	return run(ctx)
}

// Usage writes the commands.
func Usage(w io.Writer) {
	fmt.Fprintln(w, "usage: permafrost <command> [flags]\n\ncommands:")
	for _, c := range config.Commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintln(w, "\n'permafrost <command> -h' lists the command's flags; docs/configuration.md lists them all.")
}

// version and commit are set at build time (-ldflags "-X
// github.com/permafrost-dev/permafrost/internal/app.version=v1.2.3 -X ...commit=abc");
// otherwise they come from the Go build information when it has them.
var version, commit string

// Version returns the build's version and commit.
func Version() (string, string) {
	v, c := version, commit
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && c == "" {
				c = s.Value
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	if c == "" {
		c = "unknown"
	}
	return v, c
}

// migrationStatus prints the applied and pending migrations of the database
// without applying any.
func migrationStatus(ctx context.Context, cfg *config.Config, w io.Writer) error {
	db, err := store.Open(ctx, cfg.DB)
	if err != nil {
		return err
	}
	defer db.Close()
	st, err := db.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	for _, m := range st.Applied {
		fmt.Fprintf(w, "applied  %s  %s\n", m, time.Unix(st.AppliedAt[m], 0).UTC().Format(time.RFC3339))
	}
	for _, m := range st.Pending {
		fmt.Fprintf(w, "pending  %s\n", m)
	}
	for _, m := range st.Unknown {
		fmt.Fprintf(w, "unknown  %s  (applied by a newer Permafrost)\n", m)
	}
	fmt.Fprintf(w, "%d applied, %d pending, %d unknown; this build's schema is %s\n", len(st.Applied), len(st.Pending), len(st.Unknown), store.SchemaVersion())
	return nil
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
