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
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/chains/atomic"
	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/database/prefixdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/upgrade"
	"github.com/ava-labs/avalanchego/upgrade/upgradetest"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/utils/units"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
	"github.com/ava-labs/libevm/core/types"

	avagenesis "github.com/ava-labs/avalanchego/genesis"
	"github.com/ava-labs/avalanchego/graft/coreth/core/extstate"
	"github.com/ava-labs/avalanchego/graft/coreth/params/paramstest"
	"github.com/ava-labs/avalanchego/graft/coreth/plugin/evm"
	"github.com/ava-labs/avalanchego/graft/coreth/plugin/evm/vmtest"

	corethatomic "github.com/ava-labs/avalanchego/graft/coreth/plugin/evm/atomic"
	atomicvm "github.com/ava-labs/avalanchego/graft/coreth/plugin/evm/atomic/vm"

	"github.com/permafrost-dev/permafrost/internal/testing/pvmoracle"
)

// NetworkID is the oracle network's ID (a custom network: genesis file).
const NetworkID = 1337

// Oracle is a running C-chain VM and the HTTP node serving it.
type Oracle struct {
	VM       *atomicvm.VM
	Fork     upgradetest.Fork
	Upgrades upgrade.Config
	// Network is the network genesis (its cChainGenesis is the VM's).
	Network *pvmoracle.Network
	URL     string // node base URL
	Ctx     *snow.Context

	memory *atomic.Memory
}

// New starts the C-chain VM of fork on a network whose C-chain genesis is
// coreth's test genesis for that fork (vmtest.TestKeys funded), and its
// node: the VM's eth and avax APIs at /ext/bc/C/rpc and /ext/bc/C/avax.
func New(t testing.TB, fork upgradetest.Fork) *Oracle {
	t.Helper()
	cGenesis := vmtest.GenesisJSON(paramstest.ForkToChainConfig[fork])
	owner := vmtest.TestKeys[0].Address()
	n := pvmoracle.NewNetwork(t, &avagenesis.Config{
		NetworkID: NetworkID,
		Allocations: []avagenesis.Allocation{{ETHAddr: owner, AVAXAddr: owner, InitialAmount: 1000 * units.Avax,
			UnlockSchedule: []avagenesis.LockedAmount{{Amount: 2_000_000 * units.Avax}}}},
		StartTime:            uint64(upgrade.InitiallyActiveTime.Unix()),
		InitialStakeDuration: 365 * 24 * 3600,
		InitialStakedFunds:   []ids.ShortID{owner},
		InitialStakers:       []avagenesis.Staker{{NodeID: ids.BuildTestNodeID([]byte("genesis")), RewardAddress: owner, DelegationFee: 20_000}},
		CChainGenesis:        cGenesis,
	})
	db := memdb.New()
	memory := atomic.NewMemory(prefixdb.New([]byte{0}, db))
	up := upgradetest.GetConfig(fork)
	ctx := n.Context(t, n.CChainID, memory, up)
	ctx.ValidatorState = primarySubnet{chains: set.Of(constants.PlatformChainID, n.XChainID, n.CChainID)}
	vm := atomicvm.WrapVM(&evm.VM{})
	pvmoracle.Start(t, vm, ctx, prefixdb.New([]byte{1}, db), []byte(cGenesis), nil)
	handlers, err := vm.CreateHandlers(context.Background())
	if err != nil {
		t.Fatalf("corethoracle: handlers: %v", err)
	}
	o := &Oracle{VM: vm, Fork: fork, Upgrades: up, Network: n, Ctx: ctx, memory: memory}
	o.URL = pvmoracle.Serve(t, map[string]http.Handler{"/ext/bc/C/rpc": handlers["/rpc"], "/ext/bc/C/avax": handlers["/avax"]})
	return o
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
