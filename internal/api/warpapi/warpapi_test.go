package warpapi_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/set"
	avawarp "github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/message"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/payload"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/api/warpapi"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
	"github.com/permafrost-dev/permafrost/internal/warp"
	"github.com/permafrost-dev/permafrost/internal/warpindex"
	"github.com/permafrost-dev/permafrost/internal/warpindex/warptest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func mustID(t testing.TB, s string) ids.ID {
	t.Helper()
	id, err := ids.FromString(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// facts are what the tests take from the recording (testdata/devnet-a).
type facts struct {
	subnetB      ids.ID // the L1
	conversionID ids.ID // platform.getSubnet of B
	convertTx    string
	registerTx   string
	createSubnet string   // a P-chain tx without a Warp message
	xTx          string   // an X-chain tx
	initial      []ids.ID // validations of the conversion
	registered   ids.ID   // validation of the RegisterL1ValidatorTx
	registerAt   uint64   // P-chain height where it was accepted
	tip          uint64   // platform.getHeight
	keys         map[string]bls.Signer
}

func loadFacts(t *testing.T) facts {
	t.Helper()
	var f facts
	for _, e := range devnet.LoadWorkload[json.RawMessage](t) {
		var extra struct {
			SubnetID      string   `json:"subnetID"`
			ValidationID  string   `json:"validationID"`
			ValidationIDs []string `json:"validationIDs"`
		}
		if len(e.Extra) > 0 {
			if err := json.Unmarshal(e.Extra, &extra); err != nil {
				t.Fatal(err)
			}
		}
		switch {
		case e.Type == "ConvertSubnetToL1Tx":
			f.convertTx, f.subnetB = e.TxID, mustID(t, extra.SubnetID)
			for _, v := range extra.ValidationIDs {
				f.initial = append(f.initial, mustID(t, v))
			}
		case e.Type == "RegisterL1ValidatorTx":
			f.registerTx, f.registered = e.TxID, mustID(t, extra.ValidationID)
		case e.Type == "CreateSubnetTx" && f.createSubnet == "":
			f.createSubnet = e.TxID
		case e.Chain == "X" && f.xTx == "":
			f.xTx = e.TxID
		}
	}
	p := devnet.LoadRPC(t, devnet.P)
	var subnet struct {
		ConversionID string `json:"conversionID"`
	}
	if !p.FindResult(t, &subnet, "platform.getSubnet", devnet.ParamsContain(f.subnetB.String())) {
		t.Fatal("no platform.getSubnet answer for the L1")
	}
	f.conversionID = mustID(t, subnet.ConversionID)
	var height struct {
		Height string `json:"height"`
	}
	if !p.FindResult(t, &height, "platform.getHeight") {
		t.Fatal("no platform.getHeight answer")
	}
	tip, err := strconv.ParseUint(height.Height, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	f.tip = tip
	for h, blk := range devnet.PBlocks(t, p) {
		for _, tx := range blk.Txs() {
			if tx.ID().String() == f.registerTx {
				f.registerAt = h
			}
		}
	}
	f.keys = map[string]bls.Signer{}
	for pk, k := range devnet.BLSSigners(t) {
		f.keys[pk] = k
	}
	if f.convertTx == "" || f.registerTx == "" || f.xTx == "" || len(f.initial) != 2 || f.registerAt == 0 {
		t.Fatalf("recording facts incomplete: %+v", f)
	}
	return f
}

// chainState applies the P-chain's signing rules for L1 messages
// (avalanchego vms/platformvm/network/warp.go) to a P-chain state the test
// sets: the converted subnets and the validations that exist.
type chainState struct {
	mu          sync.Mutex
	conversions map[ids.ID]ids.ID
	active      map[ids.ID]bool
}

func (s *chainState) set(conversions map[ids.ID]ids.ID, active ...ids.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conversions, s.active = conversions, map[ids.ID]bool{}
	for _, v := range active {
		s.active[v] = true
	}
}

func refuse(format string, args ...any) *common.AppError {
	return &common.AppError{Code: 1, Message: fmt.Sprintf(format, args...)}
}

func (s *chainState) Verify(_ context.Context, msg *avawarp.UnsignedMessage, justification []byte) *common.AppError {
	s.mu.Lock()
	defer s.mu.Unlock()
	call, err := payload.ParseAddressedCall(msg.Payload)
	if err != nil || len(call.SourceAddress) != 0 {
		return refuse("not a P-chain addressed call")
	}
	p, err := message.Parse(call.Payload)
	if err != nil {
		return refuse("payload: %v", err)
	}
	switch p := p.(type) {
	case *message.SubnetToL1Conversion:
		subnetID, err := ids.ToID(justification)
		if err != nil {
			return refuse("justification is not a subnet id")
		}
		if conv, ok := s.conversions[subnetID]; !ok || conv != p.ID {
			return refuse("subnet %s has no conversion %s", subnetID, p.ID)
		}
		return nil
	case *message.L1ValidatorRegistration:
		if p.Registered && s.active[p.ValidationID] {
			return nil
		}
		return refuse("validation %s registered=%v is not the state", p.ValidationID, p.Registered)
	}
	return refuse("unsupported payload %T", p)
}

// inProcess is the index with the L1 validators' node ids replaced by those
// of the in-process peers holding their BLS keys: node ids derive from TLS
// certificates, which the recording does not hold. Keys and weights, hence
// the canonical Warp validator order, are the index's.
type inProcess struct {
	*warpindex.Index
	byKey map[string]ids.NodeID
}

func (p inProcess) ValidatorSet(ctx context.Context, subnetID ids.ID, h uint64) ([]warp.Validator, error) {
	vals, err := p.Index.ValidatorSet(ctx, subnetID, h)
	for i, v := range vals {
		if v.PublicKey == nil {
			continue
		}
		if id, ok := p.byKey[string(bls.PublicKeyToCompressedBytes(v.PublicKey))]; ok {
			vals[i].NodeID = id
		}
	}
	return vals, err
}

// env is the HTTP routes over a running aggregator over one backend's index.
type env struct {
	f     facts
	idx   *warpindex.Index
	state *chainState
	h     http.Handler
	spec  *apitest.Spec
}

// validatorsOfL1 starts one in-process validator per BLS key of the
// recording (the L1's validators) and returns them by compressed key.
func validatorsOfL1(t *testing.T, f facts, verifier *chainState) (map[string]ids.NodeID, []warp.Peer) {
	byKey := map[string]ids.NodeID{}
	var peers []warp.Peer
	for pkHex, k := range f.keys {
		v := warptest.Start(t, warptest.Options{NetworkID: 88888, BLSKey: k, Verifier: verifier})
		pk, err := hex.DecodeString(strings.TrimPrefix(pkHex, "0x"))
		if err != nil {
			t.Fatal(err)
		}
		byKey[string(pk)] = v.NodeID
		peers = append(peers, v.Peer())
	}
	return byKey, peers
}

func newEnv(t *testing.T, backend string, f facts, state *chainState, byKey map[string]ids.NodeID, peers []warp.Peer) *env {
	te := testenv.Devnet(t, backend)
	idx := warpindex.New(te.DB)
	allow := true
	agg, err := warp.New(warp.Config{
		NetworkID:          te.Network.ID,
		ValidatorSets:      inProcess{Index: idx, byKey: byKey},
		L1Txs:              idx,
		Bootstrappers:      peers,
		AllowPrivateIPs:    &allow,
		RequestTimeout:     2 * time.Second,
		AggregationTimeout: 8 * time.Second,
		Logger:             quietLog(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := agg.Close(); err != nil {
			t.Error(err)
		}
	})
	mux := api.NewMux(quietLog())
	warpapi.Register(mux, warpapi.Deps{Aggregator: agg, Network: te.Network, Log: quietLog()})
	// As served: the server's body limit around the mux.
	return &env{f: f, idx: idx, state: state, h: api.NewHTTPServer("", mux).Handler, spec: apitest.Load(t)}
}

// do sends a request and checks the answer against the OpenAPI operation
// (and, for errors, the ErrorBody shape).
func (e *env) do(t *testing.T, method, target, body string) (int, []byte) {
	t.Helper()
	w := httptest.NewRecorder()
	var r *http.Request
	if body == "" {
		r = httptest.NewRequest(method, target, nil)
	} else {
		r = httptest.NewRequest(method, target, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
	}
	e.h.ServeHTTP(w, r)
	got := w.Body.Bytes()
	if w.Code >= 400 {
		if err := apitest.CheckErrorBody(w.Code, got); err != nil {
			t.Errorf("%s %s: %v", method, target, err)
		}
	}
	e.spec.ValidateResponse(t, method, target, w.Code, got)
	return w.Code, got
}

const (
	postPath = "/v1/signatureAggregator/testnet/aggregateSignatures"
	getPath  = "/v1/signatureAggregator/testnet/aggregateSignatures/"
)

// signed decodes a 201 answer and verifies it with avalanchego's Warp
// verification against the index's validator set of subnetID at height
// (the recorded node ids) with quorum percent.
func (e *env) signed(t *testing.T, code int, body []byte, height uint64, quorum uint64) (*avawarp.Message, int) {
	t.Helper()
	if code != http.StatusCreated {
		t.Fatalf("status %d: %s", code, body)
	}
	var resp warpapi.Response
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(resp.SignedMessage)
	if err != nil {
		t.Fatalf("signedMessage is not plain hex: %v", err)
	}
	msg, err := avawarp.ParseMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := e.idx.ValidatorSet(context.Background(), e.f.subnetB, height)
	if err != nil {
		t.Fatal(err)
	}
	m := map[ids.NodeID]*validators.GetValidatorOutput{}
	for _, v := range vals {
		m[v.NodeID] = &validators.GetValidatorOutput{NodeID: v.NodeID, PublicKey: v.PublicKey, Weight: v.Weight}
	}
	ws, err := validators.FlattenValidatorSet(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := msg.Signature.Verify(&msg.UnsignedMessage, 88888, ws, quorum, 100); err != nil {
		t.Fatalf("the signature does not verify against the index's set at %d: %v", height, err)
	}
	bits := msg.Signature.(*avawarp.BitSetSignature)
	signers, err := avawarp.FilterValidators(set.BitsFromBytes(bits.Signers), ws.Validators)
	if err != nil {
		t.Fatal(err)
	}
	return msg, len(signers)
}

func pPayload(t *testing.T, msg *avawarp.Message) message.Payload {
	t.Helper()
	if msg.NetworkID != 88888 || msg.SourceChainID != constants.PlatformChainID {
		t.Fatalf("message of network %d, chain %s", msg.NetworkID, msg.SourceChainID)
	}
	call, err := payload.ParseAddressedCall(msg.Payload)
	if err != nil {
		t.Fatal(err)
	}
	p, err := message.Parse(call.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func registrationMessage(t *testing.T, validationID ids.ID, registered bool, networkID uint32) string {
	t.Helper()
	p, err := message.NewL1ValidatorRegistration(validationID, registered)
	if err != nil {
		t.Fatal(err)
	}
	call, err := payload.NewAddressedCall(nil, p.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	msg, err := avawarp.NewUnsignedMessage(networkID, constants.PlatformChainID, call.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(msg.Bytes())
}

func jsonBody(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAggregateEndToEnd aggregates the P-chain's messages about devnet-a's
// recorded L1 txs through the HTTP routes: the validator sets, txs and
// validations come from the ingested index, the signatures from in-process
// avalanchego peers on 127.0.0.1 holding the recorded L1 validators' BLS
// keys, and every result is checked with avalanchego's Warp verification
// against the index's validator set.
func TestAggregateEndToEnd(t *testing.T) {
	f := loadFacts(t)
	state := &chainState{}
	byKey, peers := validatorsOfL1(t, f, state)
	converted := map[ids.ID]ids.ID{f.subnetB: f.conversionID}
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			e := newEnv(t, backend, f, state, byKey, peers)
			ctx := context.Background()
			proposed, err := e.idx.ProposedHeight(ctx)
			if err != nil {
				t.Fatal(err)
			}

			var conversion []byte
			t.Run("GET ConvertSubnetToL1Tx", func(t *testing.T) {
				state.set(converted, f.initial...) // the tip: the registered validator is gone
				for _, hash := range []string{f.convertTx, "0x" + hex.EncodeToString(mustIDBytes(t, f.convertTx))} {
					code, body := e.do(t, "GET", getPath+hash, "")
					msg, _ := e.signed(t, code, body, proposed, 67)
					conv, ok := pPayload(t, msg).(*message.SubnetToL1Conversion)
					if !ok || conv.ID != f.conversionID {
						t.Fatalf("payload %+v, want the recorded conversion id %s", pPayload(t, msg), f.conversionID)
					}
					if conversion != nil && !bytes.Equal(conversion, msg.UnsignedMessage.Bytes()) {
						t.Fatal("the hex and cb58 tx hashes gave different messages")
					}
					conversion = msg.UnsignedMessage.Bytes()
				}
			})

			t.Run("POST justification of the conversion", func(t *testing.T) {
				state.set(converted, f.initial...)
				code, body := e.do(t, "POST", postPath, jsonBody(t, map[string]any{"justification": "0x" + hex.EncodeToString(f.subnetB[:])}))
				msg, _ := e.signed(t, code, body, proposed, 67)
				if !bytes.Equal(msg.UnsignedMessage.Bytes(), conversion) {
					t.Fatal("the justification gave another message than the conversion tx")
				}
			})

			t.Run("GET RegisterL1ValidatorTx after the validator left is a 503", func(t *testing.T) {
				// Before the registration is signed below: the aggregator
				// caches signatures per message and key.
				state.set(converted, f.initial...) // validators refuse: the validation no longer exists
				vals, err := e.idx.ValidatorSet(ctx, f.subnetB, proposed)
				if err != nil {
					t.Fatal(err)
				}
				var total uint64
				for _, v := range vals {
					total += v.Weight
				}
				needed := (total*67 + 99) / 100
				code, body := e.do(t, "GET", getPath+f.registerTx, "")
				want := fmt.Sprintf("validators with weight 0 signed, %d of total weight %d needed", needed, total)
				if code != http.StatusServiceUnavailable || !strings.Contains(apitest.ErrorMessage(body), want) {
					t.Fatalf("got %d %s, want 503 with %q", code, body, want)
				}
			})

			t.Run("POST registration at the height of the RegisterL1ValidatorTx", func(t *testing.T) {
				// The validators sign as of then; the registered validator is
				// in the set at that height, and quorum 100 needs it too.
				state.set(converted, append([]ids.ID{f.registered}, f.initial...)...)
				code, body := e.do(t, "POST", postPath, jsonBody(t, map[string]any{
					"message":          registrationMessage(t, f.registered, true, 88888),
					"pChainHeight":     f.registerAt,
					"quorumPercentage": 100,
				}))
				msg, signers := e.signed(t, code, body, f.registerAt, 100)
				if signers != 3 {
					t.Fatalf("%d signers, want the 3 validators at height %d", signers, f.registerAt)
				}
				reg, ok := pPayload(t, msg).(*message.L1ValidatorRegistration)
				if !ok || !reg.Registered || reg.ValidationID != f.registered {
					t.Fatalf("payload %+v", pPayload(t, msg))
				}
			})

			tip := f.tip
			for _, tc := range []struct {
				name, method, target, body string
				status                     int
				msg                        string
			}{
				{"malformed JSON", "POST", postPath, `{"message":`, 400, "not a valid JSON object"},
				{"trailing data", "POST", postPath, `{} {}`, 400, "after the JSON object"},
				{"message and justification missing", "POST", postPath, `{}`, 400, "one of message or justification"},
				{"message not hex", "POST", postPath, `{"message":"0xzz"}`, 400, "message is not valid hex"},
				{"message not a Warp message", "POST", postPath, `{"message":"0x0102"}`, 400, "not an unsigned Warp message"},
				{"quorum over 100", "POST", postPath, `{"justification":"0x01","quorumPercentage":101}`, 400, "quorumPercentage"},
				{"quorum as string", "POST", postPath, `{"justification":"0x01","quorumPercentage":"67"}`, 400, "quorumPercentage"},
				{"quorum plus buffer", "POST", postPath, `{"justification":"0x01","quorumPercentage":60,"quorumPercentageBuffer":41}`, 400, "at most 100"},
				{"pChainHeight above the tip", "POST", postPath,
					fmt.Sprintf(`{"message":%q,"pChainHeight":%d}`, registrationMessage(t, f.registered, true, 88888), tip+1), 400, "above the indexed P-chain tip"},
				{"unknown signing subnet", "POST", postPath,
					fmt.Sprintf(`{"message":%q,"signingSubnetId":%q}`, registrationMessage(t, f.registered, true, 88888), ids.GenerateTestID()), 400, "unknown subnet"},
				{"message of another network", "POST", postPath,
					fmt.Sprintf(`{"message":%q}`, registrationMessage(t, f.registered, true, 1)), 400, "network 1"},
				{"justification naming no conversion", "POST", postPath,
					fmt.Sprintf(`{"justification":"0x%s"}`, hex.EncodeToString(mustIDBytes(t, ids.GenerateTestID().String()))), 400, "not converted"},
				{"body too large", "POST", postPath, `{"message":"` + strings.Repeat("00", 600_000) + `"}`, 400, "larger than"},
				{"network not a name", "POST", "/v1/signatureAggregator/devnet/aggregateSignatures", `{}`, 400, "network must be one of"},
				{"network not served", "POST", "/v1/signatureAggregator/mainnet/aggregateSignatures", `{}`, 404, "not indexed"},
				{"GET network not served", "GET", "/v1/signatureAggregator/mainnet/aggregateSignatures/" + f.convertTx, "", 404, "not indexed"},
				{"GET unknown tx", "GET", getPath + ids.GenerateTestID().String(), "", 404, "not found"},
				{"GET X-chain tx", "GET", getPath + f.xTx, "", 400, "not a platform-chain transaction"},
				{"GET tx without a Warp message", "GET", getPath + f.createSubnet, "", 400, "CreateSubnetTx"},
				{"GET malformed hash", "GET", getPath + "not-a-hash", "", 400, "txHash"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					code, body := e.do(t, tc.method, tc.target, tc.body)
					if code != tc.status || !strings.Contains(apitest.ErrorMessage(body), tc.msg) {
						t.Fatalf("got %d %s; want %d with %q", code, body, tc.status, tc.msg)
					}
				})
			}
		})
	}
}

func mustIDBytes(t *testing.T, s string) []byte {
	id := mustID(t, s)
	return id[:]
}

// TestNotConfigured: without an aggregator both routes answer 503, after
// the network check.
func TestNotConfigured(t *testing.T) {
	te := testenv.Devnet(t, "sqlite")
	mux := api.NewMux(quietLog())
	warpapi.Register(mux, warpapi.Deps{Network: te.Network, Log: quietLog()})
	spec := apitest.Load(t)
	for _, tc := range []struct {
		method, target string
		status         int
	}{
		{"POST", postPath, 503},
		{"GET", getPath + "2HB19HSQuuU44g1yV1DEhabukMMz518kBUmhGqYLwpThKmmDE9", 503},
		{"POST", "/v1/signatureAggregator/mainnet/aggregateSignatures", 404},
	} {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(tc.method, tc.target, strings.NewReader(`{}`)))
		if w.Code != tc.status {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.target, w.Code, w.Body, tc.status)
		}
		if err := apitest.CheckErrorBody(w.Code, w.Body.Bytes()); err != nil {
			t.Error(err)
		}
		spec.ValidateResponse(t, tc.method, tc.target, w.Code, w.Body.Bytes())
	}
}

// TestInternalError: an index that cannot answer (nothing ingested) is a
// 500 whose body tells nothing of the cause.
func TestInternalError(t *testing.T) {
	te := testenv.Devnet(t, "sqlite") // for the network only
	empty := warpindex.New(storetest.Open(t, storetest.SQLiteDSN(t)))
	agg, err := warp.New(warp.Config{NetworkID: te.Network.ID, ValidatorSets: empty, L1Txs: empty, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer agg.Close()
	mux := api.NewMux(quietLog())
	warpapi.Register(mux, warpapi.Deps{Aggregator: agg, Network: te.Network, Log: quietLog()})
	f := loadFacts(t)
	body := jsonBody(t, map[string]any{"message": registrationMessage(t, f.registered, true, 88888), "signingSubnetId": f.subnetB.String()})
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("POST", postPath, strings.NewReader(body)))
	if w.Code != 500 || strings.Contains(w.Body.String(), "indexed") {
		t.Fatalf("got %d %s", w.Code, w.Body)
	}
	if err := apitest.CheckErrorBody(500, w.Body.Bytes()); err != nil {
		t.Fatal(err)
	}
	apitest.Load(t).ValidateResponse(t, "POST", postPath, w.Code, w.Body.Bytes())
}
