package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	avajson "github.com/ava-labs/avalanchego/utils/json"
)

const (
	// maxBodySize bounds a request body (the EVM server's limit is 5 MiB).
	maxBodySize = 5 << 20
	// maxBatch is coreth's default batch-request-limit.
	maxBatch = 1000
)

// Options tunes the handler.
type Options struct {
	// Latency delays every answer, to exercise clients' timeouts and
	// concurrency.
	Latency time.Duration
	// Node selects whose answer to serve when several nodes answered the same
	// call (info.getNodeID, info.peers, ...). Default: the recording node.
	Node string
}

// NewHandler serves rec as the recorded node, see NewHandlerWithOptions.
func NewHandler(rec *Recording) http.Handler {
	return NewHandlerWithOptions(rec, Options{})
}

// NewHandlerWithOptions serves rec as an avalanchego node on the node's own
// paths: POST /ext/info, /ext/bc/P, /ext/bc/X, /ext/bc/C/rpc, /ext/bc/C/avax,
// their aliases (/ext/P, /ext/bc/platform, /ext/X, /ext/bc/avm, /ext/C/rpc,
// /ext/bc/evm/rpc, ...; avalanchego's own platformvm client uses /ext/P) and
// /ext/bc/<blockchainID>[/rpc|/avax] for the IDs in network.json.
//
// A call is answered with the recorded answer of the same (method, canonical
// params), byte for byte except for the echoed request id. Calls without a
// recorded answer get the node's own answer where it follows from the request
// alone (parse errors, invalid requests, unknown methods, undecodable
// arguments of the platform/avm/info APIs), otherwise a JSON-RPC error -32000
// "replay: no recorded answer for <method> <params>".
//
// Unlike the node, the handler does not check the request's Content-Type and
// accepts a trailing slash on paths.
func NewHandlerWithOptions(rec *Recording, opts Options) http.Handler {
	if rec == nil {
		return http.NotFoundHandler()
	}
	h := &handler{rec: rec, opts: opts, routes: make(map[string]*family)}
	if h.opts.Node == "" {
		h.opts.Node = rec.Network.RecordingNode
	}
	// avalanchego serves each primary-network chain under its ID and under
	// aliases (genesis.Aliases): /ext/bc/<ID>, /ext/bc/P, /ext/P,
	// /ext/bc/platform, /ext/platform, and likewise X/avm and C/evm.
	h.routes["/ext/info"] = rec.families["/ext/info"]
	chains := []struct {
		alias    string
		names    []string
		subs     []string
		familyOf func(sub string) *family
	}{
		{"P", []string{"P", "platform"}, []string{""}, func(string) *family { return rec.families["/ext/bc/P"] }},
		{"X", []string{"X", "avm"}, []string{""}, func(string) *family { return rec.families["/ext/bc/X"] }},
		{"C", []string{"C", "evm"}, []string{"/rpc", "/avax"}, func(sub string) *family { return rec.families["/ext/bc/C"+sub] }},
	}
	// Further EVM chains the node tracks (L1s): their blockchain ID only.
	for _, p := range rec.EVMChains() {
		h.routes[p] = rec.families[p]
	}
	// The index API is there when the node ran with --index-enabled: when
	// the recording has it.
	for _, p := range indexPaths {
		if f := rec.families[p]; f.index != nil {
			h.routes[p] = f
		}
	}
	for _, c := range chains {
		var prefixes []string
		for _, n := range c.names {
			prefixes = append(prefixes, "/ext/bc/"+n, "/ext/"+n)
		}
		if id := rec.Network.BlockchainIDs[c.alias]; id != "" {
			prefixes = append(prefixes, "/ext/bc/"+id)
		}
		for _, p := range prefixes {
			for _, sub := range c.subs {
				h.routes[p+sub] = c.familyOf(sub)
			}
		}
	}
	return h
}

type handler struct {
	rec    *Recording
	opts   Options
	routes map[string]*family
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := h.routes[r.URL.Path]
	if f == nil {
		f = h.routes[strings.TrimSuffix(r.URL.Path, "/")]
	}
	if f == nil {
		http.NotFound(w, r)
		return
	}
	if h.opts.Latency > 0 {
		t := time.NewTimer(h.opts.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if f.kind == evmFamily {
		h.serveEVM(w, r, f)
		return
	}
	h.serveAvalanche(w, r, f)
}

// pick returns the recorded exchange answering key, preferring the selected
// node, then the recording node.
func (h *handler) pick(key string) *Exchange {
	idx := h.rec.index[key]
	if len(idx) == 0 {
		return nil
	}
	for _, node := range []string{h.opts.Node, h.rec.Network.RecordingNode} {
		for _, i := range idx {
			if h.rec.Exchanges[i].Node == node {
				return &h.rec.Exchanges[i]
			}
		}
	}
	return &h.rec.Exchanges[idx[0]]
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodySize))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, fmt.Sprintf("content length too large (>%d)", maxBodySize), http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "reading request body: "+err.Error(), http.StatusBadRequest)
		}
		return nil, false
	}
	return body, true
}

// compactID renders a request id as the node's JSON encoder writes it.
func compactID(id json.RawMessage) json.RawMessage {
	b, err := json.Marshal(id)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

func noRecording(method string, params json.RawMessage) string {
	p := "null"
	if len(params) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, params); err == nil {
			p = buf.String()
		}
	}
	return fmt.Sprintf("replay: no recorded answer for %s %s", method, p)
}

// errInvalidArg is avalanchego's answer to arguments its codec cannot decode
// (utils/json errInvalidArg, unexported there).
var errInvalidArg = errors.New("couldn't unmarshal an argument. Ensure arguments are valid and properly formatted. See documentation for example calls")

// avalancheRequest is what gorilla/rpc json2 decodes from a request.
type avalancheRequest struct {
	Version string           `json:"jsonrpc"`
	Method  string           `json:"method"`
	Params  *json.RawMessage `json:"params"`
	ID      *json.RawMessage `json:"id"`
}

// serveAvalanche answers like an avalanchego gorilla/rpc endpoint. Errors the
// node derives from the request alone are written by avalanchego's own codec
// so they match the node byte for byte.
func (h *handler) serveAvalanche(w http.ResponseWriter, r *http.Request, f *family) {
	if r.Method != http.MethodPost {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusMethodNotAllowed)
		fmt.Fprint(w, "rpc: POST method required, received "+r.Method)
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	cr := avajson.NewCodec().NewRequest(r2)
	method, err := cr.Method() // parse error, bad version, capitalised method
	if err != nil {
		cr.WriteError(w, http.StatusBadRequest, err)
		return
	}
	var req avalancheRequest
	if err := json.Unmarshal(body, &req); err != nil {
		// The codec accepted the body, so this cannot happen; answer as a
		// parse error all the same.
		cr.WriteError(w, http.StatusBadRequest, err)
		return
	}
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	if e := h.pick(f.key(req.Method, params)); e != nil {
		if req.ID == nil {
			return // a notification: gorilla writes nothing
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(e.HTTPStatus)
		_, _ = w.Write(e.ResponseWithID(compactID(*req.ID)))
		_, _ = w.Write([]byte("\n"))
		return
	}
	t, errMsg := f.lookup(method)
	if errMsg != "" {
		cr.WriteError(w, http.StatusBadRequest, errors.New(errMsg))
		return
	}
	if t != nil {
		args, err := decodeGorillaArgs(params, t)
		if err != nil {
			cr.WriteError(w, http.StatusBadRequest, errInvalidArg)
			return
		}
		if f.index != nil && req.ID != nil {
			if result, errMsg, ok := f.index.answer(args.Interface()); ok {
				if errMsg != "" {
					cr.WriteError(w, http.StatusOK, errors.New(errMsg))
				} else {
					cr.WriteResponse(w, result)
				}
				return
			}
		}
	}
	cr.WriteError(w, http.StatusBadRequest, errors.New(noRecording(req.Method, params)))
}

// evmMessage mirrors go-ethereum's rpc jsonrpcMessage, so that decoding
// quirks (partial decoding of ill-typed members, "id":null) and the encoded
// field order are the EVM node's.
type evmMessage struct {
	Version string          `json:"jsonrpc,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Error   *evmError       `json:"error,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
}

type evmError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (m *evmMessage) hasValidID() bool {
	return len(m.ID) > 0 && m.ID[0] != '{' && m.ID[0] != '['
}

func evmErrorMessage(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(&evmMessage{Version: "2.0", ID: id, Error: &evmError{Code: code, Message: msg}})
	if err != nil {
		// Only an invalid id could fail to encode; answer without it.
		b, _ = json.Marshal(&evmMessage{Version: "2.0", ID: json.RawMessage("null"), Error: &evmError{Code: code, Message: msg}})
	}
	return b
}

// serveEVM answers like the go-ethereum rpc HTTP server of coreth.
func (h *handler) serveEVM(w http.ResponseWriter, r *http.Request, f *family) {
	if r.Method == http.MethodGet && r.ContentLength == 0 && r.URL.RawQuery == "" {
		w.WriteHeader(http.StatusOK) // health check
		return
	}
	if r.Method == http.MethodPut || r.Method == http.MethodDelete {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	dec := json.NewDecoder(bytes.NewReader(body))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if !errors.Is(err, io.EOF) {
			writeLine(w, evmErrorMessage(nil, -32700, "parse error"))
		}
		return
	}
	if !isBatch(raw) {
		msg := new(evmMessage)
		_ = json.Unmarshal(raw, msg) // like go-ethereum: keep what decoded
		if resp := h.evmCall(f, msg); resp != nil {
			writeLine(w, resp)
		}
		return
	}
	bdec := json.NewDecoder(bytes.NewReader(raw))
	_, _ = bdec.Token() // '['
	var msgs []*evmMessage
	for bdec.More() {
		msg := new(evmMessage)
		if err := bdec.Decode(&msg); err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				break // cannot happen: raw was syntax-checked
			}
		}
		if msg == nil { // a null element
			msg = new(evmMessage)
		}
		msgs = append(msgs, msg)
	}
	switch {
	case len(msgs) == 0:
		writeLine(w, evmErrorMessage(nil, -32600, "empty batch"))
		return
	case len(msgs) > maxBatch:
		var id json.RawMessage
		for _, m := range msgs {
			if m.Version == "2.0" && m.hasValidID() && m.Method != "" {
				id = m.ID
				break
			}
		}
		writeLine(w, append(append([]byte("["), evmErrorMessage(id, -32600, "batch too large")...), ']'))
		return
	}
	var out [][]byte
	for _, m := range msgs {
		if resp := h.evmCall(f, m); resp != nil {
			out = append(out, resp)
		}
	}
	if len(out) == 0 {
		return // only notifications
	}
	writeLine(w, append(append([]byte("["), bytes.Join(out, []byte(","))...), ']'))
}

func isBatch(raw json.RawMessage) bool {
	for _, c := range raw {
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			continue
		}
		return c == '['
	}
	return false
}

func writeLine(w io.Writer, b []byte) {
	_, _ = w.Write(b)
	_, _ = w.Write([]byte("\n"))
}

// evmCall answers one message; nil for notifications.
func (h *handler) evmCall(f *family, msg *evmMessage) []byte {
	valid := msg.Version == "2.0"
	switch {
	case valid && msg.ID == nil && msg.Method != "":
		return nil // notification: executed, never answered
	case valid && msg.hasValidID() && msg.Method != "":
	case msg.hasValidID():
		return evmErrorMessage(compactID(msg.ID), -32600, "invalid request")
	default:
		return evmErrorMessage(nil, -32600, "invalid request")
	}
	id := compactID(msg.ID)
	if e := h.pick(f.key(msg.Method, msg.Params)); e != nil {
		return e.ResponseWithID(id)
	}
	switch {
	case strings.HasSuffix(msg.Method, "_subscribe"):
		return evmErrorMessage(id, -32601, "notifications not supported")
	case !f.evmMethods[msg.Method]:
		return evmErrorMessage(id, -32601, fmt.Sprintf("the method %s does not exist/is not available", msg.Method))
	}
	if v, ok := decodeValue(msg.Params); ok && v != nil {
		if _, isArr := v.([]any); !isArr {
			return evmErrorMessage(id, -32602, "non-array args")
		}
	}
	return evmErrorMessage(id, -32000, noRecording(msg.Method, msg.Params))
}
