package livenet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// follower is a `permafrost serve` following the live network from
// genesis while the workload runs, killed once mid-workload.
type follower struct {
	t       *testing.T
	n       *Network
	bin     string
	dir     string
	dsn     string
	pf      *permafrost
	sampler *lagSampler
	stopLag context.CancelFunc
	lagDone chan struct{}
	l1Keys  []string
	// rep collects the differential checks, from those made while the
	// workload's stakers validate (whileStaking) to those after it.
	rep *diffReport
	// potential: the node's potential rewards of the workload's stakers,
	// read while they validate.
	potential map[string]string

	buildTime                 time.Duration
	startedAt                 time.Time
	killedAt, restartedAt     time.Time
	heightsAtKill             map[string]int64
	killTimer                 *time.Timer
	catchUp, checks, reindexT time.Duration
	enrichT                   time.Duration
}

// followNetwork builds the permafrost binary, starts it on a fresh SQLite
// database against the L1 node (which serves P, X, C and the L1) and
// schedules one SIGKILL + restart after killAfter.
func followNetwork(t *testing.T, n *Network, killAfter time.Duration) *follower {
	t.Helper()
	f := &follower{t: t, n: n, dir: filepath.Join(filepath.Dir(n.TmpNet.Dir), "permafrost"), rep: newDiffReport(nil)}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	f.bin = buildPermafrost(t)
	f.buildTime = time.Since(start)
	f.dsn = "sqlite:" + filepath.Join(f.dir, "live.db")
	f.l1Keys = []string{n.L1.EVMChainID.String(), n.L1.BlockchainID.String()}
	f.startedAt = time.Now()
	f.pf = startPermafrost(t, f.bin, n.L1NodeURI(), n.GenesisPath, f.dsn, f.dir)
	f.sampler = newLagSampler()
	ctx, cancel := context.WithCancel(context.Background())
	f.stopLag, f.lagDone = cancel, make(chan struct{})
	current := f.pf
	go func() {
		defer close(f.lagDone)
		f.sampler.run(ctx, func() *permafrost { return current }, f.l1Keys, 200*time.Millisecond)
	}()
	t.Cleanup(func() { f.killTimer.Stop() })
	f.killTimer = time.AfterFunc(killAfter, func() {
		h, _ := f.pf.servedHeights(context.Background(), f.l1Keys...)
		f.heightsAtKill = h
		f.killedAt = time.Now()
		f.pf.kill()
		time.Sleep(2 * time.Second)
		f.restartedAt = time.Now()
		f.pf.start()
	})
	return f
}

// waitTips waits until Permafrost serves every chain's node tip.
func (f *follower) waitTips(ctx context.Context, tips map[string]uint64) error {
	start := time.Now()
	defer func() { f.catchUp = time.Since(start) }()
	return f.waitServed(ctx, f.pf, tips)
}

// whileStaking compares the validators while the workload's stakers (and
// their delegators) validate, once Permafrost serves the node's P-chain tip.
func (f *follower) whileStaking(ctx context.Context, res *WorkloadResult) {
	var h struct {
		Height json.Number `json:"height"`
	}
	if err := rpcCall(ctx, f.n.L1NodeURI()+"/ext/bc/P", "platform.getHeight", map[string]any{}, &h); err != nil {
		f.rep.check("P validators while staking", "node height", []string{err.Error()})
		return
	}
	tip, _ := strconv.ParseUint(h.Height.String(), 10, 64)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		served, err := f.pf.servedHeights(wctx, f.l1Keys...)
		if err == nil && served[ChainP] >= int64(tip) {
			break
		}
		select {
		case <-wctx.Done():
			f.rep.check("P validators while staking", "catch-up", []string{fmt.Sprintf("permafrost serves P %v, node tip %d", served, tip)})
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	c := &comparer{t: f.t, n: f.n, res: res, pf: f.pf.url, node: f.n.L1NodeURI(), rep: f.rep}
	c.validators(ctx, "while staking")
	p, err := stakerPotentials(ctx, c.node, res)
	if err != nil {
		f.rep.check("P validators while staking", "potential rewards", []string{err.Error()})
	}
	f.potential = p
}

// waitServed waits until p serves every chain's tip.
func (f *follower) waitServed(ctx context.Context, p *permafrost, tips map[string]uint64) error {
	for {
		if err := p.exited(); err != nil {
			return fmt.Errorf("%v\n%s", err, p.logTail())
		}
		h, err := p.servedHeights(ctx, f.l1Keys...)
		if err == nil {
			behind := false
			for _, c := range []string{ChainP, ChainX, ChainC, ChainL1} {
				if h[c] < int64(tips[c]) {
					behind = true
				}
			}
			if !behind {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("permafrost did not reach the tips %v: serves %v (%v)\n%s", tips, h, err, p.logTail())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// lag reports median and max seconds from each block's acceptance by the
// node to Permafrost serving it, per chain; blocks accepted while
// Permafrost was killed or restarting count apart, blocks accepted before
// it started (the L1's creation) not at all.
func (f *follower) lag(acc map[string]map[int64]time.Time) []string {
	var out []string
	var allLive []float64
	for _, chain := range []string{ChainP, ChainX, ChainC, ChainL1} {
		var live, restart []float64
		hs := make([]int64, 0, len(acc[chain]))
		for h := range acc[chain] {
			hs = append(hs, h)
		}
		sort.Slice(hs, func(i, j int) bool { return hs[i] < hs[j] })
		for _, h := range hs {
			at := acc[chain][h]
			seen, ok := f.sampler.firstServed(chain, h)
			if !ok || at.Before(f.startedAt) {
				continue
			}
			l := max(seen.Sub(at).Seconds(), 0)
			if !f.killedAt.IsZero() && !at.Before(f.killedAt.Add(-time.Second)) && seen.After(f.killedAt) && f.heightsAtKill[chain] < h && at.Before(f.restartedAt.Add(10*time.Second)) {
				restart = append(restart, l)
				continue
			}
			live = append(live, l)
		}
		allLive = append(allLive, live...)
		out = append(out, fmt.Sprintf("%s: following %s; accepted around the kill: %s", chain, stats(live), stats(restart)))
	}
	out = append(out, fmt.Sprintf("all chains following: %s", stats(allLive)))
	return out
}

// volatile columns differ between two runs by design (wall-clock times,
// rates, the node's tip when last asked), as in internal/app's crash test.
// enrich_token_meta.block_number is the tip the enrichment read a token's
// metadata at: when it ran, not what the chain holds.
var volatile = map[string]bool{"updated_at": true, "rate": true, "node_height": true, "applied_at": true,
	"created_at": true, "stalled_since": true, "notice_since": true, "metadata_updated_at": true,
	"enrich_token_meta.block_number": true}

// dump fingerprints every table of a database, row by row in a stable
// order; rows maps a table to its sorted rows for showing differences.
func dump(ctx context.Context, dsn string) (sums map[string]string, rows map[string][]string, err error) {
	db, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	q := `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`
	if db.Dialect() == store.Postgres {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`
	}
	r, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	var tables []string
	for r.Next() {
		var n string
		if err := r.Scan(&n); err != nil {
			r.Close()
			return nil, nil, err
		}
		// writer_lease names the PostgreSQL writer-lock holder (SQLite
		// locks a file): who wrote, not what.
		if n != "meta" && n != "page_tokens" && n != "schema_migrations" && n != "writer_lease" {
			tables = append(tables, n)
		}
	}
	r.Close()
	sums, rows = map[string]string{}, map[string][]string{}
	for _, table := range tables {
		r, err := db.QueryContext(ctx, "SELECT * FROM "+table)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", table, err)
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
				r.Close()
				return nil, nil, fmt.Errorf("%s: %w", table, err)
			}
			var b bytes.Buffer
			for i, v := range vals {
				if volatile[cols[i]] || volatile[table+"."+cols[i]] {
					continue
				}
				// One form per value whichever backend stored it: bytes
				// as hex (BYTEA, or a BLOB in a SQLite TEXT column of
				// 0020_evm_binary_keys), booleans as SQLite's 0/1.
				switch x := v.(type) {
				case []byte:
					v = hex.EncodeToString(x)
				case bool:
					v = 0
					if x {
						v = 1
					}
				}
				fmt.Fprintf(&b, "%s=%v|", cols[i], v)
			}
			lines = append(lines, b.String())
		}
		r.Close()
		sort.Strings(lines)
		h := sha256.Sum256([]byte(strings.Join(lines, "\n")))
		sums[table] = fmt.Sprintf("%d rows %x", len(lines), h[:8])
		rows[table] = lines
	}
	return sums, rows, nil
}

// indexFromScratch runs `permafrost index --until-tip` on the fresh
// database dsn, logging to permafrost-<name>.log.
func (f *follower) indexFromScratch(ctx context.Context, dsn, name string) (time.Duration, error) {
	logPath := filepath.Join(f.dir, "permafrost-"+name+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		return 0, err
	}
	defer lf.Close()
	cmd := exec.CommandContext(ctx, f.bin, "index", "--until-tip", "--node", f.n.L1NodeURI(), "--genesis", f.n.GenesisPath, "--db", dsn)
	cmd.Stdout, cmd.Stderr = lf, lf
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	if err != nil {
		b, _ := os.ReadFile(logPath)
		return took, fmt.Errorf("permafrost index --until-tip: %v\n%s", err, truncate(string(b), 4000))
	}
	return took, nil
}

// enrich runs `permafrost serve` on dsn (its log in dir) until its
// database stops changing (enrichment done) or equals the live one, at most
// two minutes.
func (f *follower) enrich(ctx context.Context, dsn, dir string) (took time.Duration, err error) {
	live, _, err := dump(ctx, f.dsn)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	p := startPermafrost(f.t, f.bin, f.n.L1NodeURI(), f.n.GenesisPath, dsn, dir)
	defer p.stop()
	start := time.Now()
	defer func() { took = time.Since(start) }()
	var prev map[string]string
	stable := 0
	for time.Since(start) < 2*time.Minute {
		time.Sleep(2 * time.Second)
		if err := p.exited(); err != nil {
			return 0, fmt.Errorf("%v\n%s", err, p.logTail())
		}
		cur, _, err := dump(ctx, dsn)
		if err != nil {
			return 0, err
		}
		if reflect.DeepEqual(cur, live) {
			return 0, nil
		}
		if reflect.DeepEqual(cur, prev) {
			stable++
		} else {
			stable = 0
		}
		if stable >= 4 && time.Since(start) > 15*time.Second {
			return 0, nil
		}
		prev = cur
	}
	return 0, nil
}

// knownFindings are the differences the suite found that the project has
// not fixed yet (see knownFinding), for this run's contracts: none now. The
// WETH9 Deposit/Withdrawal finding was fixed in internal/decode/evm
// (wrapped.go), the metadata of an NFT burned after enrichment in
// internal/enrich (readURIs reads a burned token's URI before its burn).
func knownFindings(*WorkloadResult) []knownFinding { return nil }

// compareDatabases compares the live-following database with the one
// indexed from scratch, table by table; differing rows are shown.
func compareDatabases(t *testing.T, live, scratch string, known []knownFinding) (tables int, differing []string) {
	t.Helper()
	ctx := context.Background()
	ls, lr, err := dump(ctx, live)
	if err != nil {
		t.Fatalf("dump of the live database: %v", err)
	}
	ss, sr, err := dump(ctx, scratch)
	if err != nil {
		t.Fatalf("dump of the database indexed from scratch: %v", err)
	}
	names := map[string]bool{}
	for k := range ls {
		names[k] = true
	}
	for k := range ss {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, table := range sorted {
		if ls[table] == ss[table] {
			continue
		}
		differing = append(differing, table)
		only := func(a, b []string) []string {
			in := map[string]bool{}
			for _, x := range b {
				in[x] = true
			}
			var out []string
			for _, x := range a {
				if !in[x] {
					out = append(out, x)
				}
			}
			return out
		}
		onlyLive, onlyScratch := only(lr[table], sr[table]), only(sr[table], lr[table])
		// A table whose differing rows are all a known finding's.
		why, allKnown := "", len(onlyLive)+len(onlyScratch) > 0
		for _, x := range append(append([]string(nil), onlyLive...), onlyScratch...) {
			w, ok := knownAs(known, "table:"+table, x)
			allKnown, why = allKnown && ok, w
		}
		report := t.Errorf
		if allKnown {
			report = t.Logf
			t.Logf("KNOWN FINDING (%s): table %s", why, table)
		}
		report("table %s: live %s, from scratch %s", table, ls[table], ss[table])
		for i, x := range onlyLive {
			if i == 5 {
				break
			}
			report("  only live:         %s", truncate(x, 600))
		}
		for i, x := range onlyScratch {
			if i == 5 {
				break
			}
			report("  only from scratch: %s", truncate(x, 600))
		}
	}
	return len(sorted), differing
}

// verify is the Permafrost half of the live test, after the workload: wait
// for every tip, compare with the nodes, index from scratch and compare
// the databases, report lag and timings.
func (f *follower) verify(t *testing.T, res *WorkloadResult) {
	t.Helper()
	f.killTimer.Stop()
	if f.killedAt.IsZero() {
		t.Errorf("permafrost was not killed during the workload (it ended before the kill)")
	} else {
		t.Logf("permafrost: SIGKILL at %s (serving %v), restarted %s later", f.killedAt.Format("15:04:05.000"), f.heightsAtKill, f.restartedAt.Sub(f.killedAt).Round(time.Millisecond))
		served := false
		for _, h := range f.heightsAtKill {
			served = served || h > 0
		}
		if !served {
			t.Errorf("permafrost served no block before it was killed: the kill did not interrupt ingestion")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tips, err := f.n.Tips(ctx)
	if err != nil {
		t.Fatalf("node tips: %v", err)
	}
	if err := f.waitTips(ctx, tips); err != nil {
		t.Fatalf("%v", err)
	}
	t.Logf("permafrost reached the tips %v %s after the workload", tips, f.catchUp.Round(100*time.Millisecond))
	f.stopLag()
	<-f.lagDone

	start := time.Now()
	known := knownFindings(res)
	f.rep.known = known
	c := &comparer{t: t, n: f.n, res: res, pf: f.pf.url, node: f.n.L1NodeURI(), tips: tips, rep: f.rep, potential: f.potential}
	c.platformRPC(ctx)
	c.blocksAndWrappers(ctx)
	c.utxos(ctx)
	c.evmBalances(ctx)
	c.erc20Balances(ctx)
	c.evmTxs(ctx)
	c.nftBalances(ctx)
	c.evmBlocks(ctx)
	c.validators(ctx, "after the workload")
	c.pxTxs(ctx)
	if in, err := newTxInspector(ctx, c); err != nil {
		c.rep.check("P/X/C tx details", "node decoders", []string{err.Error()})
	} else {
		c.pxTxDetails(ctx, in)
		c.cAtomicTxs(ctx, in)
	}
	c.l1Validators(ctx)
	for _, s := range []string{
		"ERC-721/1155 of the L1 (the workload deploys none there) and NFT metadata (no node counterpart)",
	} {
		c.rep.notCompared(s)
	}
	c.rep.log(t)
	acc := c.acceptance(ctx)
	for _, l := range f.lag(acc) {
		t.Logf("lag (node acceptance -> served by permafrost): %s", l)
	}
	f.checks = time.Since(start)

	// The live database must be what indexing the same chains from
	// scratch after the fact builds, on SQLite and on PostgreSQL.
	f.pf.stop()
	scratch := "sqlite:" + filepath.Join(f.dir, "scratch.db")
	if f.reindexT, err = f.indexFromScratch(ctx, scratch, "index"); err != nil {
		t.Fatalf("%v", err)
	}
	// Enrichment (token metadata, NFT metadata, deployer traces) is asked
	// from the node by `serve`, not by `index`: let a serve on the new
	// database do it, as the live one did, before comparing.
	if f.enrichT, err = f.enrich(ctx, scratch, filepath.Join(f.dir, "scratch-serve")); err != nil {
		t.Fatalf("%v", err)
	}
	tables, differing := compareDatabases(t, f.dsn, scratch, known)
	t.Logf("database: live-following (killed once) vs indexed from scratch (%s): %d tables, %d differ %v",
		f.reindexT.Round(100*time.Millisecond), tables, len(differing), differing)

	pgStart := time.Now()
	cluster, err := storetest.StartCluster()
	if err != nil {
		t.Fatalf("postgres for the from-scratch index: %v", err)
	}
	t.Cleanup(cluster.Stop)
	pg, err := cluster.NewDatabase(ctx)
	if err != nil {
		t.Fatalf("%v", err)
	}
	pgIndexT, err := f.indexFromScratch(ctx, pg, "index-postgres")
	if err != nil {
		t.Fatalf("%v", err)
	}
	pgEnrichT, err := f.enrich(ctx, pg, filepath.Join(f.dir, "scratch-postgres-serve"))
	if err != nil {
		t.Fatalf("%v", err)
	}
	tables, differing = compareDatabases(t, f.dsn, pg, known)
	t.Logf("database: live-following on SQLite vs indexed from scratch on PostgreSQL (%s): %d tables, %d differ %v",
		pgIndexT.Round(100*time.Millisecond), tables, len(differing), differing)
	f.untraced(ctx, t, c)

	t.Logf("permafrost timings: binary build %s, catch-up after the workload %s, differential checks %s, index from scratch %s, its enrichment %s; "+
		"PostgreSQL: cluster start, index, enrichment and comparison %s (index %s, enrichment %s)",
		f.buildTime.Round(100*time.Millisecond), f.catchUp.Round(100*time.Millisecond), f.checks.Round(100*time.Millisecond), f.reindexT.Round(100*time.Millisecond), f.enrichT.Round(100*time.Millisecond),
		time.Since(pgStart).Round(100*time.Millisecond), pgIndexT.Round(100*time.Millisecond), pgEnrichT.Round(100*time.Millisecond))
	t.Logf("permafrost logs and databases: %s", f.dir)
}

// untraced indexes the network once more without call traces (`serve
// --no-traces` from genesis, as against a node without debug-tracer) and
// compares what the index cannot vouch for then with the node: the WAVAX
// tokens' balances (their Withdrawal events are unchecked without traces:
// the API asks balanceOf) and the native balances (value moved inside
// contracts: eth_getBalance), at every height.
func (f *follower) untraced(ctx context.Context, t *testing.T, c *comparer) {
	t.Helper()
	dsn := "sqlite:" + filepath.Join(f.dir, "untraced.db")
	logDir := filepath.Join(f.dir, "untraced-serve")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := startPermafrost(t, f.bin, f.n.L1NodeURI(), f.n.GenesisPath, dsn, logDir, "--no-traces")
	defer p.stop()
	if err := f.waitServed(ctx, p, c.tips); err != nil {
		t.Fatalf("%v", err)
	}
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("%v", err)
	}
	var tokens int
	err = db.QueryRowContext(ctx, `SELECT COUNT(*) FROM evm_untrusted_tokens`).Scan(&tokens)
	db.Close()
	if err != nil || tokens != 2 {
		t.Errorf("index without traces: %d untrusted tokens (%v), want the C and L1 WAVAX", tokens, err)
	}
	u := *c
	u.pf, u.rep = p.url, newDiffReport(nil)
	u.erc20Balances(ctx)
	u.evmBalances(ctx)
	t.Logf("index without call traces (--no-traces), %d untrusted tokens:", tokens)
	u.rep.log(t)
}
