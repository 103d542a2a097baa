// Package chains decides what a deployment follows: given a node URL (and
// further EVM RPC URLs) it asks the node for the network, loads its genesis,
// and builds one ingest.Chain per chain with its source and indexer.
package chains

import (
	"context"
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
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
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
	// Traces: whether EVM blocks are fetched with their call traces
	// (source.TracesAuto: when the node serves them).
	Traces source.TraceMode
	Log    *slog.Logger
}

// Set is the network and the chains built for it.
type Set struct {
	NetworkID uint32
	Genesis   *genesis.Genesis
	Chains    []ingest.Chain
	Node      *source.Avalanche
}

// Build asks the node for the network and builds every chain to follow.
func Build(ctx context.Context, o Options) (*Set, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Retry.Logger == nil {
		o.Retry.Logger = o.Log
	}
	node, err := source.NewAvalanche(o.NodeURL, o.Retry)
	if err != nil {
		return nil, err
	}
	networkID, err := node.NetworkID(ctx)
	if err != nil {
		return nil, fmt.Errorf("chains: network id from %s: %w", o.NodeURL, err)
	}
	g, err := genesis.Load(networkID, o.GenesisPath)
	if err != nil {
		return nil, err
	}
	xTx, _, err := g.Chain(constants.AVMID)
	if err != nil {
		return nil, err
	}
	cTx, _, err := g.Chain(constants.EVMID)
	if err != nil {
		return nil, err
	}
	// The node must serve the network the genesis describes.
	if xID, err := node.BlockchainID(ctx, "X"); err != nil {
		return nil, fmt.Errorf("chains: X-chain id from node: %w", err)
	} else if xID != xTx.ID() {
		return nil, fmt.Errorf("chains: node's X-chain is %s, genesis says %s", xID, xTx.ID())
	}
	set := &Set{NetworkID: networkID, Genesis: g, Node: node}
	workers := max(o.Workers, 8)

	evmOpts := source.EVMOptions{BatchSize: o.RPCBatch, Concurrency: o.RPCConcurrency, Retry: o.Retry, Traces: o.Traces}
	cEVM, err := source.NewEVM(ctx, node.BaseURL()+source.PathCRPC, evmOpts)
	if err != nil {
		return nil, err
	}
	cChainID, err := cEVM.ChainID(ctx)
	if err != nil {
		return nil, fmt.Errorf("chains: C-chain id: %w", err)
	}
	evmChains := []evmChain{{key: "C", name: "C-Chain", blockchainID: cTx.ID(), chainID: cChainID, src: cEVM}}
	var extraKeys []pchain.ChainKey
	for _, u := range o.EVMRPCs {
		src, err := source.NewEVM(ctx, u, evmOpts)
		if err != nil {
			return nil, err
		}
		id, err := src.ChainID(ctx)
		if err != nil {
			return nil, fmt.Errorf("chains: chain id of %s: %w", u, err)
		}
		key := strconv.FormatUint(id, 10)
		bc := blockchainIDFromURL(u)
		evmChains = append(evmChains, evmChain{key: key, name: "EVM " + key, blockchainID: bc, chainID: id, src: src})
		if bc != ids.Empty {
			extraKeys = append(extraKeys, pchain.ChainKey{Key: key, BlockchainID: bc})
		}
	}

	pIx, err := pchain.NewIndexer(g, extraKeys...)
	if err != nil {
		return nil, err
	}
	xIx, err := xchain.NewIndexer(g, o.Log)
	if err != nil {
		return nil, err
	}
	set.Chains = append(set.Chains,
		ingest.Chain{Key: "P", Kind: "P", BlockchainID: constants.PlatformChainID.String(), NetworkID: networkID, Name: "P-Chain",
			Source: &ingest.PSource{Node: node, Workers: workers, Wrappers: ingest.NewWrappers("P", nodeIndex{node: node, chain: "P"}, o.Log)}, Indexer: pIx, BatchSize: o.BatchSize},
		ingest.Chain{Key: "X", Kind: "X", BlockchainID: xTx.ID().String(), NetworkID: networkID, Name: "X-Chain",
			Source: &ingest.XSource{Node: node, Workers: workers, Wrappers: ingest.NewWrappers("X", nodeIndex{node: node, chain: "X"}, o.Log)}, Indexer: xIx, BatchSize: o.BatchSize},
	)
	atomic, err := catomic.New(g, o.Log)
	if err != nil {
		return nil, err
	}
	// One ICM indexer for every EVM chain: it joins messages across them.
	icmIx, err := icm.NewIndexer(icm.Config{Logger: o.Log})
	if err != nil {
		return nil, err
	}
	for _, c := range evmChains {
		cfg := evm.Config{ChainKey: c.key, ChainID: new(big.Int).SetUint64(c.chainID), Logger: o.Log,
			Logs: ICMSink{Indexer: icmIx, Chain: icm.ChainInfo{Key: c.key, BlockchainID: c.blockchainID, EVMChainID: strconv.FormatUint(c.chainID, 10)}}}
		if c.key == "C" {
			alloc, err := cAlloc(g)
			if err != nil {
				return nil, err
			}
			cfg.GenesisAlloc = alloc
			cfg.Atomic = atomicAdapter{atomic}
		}
		ix, err := evm.NewIndexer(cfg)
		if err != nil {
			return nil, err
		}
		bc := c.blockchainID.String()
		if c.blockchainID == ids.Empty {
			bc = "evm-" + c.key // not an Avalanche chain URL: no blockchain id to show
		}
		set.Chains = append(set.Chains, ingest.Chain{Key: c.key, Kind: "EVM", BlockchainID: bc, EVMChainID: strconv.FormatUint(c.chainID, 10),
			NetworkID: networkID, Name: c.name, Source: &EVMSource{EVM: c.src}, Indexer: ix, BatchSize: o.BatchSize, FetchSize: c.src.ParallelHeights()})
	}
	// Every chain's blocks also feed the metrics service's rollups, in the
	// same transaction (average TPS, NFT holders).
	for i := range set.Chains {
		c := &set.Chains[i]
		c.Indexer = metrics.WithRollup(c.Key, c.Kind, c.Indexer)
	}
	return set, nil
}

// EVMNodes are the EVM chains' node clients by chain key.
func (s *Set) EVMNodes() map[string]*source.EVM {
	out := map[string]*source.EVM{}
	for _, c := range s.Chains {
		if src, ok := c.Source.(*EVMSource); ok {
			out[c.Key] = src.EVM
		}
	}
	return out
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
	c, err := g.CChain()
	if err != nil {
		return nil, err
	}
	out := make(map[common.Address]*big.Int, len(c.Alloc))
	for addr, a := range c.Alloc {
		v, ok := parseBig(a.Balance)
		if !ok {
			return nil, fmt.Errorf("chains: C genesis balance of %s: %q", addr, a.Balance)
		}
		out[common.HexToAddress(addr)] = v
	}
	return out, nil
}

func parseBig(s string) (*big.Int, bool) {
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		return new(big.Int).SetString(s[2:], 16)
	}
	return new(big.Int).SetString(s, 10)
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
		if s.Indexer.Wants(s.Chain.Key, l.Address) {
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

// EVMSource adapts the EVM client to the pipeline.
type EVMSource struct{ EVM *source.EVM }

func (s *EVMSource) Tip(ctx context.Context) (uint64, error) { return s.EVM.BlockNumber(ctx) }

// Notice says when blocks are fetched without call traces (status shows it).
func (s *EVMSource) Notice() string { return s.EVM.TraceNotice() }

func (s *EVMSource) Fetch(ctx context.Context, from, to uint64) ([]ingest.RawBlock, error) {
	blocks, err := s.EVM.Blocks(ctx, from, to)
	if err != nil {
		return nil, err
	}
	out := make([]ingest.RawBlock, len(blocks))
	for i := range blocks {
		out[i] = ingest.RawBlock{Height: blocks[i].Height, Hash: blocks[i].Hash, Bytes: blocks[i].Bytes(), Timestamp: blocks[i].Timestamp}
	}
	return out, nil
}
