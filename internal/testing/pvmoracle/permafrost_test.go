package pvmoracle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/utils/constants"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/data/primary"
	"github.com/permafrost-dev/permafrost/internal/api/platform"
	"github.com/permafrost-dev/permafrost/internal/decode/pchain"
	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testing/pvmoracle"
)

// permafrost is one backend's Permafrost following the oracle's node through
// the real source, pipeline and P-chain indexer, with its platform RPC and
// data service mounted.
type permafrost struct {
	backend string
	db      *store.DB
	chain   ingest.Chain
	rpc     http.Handler
	data    *api.Mux
	mounted bool
	log     *slog.Logger
}

func newPermafrost(t *testing.T, backend string, o *pvmoracle.Oracle, now func() time.Time) *permafrost {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("PVMORACLE_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	db := storetest.Open(t, storetest.DSNFor(t, backend))
	g, err := genesis.Load(o.Network.Config.NetworkID, o.Network.Path)
	if err != nil {
		t.Fatal(err)
	}
	// The network's schedule is the oracle's (a node run with --upgrade-file).
	g.Upgrades = o.Upgrades
	node, err := source.NewAvalanche(o.URL, source.Retry{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := pchain.NewIndexer(g)
	if err != nil {
		t.Fatal(err)
	}
	ix.Log = log
	rpc, err := platform.New(platform.Deps{DB: db, Genesis: g, Log: log, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return &permafrost{
		backend: backend,
		db:      db,
		chain: ingest.Chain{Key: "P", Kind: "P", BlockchainID: constants.PlatformChainID.String(), NetworkID: g.NetworkID,
			Name: "P-Chain", Source: &ingest.PSource{Node: node, Workers: 2}, Indexer: ix, BatchSize: 4},
		rpc:  rpc,
		data: api.NewMux(log),
		log:  log,
	}
}

// catchUp indexes up to the node's tip, then (once) mounts the data service
// on the indexed network.
func (p *permafrost) catchUp(t *testing.T, g *genesis.Genesis) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ingest.New(p.db, []ingest.Chain{p.chain}, ingest.Options{UntilTip: true, Poll: 10 * time.Millisecond}, p.log).Run(ctx); err != nil {
		t.Fatalf("%s: ingest: %v", p.backend, err)
	}
	if p.mounted {
		return
	}
	p.mounted = true
	network, err := api.LoadNetwork(ctx, p.db, "testnet")
	if err != nil {
		t.Fatal(err)
	}
	primary.Register(p.data, primary.Deps{DB: p.db, Network: network, Pager: api.NewPager([]byte("pvmoracle")), Log: p.log,
		AVAXAssetID: g.AvaxAssetID.String()})
}

// get serves a data-service GET and decodes a 200 answer into out; it
// returns the status.
func (p *permafrost) get(t *testing.T, path string, q url.Values, out any) int {
	t.Helper()
	target := path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	rec := httptest.NewRecorder()
	p.data.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	if rec.Code == http.StatusOK && out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			t.Fatalf("%s: %s: %v", p.backend, target, err)
		}
	}
	return rec.Code
}

// call asks Permafrost's platform RPC.
func (p *permafrost) call(method string, params any) (json.RawMessage, string, error) {
	raw, msg, err := pvmoracle.CallHandler(p.rpc, method, params)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", p.backend, err)
	}
	return raw, msg, nil
}
