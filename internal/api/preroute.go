package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// net/http answers some malformed requests itself, before any handler runs,
// with a fixed text/plain response written straight to the connection: a
// request line it cannot parse (a bad percent-escape in the path, say) is a
// 400, a header block over MaxHeaderBytes a 431. Issue #19 wants every answer
// in its route's shape, so the connections Guard.Serve accepts are wrapped:
// they keep the start of the request being read, and a write that is
// exactly net/http's fixed error response is replaced by the same status as
// an ErrorBody, or as a JSON-RPC error object when the request line names a
// JSON-RPC path (Mux.HandleMetered). Responses of handlers always carry a
// Date header, so they cannot be mistaken for it.

// serverErrorHeaders follows the status line of net/http's own error
// responses (net/http.conn.serve's errorHeaders).
const serverErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// maxRecordedHead bounds what a connection keeps of a request: enough for
// the request line (MaxURLBytes is 8 KiB by default).
const maxRecordedHead = 16 << 10

type shapedListener struct {
	net.Listener
	g *Guard
}

func (l shapedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &shapedConn{Conn: c, g: l.g}, nil
}

type shapedConn struct {
	net.Conn
	g    *Guard
	mu   sync.Mutex
	head []byte // the current request's first bytes
}

func (c *shapedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if room := maxRecordedHead - len(c.head); room > 0 {
			c.head = append(c.head, p[:min(n, room)]...)
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *shapedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	head := c.head
	c.head = nil // a response: what is read next is the next request
	c.mu.Unlock()
	status, detail, ok := parseServerError(p)
	if !ok {
		return c.Conn.Write(p)
	}
	method, path := requestLine(head)
	if _, err := c.Conn.Write(c.g.preRoutingResponse(method, path, status, detail)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// parseServerError recognises net/http's fixed error response:
// "HTTP/1.1 400 Bad Request" + serverErrorHeaders + "400 Bad Request[: detail]".
func parseServerError(p []byte) (status int, detail string, ok bool) {
	rest, found := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !found {
		return 0, "", false
	}
	line, body, found := bytes.Cut(rest, []byte(serverErrorHeaders))
	if !found || bytes.ContainsAny(line, "\r\n") || len(line) < 4 {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(line[:3]))
	if err != nil || status < 400 || status > 599 {
		return 0, "", false
	}
	_, detail, _ = strings.Cut(string(body), ": ")
	return status, detail, true
}

// requestLine reads the method and the raw path of a request's first line
// ("" when it cannot).
func requestLine(head []byte) (method, path string) {
	line, _, _ := bytes.Cut(head, []byte("\n"))
	parts := strings.Fields(string(line))
	if len(parts) < 2 {
		return "", ""
	}
	path, _, _ = strings.Cut(parts[1], "?")
	return parts[0], path
}

// preRoutingResponse is the whole HTTP response replacing net/http's own.
func (g *Guard) preRoutingResponse(method, path string, status int, detail string) []byte {
	var msg string
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		msg = fmt.Sprintf("the request's headers are over %d bytes", g.cfg.MaxHeaderBytes)
	case http.StatusBadRequest:
		msg = "the request is malformed (request line, percent-escapes in the URL, or headers)"
	default:
		msg = http.StatusText(status)
	}
	if detail != "" {
		msg += ": " + detail
	}
	var body []byte
	if g.isJSONRPC(path) {
		body = jsonRPCErrorBody(msg)
	} else {
		body, _ = json.Marshal(errorBody(status, MessageString, []string{msg}))
		body = append(body, '\n')
	}
	if g.obs != nil {
		g.obs.Request("(malformed)", method, status, 0)
	}
	g.log.Info("request", "method", method, "route", "(malformed)", "status", status, "duration_ms", 0, "key_id", "", "request_id", "")
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

// isJSONRPC says whether path is a JSON-RPC route of a router the guard is
// installed on.
func (g *Guard) isJSONRPC(path string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, m := range g.muxes {
		if m.isJSONRPC(path) {
			return true
		}
	}
	return false
}
