package webhooks_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/decode/evm"
	"github.com/permafrost-dev/permafrost/internal/evmsim"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/webhooks"
)

// BenchmarkDelivery measures delivery from the outbox to a receiver on
// 127.0.0.1 answering 200 at once: 1,000 webhooks watching 100,000
// addresses (100 each), WEBHOOK_BENCH_EVENTS events (default 20,000) spread
// over them in block order, as the emitter writes them. It reports
// deliveries/s and the p50/p99 latency from the event's commit to its
// delivery being recorded. WEBHOOK_BENCH_BACKEND picks sqlite (default) or
// postgres.
//
//	go test ./internal/webhooks -run '^$' -bench Delivery -benchtime 1x
func BenchmarkDelivery(b *testing.B) {
	backend := os.Getenv("WEBHOOK_BENCH_BACKEND")
	if backend == "" {
		backend = "sqlite"
	}
	events := 20000
	if s := os.Getenv("WEBHOOK_BENCH_EVENTS"); s != "" {
		events, _ = strconv.Atoi(s)
	}
	const hooks, perHook = 1000, 100
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		db, err := store.Open(ctx, storetest.DSNFor(b, backend))
		if err != nil {
			b.Fatal(err)
		}
		if err := db.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
		reg := webhooks.NewRegistry(db, nil)
		ids := make([]string, hooks)
		for h := range hooks {
			keys := make([]string, perHook)
			for k := range keys {
				keys[k] = fmt.Sprintf("0x%040x", h*perHook+k+1)
			}
			w := &webhooks.Webhook{EventType: webhooks.EventAddressActivity, URL: rcv.URL + "/" + strconv.Itoa(h), ChainID: "88888",
				ChainKey: "C", Status: webhooks.StatusActive, Metadata: []byte(`{}`), Keys: keys}
			if err := reg.Create(ctx, "owner", w); err != nil {
				b.Fatal(err)
			}
			ids[h] = w.ID
		}
		payload := `{"event":{"transaction":{"txHash":"0x` + fmt.Sprintf("%064x", 1) + `"}},"eventType":"address_activity"}`
		tx, err := db.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now().UnixMilli()
		for e := range events {
			h := e % hooks
			if _, err := tx.Exec(ctx, `INSERT INTO webhook_outbox (webhook_id, block_height, position, message_id, chain_key, payload, created_at)
				VALUES ($1,$2,$3,$4,'C',$5,$6)`, ids[h], e/hooks, 0, webhooks.MessageID(ids[h], "C", uint64(e/hooks), 0), payload, now); err != nil {
				b.Fatal(err)
			}
		}
		for h := range hooks {
			if _, err := tx.Exec(ctx, `INSERT INTO webhook_queues (webhook_id, pending) VALUES ($1, $2)`,
				ids[h], (events-h+hooks-1)/hooks); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		d := webhooks.NewDeliverer(db, webhooks.DeliveryConfig{Workers: 8, Poll: 5 * time.Millisecond,
			Policy: webhooks.URLPolicy{AllowLoopback: true}}, nil)
		b.StartTimer()
		start := time.Now()
		if err := d.Start(ctx); err != nil {
			b.Fatal(err)
		}
		waitDelivered(b, ctx, db)
		elapsed := time.Since(start)
		b.StopTimer()
		d.Close()
		rcv.Close()
		// Latency from the moment delivery could start (every event was
		// committed before): the delivery's record (the log's at) - start.
		rows, err := db.QueryContext(ctx, `SELECT at FROM webhook_deliveries WHERE error = ''`)
		if err != nil {
			b.Fatal(err)
		}
		var lat []int64
		for rows.Next() {
			var at int64
			if err := rows.Scan(&at); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, at-start.UnixMilli())
		}
		rows.Close()
		slices.Sort(lat)
		b.ReportMetric(float64(events)/elapsed.Seconds(), "deliveries/s")
		b.ReportMetric(float64(lat[len(lat)/2]), "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ms")
		db.Close()
	}
}

// BenchmarkIngestToReceiver measures webhooks from ingestion to receiver:
// a generated C-chain-like chain (WEBHOOK_BENCH_BLOCKS blocks, default
// 1,000, of 20 txs with ERC-20/721 transfers; internal/decode/evm's
// generator) is fetched from a local JSON-RPC node on 127.0.0.1 (evmsim),
// indexed with the webhook emitter, and delivered to a receiver on
// 127.0.0.1 answering 200, while 1,000 address_activity webhooks watch
// 100,000 addresses (100 each: the chain's 2,001 active accounts spread
// over them, the rest never active). Runs alternate without webhooks (A)
// and with them (B), A B A B, each into a fresh database:
//
//   - ingest-off-s / ingest-on-s: the ingestion's wall time (median of the
//     two runs of each), slowdown-%: their difference;
//   - deliveries/s: events delivered over the time from the start of
//     ingestion to the last delivery (B);
//   - p50-ms / p99-ms: from the commit of the event's block to its
//     delivery.
//
// WEBHOOK_BENCH_BACKEND picks sqlite (default) or postgres; BATCH the
// blocks per transaction (default 50); WEBHOOK_BENCH_RATE, when set, makes
// the node's chain grow by that many blocks per second (following the tip,
// as serve does) instead of all being there at the start (a backlog). The
// latency is from the commit of the batch holding the event's block
// (ingest's AfterCommit) to the delivery's record.
//
//	go test ./internal/webhooks -run '^$' -bench IngestToReceiver -benchtime 1x
func BenchmarkIngestToReceiver(b *testing.B) {
	backend := os.Getenv("WEBHOOK_BENCH_BACKEND")
	if backend == "" {
		backend = "sqlite"
	}
	blocks, batch := 1000, 50
	if s := os.Getenv("WEBHOOK_BENCH_BLOCKS"); s != "" {
		blocks, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("WEBHOOK_BENCH_BATCH"); s != "" {
		batch, _ = strconv.Atoi(s)
	}
	const hooks, perHook = 1000, 100
	rate := 0.0
	if s := os.Getenv("WEBHOOK_BENCH_RATE"); s != "" {
		rate, _ = strconv.ParseFloat(s, 64)
	}
	sim, err := evmsim.New(43112, evm.GenerateBlocks(blocks+1, 20, 1))
	if err != nil {
		b.Fatal(err)
	}
	node := &pacedNode{Node: sim, rate: rate, tip: uint64(blocks)}
	nodeSrv := httptest.NewServer(node)
	defer nodeSrv.Close()
	alloc := evm.NewGenerator(1, 20).Alloc()
	var active []string
	for a := range alloc {
		active = append(active, strings.ToLower(a.Hex()))
	}
	slices.Sort(active)
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)

	type commit struct {
		height uint64
		at     int64 // unix ms
	}
	type result struct {
		ingest, total time.Duration
		events        int
		lat           []int64
		cpu           time.Duration // this process's and the PostgreSQL server's CPU time over the run
	}
	run := func(on bool) result {
		db, err := store.Open(ctx, storetest.DSNFor(b, backend))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		if err := db.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		var d *webhooks.Deliverer
		if on {
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
			defer rcv.Close()
			reg := webhooks.NewRegistry(db, nil)
			for h := range hooks {
				var keys []string
				for k := h; k < len(active); k += hooks {
					keys = append(keys, active[k])
				}
				for k := len(keys); k < perHook; k++ {
					keys = append(keys, fmt.Sprintf("0x%040x", h*perHook+k+1))
				}
				w := &webhooks.Webhook{EventType: webhooks.EventAddressActivity, URL: rcv.URL + "/" + strconv.Itoa(h), ChainID: "43112",
					ChainKey: "C", Status: webhooks.StatusActive, Metadata: []byte(`{}`), Keys: keys}
				if err := reg.Create(ctx, "owner", w); err != nil {
					b.Fatal(err)
				}
			}
			// As autovacuum would within a minute: a freshly filled
			// webhook_keys without statistics is scanned, not searched.
			if db.Dialect() == store.Postgres {
				if _, err := db.ExecContext(ctx, `ANALYZE webhook_keys`); err != nil {
					b.Fatal(err)
				}
			}
		}
		// CPU from here: registering the webhooks is not delivering.
		cpu0 := cpuTime(b, ctx, db)
		if on {
			d = webhooks.NewDeliverer(db, webhooks.DeliveryConfig{Workers: 8, Poll: 5 * time.Millisecond,
				Policy: webhooks.URLPolicy{AllowLoopback: true}}, nil)
			if err := d.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer d.Close()
		}
		src, err := source.NewEVM(ctx, nodeSrv.URL, source.EVMOptions{BatchSize: 50, Concurrency: 1})
		if err != nil {
			b.Fatal(err)
		}
		ix, err := evm.NewIndexer(evm.Config{ChainKey: "C", ChainID: big.NewInt(43112), GenesisAlloc: alloc, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		chain := ingest.Chain{Key: "C", Kind: "EVM", BlockchainID: "bench", EVMChainID: "43112",
			Source: &chains.EVMSource{EVM: src, Decoder: ix}, Indexer: webhooks.WithEvents("C", "EVM", ix), BatchSize: batch, FetchSize: src.ParallelHeights()}
		// The commit time of each batch, by its last height.
		var mu sync.Mutex
		var commits []commit
		opts := ingest.Options{UntilTip: rate == 0, Poll: 20 * time.Millisecond, AfterCommit: func(_ string, h uint64) {
			mu.Lock()
			commits = append(commits, commit{h, time.Now().UnixMilli()})
			mu.Unlock()
		}}
		start := time.Now()
		node.start(start)
		if rate == 0 {
			if err := ingest.New(db, []ingest.Chain{chain}, opts, quiet).Run(ctx); err != nil {
				b.Fatal(err)
			}
		} else {
			// Following a chain that grows by rate blocks/s.
			fctx, stop := context.WithCancel(ctx)
			opts.AfterCommit = func(c string, h uint64) {
				mu.Lock()
				commits = append(commits, commit{h, time.Now().UnixMilli()})
				mu.Unlock()
				if h >= uint64(blocks) {
					stop()
				}
			}
			if err := ingest.New(db, []ingest.Chain{chain}, opts, quiet).Run(fctx); err != nil && fctx.Err() == nil {
				b.Fatal(err)
			}
		}
		r := result{ingest: time.Since(start)}
		if !on {
			r.cpu = cpuTime(b, ctx, db) - cpu0
			return r
		}
		waitDelivered(b, ctx, db)
		d.Close()
		r.cpu = cpuTime(b, ctx, db) - cpu0
		var last int64
		rows, err := db.QueryContext(ctx, `SELECT o.block_height, l.at FROM webhook_outbox o
			JOIN webhook_deliveries l ON l.message_id = o.message_id AND l.error = ''`)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var h, at int64
			if err := rows.Scan(&h, &at); err != nil {
				b.Fatal(err)
			}
			// The commit of the first batch reaching the event's block.
			k, _ := slices.BinarySearchFunc(commits, uint64(h), func(c commit, h uint64) int { return cmp.Compare(c.height, h) })
			r.lat = append(r.lat, at-commits[k].at)
			last = max(last, at)
		}
		rows.Close()
		r.events, r.total = len(r.lat), time.UnixMilli(last).Sub(start)
		slices.Sort(r.lat)
		return r
	}
	for range b.N {
		var off, on []result
		for _, w := range []bool{false, true, false, true} {
			if w {
				on = append(on, run(true))
			} else {
				off = append(off, run(false))
			}
		}
		median := func(rs []result) float64 { return (rs[0].ingest.Seconds() + rs[1].ingest.Seconds()) / 2 }
		b.ReportMetric(median(off), "ingest-off-s")
		b.ReportMetric(median(on), "ingest-on-s")
		b.ReportMetric(100*(median(on)-median(off))/median(off), "slowdown-%")
		var events int
		var total time.Duration
		var lat []int64
		for _, r := range on {
			events += r.events
			total += r.total
			lat = append(lat, r.lat...)
		}
		slices.Sort(lat)
		b.ReportMetric(float64(events)/total.Seconds(), "deliveries/s")
		// CPU per 1,000 deliveries: the whole run's (ingestion, emitter,
		// deliverers, receiver, node simulator; and PostgreSQL's server), and
		// what webhooks add to the run without them.
		cpuOn, cpuOff := (on[0].cpu+on[1].cpu).Seconds()/2, (off[0].cpu+off[1].cpu).Seconds()/2
		b.ReportMetric(1000*cpuOn/float64(events/len(on)), "cpu-s/1k")
		b.ReportMetric(1000*(cpuOn-cpuOff)/float64(events/len(on)), "added-cpu-s/1k")
		b.ReportMetric(float64(events/len(on)), "events")
		b.ReportMetric(float64(lat[len(lat)/2]), "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ms")
	}
}

// pacedNode is an evmsim node whose tip grows by rate blocks per second
// from start (rate 0: every block is there at once).
type pacedNode struct {
	*evmsim.Node
	rate  float64
	tip   uint64
	mu    sync.Mutex
	since time.Time
}

func (n *pacedNode) start(t time.Time) {
	n.mu.Lock()
	n.since = t
	n.mu.Unlock()
}

func (n *pacedNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if n.rate > 0 && json.Unmarshal(body, &req) == nil && req.Method == "eth_blockNumber" {
		n.mu.Lock()
		tip := min(n.tip, uint64(time.Since(n.since).Seconds()*n.rate))
		n.mu.Unlock()
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":"0x%x"}`, req.ID, tip)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	n.Node.ServeHTTP(w, r)
}

// cpuTime is the CPU time (user and system) this process used so far plus,
// on PostgreSQL, the server's: its postmaster's, its children's that were
// reaped, and its live children's (backends, background workers), from
// /proc. Independent of the machine's load, unlike wall time.
func cpuTime(b *testing.B, ctx context.Context, db *store.DB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	d := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if db.Dialect() != store.Postgres {
		return d
	}
	var dir string
	if err := db.QueryRowContext(ctx, `SELECT setting FROM pg_settings WHERE name = 'data_directory'`).Scan(&dir); err != nil {
		b.Fatal(err)
	}
	pidFile, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		b.Fatal(err)
	}
	postmaster := strings.SplitN(string(pidFile), "\n", 2)[0]
	const tick = time.Second / 100 // USER_HZ
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range procs {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		// Fields after the command's closing parenthesis: state ppid ...
		// utime (14th field of the line) stime cutime cstime.
		fs := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
		pid := strings.TrimSuffix(strings.TrimPrefix(f, "/proc/"), "/stat")
		n := 2 // utime and stime
		switch {
		case pid == postmaster:
			n = 4 // and the reaped children's
		case fs[1] != postmaster:
			continue
		}
		for _, v := range fs[11 : 11+n] {
			t, _ := strconv.ParseInt(v, 10, 64)
			d += time.Duration(t) * tick
		}
	}
	return d
}
