package platform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/gorilla/rpc/v2"
	"github.com/gorilla/rpc/v2/json2"

	avajson "github.com/ava-labs/avalanchego/utils/json"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// handler wraps the gorilla server (the node's envelope) with what the node
// lacks: batches, size limits, panic safety and optional proxying.
type handler struct {
	rpc      *rpc.Server
	codec    rpc.Codec
	up       *upstream
	proxy    bool
	maxBody  int64
	maxBatch int
	log      *slog.Logger
}

func newEnvelope(deps Deps, svc *Service, up *upstream) (*handler, error) {
	srv := rpc.NewServer()
	codec := avajson.NewCodec()
	// As platformvm.VM.CreateHandlers registers them: with two codecs a
	// request without Content-Type is refused (415), as by the node.
	srv.RegisterCodec(codec, "application/json")
	srv.RegisterCodec(codec, "application/json;charset=UTF-8")
	if err := srv.RegisterService(svc, "platform"); err != nil {
		return nil, fmt.Errorf("platform: register service: %w", err)
	}
	return &handler{
		rpc:      srv,
		codec:    codec,
		up:       up,
		proxy:    deps.ProxyUnknown,
		maxBody:  deps.MaxBodyBytes,
		maxBatch: deps.MaxBatch,
		log:      deps.Log,
	}, nil
}

// response is gorilla json2's serverResponse (same members, same order).
type response struct {
	Version string           `json:"jsonrpc"`
	Result  any              `json:"result,omitempty"`
	Error   *json2.Error     `json:"error,omitempty"`
	ID      *json.RawMessage `json:"id"`
}

func errorBody(code json2.ErrorCode, msg string, id *json.RawMessage) []byte {
	b, err := json.Marshal(&response{Version: "2.0", Error: &json2.Error{Code: code, Message: msg}, ID: id})
	if err != nil {
		// Only an id that is not valid JSON could fail; answer without it.
		b, _ = json.Marshal(&response{Version: "2.0", Error: &json2.Error{Code: code, Message: msg}})
	}
	return append(b, '\n')
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		if h.metered(w, r, 1) {
			h.rpc.ServeHTTP(w, r) // gorilla's 405, as the node answers
		}
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		if !h.metered(w, r, 1) {
			return
		}
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeBody(w, http.StatusRequestEntityTooLarge, errorBody(json2.E_INVALID_REQ,
				fmt.Sprintf("request body too large (limit %d bytes)", tooLarge.Limit), nil))
			return
		}
		writeBody(w, http.StatusBadRequest, errorBody(json2.E_PARSE, "reading request body: "+err.Error(), nil))
		return
	}
	if !h.acceptsContentType(r) || !isBatch(body) {
		if !h.metered(w, r, 1) {
			return
		}
		out := h.dispatch(r, body)
		out.write(w)
		return
	}
	h.serveBatch(w, r, body)
}

// metered charges calls to the caller's rate-limit budget (api.Meter: the
// data service's budgets and headers, when mounted on an api.Mux with a
// guard) and, when refused, answers the JSON-RPC error; it reports whether
// to go on.
func (h *handler) metered(w http.ResponseWriter, r *http.Request, calls int) bool {
	if e := api.Meter(w, r, calls); e != nil {
		api.WriteJSONRPCError(w, e)
		return false
	}
	return true
}

// acceptsContentType mirrors gorilla's codec choice.
func (h *handler) acceptsContentType(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.ToLower(ct) == "application/json"
}

func isBatch(body []byte) bool {
	for _, c := range body {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '['
	}
	return false
}

// serveBatch answers a JSON array of calls with the array of their answers
// (notifications and calls gorilla does not answer contribute nothing; an
// empty answer array is not sent, as JSON-RPC 2.0 requires).
func (h *handler) serveBatch(w http.ResponseWriter, r *http.Request, body []byte) {
	var elems []json.RawMessage
	err := json.Unmarshal(body, &elems)
	// Each call of a batch is charged, before any runs (issue #19).
	if !h.metered(w, r, len(elems)) {
		return
	}
	if err != nil {
		// Not JSON: the node's own parse error.
		h.dispatch(r, body).write(w)
		return
	}
	switch {
	case len(elems) == 0:
		writeBody(w, http.StatusOK, errorBody(json2.E_INVALID_REQ, "empty batch", nil))
		return
	case len(elems) > h.maxBatch:
		writeBody(w, http.StatusOK, errorBody(json2.E_INVALID_REQ,
			fmt.Sprintf("batch too large (%d calls, limit %d)", len(elems), h.maxBatch), nil))
		return
	}
	var (
		parts [][]byte
		size  int
	)
	for _, e := range elems {
		if size > maxBatchResponseBytes {
			if id := requestID(e); id != nil {
				parts = append(parts, bytes.TrimSpace(errorBody(json2.E_SERVER, "batch response too large", id)))
			}
			continue
		}
		out := h.dispatch(r, e)
		if b := bytes.TrimSpace(out.body.Bytes()); len(b) > 0 {
			parts = append(parts, b)
			size += len(b)
		}
	}
	if len(parts) == 0 {
		w.WriteHeader(http.StatusOK)
		return
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	buf.Write(bytes.Join(parts, []byte(",")))
	buf.WriteString("]\n")
	writeBody(w, http.StatusOK, buf.Bytes())
}

// requestID extracts a call's id (nil when absent, null or unreadable).
func requestID(body []byte) *json.RawMessage {
	var req struct {
		ID *json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.ID == nil || string(*req.ID) == "null" {
		return nil
	}
	return req.ID
}

// buffered is one dispatched call's answer.
type buffered struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *buffered) Header() http.Header { return b.header }
func (b *buffered) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
func (b *buffered) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *buffered) write(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	if b.status == 0 {
		b.status = http.StatusOK
	}
	w.WriteHeader(b.status)
	_, _ = w.Write(b.body.Bytes())
}

// dispatch runs one call through gorilla (or the upstream, for a method
// this service lacks when proxying is on) into a buffer; a panic becomes a
// JSON-RPC error instead of a broken connection.
func (h *handler) dispatch(r *http.Request, body []byte) (out *buffered) {
	out = &buffered{header: http.Header{}}
	defer func() {
		if v := recover(); v != nil {
			h.log.Error("platform: panic serving call", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			out = &buffered{header: http.Header{}}
			if id := requestID(body); id != nil {
				b := errorBody(json2.E_SERVER, "internal error", id)
				out.header.Set("Content-Type", "application/json; charset=utf-8")
				out.status = http.StatusOK
				out.body.Write(b)
			}
		}
	}()
	if h.proxy && h.acceptsContentType(r) {
		if ans, ok := h.proxied(r, body); ok {
			out.header.Set("Content-Type", "application/json; charset=utf-8")
			out.status = http.StatusOK
			out.body.Write(ans)
			return out
		}
	}
	h.rpc.ServeHTTP(out, cloneWithBody(r, body))
	return out
}

// proxied forwards a well-formed call of a method this service does not
// serve to the upstream node.
func (h *handler) proxied(r *http.Request, body []byte) ([]byte, bool) {
	method, err := h.codec.NewRequest(cloneWithBody(r, body)).Method()
	if err != nil || h.rpc.HasMethod(method) || !strings.HasPrefix(method, "platform.") {
		return nil, false
	}
	return h.up.proxy(r.Context(), body)
}

func cloneWithBody(r *http.Request, body []byte) *http.Request {
	c := r.Clone(r.Context())
	c.Body = io.NopCloser(bytes.NewReader(body))
	c.ContentLength = int64(len(body))
	return c
}
