package evm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/url"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	apievm "github.com/permafrost-dev/permafrost/internal/api/data/evm"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// env is the devnet-a index on one backend with the EVM routes mounted.
type env struct {
	*testenv.Env
	mux *api.Mux
	rec *recording
	net *devnet.Network
}

func setup(t *testing.T, backend string) *env {
	t.Helper()
	te := testenv.Devnet(t, backend)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mux := api.NewMux(log)
	apievm.Register(mux, apievm.Deps{DB: te.DB, Network: te.Network, Pager: te.Pager, Log: log,
		BalanceNodes: apievm.BalanceNodeMap{"C": replayEVM(t, te.NodeURL)}})
	return &env{Env: te, mux: mux, rec: loadRecording(t), net: loadNetwork(t)}
}

// replayEVM is a client of the replay node's C-chain: the node asked for
// balances the index cannot vouch for (it answers the recorded heights).
func replayEVM(t *testing.T, nodeURL string) *source.EVM {
	t.Helper()
	c, err := source.NewEVM(context.Background(), nodeURL+source.PathCRPC, source.EVMOptions{Traces: source.TracesOff,
		Retry: source.Retry{MaxAttempts: 1, Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// forEachBackend runs body on the devnet index of every backend.
func forEachBackend(t *testing.T, body func(t *testing.T, e *env)) {
	for _, b := range storetest.Backends {
		t.Run(b, func(t *testing.T) { body(t, setup(t, b)) })
	}
}

// do serves GET path and checks the answer with the shared validator:
// every body against the OpenAPI schema of the operation for its status,
// error bodies also as ErrorBody.
//
// One value is swapped before validating: Erc20TokenBalance.tokenReputation
// is required, typed [string, null] and exemplified with null, but its
// enum lists only Malicious and Benign, so a strict 2020-12 validator
// refuses null. null is the honest value with no reputation source (tests
// assert it separately); claiming "Benign" would be invented.
func (e *env) do(t testing.TB, path string) (int, []byte) {
	t.Helper()
	code, body := apitest.ServeUnvalidated(t, e.mux, "GET", path)
	check := bytes.ReplaceAll(body, []byte(`"tokenReputation":null`), []byte(`"tokenReputation":"Benign"`))
	apitest.Load(t).ValidateResponse(t, "GET", path, code, check)
	return code, body
}

// ok serves path, requires a 200 and decodes the body into out.
func (e *env) ok(t testing.TB, path string, out any) {
	t.Helper()
	code, body := e.do(t, path)
	apitest.DecodeOK(t, path, code, body, out)
}

// fails requires status code and a message containing every want.
func (e *env) fails(t testing.TB, path string, code int, want ...string) {
	t.Helper()
	got, body := e.do(t, path)
	apitest.WantError(t, path, got, body, code, want...)
}

// allPages follows nextPageToken from path to the end (at most 200 pages)
// and returns every page's items; page splits a decoded answer into its
// items and its nextPageToken.
func allPages[L, I any](t *testing.T, e *env, path string, page func(L) ([]I, string)) []I {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var out []I
	p := path
	for i := 0; i < 200; i++ {
		var l L
		e.ok(t, p, &l)
		items, next := page(l)
		out = append(out, items...)
		if next == "" {
			return out
		}
		p = path + sep + "pageToken=" + url.QueryEscape(next)
	}
	t.Fatalf("%s: too many pages", path)
	return nil
}

// ---- the recording ----

// recording holds the /ext/bc/C/rpc answers.
type recording struct{ calls devnet.Calls }

func loadRecording(t testing.TB) *recording {
	t.Helper()
	return &recording{calls: devnet.LoadRPC(t, devnet.CRPC)}
}

// each calls f with the params and result of every successful call of method.
func (r *recording) each(method string, f func(params []json.RawMessage, result json.RawMessage)) {
	for _, c := range r.calls {
		if c.Method != method || c.Response.Error != nil {
			continue
		}
		var ps []json.RawMessage
		if err := json.Unmarshal(c.Params, &ps); err != nil {
			continue
		}
		f(ps, c.Response.Result)
	}
}

// ethCalls are the recorded eth_calls.
func (r *recording) ethCalls(t testing.TB) []devnet.EthCall {
	t.Helper()
	return devnet.EthCalls(t, r.calls)
}

func hexBig(t testing.TB, s string) *big.Int {
	t.Helper()
	v, ok := new(big.Int).SetString(strings.TrimPrefix(s, "0x"), 16)
	if s == "0x" || s == "0x0" {
		return new(big.Int)
	}
	if !ok {
		t.Fatalf("not hex: %q", s)
	}
	return v
}

func hexDec(t testing.TB, s string) string { return hexBig(t, s).String() }

// loadNetwork is network.json with the contracts' addresses in the index's
// form (0x-lowercase).
func loadNetwork(t testing.TB) *devnet.Network {
	t.Helper()
	n := devnet.LoadNetwork(t)
	n.CChainContracts = n.ContractsLower()
	return n
}

// ---- transfers from the recorded eth_getLogs (an independent decoding) ----

const (
	topicTransfer       = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
	topicTransferSingle = "0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62"
	topicTransferBatch  = "0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb"
	zeroAddr            = "0x0000000000000000000000000000000000000000"
)

// logTransfer is one token movement as the recorded logs state it.
type logTransfer struct {
	Token, Type         string
	Block               int64
	BlockHash, TxHash   string
	LogIndex, Batch     int64
	From, To, ID, Value string
}

func (r *recording) logTransfers(t testing.TB) []logTransfer {
	t.Helper()
	var out []logTransfer
	n := 0
	r.each("eth_getLogs", func(_ []json.RawMessage, result json.RawMessage) {
		n++
		var logs []struct {
			Address, BlockNumber, BlockHash, TransactionHash, LogIndex, Data string
			Topics                                                           []string
		}
		if err := json.Unmarshal(result, &logs); err != nil {
			t.Fatal(err)
		}
		for _, l := range logs {
			if len(l.Topics) == 0 {
				continue
			}
			base := logTransfer{Token: strings.ToLower(l.Address), Block: hexBig(t, l.BlockNumber).Int64(),
				BlockHash: l.BlockHash, TxHash: l.TransactionHash, LogIndex: hexBig(t, l.LogIndex).Int64()}
			addr := func(topic string) string { return "0x" + topic[26:] }
			data := strings.TrimPrefix(l.Data, "0x")
			word := func(i int) string { return hexDec(t, "0x"+data[64*i:64*i+64]) }
			switch {
			case l.Topics[0] == topicTransfer && len(l.Topics) == 3:
				x := base
				x.Type, x.From, x.To, x.Value = "ERC-20", addr(l.Topics[1]), addr(l.Topics[2]), word(0)
				out = append(out, x)
			case l.Topics[0] == topicTransfer && len(l.Topics) == 4:
				x := base
				x.Type, x.From, x.To, x.ID, x.Value = "ERC-721", addr(l.Topics[1]), addr(l.Topics[2]), hexDec(t, l.Topics[3]), "1"
				out = append(out, x)
			case l.Topics[0] == topicTransferSingle:
				x := base
				x.Type, x.From, x.To, x.ID, x.Value = "ERC-1155", addr(l.Topics[2]), addr(l.Topics[3]), word(0), word(1)
				out = append(out, x)
			case l.Topics[0] == topicTransferBatch:
				idsOff := hexBig(t, "0x"+data[:64]).Int64() / 32
				valsOff := hexBig(t, "0x"+data[64:128]).Int64() / 32
				cnt := hexBig(t, "0x"+data[64*idsOff:64*idsOff+64]).Int64()
				for i := int64(0); i < cnt; i++ {
					x := base
					x.Type, x.From, x.To, x.Batch = "ERC-1155", addr(l.Topics[2]), addr(l.Topics[3]), i
					x.ID, x.Value = word(int(idsOff+1+i)), word(int(valsOff+1+i))
					out = append(out, x)
				}
			}
		}
	})
	if n != 1 || len(out) == 0 {
		t.Fatalf("recorded eth_getLogs: %d calls, %d transfers", n, len(out))
	}
	return out
}

// tokenBalancesAt replays the recorded transfers up to block n:
// holder -> "token" or "token/id" -> balance (zero balances dropped).
func tokenBalancesAt(xs []logTransfer, typ string, n int64) map[string]map[string]*big.Int {
	out := map[string]map[string]*big.Int{}
	add := func(h, k string, v *big.Int) {
		if h == zeroAddr {
			return
		}
		if out[h] == nil {
			out[h] = map[string]*big.Int{}
		}
		if out[h][k] == nil {
			out[h][k] = new(big.Int)
		}
		out[h][k].Add(out[h][k], v)
		if out[h][k].Sign() == 0 {
			delete(out[h], k)
		}
	}
	for _, x := range xs {
		if x.Type != typ || x.Block > n {
			continue
		}
		k := x.Token
		if typ == "ERC-1155" {
			k += "/" + x.ID
		}
		v, _ := new(big.Int).SetString(x.Value, 10)
		add(x.From, k, new(big.Int).Neg(v))
		add(x.To, k, v)
	}
	return out
}

func fmtMap(m map[string]string) string {
	b, _ := json.Marshal(m)
	return string(b)
}

var _ = fmt.Sprint
