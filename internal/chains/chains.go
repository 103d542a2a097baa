// Package chains decides what a deployment follows: given a node URL (and
// further EVM RPC URLs) it asks the node for the network, loads its genesis,
// and builds one ingest.Chain per chain with its source and indexer.
package chains

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/decode/catomic"
	"github.com/permafrost-dev/permafrost/internal/decode/evm"
	"github.com/permafrost-dev/permafrost/internal/decode/icm"
	"github.com/permafrost-dev/permafrost/internal/decode/pchain"
	"github.com/permafrost-dev/permafrost/internal/decode/xchain"
	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/metrics"
	"github.com/permafrost-dev/permafrost/internal/obs"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/webhooks"
)

// Options say where the chains are and how to fetch them.
type Options struct {
	NodeURL     string   // avalanchego base URL
	GenesisPath string   // genesis file for networks other than mainnet/fuji
	EVMRPCs     []string // further EVM chains
	BatchSize   int      // blocks per write transaction
	// RPCBatch and RPCConcurrency: EVM heights per JSON-RPC batch and
	// batches in flight (0: source.EVMOptions' defaults).
	RPCBatch, RPCConcurrency int
	Workers                  int // P/X blocks fetched in parallel
	// Retry is the nodes' retry policy (zero: source.Retry's defaults).
	Retry source.Retry
	// EVMGenesis holds the genesis allocation of further EVM chains outside
	// this network (--evm-genesis), by EVM chain id.
	EVMGenesis map[uint64]map[common.Address]*big.Int
	// ICMAllow and ICMDeny: see icm.Config.
	ICMAllow, ICMDeny []common.Address
	// Traces: whether EVM blocks are fetched with their call traces
	// (source.TracesAuto: when the node serves them).
	Traces source.TraceMode
	Log    *slog.Logger
	// Metrics, when set, measures the node calls (and is handed on through
	// Set.Metrics to what the set is used for).
	Metrics *obs.Metrics
}

// Set is the network and the chains built for it.
type Set struct {
	NetworkID uint32
	Genesis   *genesis.Genesis
	Chains    []ingest.Chain
	Node      *source.Avalanche

	opts    Options
	evmOpts source.EVMOptions
	icm     *icm.Indexer
	atomic  atomicAdapter
	l1URLs  map[ids.ID]string // --evm-rpc URLs of chains of this network, by blockchain ID
	l1      l1State
}

// Build asks the node for the network and builds every chain to follow.
func Build(ctx context.Context, o Options) (*Set, error) {
	set, err := newSet(o)
	if err != nil {
		return nil, err
	}
	node := set.Node
	networkID, err := node.NetworkID(ctx)
	if err != nil {
		return nil, fmt.Errorf("chains: network id from %s: %w", o.NodeURL, err)
	}
	if err := set.loadGenesis(networkID); err != nil {
		return nil, err
	}
	// The node must serve the network the genesis describes.
	xTx, _, err := set.Genesis.Chain(constants.AVMID)
	if err != nil {
		return nil, err
	}
	if xID, err := node.BlockchainID(ctx, "X"); err != nil {
		return nil, fmt.Errorf("chains: X-chain id from node: %w", err)
	} else if xID != xTx.ID() {
		return nil, fmt.Errorf("chains: node's X-chain is %s, genesis says %s", xID, xTx.ID())
	}
	cEVM, err := source.NewEVM(ctx, node.BaseURL()+source.PathCRPC, set.evmOpts)
	if err != nil {
		return nil, err
	}
	cChainID, err := cEVM.ChainID(ctx)
	if err != nil {
		return nil, fmt.Errorf("chains: C-chain id: %w", err)
	}
	var others []evmChain
	for _, u := range o.EVMRPCs {
		// A chain of this network (its URL names its blockchain ID) is
		// followed once the P-chain index holds its CreateChainTx, whose
		// genesis gives the allocation: see Discover.
		if bc := blockchainIDFromURL(u); bc != ids.Empty {
			set.l1URLs[bc] = u
			continue
		}
		src, err := source.NewEVM(ctx, u, set.evmOpts)
		if err != nil {
			return nil, err
		}
		id, err := src.ChainID(ctx)
		if err != nil {
			return nil, fmt.Errorf("chains: chain id of %s: %w", u, err)
		}
		key := strconv.FormatUint(id, 10)
		if o.EVMGenesis[id] == nil {
			o.Log.Warn("chains: no genesis for an EVM chain outside this network (--evm-genesis); its genesis allocation is not indexed", "url", u, "chain_id", id)
		}
		others = append(others, evmChain{key: key, name: "EVM " + key, chainID: id, src: src, alloc: o.EVMGenesis[id]})
	}
	if err := set.assemble(cEVM, cChainID, others); err != nil {
		return nil, err
	}
	return set, nil
}

// Offline builds the set from what the index recorded (the network id, the
// C-chain's EVM chain id, the L1s followed before), without contacting any
// node: reindex, and serving the index while the node is down. Its chains'
// sources are clients that have not asked anything yet.
func Offline(ctx context.Context, db *store.DB, o Options) (*Set, error) {
	set, err := newSet(o)
	if err != nil {
		return nil, err
	}
	var networkID int64
	var cChainID string
	err = db.QueryRowContext(ctx, `SELECT network_id, COALESCE(evm_chain_id, '') FROM chains WHERE chain_key = 'C'`).Scan(&networkID, &cChainID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errors.New("chains: the index holds no chain yet: the node must answer once before the index can be used without it")
	}
	if err != nil {
		return nil, fmt.Errorf("chains: read the indexed network: %w", err)
	}
	cID, err := strconv.ParseUint(cChainID, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("chains: indexed C-chain id %q: %w", cChainID, err)
	}
	if err := set.loadGenesis(uint32(networkID)); err != nil {
		return nil, err
	}
	cEVM, err := source.NewEVM(ctx, set.Node.BaseURL()+source.PathCRPC, set.evmOpts)
	if err != nil {
		return nil, err
	}
	for _, u := range o.EVMRPCs {
		if bc := blockchainIDFromURL(u); bc != ids.Empty {
			set.l1URLs[bc] = u
		}
	}
	if err := set.assemble(cEVM, cID, nil); err != nil {
		return nil, err
	}
	l1s, err := set.IndexedL1s(ctx, db)
	if err != nil {
		return nil, err
	}
	set.Chains = append(set.Chains, l1s...)
	return set, nil
}

// Metrics is Options.Metrics (nil: none).
func (s *Set) Metrics() *obs.Metrics { return s.opts.Metrics }

func newSet(o Options) (*Set, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Retry.Logger == nil {
		o.Retry.Logger = o.Log
	}
	if o.Retry.Observe == nil && o.Metrics != nil {
		o.Retry.Observe = o.Metrics.NodeCall
	}
	node, err := source.NewAvalanche(o.NodeURL, o.Retry)
	if err != nil {
		return nil, err
	}
	return &Set{Node: node, opts: o, l1URLs: map[ids.ID]string{},
		evmOpts: source.EVMOptions{BatchSize: o.RPCBatch, Concurrency: o.RPCConcurrency, Retry: o.Retry, Traces: o.Traces}}, nil
}

func (s *Set) loadGenesis(networkID uint32) error {
	g, err := genesis.Load(networkID, s.opts.GenesisPath)
	if err != nil {
		return err
	}
	s.NetworkID, s.Genesis = networkID, g
	return nil
}

// assemble builds the P, X and C chains and the others given.
func (s *Set) assemble(cEVM *source.EVM, cChainID uint64, others []evmChain) error {
	g, o, node, networkID := s.Genesis, s.opts, s.Node, s.NetworkID
	workers := max(o.Workers, 8)
	xTx, _, err := g.Chain(constants.AVMID)
	if err != nil {
		return err
	}
	cTx, _, err := g.Chain(constants.EVMID)
	if err != nil {
		return err
	}
	evmChains := append([]evmChain{{key: "C", name: "C-Chain", blockchainID: cTx.ID(), chainID: cChainID, src: cEVM}}, others...)
	pIx, err := pchain.NewIndexer(g)
	if err != nil {
		return err
	}
	pIx.Log = o.Log // every line in the configured format (--log-format json)
	xIx, err := xchain.NewIndexer(g, o.Log)
	if err != nil {
		return err
	}
	dag := xchain.NewDAG(xIx, dagIndex{node: node}, XHistoryNotice(g), o.Log)
	s.Chains = append(s.Chains,
		ingest.Chain{Key: "P", Kind: "P", BlockchainID: constants.PlatformChainID.String(), NetworkID: networkID, Name: "P-Chain",
			Source: &ingest.PSource{Node: node, Workers: workers, Wrappers: ingest.NewWrappers("P", nodeIndex{node: node, chain: "P"}, o.Log)}, Indexer: pIx, BatchSize: o.BatchSize},
		ingest.Chain{Key: "X", Kind: "X", BlockchainID: xTx.ID().String(), NetworkID: networkID, Name: "X-Chain",
			Source: &ingest.XSource{Node: node, Workers: workers, Wrappers: ingest.NewWrappers("X", nodeIndex{node: node, chain: "X"}, o.Log),
				MissingHistory: dag}, Indexer: xIx, History: dag, BatchSize: o.BatchSize},
	)
	atomic, err := catomic.New(g, o.Log)
	if err != nil {
		return err
	}
	// One ICM indexer for every EVM chain: it joins messages across them.
	s.icm, err = icm.NewIndexer(icm.Config{Allow: o.ICMAllow, Deny: o.ICMDeny, Logger: o.Log})
	if err != nil {
		return err
	}
	s.atomic = atomicAdapter{atomic}
	for _, c := range evmChains {
		if c.key == "C" {
			if c.alloc, err = cAlloc(g); err != nil {
				return err
			}
		}
		ch, err := s.evmChain(c)
		if err != nil {
			return err
		}
		s.Chains = append(s.Chains, ch)
	}
	for i := range s.Chains {
		s.Chains[i].Indexer = Decorate(s.Chains[i].Key, s.Chains[i].Kind, s.Chains[i].Indexer)
	}
	return nil
}

// Decorate wraps a chain's indexer as every indexing process runs it: the
// metrics rollups and the webhook events (issue #20) are written in the
// block's transaction.
func Decorate(key, kind string, ix ingest.Indexer) ingest.Indexer {
	return webhooks.WithEvents(key, kind, metrics.WithRollup(key, kind, ix))
}

// evmChain builds the ingest.Chain of one EVM chain: its indexer (with the
// ICM sink, the C-chain's atomic txs) over its source. Every chain's blocks
// also feed the metrics service's rollups, in the same transaction.
func (s *Set) evmChain(c evmChain) (ingest.Chain, error) {
	cfg := evm.Config{ChainKey: c.key, ChainID: new(big.Int).SetUint64(c.chainID), Logger: s.opts.Log, GenesisAlloc: c.alloc,
		Logs: ICMSink{Indexer: s.icm, Chain: icm.ChainInfo{Key: c.key, BlockchainID: c.blockchainID, EVMChainID: strconv.FormatUint(c.chainID, 10)}}}
	if c.key == "C" {
		cfg.Atomic = s.atomic
	} else {
		// subnet-evm chains may enable the native minter, at genesis or by a
		// later precompile upgrade: its calls are watched on every L1.
		cfg.Minters, cfg.MinterEnabled = []common.Address{evm.NativeMinterAddress}, c.minterEnabled
	}
	ix, err := evm.NewIndexer(cfg)
	if err != nil {
		return ingest.Chain{}, err
	}
	bc := c.blockchainID.String()
	if c.blockchainID == ids.Empty {
		bc = "evm-" + c.key // not an Avalanche chain URL: no blockchain id to show
	}
	ch := ingest.Chain{Key: c.key, Kind: "EVM", BlockchainID: bc, EVMChainID: strconv.FormatUint(c.chainID, 10),
		NetworkID: s.NetworkID, Name: c.name, Indexer: ix, BatchSize: s.opts.BatchSize}
	if c.src != nil { // nil for reindex, which reads no node
		ch.Source, ch.FetchSize = &EVMSource{EVM: c.src, Decoder: ix}, c.src.ParallelHeights()
	}
	return ch, nil
}

// EVMNodeURL is the JSON-RPC URL of an EVM chain's node ("" when none is
// known): the source of a chain of the set, or, for an L1 (blockchainID
// cb58) found later, its --evm-rpc URL or the node's /ext/bc/<id>/rpc.
func (s *Set) EVMNodeURL(key, blockchainID string) string {
	for _, c := range s.Chains {
		if src, ok := c.Source.(*EVMSource); ok && c.Key == key && src.EVM != nil {
			return src.EVM.URL()
		}
	}
	id, err := ids.FromString(blockchainID)
	if err != nil {
		return ""
	}
	if u := s.l1URLs[id]; u != "" {
		return u
	}
	return s.Node.BaseURL() + "/ext/bc/" + id.String() + "/rpc"
}

// nodeIndex is the node's block index of one chain, as ingest.WrapperIndex.
// Whether the node has one is learnt on first use, so serving never waits
// for it.
type nodeIndex struct {
	node  *source.Avalanche
	chain string
}

func (n nodeIndex) Last(ctx context.Context) (uint64, []byte, error) {
	c, err := n.node.IndexLastAccepted(ctx, n.chain)
	if err != nil {
		return 0, nil, indexError(err)
	}
	return c.Index, c.Bytes, nil
}

func (n nodeIndex) Range(ctx context.Context, start uint64, count int) ([][]byte, error) {
	cs, err := n.node.IndexContainers(ctx, n.chain, start, count)
	if err != nil {
		return nil, indexError(err)
	}
	out := make([][]byte, len(cs))
	for i, c := range cs {
		out[i] = c.Bytes
	}
	return out, nil
}

// indexError maps the node's answers that say "no index" (HTTP 404) and
// "nothing there yet" (avalanchego's indexer errors for an empty index or a
// position past its end) to ingest's errors.
func indexError(err error) error {
	var he *source.HTTPError
	var re *source.RPCError
	switch {
	case errors.As(err, &he) && he.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %w", ingest.ErrNoIndex, err)
	case errors.As(err, &re) && (strings.Contains(re.Message, "no containers have been accepted") ||
		strings.Contains(re.Message, "> last accepted index")):
		return fmt.Errorf("%w: %w", ingest.ErrIndexEmpty, err)
	}
	return err
}

type evmChain struct {
	key, name    string
	blockchainID ids.ID
	chainID      uint64
	src          *source.EVM
	alloc        map[common.Address]*big.Int
	// minterEnabled: the genesis enables subnet-evm's native minter.
	minterEnabled bool
}

// blockchainIDFromURL reads the blockchain id from an avalanchego URL of the
// form .../ext/bc/<id>/rpc, or returns ids.Empty.
func blockchainIDFromURL(raw string) ids.ID {
	u, err := url.Parse(raw)
	if err != nil {
		return ids.Empty
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "ext" && parts[i+1] == "bc" {
			if id, err := ids.FromString(parts[i+2]); err == nil {
				return id
			}
		}
	}
	return ids.Empty
}

func cAlloc(g *genesis.Genesis) (map[common.Address]*big.Int, error) {
	c, err := genesis.ParseEVM([]byte(g.Config.CChainGenesis))
	if err != nil {
		return nil, fmt.Errorf("chains: C-chain %w", err)
	}
	return c.Alloc, nil
}

// atomicAdapter lets the EVM indexer index the C-chain's atomic txs.
type atomicAdapter struct{ a *catomic.Applier }

func (ad atomicAdapter) ApplyAtomic(ctx context.Context, tx *store.Tx, height uint64, t int64, hash string, extra []byte) ([]evm.BalanceDelta, error) {
	changes, err := ad.a.ApplyBlock(ctx, tx, catomic.Block{Height: height, Hash: hash, Time: t}, extra)
	if err != nil {
		return nil, err
	}
	var out []evm.BalanceDelta
	for _, c := range changes {
		if c.Wei != nil {
			out = append(out, evm.BalanceDelta{Address: c.Address, Delta: c.Wei})
		}
	}
	return out, nil
}

// ICMSink feeds an EVM chain's logs to the ICM indexer (the EVM indexer's
// LogSink): the logs of the Teleporter messengers it watches, per block.
type ICMSink struct {
	Indexer *icm.Indexer
	Chain   icm.ChainInfo
}

func (s ICMSink) ApplyLogs(ctx context.Context, tx *store.Tx, number uint64, hash common.Hash, t int64, logs []evm.Log) error {
	var want []icm.Log
	for _, l := range logs {
		if s.Indexer.Wants(l.Address, l.Topics) {
			want = append(want, icm.Log{Address: l.Address, Topics: l.Topics, Data: l.Data, LogIndex: l.LogIndex,
				TxHash: l.TxHash, TxIndex: l.TxIndex, TxFrom: l.TxFrom, TxGasUsed: l.TxGasUsed})
		}
	}
	if len(want) == 0 {
		return nil
	}
	return s.Indexer.ApplyLogs(ctx, tx, s.Chain, icm.BlockInfo{Number: number, Hash: hash, Time: t}, want)
}

func (s ICMSink) DerivedTables() []string { return s.Indexer.DerivedTables() }

// EVMSource adapts the EVM client to the pipeline. Decoder, when set (the
// chain's EVM indexer), parses each block in the fetch: what it made of a
// block is the block's Prepared (one pass over each block's JSON for the
// source's checks and the indexer).
type EVMSource struct {
	EVM     *source.EVM
	Decoder source.BlockDecoder
}

func (s *EVMSource) Tip(ctx context.Context) (uint64, error) { return s.EVM.BlockNumber(ctx) }

// Notice says when blocks are fetched without call traces (status shows it).
func (s *EVMSource) Notice() string { return s.EVM.TraceNotice() }

func (s *EVMSource) Fetch(ctx context.Context, from, to uint64) ([]ingest.RawBlock, error) {
	blocks, err := s.EVM.DecodeBlocks(ctx, from, to, s.Decoder)
	if err != nil {
		return nil, err
	}
	out := make([]ingest.RawBlock, len(blocks))
	for i := range blocks {
		out[i] = ingest.RawBlock{Height: blocks[i].Height, Hash: blocks[i].Hash, Bytes: blocks[i].Bytes(), Timestamp: blocks[i].Timestamp,
			Prepared: blocks[i].Decoded}
	}
	return out, nil
}
