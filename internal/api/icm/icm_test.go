package icm_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/api"
	apiicm "github.com/permafrost-dev/permafrost/internal/api/icm"
	"github.com/permafrost-dev/permafrost/internal/decode/icm"
	"github.com/permafrost-dev/permafrost/internal/decode/icm/icmtest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// The properties each status's schema declares in the OpenAPI reference
// (PendingIcmMessage, DeliveredIcmMessage, DeliveredSourceNotIndexedIcmMessage).
var common13 = []string{"messageId", "icmContractAddress", "sourceBlockchainId", "destinationBlockchainId",
	"sourceEvmChainId", "destinationEvmChainId", "messageNonce", "from", "to", "data", "messageExecuted",
	"receipts", "receiptDelivered", "rewardDetails", "status"}

var allowed = map[string][]string{
	icm.StatusPending:                   append([]string{"sourceTransaction"}, common13...),
	icm.StatusDelivered:                 append([]string{"sourceTransaction", "destinationTransaction"}, common13...),
	icm.StatusDeliveredSourceNotIndexed: append([]string{"destinationTransaction"}, common13...),
}

type env struct {
	s   *icmtest.Scenario
	mux *api.Mux
}

func setup(t *testing.T, db *store.DB) *env {
	t.Helper()
	ctx := context.Background()
	s, err := icmtest.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []icm.ChainInfo{s.A, s.B} {
		if err := icmtest.RegisterChain(ctx, db, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RegisterFeeToken(ctx, db); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(&strings.Builder{}, nil))
	ix, err := icm.NewIndexer(icm.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	// Destination chain first: the API must not care.
	if err := icmtest.Apply(ctx, db, ix, s.DestinationFirst()); err != nil {
		t.Fatal(err)
	}
	n, err := api.LoadNetwork(ctx, db, "testnet")
	if err != nil {
		t.Fatal(err)
	}
	mux := api.NewMux(log)
	apiicm.Register(mux, apiicm.Deps{DB: db, Network: n, Pager: api.NewPager([]byte("test key")), Log: log})
	return &env{s: s, mux: mux}
}

func (e *env) get(t *testing.T, path string) (int, map[string]any) {
	t.Helper()
	w := httptest.NewRecorder()
	e.mux.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s: %d %q: %v", path, w.Code, w.Body.String(), err)
	}
	return w.Code, body
}

func idHex(h common.Hash) string { return hex.EncodeToString(h[:]) }

// The full answers for one message of each status, written out.
func TestGetMessage(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		e := setup(t, db)
		s := e.s
		tx := func(l string) string { return s.Tx[l].Hash.Hex() }
		delivered := map[string]any{
			"messageId":               idHex(s.M1),
			"icmContractAddress":      "0x253b2784c75e510dD0fF1da844684a1aC0aa5fcf",
			"sourceBlockchainId":      s.A.BlockchainID.String(),
			"destinationBlockchainId": s.B.BlockchainID.String(),
			"sourceEvmChainId":        "88888",
			"destinationEvmChainId":   "99999",
			"messageNonce":            "1",
			"from":                    s.Sender.Hex(),
			"to":                      s.AppB.Hex(),
			"data":                    "0x" + hex.EncodeToString([]byte("hello B")),
			"messageExecuted":         true,
			"receipts":                []any{},
			"receiptDelivered":        true,
			"rewardDetails": map[string]any{"address": s.FeeToken.Hex(), "name": "Fee Token", "symbol": "FEE",
				"decimals": float64(6), "ercType": "ERC-20", "value": "200"},
			"sourceTransaction": map[string]any{"txHash": tx("a1"), "timestamp": float64(1000), "gasSpent": "120000"},
			"destinationTransaction": map[string]any{"txHash": tx("b1"), "timestamp": float64(1005), "gasSpent": "250000",
				"rewardRedeemer": s.Reward.Hex(), "delivererAddress": s.Relayer.Hex()},
			"status": "delivered",
		}
		pending := map[string]any{
			"messageId":               idHex(s.M2),
			"icmContractAddress":      "0x253b2784c75e510dD0fF1da844684a1aC0aa5fcf",
			"sourceBlockchainId":      s.A.BlockchainID.String(),
			"destinationBlockchainId": s.B.BlockchainID.String(),
			"sourceEvmChainId":        "88888",
			"destinationEvmChainId":   "99999",
			"messageNonce":            "2",
			"from":                    s.Sender.Hex(),
			"to":                      s.AppB.Hex(),
			"data":                    "0x" + hex.EncodeToString([]byte("never delivered")),
			"messageExecuted":         false,
			"receipts":                []any{},
			"receiptDelivered":        false,
			"rewardDetails":           map[string]any{"address": common.Address{}.Hex(), "ercType": "ERC-20", "value": "0"},
			"sourceTransaction":       map[string]any{"txHash": tx("a3"), "timestamp": float64(1020), "gasSpent": "110000"},
			"status":                  "pending",
		}
		notIndexed := map[string]any{
			"messageId":               idHex(s.M4),
			"icmContractAddress":      "0x253b2784c75e510dD0fF1da844684a1aC0aa5fcf",
			"sourceBlockchainId":      s.Z.String(),
			"destinationBlockchainId": s.B.BlockchainID.String(),
			"destinationEvmChainId":   "99999",
			"messageNonce":            "7",
			"from":                    s.SenderZ.Hex(),
			"to":                      s.AppB.Hex(),
			"data":                    "0x" + hex.EncodeToString([]byte("from Z")),
			"messageExecuted":         true,
			"receipts":                []any{},
			"receiptDelivered":        false,
			"destinationTransaction": map[string]any{"txHash": tx("b3"), "timestamp": float64(1040), "gasSpent": "240000",
				"rewardRedeemer": s.Reward.Hex(), "delivererAddress": s.Relayer.Hex()},
			"status": "delivered_source_not_indexed",
		}
		withReceipt := map[string]any{"receivedMessageNonce": "1", "relayerRewardAddress": s.Reward.Hex()}
		for _, c := range []struct {
			path string
			want map[string]any
		}{
			{"/v1/icm/messages/" + idHex(s.M1), delivered},
			{"/v1/icm/messages/0x" + strings.ToUpper(idHex(s.M1)), delivered},
			{"/v1/icm/messages/" + idHex(s.M2), pending},
			{"/v1/icm/messages/" + idHex(s.M4), notIndexed},
		} {
			code, body := e.get(t, c.path)
			if code != 200 || !reflect.DeepEqual(body, c.want) {
				g, _ := json.MarshalIndent(body, "", " ")
				w, _ := json.MarshalIndent(c.want, "", " ")
				t.Errorf("%s: %d\ngot  %s\nwant %s", c.path, code, g, w)
			}
		}
		code, body := e.get(t, "/v1/icm/messages/"+idHex(s.M3))
		if code != 200 || !reflect.DeepEqual(body["receipts"], []any{withReceipt}) || body["status"] != "delivered" {
			t.Errorf("M3: %d %v", code, body)
		}
		code, body = e.get(t, "/v1/icm/messages/"+idHex(s.M5))
		if code != 200 || body["messageExecuted"] != true || body["destinationTransaction"].(map[string]any)["txHash"] != tx("b2") {
			t.Errorf("M5 (failed then retried): %d %v", code, body)
		}

		errs := []struct {
			path, want string
			code       int
		}{
			{"/v1/icm/messages/" + strings.Repeat("ab", 32), "not found", 404},
			{"/v1/icm/messages/xyz", "messageId", 400},
			{"/v1/icm/messages/" + strings.Repeat("ab", 31), "messageId", 400},
		}
		for _, c := range errs {
			code, body := e.get(t, c.path)
			msg, _ := body["message"].(string)
			if code != c.code || body["statusCode"] != float64(c.code) || !strings.Contains(msg, c.want) || body["error"] == "" {
				t.Errorf("%s: %d %v", c.path, code, body)
			}
		}
	})
}

func (e *env) listAll(t *testing.T, path string, q url.Values) []string {
	t.Helper()
	var out []string
	for page := 0; page < 20; page++ {
		code, body := e.get(t, path+"?"+q.Encode())
		if code != 200 {
			t.Fatalf("%s?%s: %d %v", path, q.Encode(), code, body)
		}
		msgs := body["messages"].([]any)
		if ps := q.Get("pageSize"); ps == "1" && len(msgs) > 1 {
			t.Fatalf("page larger than pageSize: %d", len(msgs))
		}
		for _, m := range msgs {
			mm := m.(map[string]any)
			keys := make([]string, 0, len(mm))
			for k := range mm {
				keys = append(keys, k)
			}
			for _, k := range keys {
				if !contains(allowed[mm["status"].(string)], k) {
					t.Errorf("%s message %s has %s", mm["status"], mm["messageId"], k)
				}
			}
			out = append(out, mm["messageId"].(string))
		}
		tok, _ := body["nextPageToken"].(string)
		if tok == "" {
			return out
		}
		q.Set("pageToken", tok)
	}
	t.Fatal("too many pages")
	return nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// newest first by timestamp (source, else destination), then id.
func order(s *icmtest.Scenario, ms ...common.Hash) []string {
	when := map[common.Hash]int64{s.M1: 1000, s.M2: 1020, s.M5: 1020, s.M4: 1040, s.M3: 1050}
	sort.Slice(ms, func(i, j int) bool {
		if when[ms[i]] != when[ms[j]] {
			return when[ms[i]] > when[ms[j]]
		}
		return idHex(ms[i]) > idHex(ms[j])
	})
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = idHex(m)
	}
	return out
}

func TestListings(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		e := setup(t, db)
		s := e.s
		all := order(s, s.M1, s.M2, s.M3, s.M4, s.M5)
		fromA := order(s, s.M1, s.M2, s.M5)
		cases := []struct {
			path string
			q    url.Values
			want []string
		}{
			{"/v1/icm/messages", url.Values{}, all},
			{"/v1/icm/messages", url.Values{"sourceBlockchainId": {"88888"}}, fromA},
			{"/v1/icm/messages", url.Values{"sourceBlockchainId": {s.A.BlockchainID.String()}}, fromA},
			{"/v1/icm/messages", url.Values{"sourceBlockchainId": {"c-chain"}}, fromA},
			{"/v1/icm/messages", url.Values{"destinationBlockchainId": {"88888"}}, order(s, s.M3)},
			{"/v1/icm/messages", url.Values{"blockchainId": {s.Z.String()}}, order(s, s.M4)},
			{"/v1/icm/messages", url.Values{"blockchainId": {"99999"}}, all},
			{"/v1/icm/messages", url.Values{"sourceBlockchainId": {"12345"}}, nil},
			{"/v1/icm/messages", url.Values{"from": {s.Sender.Hex()}, "to": {strings.ToLower(s.AppB2.Hex())}}, order(s, s.M5)},
			{"/v1/icm/messages", url.Values{"network": {"fuji"}}, all},
			{"/v1/icm/messages", url.Values{"network": {"mainnet"}}, nil},
			{"/v1/icm/addresses/" + s.Sender.Hex() + "/messages", url.Values{}, order(s, s.M1, s.M2, s.M3, s.M5)},
			{"/v1/icm/addresses/" + strings.ToLower(s.AppB.Hex()) + "/messages", url.Values{"network": {"testnet"}}, order(s, s.M1, s.M2, s.M3, s.M4)},
			{"/v1/icm/addresses/" + s.AppB.Hex() + "/messages", url.Values{"network": {"mainnet"}}, nil},
			{"/v1/icm/addresses/" + s.Relayer.Hex() + "/messages", url.Values{}, nil},
		}
		for _, c := range cases {
			for _, size := range []string{"1", "2", ""} {
				q := url.Values{}
				for k, v := range c.q {
					q[k] = v
				}
				if size != "" {
					q.Set("pageSize", size)
				}
				if got := e.listAll(t, c.path, q); !reflect.DeepEqual(got, c.want) {
					t.Errorf("%s?%s: %v, want %v", c.path, q.Encode(), got, c.want)
				}
			}
		}
	})
}

func TestListingErrors(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		e := setup(t, db)
		s := e.s
		byA := "/v1/icm/addresses/" + s.Sender.Hex() + "/messages"
		_, first := e.get(t, byA+"?pageSize=1")
		tok := first["nextPageToken"].(string)
		cases := []struct {
			path string
			want []string
		}{
			{"/v1/icm/addresses/0x1234/messages", []string{"address must be an EVM address"}},
			{"/v1/icm/addresses/" + strings.Repeat("z", 40) + "/messages", []string{"address"}},
			{byA + "?pageSize=0", []string{"pageSize"}},
			{byA + "?pageSize=101", []string{"pageSize"}},
			{byA + "?pageSize=ten", []string{"pageSize"}},
			{byA + "?network=moon", []string{"network"}},
			{byA + "?pageSize=0&network=moon", []string{"pageSize", "network"}},
			{byA + "?pageToken=garbage", []string{"pageToken"}},
			{byA + "?pageToken=" + tok[:len(tok)-3] + "AAA", []string{"pageToken"}},
			// A token only continues the listing that issued it.
			{"/v1/icm/addresses/" + s.AppB.Hex() + "/messages?pageToken=" + tok, []string{"pageToken"}},
			{byA + "?network=fuji&pageToken=" + tok, []string{"pageToken"}},
			{"/v1/icm/messages?pageToken=" + tok, []string{"pageToken"}},
			{"/v1/icm/messages?sourceBlockchainId=not-a-chain", []string{"sourceBlockchainId"}},
			{"/v1/icm/messages?destinationBlockchainId=0xabc&blockchainId=!", []string{"destinationBlockchainId", "blockchainId"}},
			{"/v1/icm/messages?from=nobody", []string{"from"}},
			{"/v1/icm/messages?to=0x12", []string{"to"}},
		}
		for _, c := range cases {
			code, body := e.get(t, c.path)
			msg, _ := body["message"].(string)
			ok := code == 400 && body["statusCode"] == float64(400) && body["error"] == "Bad Request"
			for _, w := range c.want {
				ok = ok && strings.Contains(msg, w)
			}
			if !ok {
				t.Errorf("%s: %d %v", c.path, code, body)
			}
		}
		// The token does continue its own listing, whatever the page size.
		code, body := e.get(t, byA+"?pageSize=3&pageToken="+url.QueryEscape(tok))
		if code != 200 || len(body["messages"].([]any)) != 3 {
			t.Errorf("continue: %d %v", code, body)
		}
	})
}
