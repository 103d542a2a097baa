package pvmoracle

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/api/metrics"
	"github.com/ava-labs/avalanchego/chains/atomic"
	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/upgrade"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/bls/signer/localsigner"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"

	avagenesis "github.com/ava-labs/avalanchego/genesis"
)

// Network is a network genesis, written as the genesis file Permafrost
// reads (--genesis), with the IDs a chain's context needs.
type Network struct {
	Config *avagenesis.Config
	// Bytes are the P-chain genesis bytes (avalanchego's FromConfig).
	Bytes              []byte
	Path               string
	AVAX               ids.ID
	XChainID, CChainID ids.ID
}

// NewNetwork builds the network of cfg and writes its genesis file.
func NewNetwork(t testing.TB, cfg *avagenesis.Config) *Network {
	t.Helper()
	b, avaxID, err := avagenesis.FromConfig(cfg)
	if err != nil {
		t.Fatalf("pvmoracle: genesis: %v", err)
	}
	n := &Network{Config: cfg, Bytes: b, AVAX: avaxID, Path: filepath.Join(t.TempDir(), "genesis.json")}
	for vm, id := range map[ids.ID]*ids.ID{constants.AVMID: &n.XChainID, constants.EVMID: &n.CChainID} {
		tx, err := avagenesis.VMGenesis(b, vm)
		if err != nil {
			t.Fatalf("pvmoracle: %v", err)
		}
		*id = tx.ID()
	}
	unparsed, err := cfg.Unparse()
	if err != nil {
		t.Fatalf("pvmoracle: %v", err)
	}
	raw, err := json.Marshal(unparsed)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.Path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return n
}

// Context is the snow context of chain chainID on the network under the
// upgrades up: the X and C chain IDs and the AVAX asset are the genesis'
// (VMs check txs against them); shared memory is memory's.
func (n *Network) Context(t testing.TB, chainID ids.ID, memory *atomic.Memory, up upgrade.Config) *snow.Context {
	t.Helper()
	aliaser := ids.NewAliaser()
	for id, alias := range map[ids.ID]string{constants.PlatformChainID: "P", n.XChainID: "X", n.CChainID: "C"} {
		for _, a := range []string{alias, id.String()} {
			if err := aliaser.Alias(id, a); err != nil {
				t.Fatalf("pvmoracle: alias: %v", err)
			}
		}
	}
	sk, err := localsigner.New()
	if err != nil {
		t.Fatal(err)
	}
	return &snow.Context{
		NetworkID:       n.Config.NetworkID,
		SubnetID:        constants.PrimaryNetworkID,
		ChainID:         chainID,
		NodeID:          ids.BuildTestNodeID([]byte("pvmoracle")),
		PublicKey:       sk.PublicKey(),
		NetworkUpgrades: up,
		XChainID:        n.XChainID,
		CChainID:        n.CChainID,
		AVAXAssetID:     n.AVAX,
		Log:             logging.NoLog{},
		SharedMemory:    memory.NewSharedMemory(chainID),
		BCLookup:        aliaser,
		Metrics:         metrics.NewPrefixGatherer(),
		WarpSigner:      warp.NewSigner(sk, n.Config.NetworkID, chainID),
		ChainDataDir:    t.TempDir(),
	}
}

// Serve starts a node on 127.0.0.1 serving routes (path -> handler) until
// the test ends, and returns its base URL.
func Serve(t testing.TB, routes map[string]http.Handler) string {
	t.Helper()
	mux := http.NewServeMux()
	for path, h := range routes {
		if h == nil {
			t.Fatalf("pvmoracle: no handler for %s", path)
		}
		mux.Handle(path, h)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l) //nolint:errcheck // closed at cleanup
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

// Start initializes vm on ctx (with the context lock held, as the chain
// manager does), moves it to normal operation and shuts it down at the end
// of the test.
func Start(t testing.TB, vm common.VM, ctx *snow.Context, db database.Database, genesis, config []byte) {
	t.Helper()
	ctx.Lock.Lock()
	err := vm.Initialize(context.Background(), ctx, db, genesis, nil, config, nil, NoSender{})
	for _, st := range []snow.State{snow.Bootstrapping, snow.NormalOp} {
		if err == nil {
			err = vm.SetState(context.Background(), st)
		}
	}
	ctx.Lock.Unlock()
	if err != nil {
		t.Fatalf("pvmoracle: start the VM: %v", err)
	}
	t.Cleanup(func() {
		ctx.Lock.Lock()
		defer ctx.Lock.Unlock()
		if err := vm.Shutdown(context.Background()); err != nil {
			t.Errorf("pvmoracle: shutdown: %v", err)
		}
	})
}

// NoSender drops a VM's gossip: the oracle has no peers.
type NoSender struct{}

func (NoSender) SendAppRequest(context.Context, set.Set[ids.NodeID], uint32, []byte) error {
	return nil
}
func (NoSender) SendAppResponse(context.Context, ids.NodeID, uint32, []byte) error     { return nil }
func (NoSender) SendAppError(context.Context, ids.NodeID, uint32, int32, string) error { return nil }
func (NoSender) SendAppGossip(context.Context, common.SendConfig, []byte) error        { return nil }
