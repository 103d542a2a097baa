package app

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestHelpAndVersion(t *testing.T) {
	var out bytes.Buffer
	if err := Run(context.Background(), "help", nil, &out, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("help: %v", err)
	}
	for _, cmd := range []string{"serve", "index", "status", "migrate", "reindex", "keys", "replay", "demo", "version"} {
		if !strings.Contains(out.String(), "  "+cmd+" ") {
			t.Errorf("help lacks %s:\n%s", cmd, out.String())
		}
	}
	out.Reset()
	if err := Run(context.Background(), "version", nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "permafrost ") || !strings.Contains(out.String(), "\ncommit ") ||
		!strings.Contains(out.String(), "\nschema "+store.SchemaVersion()+"\n") || store.SchemaVersion() == "" {
		t.Errorf("version:\n%s", out.String())
	}
	var errOut bytes.Buffer
	if err := Run(context.Background(), "status", []string{"-h"}, io.Discard, &errOut); !errors.Is(err, flag.ErrHelp) ||
		!strings.Contains(errOut.String(), "-db") || strings.Contains(errOut.String(), "-listen") {
		t.Errorf("status -h: %v\n%s", err, errOut.String())
	}
}

// migrate --status lists applied and pending migrations and applies none; a
// database migrated by a newer version is refused by every command.
func TestMigrateStatus(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			dsn := storetest.DSNFor(t, backend)
			ctx := context.Background()
			var out bytes.Buffer
			if err := Run(ctx, "migrate", []string{"--db", dsn, "--status"}, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "pending  0001_core.sql") || !strings.Contains(out.String(), "0 applied") {
				t.Errorf("fresh database:\n%s", out.String())
			}
			if err := Run(ctx, "migrate", []string{"--db", dsn}, io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
			out.Reset()
			if err := Run(ctx, "migrate", []string{"--db", dsn, "--status"}, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "applied  0001_core.sql") || !strings.Contains(out.String(), " 0 pending, 0 unknown") {
				t.Errorf("migrated database:\n%s", out.String())
			}
			// A newer version's migration.
			db := storetest.Open(t, dsn)
			if _, err := db.ExecContext(ctx, `INSERT INTO schema_migrations (name, applied_at) VALUES ('9999_future.sql', 1)`); err != nil {
				t.Fatal(err)
			}
			out.Reset()
			if err := Run(ctx, "migrate", []string{"--db", dsn, "--status"}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "unknown  9999_future.sql") {
				t.Errorf("status with a newer migration: %v\n%s", err, out.String())
			}
			for _, cmd := range []string{"migrate", "status", "serve"} {
				err := Run(ctx, cmd, []string{"--db", dsn}, io.Discard, io.Discard)
				if !errors.Is(err, store.ErrNewerSchema) || !strings.Contains(err.Error(), "9999_future.sql") {
					t.Errorf("%s on a newer database: %v", cmd, err)
				}
			}
		})
	}
}

// cancelOn cancels a context when a log line contains text.
type cancelOn struct {
	text   string
	cancel func()
}

func (c cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.text) {
		c.cancel()
	}
	return len(p), nil
}

// A reindex interrupted after it cleared the derived tables fails (a
// non-zero exit), saying the tables are incomplete.
func TestReindexInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes a recording")
	}
	dir := devnet.Dir(t)
	node := newSwitchableNode(t, dir)
	node.up()
	dsn := storetest.DSNFor(t, "sqlite")
	genesis := filepath.Join(dir, "genesis.json")
	if err := Run(context.Background(), "index", []string{"--node", node.url(), "--genesis", genesis, "--db", dsn, "--until-tip"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := Run(ctx, "reindex", []string{"--genesis", genesis, "--db", dsn}, io.Discard, cancelOn{"reindex: cleared derived tables", cancel})
	if err == nil || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "reindex interrupted") {
		t.Fatalf("interrupted reindex: %v", err)
	}
	// Run again, it completes.
	if err := Run(context.Background(), "reindex", []string{"--genesis", genesis, "--db", dsn}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
}
