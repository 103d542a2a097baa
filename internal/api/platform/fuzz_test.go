package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// panicWatch is a log handler that remembers the handler's recovered panics.
type panicWatch struct {
	mu     sync.Mutex
	panics []string
}

func (p *panicWatch) Enabled(context.Context, slog.Level) bool { return true }
func (p *panicWatch) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "panic") {
		p.mu.Lock()
		p.panics = append(p.panics, r.Message)
		p.mu.Unlock()
	}
	return nil
}
func (p *panicWatch) WithAttrs([]slog.Attr) slog.Handler { return p }
func (p *panicWatch) WithGroup(string) slog.Handler      { return p }

var fuzzEnv struct {
	once  sync.Once
	h     *handler
	watch *panicWatch
}

// fuzzHandler is the handler over the devnet-a index (SQLite), shared by the
// fuzz iterations of one process.
func fuzzHandler(t *testing.T) (*handler, *panicWatch) {
	fuzzEnv.once.Do(func() {
		te := setup(t, "sqlite", setupOpts{}).te
		fuzzEnv.watch = &panicWatch{}
		now := recordedAt(t)
		h, _, err := newHandler(Deps{DB: te.DB, Genesis: te.Chains.Genesis, Log: slog.New(fuzzEnv.watch),
			MaxBodyBytes: 64 << 10, MaxBatch: 20, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		fuzzEnv.h = h
	})
	if fuzzEnv.h == nil {
		t.Fatal("fuzz handler not built")
	}
	return fuzzEnv.h, fuzzEnv.watch
}

// checkAnswer asserts the invariants of any answer: no server error, and a
// JSON-RPC 2.0 envelope (or nothing, for notifications).
func checkAnswer(t *testing.T, body []byte, rec *httptest.ResponseRecorder, watch *panicWatch) {
	t.Helper()
	watch.mu.Lock()
	if len(watch.panics) > 0 {
		watch.mu.Unlock()
		t.Fatalf("panic serving %q", body)
	}
	watch.mu.Unlock()
	out := rec.Body.Bytes()
	switch rec.Code {
	case http.StatusOK, http.StatusRequestEntityTooLarge:
	default:
		t.Fatalf("HTTP %d for %q: %s", rec.Code, body, out)
	}
	if len(bytes.TrimSpace(out)) == 0 {
		if rec.Code != http.StatusOK {
			t.Fatalf("empty HTTP %d", rec.Code)
		}
		return
	}
	var answers []json.RawMessage
	if isBatch(out) {
		if err := json.Unmarshal(out, &answers); err != nil || len(answers) == 0 {
			t.Fatalf("batch answer %s: %v", out, err)
		}
	} else {
		answers = []json.RawMessage{out}
	}
	for _, a := range answers {
		var env map[string]json.RawMessage
		if err := json.Unmarshal(a, &env); err != nil {
			t.Fatalf("answer %s to %q: %v", a, body, err)
		}
		_, hasResult := env["result"]
		_, hasError := env["error"]
		_, hasID := env["id"]
		if string(env["jsonrpc"]) != `"2.0"` || hasResult == hasError || !hasID || len(env) != 3 {
			t.Fatalf("answer %s to %q", a, body)
		}
	}
}

func serve(h http.Handler, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/ext/bc/P", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// FuzzRequest feeds arbitrary bodies to the request decoder (single calls,
// batches, notifications, garbage).
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"platform.getCurrentSupply","params":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"platform.getBlockchains"},{"jsonrpc":"2.0","method":"platform.getHeight"}]`,
		`{"jsonrpc":"2.0","method":"platform.getBalance","params":{"addresses":["P-custom1s38hv6retq3p0tfqthhglkgc84gjzxv6zf7fzv"]}}`,
		`{"jsonrpc":"2.0","id":"x","method":"platform.getBlockByHeight","params":[{"height":1,"encoding":"json"}]}`,
		`[]`, `[1,2]`, `{`, `null`, `[null]`, ``, `"`, `{"id":{}}`,
		`{"jsonrpc":"2.0","id":1e999,"method":"platform.getCurrentValidators","params":{"nodeIDs":[]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		h, watch := fuzzHandler(t)
		checkAnswer(t, body, serve(h, body), watch)
	})
}

// fuzzMethods are the served methods plus a few the service lacks.
var fuzzMethods = []string{
	"platform.getBalance", "platform.getBlock", "platform.getBlockByHeight", "platform.getBlockchains",
	"platform.getBlockchainStatus", "platform.getCurrentSupply", "platform.getCurrentValidators",
	"platform.getHeight", "platform.GetBalance", "platform.", "",
}

// FuzzParams validates arbitrary parameters of every method: answers are
// results of the method's reply shape or -32000 errors, never a failure.
func FuzzParams(f *testing.F) {
	for _, x := range pCalls(f) {
		for i, m := range fuzzMethods {
			if m == x.Method {
				f.Add(uint8(i), []byte(x.Params))
			}
		}
	}
	for i := range fuzzMethods {
		for _, p := range []string{`{}`, `[]`, `null`, `"s"`, `{"height":"99999999999999999999"}`,
			`{"blockID":"11111111111111111111111111111111LpoYY","encoding":"hexnc"}`,
			`{"subnetID":"11111111111111111111111111111111LpoYY","nodeIDs":["NodeID-111111111111111111116DBWJs"]}`,
			`{"addresses":["11111111111111111111ays8tV"]}`, `{"blockchainID":"P"}`, `{"blockchainID":"QQ"}`} {
			f.Add(uint8(i), []byte(p))
		}
	}
	f.Fuzz(func(t *testing.T, method uint8, params []byte) {
		h, watch := fuzzHandler(t)
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		if !json.Valid(params) {
			params, _ = json.Marshal(string(params))
		}
		req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": m, "params": json.RawMessage(params)})
		if err != nil {
			t.Skip()
		}
		rec := serve(h, req)
		checkAnswer(t, req, rec, watch)
		if rec.Code == http.StatusRequestEntityTooLarge {
			return
		}
		var env struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code int `json:"code"`
			} `json:"error"`
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || string(env.ID) != "7" {
			t.Fatalf("%s: %s (%v)", req, rec.Body.Bytes(), err)
		}
		if env.Error != nil && env.Error.Code != -32000 {
			t.Fatalf("%s: error code %d", req, env.Error.Code)
		}
	})
}
