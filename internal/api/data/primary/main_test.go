package primary_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/api/data/primary"
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
	net  networkFacts
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
		Node: primary.NewRPCNodeView(node, 0)})
	return &env{Env: te, mux: mux, spec: apitest.Load(t), rec: loadRecording(t), net: loadNetwork(t)}
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
	w := httptest.NewRecorder()
	e.mux.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
	body := w.Body.Bytes()
	if w.Code >= 400 {
		if err := apitest.CheckErrorBody(w.Code, body); err != nil {
			t.Errorf("GET %s: %v", target, err)
		}
	}
	var list struct {
		Utxos     []json.RawMessage `json:"utxos"`
		ChainInfo struct {
			ChainName string `json:"chainName"`
		} `json:"chainInfo"`
	}
	path, _, _ := strings.Cut(target, "?")
	if w.Code == 200 && strings.HasSuffix(path, "/utxos") && json.Unmarshal(body, &list) == nil && list.Utxos != nil && len(list.Utxos) == 0 {
		branch := "ListUtxosResponse"
		if list.ChainInfo.ChainName == "p-chain" {
			branch = "ListPChainUtxosResponse"
		}
		if err := e.spec.CheckSchema(branch, body); err != nil {
			t.Errorf("GET %s: %v", target, err)
		}
		return w.Code, body
	}
	e.spec.ValidateResponse(t, "GET", target, w.Code, body)
	return w.Code, body
}

// ok requires a 200 and decodes the body into out (numbers as json.Number).
func (e *env) ok(t testing.TB, target string, out any) {
	t.Helper()
	code, body := e.get(t, target)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", target, code, body)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
}

// fails requires status code and a message containing every want.
func (e *env) fails(t testing.TB, target string, code int, want ...string) {
	t.Helper()
	got, body := e.get(t, target)
	if got != code {
		t.Errorf("GET %s: status %d (%s), want %d", target, got, body, code)
		return
	}
	msg := apitest.ErrorMessage(body)
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("GET %s: message %q does not name %q", target, msg, w)
		}
	}
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

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type exchange struct {
	Method   string          `json:"method"`
	Params   json.RawMessage `json:"params"`
	Response struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	} `json:"response"`
}

type recording struct{ calls map[string][]exchange } // by endpoint file (P, X, info)

func loadRecording(t testing.TB) *recording {
	t.Helper()
	r := &recording{calls: map[string][]exchange{}}
	for key, file := range map[string]string{"P": "ext_bc_P.jsonl", "X": "ext_bc_X.jsonl", "C": "ext_bc_C_avax.jsonl", "info": "ext_info.jsonl"} {
		f, err := os.Open(filepath.Join(testenv.DevnetDir(t), "rpc", file))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			var x exchange
			if err := json.Unmarshal(sc.Bytes(), &x); err != nil {
				t.Fatalf("recording line: %v", err)
			}
			r.calls[key] = append(r.calls[key], x)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
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

type networkFacts struct {
	HRP           string            `json:"hrp"`
	AvaxAssetID   string            `json:"avaxAssetID"`
	BlockchainIDs map[string]string `json:"blockchainIDs"`
	CreatedAssets map[string]string `json:"createdAssets"`
	Stakers       map[string]struct {
		NodeID         string `json:"nodeID"`
		ValidatorTxID  string `json:"validatorTxID"`
		DelegatorTxID  string `json:"delegatorTxID"`
		ExpectedResult string `json:"expected"`
	} `json:"stakers"`
	RewardValidatorTxs []struct {
		Height           int64  `json:"height"`
		RewardTxID       string `json:"rewardTxID"`
		StakerTxID       string `json:"stakerTxID"`
		StakerTxType     string `json:"stakerTxType"`
		OutcomeBlockType string `json:"outcomeBlockType"`
	} `json:"rewardValidatorTxs"`
	PBlocks []struct {
		Height    int64  `json:"height"`
		BlockID   string `json:"blockID"`
		BlockType string `json:"blockType"`
	} `json:"pBlocks"`
	Subnets map[string]struct {
		SubnetID string `json:"subnetID"`
	} `json:"subnets"`
}

func loadNetwork(t testing.TB) networkFacts {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.DevnetDir(t), "network.json"))
	if err != nil {
		t.Fatal(err)
	}
	var n networkFacts
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// keys are the workload keys with their addresses.
type key struct {
	Name string `json:"name"`
	P    string `json:"pChainAddress"`
	X    string `json:"xChainAddress"`
}

// workloadTx is one line of workload.jsonl.
type workloadTx struct {
	Seq       int            `json:"seq"`
	Chain     string         `json:"chain"`
	Type      string         `json:"type"`
	TxID      string         `json:"txID"`
	Addresses []string       `json:"addresses"`
	Extra     map[string]any `json:"extra"`
}

func loadWorkload(t testing.TB) []workloadTx {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.DevnetDir(t), "workload.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []workloadTx
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var w workloadTx
		if err := json.Unmarshal(sc.Bytes(), &w); err != nil {
			t.Fatal(err)
		}
		out = append(out, w)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
