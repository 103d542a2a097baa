package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	fixture "github.com/permafrost-dev/permafrost/internal/devnet"
)

// devnetC loads testdata/devnet-c, the recording with the index API and
// debug_trace* answers.
func devnetC(t testing.TB) (*Recording, string) {
	t.Helper()
	dir := filepath.Join(fixture.Root(t), "testdata", "devnet-c")
	rec, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rec, dir
}

// Every recorded index and debug answer of devnet-c is served byte for byte
// on the path it was recorded on.
func TestIndexAndDebugRoundTrip(t *testing.T) {
	rec, _ := devnetC(t)
	url := serve(t, NewHandler(rec))
	counts := map[string]int{}
	for _, e := range rec.Exchanges {
		if e.File != "ext_index.jsonl" && e.File != "ext_bc_C_debug.jsonl" {
			continue
		}
		counts[e.File]++
		status, body := post(t, url+e.Endpoint, request(string(e.RecordedID()), e.Method, e.Params))
		want := append(append([]byte{}, e.Response...), '\n')
		if status != e.HTTPStatus || !bytes.Equal(body, want) {
			t.Errorf("%s:%d %s %s: status %d body\n%.300s\nwant %d\n%.300s", e.File, e.Line, e.Endpoint, e.Method, status, body, e.HTTPStatus, want)
		}
	}
	if counts["ext_index.jsonl"] != 79 || counts["ext_bc_C_debug.jsonl"] != 2836 {
		t.Errorf("served %v, want 79 index and 2,836 debug lines", counts)
	}
}

// With only the recorded ranges and last-accepted answers kept, every other
// recorded index call (by position, by ID, errors beyond the end, unknown
// IDs) is answered from the containers exactly as the node answered it.
func TestIndexDerivedAnswersMatchNode(t *testing.T) {
	full, src := devnetC(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "rpc"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(src, "rpc", "ext_index.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(line, `"index.getLastAccepted","params":{"encoding":"hex"}`) ||
			strings.Contains(line, `"index.getContainerRange","params":{"encoding":"hex","numToFetch":`) && strings.Contains(line, `"startIndex":0}`) && !strings.Contains(line, `"numToFetch":1025`) {
			kept = append(kept, line)
		}
	}
	if len(kept) != 3*2+2 { // P, X, C: last accepted and the range; X tx/vtx: empty
		t.Fatalf("kept %d lines", len(kept))
	}
	if err := os.WriteFile(filepath.Join(dir, "rpc", "ext_index.jsonl"), []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	part, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, NewHandler(part))
	n := 0
	for _, e := range full.Exchanges {
		if e.File != "ext_index.jsonl" || (e.Method == "index.getLastAccepted" && bytes.Contains(e.Params, []byte("hex"))) {
			continue
		}
		n++
		status, body := post(t, url+e.Endpoint, request(string(e.RecordedID()), e.Method, e.Params))
		want := append(append([]byte{}, e.Response...), '\n')
		if status != e.HTTPStatus || !bytes.Equal(body, want) {
			t.Errorf("%s:%d %s %s %s: status %d body\n%.300s\nwant %d\n%.300s", e.File, e.Line, e.Endpoint, e.Method, e.Params, status, body, e.HTTPStatus, want)
		}
	}
	if n < 60 {
		t.Fatalf("compared %d answers", n)
	}
	// Ranges the recorder never asked for are served from the containers.
	status, body := post(t, url+"/ext/index/P/block", `{"jsonrpc":"2.0","id":1,"method":"index.getContainerRange","params":{"startIndex":60,"numToFetch":10}}`)
	if status != 200 || bytes.Count(body, []byte(`"bytes"`)) != 3 || !bytes.Contains(body, []byte(`"index":"62"`)) {
		t.Errorf("range 60+10: %d %.300s", status, body)
	}
}

// A recording without the index API answers its paths as a node without
// --index-enabled does: 404.
func TestNoIndexIsNotFound(t *testing.T) {
	url := serve(t, NewHandler(devnet(t)))
	status, _ := post(t, url+"/ext/index/P/block", `{"jsonrpc":"2.0","id":1,"method":"index.getLastAccepted","params":{}}`)
	if status != 404 {
		t.Fatalf("status %d, want 404", status)
	}
}
