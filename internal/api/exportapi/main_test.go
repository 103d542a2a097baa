package exportapi_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/api/exportapi"
	"github.com/permafrost-dev/permafrost/internal/export"
	"github.com/permafrost-dev/permafrost/internal/keys"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// env is the devnet-a index of one backend served over HTTP on 127.0.0.1
// with the guard, API keys, the export routes and a running worker pool.
type env struct {
	*testenv.Env
	srv  *httptest.Server
	svc  *export.Service
	oapi *apitest.Spec
	dir  string
	// API keys: key and other carry the exports scope, noScope none.
	key, other, noScope string
}

func setup(t *testing.T, backend string, cfg export.Config) *env {
	t.Helper()
	te := testenv.Devnet(t, backend)
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("EXPORT_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	mux := api.NewMux(log)
	api.NewGuard(te.DB, api.LimitsConfig{Tiers: map[string]int64{"pro": 1 << 40}, AnonymousCU: 1 << 40,
		KeyCacheTTL: -1}, log).Install(mux)
	srv := httptest.NewUnstartedServer(mux) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	cfg.PublicURL = "http://" + srv.Listener.Addr().String()
	if cfg.Poll == 0 {
		cfg.Poll = 20 * time.Millisecond
	}
	svc, err := export.New(ctx, te.DB, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	exportapi.Register(mux, exportapi.Deps{Service: svc, Network: te.Network, Log: log})
	srv.Start()
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	e := &env{Env: te, srv: srv, svc: svc, oapi: apitest.Load(t), dir: cfg.Dir}
	for _, k := range []struct {
		p      *string
		scopes []string
	}{{&e.key, []string{"exports"}}, {&e.other, []string{"exports"}}, {&e.noScope, nil}} {
		if *k.p, err = keys.Create(ctx, te.DB, "export-test", "pro", k.scopes, 0); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func forEachBackend(t *testing.T, cfg export.Config, body func(t *testing.T, e *env)) {
	for _, b := range storetest.Backends {
		t.Run(b, func(t *testing.T) { body(t, setup(t, b, cfg)) })
	}
}

// do sends a request with key (none when ""), checks an error body's shape
// and a JSON body against the OpenAPI document, and returns status and body.
func (e *env) do(t testing.TB, method, path, key string, body []byte) (int, []byte, http.Header) {
	t.Helper()
	code, b, h := apitest.Send(t, e.srv.Client(), method, e.srv.URL+path, body, "x-data-api-key", key)
	if strings.HasPrefix(h.Get("Content-Type"), "application/json") && !strings.Contains(path, "/download") {
		if err := e.oapi.CheckResponse(method, strings.SplitN(path, "?", 2)[0], code, b); err != nil {
			t.Errorf("%v\nbody: %s", err, b)
		}
	}
	return code, b, h
}

// create posts an export request and requires a 201.
func (e *env) create(t testing.TB, key string, req any) export.Operation {
	t.Helper()
	b, _ := json.Marshal(req)
	code, body, _ := e.do(t, "POST", "/v1/operations/transactions:export", key, b)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var op export.Operation
	if err := json.Unmarshal(body, &op); err != nil {
		t.Fatal(err)
	}
	return op
}

func (e *env) get(t testing.TB, key, id string) (int, export.Operation) {
	t.Helper()
	code, body, _ := e.do(t, "GET", "/v1/operations/"+id, key, nil)
	var op export.Operation
	if code == http.StatusOK {
		if err := json.Unmarshal(body, &op); err != nil {
			t.Fatal(err)
		}
	}
	return code, op
}

// wait polls the operation until it leaves RUNNING.
func (e *env) wait(t testing.TB, key, id string) export.Operation {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, op := e.get(t, key, id)
		if code != http.StatusOK {
			t.Fatalf("get %s: %d", id, code)
		}
		if op.OperationStatus != export.StatusRunning {
			return op
		}
		if time.Now().After(deadline) {
			t.Fatalf("operation %s still RUNNING", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// download fetches an absolute download URL (no API key) and parses the CSV.
func download(t testing.TB, url string) [][]string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("download %s: %d %s", url, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Errorf("download content type %q", ct)
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment; filename=") {
		t.Errorf("download disposition %q", cd)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatalf("download: not CSV: %v", err)
	}
	return recs
}

// complete runs an export to COMPLETED and returns its rows (header first).
func (e *env) complete(t testing.TB, req any) (export.Operation, [][]string) {
	t.Helper()
	op := e.create(t, e.key, req)
	op = e.wait(t, e.key, op.OperationID)
	if op.OperationStatus != export.StatusCompleted || op.Metadata == nil || op.Metadata.DownloadURL == "" {
		t.Fatalf("operation ended %+v %+v", op, op.Metadata)
	}
	return op, download(t, op.Metadata.DownloadURL)
}

// byHeader maps each row (after the header) to its columns by name.
func byHeader(t testing.TB, recs [][]string, want []string) []map[string]string {
	t.Helper()
	if len(recs) == 0 || strings.Join(recs[0], ",") != strings.Join(want, ",") {
		t.Fatalf("header %v, want %v", recs[:min(1, len(recs))], want)
	}
	out := make([]map[string]string, 0, len(recs)-1)
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range want {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}
