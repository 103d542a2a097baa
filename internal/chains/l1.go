package chains

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// notServedRetry is how long a chain the node does not serve (it does not
// track the subnet) is left alone before it is asked again.
const notServedRetry = 5 * time.Minute

// probeTimeout bounds asking a node whether it serves a chain.
const probeTimeout = 5 * time.Second

// l1State is what discovery remembers between rounds.
type l1State struct {
	mu        sync.Mutex
	notServed map[ids.ID]time.Time // chain -> when the node last did not serve it
	ignored   map[ids.ID]bool      // chains that are not EVM chains (their genesis is not an EVM genesis)
}

// Discover returns the EVM chains created on the P-chain (the CreateChainTx
// rows of the P-chain index, p_blockchains) that a node serves and that
// known (chain keys) lacks: an L1 or subnet chain is followed like the
// C-chain, from its own genesis (the CreateChainTx's genesis bytes give its
// EVM chain id and allocation), on the node's /ext/bc/<blockchainID>/rpc or
// the --evm-rpc URL naming it. It is ingest.Options.Discover.
func (s *Set) Discover(db *store.DB) func(ctx context.Context, known map[string]bool) ([]ingest.Chain, error) {
	return func(ctx context.Context, known map[string]bool) ([]ingest.Chain, error) {
		rows, err := db.QueryContext(ctx, `SELECT blockchain_id, name, genesis_data FROM p_blockchains
			WHERE chain_key = '' ORDER BY created_height, blockchain_id`)
		if err != nil {
			return nil, fmt.Errorf("chains: read created chains: %w", err)
		}
		type created struct {
			id      ids.ID
			name    string
			genesis []byte
		}
		var cs []created
		for rows.Next() {
			var c created
			var id string
			if err := rows.Scan(&id, &c.name, &c.genesis); err != nil {
				rows.Close()
				return nil, fmt.Errorf("chains: read created chains: %w", err)
			}
			if c.id, err = ids.FromString(id); err == nil {
				cs = append(cs, c)
			}
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("chains: read created chains: %w", err)
		}
		var out []ingest.Chain
		found := map[string]bool{}
		for _, c := range cs {
			ch, ok, err := s.l1Chain(ctx, c.id, c.name, c.genesis, func(key string) bool { return known[key] || found[key] })
			if err != nil {
				return out, err
			}
			if ok {
				found[ch.Key] = true
				out = append(out, ch)
			}
		}
		return out, nil
	}
}

// l1Chain builds the chain id created with genesis, when it is an EVM chain
// a node serves.
func (s *Set) l1Chain(ctx context.Context, id ids.ID, name string, gen []byte, known func(key string) bool) (ingest.Chain, bool, error) {
	st := &s.l1
	st.mu.Lock()
	if st.notServed == nil {
		st.notServed, st.ignored = map[ids.ID]time.Time{}, map[ids.ID]bool{}
	}
	skip := st.ignored[id] || time.Since(st.notServed[id]) < notServedRetry
	st.mu.Unlock()
	if skip {
		return ingest.Chain{}, false, nil
	}
	g, err := genesis.ParseEVM(gen)
	if err != nil {
		// Another VM (xsvm, a custom VM): nothing here to index.
		st.mu.Lock()
		st.ignored[id] = true
		st.mu.Unlock()
		s.opts.Log.Debug("chains: created chain is not an EVM chain", "blockchain_id", id, "err", err)
		return ingest.Chain{}, false, nil
	}
	key := strconv.FormatUint(g.ChainID, 10)
	if known(key) || key == "C" {
		return ingest.Chain{}, false, nil
	}
	url := s.l1URLs[id]
	if url == "" {
		url = s.Node.BaseURL() + "/ext/bc/" + id.String() + "/rpc"
	}
	chainID, err := probeEVM(ctx, url)
	switch {
	case err != nil:
		st.mu.Lock()
		first := st.notServed[id].IsZero()
		st.notServed[id] = time.Now()
		st.mu.Unlock()
		if first {
			s.opts.Log.Info("chains: a chain of this network is not served by the node (it does not track the subnet, or --evm-rpc names no URL for it); asking again later",
				"blockchain_id", id, "name", name, "chain_id", g.ChainID, "url", url, "err", err)
		}
		return ingest.Chain{}, false, nil
	case chainID != g.ChainID:
		st.mu.Lock()
		st.ignored[id] = true
		st.mu.Unlock()
		s.opts.Log.Error("chains: the node's chain id differs from the chain's genesis; not indexed", "blockchain_id", id,
			"url", url, "node_chain_id", chainID, "genesis_chain_id", g.ChainID)
		return ingest.Chain{}, false, nil
	}
	src, err := source.NewEVM(ctx, url, s.evmOpts)
	if err != nil {
		return ingest.Chain{}, false, err
	}
	if len(g.Precompiles) > 0 {
		s.opts.Log.Info("chains: L1 genesis enables precompiles", "blockchain_id", id, "precompiles", g.Precompiles)
	}
	ch, err := s.evmChain(evmChain{key: key, name: name, blockchainID: id, chainID: g.ChainID, src: src, alloc: g.Alloc,
		minterEnabled: slices.Contains(g.Precompiles, "contractNativeMinterConfig")})
	if err != nil {
		return ingest.Chain{}, false, err
	}
	ch.Indexer = Decorate(ch.Key, ch.Kind, ch.Indexer)
	return ch, true, nil
}

// probeEVM asks url for its chain id once, briefly: a node that does not
// serve the chain answers 404.
func probeEVM(ctx context.Context, url string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	src, err := source.NewEVM(ctx, url, source.EVMOptions{Retry: source.Retry{MaxAttempts: 1}})
	if err != nil {
		return 0, err
	}
	defer src.Close()
	id, err := src.ChainID(ctx)
	var he *source.HTTPError
	if errors.As(err, &he) && he.StatusCode == http.StatusNotFound {
		return 0, fmt.Errorf("not served (HTTP 404)")
	}
	return id, err
}

// IndexedL1s returns the chains the index holds beside the set's own (L1s
// found by Discover on an earlier run), built from their CreateChainTx
// genesis without asking any node: what reindex rebuilds.
func (s *Set) IndexedL1s(ctx context.Context, db *store.DB) ([]ingest.Chain, error) {
	have := map[string]bool{}
	for _, c := range s.Chains {
		have[c.Key] = true
	}
	rows, err := db.QueryContext(ctx, `SELECT c.chain_key, c.blockchain_id, c.name, b.genesis_data FROM chains c
		JOIN p_blockchains b ON b.blockchain_id = c.blockchain_id WHERE c.kind = 'EVM' ORDER BY c.chain_key`)
	if err != nil {
		return nil, fmt.Errorf("chains: read indexed L1s: %w", err)
	}
	defer rows.Close()
	var out []ingest.Chain
	for rows.Next() {
		var key, bc, name string
		var gen []byte
		if err := rows.Scan(&key, &bc, &name, &gen); err != nil {
			return nil, fmt.Errorf("chains: read indexed L1s: %w", err)
		}
		if have[key] {
			continue
		}
		id, err := ids.FromString(bc)
		if err != nil {
			return nil, fmt.Errorf("chains: indexed chain %s: blockchain id %q: %w", key, bc, err)
		}
		g, err := genesis.ParseEVM(gen)
		if err != nil {
			return nil, fmt.Errorf("chains: indexed chain %s: %w", key, err)
		}
		ch, err := s.evmChain(evmChain{key: key, name: name, blockchainID: id, chainID: g.ChainID, alloc: g.Alloc,
			minterEnabled: slices.Contains(g.Precompiles, "contractNativeMinterConfig")})
		if err != nil {
			return nil, err
		}
		ch.Indexer = Decorate(ch.Key, ch.Kind, ch.Indexer)
		out = append(out, ch)
	}
	return out, rows.Err()
}
