package enrich

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeFile writes a watched file and moves its mtime forward, so a
// rewrite within the filesystem's timestamp granularity is still seen.
func writeFile(t *testing.T, path, body string) {
	t.Helper()
	var next time.Time
	if st, err := os.Stat(path); err == nil {
		next = st.ModTime().Add(time.Second)
	} else {
		next = time.Now()
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, next, next); err != nil {
		t.Fatal(err)
	}
}

type repRow struct{ reputation, source string }

func readRep(t *testing.T, d *devnet, addr string) repRow {
	t.Helper()
	var r repRow
	rows, err := d.DB.QueryContext(t.Context(), `SELECT reputation, source FROM enrich_token_reputation WHERE chain_key = 'C' AND address = $1`, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if rows.Next() {
		if err := rows.Scan(&r.reputation, &r.source); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// The registry is loaded at start, its reputations reach the database,
// heuristics judge tokens it does not list, and edits are picked up by
// polling without a restart; a broken edit keeps the previous version.
func TestRegistryReload(t *testing.T) {
	forEachDevnet(t, func(t *testing.T, d *devnet) {
		devt, ftk, factory := d.contracts["erc20"], d.contracts["factoryChild"], d.contracts["factory"]
		path := filepath.Join(t.TempDir(), "registry.yaml")
		v1 := `contracts:
  - chainId: "88888"
    address: "` + strings.ToUpper(devt[:4]) + devt[4:] + `"
    description: "The devnet's ERC-20"
    officialSite: "https://devnet.example.org"
    resourceLinks: [{type: Website, url: "https://devnet.example.org"}]
    tags: [test]
    tokenReputation: Benign
  - chainId: C
    address: "` + ftk + `"
    tokenReputation: Malicious
  - chainId: C
    address: "` + factory + `"
    name: "Token Factory"
`
		writeFile(t, path, v1)
		s := newService(t, d.DB, Config{Chains: []Chain{d.chain()}, Registry: RegistryConfig{Path: path, Poll: 20 * time.Millisecond},
			Tokens: TokenConfig{Interval: 10 * time.Millisecond}, NFT: NFTConfig{Disabled: true}, Trace: TraceConfig{Disabled: true}})
		if e, ok := s.Curated("88888", devt); !ok || e.Description != "The devnet's ERC-20" || e.ResourceLinks[0].Type != "Website" {
			t.Fatalf("loaded at New: %+v %v", e, ok)
		}
		if e, ok := s.Curated("C", factory); !ok || e.Name != "Token Factory" {
			t.Errorf("by chain key: %+v %v", e, ok)
		}
		start(t, s)
		waitFor(t, 10*time.Second, "operator reputations", func() bool {
			return readRep(t, d, devt) == repRow{ReputationBenign, "operator"} && readRep(t, d, ftk) == repRow{ReputationMalicious, "operator"}
		})

		// v2: FTK leaves the registry, and its symbol now copies DevToken's
		// (as if the token had renamed itself): the heuristics find it.
		waitFor(t, 10*time.Second, "token metadata", func() bool {
			return count(t, d.DB, `SELECT COUNT(*) FROM evm_contracts WHERE chain_key = 'C' AND metadata_status = 'unknown'`) == 0
		})
		if _, err := d.DB.ExecContext(t.Context(), `UPDATE evm_contracts SET symbol = 'devt' WHERE chain_key = 'C' AND address = $1`, ftk); err != nil {
			t.Fatal(err)
		}
		v2 := strings.Replace(v1, `The devnet's ERC-20`, `The devnet's ERC-20, edited`, 1)
		v2 = v2[:strings.Index(v2, "  - chainId: C\n    address: \""+ftk)] + "  - chainId: C\n    address: \"" + factory + "\"\n    name: \"Token Factory\"\n"
		writeFile(t, path, v2)
		waitFor(t, 10*time.Second, "the edited registry", func() bool {
			e, _ := s.Curated("88888", devt)
			return strings.HasSuffix(e.Description, "edited")
		})
		waitFor(t, 10*time.Second, "the heuristic verdict", func() bool {
			return readRep(t, d, ftk) == repRow{ReputationMalicious, "heuristic"}
		})
		var reason string
		if err := d.DB.QueryRowContext(t.Context(), `SELECT reason FROM enrich_token_reputation WHERE chain_key = 'C' AND address = $1`, ftk).Scan(&reason); err != nil ||
			!strings.Contains(reason, "impersonates") || !strings.Contains(reason, devt) {
			t.Errorf("reason %q %v", reason, err)
		}

		// v3 is broken: v2 stays.
		writeFile(t, path, v2+"  - chainId: C\n    address: nope\n")
		if err := s.ReloadRegistry(t.Context()); err == nil || !strings.Contains(err.Error(), "address") {
			t.Errorf("broken registry: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
		if e, _ := s.Curated("88888", devt); !strings.HasSuffix(e.Description, "edited") {
			t.Errorf("after a broken edit: %+v", e)
		}
		if readRep(t, d, devt) != (repRow{ReputationBenign, "operator"}) {
			t.Errorf("DevToken after a broken edit: %+v", readRep(t, d, devt))
		}
	})
}

// New refuses a registry it cannot read or parse.
func TestRegistryRequiredAtStart(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "contracts: [{chainId: C, address: 0x1}]")
	for _, p := range []string{filepath.Join(dir, "missing.yaml"), bad} {
		if _, err := New(t.Context(), nil, Config{Registry: RegistryConfig{Path: p}}, testLog()); err == nil {
			t.Errorf("%s: accepted", p)
		}
	}
}
