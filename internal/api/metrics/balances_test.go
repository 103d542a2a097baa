package metrics_test

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// contracts/{address}/balances lists the holders above a threshold over a
// time range with their balance at its end, as replayed from the recorded
// Transfer logs; the pages of a one-per-page walk are the same list.
func TestTokenBalancesMatchRecording(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) { checkTokenBalances(t, newServer(t, backend)) })
	}
}

// checkTokenBalances compares s's holder listings with the recording's.
func checkTokenBalances(t *testing.T, s *server) {
	t.Helper()
	o := recordedEVM(t)
	c := devnet.LoadNetwork(t).ContractsLower()
	tip := int64(len(o.Blocks) - 1)
	timeOf := func(n int64) int64 { return o.Blocks[n].Ms / 1000 }
	nonEmpty := 0
	for _, tc := range []struct {
		token      string
		threshold  string
		start, end int64 // block numbers, -1: not given
	}{
		{c["erc20"], "1", -1, -1},
		{c["erc20"], "1000000000000000000000", -1, -1},
		{c["erc20"], "1", 10, 20},
		{c["erc20"], "1", 25, tip},
		{c["erc721"], "1", -1, -1},
		{c["erc721"], "2", 5, 30},
		{c["factoryChild"], "1", -1, -1},
	} {
		q := url.Values{"threshold": {tc.threshold}}
		startBlock, endBlock := int64(-1), tip
		if tc.start >= 0 {
			q.Set("startTimestamp", fmt.Sprint(timeOf(tc.start)))
			startBlock = tc.start
			for startBlock < tip && timeOf(startBlock+1) == timeOf(tc.start) {
				startBlock++ // the newest block of that second
			}
		}
		if tc.end >= 0 {
			q.Set("endTimestamp", fmt.Sprint(timeOf(tc.end)))
			endBlock = tc.end
			for endBlock < tip && timeOf(endBlock+1) == timeOf(tc.end) {
				endBlock++
			}
		}
		thr, _ := new(big.Int).SetString(tc.threshold, 10)
		want := o.HeldAbove(tc.token, thr, startBlock, endBlock)
		got := map[string]string{}
		var order []string
		q.Set("pageSize", "1")
		for pages := 0; ; pages++ {
			var r struct {
				NextPageToken string `json:"nextPageToken"`
				Addresses     []struct {
					Address string `json:"address"`
					SortKey string `json:"sortKey"`
				} `json:"addresses"`
			}
			target := "/v2/chains/88888/contracts/" + tc.token + "/balances?" + q.Encode()
			code, body := s.get(t, target)
			if code != http.StatusOK {
				t.Fatalf("%s: %d %s", target, code, body)
			}
			if err := json.Unmarshal(body, &r); err != nil {
				t.Fatal(err)
			}
			for _, a := range r.Addresses {
				got[a.Address] = a.SortKey
				order = append(order, a.SortKey+" "+a.Address)
			}
			if r.NextPageToken == "" || pages > 100 {
				break
			}
			q.Set("pageToken", r.NextPageToken)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || len(order) != len(want) {
			t.Errorf("%+v: %v, want %v", tc, got, want)
		}
		for i := 1; i < len(order); i++ {
			a, _ := new(big.Int).SetString(got[order[i-1][len(order[i-1])-42:]], 10)
			b, _ := new(big.Int).SetString(got[order[i][len(order[i])-42:]], 10)
			if a.Cmp(b) < 0 {
				t.Errorf("%+v: not ordered by balance: %v", tc, order)
			}
		}
		if len(want) > 0 {
			nonEmpty++
		}
	}
	if nonEmpty < 5 {
		t.Errorf("only %d cases have holders: the test proves little", nonEmpty)
	}
}

// Bad thresholds, addresses and contracts of other kinds are 400s; unknown
// contracts 404.
func TestTokenBalancesErrors(t *testing.T) {
	s := newServer(t, "sqlite")
	c := devnet.LoadNetwork(t).ContractsLower()
	for _, tc := range []struct {
		target string
		status int
		want   string
	}{
		{"/v2/chains/88888/contracts/" + c["erc20"] + "/balances", 400, "threshold"},
		{"/v2/chains/88888/contracts/" + c["erc20"] + "/balances?threshold=-1", 400, "threshold"},
		{"/v2/chains/88888/contracts/" + c["erc20"] + "/balances?threshold=1e5", 400, "threshold"},
		{"/v2/chains/88888/contracts/0x12/balances?threshold=1", 400, "address"},
		{"/v2/chains/88888/contracts/" + c["erc1155"] + "/balances?threshold=1", 400, "ERC-20 or ERC-721"},
		{"/v2/chains/88888/contracts/" + c["erc20"] + "/balances?threshold=1&pageSize=5001", 400, "pageSize"},
		{"/v2/chains/88888/contracts/" + c["erc20"] + "/balances?threshold=1&startTimestamp=9&endTimestamp=8", 400, "must not be before"},
		{"/v2/chains/88888/contracts/0x" + "ab" + "00000000000000000000000000000000000000" + "/balances?threshold=1", 404, "not known"},
		{"/v2/chains/4242/contracts/" + c["erc20"] + "/balances?threshold=1", 404, "not indexed"},
	} {
		code, body := s.get(t, tc.target)
		checkError(t, code, body, tc.status, tc.want)
	}
}
