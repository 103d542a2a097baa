package livenet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ava-labs/avalanchego/api/info"
	"github.com/ava-labs/avalanchego/config"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/tests/fixture/tmpnet"
	"github.com/ava-labs/avalanchego/upgrade"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/crypto/bls/signer/localsigner"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/ava-labs/avalanchego/vms/platformvm/signer"
)

// NetworkConfig configures Start.
type NetworkConfig struct {
	Binaries *Binaries
	// RootDir holds the network's directory (node data, logs, tmpnet
	// config). Use a test temp dir.
	RootDir string
	// Logf gets progress lines (may be nil).
	Logf func(string, ...any)
	// NodeLog receives tmpnet's orchestration log (default: RootDir/tmpnet.log).
	NodeLog io.Writer
}

// Network is a running live network: two primary-network validators plus
// the node validating the main L1.
type Network struct {
	TmpNet *tmpnet.Network
	// Validators are the two genesis validators of the primary network.
	Validators []*tmpnet.Node
	// L1Node validates the main L1 (and tracks the primary network, like
	// every node), so it serves P, X, C and the L1 chain.
	L1Node *tmpnet.Node

	Keys *Keys
	// Log holds every tx issued so far: the setup's (L1 creation) and,
	// after Run, the workload's.
	Log *TxLog

	NetworkID   uint32
	HRP         string
	PChainID    ids.ID
	XChainID    ids.ID
	CChainID    ids.ID
	AVAXAssetID ids.ID
	// CEVMChainID is the C-chain's EVM chain ID (tmpnet: the network ID).
	CEVMChainID *big.Int

	L1 *L1

	// GenesisPath is the network's genesis (tmpnet's format, which is
	// avalanchego's genesis config), as Permafrost's --genesis needs it.
	GenesisPath string

	StartDuration time.Duration

	logf   func(string, ...any)
	logger logging.Logger
	closer io.Closer
	reaper *os.Process
}

// L1 describes the main Avalanche L1: a subnet-evm chain on a subnet
// converted with ConvertSubnetToL1Tx, validated by Network.L1Node.
type L1 struct {
	SubnetID     ids.ID
	BlockchainID ids.ID
	ChainName    string
	EVMChainID   *big.Int
	Genesis      []byte
	ConvertTxID  ids.ID
	// ManagerAddress is the (arbitrary) validator manager address given to
	// ConvertSubnetToL1Tx; no contract is deployed there.
	ManagerAddress []byte
	ValidationIDs  []ids.ID
	ValidatorNode  ids.NodeID
	// Admin is the precompile admin (native minter, fee manager, reward
	// manager, tx and deployer allow lists); Enabled are allow-listed.
	Admin   *Key
	Enabled []*Key
}

// Node flags every node gets. The open-file hard limit here is 20,000 while
// avalanchego asks for 32,768 by default; staking periods of seconds let the
// workload see RewardValidatorTx within minutes.
func defaultFlags() (tmpnet.FlagsMap, error) {
	upgrades := upgrade.Default
	// Short Granite epochs: the P-chain height the proposervm (and Warp
	// verification) uses advances every few seconds, as in the recordings.
	upgrades.GraniteEpochDuration = 5 * time.Second
	upgradeJSON, err := json.Marshal(upgrades)
	if err != nil {
		return nil, err
	}
	return tmpnet.FlagsMap{
		config.IndexEnabledKey:               "true",
		config.FdLimitKey:                    "16384",
		config.MinStakeDurationKey:           "1s",
		config.ProposerVMUseCurrentHeightKey: "true",
		config.UpgradeFileContentKey:         base64.StdEncoding.EncodeToString(upgradeJSON),
		config.LogLevelKey:                   "info",
		config.LogDisplayLevelKey:            "off",
		config.HTTPHostKey:                   "127.0.0.1",
		config.StakingHostKey:                "127.0.0.1",
		config.PublicIPKey:                   "127.0.0.1",
	}, nil
}

// EVMChainConfig is the chain config of the C-chain and of the L1 chain:
// archive mode (historical eth_getBalance), debug tracers, Warp API. The
// explicit log level overrides tmpnet's default of trace for the C-chain.
func EVMChainConfig() map[string]any {
	return map[string]any{
		"eth-apis":         []string{"eth", "eth-filter", "net", "web3", "internal-eth", "internal-blockchain", "internal-transaction", "debug-tracer"},
		"pruning-enabled":  false,
		"warp-api-enabled": true,
		"log-level":        "info",
	}
}

// Start starts the network and creates the main L1. The caller must Stop it
// (tests: t.Cleanup).
func Start(ctx context.Context, cfg NetworkConfig) (*Network, error) {
	start := time.Now()
	if cfg.Binaries == nil {
		return nil, errors.New("livenet: NetworkConfig.Binaries is nil")
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := os.MkdirAll(cfg.RootDir, 0o755); err != nil {
		return nil, err
	}
	n := &Network{Keys: NewKeys(), Log: &TxLog{}, logf: logf}
	w := cfg.NodeLog
	if w == nil {
		f, err := os.Create(filepath.Join(cfg.RootDir, "tmpnet.log"))
		if err != nil {
			return nil, err
		}
		n.closer = f
		w = f
	}
	n.logger = logging.NewLogger("", logging.NewWrappedCore(logging.Info, nopCloser{w}, logging.Plain.ConsoleEncoder()))

	flags, err := defaultFlags()
	if err != nil {
		return nil, err
	}
	cConfig := tmpnet.ConfigMap{}
	for k, v := range EVMChainConfig() {
		cConfig[k] = v
	}
	nodes := tmpnet.NewNodesOrPanic(2)
	n.Validators = nodes
	n.TmpNet = &tmpnet.Network{
		Owner:               "permafrost-livenet",
		DefaultFlags:        flags,
		Nodes:               nodes,
		PreFundedKeys:       n.Keys.Funded(),
		PrimaryChainConfigs: map[string]tmpnet.ConfigMap{"C": cConfig},
		DefaultRuntimeConfig: tmpnet.NodeRuntimeConfig{
			Process: &tmpnet.ProcessRuntimeConfig{
				AvalancheGoPath: cfg.Binaries.AvalancheGo,
				PluginDir:       cfg.Binaries.PluginDir,
			},
		},
	}
	logf("livenet: starting 2 validator nodes under %s", cfg.RootDir)
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	// tmpnet.BootstrapNewNetwork, split so the reaper watches the network
	// directory before any node starts.
	if err := n.TmpNet.EnsureDefaultConfig(startCtx, n.logger); err != nil {
		return nil, err
	}
	if err := n.TmpNet.Create(cfg.RootDir); err != nil {
		return nil, err
	}
	n.reaper = startReaper(n.TmpNet.Dir, n.TmpNet.UUID)
	if err := n.TmpNet.Bootstrap(startCtx, n.logger); err != nil {
		// Nodes may have started: stop whatever runs.
		n.Stop(context.Background())
		return nil, fmt.Errorf("livenet: starting the network: %w", err)
	}
	if err := n.loadChainInfo(ctx); err != nil {
		n.Stop(context.Background())
		return nil, err
	}
	logf("livenet: primary network up in %s (network ID %d, nodes %s)", time.Since(start).Round(time.Millisecond), n.NetworkID, strings.Join(n.URIs(), " "))

	if err := n.createL1(ctx); err != nil {
		n.Stop(context.Background())
		return nil, fmt.Errorf("livenet: creating the L1: %w", err)
	}
	n.StartDuration = time.Since(start)
	logf("livenet: network with L1 up in %s", n.StartDuration.Round(time.Millisecond))
	return n, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func (n *Network) loadChainInfo(ctx context.Context) error {
	uri := n.URI()
	ic := info.NewClient(uri)
	nid, err := ic.GetNetworkID(ctx)
	if err != nil {
		return err
	}
	n.NetworkID = nid
	n.HRP = constants.GetHRP(nid)
	n.PChainID = constants.PlatformChainID
	for alias, dst := range map[string]*ids.ID{"X": &n.XChainID, "C": &n.CChainID} {
		id, err := ic.GetBlockchainID(ctx, alias)
		if err != nil {
			return err
		}
		*dst = id
	}
	var asset struct {
		AssetID ids.ID `json:"assetID"`
	}
	if err := rpcCall(ctx, uri+"/ext/bc/X", "avm.getAssetDescription", map[string]any{"assetID": "AVAX"}, &asset); err != nil {
		return err
	}
	n.AVAXAssetID = asset.AssetID
	n.CEVMChainID = big.NewInt(int64(nid))
	n.GenesisPath = filepath.Join(n.TmpNet.Dir, "genesis.json")
	return nil
}

// URI is the API base URL of the first validator (http://127.0.0.1:port):
// the node the workload sends primary-network txs to.
func (n *Network) URI() string { return n.Validators[0].GetAccessibleURI() }

// URIs are the API base URLs of every running node (validators, then the L1 node).
func (n *Network) URIs() []string {
	var out []string
	for _, node := range n.TmpNet.Nodes {
		if node.IsRunning() {
			out = append(out, node.GetAccessibleURI())
		}
	}
	return out
}

// NodeInfo describes one node of the network.
type NodeInfo struct {
	NodeID  ids.NodeID
	URI     string // API base URL, "" when not running
	Role    string // "validator" (primary network, genesis) or "l1-validator"
	DataDir string // node data: db, chainData, logs/ (main.log, P.log, X.log, C.log, <L1 chain ID>.log)
}

// Nodes lists the nodes: the genesis validators, then the L1 node.
func (n *Network) Nodes() []NodeInfo {
	var out []NodeInfo
	for _, node := range n.TmpNet.Nodes {
		role := "validator"
		if n.L1Node != nil && node.NodeID == n.L1Node.NodeID {
			role = "l1-validator"
		}
		uri := ""
		if node.IsRunning() {
			uri = node.GetAccessibleURI()
		}
		out = append(out, NodeInfo{NodeID: node.NodeID, URI: uri, Role: role, DataDir: node.DataDir})
	}
	return out
}

// L1NodeURI is the API base URL of the node that serves the L1 chain (and P, X, C).
func (n *Network) L1NodeURI() string { return n.L1Node.GetAccessibleURI() }

// L1RPCURL is the L1 chain's EVM JSON-RPC endpoint.
func (n *Network) L1RPCURL() string {
	return n.L1NodeURI() + "/ext/bc/" + n.L1.BlockchainID.String() + "/rpc"
}

// CRPCURL is the C-chain's EVM JSON-RPC endpoint on the first validator.
func (n *Network) CRPCURL() string { return n.URI() + "/ext/bc/C/rpc" }

// BlockchainID maps a TxRecord chain name to its blockchain ID.
func (n *Network) BlockchainID(chain string) ids.ID {
	switch chain {
	case ChainP:
		return n.PChainID
	case ChainX:
		return n.XChainID
	case ChainC:
		return n.CChainID
	case ChainL1:
		return n.L1.BlockchainID
	}
	return ids.Empty
}

// NodeSigner returns a node's BLS secret key, which tmpnet keeps in the
// node's flags; the workload signs Warp messages with it.
func NodeSigner(node *tmpnet.Node) (*localsigner.LocalSigner, error) {
	b, err := base64.StdEncoding.DecodeString(node.Flags[config.StakingSignerKeyContentKey])
	if err != nil {
		return nil, err
	}
	return localsigner.FromBytes(b)
}

// NodePoP is the node's BLS proof of possession.
func NodePoP(node *tmpnet.Node) (*signer.ProofOfPossession, error) {
	return node.GetProofOfPossession()
}

// nodePublicKey decodes a PoP's public key.
func nodePublicKey(pop *signer.ProofOfPossession) (*bls.PublicKey, error) {
	return bls.PublicKeyFromCompressedBytes(pop.PublicKey[:])
}

// AddNode starts one more node (e.g. tracking a subnet) and waits until it
// is healthy. It joins TmpNet.Nodes, so Stop stops it.
func (n *Network) AddNode(ctx context.Context, flags tmpnet.FlagsMap) (*tmpnet.Node, error) {
	node := tmpnet.NewNode()
	for k, v := range flags {
		node.Flags[k] = v
	}
	if err := node.EnsureKeys(); err != nil {
		return nil, err
	}
	n.TmpNet.Nodes = append(n.TmpNet.Nodes, node)
	if err := n.TmpNet.StartNode(ctx, node); err != nil {
		return nil, err
	}
	if err := n.TmpNet.Write(); err != nil {
		return nil, err
	}
	return node, nil
}

// WaitHealthy waits for a node to report healthy.
func (n *Network) WaitHealthy(ctx context.Context, node *tmpnet.Node, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return node.WaitForHealthy(ctx)
}

// Stop stops every node (SIGTERM, then waits). Safe to call twice.
func (n *Network) Stop(ctx context.Context) error {
	if n == nil || n.TmpNet == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var err error
	if n.TmpNet.Dir != "" {
		err = n.TmpNet.Stop(ctx)
	} else {
		// Not written to disk yet: stop nodes one by one.
		for _, node := range n.TmpNet.Nodes {
			err = errors.Join(err, node.Stop(ctx))
		}
	}
	if n.closer != nil {
		n.closer.Close()
		n.closer = nil
	}
	if n.reaper != nil && err == nil {
		_ = n.reaper.Kill()
		n.reaper = nil
	}
	return err
}
