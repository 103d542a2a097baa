package primary_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/api/data/primary"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// env is the devnet-a index on one backend with the primary routes mounted.
type env struct {
	*testenv.Env
	mux  *api.Mux
	spec *apitest.Spec
	rec  *recording
	net  *devnet.Network
}

func setup(t *testing.T, backend string) *env {
	t.Helper()
	te := testenv.Devnet(t, backend)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	node, err := source.NewAvalanche(te.NodeURL, source.Retry{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	mux := api.NewMux(log)
	primary.Register(mux, primary.Deps{DB: te.DB, Network: te.Network, Pager: te.Pager, Log: log,
		Node: primary.NewRPCNodeView(node, 0), AVAXAssetID: te.Chains.Genesis.AvaxAssetID.String()})
	return &env{Env: te, mux: mux, spec: apitest.Load(t), rec: loadRecording(t), net: devnet.LoadNetwork(t)}
}

// forEachBackend runs body on the devnet index of every backend.
func forEachBackend(t *testing.T, body func(t *testing.T, e *env)) {
	for _, b := range storetest.Backends {
		t.Run(b, func(t *testing.T) { body(t, setup(t, b)) })
	}
}

// get serves GET target; every body is checked against the OpenAPI
// document: the operation's response schema, and an ErrorBody for errors.
// An empty UTXO list matches both branches of getUtxosByAddresses' oneOf
// (a flaw of the document, see apitest), so it is checked against the
// branch of its chain.
func (e *env) get(t testing.TB, target string) (int, []byte) {
	t.Helper()
	code, body := apitest.ServeUnvalidated(t, e.mux, "GET", target)
	var list struct {
		Utxos     []json.RawMessage `json:"utxos"`
		ChainInfo struct {
			ChainName string `json:"chainName"`
		} `json:"chainInfo"`
	}
	path, _, _ := strings.Cut(target, "?")
	if code == 200 && strings.HasSuffix(path, "/utxos") && json.Unmarshal(body, &list) == nil && list.Utxos != nil && len(list.Utxos) == 0 {
		branch := "ListUtxosResponse"
		if list.ChainInfo.ChainName == "p-chain" {
			branch = "ListPChainUtxosResponse"
		}
		if err := e.spec.CheckSchema(branch, body); err != nil {
			t.Errorf("GET %s: %v", target, err)
		}
		return code, body
	}
	e.spec.ValidateResponse(t, "GET", target, code, body)
	return code, body
}

// ok requires a 200 and decodes the body into out (numbers as json.Number).
func (e *env) ok(t testing.TB, target string, out any) {
	t.Helper()
	code, body := e.get(t, target)
	apitest.DecodeOK(t, "GET "+target, code, body, out)
}

// fails requires status code and a message containing every want.
func (e *env) fails(t testing.TB, target string, code int, want ...string) {
	t.Helper()
	got, body := e.get(t, target)
	apitest.WantError(t, "GET "+target, got, body, code, want...)
}

// walk follows nextPageToken from first (a target with its query) with
// pageSize size, calling page with each decoded page; it returns the
// number of pages.
func (e *env) walk(t testing.TB, first string, size int, page func(body []byte)) int {
	t.Helper()
	u, err := url.Parse(first)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		q := u.Query()
		q.Set("pageSize", itoa(size))
		u.RawQuery = q.Encode()
		code, body := e.get(t, u.String())
		if code != 200 {
			t.Fatalf("GET %s: %d %s", u, code, body)
		}
		page(body)
		n++
		var next struct {
			NextPageToken *string `json:"nextPageToken"`
		}
		if err := json.Unmarshal(body, &next); err != nil {
			t.Fatal(err)
		}
		if next.NextPageToken == nil {
			return n
		}
		if *next.NextPageToken == "" {
			t.Fatalf("GET %s: empty nextPageToken", u)
		}
		q.Set("pageToken", *next.NextPageToken)
		u.RawQuery = q.Encode()
		if n > 10000 {
			t.Fatal("pagination does not end")
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// ---- the recording ----

type recording struct{ calls map[string]devnet.Calls } // by endpoint (P, X, C, info)

func loadRecording(t testing.TB) *recording {
	t.Helper()
	r := &recording{calls: map[string]devnet.Calls{}}
	for key, file := range map[string]string{"P": devnet.P, "X": devnet.X, "C": devnet.CAvax, "info": devnet.Info} {
		r.calls[key] = devnet.LoadRPC(t, file)
	}
	return r
}

// each calls f with the params and result of every successful call of
// method on endpoint (P, X, C for /ext/bc/C/avax, info).
func (r *recording) each(endpoint, method string, f func(params, result json.RawMessage)) {
	for _, c := range r.calls[endpoint] {
		if c.Method == method && c.Response.Error == nil {
			f(c.Params, c.Response.Result)
		}
	}
}

// workloadTx is one line of workload.jsonl.
type workloadTx = devnet.Tx[map[string]any]

func loadWorkload(t testing.TB) []workloadTx {
	t.Helper()
	return devnet.LoadWorkload[map[string]any](t)
}
