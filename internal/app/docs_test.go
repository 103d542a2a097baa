package app

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api/apidoc"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// servedDoc is the /openapi.json of a serve over the devnet-a replay.
func servedDoc(t *testing.T) (*served, map[string]map[string]any) {
	t.Helper()
	dir := devnet.Dir(t)
	node := newSwitchableNode(t, dir)
	node.up()
	s := startServeDSN(t, storetest.DSNFor(t, "sqlite"), node.url(), filepath.Join(dir, "genesis.json"))
	waitFor(t, "healthy", func() bool { code, _ := healthStatus(t, s.base); return code == 200 })
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if code := getJSON(t, s.base+"/openapi.json", &doc); code != 200 || doc.OpenAPI != "3.1.0" || len(doc.Paths) < 50 {
		t.Fatalf("/openapi.json: %d, openapi %q, %d paths", code, doc.OpenAPI, len(doc.Paths))
	}
	return s, doc.Paths
}

// The server's own document describes exactly the routes this build serves:
// every operation it lists is routed (never "no route"), and every route
// the server registers is in it.
func TestOpenAPIDocument(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a recording")
	}
	s, paths := servedDoc(t)
	param := regexp.MustCompile(`\{[^}]+\}`)
	n := 0
	for path, ops := range paths {
		for method := range ops {
			n++
			req, err := http.NewRequest(strings.ToUpper(method), s.base+param.ReplaceAllString(path, "x"), strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 404 && strings.Contains(string(b), "no route for") {
				t.Errorf("%s %s is in /openapi.json but not routed", strings.ToUpper(method), path)
			}
		}
	}
	// Every registered route: the document names each (its own path, or the
	// published paths it serves).
	routes := servedRoutes(t, s)
	for _, r := range routes {
		method, path := apidoc.SplitRoute(r)
		if !covers(paths, strings.ToLower(method), path) {
			t.Errorf("route %s is not in /openapi.json", r)
		}
	}
	t.Logf("%d operations in /openapi.json, %d routes", n, len(routes))
}

// servedRoutes reads the route table the document was built from (its
// x-permafrost-routes extension).
func servedRoutes(t *testing.T, s *served) []string {
	t.Helper()
	var doc struct {
		Routes []string `json:"x-permafrost-routes"`
	}
	if code := getJSON(t, s.base+"/openapi.json", &doc); code != 200 || len(doc.Routes) == 0 {
		t.Fatalf("no x-permafrost-routes in /openapi.json")
	}
	sort.Strings(doc.Routes)
	return doc.Routes
}

// covers: some path of the document with method is routed by pattern path
// (segment by segment; a pattern wildcard stands for any segment).
func covers(paths map[string]map[string]any, method, pattern string) bool {
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	for path, ops := range paths {
		if _, ok := ops[method]; !ok {
			continue
		}
		ds := strings.Split(strings.Trim(path, "/"), "/")
		if len(ds) != len(ps) {
			continue
		}
		ok := true
		for i := range ps {
			if ps[i] != ds[i] && !strings.HasPrefix(ps[i], "{") {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// The docs page renders the document in a real browser (headless Chromium):
// every operation is listed, and its "try it" call returns the server's data.
func TestDocsPageInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	browser := ""
	for _, b := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(b); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("SKIPPED: no Chromium on this machine (.ci/run installs Debian's chromium package)")
	}
	s, paths := servedDoc(t)
	run := func(args ...string) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, browser, append([]string{"--headless", "--no-sandbox", "--disable-gpu",
			"--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=20000"}, args...)...).Output()
		if err != nil {
			t.Fatalf("chromium %v: %v", args, err)
		}
		return out
	}
	url := s.base + "/docs?try=getNetworkDetails&network=testnet"
	dom := string(run("--dump-dom", url))
	for path, ops := range paths {
		for method := range ops {
			if !strings.Contains(dom, `data-path="`+path+`" data-method="`+strings.ToUpper(method)+`"`) {
				t.Errorf("the docs page does not list %s %s", strings.ToUpper(method), path)
			}
		}
	}
	m := regexp.MustCompile(`(?s)<pre id="result-getNetworkDetails"[^>]*>(.*?)</pre>`).FindStringSubmatch(dom)
	if m == nil || !strings.Contains(m[1], "200 OK") || !strings.Contains(m[1], "validatorDetails") {
		t.Errorf("try it: %v", m)
	}
	shot := filepath.Join(t.TempDir(), "docs.png")
	run("--screenshot="+shot, "--window-size=1280,2400", url)
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
		t.Errorf("screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}
