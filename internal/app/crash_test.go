package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

func TestMain(m *testing.M) {
	// Re-executed as the indexer child of the crash test.
	if args := os.Getenv("PERMAFROST_CHILD_ARGS"); args != "" {
		err := Run(context.Background(), "index", strings.Split(args, "\x1f"), io.Discard, io.Discard)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	storetest.Main(m)
}

// volatile columns differ between runs by design (wall-clock times, rates,
// and the ingester's state of the moment in chains: a stall, or a notice a
// run that had nothing left to fetch never learnt).
var volatile = map[string]bool{"updated_at": true, "rate": true, "node_height": true, "applied_at": true, "created_at": true,
	"notice_since": true, "stalled_since": true, "notice": true, "stall_error": true}

// dump fingerprints every table of the index, row by row, in a stable order.
func dump(t *testing.T, db *store.DB) map[string]string {
	t.Helper()
	ctx := context.Background()
	q := `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`
	if db.Dialect() == store.Postgres {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`
	}
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		if n != "meta" && n != "page_tokens" && n != "schema_migrations" && n != "writer_lease" {
			tables = append(tables, n)
		}
	}
	rows.Close()
	out := map[string]string{}
	for _, table := range tables {
		r, err := db.QueryContext(ctx, "SELECT * FROM "+table)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := r.Columns()
		var lines []string
		for r.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := r.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			for i, v := range vals {
				if volatile[cols[i]] {
					continue
				}
				if bs, ok := v.([]byte); ok {
					v = hex.EncodeToString(bs)
				}
				fmt.Fprintf(&b, "%s=%v|", cols[i], v)
			}
			lines = append(lines, b.String())
		}
		r.Close()
		sort.Strings(lines)
		h := sha256.Sum256([]byte(strings.Join(lines, "\n")))
		out[table] = fmt.Sprintf("%d rows %x", len(lines), h[:8])
	}
	return out
}

// indexes lists the database's indexes and their definitions (and its
// primary key constraints on PostgreSQL).
func indexes(t *testing.T, db *store.DB) map[string]string {
	t.Helper()
	q := `SELECT name, COALESCE(sql, '') FROM sqlite_master WHERE type = 'index'`
	if db.Dialect() == store.Postgres {
		// With the tables' primary key constraints: a catch-up defers some.
		q = `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'
			UNION ALL SELECT 'constraint ' || conname, pg_get_constraintdef(oid) FROM pg_constraint
			WHERE contype = 'p' AND connamespace = 'public'::regnamespace`
	}
	rows, err := db.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		out[name] = def
	}
	return out
}

// Killing the indexer (SIGKILL) at random moments and restarting it must end
// in exactly the index an uninterrupted run builds: no gap, no duplicate.
// With --catch-up the kills land while the indexes are deferred, and while
// they are built: the restarts resume the catch-up, and the last run leaves
// the same rows and the same indexes.
func TestCrashRestartIdenticalIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns many processes")
	}
	node := testenv.ReplayNode(t)
	genesisPath := testenv.DevnetDir(t) + "/genesis.json"
	for _, tc := range []struct{ backend, mode string }{
		{"sqlite", ""}, {"postgres", ""}, {"sqlite", "--catch-up"}, {"postgres", "--catch-up"},
	} {
		backend := tc.backend
		t.Run(backend+tc.mode, func(t *testing.T) {
			plain := func(dsn string) []string {
				return []string{"--node", node, "--genesis", genesisPath, "--db", dsn, "--batch-size", "2", "--until-tip"}
			}
			args := func(dsn string) []string {
				if tc.mode != "" {
					return append(plain(dsn), tc.mode)
				}
				return plain(dsn)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			// Reference: one uninterrupted run, without a catch-up.
			refDSN := storetest.DSNFor(t, backend)
			if err := Run(ctx, "index", plain(refDSN), io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
			ref := storetest.Open(t, refDSN)
			want := dump(t, ref)
			wantIndexes := indexes(t, ref)

			dsn := storetest.DSNFor(t, backend)
			rng := rand.New(rand.NewSource(42))
			kills := 0
			for attempt := 0; kills < 20 && attempt < 200; attempt++ {
				cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), "PERMAFROST_CHILD_ARGS="+strings.Join(args(dsn), "\x1f"))
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				select {
				case err := <-done:
					if err != nil && strings.Contains(stderr.String(), store.ErrWriterBusy.Error()) {
						// A killed writer's PostgreSQL session keeps the writer
						// lock until its backend, busy with the statement it was
						// sent, notices the client is gone and rolls back: the
						// restart is refused meanwhile, as it should be.
						time.Sleep(100 * time.Millisecond)
						continue
					}
					if err != nil {
						t.Fatalf("indexer failed: %v\n%s", err, stderr.String())
					}
					// Finished before the kill: start over on a fresh database
					// so every round has something left to interrupt.
					if kills < 20 {
						dsn = storetest.DSNFor(t, backend)
					}
				case <-time.After(time.Duration(50+rng.Intn(700)) * time.Millisecond):
					cmd.Process.Kill()
					<-done
					kills++
				}
			}
			if kills < 20 {
				t.Fatalf("only %d kills landed", kills)
			}
			err := Run(ctx, "index", args(dsn), io.Discard, io.Discard)
			for errors.Is(err, store.ErrWriterBusy) && ctx.Err() == nil { // the last killed session, as above
				time.Sleep(100 * time.Millisecond)
				err = Run(ctx, "index", args(dsn), io.Discard, io.Discard)
			}
			if err != nil {
				t.Fatal(err)
			}
			db := storetest.Open(t, dsn)
			got := dump(t, db)
			if gotIndexes := indexes(t, db); fmt.Sprint(gotIndexes) != fmt.Sprint(wantIndexes) {
				t.Errorf("indexes after %d kills:\n%v\nuninterrupted:\n%v", kills, gotIndexes, wantIndexes)
			}
			for table, w := range want {
				if got[table] != w {
					t.Errorf("%s: after %d kills %s, uninterrupted %s", table, kills, got[table], w)
				}
			}
			if len(got) != len(want) {
				t.Errorf("tables: %d vs %d", len(got), len(want))
			}
		})
	}
}

// `permafrost reindex` rebuilds every derived table from the stored raw
// blocks alone: the result equals the index ingestion built.
func TestReindexCommand(t *testing.T) {
	node := testenv.ReplayNode(t)
	genesisPath := testenv.DevnetDir(t) + "/genesis.json"
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			dsn := storetest.DSNFor(t, backend)
			args := []string{"--node", node, "--genesis", genesisPath, "--db", dsn}
			if err := Run(ctx, "index", append(args, "--until-tip"), io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
			db := storetest.Open(t, dsn)
			before := dump(t, db)
			// Damage a derived table: reindex must not depend on it.
			if _, err := db.ExecContext(ctx, `DELETE FROM utxos WHERE created_chain = 'X'`); err != nil {
				t.Fatal(err)
			}
			// The mark 0111_avax_supply.sql leaves in a database indexed
			// before it: reindex recounts the totals and clears it.
			if _, err := db.ExecContext(ctx, `INSERT INTO avax_supply (chain_key) VALUES ('')`); err != nil {
				t.Fatal(err)
			}
			if err := Run(ctx, "reindex", args, io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
			after := dump(t, db)
			for table, want := range before {
				if after[table] != want {
					t.Errorf("%s: after reindex %s, before %s", table, after[table], want)
				}
			}

			var out bytes.Buffer
			if err := Run(ctx, "status", []string{"--db", dsn, "--json"}, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			var st []ChainStatus
			if err := json.Unmarshal(out.Bytes(), &st); err != nil {
				t.Fatalf("status --json: %v\n%s", err, out.String())
			}
			want := map[string]int64{"P": 41, "X": 19, "C": 37}
			for _, s := range st {
				if s.IndexedHeight != want[s.Chain] || s.NodeHeight != want[s.Chain] || s.BlockchainID == "" {
					t.Errorf("status %+v", s)
				}
				delete(want, s.Chain)
			}
			if len(want) != 0 {
				t.Errorf("status lacks %v", want)
			}
		})
	}
}
