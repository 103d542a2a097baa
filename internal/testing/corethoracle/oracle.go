// Package corethoracle runs the C-chain's own VM (coreth, with its atomic-tx
// extension) in-process as the oracle of the EVM and C-chain atomic
// indexers: a test issues txs, the VM builds, verifies and accepts each block
// with its own types and encoding, and its RPC handlers, served on 127.0.0.1
// at the node's paths (/ext/bc/C/rpc, /ext/bc/C/avax), are the node
// Permafrost indexes from. The VM runs under one upgrade fork (upgradetest),
// so each of the C-chain's historical formats is produced by the code that
// defines it (issue #23). It is a module of its own: coreth's dependencies
// stay out of the main module.
package corethoracle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/api/metrics"
	"github.com/ava-labs/avalanchego/chains/atomic"
	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/database/prefixdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/upgrade"
	"github.com/ava-labs/avalanchego/upgrade/upgradetest"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/bls/signer/localsigner"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/utils/units"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
	"github.com/ava-labs/libevm/core/types"

	avagenesis "github.com/ava-labs/avalanchego/genesis"
	"github.com/ava-labs/avalanchego/graft/coreth/core/extstate"
	"github.com/ava-labs/avalanchego/graft/coreth/params/paramstest"
	"github.com/ava-labs/avalanchego/graft/coreth/plugin/evm"
	"github.com/ava-labs/avalanchego/graft/coreth/plugin/evm/vmtest"

	corethatomic "github.com/ava-labs/avalanchego/graft/coreth/plugin/evm/atomic"
	atomicvm "github.com/ava-labs/avalanchego/graft/coreth/plugin/evm/atomic/vm"
)

// NetworkID is the oracle network's ID (a custom network: genesis file).
const NetworkID = 1337

// Oracle is a running C-chain VM and the HTTP node serving it.
type Oracle struct {
	VM       *atomicvm.VM
	Fork     upgradetest.Fork
	Upgrades upgrade.Config
	// GenesisPath is the network genesis (its cChainGenesis is the VM's).
	GenesisPath string
	URL         string // node base URL
	Ctx         *snow.Context

	memory *atomic.Memory
}

// New starts the C-chain VM of fork on a network whose C-chain genesis is
// coreth's test genesis for that fork (vmtest.TestKeys funded).
func New(t testing.TB, fork upgradetest.Fork) *Oracle {
	t.Helper()
	cGenesis := vmtest.GenesisJSON(paramstest.ForkToChainConfig[fork])
	owner := vmtest.TestKeys[0].Address()
	cfg := &avagenesis.Config{
		NetworkID: NetworkID,
		Allocations: []avagenesis.Allocation{{ETHAddr: owner, AVAXAddr: owner, InitialAmount: 1000 * units.Avax,
			UnlockSchedule: []avagenesis.LockedAmount{{Amount: 2_000_000 * units.Avax}}}},
		StartTime:            uint64(upgrade.InitiallyActiveTime.Unix()),
		InitialStakeDuration: 365 * 24 * 3600,
		InitialStakedFunds:   []ids.ShortID{owner},
		InitialStakers:       []avagenesis.Staker{{NodeID: ids.BuildTestNodeID([]byte("genesis")), RewardAddress: owner, DelegationFee: 20_000}},
		CChainGenesis:        cGenesis,
	}
	genesisBytes, avaxID, err := avagenesis.FromConfig(cfg)
	if err != nil {
		t.Fatalf("corethoracle: genesis: %v", err)
	}
	xTx, err := avagenesis.VMGenesis(genesisBytes, constants.AVMID)
	if err != nil {
		t.Fatal(err)
	}
	cTx, err := avagenesis.VMGenesis(genesisBytes, constants.EVMID)
	if err != nil {
		t.Fatal(err)
	}
	unparsed, err := cfg.Unparse()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(unparsed)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "genesis.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}

	db := memdb.New()
	memory := atomic.NewMemory(prefixdb.New([]byte{0}, db))
	ctx, err := snowContext(t, cTx.ID(), xTx.ID(), avaxID, memory)
	if err != nil {
		t.Fatal(err)
	}
	up := upgradetest.GetConfig(fork)
	ctx.NetworkUpgrades = up

	vm := atomicvm.WrapVM(&evm.VM{})
	ctx.Lock.Lock()
	err = vm.Initialize(context.Background(), ctx, prefixdb.New([]byte{1}, db), []byte(cGenesis), nil, nil, nil, noSender{})
	if err == nil {
		err = vm.SetState(context.Background(), snow.Bootstrapping)
	}
	if err == nil {
		err = vm.SetState(context.Background(), snow.NormalOp)
	}
	ctx.Lock.Unlock()
	if err != nil {
		t.Fatalf("corethoracle: start the VM: %v", err)
	}
	t.Cleanup(func() {
		ctx.Lock.Lock()
		defer ctx.Lock.Unlock()
		if err := vm.Shutdown(context.Background()); err != nil {
			t.Errorf("corethoracle: shutdown: %v", err)
		}
	})
	o := &Oracle{VM: vm, Fork: fork, Upgrades: up, GenesisPath: path, Ctx: ctx, memory: memory}
	o.URL = o.serve(t)
	return o
}

func snowContext(t testing.TB, cID, xID, avaxID ids.ID, memory *atomic.Memory) (*snow.Context, error) {
	aliaser := ids.NewAliaser()
	for id, alias := range map[ids.ID]string{constants.PlatformChainID: "P", xID: "X", cID: "C"} {
		for _, a := range []string{alias, id.String()} {
			if err := aliaser.Alias(id, a); err != nil {
				return nil, err
			}
		}
	}
	sk, err := localsigner.New()
	if err != nil {
		return nil, err
	}
	return &snow.Context{
		NetworkID:      NetworkID,
		SubnetID:       constants.PrimaryNetworkID,
		ChainID:        cID,
		NodeID:         ids.BuildTestNodeID([]byte("corethoracle")),
		PublicKey:      sk.PublicKey(),
		XChainID:       xID,
		CChainID:       cID,
		AVAXAssetID:    avaxID,
		Log:            logging.NoLog{},
		SharedMemory:   memory.NewSharedMemory(cID),
		BCLookup:       aliaser,
		Metrics:        metrics.NewPrefixGatherer(),
		WarpSigner:     warp.NewSigner(sk, NetworkID, cID),
		ValidatorState: primarySubnet{chains: set.Of(constants.PlatformChainID, xID, cID)},
		ChainDataDir:   t.TempDir(),
	}, nil
}

// primarySubnet is the validator state of a network without peers: every
// chain the oracle knows is on the primary network, whose validator set
// (asked by the VM's gossip) is empty.
type primarySubnet struct {
	chains set.Set[ids.ID]
}

func (primarySubnet) GetMinimumHeight(context.Context) (uint64, error) { return 0, nil }
func (primarySubnet) GetCurrentHeight(context.Context) (uint64, error) { return 0, nil }

func (p primarySubnet) GetSubnetID(_ context.Context, chainID ids.ID) (ids.ID, error) {
	if p.chains.Contains(chainID) {
		return constants.PrimaryNetworkID, nil
	}
	return ids.Empty, errors.New("unknown chain")
}

func (primarySubnet) GetWarpValidatorSets(context.Context, uint64) (map[ids.ID]validators.WarpSet, error) {
	return map[ids.ID]validators.WarpSet{}, nil
}

func (primarySubnet) GetValidatorSet(context.Context, uint64, ids.ID) (map[ids.NodeID]*validators.GetValidatorOutput, error) {
	return map[ids.NodeID]*validators.GetValidatorOutput{}, nil
}

func (primarySubnet) GetCurrentValidatorSet(context.Context, ids.ID) (map[ids.ID]*validators.GetCurrentValidatorOutput, uint64, error) {
	return map[ids.ID]*validators.GetCurrentValidatorOutput{}, 0, nil
}

var _ validators.State = primarySubnet{}

func (o *Oracle) serve(t testing.TB) string {
	t.Helper()
	handlers, err := o.VM.CreateHandlers(context.Background())
	if err != nil {
		t.Fatalf("corethoracle: handlers: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ext/bc/C/rpc", handlers["/rpc"])
	mux.Handle("/ext/bc/C/avax", handlers["/avax"])
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l) //nolint:errcheck // closed at cleanup
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

// Build issues eth txs and atomic txs, has the VM build a block of them,
// verify and accept it, and returns it. From Apricot Phase 4 a block must
// pay a gas cost out of its txs' tips, so txs must tip enough.
func (o *Oracle) Build(ethTxs []*types.Transaction, atomicTxs ...*corethatomic.Tx) (*types.Block, error) {
	o.Ctx.Lock.Lock()
	defer o.Ctx.Lock.Unlock()
	ctx := context.Background()
	if len(ethTxs) > 0 {
		for i, err := range o.VM.Ethereum().TxPool().AddRemotesSync(ethTxs) {
			if err != nil {
				return nil, fmt.Errorf("eth tx %d: %w", i, err)
			}
		}
	}
	for _, tx := range atomicTxs {
		if err := o.VM.AtomicMempool.AddLocalTx(tx); err != nil {
			return nil, fmt.Errorf("atomic tx %s: %w", tx.ID(), err)
		}
	}
	blk, err := o.VM.BuildBlock(ctx)
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	if err := blk.Verify(ctx); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	if err := o.VM.SetPreference(ctx, blk.ID()); err != nil {
		return nil, err
	}
	if err := blk.Accept(ctx); err != nil {
		return nil, fmt.Errorf("accept: %w", err)
	}
	eb := o.VM.Ethereum().BlockChain().GetBlockByNumber(blk.Height())
	if eb == nil {
		return nil, fmt.Errorf("accepted block %d not found", blk.Height())
	}
	return eb, nil
}

// ExportedToC puts an AVAX UTXO of k that the X-chain exported to the
// C-chain into shared memory, as the X-chain's accepted export would.
func (o *Oracle) ExportedToC(k *secp256k1.PrivateKey, amount uint64, seed string) (*avax.UTXO, error) {
	u := &avax.UTXO{
		UTXOID: avax.UTXOID{TxID: ids.ID(hashing.ComputeHash256Array([]byte("export/" + seed)))},
		Asset:  avax.Asset{ID: o.Ctx.AVAXAssetID},
		Out:    &secp256k1fx.TransferOutput{Amt: amount, OutputOwners: secp256k1fx.OutputOwners{Threshold: 1, Addrs: []ids.ShortID{k.Address()}}},
	}
	b, err := corethatomic.Codec.Marshal(corethatomic.CodecVersion, u)
	if err != nil {
		return nil, err
	}
	id := u.InputID()
	return u, o.memory.NewSharedMemory(o.Ctx.XChainID).Apply(map[ids.ID]*atomic.Requests{
		o.Ctx.ChainID: {PutRequests: []*atomic.Element{{Key: id[:], Value: b, Traits: [][]byte{k.Address().Bytes()}}}},
	})
}

// Import builds a signed ImportTx of utxos to the EVM address of k with
// coreth's own constructor (the fee is the fork's: none before Apricot
// Phase 3's base fee).
func (o *Oracle) Import(k *secp256k1.PrivateKey, utxos []*avax.UTXO, baseFee *big.Int) (*corethatomic.Tx, error) {
	rules := o.VM.CurrentRules()
	return corethatomic.NewImportTx(o.Ctx, rules, uint64(time.Now().Unix()), o.Ctx.XChainID, k.EthAddress(), baseFee,
		secp256k1fx.NewKeychain(k), utxos)
}

// Export builds a signed ExportTx of amount AVAX from k's EVM address to
// k on the X-chain, with coreth's own constructor, against the state at the
// VM's tip.
func (o *Oracle) Export(k *secp256k1.PrivateKey, amount uint64, baseFee *big.Int) (*corethatomic.Tx, error) {
	o.Ctx.Lock.Lock()
	defer o.Ctx.Lock.Unlock()
	statedb, err := o.VM.Ethereum().BlockChain().State()
	if err != nil {
		return nil, err
	}
	return corethatomic.NewExportTx(o.Ctx, o.VM.CurrentRules(), extstate.New(statedb), o.Ctx.AVAXAssetID, amount, o.Ctx.XChainID,
		k.Address(), baseFee, []*secp256k1.PrivateKey{k})
}

type noSender struct{}

func (noSender) SendAppRequest(context.Context, set.Set[ids.NodeID], uint32, []byte) error {
	return nil
}
func (noSender) SendAppResponse(context.Context, ids.NodeID, uint32, []byte) error     { return nil }
func (noSender) SendAppError(context.Context, ids.NodeID, uint32, int32, string) error { return nil }
func (noSender) SendAppGossip(context.Context, common.SendConfig, []byte) error        { return nil }
