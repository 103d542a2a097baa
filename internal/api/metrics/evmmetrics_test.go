package metrics_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/api/metrics"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
	"github.com/permafrost-dev/permafrost/internal/testing/chainmetrics"
)

// The expectations here are recomputed from the real node's answers in the
// recording (eth_getBlockByNumber with full txs, eth_getBlockReceipts), never
// from the index (internal/testing/chainmetrics).

// recordedEVM reads devnet-a's C-chain blocks and receipts.
func recordedEVM(t *testing.T) oracle {
	t.Helper()
	return recordedChain(t, devnet.Dir(t), false)
}

// recordedChain reads the C-chain's recorded blocks and receipts of the
// recording in dir (rpc/ext_bc_C_rpc.jsonl) and, with traces, the
// contracts its recorded call traces created inside txs
// (rpc/ext_bc_C_debug.jsonl, callTracer answers).
func recordedChain(t *testing.T, dir string, traces bool) oracle {
	t.Helper()
	blocks, receipts, traced := map[int64]json.RawMessage{}, map[int64]json.RawMessage{}, map[int64]json.RawMessage{}
	files := []string{"ext_bc_C_rpc.jsonl"}
	if traces {
		files = append(files, "ext_bc_C_debug.jsonl")
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, "rpc", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			var l devnet.Exchange
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if err := json.Unmarshal(line, &l); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			var params []json.RawMessage
			if json.Unmarshal(l.Params, &params) != nil || len(params) == 0 || len(l.Response.Result) == 0 {
				continue
			}
			var n string
			if json.Unmarshal(params[0], &n) != nil {
				continue
			}
			h, err := strconv.ParseInt(strings.TrimPrefix(n, "0x"), 16, 64)
			if err != nil {
				continue
			}
			switch {
			case l.Method == "eth_getBlockByNumber" && len(params) == 2 && string(params[1]) == "true":
				blocks[h] = l.Response.Result
			case l.Method == "eth_getBlockReceipts":
				receipts[h] = l.Response.Result
			case l.Method == "debug_traceBlockByNumber" && len(params) == 2 && strings.Contains(string(params[1]), `"callTracer"`):
				traced[h] = l.Response.Result
			}
		}
	}
	var o oracle
	for n := int64(0); blocks[n] != nil; n++ {
		b, err := chainmetrics.Parse(blocks[n], receipts[n])
		if err != nil {
			t.Fatal(err)
		}
		if traces && traced[n] != nil { // the genesis block has no trace
			if b.Nested, err = chainmetrics.NestedCreators(traced[n]); err != nil {
				t.Fatal(err)
			}
		}
		o.Blocks = append(o.Blocks, b)
	}
	if len(o.Blocks) < 30 {
		t.Fatalf("%s has %d C-chain blocks with full txs", dir, len(o.Blocks))
	}
	return o
}

type oracle struct{ chainmetrics.Oracle }

// series is the expected answer: every interval overlapping [start, tip]
// from the first block's on, newest first.
func (o oracle) series(metric, iv string, start int64) []metrics.Point {
	first, tip := o.Blocks[0].Ms/1000, o.Blocks[len(o.Blocks)-1].Ms/1000
	out := []metrics.Point{}
	for s := floorOf(iv, tip); s >= floorOf(iv, max(first, start)); s = step(iv, s, -1) {
		out = append(out, metrics.Point{Timestamp: s, Value: o.Window(metric, s, step(iv, s, 1))})
	}
	return out
}

func (s *server) v2(t *testing.T, target string, out any) {
	t.Helper()
	code, body := apitest.Serve(t, apitest.LoadMetrics(t), s.mux, http.MethodGet, target)
	apitest.DecodeOK(t, target, code, body, out)
}

// walkMetric follows nextPageToken to the end.
func (s *server) walkMetric(t *testing.T, chain, metric string, q url.Values) []metrics.Point {
	t.Helper()
	var all []metrics.Point
	q = cloneValues(q)
	for pages := 0; pages < 10000; pages++ {
		var r struct {
			Results []struct {
				Timestamp int64   `json:"timestamp"`
				Value     float64 `json:"value"`
			} `json:"results"`
			NextPageToken string `json:"nextPageToken"`
		}
		target := "/v2/chains/" + chain + "/metrics/" + metric + "?" + q.Encode()
		code, body := apitest.Serve(t, apitest.LoadMetrics(t), s.mux, http.MethodGet, target)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", target, code, body)
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		for _, p := range r.Results {
			all = append(all, metrics.Point{Timestamp: p.Timestamp, Value: p.Value})
		}
		if r.NextPageToken == "" {
			return all
		}
		q.Set("pageToken", r.NextPageToken)
	}
	t.Fatal("pagination does not end")
	return nil
}

// Every metric at every interval equals its recomputation from the recorded
// blocks, whole (one page) and walked one point per page.
func TestEVMMetricsMatchRecording(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := newServer(t, backend)
			o := recordedEVM(t)
			block1 := o.Blocks[1].Ms / 1000
			nonzero := map[string]bool{}
			for _, m := range chainmetrics.ChainMetrics {
				for _, iv := range []string{"hour", "day", "week", "month"} {
					start := block1 - 3*86400 // the genesis block is years earlier
					if iv == "month" {
						start = 0
					}
					q := url.Values{"timeInterval": {iv}, "startTimestamp": {fmt.Sprint(start)}, "pageSize": {"2160"}}
					want := o.series(m, iv, start)
					got := s.walkMetric(t, "88888", m, q)
					samePoints(t, m+" "+iv, got, want)
					for _, p := range got {
						nonzero[m] = nonzero[m] || p.Value != 0
					}
				}
				q := url.Values{"timeInterval": {"hour"}, "startTimestamp": {fmt.Sprint(block1)}, "pageSize": {"1"}}
				samePoints(t, m+" one per page", s.walkMetric(t, "c-chain", m, q), o.series(m, "hour", block1))
				// The aggregates over this network's chains (devnet-a indexes
				// one EVM chain, a test network's), paged; the other
				// network's aggregate has no chain, hence no point.
				q = url.Values{"timeInterval": {"day"}, "startTimestamp": {fmt.Sprint(block1 - 3*86400)}, "pageSize": {"2"}}
				for _, agg := range []string{"total", "testnet"} {
					samePoints(t, m+" "+agg, s.walkMetric(t, agg, m, q), o.series(m, "day", block1-3*86400))
				}
				samePoints(t, m+" mainnet", s.walkMetric(t, "mainnet", m, q), []metrics.Point{})
			}
			for _, m := range chainmetrics.ChainMetrics {
				if !nonzero[m] {
					t.Errorf("%s is 0 everywhere: the recording should exercise it", m)
				}
			}
		})
	}
}

// Rolling windows end at the newest indexed block: hour and day windows of
// whole hours, longer ones of whole days, allTime from the first block.
func TestRollingWindowsMatchRecording(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) { checkRollingWindows(t, newServer(t, backend)) })
	}
}

// checkRollingWindows compares s's rolling windows with the recording's.
func checkRollingWindows(t *testing.T, s *server) {
	t.Helper()
	o := recordedEVM(t)
	first, tip := o.Blocks[0].Ms/1000, o.Blocks[len(o.Blocks)-1].Ms/1000
	hour, day := floorOf("hour", tip), floorOf("day", tip)
	windows := []struct {
		name string
		from int64
	}{
		{"lastHour", hour}, {"lastDay", step("hour", hour, -23)}, {"lastWeek", step("day", day, -6)},
		{"lastMonth", step("day", day, -29)}, {"last90Days", step("day", day, -89)},
		{"lastYear", step("day", day, -364)}, {"allTime", first},
	}
	for _, m := range chainmetrics.RollingMetrics {
		want := map[string]float64{}
		for i, w := range windows {
			if (m == "activeAddresses" || m == "activeSenders") && i >= 3 {
				break
			}
			want[w.name] = o.Window(m, w.from, tip+1)
		}
		// The aggregates of this network's chains (the one EVM chain
		// of devnet-a, a test network) answer the same; mainnet's has
		// no chain: 0 in every window.
		none := map[string]float64{}
		for w := range want {
			none[w] = 0
		}
		for chain, want := range map[string]map[string]float64{"88888": want, "total": want, "testnet": want, "mainnet": none} {
			var r struct {
				Result map[string]float64 `json:"result"`
			}
			s.v2(t, "/v2/chains/"+chain+"/rollingWindowMetrics/"+m, &r)
			if fmt.Sprint(r.Result) != fmt.Sprint(want) {
				t.Errorf("%s %s: %v, want %v", chain, m, r.Result, want)
			}
		}
	}
}

// /v2/chains and /v2/chains/{chainId} describe the C-chain as the recording
// names it.
func TestV2Chains(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := newServer(t, backend)
			cID := ""
			for _, l := range devnet.LoadRPC(t, devnet.Info) {
				if l.Method == "info.getBlockchainID" && strings.Contains(string(l.Params), `"C"`) {
					var r struct {
						BlockchainID string `json:"blockchainID"`
					}
					if err := json.Unmarshal(l.Response.Result, &r); err != nil {
						t.Fatal(err)
					}
					cID = r.BlockchainID
				}
			}
			want := metrics.Chain{EvmChainID: "88888", ChainName: "C-Chain", BlockchainID: cID,
				SubnetID: "11111111111111111111111111111111LpoYY", Network: "testnet"}
			var list metrics.ListChainsResponse
			s.v2(t, "/v2/chains", &list)
			if len(list.Chains) != 1 || list.Chains[0] != want || list.NextPageToken != "" {
				t.Errorf("chains %+v, want [%+v]", list, want)
			}
			for _, q := range []string{"?network=testnet", "?network=fuji"} {
				var l metrics.ListChainsResponse
				s.v2(t, "/v2/chains"+q, &l)
				if len(l.Chains) != 1 {
					t.Errorf("%s: %+v", q, l)
				}
			}
			var none metrics.ListChainsResponse
			s.v2(t, "/v2/chains?network=mainnet", &none)
			if len(none.Chains) != 0 {
				t.Errorf("mainnet: %+v", none)
			}
			for _, id := range []string{"88888", "c-chain", cID} {
				var c metrics.Chain
				s.v2(t, "/v2/chains/"+id, &c)
				if c != want {
					t.Errorf("chain %s: %+v, want %+v", id, c, want)
				}
			}
			for _, target := range []string{"/v2/health-check", "/v2/live-check"} {
				code, body := apitest.ServeUnvalidated(t, s.mux, http.MethodGet, target)
				var h struct {
					Status  string                    `json:"status"`
					Info    map[string]map[string]any `json:"info"`
					Error   map[string]map[string]any `json:"error"`
					Details map[string]map[string]any `json:"details"`
				}
				if err := json.Unmarshal(body, &h); err != nil || code != http.StatusOK || h.Status != "ok" || h.Details["chain:C"]["status"] != "up" {
					t.Errorf("%s: %d %s", target, code, body)
					continue
				}
				// The document's HealthIndicatorResultDto allows more than
				// status ("additionalProperties": true beside its $ref), which
				// the strict validator cannot read there: the indicators are
				// checked reduced to their status.
				for _, m := range []map[string]map[string]any{h.Info, h.Error, h.Details} {
					for k, ind := range m {
						m[k] = map[string]any{"status": ind["status"]}
					}
				}
				reduced, _ := json.Marshal(h)
				apitest.LoadMetrics(t).ValidateResponse(t, http.MethodGet, target, code, reduced)
			}
		})
	}
}

// Bad metric names, intervals, ranges, sizes and tokens are 400s with the
// metrics error shape; unknown chains 404.
func TestV2MetricsErrors(t *testing.T) {
	s := newServer(t, "sqlite")
	var first struct {
		NextPageToken string `json:"nextPageToken"`
	}
	s.v2(t, "/v2/chains/88888/metrics/txCount?timeInterval=hour&startTimestamp=0&pageSize=1", &first)
	if first.NextPageToken == "" {
		t.Fatal("no next page")
	}
	var holdersTok struct {
		NextPageToken string `json:"nextPageToken"`
	}
	code, body := s.get(t, "/v1/avg_tps/c-chain?timeInterval=hour&pageSize=1")
	if err := json.Unmarshal(body, &holdersTok); err != nil || code != 200 || holdersTok.NextPageToken == "" {
		t.Fatalf("avg_tps token: %d %s", code, body)
	}
	cases := []struct {
		target string
		status int
		want   string
	}{
		{"/v2/chains/88888/metrics/nope", 400, "metric must be one of"},
		{"/v2/chains/88888/metrics/txcount", 400, "metric must be one of"},
		{"/v2/chains/88888/rollingWindowMetrics/cumulativeTxCount", 400, "metric must be one of"},
		{"/v2/chains/88888/metrics/txCount?timeInterval=year", 400, "timeInterval must be one of"},
		{"/v2/chains/88888/metrics/txCount?startTimestamp=-1", 400, "startTimestamp"},
		{"/v2/chains/88888/metrics/txCount?startTimestamp=abc", 400, "startTimestamp must be an integer"},
		{"/v2/chains/88888/metrics/txCount?endTimestamp=99999999999999", 400, "endTimestamp"},
		{"/v2/chains/88888/metrics/txCount?startTimestamp=20&endTimestamp=10", 400, "must not be before"},
		{"/v2/chains/88888/metrics/txCount?pageSize=0", 400, "pageSize"},
		{"/v2/chains/88888/metrics/txCount?pageSize=2161", 400, "pageSize"},
		{"/v2/chains/88888/metrics/txCount?pageToken=xyz", 400, "pageToken must be a UUID"},
		{"/v2/chains/88888/metrics/txCount?pageToken=" + holdersTok.NextPageToken, 400, "another endpoint"},
		{"/v2/chains/88888/metrics/gasUsed?pageToken=" + first.NextPageToken, 400, "metric differs"},
		{"/v2/chains/88888/metrics/txCount?timeInterval=day&pageToken=" + first.NextPageToken, 400, "timeInterval differs"},
		{"/v2/chains/88888/metrics/txCount?pageSize=0&timeInterval=x", 400, "pageSize"},
		{"/v2/chains/12345/metrics/txCount", 404, "not indexed"},
		{"/v2/chains/total/metrics/txCount?pageToken=" + first.NextPageToken, 400, "chainId differs"},
		{"/v2/chains/total/metrics/txcount", 400, "metric must be one of"},
		{"/v2/chains/12345/rollingWindowMetrics/txCount", 404, "not indexed"},
		{"/v2/chains/12345", 404, "not indexed"},
		{"/v2/chains/mainnet", 404, "aggregate"},
		{"/v2/chains/total", 404, "aggregate"},
		{"/v2/chains/testnet/contracts/0x0000000000000000000000000000000000000001/balances?threshold=1", 404, "aggregate"},
		{"/v2/chains?network=devnet", 400, "network must be one of"},
		{"/v2/chains?pageToken=" + first.NextPageToken, 400, "another endpoint"},
	}
	for _, c := range cases {
		code, body := s.get(t, c.target)
		checkError(t, code, body, c.status, c.want)
	}
}

// devnet-c was indexed with call traces: contracts created by contracts
// count, their creator (the factory) is a deployer. Every metric at day and
// hour equals its recomputation from the recorded blocks, receipts and
// callTracer answers.
func TestEVMMetricsTracedDevnetC(t *testing.T) {
	dir := filepath.Join(devnet.Root(t), "testdata", "devnet-c")
	o := recordedChain(t, dir, true)
	nested := 0
	for _, b := range o.Blocks {
		nested += len(b.Nested)
	}
	if nested == 0 {
		t.Fatal("devnet-c's traces create no contract inside a tx: the test would prove nothing")
	}
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			e := testenv.Index(t, dir, backend, source.TracesAuto)
			mux := api.NewMux(discard())
			metrics.Register(mux, metrics.Deps{DB: e.DB, Network: e.Network, Log: discard()})
			s := &server{mux: mux}
			start := o.Blocks[1].Ms/1000 - 86400
			for _, m := range chainmetrics.ChainMetrics {
				for _, iv := range []string{"hour", "day"} {
					q := url.Values{"timeInterval": {iv}, "startTimestamp": {fmt.Sprint(start)}, "pageSize": {"2160"}}
					samePoints(t, m+" "+iv, s.walkMetric(t, "77777", m, q), o.series(m, iv, start))
				}
			}
		})
	}
}
