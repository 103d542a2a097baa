package platform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/utils/constants"

	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// TestNodeErrorsMatchReplay sends requests the node rejects from the request
// alone and compares the answers with those of the replay node, which
// produces them with avalanchego's own codec exactly as the recorded node
// (and checks them against the recorded error answers in its own tests).
func TestNodeErrorsMatchReplay(t *testing.T) {
	e := setup(t, "sqlite", setupOpts{})
	for _, body := range []string{
		`{`,
		`[`,
		`"just a string"`,
		`{"jsonrpc":"1.0","id":1,"method":"platform.getBalance","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"platform.GetBalance","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"platform.noSuchMethod","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"avm.getBalance","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"getBalance","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"platform.getBlockByHeight","params":{"height":"abc"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"platform.getBlockByHeight","params":{"height":-1}}`,
		`{"jsonrpc":"2.0","id":1,"method":"platform.getBlockByHeight","params":{"height":"18446744073709551616"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"platform.getBlockByHeight","params":{"height":1,"encoding":"cb58"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"platform.getBlock","params":{"blockID":"not-an-id"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"platform.getBlock","params":"abc"}`,
		`{"jsonrpc":"2.0","id":1,"method":"platform.getCurrentValidators","params":{"nodeIDs":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"platform.getCurrentValidators","params":{"nodeIDs":["NodeID-x"]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"platform.getCurrentValidators","params":{"subnetID":5}}`,
		`{"jsonrpc":"2.0","id":1,"method":"platform.getCurrentSupply","params":[1,2]}`,
		`{"jsonrpc":"2.0","id":1,"method":"platform.getBalance","params":{"addresses":[1]}}`,
		`{"jsonrpc":"2.0","id":"s","method":"platform.getBlockchainStatus","params":{"blockchainID":{}}}`,
		`{"jsonrpc":"2.0","id":[1,2],"method":"platform.noSuchMethod"}`,
		`{"jsonrpc":"2.0","method":"platform.noSuchMethod"}`,
		`{"jsonrpc":"2.0","id":null,"method":"platform.noSuchMethod"}`,
		`null`,
	} {
		code, _, got := post(t, e.url+"/ext/bc/P", "application/json", []byte(body))
		wcode, _, want := post(t, e.te.NodeURL+"/ext/bc/P", "application/json", []byte(body))
		if code != wcode || !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %d %q\nwant %d %q", body, code, got, wcode, want)
		}
		if code >= 500 {
			t.Errorf("%s: HTTP %d", body, code)
		}
	}
}

// TestUnlistedMethods: every other method of the recorded node answers the
// node's own "can't find method" error (rule 4), and with ProxyUnknown is
// answered by the upstream node, byte for byte as recorded.
func TestUnlistedMethods(t *testing.T) {
	plain := setup(t, "sqlite", setupOpts{})
	proxied := setup(t, "sqlite", setupOpts{upstream: true, proxy: true})
	n := 0
	for _, x := range pCalls(t) {
		if comparedCall(x.Method) {
			continue
		}
		_, body := plain.call(t, x.RecordedID(), x.Method, x.Params)
		fn := strings.TrimPrefix(x.Method, "platform.")
		want := fmt.Sprintf(`{"jsonrpc":"2.0","error":{"code":-32000,"message":"rpc: can't find method \"platform.%s%s\"","data":null},"id":%s}`,
			strings.ToUpper(fn[:1]), fn[1:], x.RecordedID())
		if got := string(compact(t, body)); got != want {
			t.Errorf("%s: got %s, want %s", x.Method, got, want)
		}
		_, body = proxied.call(t, x.RecordedID(), x.Method, x.Params)
		if got := compact(t, body); !bytes.Equal(got, compact(t, x.Response)) {
			t.Errorf("proxied %s %s: got %s, want %s", x.Method, x.Params, trunc(got), trunc(x.Response))
		}
		n++
	}
	if n < 100 {
		t.Errorf("only %d unlisted calls checked", n)
	}
	// The served methods are still answered from the index with proxying on.
	_, body := proxied.call(t, json.RawMessage(`3`), "platform.getCurrentSupply", json.RawMessage(`{}`))
	if !strings.Contains(string(body), `"supply":"210582228871568098"`) {
		t.Errorf("getCurrentSupply with proxying: %s", body)
	}
}

// TestEnvelope covers what the handler adds around gorilla and the
// request/response shapes the node would give.
func TestEnvelope(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) { testEnvelope(t, backend) })
	}
}

func testEnvelope(t *testing.T, backend string) {
	e := setup(t, backend, setupOpts{maxBatch: 5, maxBody: 64 << 10})
	url := e.url + "/ext/bc/P"
	single := func(id, method, params string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params)
	}
	answer := func(body string) string {
		t.Helper()
		code, hdr, b := post(t, url, "application/json", []byte(body))
		if code != http.StatusOK {
			t.Fatalf("%s: HTTP %d %s", body, code, b)
		}
		if len(b) > 0 && !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
			t.Errorf("%s: Content-Type %q", body, hdr.Get("Content-Type"))
		}
		return string(b)
	}
	supply := single("1", "platform.getCurrentSupply", "{}")
	chains := single(`"two"`, "platform.getBlockchains", "{}")
	unknown := single("3", "platform.getHeight", "{}")

	t.Run("ids echoed with their type", func(t *testing.T) {
		for _, id := range []string{`7`, `0`, `-1`, `1.5`, `1e3`, `12345678901234567890`, `"abc"`, `""`, `{"a":1}`, `[1]`, `true`} {
			got := answer(single(id, "platform.getCurrentSupply", "{}"))
			if !strings.HasSuffix(strings.TrimSpace(got), `,"id":`+id+`}`) {
				t.Errorf("id %s: %s", id, got)
			}
		}
	})
	t.Run("notifications get no answer", func(t *testing.T) {
		for _, body := range []string{
			`{"jsonrpc":"2.0","method":"platform.getCurrentSupply","params":{}}`,
			`{"jsonrpc":"2.0","id":null,"method":"platform.getCurrentSupply","params":{}}`,
			`{"jsonrpc":"2.0","method":"platform.getBlockByHeight","params":{"height":"abc"}}`,
			`{"jsonrpc":"2.0","method":"platform.noSuchMethod"}`,
			`[{"jsonrpc":"2.0","method":"platform.getCurrentSupply"},{"jsonrpc":"2.0","id":null,"method":"platform.getBlockchains"}]`,
		} {
			if got := answer(body); got != "" {
				t.Errorf("%s: answered %s", body, got)
			}
		}
	})
	t.Run("batch", func(t *testing.T) {
		got := answer("[" + supply + "," + chains + "," + unknown + "]")
		want := "[" + strings.TrimSpace(answer(supply)) + "," + strings.TrimSpace(answer(chains)) + "," +
			strings.TrimSpace(answer(unknown)) + "]\n"
		if got != want {
			t.Errorf("batch:\n got %s\nwant %s", got, want)
		}
		var arr []map[string]json.RawMessage
		if err := json.Unmarshal([]byte(got), &arr); err != nil || len(arr) != 3 {
			t.Fatalf("batch answer %s: %v", got, err)
		}
		if string(arr[1]["id"]) != `"two"` || arr[2]["error"] == nil {
			t.Errorf("batch answer %s", got)
		}
	})
	t.Run("batch of one answers like the call", func(t *testing.T) {
		if got, want := answer("["+supply+"]"), "["+strings.TrimSpace(answer(supply))+"]\n"; got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	})
	t.Run("batch with notifications and bad elements", func(t *testing.T) {
		got := answer(`[` + supply + `,{"jsonrpc":"2.0","method":"platform.getBlockchains"},1,{"jsonrpc":"1.0","id":9,"method":"platform.getBlockchains"}]`)
		var arr []struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(got), &arr); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if len(arr) != 3 || string(arr[0].ID) != "1" || arr[0].Error != nil ||
			arr[1].Error == nil || arr[1].Error.Code != -32700 || string(arr[1].ID) != "null" ||
			arr[2].Error == nil || arr[2].Error.Code != -32600 || string(arr[2].ID) != "9" {
			t.Errorf("answer %s", got)
		}
	})
	t.Run("batch limits", func(t *testing.T) {
		for body, code := range map[string]int{
			`[]`:    -32600,
			` [ ] `: -32600,
			`[1,`:   -32700,
			`[` + strings.Repeat(supply+",", 5) + supply + `]`: -32600,
		} {
			var r struct {
				Error struct {
					Code int `json:"code"`
				} `json:"error"`
				ID json.RawMessage `json:"id"`
			}
			got := answer(body)
			if err := json.Unmarshal([]byte(got), &r); err != nil || r.Error.Code != code || string(r.ID) != "null" {
				t.Errorf("%.40s: %s", body, got)
			}
		}
	})
	t.Run("huge body", func(t *testing.T) {
		for _, body := range []string{
			single("1", "platform.getBalance", `{"addresses":["`+strings.Repeat("x", 70<<10)+`"]}`),
			"[" + strings.Repeat(" ", 70<<10) + "]",
		} {
			code, _, b := post(t, url, "application/json", []byte(body))
			var r struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if code != http.StatusRequestEntityTooLarge || json.Unmarshal(b, &r) != nil || r.Error.Code != -32600 ||
				!strings.Contains(r.Error.Message, "too large") {
				t.Errorf("huge body: HTTP %d %s", code, b)
			}
		}
	})
	t.Run("too many addresses", func(t *testing.T) {
		addrs := strings.TrimSuffix(strings.Repeat(`"P-custom1s38hv6retq3p0tfqthhglkgc84gjzxv6zf7fzv",`, maxBalanceAddrs+1), ",")
		got := answer(single("1", "platform.getBalance", `{"addresses":[`+addrs+`]}`))
		if !strings.Contains(got, `"code":-32000`) || !strings.Contains(got, "exceeds maximum") {
			t.Errorf("got %s", got)
		}
	})
	t.Run("missing blockchainID", func(t *testing.T) {
		got := answer(single("1", "platform.getBlockchainStatus", `{}`))
		if !strings.Contains(got, `"message":"argument 'blockchainID' not given"`) {
			t.Errorf("got %s", got)
		}
	})
	t.Run("HTTP method and content type", func(t *testing.T) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("GET: %d", resp.StatusCode)
		}
		code, _, b := post(t, url, "", []byte(supply))
		if code != http.StatusUnsupportedMediaType || string(b) != "rpc: unrecognized Content-Type: " {
			t.Errorf("no content type: %d %q", code, b)
		}
		code, _, b = post(t, url, "text/plain", []byte("["+supply+"]"))
		if code != http.StatusUnsupportedMediaType {
			t.Errorf("batch as text/plain: %d %q", code, b)
		}
		for _, ct := range []string{"application/json; charset=utf-8", "application/json;charset=UTF-8", "Application/JSON"} {
			if code, _, b := post(t, url, ct, []byte(supply)); code != http.StatusOK || !bytes.Contains(b, []byte(`"supply"`)) {
				t.Errorf("%s: %d %s", ct, code, b)
			}
		}
	})
	t.Run("every path", func(t *testing.T) {
		for _, p := range Paths() {
			code, _, b := post(t, e.url+p, "application/json", []byte(supply))
			if code != http.StatusOK || !bytes.Contains(b, []byte(`"height":"41"`)) {
				t.Errorf("%s: %d %s", p, code, b)
			}
		}
		if !strings.HasSuffix(Paths()[4], constants.PlatformChainID.String()) {
			t.Errorf("paths %v", Paths())
		}
	})
}

// TestUpstreamDown: with an unreachable upstream node the node-local fields
// are omitted, the rest is answered, and a down node costs one timeout, not
// one per request.
func TestUpstreamDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Accept and never answer: the worst case for the timeout.
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	te := setup(t, "sqlite", setupOpts{}).te
	h, svc, err := newHandler(Deps{DB: te.DB, Genesis: te.Chains.Genesis, Upstream: "http://" + l.Addr().String(),
		UpstreamTimeout: 300 * time.Millisecond, Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	_ = svc
	mux := http.NewServeMux()
	Mount(routerFunc(mux.Handle), h)
	srv := newLoopbackServer(t, mux)
	for i := 0; i < 3; i++ {
		start := time.Now()
		code, _, b := post(t, srv+"/ext/bc/P", "application/json",
			[]byte(`{"jsonrpc":"2.0","id":1,"method":"platform.getCurrentValidators","params":{}}`))
		took := time.Since(start)
		if code != 200 || !bytes.Contains(b, []byte(`"potentialReward":"291370353674637"`)) ||
			bytes.Contains(b, []byte(`"uptime"`)) || bytes.Contains(b, []byte(`"connected"`)) {
			t.Errorf("call %d: %d %s", i, code, b)
		}
		if took > 2*time.Second || (i > 0 && took > 250*time.Millisecond) {
			t.Errorf("call %d took %s", i, took)
		}
		code, _, b = post(t, srv+"/ext/bc/P", "application/json",
			[]byte(`{"jsonrpc":"2.0","id":1,"method":"platform.getBlockchainStatus","params":{"blockchainID":"X"}}`))
		if code != 200 || !bytes.Contains(b, []byte(`"status":"Syncing"`)) {
			t.Errorf("status without node identity: %s", b)
		}
	}
}

func newLoopbackServer(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l) //nolint:errcheck // closed by Cleanup
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

// TestConcurrent: parallel callers (sharing caches and the upstream view)
// get the answers a lone caller gets.
func TestConcurrent(t *testing.T) {
	e := setup(t, "sqlite", setupOpts{upstream: true})
	calls := []string{
		`{"jsonrpc":"2.0","id":1,"method":"platform.getCurrentValidators","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"platform.getCurrentValidators","params":{"subnetID":"2XYadBUQHDYHP687R1YnJhm2Ph77zKK8CtaMXF7jfr5uJ1Ewur"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"platform.getBalance","params":{"addresses":["P-custom1js9jhzvc6j53vp53h8cutnrv4lt4292t58me5h"]}}`,
		`{"jsonrpc":"2.0","id":4,"method":"platform.getBlockchainStatus","params":{"blockchainID":"X"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"platform.getBlockByHeight","params":{"height":24,"encoding":"json"}}`,
		`[{"jsonrpc":"2.0","id":6,"method":"platform.getBlockchains"},{"jsonrpc":"2.0","id":7,"method":"platform.getCurrentSupply"}]`,
	}
	want := make([][]byte, len(calls))
	for i, c := range calls {
		_, _, want[i] = post(t, e.url+"/ext/bc/P", "application/json", []byte(c))
	}
	errs := make(chan error, 64)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := 0; k < 12; k++ {
				i := (g + k) % len(calls)
				resp, err := http.Post(e.url+"/ext/bc/P", "application/json", strings.NewReader(calls[i]))
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || !bytes.Equal(b, want[i]) {
					errs <- fmt.Errorf("call %d: %s (%v), want %s", i, b, err, want[i])
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestEmptyIndex: before the first P block is indexed every method answers a
// clean JSON-RPC error.
func TestEmptyIndex(t *testing.T) {
	te := setup(t, "sqlite", setupOpts{}).te
	db := storetest.Open(t, storetest.SQLiteDSN(t))
	h, err := New(Deps{DB: db, Genesis: te.Chains.Genesis})
	if err != nil {
		t.Fatal(err)
	}
	url := newLoopbackServer(t, h)
	for method, msg := range map[string]string{
		`platform.getCurrentSupply","params":{}`:                                                       `the index holds no P-chain block yet`,
		`platform.getCurrentValidators","params":{}`:                                                   `the index holds no P-chain block yet`,
		`platform.getBlockchains","params":{}`:                                                         `the index holds no P-chain block yet`,
		`platform.getBlockchainStatus","params":{"blockchainID":"X"}`:                                  `the index holds no P-chain block yet`,
		`platform.getBalance","params":{"addresses":[]}`:                                               `the index holds no P-chain block yet`,
		`platform.getBlockByHeight","params":{"height":0}`:                                             `couldn't get block at height 0: not found`,
		`platform.getBlock","params":{"blockID":"2mijBKYiysMbDU7BWtRDteTAY5YMnVHYqiD7ZHF6RRqnAajawb"}`: `couldn't get block with id 2mijBKYiysMbDU7BWtRDteTAY5YMnVHYqiD7ZHF6RRqnAajawb: not found`,
	} {
		code, _, b := post(t, url, "application/json", []byte(`{"jsonrpc":"2.0","id":1,"method":"`+method+`}`))
		want := `{"jsonrpc":"2.0","error":{"code":-32000,"message":"` + msg + `","data":null},"id":1}`
		if code != 200 || strings.TrimSpace(string(b)) != want {
			t.Errorf("%s: %d %s", method, code, b)
		}
	}
}

func TestNewValidates(t *testing.T) {
	te := setup(t, "sqlite", setupOpts{}).te
	g := te.Chains.Genesis
	for name, d := range map[string]Deps{
		"no DB":              {Genesis: g},
		"no genesis":         {DB: te.DB},
		"other network":      {DB: te.DB, Genesis: g, NetworkID: 1},
		"bad upstream":       {DB: te.DB, Genesis: g, Upstream: "ftp://x"},
		"upstream w/o host":  {DB: te.DB, Genesis: g, Upstream: "http://"},
		"upstream query":     {DB: te.DB, Genesis: g, Upstream: "http://127.0.0.1:9650/?a=b"},
		"proxy w/o upstream": {DB: te.DB, Genesis: g, ProxyUnknown: true},
	} {
		if _, err := New(d); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(Deps{DB: te.DB, Genesis: g, NetworkID: g.NetworkID, Upstream: "http://127.0.0.1:9650/"}); err != nil {
		t.Error(err)
	}
}
