package api

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// TestPreRoutingErrorShapes (issue #19): what net/http answers itself, before
// any handler (a bad percent-escape: 400; headers over the limit: 431;
// text/plain until now), answers an ErrorBody on REST paths and a JSON-RPC
// error object on JSON-RPC paths, on a real server (Guard.Serve). Ordinary
// requests on the same keep-alive connection are untouched.
func TestPreRoutingErrorShapes(t *testing.T) {
	db := storetest.Open(t, storetest.SQLiteDSN(t))
	cfg := testLimits()
	cfg.MaxHeaderBytes = 2048
	g := NewGuard(db, cfg, slog.New(slog.DiscardHandler))
	m := NewMux(slog.New(slog.DiscardHandler))
	g.Install(m)
	m.HandleGuarded("GET /v1/small", RouteOpts{Weight: Free}, MessageString, func(*http.Request) (any, error) { return map[string]any{"ok": true}, nil })
	m.HandleMetered("/ext/bc/P", RouteOpts{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "rpc") }))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, NewHTTPServerLimits("", m, cfg), l) }()
	t.Cleanup(func() { cancel(); <-done })
	addr := l.Addr().String()

	big := "X-Big: " + strings.Repeat("b", 8000) + "\r\n"
	const restShape = `{"error":"Bad Request","message":"the request is malformed (request line, percent-escapes in the URL, or headers)","statusCode":400}`
	const rpc400 = `{"jsonrpc":"2.0","error":{"code":-32000,"message":"the request is malformed (request line, percent-escapes in the URL, or headers)"},"id":null}`
	for _, c := range []struct {
		name, raw string
		status    int
		body      string
	}{
		{"bad escape, REST", "GET /v1/%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400, restShape},
		{"bad escape, JSON-RPC", "POST /ext/bc/P/%zz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 400, rpc400},
		{"headers over the limit, REST", "GET /v1/small HTTP/1.1\r\nHost: x\r\n" + big + "\r\n", 431,
			`{"error":"Request Header Fields Too Large","message":"the request's headers are over 2048 bytes","statusCode":431}`},
		{"headers over the limit, JSON-RPC", "POST /ext/bc/P HTTP/1.1\r\nHost: x\r\n" + big + "\r\n", 431,
			`{"jsonrpc":"2.0","error":{"code":-32000,"message":"the request's headers are over 2048 bytes"},"id":null}`},
		{"GET *", "GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400, `{"error":"Bad Request","message":"GET * is not a request this server answers","statusCode":400}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := rawRequest(t, addr, c.raw)
			if resp.StatusCode != c.status || strings.TrimSpace(body) != c.body || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
				t.Errorf("%d %q %s\nwant %d %s", resp.StatusCode, resp.Header.Get("Content-Type"), body, c.status, c.body)
			}
		})
	}
	// Two ordinary requests on one connection.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(conn)
	for i := range 2 {
		io.WriteString(conn, "GET /v1/small HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != `{"ok":true}` {
			t.Errorf("request %d: %d %s", i, resp.StatusCode, b)
		}
	}
}

func rawRequest(t *testing.T, addr, raw string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}
