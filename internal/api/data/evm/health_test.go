package evm_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/api"
	apievm "github.com/permafrost-dev/permafrost/internal/api/data/evm"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// With Deps.Health, a chain whose ingestion lags its node answers 503 on
// its routes and is UNAVAILABLE in /v1/chains; a chain with no block yet
// answers 503 with or without it.
func TestChainHealth(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		c := ingest.Chain{Key: "C", Kind: "EVM", BlockchainID: "RiAQoU1j1pwbZcr8jhc646GwJeFCaBUjbWK2oVvzfrHtjJRUi",
			EVMChainID: "88888", NetworkID: 88888, Name: "C-Chain"}
		if err := ingest.RegisterChain(ctx, db, c); err != nil {
			t.Fatal(err)
		}
		network, err := api.LoadNetwork(ctx, db, "testnet")
		if err != nil {
			t.Fatal(err)
		}
		mk := func(h *api.Health) *env {
			mux := api.NewMux(log)
			apievm.Register(mux, apievm.Deps{DB: db, Network: network, Pager: api.NewPager([]byte("k")), Log: log, Health: h})
			return &env{mux: mux}
		}
		plain := mk(nil)
		guarded := mk(api.NewHealth(db, api.LimitsConfig{LagThreshold: 10}, nil))
		addr := "/v1/chains/88888/addresses/0x03623add7ec6f6426d6266ed2e5a4734c786e73e/balances:getNative"
		status := func(e *env) string {
			var l struct {
				Chains []map[string]any `json:"chains"`
			}
			e.ok(t, "/v1/chains", &l)
			if len(l.Chains) != 1 {
				t.Fatalf("chains: %v", l.Chains)
			}
			return l.Chains[0]["status"].(string)
		}
		// Nothing indexed.
		for _, e := range []*env{plain, guarded} {
			e.fails(t, addr, 503, "not indexed any block")
			if s := status(e); s != "UNAVAILABLE" {
				t.Errorf("no block: status %s", s)
			}
		}
		setTip := func(height, node uint64) {
			tx, err := db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			if err := ingest.SetCheckpoint(ctx, tx, "C", ingest.RawBlock{Height: height, Hash: "0x01", Timestamp: 1}, node); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		// Far behind the node: the guarded routes refuse, saying why.
		setTip(5, 500)
		guarded.fails(t, addr, 503, "behind")
		for _, p := range []string{"/v1/chains/88888/blocks", "/v1/chains/88888/blocks/1", "/v1/chains/88888/transactions",
			"/v1/chains/88888/transactions/0x" + strings.Repeat("ab", 32), "/v1/chains/88888/addresses/0x03623add7ec6f6426d6266ed2e5a4734c786e73e/transactions"} {
			guarded.fails(t, p, 503, "behind")
		}
		// The cross-chain listings list every chain up to its indexed tip
		// (docs/operations.md): a lagging chain does not fail them.
		if code, body := guarded.do(t, "/v1/blocks"); code != 200 {
			t.Errorf("/v1/blocks while C lags: %d %s", code, body)
		}
		if s := status(guarded); s != "UNAVAILABLE" {
			t.Errorf("lagging: status %s", s)
		}
		if code, body := plain.do(t, addr); code != 200 || !strings.Contains(string(body), `"balance":"0"`) {
			t.Errorf("without Health: %d %s", code, body)
		}
		// Caught up.
		setTip(500, 500)
		if code, body := guarded.do(t, addr); code != 200 {
			t.Errorf("caught up: %d %s", code, body)
		}
		if s := status(guarded); s != "OK" {
			t.Errorf("caught up: status %s", s)
		}
	})
}
