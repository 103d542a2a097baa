package enrich

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

// tipCaller sends eth_calls at the recording's tip block (0x25): the
// recording answers calls only there, while a real node would answer at
// the partially indexed height the enrichment asks for (token URIs, names
// and symbols of these contracts do not change after their mint).
type tipCaller struct{ inner Caller }

func (c tipCaller) BatchCall(ctx context.Context, elems []source.BatchElem) error {
	for i := range elems {
		if elems[i].Method == "eth_call" && len(elems[i].Params) == 2 {
			elems[i].Params = []any{elems[i].Params[0], "0x25"}
		}
	}
	return c.inner.BatchCall(ctx, elems)
}

// Ingestion never waits on metadata: the devnet is ingested into a fresh
// database while the enrichment runs beside it and the metadata host holds
// every request without answering. Once a fetch hangs, ingestion is made to
// check that later batches still commit; it finishes with the fetch still
// hanging.
func TestIngestNeverWaits(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		host, gw := newMetaServer(t), newMetaServer(t)
		for _, ft := range fetchedTokens {
			srv := host
			if ft.gateway {
				srv = gw
			}
			srv.set(ft.path, modeHang, ft.doc)
		}
		set, err := chains.Build(ctx, chains.Options{NodeURL: testenv.ReplayNode(t),
			GenesisPath: filepath.Join(testenv.DevnetDir(t), "genesis.json"), Log: testLog(), BatchSize: 4})
		if err != nil {
			t.Fatal(err)
		}
		var cChain Chain
		for _, c := range set.Chains {
			if src, ok := c.Source.(*chains.EVMSource); ok {
				cChain = Chain{Key: c.Key, EVMChainID: c.EVMChainID, RPC: tipCaller{src.EVM}}
			}
		}
		cfg := Config{Chains: []Chain{cChain}, Tokens: TokenConfig{Interval: 10 * time.Millisecond},
			Trace: TraceConfig{Interval: 10 * time.Millisecond}, NFT: nftConfig(host, gw)}
		cfg.NFT.Timeout = time.Minute // the host's silence outlasts ingestion
		cfg.NFT.Lease = 3 * time.Minute
		s := newService(t, db, cfg)
		start(t, s)

		var mu sync.Mutex
		var hungAt uint64
		commitsAfter := 0
		hook := func(chain string, height uint64) {
			if chain != "C" {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if hungAt > 0 {
				commitsAfter++
				return
			}
			var n int
			if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM evm_nft_tokens WHERE chain_key = 'C' AND token_id = '2'`).Scan(&n); err != nil || n == 0 {
				return
			}
			// Token 2 (http) is indexed: wait until its fetch hangs at the host.
			deadline := time.Now().Add(20 * time.Second)
			for host.inflight.Load() == 0 {
				if time.Now().After(deadline) {
					t.Errorf("no metadata fetch started within 20s of block %d", height)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			hungAt = height
		}
		begun := time.Now()
		if err := ingest.New(db, set.Chains, ingest.Options{UntilTip: true, AfterCommit: hook}, testLog()).Run(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if hungAt == 0 || commitsAfter == 0 {
			t.Fatalf("fetch hung at block %d, %d C-chain batches committed after it", hungAt, commitsAfter)
		}
		if host.inflight.Load() == 0 {
			t.Fatal("the hanging fetch ended before ingestion: the test proves nothing")
		}
		var tip int64
		if err := db.QueryRowContext(ctx, `SELECT height FROM checkpoints WHERE chain_key = 'C'`).Scan(&tip); err != nil || tip != 37 {
			t.Fatalf("C indexed to %d (%v), want 37", tip, err)
		}
		t.Logf("ingested in %s; %d batches committed while %d metadata fetches hung", time.Since(begun).Round(time.Millisecond),
			commitsAfter, host.inflight.Load())
		// The token-metadata worker ran beside ingestion too.
		waitFor(t, 20*time.Second, "token metadata", func() bool {
			return count(t, db, `SELECT COUNT(*) FROM evm_contracts WHERE chain_key = 'C' AND metadata_status = 'unknown'`) == 0
		})
		host.unblock()
		gw.unblock()
	})
}
