// Package devnet reads the devnet-a recording (testdata/devnet-a, see its
// README.md): the raw JSON-RPC answers of real avalanchego v1.14.2 nodes,
// network.json, workload.jsonl and keys.json. Tests of every package
// compare with it, so its readers live here once.
//
// It imports no other package of this module, so any package's tests can
// use it without an import cycle; keep it that way. Helpers that need the
// ingest and store packages (applying recorded blocks through an indexer)
// are in devnet/indextest.
//
// The readers take a testing.TB and fail the test on a missing or malformed
// file: the recording is part of the repository, so a read error means a
// broken checkout, not a condition for the test to handle.
package devnet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// FindRoot returns the module root: the nearest directory holding go.mod at
// or above the working directory (a test runs in its package directory).
func FindRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("devnet: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("devnet: go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Root is FindRoot for a test: it fails t when there is no module root.
func Root(t testing.TB) string {
	t.Helper()
	root, err := FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// Dir returns the recording's directory, testdata/devnet-a of the module root.
func Dir(t testing.TB) string {
	t.Helper()
	return filepath.Join(Root(t), "testdata", "devnet-a")
}

// Path returns a file of the recording, e.g. Path(t, "genesis.json").
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	return filepath.Join(append([]string{Dir(t)}, elem...)...)
}

// maxLine bounds one line of a .jsonl file; the longest recorded answer (a
// P-chain block in hex) is far below it.
const maxLine = 64 << 20

// readLines decodes every non-empty line of a .jsonl file of the recording.
func readLines[T any](t testing.TB, name string) []T {
	t.Helper()
	return readLinesAt[T](t, Path(t, name))
}

// readLinesAt decodes every non-empty line of the .jsonl file at path.
func readLinesAt[T any](t testing.TB, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("devnet: %v", err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), maxLine)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("devnet: %s:%d: %v", path, n, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("devnet: %s: %v", path, err)
	}
	return out
}

// readJSON decodes one JSON file of the recording.
func readJSON(t testing.TB, name string, v any) {
	t.Helper()
	path := Path(t, name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("devnet: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("devnet: %s: %v", path, err)
	}
}

// decode decodes JSON with numbers kept as json.Number: the nodes' numbers
// are exact decimal text that a float64 would round.
func decode(t testing.TB, what string, raw []byte, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		t.Fatalf("devnet: %s: %v", what, err)
	}
}
