package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	// The package name is taken by devnet below.
	fixture "github.com/permafrost-dev/permafrost/internal/devnet"
)

var (
	loadOnce sync.Once
	loaded   *Recording
	loadErr  error
)

func devnet(t testing.TB) *Recording {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = Load(fixture.Dir(t)) })
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loaded
}

// serve starts h on 127.0.0.1.
func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

func post(t testing.TB, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func request(id, method string, params json.RawMessage) string {
	m, _ := json.Marshal(method)
	s := `{"jsonrpc":"2.0","id":` + id + `,"method":` + string(m)
	if params != nil {
		s += `,"params":` + string(params)
	}
	return s + "}"
}

func find(t testing.TB, rec *Recording, endpoint, method, paramsSubstr string) *Exchange {
	t.Helper()
	for i := range rec.Exchanges {
		e := &rec.Exchanges[i]
		if e.Endpoint == endpoint && e.Method == method && strings.Contains(string(e.Params), paramsSubstr) {
			return e
		}
	}
	t.Fatalf("no recorded %s %s %s", endpoint, method, paramsSubstr)
	return nil
}

func TestLoad(t *testing.T) {
	rec := devnet(t)
	counts := map[string]int{}
	for _, e := range rec.Exchanges {
		counts[e.Endpoint]++
	}
	want := map[string]int{"/ext/info": 31, "/ext/bc/P": 354, "/ext/bc/X": 172, "/ext/bc/C/rpc": 366, "/ext/bc/C/avax": 23}
	for ep, n := range want {
		if counts[ep] != n {
			t.Errorf("%s: %d exchanges, want %d", ep, counts[ep], n)
		}
	}
	if rec.Network.NetworkID != 88888 || rec.Network.RecordingNode != "NodeID-G7oukoeZdnw9yNpwJBgso24HiJntdGXZP" ||
		rec.Network.BlockchainIDs["X"] != "NhDDVSn1E1se1v39FfQVwpd74ivs3gPmvhaUX6x78uide8Z3m" {
		t.Errorf("network = %+v", rec.Network)
	}
	for _, e := range rec.Exchanges {
		if !bytes.Equal(e.ResponseWithID(e.RecordedID()), e.Response) {
			t.Fatalf("%s:%d: id splice does not reproduce the line", e.File, e.Line)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	good := `{"method":"info.getNetworkID","params":{},"response":{"jsonrpc":"2.0","result":{"networkID":"1"},"id":1},"node":"n","httpStatus":200}`
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no rpc dir", nil, "read recording"},
		{"empty rpc dir", map[string]string{}, "no recording files"},
		{"unknown file", map[string]string{"ext_bc_Q.jsonl": good}, "unknown endpoint file"},
		{"not json", map[string]string{"ext_info.jsonl": good + "\n{nope"}, "ext_info.jsonl:2"},
		{"no method", map[string]string{"ext_info.jsonl": `{"params":{},"response":{"id":1}}`}, "missing method"},
		{"response not object", map[string]string{"ext_info.jsonl": `{"method":"a.b","response":[1]}`}, "not a JSON object"},
		{"response without id", map[string]string{"ext_info.jsonl": `{"method":"a.b","response":{"result":1}}`}, `no "id"`},
		{"duplicate id", map[string]string{"ext_info.jsonl": `{"method":"a.b","response":{"id":1,"id":2}}`}, `duplicate "id"`},
		{"bad status", map[string]string{"ext_info.jsonl": `{"method":"a.b","response":{"id":1},"httpStatus":7}`}, "bad httpStatus"},
		{"bad network.json", map[string]string{"../network.json": `{"blockchainIDs":{"Q":"x"}}`, "ext_info.jsonl": good}, "unknown alias"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.files != nil {
				if err := os.Mkdir(filepath.Join(dir, "rpc"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, "rpc", name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load error = %v, want containing %q", err, tt.want)
			}
		})
	}
}

// TestRoundTripEveryLine sends every recorded call, with its recorded id, to
// a handler serving the answering node's view, and expects the recorded body
// byte for byte (plus the newline the node's JSON encoder ends a body with).
func TestRoundTripEveryLine(t *testing.T) {
	rec := devnet(t)
	urls := map[string]string{}
	for _, e := range rec.Exchanges {
		if _, ok := urls[e.Node]; !ok {
			urls[e.Node] = serve(t, NewHandlerWithOptions(rec, Options{Node: e.Node}))
		}
	}
	if len(urls) != 3 {
		t.Fatalf("%d answering nodes, want 3", len(urls))
	}
	for _, e := range rec.Exchanges {
		status, body := post(t, urls[e.Node]+e.Endpoint, request(string(e.RecordedID()), e.Method, e.Params))
		want := append(append([]byte{}, e.Response...), '\n')
		if status != e.HTTPStatus || !bytes.Equal(body, want) {
			t.Errorf("%s:%d %s: status %d body\n%.300s\nwant %d\n%.300s", e.File, e.Line, e.Method, status, body, e.HTTPStatus, want)
		}
	}
}

// TestDerivedAnswersMatchNode removes the recorded answers the handler can
// derive from the request alone and checks the derived answer equals what the
// real node answered.
func TestDerivedAnswersMatchNode(t *testing.T) {
	src := fixture.Dir(t)
	derivable := func(line string) bool {
		return strings.Contains(line, `NoSuchMethod`) || strings.Contains(line, `"eth_noSuchMethod"`) ||
			strings.Contains(line, `"height":"abc"`) ||
			strings.Contains(line, `"blockID":"not-an-id"`)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "rpc"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(src, "network.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "network.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var removed []string
	files, err := os.ReadDir(filepath.Join(src, "rpc"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := f.Name()
		b, err := os.ReadFile(filepath.Join(src, "rpc", name))
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if derivable(line) {
				removed = append(removed, name+"\t"+line)
			} else {
				kept = append(kept, line)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "rpc", name), []byte(strings.Join(kept, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(removed) != 7 { // 5 unknown methods, "abc" height, malformed block ID
		t.Fatalf("removed %d lines, want 7", len(removed))
	}
	rec, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, NewHandler(rec))
	for _, r := range removed {
		name, line, _ := strings.Cut(r, "\t")
		e, _, err := parseLine([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		status, body := post(t, url+endpointFiles[name], request(string(e.RecordedID()), e.Method, e.Params))
		if status != 200 || string(body) != string(e.Response)+"\n" {
			t.Errorf("%s %s: got %d %s\nwant %s", name, e.Method, status, body, e.Response)
		}
	}
}

func TestIDEcho(t *testing.T) {
	rec := devnet(t)
	url := serve(t, NewHandler(rec))
	p := find(t, rec, "/ext/bc/P", "platform.getHeight", "")
	c := find(t, rec, "/ext/bc/C/rpc", "eth_chainId", "")
	tests := []struct {
		name     string
		endpoint string
		e        *Exchange
		id       string // as sent
		wantID   string // as echoed; "" = no body
	}{
		{"avalanche number", "/ext/bc/P", p, `7`, `7`},
		{"avalanche big number", "/ext/bc/P", p, `123456789012345678901234567890`, `123456789012345678901234567890`},
		{"avalanche float", "/ext/bc/P", p, `-1.5e3`, `-1.5e3`},
		{"avalanche string", "/ext/bc/P", p, `"a\"b"`, `"a\"b"`},
		{"avalanche html string", "/ext/bc/P", p, `"<x>"`, `"\u003cx\u003e"`},
		{"avalanche object", "/ext/bc/P", p, `{ "a" : [1, 2] }`, `{"a":[1,2]}`},
		{"avalanche bool", "/ext/bc/P", p, `true`, `true`},
		{"avalanche null is a notification", "/ext/bc/P", p, `null`, ``},
		{"evm number", "/ext/bc/C/rpc", c, `42`, `42`},
		{"evm string", "/ext/bc/C/rpc", c, `"req-1"`, `"req-1"`},
		{"evm null", "/ext/bc/C/rpc", c, `null`, `null`},
		{"evm float", "/ext/bc/C/rpc", c, `0.5`, `0.5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(t, url+tt.endpoint, request(tt.id, tt.e.Method, tt.e.Params))
			if status != 200 {
				t.Fatalf("status %d", status)
			}
			if tt.wantID == "" {
				if len(body) != 0 {
					t.Fatalf("body %s, want none", body)
				}
				return
			}
			want := string(tt.e.ResponseWithID(json.RawMessage(tt.wantID))) + "\n"
			if string(body) != want {
				t.Fatalf("got  %s\nwant %s", body, want)
			}
		})
	}
	// Without an id the EVM server treats the call as a notification.
	if _, body := post(t, url+"/ext/bc/C/rpc", `{"jsonrpc":"2.0","method":"eth_chainId","params":[]}`); len(body) != 0 {
		t.Errorf("EVM notification answered: %s", body)
	}
	// An object id is not a valid id for the EVM server.
	if _, body := post(t, url+"/ext/bc/C/rpc", `{"jsonrpc":"2.0","id":{"a":1},"method":"eth_chainId","params":[]}`); string(body) != `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request"}}`+"\n" {
		t.Errorf("EVM object id: %s", body)
	}
}

// TestEquivalentParams sends calls that differ from a recorded one only in
// ways the node ignores, and expects the recorded answer.
func TestEquivalentParams(t *testing.T) {
	rec := devnet(t)
	url := serve(t, NewHandler(rec))
	tests := []struct {
		name     string
		endpoint string
		method   string
		recorded string // substring of the recorded params
		params   string // sent
	}{
		{"height as decimal string", "/ext/bc/P", "platform.getBlockByHeight", `{"encoding":"hex","height":5}`, `{"height":"5","encoding":"hex"}`},
		{"array-wrapped object", "/ext/bc/P", "platform.getBlockByHeight", `{"encoding":"json","height":7}`, `[{"height":7,"encoding":"json"}]`},
		{"key case and unknown field", "/ext/bc/P", "platform.getBlockByHeight", `{"encoding":"hex","height":9}`, `{"Height":9,"ENCODING":"hex","extra":true}`},
		{"default encoding", "/ext/bc/X", "avm.getBlockByHeight", `{"encoding":"hex","height":3}`, `{"height":"3"}`},
		{"no params", "/ext/bc/P", "platform.getHeight", `{}`, ``},
		{"null params", "/ext/bc/P", "platform.getHeight", `{}`, `null`},
		{"null member (info client)", "/ext/info", "info.peers", `{}`, `{"nodeIDs":null}`},
		{"avax decimal string", "/ext/bc/C/avax", "avax.getUTXOs", `"limit":1024,"sourceChain":"P"`,
			`[{"sourceChain":"P","limit":"1024","encoding":"hex","addresses":["C-custom1w98xaclyc635teqmegl22hn756zrlu26x2u7mz"]}]`},
		{"evm leading zero", "/ext/bc/C/rpc", "eth_getBlockByNumber", `["0x5",true]`, `["0x05",true]`},
		{"evm hex case", "/ext/bc/C/rpc", "eth_getBlockByNumber", `["0x1a",true]`, `["0x1A",true]`},
		{"evm block object", "/ext/bc/C/rpc", "eth_getBlockReceipts", `["0x7"]`, `[{"blockNumber":"0x7"}]`},
		{"evm address case", "/ext/bc/C/rpc", "eth_getBalance", `["0x03623AdD7ec6F6426D6266ED2E5a4734C786E73E","0x12"]`, `["0x03623add7ec6f6426d6266ed2e5a4734c786e73e","0x012"]`},
		{"evm call object keys", "/ext/bc/C/rpc", "eth_call", `[{"data":"0x06fdde03","to":"0x0e728C6A2Fc95A228d766532b430E905eb07b726"},"0x25"]`, `[{"To":"0x0e728c6a2fc95a228d766532b430e905eb07b726","data":"0x06FDDE03","value":null},"0x25"]`},
		{"evm no params", "/ext/bc/C/rpc", "eth_blockNumber", `[]`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := find(t, rec, tt.endpoint, tt.method, tt.recorded)
			var params json.RawMessage
			if tt.params != "" {
				params = json.RawMessage(tt.params)
			}
			_, body := post(t, url+tt.endpoint, request(`99`, tt.method, params))
			want := string(e.ResponseWithID(json.RawMessage(`99`))) + "\n"
			if string(body) != want {
				t.Fatalf("got  %.300s\nwant %.300s", body, want)
			}
		})
	}
}

func TestBatch(t *testing.T) {
	rec := devnet(t)
	url := serve(t, NewHandler(rec)) + "/ext/bc/C/rpc"
	b0 := find(t, rec, "/ext/bc/C/rpc", "eth_getBlockByNumber", `["0x0",true]`)
	r0 := find(t, rec, "/ext/bc/C/rpc", "eth_getBlockReceipts", `["0x0"]`)
	b1 := find(t, rec, "/ext/bc/C/rpc", "eth_getBlockByNumber", `["0x1",true]`)
	tests := []struct {
		name string
		body string
		want string
	}{
		{
			name: "calls, notification, unknown, invalid",
			body: `[{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x0",true]},
				{"jsonrpc":"2.0","method":"eth_chainId","params":[]},
				{"jsonrpc":"2.0","id":"two","method":"eth_getBlockReceipts","params":["0x0"]},
				{"jsonrpc":"2.0","id":3,"method":"eth_nope","params":[]},
				5,
				{"jsonrpc":"2.0","id":4,"method":"eth_getBlockByNumber","params":["0x01",true]}]`,
			want: "[" + string(b0.ResponseWithID(json.RawMessage(`1`))) + "," +
				string(r0.ResponseWithID(json.RawMessage(`"two"`))) + "," +
				`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"the method eth_nope does not exist/is not available"}},` +
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request"}},` +
				string(b1.ResponseWithID(json.RawMessage(`4`))) + "]\n",
		},
		{"empty batch", `[]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"empty batch"}}` + "\n"},
		{"only notifications", `[{"jsonrpc":"2.0","method":"eth_chainId"}]`, ""},
		{"too large", "[" + strings.Repeat(`{"jsonrpc":"2.0","id":8,"method":"eth_chainId"},`, maxBatch) + `{"jsonrpc":"2.0","id":9,"method":"eth_chainId"}]`,
			`[{"jsonrpc":"2.0","id":8,"error":{"code":-32600,"message":"batch too large"}}]` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(t, url, tt.body)
			if status != 200 || string(body) != tt.want {
				t.Fatalf("status %d\ngot  %.400s\nwant %.400s", status, body, tt.want)
			}
		})
	}
	// The avalanche APIs have no batches: gorilla answers a parse error.
	_, body := post(t, strings.TrimSuffix(url, "/ext/bc/C/rpc")+"/ext/bc/P", `[{"jsonrpc":"2.0","id":1,"method":"platform.getHeight","params":{}}]`)
	var resp struct {
		Error struct{ Code int } `json:"error"`
	}
	if err := json.Unmarshal(body, &resp); err != nil || resp.Error.Code != -32700 {
		t.Fatalf("avalanche batch: %s", body)
	}
}

func TestUnrecordedCalls(t *testing.T) {
	rec := devnet(t)
	url := serve(t, NewHandler(rec))
	invalidArg := `couldn't unmarshal an argument. Ensure arguments are valid and properly formatted. See documentation for example calls`
	avaErr := func(id, msg string) string {
		m, _ := json.Marshal(msg)
		return `{"jsonrpc":"2.0","error":{"code":-32000,"message":` + string(m) + `,"data":null},"id":` + id + "}\n"
	}
	tests := []struct {
		name, endpoint, body, want string
	}{
		{"P unknown method", "/ext/bc/P", `{"jsonrpc":"2.0","id":1,"method":"platform.fooBar","params":{}}`, avaErr("1", `rpc: can't find method "platform.FooBar"`)},
		{"P wrong service", "/ext/bc/P", `{"jsonrpc":"2.0","id":1,"method":"avm.getHeight","params":{}}`, avaErr("1", `rpc: can't find service "avm.GetHeight"`)},
		{"P capitalised", "/ext/bc/P", `{"jsonrpc":"2.0","id":1,"method":"platform.GetHeight","params":{}}`, avaErr("1", "method must start with a non-uppercase letter")},
		{"P no service", "/ext/bc/P", `{"jsonrpc":"2.0","id":1,"method":"getHeight","params":{}}`, avaErr("1", `rpc: service/method request ill-formed: "getHeight"`)},
		{"P bad args", "/ext/bc/P", `{"jsonrpc":"2.0","id":1,"method":"platform.getBlockByHeight","params":{"height":[1]}}`, avaErr("1", invalidArg)},
		{"P unrecorded", "/ext/bc/P", `{"jsonrpc":"2.0","id":1,"method":"platform.getBlockByHeight","params":{"height":3000, "encoding":"hex"}}`,
			avaErr("1", `replay: no recorded answer for platform.getBlockByHeight {"height":3000,"encoding":"hex"}`)},
		{"P bad version", "/ext/bc/P", `{"jsonrpc":"1.0","id":1,"method":"platform.getHeight","params":{}}`,
			`{"jsonrpc":"2.0","error":{"code":-32600,"message":"jsonrpc must be 2.0","data":{"jsonrpc":"1.0","method":"platform.getHeight","params":{},"id":1}},"id":1}` + "\n"},
		{"X unknown", "/ext/bc/X", `{"jsonrpc":"2.0","id":"q","method":"avm.issueStuff"}`, avaErr(`"q"`, `rpc: can't find method "avm.IssueStuff"`)},
		{"info unknown", "/ext/info", `{"jsonrpc":"2.0","id":2,"method":"info.x","params":{}}`, avaErr("2", `rpc: can't find method "info.X"`)},
		{"avax unknown", "/ext/bc/C/avax", `{"jsonrpc":"2.0","id":2,"method":"avax.x","params":{}}`, avaErr("2", `rpc: can't find method "avax.X"`)},
		{"avax unrecorded", "/ext/bc/C/avax", `{"jsonrpc":"2.0","id":2,"method":"avax.getAtomicTx","params":{"txID":"x"}}`, avaErr("2", `replay: no recorded answer for avax.getAtomicTx {"txID":"x"}`)},
		{"evm unknown", "/ext/bc/C/rpc", `{"jsonrpc":"2.0","id":1,"method":"eth_foo","params":[]}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"the method eth_foo does not exist/is not available"}}` + "\n"},
		{"evm subscribe", "/ext/bc/C/rpc", `{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"notifications not supported"}}` + "\n"},
		{"evm non-array", "/ext/bc/C/rpc", `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":{"a":1}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"non-array args"}}` + "\n"},
		{"evm unrecorded", "/ext/bc/C/rpc", `{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x26",true]}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"replay: no recorded answer for eth_getBlockByNumber [\"0x26\",true]"}}` + "\n"},
		{"evm bad version", "/ext/bc/C/rpc", `{"jsonrpc":"1.0","id":1,"method":"eth_chainId"}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"invalid request"}}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(t, url+tt.endpoint, tt.body)
			if status != 200 || string(body) != tt.want {
				t.Fatalf("status %d\ngot  %s\nwant %s", status, body, tt.want)
			}
		})
	}
}

func TestMalformed(t *testing.T) {
	rec := devnet(t)
	url := serve(t, NewHandler(rec))
	avaParse := func(msg string) string {
		return `{"jsonrpc":"2.0","error":{"code":-32700,"message":"` + msg + `","data":{"jsonrpc":"","method":"","params":null,"id":null}},"id":null}` + "\n"
	}
	evmParse := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}` + "\n"
	tests := []struct {
		name, endpoint, body, want string
	}{
		{"P empty", "/ext/bc/P", ``, avaParse("EOF")},
		{"P truncated", "/ext/bc/P", `{"jsonrpc":"2.0","id":1,`, avaParse("unexpected EOF")},
		{"P garbage", "/ext/bc/P", "\x00\xff", avaParse("invalid character '\\\\x00' looking for beginning of value")},
		{"P not an object", "/ext/bc/P", `"x"`, avaParse("json: cannot unmarshal string into Go value of type json2.serverRequest")},
		{"info truncated", "/ext/info", `{`, avaParse("unexpected EOF")},
		// gorilla answers an invalid request without id with nothing at all
		{"avax null", "/ext/bc/C/avax", `null`, ``},
		{"avax no id", "/ext/bc/C/avax", `{"jsonrpc":"2.0","method":"avax.x"}`, ``},
		{"evm empty", "/ext/bc/C/rpc", ``, ``},
		{"evm truncated", "/ext/bc/C/rpc", `{"jsonrpc":"2.0","id":1,`, evmParse},
		{"evm garbage", "/ext/bc/C/rpc", "\x00\xff", evmParse},
		{"evm truncated batch", "/ext/bc/C/rpc", `[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`, evmParse},
		{"evm null", "/ext/bc/C/rpc", `null`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request"}}` + "\n"},
		{"evm ill-typed method", "/ext/bc/C/rpc", `{"jsonrpc":"2.0","id":5,"method":7}`, `{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"invalid request"}}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(t, url+tt.endpoint, tt.body)
			if status != 200 || string(body) != tt.want {
				t.Fatalf("status %d\ngot  %q\nwant %q", status, body, tt.want)
			}
		})
	}

	t.Run("P ill-typed method keeps the id", func(t *testing.T) {
		_, body := post(t, url+"/ext/bc/P", `{"jsonrpc":"2.0","id":5,"method":7}`)
		want := `{"jsonrpc":"2.0","error":{"code":-32700,"message":"json: cannot unmarshal number into Go struct field serverRequest.method of type string","data":{"jsonrpc":"2.0","method":"","params":null,"id":5}},"id":5}` + "\n"
		if string(body) != want {
			t.Fatalf("got  %s\nwant %s", body, want)
		}
	})
	t.Run("too large", func(t *testing.T) {
		status, _ := post(t, url+"/ext/bc/C/rpc", `{"x":"`+strings.Repeat("a", maxBodySize)+`"}`)
		if status != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d", status)
		}
	})
	httpTests := []struct {
		name, method, path string
		status             int
		body               string
	}{
		{"GET avalanche", http.MethodGet, "/ext/bc/P", 405, "rpc: POST method required, received GET"},
		{"GET evm health", http.MethodGet, "/ext/bc/C/rpc", 200, ""},
		{"DELETE evm", http.MethodDelete, "/ext/bc/C/rpc", 405, "method not allowed\n"},
		{"unknown path", http.MethodPost, "/ext/bc/Q", 404, "404 page not found\n"},
		{"ws not served", http.MethodPost, "/ext/bc/C/ws", 404, "404 page not found\n"},
	}
	for _, tt := range httpTests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, url+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || string(b) != tt.body {
				t.Fatalf("got %d %q, want %d %q", resp.StatusCode, b, tt.status, tt.body)
			}
		})
	}
}

func TestBlockchainIDPaths(t *testing.T) {
	rec := devnet(t)
	url := serve(t, NewHandler(rec))
	tests := []struct {
		alias, suffix, method string
	}{
		{"P", "", "platform.getHeight"},
		{"X", "", "avm.getHeight"},
		{"C", "/rpc", "eth_chainId"},
		{"C", "/avax", "avax.noSuchMethod"},
	}
	for _, tt := range tests {
		t.Run(tt.alias+tt.suffix, func(t *testing.T) {
			aliasPath := map[string]string{"P": "/ext/bc/P", "X": "/ext/bc/X", "C": "/ext/bc/C"}[tt.alias] + tt.suffix
			e := find(t, rec, aliasPath, tt.method, "")
			_, body := post(t, url+"/ext/bc/"+rec.Network.BlockchainIDs[tt.alias]+tt.suffix, request("3", e.Method, e.Params))
			if want := string(e.ResponseWithID(json.RawMessage("3"))) + "\n"; string(body) != want {
				t.Fatalf("got %s want %s", body, want)
			}
		})
	}
}

// TestAliasPaths: avalanchego serves each chain under aliases too; its own
// platformvm client posts to /ext/P.
func TestAliasPaths(t *testing.T) {
	rec := devnet(t)
	url := serve(t, NewHandler(rec))
	p := find(t, rec, "/ext/bc/P", "platform.getHeight", "")
	x := find(t, rec, "/ext/bc/X", "avm.getHeight", "")
	c := find(t, rec, "/ext/bc/C/rpc", "eth_blockNumber", "")
	v := find(t, rec, "/ext/bc/C/avax", "avax.noSuchMethod", "")
	tests := []struct {
		path string
		e    *Exchange
	}{
		{"/ext/P", p}, {"/ext/platform", p}, {"/ext/bc/platform", p}, {"/ext/bc/P/", p},
		{"/ext/X", x}, {"/ext/avm", x}, {"/ext/bc/avm", x},
		{"/ext/C/rpc", c}, {"/ext/evm/rpc", c}, {"/ext/bc/evm/rpc", c},
		{"/ext/C/avax", v}, {"/ext/bc/evm/avax", v},
	}
	for _, tt := range tests {
		_, body := post(t, url+tt.path, request("5", tt.e.Method, tt.e.Params))
		if want := string(tt.e.ResponseWithID(json.RawMessage("5"))) + "\n"; string(body) != want {
			t.Errorf("%s: got %.200s want %.200s", tt.path, body, want)
		}
	}
	for _, bad := range []string{"/ext/C", "/ext/bc/C", "/ext/bc/info", "/ext/Q", "/ext/bc/P/rpc"} {
		if status, _ := post(t, url+bad, request("5", p.Method, p.Params)); status != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", bad, status)
		}
	}
}

// TestMutatedRequests throws damaged copies of recorded requests at the
// handler (a cheap, uninstrumented fuzz): it must never panic and must answer
// with valid JSON or nothing.
func TestMutatedRequests(t *testing.T) {
	rec := devnet(t)
	h := NewHandler(rec)
	rng := rand.New(rand.NewPCG(1, 2))
	var bodies []struct{ path, body string }
	for i, e := range rec.Exchanges {
		if i%3 == 0 && len(e.Params) < 2000 {
			bodies = append(bodies, struct{ path, body string }{e.Endpoint, request(string(e.RecordedID()), e.Method, e.Params)})
		}
	}
	junk := []string{"{", "}", "[", "]", ",", ":", `"`, "null", "0x", "-", "1e999", "\\u0000", "\xff", " "}
	for i := 0; i < 4000; i++ {
		b := []byte(bodies[rng.IntN(len(bodies))].body)
		path := bodies[rng.IntN(len(bodies))].path
		for n := 1 + rng.IntN(3); n > 0 && len(b) > 0; n-- {
			at := rng.IntN(len(b))
			switch rng.IntN(4) {
			case 0:
				b = b[:at]
			case 1:
				b[at] = byte(rng.IntN(256))
			case 2:
				b = append(b[:at], append([]byte(junk[rng.IntN(len(junk))]), b[at:]...)...)
			case 3:
				b = append([]byte("["), append(b, ']')...)
			}
		}
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1"+path, bytes.NewReader(b))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("%s %q: status %d", path, b, w.Code)
		}
		if w.Body.Len() > 0 && !json.Valid(w.Body.Bytes()) {
			t.Fatalf("%s %q: invalid JSON answer %q", path, b, w.Body.String())
		}
	}
}

func TestNodeOption(t *testing.T) {
	rec := devnet(t)
	const alpha = "NodeID-J8u5V9afjBJZah9aYANnYTsdQZSoADEDC"
	for _, tt := range []struct {
		node, wantNodeID string
	}{
		{"", rec.Network.RecordingNode},
		{alpha, alpha},
		{"NodeID-unknown", rec.Network.RecordingNode},
	} {
		url := serve(t, NewHandlerWithOptions(rec, Options{Node: tt.node}))
		_, body := post(t, url+"/ext/info", `{"jsonrpc":"2.0","id":1,"method":"info.getNodeID","params":{}}`)
		var resp struct {
			Result struct {
				NodeID string `json:"nodeID"`
			} `json:"result"`
		}
		if err := json.Unmarshal(body, &resp); err != nil || resp.Result.NodeID != tt.wantNodeID {
			t.Errorf("node %q: got %s", tt.node, body)
		}
	}
}

func TestLatency(t *testing.T) {
	rec := devnet(t)
	url := serve(t, NewHandlerWithOptions(rec, Options{Latency: 150 * time.Millisecond}))
	start := time.Now()
	post(t, url+"/ext/bc/P", `{"jsonrpc":"2.0","id":1,"method":"platform.getHeight","params":{}}`)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("answered after %v", d)
	}
	// A caller giving up early is not kept waiting.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/ext/bc/P", strings.NewReader(`{}`))
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("expected a timeout")
	}
}

// FuzzHandler: no input makes the handler panic or answer other than with a
// JSON body or an empty one.
func FuzzHandler(f *testing.F) {
	rec := devnet(f)
	h := NewHandler(rec)
	for _, s := range []string{
		``, `{`, `[]`, `[1,null,{}]`, `null`, `{"jsonrpc":"2.0","id":1,"method":"platform.getBlockByHeight","params":{"height":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"platform.getValidatorsAt","params":[{"height":"proposed"}]}`,
		`{"jsonrpc":"2.0","id":[],"method":"eth_getLogs","params":[{"fromBlock":{"blockNumber":"0x00"}}]}`,
		`{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":[{"blockHash":"0xAB","requireCanonical":false}]}`,
	} {
		f.Add("/ext/bc/P", s)
		f.Add("/ext/bc/C/rpc", s)
		f.Add("/ext/info", s)
	}
	f.Fuzz(func(t *testing.T, path, body string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1"+escapePath(path), strings.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code == http.StatusOK && w.Body.Len() > 0 && !json.Valid(w.Body.Bytes()) {
			t.Fatalf("invalid JSON answer %q", w.Body.String())
		}
	})
}

// escapePath keeps fuzzed paths parseable by httptest.NewRequest.
func escapePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if r > ' ' && r < 0x7f && r != '%' && r != '?' && r != '#' {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "%%%02X", r&0xff)
		}
	}
	return b.String()
}
