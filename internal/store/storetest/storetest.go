// Package storetest runs tests against both real backends: a fresh SQLite
// database and a fresh database in a throwaway PostgreSQL cluster that the test
// binary starts in a temporary directory and removes when it exits.
package storetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// Cluster is a running throwaway PostgreSQL server.
type Cluster struct {
	dir  string
	port int
	run  func(args ...string) *exec.Cmd
}

var (
	atExitMu    sync.Mutex
	atExit      []string
	clusterOnce sync.Once
	cluster     *Cluster
	clusterErr  error
	dbCounter   atomic.Int64
)

// Main wraps testing.M: it stops the PostgreSQL cluster (if a test started
// one) after the tests, whatever their outcome. Call from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if cluster != nil {
		cluster.Stop()
	}
	atExitMu.Lock()
	for _, dir := range atExit {
		os.RemoveAll(dir)
	}
	atExitMu.Unlock()
	os.Exit(code)
}

// RemoveAtExit removes dir when the test binary ends (through Main): for
// fixtures shared by several tests that outlive any one test's TempDir.
func RemoveAtExit(dir string) {
	atExitMu.Lock()
	atExit = append(atExit, dir)
	atExitMu.Unlock()
}

// ServerOptionsEnv names the environment variable whose value is appended to
// the throwaway cluster's server options (e.g. "-c fsync=on -c
// synchronous_commit=on -c full_page_writes=on" for a durable server, or
// "-c shared_preload_libraries=pg_stat_statements" to profile): the defaults
// favour test speed over durability.
const ServerOptionsEnv = "STORETEST_PG_OPTS"

// ServerPortEnv names the environment variable that points the tests at an
// already running server on 127.0.0.1 (user postgres, trust authentication)
// instead of a throwaway cluster: its databases are kept after the tests, to
// inspect them (EXPLAIN, statistics) or to reuse a large benchmark dataset.
const ServerPortEnv = "STORETEST_PG_PORT"

// StartCluster initialises and starts a PostgreSQL cluster in a new temporary
// directory on a free loopback port. As root, the server runs as the
// "postgres" user (PostgreSQL refuses to run as root).
func StartCluster() (*Cluster, error) {
	dir, err := os.MkdirTemp("", "permafrost-pg-")
	if err != nil {
		return nil, fmt.Errorf("storetest: temp dir: %w", err)
	}
	c, err := startCluster(dir, true)
	if err != nil {
		os.RemoveAll(dir)
	}
	return c, err
}

// StartClusterIn starts a PostgreSQL cluster whose data directory is
// dir/data, initialising it first when dir holds none: a cluster kept
// between runs (a benchmark's cached database, copied or reused). Stop
// still removes dir; Shutdown keeps it.
func StartClusterIn(dir string) (*Cluster, error) { return startCluster(dir, false) }

// startCluster starts the cluster of dir; throwaway: dir is removed when the
// server is stopped for a dead test binary (watch).
func startCluster(dir string, throwaway bool) (*Cluster, error) {
	bin, err := PGBinDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storetest: %w", err)
	}
	c := &Cluster{dir: dir}
	asRoot := os.Geteuid() == 0
	if asRoot {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("storetest: running as root needs a postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, fmt.Errorf("storetest: chown: %w", err)
		}
	}
	c.run = func(args ...string) *exec.Cmd {
		args[0] = filepath.Join(bin, args[0])
		if asRoot {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--"}, args...)...)
		}
		return exec.Command(args[0], args[1:]...)
	}
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		if out, err := c.run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("storetest: initdb: %w\n%s", err, out)
		}
	}
	// A copy of a cluster that was running when copied, or one left by an
	// interrupted run, has a stale pid file.
	os.Remove(filepath.Join(data, "postmaster.pid"))
	for attempt := 0; attempt < 5; attempt++ {
		c.port, err = FreePort()
		if err != nil {
			break
		}
		opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c shared_buffers=256MB", c.port, dir)
		if extra := os.Getenv(ServerOptionsEnv); extra != "" {
			opts += " " + extra // later -c options win
		}
		out, serr := c.run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-o", opts, "-w", "-t", "300", "start").CombinedOutput()
		if serr == nil {
			if err := c.watch(throwaway); err != nil {
				c.Stop()
				return nil, err
			}
			return c, nil
		}
		err = fmt.Errorf("storetest: pg_ctl start: %w\n%s", serr, out)
	}
	return nil, err
}

// watchScript waits for the test binary ($1) to end, then stops the server
// of the cluster directory $2 if it still runs (the remaining arguments: the
// pg_ctl stop command) and, for a throwaway cluster ($3 = 1), removes $2.
const watchScript = `pid=$1 dir=$2 rm=$3; shift 3
while kill -0 "$pid" 2>/dev/null; do sleep 1; done
[ -f "$dir/data/postmaster.pid" ] && "$@" >/dev/null 2>&1
[ "$rm" = 1 ] && rm -rf "$dir"
exit 0`

// watch starts a watcher process that stops the server when the test binary
// ends without stopping it: pg_ctl daemonizes the server, so a binary killed
// by a timeout (go test's panic, or a kill) would leave it running with its
// directory, a CPU-idle process holding memory and disk until the machine
// restarts. The watcher has a session of its own (a kill of the test's
// process group spares it) and no standard streams (go test waits for the
// binary's output to close).
func (c *Cluster) watch(throwaway bool) error {
	rm := "0"
	if throwaway {
		rm = "1"
	}
	stop := c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "fast", "-w", "-t", "600", "stop").Args
	cmd := exec.Command("sh", append([]string{"-c", watchScript, "storetest-watch", strconv.Itoa(os.Getpid()), c.dir, rm}, stop...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("storetest: start the cluster's watcher: %w", err)
	}
	return cmd.Process.Release()
}

// Shutdown stops the server cleanly (a checkpoint first) and keeps its
// directory, to start it again with StartClusterIn.
func (c *Cluster) Shutdown() error {
	if out, err := c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "fast", "-w", "-t", "600", "stop").CombinedOutput(); err != nil {
		return fmt.Errorf("storetest: pg_ctl stop: %w\n%s", err, out)
	}
	return nil
}

// Stop stops the server and removes its directory (not a server of
// ServerPortEnv's, which the tests did not start).
func (c *Cluster) Stop() {
	if c.run == nil {
		return
	}
	c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w", "stop").Run() //nolint:errcheck
	os.RemoveAll(c.dir)
}

// DSN of database name on the cluster.
func (c *Cluster) DSN(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, name)
}

// NewDatabase creates an empty database and returns its DSN.
func (c *Cluster) NewDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbCounter.Add(1))
	admin, err := store.Open(ctx, c.DSN("postgres"))
	if err != nil {
		return "", err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("storetest: create database: %w", err)
	}
	return c.DSN(name), nil
}

// PostgresDSN returns a fresh database on the shared per-binary cluster,
// starting it on first use. The test fails if PostgreSQL cannot start.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	clusterOnce.Do(func() {
		if p := os.Getenv(ServerPortEnv); p != "" {
			port, err := strconv.Atoi(p)
			if err != nil {
				clusterErr = fmt.Errorf("%s=%q: %w", ServerPortEnv, p, err)
				return
			}
			cluster = &Cluster{port: port}
			return
		}
		cluster, clusterErr = StartCluster()
	})
	if clusterErr != nil {
		t.Fatalf("postgres: %v", clusterErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, err := cluster.NewDatabase(ctx)
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	return dsn
}

// SQLiteDSN returns a fresh file-backed SQLite database in the test's temp dir.
func SQLiteDSN(t testing.TB) string {
	t.Helper()
	return "sqlite:" + filepath.Join(t.TempDir(), "permafrost.db")
}

// Open opens and migrates a database, closing it when the test ends.
func Open(t testing.TB, dsn string) *store.DB {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db
}

// Backends lists the backends every store-facing test runs on.
var Backends = []string{"sqlite", "postgres"}

// DSNFor returns a fresh database of the named backend.
func DSNFor(t testing.TB, backend string) string {
	if backend == "postgres" {
		return PostgresDSN(t)
	}
	return SQLiteDSN(t)
}

// ForEachBackend runs body as a subtest on a fresh, migrated database of each backend.
func ForEachBackend(t *testing.T, body func(t *testing.T, db *store.DB)) {
	t.Helper()
	for _, b := range Backends {
		t.Run(b, func(t *testing.T) {
			body(t, Open(t, DSNFor(t, b)))
		})
	}
}

// PGBinDir is the directory of the PostgreSQL server binaries (initdb,
// pg_ctl, postgres): from PATH, else the newest /usr/lib/postgresql/*/bin.
func PGBinDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real), nil
		}
		return filepath.Dir(p), nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(matches) > 0 {
		return filepath.Dir(matches[len(matches)-1]), nil
	}
	return "", fmt.Errorf("storetest: PostgreSQL binaries (initdb, pg_ctl) not found; install postgresql")
}

// FreePort is a TCP port free on 127.0.0.1 at the time of the call.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr := l.Addr().String()
	_, port, _ := strings.Cut(addr[strings.LastIndex(addr, ":")-0:], ":")
	return strconv.Atoi(port)
}
