// Package obs is Permafrost's Prometheus instrumentation: one Metrics per
// process, built on its own registry (no global state) and passed to what
// it measures, served on the admin listener's GET /metrics.
//
// Measured as they happen (the parts report through small hooks): HTTP
// requests per route pattern, method and status, and their latency
// (api.Observer); rate-limit rejections; node calls per JSON-RPC method,
// their latency and errors (source.Retry.Observe); ingest batches per chain,
// blocks committed and batch duration (ingest.Options.Observer). Read from
// the store at each scrape (so every replica reports the same chain state,
// whoever ingests): per chain the indexed height, the node's tip, the lag
// and the transactions indexed; export and enrichment queue depths; the
// connection pools' statistics and, on SQLite, the WAL file's size.
package obs

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/permafrost-dev/permafrost/internal/store"
)

const namespace = "permafrost"

// Metrics holds the process's collectors. A nil *Metrics measures nothing,
// so a part built without one needs no checks.
type Metrics struct {
	reg *prometheus.Registry

	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	rateLimited *prometheus.CounterVec
	nodeCalls   *prometheus.HistogramVec
	nodeErrors  *prometheus.CounterVec
	blocks      *prometheus.CounterVec
	batch       *prometheus.HistogramVec
}

// New returns a Metrics on a new registry, with the Go runtime and process
// collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "http",
			Name: "requests_total", Help: "HTTP requests answered, by route pattern, method and status code."},
			[]string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "http",
			Name: "request_duration_seconds", Help: "Time to answer an HTTP request, by route pattern and method.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}},
			[]string{"route", "method"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "http",
			Name: "rate_limit_rejections_total", Help: "Requests refused with 429, by route pattern and subject kind (key, ip, perip)."},
			[]string{"route", "subject"}),
		nodeCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "node",
			Name: "call_duration_seconds", Help: "Node JSON-RPC call attempts, by method (failed attempts included).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}},
			[]string{"method"}),
		nodeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "node",
			Name: "call_errors_total", Help: "Node JSON-RPC call attempts that failed, by method."},
			[]string{"method"}),
		blocks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "ingest",
			Name: "blocks_total", Help: "Blocks this process indexed (committed), by chain."},
			[]string{"chain"}),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "ingest",
			Name: "batch_duration_seconds", Help: "Wall time of a committed ingest batch (fetch wait, indexing, commit), by chain.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}},
			[]string{"chain"}),
	}
	reg.MustRegister(m.requests, m.latency, m.rateLimited, m.nodeCalls, m.nodeErrors, m.blocks, m.batch,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is where the collectors are registered (for parts that bring
// their own, and tests).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Request implements api.Observer.
func (m *Metrics) Request(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route, method).Observe(d.Seconds())
}

// RateLimited implements api.Observer.
func (m *Metrics) RateLimited(route, subject string) {
	if m == nil {
		return
	}
	m.rateLimited.WithLabelValues(route, subject).Inc()
}

// NodeCall records one attempt of a node call; op is the retry's name of
// the call (e.g. "platform.getBlockByHeight(12)"), reduced to its method.
func (m *Metrics) NodeCall(op string, d time.Duration, err error) {
	if m == nil {
		return
	}
	method := MethodOf(op)
	m.nodeCalls.WithLabelValues(method).Observe(d.Seconds())
	if err != nil {
		m.nodeErrors.WithLabelValues(method).Inc()
	}
}

// MethodOf reduces a call's name to a bounded label: the arguments
// ("(12)", "(2QG...)") go; a batch is "batch:" and its first method.
func MethodOf(op string) string {
	if rest, ok := strings.CutPrefix(op, "batch of "); ok {
		if _, inner, ok := strings.Cut(rest, "("); ok {
			return "batch:" + strings.TrimSuffix(strings.TrimSuffix(inner, ")"), "...")
		}
		return "batch"
	}
	if i := strings.IndexByte(op, '('); i >= 0 {
		op = op[:i]
	}
	return op
}

// Batch records one committed ingest batch (implements ingest.Observer).
func (m *Metrics) Batch(chain string, blocks uint64, d time.Duration) {
	if m == nil {
		return
	}
	m.blocks.WithLabelValues(chain).Add(float64(blocks))
	m.batch.WithLabelValues(chain).Observe(d.Seconds())
}

// WatchStore registers the collectors read from db at each scrape: chain
// state, queue depths, pool statistics and the SQLite WAL size.
func (m *Metrics) WatchStore(db *store.DB) {
	if m == nil || db == nil {
		return
	}
	m.reg.MustRegister(&storeCollector{db: db},
		collectors.NewDBStatsCollector(db.WriterDB(), "writer"))
	if db.ReaderDB() != db.WriterDB() {
		m.reg.MustRegister(collectors.NewDBStatsCollector(db.ReaderDB(), "reader"))
	}
}

// storeCollector reads the index's state from the store at scrape time.
type storeCollector struct{ db *store.DB }

var (
	descIndexed = prometheus.NewDesc(namespace+"_chain_indexed_height", "Last indexed block height, by chain.", []string{"chain"}, nil)
	descTip     = prometheus.NewDesc(namespace+"_chain_node_height", "The node's tip as the ingester last saw it, by chain.", []string{"chain"}, nil)
	descLag     = prometheus.NewDesc(namespace+"_chain_lag_blocks", "Blocks the index is behind the node's tip, by chain.", []string{"chain"}, nil)
	descTxs     = prometheus.NewDesc(namespace+"_chain_txs_indexed", "Transactions indexed, by chain (the metrics service's rollups).", []string{"chain"}, nil)
	descUpdated = prometheus.NewDesc(namespace+"_chain_updated_timestamp_seconds", "When the chain's checkpoint last moved (unix seconds).", []string{"chain"}, nil)
	descExports = prometheus.NewDesc(namespace+"_export_jobs", "Export jobs by status (RUNNING ones are the queue).", []string{"status"}, nil)
	descEnrich  = prometheus.NewDesc(namespace+"_enrichment_nft_jobs", "NFT metadata jobs by state (pending ones are the queue).", []string{"state"}, nil)
	descWAL     = prometheus.NewDesc(namespace+"_sqlite_wal_bytes", "Size of the SQLite write-ahead log (0 on PostgreSQL).", nil, nil)
	descUp      = prometheus.NewDesc(namespace+"_store_up", "1 when the store answered this scrape's queries.", nil, nil)
)

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descIndexed, descTip, descLag, descTxs, descUpdated, descExports, descEnrich, descWAL, descUp} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ch <- prometheus.MustNewConstMetric(descWAL, prometheus.GaugeValue, float64(c.db.WALBytes()))
	up := 1.0
	if err := c.collect(ctx, ch); err != nil {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up)
}

func (c *storeCollector) collect(ctx context.Context, ch chan<- prometheus.Metric) error {
	rows, err := c.db.QueryContext(ctx, `SELECT chain_key, height, node_height, updated_at FROM checkpoints`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var chain string
		var height, tip, updated int64
		if err := rows.Scan(&chain, &height, &tip, &updated); err != nil {
			rows.Close()
			return err
		}
		ch <- prometheus.MustNewConstMetric(descIndexed, prometheus.GaugeValue, float64(height), chain)
		ch <- prometheus.MustNewConstMetric(descTip, prometheus.GaugeValue, float64(tip), chain)
		ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(max(tip-height, 0)), chain)
		ch <- prometheus.MustNewConstMetric(descUpdated, prometheus.GaugeValue, float64(updated), chain)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, q := range []struct {
		desc  *prometheus.Desc
		sql   string
		queue string // the label always reported (0 when no row): the queue
	}{
		{descTxs, `SELECT chain_key, SUM(tx_count) FROM metrics_tx_daily GROUP BY chain_key`, ""},
		{descExports, `SELECT status, COUNT(*) FROM export_jobs GROUP BY status`, "RUNNING"},
		{descEnrich, `SELECT state, COUNT(*) FROM enrich_nft_jobs GROUP BY state`, "pending"},
	} {
		if err := c.counts(ctx, ch, q.desc, q.sql, q.queue); err != nil {
			return err
		}
	}
	return nil
}

// counts emits one gauge per (label, count) row of query, and always one
// for label always (when not "").
func (c *storeCollector) counts(ctx context.Context, ch chan<- prometheus.Metric, desc *prometheus.Desc, query, always string) error {
	rows, err := c.db.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	seen := false
	for rows.Next() {
		var label string
		var n int64
		if err := rows.Scan(&label, &n); err != nil {
			return err
		}
		seen = seen || label == always
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(n), label)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if always != "" && !seen {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, 0, always)
	}
	return nil
}
