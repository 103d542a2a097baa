package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/replay"
)

// fault answers one request instead of (or by distorting) the replay node.
type fault func(w http.ResponseWriter, r *http.Request, body []byte, next http.Handler)

// flaky serves its faults one per request, in order, then passes requests
// through to the replay node unchanged.
type flaky struct {
	next     http.Handler
	mu       sync.Mutex
	faults   []fault
	requests atomic.Int64
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	body := new(bytes.Buffer)
	if _, err := body.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	var ft fault
	if len(f.faults) > 0 {
		ft, f.faults = f.faults[0], f.faults[1:]
	}
	f.mu.Unlock()
	if ft == nil {
		f.next.ServeHTTP(w, withBody(r, body.Bytes()))
		return
	}
	ft(w, r, body.Bytes(), f.next)
}

func (f *flaky) left() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.faults)
}

func withBody(r *http.Request, b []byte) *http.Request {
	r2 := r.Clone(r.Context())
	r2.Body = httpBody(b)
	r2.ContentLength = int64(len(b))
	return r2
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func httpBody(b []byte) readCloser { return readCloser{bytes.NewReader(b)} }

func status(code int) fault {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte, _ http.Handler) {
		http.Error(w, "induced failure", code)
	}
}

func reply(body string) fault {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte, _ http.Handler) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}
}

func dropConnection(w http.ResponseWriter, _ *http.Request, _ []byte, _ http.Handler) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("no hijacker")
	}
	conn, _, err := hj.Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// hang answers only when the client gives up.
func hang(w http.ResponseWriter, r *http.Request, _ []byte, _ http.Handler) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

// rewriteRequest asks the node something else than the client did.
func rewriteRequest(old, new string) fault {
	return func(w http.ResponseWriter, r *http.Request, body []byte, next http.Handler) {
		next.ServeHTTP(w, withBody(r, bytes.ReplaceAll(body, []byte(old), []byte(new))))
	}
}

// rewriteResponse distorts the node's answer.
func rewriteResponse(edit func([]byte) []byte) fault {
	return func(w http.ResponseWriter, r *http.Request, body []byte, next http.Handler) {
		rr := httptest.NewRecorder()
		next.ServeHTTP(rr, withBody(r, body))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rr.Code)
		_, _ = w.Write(edit(rr.Body.Bytes()))
	}
}

// editBatch applies edit to the decoded batch answer.
func editBatch(edit func([]map[string]json.RawMessage) []map[string]json.RawMessage) fault {
	return rewriteResponse(func(b []byte) []byte {
		var msgs []map[string]json.RawMessage
		if err := json.Unmarshal(b, &msgs); err != nil {
			panic(err)
		}
		out, err := json.Marshal(edit(msgs))
		if err != nil {
			panic(err)
		}
		return out
	})
}

func retryLines(t *testing.T, logs *logBuffer) []string {
	t.Helper()
	lines := logs.lines()
	for _, l := range lines {
		if !strings.Contains(l, "source: retrying call") || !strings.Contains(l, "method=") ||
			!strings.Contains(l, "attempt=") || !strings.Contains(l, "error=") {
			t.Fatalf("retry log line lacks method/attempt/error: %s", l)
		}
	}
	return lines
}

func TestAvalancheRecoversFromFlakyNode(t *testing.T) {
	rec, nw := fixture(t)
	const h = 5
	tests := []struct {
		name   string
		faults []fault
	}{
		{"500", []fault{status(500)}},
		{"502 503 504", []fault{status(502), status(503), status(504)}},
		{"429", []fault{status(429)}},
		{"malformed JSON", []fault{reply(`{"jsonrpc":"2.0","result":{"block":`)}},
		{"not JSON", []fault{reply(`<html>gateway</html>`)}},
		{"empty body", []fault{reply(``)}},
		{"no result", []fault{reply(`{"jsonrpc":"2.0","id":1}`)}},
		{"result not an object", []fault{reply(`{"jsonrpc":"2.0","result":[1],"id":1}`)}},
		{"dropped connection", []fault{dropConnection}},
		{"hung attempt", []fault{hang}},
		{"wrong height", []fault{rewriteRequest(`"height":"5"`, `"height":"6"`)}},
		{"bad checksum", []fault{rewriteResponse(func(b []byte) []byte {
			i := bytes.Index(b, []byte(`","encoding"`))
			out := append([]byte{}, b...)
			out[i-1] ^= 1 // flip a bit of the last checksum digit
			return out
		})}},
		{"wrong encoding", []fault{rewriteResponse(func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"encoding":"hex"`), []byte(`"encoding":"hexnc"`), 1)
		})}},
		{"everything", []fault{status(500), reply(`{`), dropConnection, rewriteRequest(`"height":"5"`, `"height":"4"`), status(429)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fl := &flaky{next: replay.NewHandler(rec), faults: tt.faults}
			logs := &logBuffer{}
			r := fastRetry(logs)
			r.AttemptTimeout = 300 * time.Millisecond
			a, err := NewAvalanche(serve(t, fl), r)
			if err != nil {
				t.Fatal(err)
			}
			b, err := a.PBlockByHeight(testCtx(t), h)
			if err != nil {
				t.Fatalf("PBlockByHeight: %v", err)
			}
			if got := cb58ID(b); got != nw.PBlocks[h].BlockID {
				t.Fatalf("block ID %s, want %s", got, nw.PBlocks[h].BlockID)
			}
			if fl.left() != 0 {
				t.Fatalf("%d faults not served", fl.left())
			}
			if n := fl.requests.Load(); n != int64(len(tt.faults)+1) {
				t.Fatalf("%d requests, want %d", n, len(tt.faults)+1)
			}
			if lines := retryLines(t, logs); len(lines) != len(tt.faults) {
				t.Fatalf("%d retry log lines, want %d:\n%s", len(lines), len(tt.faults), strings.Join(lines, "\n"))
			}
		})
	}
}

func TestEVMRecoversFromFlakyNode(t *testing.T) {
	rec, _ := fixture(t)
	// Traces off: the faults below edit the batch by position, two calls a
	// height (block, receipts); trace fetching is TestBlocksTraces'.
	clean, err := NewEVM(context.Background(), serve(t, replay.NewHandler(rec))+PathCRPC, EVMOptions{Retry: fastRetry(nil), Traces: TracesOff})
	if err != nil {
		t.Fatal(err)
	}
	defer clean.Close()
	const from, to = 3, 9
	want, err := clean.Blocks(testCtx(t), from, to)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		faults []fault
	}{
		{"500", []fault{status(500)}},
		{"429 then 503", []fault{status(429), status(503)}},
		{"malformed JSON", []fault{reply(`[{"jsonrpc":"2.0","id":1,"result":`)}},
		{"not JSON", []fault{reply(`<html>bad gateway</html>`)}},
		{"object instead of batch", []fault{reply(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}`)}},
		{"dropped connection", []fault{dropConnection}},
		{"hung attempt", []fault{hang}},
		{"wrong height", []fault{rewriteRequest(`["0x4",true]`, `["0x5",true]`)}},
		{"receipts of another block", []fault{rewriteRequest(`["0x5"]`, `["0x6"]`)}},
		{"receipt count mismatch", []fault{rewriteRequest(`["0x5"]`, `["0x1"]`)}},
		{"missing element", []fault{editBatch(func(m []map[string]json.RawMessage) []map[string]json.RawMessage { return m[1:] })}},
		{"null block (lagging backend)", []fault{editBatch(func(m []map[string]json.RawMessage) []map[string]json.RawMessage {
			m[2]["result"] = json.RawMessage("null")
			return m
		})}},
		{"null receipts", []fault{editBatch(func(m []map[string]json.RawMessage) []map[string]json.RawMessage {
			m[3]["result"] = json.RawMessage("null")
			return m
		})}},
		{"block without number", []fault{editBatch(func(m []map[string]json.RawMessage) []map[string]json.RawMessage {
			m[0]["result"] = json.RawMessage(`{"hash":"0x01"}`)
			return m
		})}},
		{"everything", []fault{status(500), dropConnection, rewriteRequest(`["0x3",true]`, `["0x4",true]`), reply(`[`), status(502)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fl := &flaky{next: replay.NewHandler(rec), faults: tt.faults}
			logs := &logBuffer{}
			r := fastRetry(logs)
			r.AttemptTimeout = 300 * time.Millisecond
			// One batch, so the faults hit it in order.
			e, err := NewEVM(context.Background(), serve(t, fl)+PathCRPC, EVMOptions{Retry: r, BatchSize: to - from + 1, Concurrency: 1, Traces: TracesOff})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			got, err := e.Blocks(testCtx(t), from, to)
			if err != nil {
				t.Fatalf("Blocks: %v", err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d blocks", len(got))
			}
			for i := range got {
				if got[i].Height != want[i].Height || got[i].Hash != want[i].Hash ||
					!bytes.Equal(got[i].Block, want[i].Block) || !bytes.Equal(got[i].Receipts, want[i].Receipts) {
					t.Fatalf("block %d differs", got[i].Height)
				}
			}
			if fl.left() != 0 {
				t.Fatalf("%d faults not served", fl.left())
			}
			if n := fl.requests.Load(); n != int64(len(tt.faults)+1) {
				t.Fatalf("%d requests, want %d", n, len(tt.faults)+1)
			}
			if lines := retryLines(t, logs); len(lines) != len(tt.faults) {
				t.Fatalf("%d retry log lines, want %d:\n%s", len(lines), len(tt.faults), strings.Join(lines, "\n"))
			}
		})
	}
}

// TestPermanentFailure: a node that never recovers makes the call fail when
// the context ends, with both the context's error and the last failure.
func TestPermanentFailure(t *testing.T) {
	rec, _ := fixture(t)
	always := func(f fault) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body := new(bytes.Buffer)
			_, _ = body.ReadFrom(r.Body)
			f(w, r, body.Bytes(), replay.NewHandler(rec))
		})
	}
	type call func(ctx context.Context, base string, r Retry) error
	pBlock := func(ctx context.Context, base string, r Retry) error {
		a, err := NewAvalanche(base, r)
		if err != nil {
			return err
		}
		_, err = a.PBlockByHeight(ctx, 3)
		return err
	}
	evmBlocks := func(ctx context.Context, base string, r Retry) error {
		e, err := NewEVM(ctx, base+PathCRPC, EVMOptions{Retry: r, Traces: TracesOff})
		if err != nil {
			return err
		}
		defer e.Close()
		_, err = e.Blocks(ctx, 0, 3)
		return err
	}
	tests := []struct {
		name        string
		handler     http.Handler
		call        call
		maxAttempts int
		wantStatus  int  // HTTPError status in the chain (0: none)
		wantCtxErr  bool // context.DeadlineExceeded in the chain
		minRequests int64
		maxRequests int64
	}{
		{"avalanche 500 until deadline", always(status(500)), pBlock, 0, 500, true, 3, 1 << 20},
		{"evm 500 until deadline", always(status(500)), evmBlocks, 0, 500, true, 3, 1 << 20},
		// Wrong answers are given up on after MaxBadAnswers, before the deadline.
		{"avalanche malformed until bad-answer bound", always(reply(`{`)), pBlock, 0, 0, false, defaultMaxBadAnswers, defaultMaxBadAnswers},
		{"evm wrong height until bad-answer bound", always(rewriteRequest(`["0x1",true]`, `["0x2",true]`)), evmBlocks, 0, 0, false, defaultMaxBadAnswers, defaultMaxBadAnswers},
		{"avalanche hangs", always(hang), pBlock, 0, 0, true, 1, 1 << 20},
		{"avalanche 404 is not retried", always(status(404)), pBlock, 0, 404, false, 1, 1},
		{"evm 400 is not retried", always(status(400)), evmBlocks, 0, 400, false, 1, 1},
		{"evm 503 with max attempts", always(status(503)), evmBlocks, 3, 503, false, 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cnt := &counter{h: tt.handler}
			base := serve(t, cnt)
			logs := &logBuffer{}
			r := fastRetry(logs)
			r.MaxAttempts = tt.maxAttempts
			r.AttemptTimeout = 100 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := tt.call(ctx, base, r)
			if err == nil {
				t.Fatal("no error")
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("took %v", d)
			}
			if got := errors.Is(err, context.DeadlineExceeded); got != tt.wantCtxErr {
				t.Fatalf("DeadlineExceeded in chain = %v: %v", got, err)
			}
			var he *HTTPError
			if tt.wantStatus != 0 && (!errors.As(err, &he) || he.StatusCode != tt.wantStatus) {
				t.Fatalf("want HTTP %d in chain: %v", tt.wantStatus, err)
			}
			if n := cnt.n.Load(); n < tt.minRequests || n > tt.maxRequests {
				t.Fatalf("%d requests, want %d..%d", n, tt.minRequests, tt.maxRequests)
			}
			if lines := retryLines(t, logs); int64(len(lines)) != cnt.n.Load()-1 && tt.wantCtxErr == false {
				t.Fatalf("%d retry lines for %d requests", len(lines), cnt.n.Load())
			}
		})
	}
}
