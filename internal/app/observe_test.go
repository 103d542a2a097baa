package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// TestMetricsAndAccessLog (issue #19, points 2 and 3): serve with
// --admin-listen and --log-format json over the devnet-a replay. GET
// /metrics parses with the Prometheus text parser and reports the chains
// as the node does (its recorded tips), the blocks indexed, node calls by
// method, requests by route pattern (not the raw path), rate-limit
// rejections, queue depths and store statistics. Every log line is a JSON
// object, with one access line per request whose numbers are numbers.
func TestMetricsAndAccessLog(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a recording")
	}
	dir := devnet.Dir(t)
	node := newSwitchableNode(t, dir)
	node.up()
	ports := make([]int, 2)
	for i := range ports {
		p, err := storetest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	base, admin := fmt.Sprintf("http://127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, "serve", []string{"--node", node.url(), "--genesis", filepath.Join(dir, "genesis.json"),
			"--db", storetest.DSNFor(t, "sqlite"), "--listen", base[len("http://"):], "--admin-listen", admin,
			"--poll", "200ms", "--export-dir", t.TempDir(), "--anonymous-cu", "60", "--log-format", "json"}, io.Discard, logs)
	}()
	t.Cleanup(func() { stopServe(t, cancel, done, logs) })
	waitFor(t, "healthy", func() bool {
		resp, err := http.Get(base + "/v1/health-check")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	// The node's own tips (the oracle): platform.getHeight, avm.getHeight, eth_blockNumber.
	tips := map[string]float64{
		"P": nodeNumber(t, node.url()+"/ext/bc/P", "platform.getHeight", `{}`, "height"),
		"X": nodeNumber(t, node.url()+"/ext/bc/X", "avm.getHeight", `{}`, "height"),
		"C": nodeNumber(t, node.url()+"/ext/bc/C/rpc", "eth_blockNumber", `[]`, ""),
	}

	// 60 CU anonymous: three blocks pages of 20 CU pass, the fourth is refused.
	const blocks = "/v1/networks/testnet/blockchains/p-chain/blocks?pageSize=1"
	codes := map[int]int{}
	for range 4 {
		resp, err := http.Get(base + blocks)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	if codes[200] != 3 || codes[429] != 1 {
		t.Fatalf("answers %v, want three 200 and one 429", codes)
	}

	// A batch is measured right after its commit, so the health check can
	// see a chain indexed a moment before its batch is counted: scrape until
	// every chain's blocks are (or time runs out, and the checks below say
	// what is missing).
	scrape := func() map[string]*dto.MetricFamily {
		resp, err := http.Get("http://" + admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var parser expfmt.TextParser
		fams, err := parser.TextToMetricFamilies(resp.Body)
		if err != nil {
			t.Fatalf("the text parser refuses /metrics: %v", err)
		}
		return fams
	}
	var fams map[string]*dto.MetricFamily
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		fams = scrape()
		all := true
		for chain, tip := range tips {
			got, ok := value(fams, "permafrost_ingest_blocks_total", map[string]string{"chain": chain})
			all = all && ok && got == tip+1
		}
		if all || time.Now().After(deadline) {
			break
		}
	}
	for chain, tip := range tips {
		for name, want := range map[string]float64{
			"permafrost_chain_indexed_height": tip,
			"permafrost_chain_node_height":    tip,
			"permafrost_chain_lag_blocks":     0,
			"permafrost_ingest_blocks_total":  tip + 1, // heights 0..tip, by this process
		} {
			if got, ok := value(fams, name, map[string]string{"chain": chain}); !ok || got != want {
				t.Errorf("%s{chain=%q} = %v (found %v), want %v", name, chain, got, ok, want)
			}
		}
		if got, ok := count(fams, "permafrost_ingest_batch_duration_seconds", map[string]string{"chain": chain}); !ok || got == 0 {
			t.Errorf("no ingest batches of %s measured", chain)
		}
	}
	route := "GET /v1/networks/{network}/blockchains/{blockchainId}/blocks"
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"permafrost_http_requests_total", map[string]string{"route": route, "method": "GET", "code": "200"}, 3},
		{"permafrost_http_requests_total", map[string]string{"route": route, "method": "GET", "code": "429"}, 1},
		{"permafrost_http_rate_limit_rejections_total", map[string]string{"route": route, "subject": "ip"}, 1},
		{"permafrost_export_jobs", map[string]string{"status": "RUNNING"}, 0},
		{"permafrost_enrichment_nft_jobs", map[string]string{"state": "pending"}, 0},
		{"permafrost_store_up", nil, 1},
	} {
		if got, ok := value(fams, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if got, ok := count(fams, "permafrost_http_request_duration_seconds", map[string]string{"route": route, "method": "GET"}); !ok || got != 4 {
		t.Errorf("latency histogram of %s: %v observations, want 4", route, got)
	}
	for _, m := range []string{"platform.getHeight", "platform.getBlockByHeight"} {
		if got, ok := count(fams, "permafrost_node_call_duration_seconds", map[string]string{"method": m}); !ok || got == 0 {
			t.Errorf("no node calls of %s measured", m)
		}
	}
	for _, name := range []string{"permafrost_sqlite_wal_bytes", "go_sql_open_connections", "go_goroutines", "permafrost_node_call_errors_total"} {
		if _, ok := fams[name]; !ok && name != "permafrost_node_call_errors_total" {
			t.Errorf("%s missing", name)
		}
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" && strings.Contains(l.GetValue(), "p-chain") {
					t.Errorf("%s has a raw path as route: %s", f.GetName(), l.GetValue())
				}
			}
		}
	}

	// The access log: every line JSON; one request line per request.
	var access []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		if err := dec.Decode(&line); err != nil {
			t.Errorf("a log line is not JSON: %s", sc.Text())
			continue
		}
		if line["msg"] == "request" && line["route"] == route {
			access = append(access, line)
		}
	}
	if len(access) != 4 {
		t.Fatalf("%d access lines for %s, want 4", len(access), route)
	}
	for _, l := range access {
		for _, k := range []string{"status", "duration_ms"} {
			if _, ok := l[k].(json.Number); !ok {
				t.Errorf("%s is not a number: %v", k, l)
			}
		}
		if l["method"] != "GET" || len(fmt.Sprint(l["request_id"])) != 16 || l["key_id"] != "" {
			t.Errorf("access line %v", l)
		}
	}
	if l := access[3]; l["status"] != json.Number("429") {
		t.Errorf("the refused request logged %v", l["status"])
	}
}

// nodeNumber asks the replay node a JSON-RPC question whose answer is a number
// (field of the result, or the result itself, decimal or 0x-hex).
func nodeNumber(t *testing.T, url, method, params, field string) float64 {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Result json.RawMessage }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	raw := out.Result
	if field != "" {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		raw = m[field]
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: %s", method, raw)
	}
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("%s: %q", method, s)
	}
	return float64(n)
}

// find returns the metric of family name whose labels include want.
func find(fams map[string]*dto.MetricFamily, name string, want map[string]string) (*dto.Metric, bool) {
	f, ok := fams[name]
	if !ok {
		return nil, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m, true
	}
	return nil, false
}

func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	m, ok := find(fams, name, labels)
	switch {
	case !ok:
		return 0, false
	case m.Gauge != nil:
		return m.GetGauge().GetValue(), true
	case m.Counter != nil:
		return m.GetCounter().GetValue(), true
	}
	return m.GetUntyped().GetValue(), true
}

func count(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	m, ok := find(fams, name, labels)
	if !ok || m.Histogram == nil {
		return 0, false
	}
	return float64(m.GetHistogram().GetSampleCount()), true
}
