package platform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/replay"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// env is the devnet-a index on one backend with the platform API served on
// 127.0.0.1 under every path of Paths.
type env struct {
	te  *testenv.Env
	url string // base URL, e.g. http://127.0.0.1:port
	svc *Service
	h   *handler
}

type setupOpts struct {
	upstream bool // the replay node (the recorded node) as upstream
	proxy    bool
	maxBatch int
	maxBody  int64
}

func quietLog() *slog.Logger {
	if os.Getenv("PLATFORM_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

func setup(t testing.TB, backend string, o setupOpts) *env {
	t.Helper()
	te := testenv.Devnet(t, backend)
	deps := Deps{
		DB:           te.DB,
		NetworkID:    te.Chains.NetworkID,
		Genesis:      te.Chains.Genesis,
		Log:          quietLog(),
		Now:          func() time.Time { return recordedAt(t) },
		ProxyUnknown: o.proxy,
		MaxBatch:     o.maxBatch,
		MaxBodyBytes: o.maxBody,
	}
	if o.upstream {
		deps.Upstream = te.NodeURL
	}
	h, svc, err := newHandler(deps)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	Mount(routerFunc(mux.Handle), h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &env{te: te, url: srv.URL, svc: svc, h: h}
}

type routerFunc func(string, http.Handler)

func (f routerFunc) HandleHTTP(p string, h http.Handler) { f(p, h) }

// recordedAt is when the recording node answered (its wall clock for
// getBalance's lock-time comparisons).
func recordedAt(t testing.TB) time.Time {
	t.Helper()
	return devnet.LoadNetwork(t).RecordedAt
}

var recording struct {
	rec *replay.Recording
	err error
}

// pCalls returns the recorded P-chain exchanges.
func pCalls(t testing.TB) []replay.Exchange {
	t.Helper()
	if recording.rec == nil && recording.err == nil {
		recording.rec, recording.err = replay.Load(testenv.DevnetDir(t))
	}
	if recording.err != nil {
		t.Fatal(recording.err)
	}
	var out []replay.Exchange
	for _, e := range recording.rec.Exchanges {
		if e.Endpoint == "/ext/bc/P" {
			out = append(out, e)
		}
	}
	return out
}

// post sends body to path and returns status, headers and body.
func post(t testing.TB, url, contentType string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// call sends one JSON-RPC call the way the recording sent it.
func (e *env) call(t testing.TB, id json.RawMessage, method string, params json.RawMessage) (int, []byte) {
	t.Helper()
	req := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	code, _, body := post(t, e.url+"/ext/bc/P", "application/json", b)
	return code, body
}

func decodeNumbers(t testing.TB, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

// diffJSON lists the differences between two decoded JSON values, by path.
func diffJSON(path string, got, want any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %s, want an object", path, show(got))}
		}
		var out []string
		keys := map[string]bool{}
		for k := range w {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			gv, gok := g[k]
			wv, wok := w[k]
			switch {
			case !gok:
				out = append(out, fmt.Sprintf("%s.%s: missing, want %s", path, k, show(wv)))
			case !wok:
				out = append(out, fmt.Sprintf("%s.%s: unexpected %s", path, k, show(gv)))
			default:
				out = append(out, diffJSON(path+"."+k, gv, wv)...)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %s, want an array", path, show(got))}
		}
		var out []string
		if len(g) != len(w) {
			out = append(out, fmt.Sprintf("%s: %d elements, want %d", path, len(g), len(w)))
		}
		for i := 0; i < len(g) && i < len(w); i++ {
			out = append(out, diffJSON(fmt.Sprintf("%s[%d]", path, i), g[i], w[i])...)
		}
		return out
	default:
		if !reflect.DeepEqual(got, want) {
			return []string{fmt.Sprintf("%s: got %s, want %s", path, show(got), show(want))}
		}
		return nil
	}
}

func show(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func compact(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, bytes.TrimSpace(b)); err != nil {
		t.Fatalf("compact %q: %v", b, err)
	}
	return buf.Bytes()
}

func trunc(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
