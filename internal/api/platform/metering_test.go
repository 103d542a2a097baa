package platform

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/keys"
)

// meteredEnv serves the platform API on an api.Mux behind a guard, as
// `serve` does, with small budgets.
func meteredEnv(t *testing.T, backend string, limits api.LimitsConfig) (url string, e *env) {
	t.Helper()
	e = setup(t, backend, setupOpts{})
	mux := api.NewMux(quietLog())
	api.NewGuard(e.te.DB, limits, quietLog()).Install(mux)
	Mount(mux, e.h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL, e
}

// TestMeteredPerCall is issue #19's finding: POST /ext/bc/P was not metered.
// Each call, and each call of a batch, is charged CallWeight to the caller's
// key or IP, with the data service's headers; over budget the answer is a
// 429 JSON-RPC error. Allowed answers are those of the unmetered handler.
func TestMeteredPerCall(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			limits := api.LimitsConfig{AnonymousCU: 5 * int64(CallWeight), Tiers: map[string]int64{"team": 3 * int64(CallWeight)}, KeyCacheTTL: -1}
			url, e := meteredEnv(t, backend, limits)
			call := []byte(`{"jsonrpc":"2.0","id":1,"method":"platform.getCurrentSupply","params":{}}`)
			_, _, want := post(t, e.url+"/ext/bc/P", "application/json", call)
			batch := func(n int) []byte {
				parts := make([]string, n)
				for i := range parts {
					parts[i] = string(call)
				}
				return []byte("[" + strings.Join(parts, ",") + "]")
			}
			tooMany := func(cost, remain, limit int) string {
				return fmt.Sprintf(`{"jsonrpc":"2.0","error":{"code":-32000,"message":"rate limit exceeded: this request costs %d compute units, %d of %d per minute remain; retry in `, cost, remain, limit)
			}
			steps := []struct {
				name, key string
				body      []byte
				status    int
				remaining string
				prefix    string // of the body; "" : the unmetered answer
			}{
				{"one call", "", call, 200, "40", ""},
				{"batch of 3 costs 3 calls", "", batch(3), 200, "10", "["},
				{"batch of 2 over budget", "", batch(2), 429, "10", tooMany(20, 10, 50)},
				{"last call", "", call, 200, "0", ""},
				{"over budget", "", call, 429, "0", tooMany(10, 0, 50)},
				{"unknown key spends the IP budget", "pfk_0000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", call, 429, "0", tooMany(10, 0, 50)},
			}
			for _, s := range steps {
				code, hdr, body := postKey(t, url+"/ext/bc/P", s.key, s.body)
				if code != s.status || hdr.Get("Ratelimit-Remaining") != s.remaining || hdr.Get("Ratelimit-Limit") == "" {
					t.Errorf("%s: %d remaining %q limit %q: %s", s.name, code, hdr.Get("Ratelimit-Remaining"), hdr.Get("Ratelimit-Limit"), body)
				}
				switch {
				case s.prefix == "" && !bytes.Equal(body, want):
					t.Errorf("%s: %s, want the unmetered %s", s.name, body, want)
				case s.prefix != "" && !bytes.HasPrefix(body, []byte(s.prefix)):
					t.Errorf("%s: %s, want %s...", s.name, body, s.prefix)
				}
				if s.status == 429 && (hdr.Get("Retry-After") == "" || hdr.Get("Content-Type") != "application/json; charset=utf-8") {
					t.Errorf("%s: headers %v", s.name, hdr)
				}
			}
			// A key has its tier's budget, apart from the IP's.
			k, err := keys.Create(t.Context(), e.te.DB, "rpc", "team", nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			if code, hdr, body := postKey(t, url+"/ext/bc/P", k, batch(3)); code != 200 || hdr.Get("Ratelimit-Remaining") != "0" || hdr.Get("Ratelimit-Limit") != "30" {
				t.Errorf("key batch: %d %v %s", code, hdr, body)
			}
			if code, _, body := postKey(t, url+"/ext/P", k, call); code != 429 || !bytes.HasPrefix(body, []byte(tooMany(10, 0, 30))) {
				t.Errorf("key over budget on an alias path: %d %s", code, body)
			}
		})
	}
}

// TestPreRoutingErrorsJSONRPC: errors found before the handler runs answer
// JSON-RPC error objects on /ext/bc/P and ErrorBody elsewhere, while the
// node's own answers (405, 415) stay the node's (issue #19).
func TestPreRoutingErrorsJSONRPC(t *testing.T) {
	limits := api.LimitsConfig{MaxURLBytes: 64, MaxHeaderValueBytes: 64, KeyCacheTTL: -1}
	url, _ := meteredEnv(t, "sqlite", limits)
	long := "/ext/bc/P?" + strings.Repeat("a", 80)
	code, hdr, body := postKey(t, url+long, "", []byte(`{}`))
	if code != 400 || hdr.Get("Content-Type") != "application/json; charset=utf-8" ||
		string(body) != `{"jsonrpc":"2.0","error":{"code":-32000,"message":"the URL is 90 bytes long; at most 64 are accepted"},"id":null}`+"\n" {
		t.Errorf("long URL on /ext/bc/P: %d %s", code, body)
	}
	code, _, body = postKey(t, url+"/v1/chains?"+strings.Repeat("a", 80), "", nil)
	if code != 400 || !strings.HasPrefix(string(body), `{"error":"Bad Request","message":"the URL is`) {
		t.Errorf("long URL on /v1: %d %s", code, body)
	}
	// GET * (net/http's mux: an empty 400).
	for _, c := range []struct{ raw, want string }{
		{"GET * HTTP/1.1\r\nHost: x\r\n\r\n", `{"error":"Bad Request","message":"GET * is not a request this server answers","statusCode":400}`},
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(conn, c.raw)
		resp, err := http.ReadResponse(bufioReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		conn.Close()
		if resp.StatusCode != 400 || strings.TrimSpace(string(b)) != c.want || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("%q: %d %s", c.raw, resp.StatusCode, b)
		}
	}
	// The node's own answers are kept: 415 without a JSON content type, 405 for GET.
	_, _, want415 := post(t, url+"/ext/bc/P", "text/plain", []byte(`{}`))
	code, _, _ = post(t, url+"/ext/bc/P", "text/plain", []byte(`{}`))
	if code != http.StatusUnsupportedMediaType || json.Valid(want415) {
		t.Errorf("wrong content type: %d %s (the node answers 415 with gorilla's plain text)", code, want415)
	}
}

func postKey(t *testing.T, url, key string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("X-Data-Api-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }
