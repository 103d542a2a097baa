package apibench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/permafrost-dev/permafrost/internal/metrics"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testing/proccpu"
)

// Cache holds the generated databases between runs: Dir/sqlite/ (the
// SQLite file and its manifest) and Dir/postgres/ (a PostgreSQL cluster
// directory, started for the run and stopped after it, and its manifest).
// A dataset is complete once its manifest is written; an interrupted
// generation is redone from scratch.
type Cache struct {
	Dir string
	Log *slog.Logger
	// Keep: a missing or stale dataset is an error instead of being
	// regenerated (a regeneration first deletes the cached one).
	Keep bool
}

// DefaultCacheDir is os.TempDir()/permafrost-apibench-<Version>.
func DefaultCacheDir() string {
	return filepath.Join(os.TempDir(), "permafrost-apibench-"+Version)
}

// Dataset is an open, generated database.
type Dataset struct {
	DB       *store.DB
	DSN      string // for another process (StartReplica)
	Manifest *Manifest
	Backend  string
	close    []func()
}

// Close closes the database (and stops the PostgreSQL server).
func (d *Dataset) Close() {
	for i := len(d.close) - 1; i >= 0; i-- {
		d.close[i]()
	}
}

// OpenSQLite opens the SQLite dataset of cfg, generating it first when the
// cache has none (or one of another configuration).
func (c *Cache) OpenSQLite(ctx context.Context, cfg Config) (*Dataset, error) {
	dir := filepath.Join(c.Dir, "sqlite")
	path := filepath.Join(dir, "permafrost.db")
	m, err := readManifest(dir)
	if err != nil || m.Version != Version || m.Config != cfg {
		if c.Keep {
			return nil, fmt.Errorf("no SQLite dataset of this version and configuration in %s, and the cache is kept", dir)
		}
		c.Log.Info("generating the SQLite dataset", "dir", dir)
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		db, err := store.Open(ctx, "sqlite:"+path)
		if err != nil {
			return nil, err
		}
		if err := db.Migrate(ctx); err != nil {
			db.Close()
			return nil, err
		}
		m, err = Generate(ctx, db, cfg, c.Log)
		if err != nil {
			db.Close()
			return nil, err
		}
		db.Close()
		if fi, err := os.Stat(path); err == nil {
			m.DatabaseBytes = fi.Size()
		}
		if err := writeManifest(dir, m); err != nil {
			return nil, err
		}
	}
	db, err := store.Open(ctx, "sqlite:"+path)
	if err != nil {
		return nil, err
	}
	// New migrations (e.g. indexes added since the dataset was made) apply here.
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := c.backfillMetrics(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	if err := SampleEVM(ctx, db, m); err != nil {
		db.Close()
		return nil, err
	}
	return &Dataset{DB: db, DSN: "sqlite:" + path, Manifest: m, Backend: "sqlite", close: []func(){func() { db.Close() }}}, nil
}

// SampleEVM fills m's sampled keys: the hashes of every 97th block's first
// transaction, those blocks' hashes, the deployers of contracts, and
// contracts whose deployment is indexed.
func SampleEVM(ctx context.Context, db *store.DB, m *Manifest) error {
	m.EVMTxHashes, m.EVMBlockHashes, m.EVMDeployers, m.EVMDeployed = nil, nil, nil, nil
	rows, err := db.QueryContext(ctx, `SELECT t.hash, t.block_hash FROM evm_txs t
		WHERE t.chain_key = 'C' AND t.tx_index = 0 AND t.block_number % 97 = 0 ORDER BY t.block_number LIMIT 1000`)
	if err != nil {
		return fmt.Errorf("sample evm txs: %w", err)
	}
	for rows.Next() {
		var tx, blk string
		if err := rows.Scan(store.ScanHex(&tx), store.ScanHex(&blk)); err != nil {
			rows.Close()
			return fmt.Errorf("sample evm txs: %w", err)
		}
		m.EVMTxHashes, m.EVMBlockHashes = append(m.EVMTxHashes, tx), append(m.EVMBlockHashes, blk)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return fmt.Errorf("sample evm txs: %w", err)
	}
	for _, s := range []struct {
		q   string
		dst *[]string
	}{
		{`SELECT DISTINCT deployer_address FROM evm_contracts WHERE chain_key = 'C' AND creation_kind = 'tx' LIMIT 100`, &m.EVMDeployers},
		// Deployments the index has: by a tx, or inside one with traces.
		{`SELECT address FROM evm_contracts WHERE chain_key = 'C' AND (creation_kind = 'tx' OR deployer_contract_address <> '')
			ORDER BY address LIMIT 100`, &m.EVMDeployed},
	} {
		if err := sampleStrings(ctx, db, s.q, s.dst); err != nil {
			return err
		}
	}
	if len(m.EVMTxHashes) == 0 || len(m.EVMDeployers) == 0 || len(m.EVMDeployed) == 0 {
		return fmt.Errorf("sample: %d evm txs, %d deployers, %d deployed contracts", len(m.EVMTxHashes), len(m.EVMDeployers), len(m.EVMDeployed))
	}
	return nil
}

func sampleStrings(ctx context.Context, db *store.DB, q string, dst *[]string) error {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return fmt.Errorf("sample: %w", err)
		}
		*dst = append(*dst, a)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	return nil
}

// OpenPostgres starts the cached PostgreSQL cluster and opens its dataset;
// without one, it creates the cluster and fills it: by copying the SQLite
// dataset of cfg when the cache holds one, else by generating the dataset
// in the cluster itself (fillPostgres), so that a large one never needs
// the SQLite file beside it. The generator is seeded, so both ways give
// the same rows and both backends answer the same queries.
func (c *Cache) OpenPostgres(ctx context.Context, cfg Config) (*Dataset, error) {
	dir := filepath.Join(c.Dir, "postgres")
	m, err := readManifest(dir)
	fresh := err != nil || m.Version != Version || m.Config != cfg
	if fresh && c.Keep {
		return nil, fmt.Errorf("no PostgreSQL dataset of this version and configuration in %s, and the cache is kept", dir)
	}
	if fresh {
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	pg, err := startCluster(ctx, dir)
	if err != nil {
		return nil, err
	}
	ds := &Dataset{Backend: "postgres", close: []func(){pg.stop}}
	if fresh {
		if m, err = c.fillPostgres(ctx, pg, cfg); err != nil {
			ds.Close()
			return nil, err
		}
		if err := writeManifest(dir, m); err != nil {
			ds.Close()
			return nil, err
		}
	}
	db, err := store.Open(ctx, pg.dsn())
	if err != nil {
		ds.Close()
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		ds.Close()
		return nil, err
	}
	if err := c.backfillMetrics(ctx, db); err != nil {
		db.Close()
		ds.Close()
		return nil, err
	}
	// Statistics and visibility as autovacuum would have them after a load
	// (and after a migration added indexes or rewrote rows: until vacuumed,
	// the rewritten rows' pages are not all-visible and every index-only
	// scan reads the table too). Quick when there is nothing to do.
	if _, err := db.ExecContext(ctx, `VACUUM ANALYZE`); err != nil {
		db.Close()
		ds.Close()
		return nil, fmt.Errorf("vacuum analyze: %w", err)
	}
	if err := SampleEVM(ctx, db, m); err != nil {
		db.Close()
		ds.Close()
		return nil, err
	}
	ds.DB, ds.DSN, ds.Manifest = db, pg.dsn(), m
	ds.close = append(ds.close, func() { db.Close() })
	return ds, nil
}

// hasSQLite reports whether the cache holds the SQLite dataset of cfg.
func (c *Cache) hasSQLite(cfg Config) bool {
	m, err := readManifest(filepath.Join(c.Dir, "sqlite"))
	return err == nil && m.Version == Version && m.Config == cfg
}

// fillPostgres fills a new database of pg with the dataset of cfg: a copy
// of the cached SQLite dataset when there is one (copyDatabase), else
// generated in the database itself (the bulk path, Generate: large
// transactions, the deferred indexes built after the last row), then
// VACUUM ANALYZE, the statistics and visibility map autovacuum gives an
// operator's database after a load. It logs the wall time and the CPU time
// of this process and of the server, and returns the manifest with the
// database's size.
func (c *Cache) fillPostgres(ctx context.Context, pg *pgCluster, cfg Config) (*Manifest, error) {
	if err := pg.createDB(ctx); err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, pg.dsn())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	server, ok := ServerMeter(ctx, db)
	if !ok {
		server = Meter{Read: func() time.Duration { return 0 }}
	}
	start, self0, server0 := time.Now(), proccpu.Process(os.Getpid()), server.Read()
	var m *Manifest
	if c.hasSQLite(cfg) {
		c.Log.Info("copying the SQLite dataset into PostgreSQL", "dir", pg.dir)
		m, err = c.copySQLite(ctx, db, cfg)
	} else {
		c.Log.Info("generating the dataset in PostgreSQL", "dir", pg.dir)
		m, err = generateVacuumed(ctx, db, cfg, c.Log)
	}
	if err != nil {
		return nil, err
	}
	if err := db.QueryRowContext(ctx, `SELECT pg_database_size(current_database())`).Scan(&m.DatabaseBytes); err != nil {
		return nil, fmt.Errorf("database size: %w", err)
	}
	c.Log.Info("filled PostgreSQL", "elapsed", time.Since(start).Round(time.Second),
		"cpu", (proccpu.Process(os.Getpid()) - self0).Round(time.Second), "server_cpu", (server.Read() - server0).Round(time.Second),
		"bytes", m.DatabaseBytes)
	return m, nil
}

// copySQLite copies the cached SQLite dataset of cfg into db (migrated,
// indexed and vacuumed by copyDatabase) and returns its manifest.
func (c *Cache) copySQLite(ctx context.Context, db *store.DB, cfg Config) (*Manifest, error) {
	src, err := c.OpenSQLite(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if err := copyDatabase(ctx, src.DB, db, c.Log); err != nil {
		return nil, fmt.Errorf("copy to postgres: %w", err)
	}
	return src.Manifest, nil
}

// generateVacuumed generates the dataset of cfg into db, then vacuums it.
func generateVacuumed(ctx context.Context, db *store.DB, cfg Config, log *slog.Logger) (*Manifest, error) {
	if err := db.Migrate(ctx); err != nil {
		return nil, err
	}
	m, err := Generate(ctx, db, cfg, log)
	if err != nil {
		return nil, fmt.Errorf("generate in postgres: %w", err)
	}
	if _, err := db.ExecContext(ctx, `VACUUM ANALYZE`); err != nil {
		return nil, fmt.Errorf("vacuum analyze: %w", err)
	}
	return m, nil
}

// pgCluster is a PostgreSQL server on a cluster directory kept between
// runs (storetest's throwaway cluster is removed at exit).
type pgCluster struct {
	dir  string
	port int
	run  func(ctx context.Context, args ...string) *exec.Cmd
}

const pgDatabase = "apibench"

func (p *pgCluster) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.port, pgDatabase)
}

func startCluster(ctx context.Context, dir string) (*pgCluster, error) {
	bin, err := storetest.PGBinDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := &pgCluster{dir: dir}
	asRoot := os.Geteuid() == 0
	var uid, gid int
	if asRoot {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs a postgres user: %w", err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	p.run = func(ctx context.Context, args ...string) *exec.Cmd {
		args[0] = filepath.Join(bin, args[0])
		if asRoot {
			return exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--"}, args...)...)
		}
		return exec.CommandContext(ctx, args[0], args[1:]...)
	}
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if out, err := p.run(ctx, "initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("initdb: %w\n%s", err, out)
		}
	}
	// A server left running by an interrupted run holds the directory.
	if _, err := os.Stat(filepath.Join(data, "postmaster.pid")); err == nil {
		_ = p.run(ctx, "pg_ctl", "-D", data, "-m", "fast", "-w", "stop").Run()
	}
	if p.port, err = storetest.FreePort(); err != nil {
		return nil, err
	}
	// The throwaway test cluster's settings (storetest), and a cache size
	// that tells the planner the data is in memory. The copy's index builds
	// sort in memory (x5px's utxo_addresses indexes hold 5.6 M entries
	// each); it does not change how queries run.
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c synchronous_commit=off "+
		"-c full_page_writes=off -c max_connections=200 -c shared_buffers=256MB -c effective_cache_size=4GB "+
		"-c maintenance_work_mem=1GB", p.port, dir)
	if out, err := p.run(ctx, "pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-o", opts, "-w", "-t", "120", "start").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pg_ctl start: %w\n%s", err, out)
	}
	return p, nil
}

func (p *pgCluster) createDB(ctx context.Context) error {
	admin, err := store.Open(ctx, strings.Replace(p.dsn(), "/"+pgDatabase+"?", "/postgres?", 1))
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+pgDatabase); err != nil {
		return fmt.Errorf("drop database: %w", err)
	}
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+pgDatabase); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	return nil
}

func (p *pgCluster) stop() {
	// Not tied to the run's context: the server must stop even after a cancel.
	_ = p.run(context.Background(), "pg_ctl", "-D", filepath.Join(p.dir, "data"), "-m", "fast", "-w", "stop").Run()
}

// backfillMetrics rolls up the EVM chain metrics of a dataset written before
// the rollups existed (the generator applies the bare EVM indexer): once per
// cached database, from its indexed rows, as `serve` would have written them.
func (c *Cache) backfillMetrics(ctx context.Context, db *store.DB) error {
	start := time.Now()
	n, err := metrics.BackfillEVM(ctx, db, "C", 500)
	if err != nil {
		return err
	}
	if n > 0 {
		c.Log.Info("chain metrics rolled up", "blocks", n, "elapsed", time.Since(start).Round(time.Second))
	}
	return nil
}
