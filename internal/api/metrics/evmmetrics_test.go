package metrics_test

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/api/metrics"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// The expectations here are recomputed from the real node's answers in the
// recording (eth_getBlockByNumber with full txs, eth_getBlockReceipts), never
// from the index: txs, gas, prices and statuses from the receipts, parties
// from the txs and the ERC-20/721/1155 transfer logs.

const (
	topicTransfer       = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
	topicTransferSingle = "0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62"
	topicTransferBatch  = "0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb"
	zeroAddress         = "0x0000000000000000000000000000000000000000"
)

// The published document's ChainMetric and ChainRollingWindowMetric enums.
var (
	chainMetrics = []string{"activeAddresses", "activeSenders", "cumulativeTxCount", "cumulativeAddresses",
		"cumulativeContracts", "cumulativeDeployers", "contracts", "deployers", "gasUsed", "txCount", "avgGps",
		"maxGps", "avgTps", "maxTps", "avgGasPrice", "maxGasPrice", "feesPaid"}
	rollingMetrics = []string{"gasUsed", "txCount", "avgGps", "maxGps", "avgTps", "maxTps", "avgGasPrice",
		"maxGasPrice", "feesPaid", "contracts", "deployers", "activeAddresses", "activeSenders"}
)

type oTx struct {
	from, to string
	gasUsed  int64
	price    *big.Int
	created  bool // a successful top-level contract creation
}

type oBlock struct {
	number, ms int64
	txs        []oTx
	transfers  [][2]string // from, to
}

func hexInt(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return v
}

func topicAddr(topic string) string { return "0x" + topic[len(topic)-40:] }

// recordedEVM reads the C-chain's recorded blocks and receipts, ascending.
func recordedEVM(t *testing.T) []oBlock {
	t.Helper()
	type rcpt struct {
		From              string `json:"from"`
		To                string `json:"to"`
		GasUsed           string `json:"gasUsed"`
		EffectiveGasPrice string `json:"effectiveGasPrice"`
		Status            string `json:"status"`
		ContractAddress   string `json:"contractAddress"`
		Logs              []struct {
			Topics []string `json:"topics"`
		} `json:"logs"`
	}
	blocks := map[int64]*oBlock{}
	receipts := map[int64][]rcpt{}
	for _, l := range devnet.LoadRPC(t, devnet.CRPC) {
		var params []json.RawMessage
		if json.Unmarshal(l.Params, &params) != nil || len(params) == 0 || len(l.Response.Result) == 0 {
			continue
		}
		switch l.Method {
		case "eth_getBlockByNumber":
			if len(params) < 2 || string(params[1]) != "true" {
				continue
			}
			var b struct {
				Number       string `json:"number"`
				Timestamp    string `json:"timestamp"`
				TimestampMs  string `json:"timestampMilliseconds"`
				Transactions []json.RawMessage
			}
			if err := json.Unmarshal(l.Response.Result, &b); err != nil {
				t.Fatal(err)
			}
			n := hexInt(t, b.Number)
			ms := hexInt(t, b.Timestamp) * 1000
			if b.TimestampMs != "" {
				ms = hexInt(t, b.TimestampMs)
			}
			blocks[n] = &oBlock{number: n, ms: ms}
		case "eth_getBlockReceipts":
			var rs []rcpt
			if err := json.Unmarshal(l.Response.Result, &rs); err != nil {
				t.Fatal(err)
			}
			var p string
			if json.Unmarshal(params[0], &p) != nil {
				continue
			}
			receipts[hexInt(t, p)] = rs
		}
	}
	var out []oBlock
	for n := int64(0); blocks[n] != nil; n++ {
		b := blocks[n]
		for _, r := range receipts[n] {
			price, ok := new(big.Int).SetString(strings.TrimPrefix(r.EffectiveGasPrice, "0x"), 16)
			if !ok {
				t.Fatalf("block %d: price %q", n, r.EffectiveGasPrice)
			}
			b.txs = append(b.txs, oTx{from: strings.ToLower(r.From), to: strings.ToLower(r.To), gasUsed: hexInt(t, r.GasUsed),
				price: price, created: r.Status == "0x1" && r.ContractAddress != ""})
			for _, lg := range r.Logs {
				switch {
				case len(lg.Topics) >= 3 && lg.Topics[0] == topicTransfer:
					b.transfers = append(b.transfers, [2]string{topicAddr(lg.Topics[1]), topicAddr(lg.Topics[2])})
				case len(lg.Topics) == 4 && (lg.Topics[0] == topicTransferSingle || lg.Topics[0] == topicTransferBatch):
					// One party pair per log; a batch's ids share it.
					b.transfers = append(b.transfers, [2]string{topicAddr(lg.Topics[2]), topicAddr(lg.Topics[3])})
				}
			}
		}
		out = append(out, *b)
	}
	if len(out) < 30 {
		t.Fatalf("recording has %d C-chain blocks with full txs", len(out))
	}
	return out
}

// oracle computes every metric over a set of blocks, from its definition
// in docs/metrics.md.
type oracle struct{ blocks []oBlock }

func counted(a string) bool { return a != "" && a != zeroAddress }

// window folds the blocks with time in [from, to) (unix seconds); all is
// every block before to (for the cumulative metrics).
func (o oracle) window(metric string, from, to int64) float64 {
	var txs, gas, contracts int64
	fees, priceSum, maxPrice := new(big.Int), new(big.Int), new(big.Int)
	var maxTPS, maxGPS float64
	var lastMs int64
	active, senders, deployers := map[string]bool{}, map[string]bool{}, map[string]bool{}
	everActive, everDeployers := map[string]bool{}, map[string]bool{}
	var cumTxs, cumContracts int64
	for i, b := range o.blocks {
		sec := b.ms / 1000
		if sec >= to {
			break
		}
		in := sec >= from
		var blockGas int64
		for _, tx := range b.txs {
			blockGas += tx.gasUsed
			cumTxs++
			for _, a := range []string{tx.from, tx.to} {
				if counted(a) {
					everActive[a] = true
					if in {
						active[a] = true
					}
				}
			}
			if in && counted(tx.from) {
				senders[tx.from] = true
			}
			if tx.created {
				cumContracts++
				everDeployers[tx.from] = true
				if in {
					contracts++
					deployers[tx.from] = true
				}
			}
			if in {
				txs++
				priceSum.Add(priceSum, tx.price)
				fees.Add(fees, new(big.Int).Mul(tx.price, big.NewInt(tx.gasUsed)))
				if tx.price.Cmp(maxPrice) > 0 {
					maxPrice.Set(tx.price)
				}
			}
		}
		for _, tr := range b.transfers {
			for _, a := range tr {
				if counted(a) {
					everActive[a] = true
					if in {
						active[a] = true
					}
				}
			}
			if in && counted(tr[0]) {
				senders[tr[0]] = true
			}
		}
		if !in {
			continue
		}
		gas += blockGas
		lastMs = b.ms
		if i > 0 {
			d := float64(max(b.ms-o.blocks[i-1].ms, 1))
			maxTPS = max(maxTPS, float64(len(b.txs))*1000/d)
			maxGPS = max(maxGPS, float64(blockGas)*1000/d)
		}
	}
	perSec := func(n int64) float64 {
		if n == 0 {
			return 0
		}
		return float64(n) / max(float64(lastMs-from*1000)/1000, 1)
	}
	ratio := func(v *big.Int, n int64) float64 {
		if n == 0 {
			return 0
		}
		f, _ := new(big.Rat).SetFrac(v, big.NewInt(n)).Float64()
		return f
	}
	switch metric {
	case "activeAddresses":
		return float64(len(active))
	case "activeSenders":
		return float64(len(senders))
	case "cumulativeTxCount":
		return float64(cumTxs)
	case "cumulativeAddresses":
		return float64(len(everActive))
	case "cumulativeContracts":
		return float64(cumContracts)
	case "cumulativeDeployers":
		return float64(len(everDeployers))
	case "contracts":
		return float64(contracts)
	case "deployers":
		return float64(len(deployers))
	case "gasUsed":
		return float64(gas)
	case "txCount":
		return float64(txs)
	case "avgGps":
		return perSec(gas)
	case "maxGps":
		return maxGPS
	case "avgTps":
		return perSec(txs)
	case "maxTps":
		return maxTPS
	case "avgGasPrice":
		return ratio(priceSum, txs)
	case "maxGasPrice":
		return ratio(maxPrice, 1)
	case "feesPaid":
		return ratio(fees, 1)
	}
	panic(metric)
}

// series is the expected answer: every interval overlapping [start, tip]
// from the first block's on, newest first.
func (o oracle) series(metric, iv string, start int64) []metrics.Point {
	first, tip := o.blocks[0].ms/1000, o.blocks[len(o.blocks)-1].ms/1000
	out := []metrics.Point{}
	for s := floorOf(iv, tip); s >= floorOf(iv, max(first, start)); s = step(iv, s, -1) {
		out = append(out, metrics.Point{Timestamp: s, Value: o.window(metric, s, step(iv, s, 1))})
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
			o := oracle{recordedEVM(t)}
			block1 := o.blocks[1].ms / 1000
			nonzero := map[string]bool{}
			for _, m := range chainMetrics {
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
			}
			for _, m := range chainMetrics {
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
		t.Run(backend, func(t *testing.T) {
			s := newServer(t, backend)
			o := oracle{recordedEVM(t)}
			first, tip := o.blocks[0].ms/1000, o.blocks[len(o.blocks)-1].ms/1000
			hour, day := floorOf("hour", tip), floorOf("day", tip)
			windows := []struct {
				name string
				from int64
			}{
				{"lastHour", hour}, {"lastDay", step("hour", hour, -23)}, {"lastWeek", step("day", day, -6)},
				{"lastMonth", step("day", day, -29)}, {"last90Days", step("day", day, -89)},
				{"lastYear", step("day", day, -364)}, {"allTime", first},
			}
			for _, m := range rollingMetrics {
				var r struct {
					Result map[string]float64 `json:"result"`
				}
				s.v2(t, "/v2/chains/88888/rollingWindowMetrics/"+m, &r)
				want := map[string]float64{}
				for i, w := range windows {
					if (m == "activeAddresses" || m == "activeSenders") && i >= 3 {
						break
					}
					want[w.name] = o.window(m, w.from, tip+1)
				}
				if fmt.Sprint(r.Result) != fmt.Sprint(want) {
					t.Errorf("%s: %v, want %v", m, r.Result, want)
				}
			}
		})
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
		{"/v2/chains/total/metrics/txCount", 404, "aggregates"},
		{"/v2/chains/12345/rollingWindowMetrics/txCount", 404, "not indexed"},
		{"/v2/chains/12345", 404, "not indexed"},
		{"/v2/chains/mainnet", 404, "aggregates"},
		{"/v2/chains?network=devnet", 400, "network must be one of"},
		{"/v2/chains?pageToken=" + first.NextPageToken, 400, "another endpoint"},
	}
	for _, c := range cases {
		code, body := s.get(t, c.target)
		checkError(t, code, body, c.status, c.want)
	}
}
