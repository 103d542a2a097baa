package webhooks_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	webhooksapi "github.com/permafrost-dev/permafrost/internal/api/webhooks"
	"github.com/permafrost-dev/permafrost/internal/keys"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
	"github.com/permafrost-dev/permafrost/internal/webhooks"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// facts are values of the devnet-a recording (network.json, workload.jsonl).
type facts struct {
	EVMChainID   string
	PBlockchain  string
	XBlockchain  string
	CAddr, PAddr string // a workload C-chain address; a workload P-chain address (with its P- prefix)
	NodeID       string
	SubnetlessID string // the P-chain blockchain id doubles as the primary network's subnet id
}

func loadFacts(t *testing.T, dir string) facts {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "network.json"))
	if err != nil {
		t.Fatal(err)
	}
	var n struct {
		EVMChainID    json.Number       `json:"evmChainID"`
		BlockchainIDs map[string]string `json:"blockchainIDs"`
		Stakers       map[string]struct {
			NodeID string `json:"nodeID"`
		} `json:"stakers"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		t.Fatal(err)
	}
	f := facts{EVMChainID: n.EVMChainID.String(), PBlockchain: n.BlockchainIDs["P"], XBlockchain: n.BlockchainIDs["X"],
		NodeID: n.Stakers["alpha"].NodeID, SubnetlessID: n.BlockchainIDs["P"]}
	wl, err := os.ReadFile(filepath.Join(dir, "workload.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(wl), "\n") {
		var w struct {
			Addresses []string `json:"addresses"`
		}
		if json.Unmarshal([]byte(line), &w) != nil {
			continue
		}
		for _, a := range w.Addresses {
			switch {
			case f.CAddr == "" && strings.HasPrefix(a, "0x"):
				f.CAddr = a
			case f.PAddr == "" && strings.HasPrefix(a, "P-"):
				f.PAddr = a
			}
		}
	}
	if f.CAddr == "" || f.PAddr == "" || f.NodeID == "" || f.EVMChainID == "" {
		t.Fatalf("devnet-a facts incomplete: %+v", f)
	}
	return f
}

// env is the devnet-a index of one backend served over HTTP on 127.0.0.1
// with the guard, API keys and the webhook routes.
type env struct {
	*testenv.Env
	srv  *httptest.Server
	oapi *apitest.Spec
	f    facts
	// API keys: key and other carry the webhooks scope, noScope another scope.
	key, other, noScope string
}

func setup(t *testing.T, backend string, policy webhooks.URLPolicy) *env {
	t.Helper()
	te := testenv.Devnet(t, backend)
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mux := api.NewMux(log)
	api.NewGuard(te.DB, api.LimitsConfig{Tiers: map[string]int64{"pro": 1 << 40}, AnonymousCU: 1 << 40,
		KeyCacheTTL: -1}, log).Install(mux)
	webhooksapi.Register(mux, webhooksapi.Deps{Registry: webhooks.NewRegistry(te.DB, nil), Network: te.Network,
		Pager: te.Pager, Policy: policy, Log: log})
	srv := httptest.NewServer(mux) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	e := &env{Env: te, srv: srv, oapi: apitest.Load(t), f: loadFacts(t, te.Dir)}
	for _, k := range []struct {
		p      *string
		scopes []string
	}{{&e.key, []string{"webhooks"}}, {&e.other, []string{"webhooks"}}, {&e.noScope, []string{"exports"}}} {
		var err error
		if *k.p, err = keys.Create(ctx, te.DB, "webhooks-test", "pro", k.scopes, 0); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func forEachBackend(t *testing.T, policy webhooks.URLPolicy, body func(t *testing.T, e *env)) {
	for _, b := range storetest.Backends {
		t.Run(b, func(t *testing.T) { body(t, setup(t, b, policy)) })
	}
}

// do sends a request with key (none when ""), checks an error body's shape
// and every JSON body against the published document, and returns status
// and body.
func (e *env) do(t testing.TB, method, path, key string, body any) (int, []byte) {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	code, b, _ := apitest.Send(t, e.srv.Client(), method, e.srv.URL+path, raw, "x-glacier-api-key", key)
	if err := e.oapi.CheckResponse(method, strings.SplitN(path, "?", 2)[0], code, b); err != nil {
		t.Errorf("%s %s: %v\nbody: %s", method, path, err, b)
	}
	return code, b
}

// ok requires status want and decodes the body into out.
func (e *env) ok(t testing.TB, want int, method, path, key string, body, out any) {
	t.Helper()
	code, b := e.do(t, method, path, key, body)
	if code != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, code, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// hook is the union of the three webhook response shapes.
type hook struct {
	ID                 string         `json:"id"`
	URL                string         `json:"url"`
	ChainID            string         `json:"chainId"`
	Status             string         `json:"status"`
	CreatedAt          int64          `json:"createdAt"`
	Name               string         `json:"name"`
	Description        string         `json:"description"`
	EventType          string         `json:"eventType"`
	Metadata           map[string]any `json:"metadata"`
	IncludeInternalTxs *bool          `json:"includeInternalTxs"`
	IncludeLogs        *bool          `json:"includeLogs"`
}
