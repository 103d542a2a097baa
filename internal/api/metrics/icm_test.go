package metrics_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api/metrics"
	"github.com/permafrost-dev/permafrost/internal/devnet"
)

// canonicalMessenger is TeleporterMessenger v1.0.0's address; devnet-d's
// messenger is elsewhere, as later versions are (issue #24).
const canonicalMessenger = "0x253b2784c75e510dD0fF1da844684a1aC0aa5fcf"

// recordedMessage is an icm.json message with its send time, read from the
// source chain's recorded receipt and block.
type recordedMessage struct {
	src, dst string
	time     int64
}

// recordedICM reads a recording's ICM messages (none without icm.json) and
// the newest recorded block time of its EVM chains.
func recordedICM(t *testing.T, dir string) ([]recordedMessage, int64) {
	t.Helper()
	files := []string{devnet.CRPC}
	var fx struct {
		L1 struct {
			BlockchainID        string `json:"blockchainID"`
			TeleporterMessenger string `json:"teleporterMessenger"`
		} `json:"l1"`
		Messages []struct {
			Direction               string `json:"direction"`
			SourceBlockchainID      string `json:"sourceBlockchainID"`
			DestinationBlockchainID string `json:"destinationBlockchainID"`
			SendTxHash              string `json:"sendTxHash"`
		} `json:"messages"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "icm.json"))
	if err == nil {
		if err := json.Unmarshal(b, &fx); err != nil {
			t.Fatal(err)
		}
		files = append(files, "ext_bc_"+fx.L1.BlockchainID+"_rpc.jsonl")
		if strings.EqualFold(fx.L1.TeleporterMessenger, canonicalMessenger) {
			t.Fatalf("devnet-d's messenger is the canonical one: the test would not show #24's point")
		}
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	blockOf, timeOf := map[string]int64{}, map[string]map[int64]int64{}
	tip := int64(0)
	for _, f := range files {
		calls := devnet.LoadRPCIn(t, dir, f)
		timeOf[f] = map[int64]int64{}
		for _, x := range calls.Method("eth_getBlockByNumber") {
			var blk struct{ Number, Timestamp string }
			if x.Response.Result == nil || string(x.Response.Result) == "null" {
				continue
			}
			devnet.Result(t, x, &blk)
			n, ts := hexInt(t, blk.Number), hexInt(t, blk.Timestamp)
			timeOf[f][n] = ts
			tip = max(tip, ts)
		}
		for _, x := range calls.Method("eth_getTransactionReceipt") {
			var r struct{ TransactionHash, BlockNumber string }
			if x.Response.Result == nil || string(x.Response.Result) == "null" {
				continue
			}
			devnet.Result(t, x, &r)
			blockOf[f+strings.ToLower(r.TransactionHash)] = hexInt(t, r.BlockNumber)
		}
	}
	var out []recordedMessage
	for _, m := range fx.Messages {
		f := devnet.CRPC
		if strings.HasPrefix(m.Direction, "L1") {
			f = files[1]
		}
		n, ok := blockOf[f+strings.ToLower(m.SendTxHash)]
		if !ok {
			t.Fatalf("no recorded receipt of send %s", m.SendTxHash)
		}
		ts, ok := timeOf[f][n]
		if !ok {
			t.Fatalf("no recorded block %d of %s", n, f)
		}
		out = append(out, recordedMessage{m.SourceBlockchainID, m.DestinationBlockchainID, ts})
	}
	return out, tip
}

func hexInt(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return v
}

// groupOf is the (src, dst) a message is reported under for groupBy with
// filters src and dst.
func groupOf(m recordedMessage, groupBy, src, dst string) [2]string {
	g := [2]string{src, dst}
	if g[0] == "" {
		g[0] = "all"
	}
	if g[1] == "" {
		g[1] = "all"
	}
	if strings.HasPrefix(groupBy, "src") {
		g[0] = m.src
	}
	if strings.HasSuffix(groupBy, "destBlockchainId") {
		g[1] = m.dst
	}
	return g
}

func floorTo(iv string, ts int64) int64 {
	t := time.Unix(ts, 0).UTC()
	switch iv {
	case "hour":
		return t.Truncate(time.Hour).Unix()
	case "week":
		d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7)).Unix()
	case "month":
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC).Unix()
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC).Unix()
}

func prevInterval(iv string, start int64) int64 {
	t := time.Unix(start, 0).UTC()
	switch iv {
	case "hour":
		return t.Add(-time.Hour).Unix()
	case "week":
		return t.AddDate(0, 0, -7).Unix()
	case "month":
		return t.AddDate(0, -1, 0).Unix()
	}
	return t.AddDate(0, 0, -1).Unix()
}

// TestICMMetrics counts the ICM messages of icm.json (devnet-d's seven real
// Teleporter messages, from a messenger at a non-canonical address) at their
// recorded send times and compares every summary window and the time series,
// grouped and filtered every documented way and paged, on both backends;
// devnet-a has no message and answers zeros.
func TestICMMetrics(t *testing.T) {
	forEachV2(t, func(t *testing.T, s *v2Server) {
		msgs, tip := recordedICM(t, s.dir)
		if s.rec == "devnet-d" && len(msgs) != 7 {
			t.Fatalf("%d recorded messages", len(msgs))
		}
		var ids []string
		for _, m := range msgs {
			ids = append(ids, m.src)
		}
		slices.Sort(ids)
		ids = slices.Compact(ids)
		type query struct{ src, dst, groupBy string }
		queries := []query{{}, {groupBy: "srcBlockchainId"}, {groupBy: "destBlockchainId"},
			{groupBy: "srcBlockchainId,destBlockchainId"}}
		for _, id := range ids {
			queries = append(queries, query{src: id}, query{dst: id}, query{src: id, groupBy: "destBlockchainId"})
		}
		for _, q := range queries {
			v := url.Values{}
			if q.src != "" {
				v.Set("srcBlockchainId", q.src)
			}
			if q.dst != "" {
				v.Set("destBlockchainId", q.dst)
			}
			if q.groupBy != "" {
				v.Set("groupBy", q.groupBy)
			}
			v.Set("network", "fuji")
			var sel []recordedMessage
			for _, m := range msgs {
				if (q.src == "" || m.src == q.src) && (q.dst == "" || m.dst == q.dst) {
					sel = append(sel, m)
				}
			}
			// Summary: the windows end at the newest EVM block's hour and day.
			want := map[[2]string]*metrics.ICMWindows{}
			for _, m := range sel {
				g := groupOf(m, q.groupBy, q.src, q.dst)
				w := want[g]
				if w == nil {
					w = &metrics.ICMWindows{SrcBlockchainID: g[0], DestBlockchainID: g[1]}
					want[g] = w
				}
				w.AllTime++
				hours := (floorTo("hour", tip) - floorTo("hour", m.time)) / 3600
				days := (floorTo("day", tip) - floorTo("day", m.time)) / 86400
				for _, c := range []struct {
					in  bool
					dst *int64
				}{{hours < 1, &w.LastHour}, {hours < 24, &w.LastDay}, {days < 7, &w.LastWeek},
					{days < 30, &w.LastMonth}, {days < 90, &w.Last90Days}, {days < 365, &w.LastYear}} {
					if c.in {
						*c.dst++
					}
				}
			}
			path := "/v2/icm/summary?" + v.Encode()
			if q.groupBy == "" {
				var r struct{ Result metrics.ICMWindows }
				s.getOK(t, path, &r)
				w := want[groupOf(recordedMessage{}, "", q.src, q.dst)]
				if w == nil {
					w = &metrics.ICMWindows{SrcBlockchainID: groupOf(recordedMessage{}, "", q.src, q.dst)[0], DestBlockchainID: groupOf(recordedMessage{}, "", q.src, q.dst)[1]}
				}
				if r.Result != *w {
					t.Errorf("%s: %+v, want %+v", path, r.Result, *w)
				}
			} else {
				// A list per group: the document's breakdown examples; its
				// schema holds one object, so this body is not validated.
				code, body := s.get(t, path)
				var r struct{ Result []metrics.ICMWindows }
				if code != 200 || json.Unmarshal(body, &r) != nil {
					t.Fatalf("%s: %d %s", path, code, body)
				}
				if len(r.Result) != len(want) {
					t.Errorf("%s: %d groups, want %d", path, len(r.Result), len(want))
				}
				for _, got := range r.Result {
					if w := want[[2]string{got.SrcBlockchainID, got.DestBlockchainID}]; w == nil || got != *w {
						t.Errorf("%s: %+v, want %+v", path, got, w)
					}
				}
			}
			// Time series: every group in every interval from the oldest
			// message's to the tip's, newest first, in pages.
			for _, iv := range []string{"hour", "day", "week", "month"} {
				var groups [][2]string
				counts := map[[3]string]int64{}
				oldest := tip
				for _, m := range sel {
					g := groupOf(m, q.groupBy, q.src, q.dst)
					if !slices.Contains(groups, g) {
						groups = append(groups, g)
					}
					counts[[3]string{fmt.Sprint(floorTo(iv, m.time)), g[0], g[1]}]++
					oldest = min(oldest, m.time)
				}
				slices.SortFunc(groups, func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) })
				var exp []metrics.ICMValue
				if len(groups) > 0 {
					for st := floorTo(iv, tip); st >= floorTo(iv, oldest); st = prevInterval(iv, st) {
						for _, g := range groups {
							exp = append(exp, metrics.ICMValue{Value: counts[[3]string{fmt.Sprint(st), g[0], g[1]}], Timestamp: st,
								SrcBlockchainID: g[0], DestBlockchainID: g[1]})
						}
					}
				}
				for _, size := range []int{2160, 1, 3} {
					vv := url.Values{}
					for k := range v {
						vv.Set(k, v.Get(k))
					}
					vv.Set("timeInterval", iv)
					vv.Set("pageSize", fmt.Sprint(size))
					path := "/v2/icm/timeseries?" + vv.Encode()
					var got []metrics.ICMValue
					for page := 0; page < 200; page++ {
						var r metrics.ICMSeriesResponse
						s.getOK(t, path, &r)
						got = append(got, r.Results...)
						if r.NextPageToken == "" {
							break
						}
						path = "/v2/icm/timeseries?pageToken=" + r.NextPageToken
					}
					if !slices.Equal(got, exp) {
						t.Errorf("%s:\n got %v\nwant %v", path, got, exp)
					}
				}
			}
		}
	})
}

// TestICMMetricsBadInput: bad parameters are 400s naming them, an unknown
// blockchain a 404.
func TestICMMetricsBadInput(t *testing.T) {
	s := newV2Server(t, "devnet-a", "sqlite")
	s.checkErrors(t, []errorCase{
		{"/v2/icm/summary?groupBy=src", 400, "groupBy"},
		{"/v2/icm/summary?network=devnet", 400, "network"},
		{"/v2/icm/summary?network=mainnet", 404, "mainnet"},
		{"/v2/icm/summary?srcBlockchainId=nope", 400, "srcBlockchainId"},
		{"/v2/icm/timeseries?destBlockchainId=2h52eVzs934z3GB47UArpCwLZ8L4Q9ENmuAVit2Q18zyfceS5e", 404, "blockchain"},
		{"/v2/icm/timeseries?timeInterval=year", 400, "timeInterval"},
		{"/v2/icm/timeseries?pageSize=2161", 400, "pageSize"},
		{"/v2/icm/timeseries?startTimestamp=9&endTimestamp=8", 400, "endTimestamp"},
	})
}
