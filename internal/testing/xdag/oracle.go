package xdag

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/ava-labs/avalanchego/chains/atomic"
	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/database/prefixdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/upgrade"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/vms/avm"
	"github.com/ava-labs/avalanchego/vms/avm/config"
	"github.com/ava-labs/avalanchego/vms/nftfx"
	ptxs "github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/propertyfx"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	avagenesis "github.com/ava-labs/avalanchego/genesis"

	"github.com/permafrost-dev/permafrost/internal/testing/pvmoracle"
)

// Oracle is avalanchego's avm VM in-process, fed a DAG as the node's DAG
// bootstrapper fed it (each tx parsed, verified and accepted in accepted
// order), then linearized at the stop vertex: its avm service answers what
// the real node answers after the linearization.
type Oracle struct {
	VM      *avm.VM
	service http.Handler
}

// NewOracle runs the avm of the network cfg (the X-chain's genesis, fees
// and upgrades up) and accepts d into it.
func NewOracle(t testing.TB, cfg *avagenesis.Config, up upgrade.Config, d *DAG) *Oracle {
	t.Helper()
	n := pvmoracle.NewNetwork(t, cfg)
	db := memdb.New()
	memory := atomic.NewMemory(prefixdb.New([]byte{1}, db))
	ctx := n.Context(t, n.XChainID, memory, up)
	// No validators: the VM's gossip (started by Linearize) finds no peers.
	ctx.ValidatorState = noValidators{}
	fees := avagenesis.GetTxFeeConfig(cfg.NetworkID)
	vm := &avm.VM{Config: config.Config{Upgrades: up, TxFee: fees.TxFee, CreateAssetTxFee: fees.CreateAssetTxFee}}
	fxs := []*common.Fx{
		{ID: secp256k1fx.ID, Fx: &secp256k1fx.Fx{}},
		{ID: nftfx.ID, Fx: &nftfx.Fx{}},
		{ID: propertyfx.ID, Fx: &propertyfx.Fx{}},
	}
	ctx.Lock.Lock()
	defer ctx.Lock.Unlock()
	bg := context.Background()
	if err := vm.Initialize(bg, ctx, prefixdb.New([]byte{0}, db), chainGenesis(t, n.Bytes), nil, nil, fxs, pvmoracle.NoSender{}); err != nil {
		t.Fatalf("xdag: initialize the avm: %v", err)
	}
	t.Cleanup(func() {
		ctx.Lock.Lock()
		defer ctx.Lock.Unlock()
		if err := vm.Shutdown(bg); err != nil {
			t.Errorf("xdag: avm shutdown: %v", err)
		}
	})
	if err := vm.SetState(bg, snow.Bootstrapping); err != nil {
		t.Fatal(err)
	}
	for _, tx := range d.Txs {
		st, err := vm.ParseTx(bg, tx.Bytes())
		if err != nil {
			t.Fatalf("xdag: the avm parses tx %s: %v", tx.ID(), err)
		}
		if err := st.Verify(bg); err != nil {
			t.Fatalf("xdag: the avm verifies tx %s: %v", tx.ID(), err)
		}
		if err := st.Accept(bg); err != nil {
			t.Fatalf("xdag: the avm accepts tx %s: %v", tx.ID(), err)
		}
	}
	if err := vm.Linearize(bg, d.Vertices[len(d.Vertices)-1].ID()); err != nil {
		t.Fatalf("xdag: linearize: %v", err)
	}
	if err := vm.SetState(bg, snow.NormalOp); err != nil {
		t.Fatal(err)
	}
	handlers, err := vm.CreateHandlers(bg)
	if err != nil {
		t.Fatalf("xdag: avm handlers: %v", err)
	}
	return &Oracle{VM: vm, service: handlers[""]}
}

// Call asks the avm service method with params: the raw result, or the
// error answer's message.
func (o *Oracle) Call(method string, params any) (json.RawMessage, string, error) {
	return pvmoracle.CallHandler(o.service, method, params)
}

// chainGenesis is the X-chain's genesis data in the P-chain genesis bytes.
func chainGenesis(t testing.TB, pGenesis []byte) []byte {
	t.Helper()
	tx, err := avagenesis.VMGenesis(pGenesis, constants.AVMID)
	if err != nil {
		t.Fatalf("xdag: %v", err)
	}
	cc, ok := tx.Unsigned.(*ptxs.CreateChainTx)
	if !ok {
		t.Fatalf("xdag: X-chain genesis tx is %T", tx.Unsigned)
	}
	return cc.GenesisData
}

// noValidators is a P-chain with no validators: the oracle has no peers.
type noValidators struct{}

func (noValidators) GetMinimumHeight(context.Context) (uint64, error) { return 0, nil }
func (noValidators) GetCurrentHeight(context.Context) (uint64, error) { return 0, nil }
func (noValidators) GetSubnetID(context.Context, ids.ID) (ids.ID, error) {
	return constants.PrimaryNetworkID, nil
}

func (noValidators) GetWarpValidatorSets(context.Context, uint64) (map[ids.ID]validators.WarpSet, error) {
	return map[ids.ID]validators.WarpSet{}, nil
}

func (noValidators) GetValidatorSet(context.Context, uint64, ids.ID) (map[ids.NodeID]*validators.GetValidatorOutput, error) {
	return map[ids.NodeID]*validators.GetValidatorOutput{}, nil
}

func (noValidators) GetCurrentValidatorSet(context.Context, ids.ID) (map[ids.ID]*validators.GetCurrentValidatorOutput, uint64, error) {
	return map[ids.ID]*validators.GetCurrentValidatorOutput{}, 0, nil
}
