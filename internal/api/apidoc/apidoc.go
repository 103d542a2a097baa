// Package apidoc serves the server's own OpenAPI 3.1 document
// (/openapi.json), built from the routes this build registers, and a
// self-contained docs page (/docs) that renders it and tries operations.
//
// The document is the published Data API document (published/, embedded)
// reduced to the operations this build serves: a registered route pattern
// takes the published operations whose paths it routes (a pattern wildcard
// may stand for a published path's literal segment, e.g. tokens/{tokenAction}
// for tokens/{tokenId}:reindex), and a route the published document lacks
// (the platform JSON-RPC, /v1/avg_tps, the docs themselves) gets an
// operation of its own. Its components are the published document's.
package apidoc

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
)

//go:embed published/data-api.openapi.json
var publishedDoc []byte

//go:embed docs.html
var docsPage []byte

// Own operations of routes the published document lacks: summary and tag.
var own = map[string][2]string{
	"POST /ext/bc/P":            {"The platform-chain JSON-RPC (platform.*), answered like avalanchego's", "Node JSON-RPC"},
	"POST /ext/P":               {"The platform-chain JSON-RPC (an alias of /ext/bc/P)", "Node JSON-RPC"},
	"POST /ext/bc/platform":     {"The platform-chain JSON-RPC (an alias of /ext/bc/P)", "Node JSON-RPC"},
	"POST /ext/platform":        {"The platform-chain JSON-RPC (an alias of /ext/bc/P)", "Node JSON-RPC"},
	"GET /v1/avg_tps/{chainId}": {"Average transactions per second of a chain (the spec's metrics service)", "Metrics"},
	"GET /openapi.json":         {"This document", "Documentation"},
	"GET /docs":                 {"The documentation page", "Documentation"},
}

// Document builds the OpenAPI document of routes ("METHOD /path" patterns)
// for a server at serverURL ("" for relative).
func Document(routes []string, version, serverURL string) ([]byte, error) {
	var pub map[string]any
	if err := json.Unmarshal(publishedDoc, &pub); err != nil {
		return nil, fmt.Errorf("apidoc: published document: %w", err)
	}
	pubPaths, _ := pub["paths"].(map[string]any)
	paths := map[string]any{}
	covered := map[string]bool{}
	add := func(path, method string, op any) {
		item, _ := paths[path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[path] = item
		}
		item[method] = op
	}
	for path, item := range pubPaths {
		ops, _ := item.(map[string]any)
		for method, op := range ops {
			if route := bestRoute(routes, strings.ToUpper(method), path); route != "" {
				add(path, method, op)
				covered[route] = true
			}
		}
	}
	for _, r := range routes {
		if covered[r] {
			continue
		}
		method, path := SplitRoute(r)
		meta, ok := own[method+" "+path]
		if !ok {
			meta = [2]string{"Served by Permafrost; not in the published document", "Permafrost"}
		}
		op := map[string]any{"summary": meta[0], "tags": []string{meta[1]}, "operationId": operationID(method, path),
			"responses": map[string]any{"200": map[string]any{"description": "OK"}}}
		if params := pathParams(path); len(params) > 0 {
			op["parameters"] = params
		}
		add(path, strings.ToLower(method), op)
	}
	doc := map[string]any{
		// The route patterns the document was built from (tests compare it
		// with the routes; clients may ignore it).
		"x-permafrost-routes": routes,
		"openapi":             "3.1.0",
		"info":                map[string]any{"title": "Permafrost", "version": version, "description": "The Data API, metrics service and platform JSON-RPC this Permafrost serves, from its own index of an Avalanche network."},
		"paths":               paths,
		"components":          pub["components"],
	}
	if serverURL != "" {
		doc["servers"] = []any{map[string]any{"url": serverURL}}
	}
	return json.Marshal(doc)
}

// SplitRoute reads a route pattern's method and path. A pattern without a
// method (it answers every method: the JSON-RPC endpoints, which answer
// avalanchego's 405 themselves) is documented as POST.
func SplitRoute(r string) (method, path string) {
	if m, p, ok := strings.Cut(r, " "); ok {
		return m, p
	}
	return http.MethodPost, r
}

// bestRoute is the registered route that serves method path, preferring
// the one whose literal segments match most of path's (a route with fewer
// wildcards standing for literals); "" when none does.
func bestRoute(routes []string, method, path string) string {
	best, bestCost := "", -1
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, r := range routes {
		m, p := SplitRoute(r)
		if m != method {
			continue
		}
		rs := strings.Split(strings.Trim(p, "/"), "/")
		if len(rs) != len(segs) {
			continue
		}
		cost, ok := 0, true
		for i := range rs {
			switch {
			case rs[i] == segs[i]:
			case wildcard(rs[i]):
				if !wildcard(segs[i]) {
					cost++ // the route's wildcard stands for a literal
				}
			default:
				ok = false
			}
		}
		if ok && (bestCost < 0 || cost < bestCost) {
			best, bestCost = r, cost
		}
	}
	return best
}

func wildcard(seg string) bool { return strings.HasPrefix(seg, "{") }

func pathParams(path string) []any {
	var out []any
	for _, s := range strings.Split(path, "/") {
		if wildcard(s) {
			name := strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
			name = strings.TrimSuffix(name, "...")
			out = append(out, map[string]any{"name": name, "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
	}
	return out
}

func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, s := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == '{' || r == '}' || r == '.' || r == ':' }) {
		b.WriteString(strings.ToUpper(s[:1]) + s[1:])
	}
	return b.String()
}

// Routes is what the handlers need of the router: its route patterns.
type Routes interface{ Routes() []string }

// Handlers serves /openapi.json and /docs. The document is built on first
// use, once every route is registered.
type Handlers struct {
	routes  Routes
	version string
	once    sync.Once
	doc     []byte
	err     error
}

// New returns the handlers over mux's routes.
func New(routes Routes, version string) *Handlers { return &Handlers{routes: routes, version: version} }

// OpenAPI serves the document.
func (h *Handlers) OpenAPI(w http.ResponseWriter, r *http.Request) {
	h.once.Do(func() {
		rs := h.routes.Routes()
		sort.Strings(rs)
		h.doc, h.err = Document(rs, h.version, "")
	})
	if h.err != nil {
		http.Error(w, `{"error":"Internal Server Error","message":"the OpenAPI document could not be built","statusCode":500}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(h.doc)
}

// Docs serves the documentation page (it loads /openapi.json; no other
// resource, no CDN).
func (h *Handlers) Docs(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	_, _ = w.Write(docsPage)
}
