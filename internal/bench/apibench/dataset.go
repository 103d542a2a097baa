// Package apibench measures the data service's latency under concurrent
// clients: it grows a database (one million EVM token transfers and one
// million primary-network UTXOs at full scale) with the indexers' own writers,
// serves it with the real HTTP stack (api.Mux, api.Guard, the primary, EVM
// and ICM routes) on 127.0.0.1, and runs a query mix against every endpoint.
//
//	go test ./internal/bench/apibench -run '^$' -bench BenchmarkAPI -benchtime 1x -timeout 3h
//
// The databases are generated once per backend into a cache directory and
// reused (see Cache); docs/benchmarks.md "Data service latency" has results.
package apibench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Version names the dataset layout: a change of the generator bumps it, so
// stale caches are regenerated rather than reused.
const Version = "v3" // v2: EVM-only scale and subnets; v3: the EVM chain has call traces (internal transactions)

// Config sizes a dataset.
type Config struct {
	Seed int64
	// EVM: blocks after genesis, of TxPerBlock txs each (internal/decode/evm
	// Generator: 70% of txs are ERC-20/721 transfers), plus the injected
	// ERC-1155 and Teleporter logs.
	EVMBlocks  int
	TxPerBlock int
	// Primary network: bech32 addresses, X-chain and P-chain transfer txs
	// (each spends one or two UTXOs and creates two or three), staking.
	Addresses   int
	XTxs        int
	PTxs        int
	Nodes       int
	TxsPerBlock int // P and X txs per block
	Subnets     int // subnets created on the P-chain, with 1 to 3 chains each
}

// FullConfig is the benchmark's dataset: at least one million EVM transfers
// and one million UTXOs.
func FullConfig() Config {
	return Config{Seed: 1, EVMBlocks: 70_000, TxPerBlock: 20, Addresses: 10_000, XTxs: 400_000, PTxs: 80_000,
		Nodes: 400, TxsPerBlock: 10, Subnets: 2000}
}

// EVMConfig is FullConfig's EVM chain (the same seed and sizes: the same
// EVM rows) with SmokeConfig's primary network: for measuring the EVM
// endpoints without generating the primary network's million UTXOs.
func EVMConfig() Config { return evmOnly(FullConfig()) }

// evmOnly is c's EVM chain with SmokeConfig's primary network.
func evmOnly(c Config) Config {
	s := SmokeConfig()
	c.Addresses, c.XTxs, c.PTxs, c.Nodes, c.TxsPerBlock = s.Addresses, s.XTxs, s.PTxs, s.Nodes, s.TxsPerBlock
	return c
}

// X5Config is five times FullConfig (issue #22): at least 5 million EVM
// token transfers and 5 million UTXOs. The traced EVM chain has 10.8
// transfers per 20-tx block (a quarter of its txs are the wrapper's), so 5
// million transfers take 470,000 blocks: 9.4 million txs.
func X5Config() Config {
	return Config{Seed: 1, EVMBlocks: 470_000, TxPerBlock: 20, Addresses: 50_000, XTxs: 2_000_000, PTxs: 400_000,
		Nodes: 2000, TxsPerBlock: 10, Subnets: 2000}
}

// primaryOnly is c's primary network with SmokeConfig's EVM chain: the
// x5 primary network (5 million UTXOs) without the 15 GB of its EVM chain,
// which x5evm measures (issue #22; the whole x5 does not fit this disk).
func primaryOnly(c Config) Config {
	s := SmokeConfig()
	c.EVMBlocks, c.TxPerBlock = s.EVMBlocks, s.TxPerBlock
	return c
}

// SmokeConfig is a tiny dataset of the same shape (tests).
func SmokeConfig() Config {
	return Config{Seed: 1, EVMBlocks: 150, TxPerBlock: 20, Addresses: 200, XTxs: 1500, PTxs: 400, Nodes: 12,
		TxsPerBlock: 10, Subnets: 30}
}

// Manifest records what a dataset holds: its sizes, for the report, and the
// keys the query mix uses (hot and cold addresses, tokens, nodes...).
type Manifest struct {
	Version string `json:"version"`
	Config  Config `json:"config"`
	Network string `json:"network"` // path name of the network (/v1/networks/{network})

	// Sizes.
	EVMBlocks      int64 `json:"evmBlocks"`
	EVMTxs         int64 `json:"evmTxs"`
	EVMTransfers   int64 `json:"evmTransfers"`
	UTXOs          int64 `json:"utxos"`
	XTxCount       int64 `json:"xTxs"`
	PTxCount       int64 `json:"pTxs"`
	Stakers        int64 `json:"stakers"`
	RewardUTXOs    int64 `json:"rewardUtxos"`
	ICMMessages    int64 `json:"icmMessages"`
	GenerateSecs   int64 `json:"generateSeconds"`
	DatabaseBytes  int64 `json:"databaseBytes"`
	EVMChainID     string
	XBlockchainID  string
	PBlockchainID  string
	CBlockchainID  string
	AvaxAssetID    string
	OtherAssetIDs  []string
	XHotAddresses  []string // bech32 without chain prefix, most active first
	XColdAddresses []string
	PHotAddresses  []string
	PColdAddresses []string
	RewardAddrs    []string // reward owners with rewards
	HotNodes       []string // nodes with many validation records
	ColdNodes      []string
	EVMHot         []string // 0x addresses with the most transactions
	EVMWrapper     string   // the contract party to every internal transaction
	EVMCold        []string
	ERC20Hot       []string // tokens with the most transfers
	ERC20Cold      []string
	ERC721         []string
	ERC1155        []string
	ERC1155Holders []string
	NFTTokenIDs    []string // ids of ERC721[0]
	ICMMessageIDs  []string
	ICMAddresses   []string
	ICMRemoteChain string // cb58 id of a remote chain messages go to
	XBlocks        int64  // heights 0..XBlocks-1
	PBlocks        int64
	ProposerNodes  []string // nodes proposing many blocks (first) to few (last)
	SubnetIDs      []string
	ChainIDs       []string // one chain of each subnet

	// Sampled from the database when a dataset is opened (SampleEVM), not
	// kept in the manifest: the by-hash lookups' keys.
	EVMTxHashes    []string `json:"-"`
	EVMBlockHashes []string `json:"-"`
	EVMDeployers   []string `json:"-"`
	EVMDeployed    []string `json:"-"` // contracts whose deployment is indexed
}

func readManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return &m, nil
}

func writeManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "manifest.json.tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, "manifest.json"))
}
