package enrich

import (
	"context"
	"database/sql"
	"errors"
	"math/big"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ava-labs/libevm/accounts/abi"

	"github.com/permafrost-dev/permafrost/internal/source"
)

// tokenWant is what the recording says about a contract.
type tokenWant struct {
	name, symbol *string
	decimals     *int
	ercType      string // '' for UNKNOWN
	status       string
}

// wantToken derives the expected metadata from the recorded eth_call
// answers, decoded with libevm's ABI package (not ours).
func (d *devnet) wantToken(t *testing.T, addr, indexedType string) tokenWant {
	t.Helper()
	strT, _ := abi.NewType("string", "", nil)
	text := func(sel string) *string {
		c, ok := d.answer(addr, "0x"+sel)
		if !ok || c.Reverted {
			return nil
		}
		v, err := abi.Arguments{{Type: strT}}.Unpack(c.Result)
		if err != nil {
			t.Fatalf("%s %s: %v", addr, sel, err)
		}
		s := v[0].(string)
		return &s
	}
	w := tokenWant{name: text(selName), symbol: text(selSymbol), ercType: indexedType, status: "failed"}
	if c, ok := d.answer(addr, "0x"+selDecimals); ok && !c.Reverted {
		v := int(new(big.Int).SetBytes(c.Result).Int64())
		w.decimals = &v
	}
	iface := func(id string) bool {
		c, ok := d.answer(addr, callData(selSupportsInterface, interfaceWord(id)))
		return ok && !c.Reverted && new(big.Int).SetBytes(c.Result).Sign() != 0
	}
	if w.ercType == "" {
		switch {
		case iface(ifaceERC165) && iface(ifaceERC721):
			w.ercType = ercTypeERC721
		case iface(ifaceERC165) && iface(ifaceERC1155):
			w.ercType = ercTypeERC1155
		case w.decimals != nil:
			w.ercType = ercTypeERC20
		}
	}
	if w.name != nil || w.symbol != nil || w.decimals != nil || iface(ifaceERC165) {
		w.status = "resolved"
	}
	return w
}

type gotToken struct {
	name, symbol sql.NullString
	decimals     sql.NullInt64
	ercType      string
	status       string
}

func readToken(t *testing.T, d *devnet, addr string) gotToken {
	t.Helper()
	var g gotToken
	if err := d.DB.QueryRowContext(t.Context(), `SELECT name, symbol, decimals, erc_type, metadata_status FROM evm_contracts
		WHERE chain_key = 'C' AND address = $1`, addr).Scan(&g.name, &g.symbol, &g.decimals, &g.ercType, &g.status); err != nil {
		t.Fatalf("%s: %v", addr, err)
	}
	return g
}

func sameText(g sql.NullString, w *string) bool {
	if w == nil {
		return !g.Valid
	}
	return g.Valid && g.String == *w
}

func (g gotToken) matches(w tokenWant) bool {
	dec := (w.decimals == nil && !g.decimals.Valid) || (w.decimals != nil && g.decimals.Valid && int(g.decimals.Int64) == *w.decimals)
	return sameText(g.name, w.name) && sameText(g.symbol, w.symbol) && dec && g.ercType == w.ercType && g.status == w.status
}

// Token metadata of DevToken, DevNFT, DevMulti, the factory-created token
// and the factory itself from the recorded eth_call answers: ercType by
// ERC-165 and ERC-20 probing, name/symbol/decimals, reverts (NFT
// decimals/totalSupply, ERC-20 supportsInterface) and the factory that
// answers nothing (UNKNOWN, state failed) handled without an error; then
// the cache serves a cleared index without a node.
func TestTokenMetadata(t *testing.T) {
	forEachDevnet(t, func(t *testing.T, d *devnet) {
		s := newService(t, d.DB, Config{Chains: []Chain{d.chain()}})
		ctx := t.Context()
		indexed := map[string]string{}
		for _, a := range d.contracts {
			var typ string
			if err := d.DB.QueryRowContext(ctx, `SELECT erc_type FROM evm_contracts WHERE chain_key = 'C' AND address = $1`, a).Scan(&typ); err != nil {
				t.Fatalf("%s: %v", a, err)
			}
			indexed[a] = typ
		}
		n, err := s.resolveTokens(ctx, d.chain())
		if err != nil {
			t.Fatal(err)
		}
		if n != len(d.contracts) {
			t.Errorf("%d contracts enriched, want %d", n, len(d.contracts))
		}
		if n, err := s.resolveTokens(ctx, d.chain()); err != nil || n != 0 {
			t.Errorf("second round: %d, %v", n, err)
		}
		want := map[string]tokenWant{}
		for name, a := range d.contracts {
			w := d.wantToken(t, a, indexed[a])
			want[a] = w
			if g := readToken(t, d, a); !g.matches(w) {
				t.Errorf("%s (%s): got %+v, want name %v symbol %v decimals %v type %q status %s", name, a, g,
					deref(w.name), deref(w.symbol), w.decimals, w.ercType, w.status)
			}
		}
		// Spot checks against the README's description of the workload.
		for name, w := range map[string]struct{ name, symbol, typ string }{
			"erc20": {"Devnet Token", "DEVT", ercTypeERC20}, "factoryChild": {"Factory Token", "FTK", ercTypeERC20},
			"erc721": {"Devnet Collectible", "DNFT", ercTypeERC721}, "erc1155": {"Devnet Multi Token", "DMT", ercTypeERC1155},
		} {
			g := readToken(t, d, d.contracts[name])
			if g.name.String != w.name || g.symbol.String != w.symbol || g.ercType != w.typ {
				t.Errorf("%s: %+v", name, g)
			}
		}
		if g := readToken(t, d, d.contracts["erc20"]); g.decimals.Int64 != 18 {
			t.Errorf("DevToken decimals %v", g.decimals)
		}
		if g := readToken(t, d, d.contracts["factory"]); g.status != "failed" || g.name.Valid || g.ercType != "" {
			t.Errorf("factory: %+v", g)
		}
		if count(t, d.DB, `SELECT COUNT(*) FROM enrich_token_meta WHERE chain_key = 'C' AND block_number = 37`) != len(d.contracts) {
			t.Error("cache rows not at the indexed tip 37")
		}

		// A reindex clears evm_contracts' enrichment: the cache answers, the
		// node is not asked.
		if _, err := d.DB.ExecContext(ctx, `UPDATE evm_contracts SET name = NULL, symbol = NULL, decimals = NULL,
			metadata_status = 'unknown' WHERE chain_key = 'C'`); err != nil {
			t.Fatal(err)
		}
		dead := Chain{Key: "C", EVMChainID: "88888", RPC: failingCaller{}}
		if _, err := s.resolveTokens(ctx, dead); err != nil {
			t.Fatal(err)
		}
		for name, a := range d.contracts {
			if g := readToken(t, d, a); !g.matches(want[a]) {
				t.Errorf("%s from the cache: %+v", name, g)
			}
		}
	})
}

type failingCaller struct{}

func (failingCaller) BatchCall(context.Context, []source.BatchElem) error {
	return errors.New("the node is down")
}

// flakyCaller fails its first n batches, then passes them to the node.
type flakyCaller struct {
	inner Caller
	n     atomic.Int32
}

func (f *flakyCaller) BatchCall(ctx context.Context, elems []source.BatchElem) error {
	if f.n.Add(-1) >= 0 {
		return errors.New("connection refused")
	}
	return f.inner.BatchCall(ctx, elems)
}

// A node that fails is retried with backoff and never fails a contract
// for good before MaxAttempts; after them the contract is given up
// (state failed, fields absent) without any error escaping.
func TestTokenNodeFailures(t *testing.T) {
	forEachDevnet(t, func(t *testing.T, d *devnet) {
		now := time.Now()
		clock := func() time.Time { return now }
		flaky := &flakyCaller{inner: d.rpc}
		flaky.n.Store(2)
		c := Chain{Key: "C", EVMChainID: "88888", RPC: flaky}
		s := newService(t, d.DB, Config{Chains: []Chain{c}, Tokens: TokenConfig{MaxAttempts: 3, RetryBase: time.Minute, RetryCap: time.Hour}},
			WithClock(clock))
		ctx := t.Context()
		erc20 := d.contracts["erc20"]
		for round := 1; round <= 2; round++ {
			if _, err := s.resolveTokens(ctx, c); err != nil {
				t.Fatal(err)
			}
			if g := readToken(t, d, erc20); g.status != "unknown" {
				t.Fatalf("round %d: status %s while the node fails", round, g.status)
			}
			var attempts int
			var next int64
			if err := d.DB.QueryRowContext(ctx, `SELECT attempts, next_attempt FROM enrich_token_meta WHERE chain_key = 'C' AND address = $1`,
				erc20).Scan(&attempts, &next); err != nil {
				t.Fatal(err)
			}
			if attempts != round || next <= now.UnixMilli() {
				t.Fatalf("round %d: attempts %d next %d", round, attempts, next)
			}
			// Not due yet: nothing is asked.
			if n, err := s.resolveTokens(ctx, c); err != nil || n != 0 {
				t.Fatalf("round %d: %d contracts before their backoff ended (%v)", round, n, err)
			}
			now = now.Add(2 * time.Hour)
		}
		// The node is back: resolved.
		if _, err := s.resolveTokens(ctx, c); err != nil {
			t.Fatal(err)
		}
		if g := readToken(t, d, erc20); g.status != "resolved" || g.name.String != "Devnet Token" {
			t.Fatalf("after recovery: %+v", g)
		}

		// A node that never comes back: given up after MaxAttempts.
		d.reset(t)
		dead := Chain{Key: "C", EVMChainID: "88888", RPC: failingCaller{}}
		for i := 0; i < 3; i++ {
			if _, err := s.resolveTokens(ctx, dead); err != nil {
				t.Fatal(err)
			}
			now = now.Add(2 * time.Hour)
		}
		for name, a := range d.contracts {
			if g := readToken(t, d, a); g.status != "failed" || g.name.Valid {
				t.Errorf("%s after %d failed attempts: %+v", name, 3, g)
			}
		}
		var lastErr string
		if err := d.DB.QueryRowContext(ctx, `SELECT last_error FROM enrich_token_meta WHERE chain_key = 'C' AND address = $1`, erc20).Scan(&lastErr); err != nil ||
			!strings.Contains(lastErr, "node is down") {
			t.Errorf("last_error %q %v", lastErr, err)
		}
	})
}
