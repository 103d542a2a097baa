package api

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ava-labs/avalanchego/utils/constants"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// ChainRef is one indexed chain as the API sees it.
type ChainRef struct {
	Key          string // P, X, C, or an EVM chain id
	Kind         string // P, X, EVM
	BlockchainID string
	EVMChainID   string
	Name         string
}

// Network describes the one network this index serves.
type Network struct {
	ID    uint32
	Name  string // mainnet, fuji, or the configured name (default testnet)
	HRP   string
	Chain map[string]ChainRef // by key, as loaded (never changed: read without locks)

	// EVM chains registered after loading (L1s the ingester found), read
	// again from the store when a lookup misses or a listing is stale.
	db       *store.DB
	mu       sync.Mutex
	later    map[string]ChainRef
	loadedAt time.Time
}

// How often the chains table is read again: a lookup that misses at most
// every missReload, a listing at most every listReload.
const (
	missReload = time.Second
	listReload = 5 * time.Second
)

// reload reads EVM chains registered since loading, when the last read is
// older than every.
func (n *Network) reload(every time.Duration) {
	if n.db == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if time.Since(n.loadedAt) < every {
		return
	}
	n.loadedAt = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cs, _, err := loadChains(ctx, n.db)
	if err != nil {
		return // the next miss tries again
	}
	later := map[string]ChainRef{}
	for k, c := range cs {
		if _, ok := n.Chain[k]; !ok && c.Kind == "EVM" {
			later[k] = c
		}
	}
	n.later = later
}

// EVMChains lists every indexed EVM chain, those registered since loading
// included, ordered by key.
func (n *Network) EVMChains() []ChainRef {
	n.reload(listReload)
	var out []ChainRef
	for _, c := range n.Chain {
		if c.Kind == "EVM" {
			out = append(out, c)
		}
	}
	n.mu.Lock()
	for _, c := range n.later {
		out = append(out, c)
	}
	n.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// LoadNetwork reads the indexed chains; name is the configured name used for
// networks other than mainnet and fuji.
func LoadNetwork(ctx context.Context, db *store.DB, name string) (*Network, error) {
	chains, id, err := loadChains(ctx, db)
	if err != nil {
		return nil, err
	}
	n := &Network{ID: id, Chain: chains, db: db, loadedAt: time.Now()}
	n.HRP = constants.GetHRP(n.ID)
	switch n.ID {
	case constants.MainnetID:
		n.Name = "mainnet"
	case constants.FujiID:
		n.Name = "fuji"
	default:
		n.Name = name
	}
	return n, nil
}

func loadChains(ctx context.Context, db *store.DB) (map[string]ChainRef, uint32, error) {
	rows, err := db.QueryContext(ctx, `SELECT chain_key, kind, blockchain_id, COALESCE(evm_chain_id, ''), network_id, name FROM chains`)
	if err != nil {
		return nil, 0, fmt.Errorf("load chains: %w", err)
	}
	defer rows.Close()
	out := map[string]ChainRef{}
	var networkID uint32
	for rows.Next() {
		var c ChainRef
		var id int64
		if err := rows.Scan(&c.Key, &c.Kind, &c.BlockchainID, &c.EVMChainID, &id, &c.Name); err != nil {
			return nil, 0, fmt.Errorf("load chains: %w", err)
		}
		networkID = uint32(id)
		out[c.Key] = c
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("load chains: %w", err)
	}
	return out, networkID, nil
}

// CheckNetwork accepts the path's network name: this network's name, with
// fuji and testnet as aliases of each other. Anything else is a 404.
func (n *Network) CheckNetwork(name string) error {
	switch name {
	case "mainnet", "fuji", "testnet":
	default:
		return BadRequest(fmt.Sprintf("network must be one of mainnet, fuji, testnet, got %q", truncate(name)))
	}
	if name == n.Name || (n.Name != "mainnet" && (name == "fuji" || name == "testnet") && (n.Name == "fuji" || n.Name == "testnet")) {
		return nil
	}
	return NotFound("network %s is not indexed by this server (it serves %s)", name, n.Name)
}

// Blockchain resolves a primary-network blockchain id or alias (p-chain,
// x-chain, c-chain) to its chain.
func (n *Network) Blockchain(idOrAlias string) (ChainRef, error) {
	key := ""
	switch strings.ToLower(idOrAlias) {
	case "p-chain":
		key = "P"
	case "x-chain":
		key = "X"
	case "c-chain":
		key = "C"
	}
	if key != "" {
		if c, ok := n.Chain[key]; ok {
			return c, nil
		}
	}
	// The published document types blockchainId as an enum of ids and
	// aliases: a value that is neither (q-chain, a typo) is a bad request;
	// a well-formed id that is not a primary-network chain here is a 404.
	if key == "" {
		if _, err := ParseCB58ID(idOrAlias); err != nil {
			return ChainRef{}, BadRequest(fmt.Sprintf("blockchainId must be a blockchain id or one of p-chain, x-chain, c-chain, got %q", truncate(idOrAlias)))
		}
	}
	for _, k := range []string{"P", "X", "C"} {
		if c, ok := n.Chain[k]; ok && c.BlockchainID == idOrAlias {
			return c, nil
		}
	}
	return ChainRef{}, NotFound("blockchain %q is not a primary-network chain of network %s", truncate(idOrAlias), n.Name)
}

// EVMChain resolves an EVM chain id, blockchain id or alias (c-chain) to an
// indexed EVM chain; a chain registered since loading is found too.
func (n *Network) EVMChain(id string) (ChainRef, error) {
	if strings.EqualFold(id, "c-chain") {
		id = "C"
	}
	match := func(c ChainRef) bool {
		return c.Kind == "EVM" && (c.Key == id || c.EVMChainID == id || c.BlockchainID == id)
	}
	for _, c := range n.Chain {
		if match(c) {
			return c, nil
		}
	}
	for range 2 {
		n.mu.Lock()
		for _, c := range n.later {
			if match(c) {
				n.mu.Unlock()
				return c, nil
			}
		}
		n.mu.Unlock()
		n.reload(missReload)
	}
	return ChainRef{}, NotFound("chain %q is not indexed by this server", truncate(id))
}
