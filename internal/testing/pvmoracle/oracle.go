// Package pvmoracle runs avalanchego's own platformvm in-process as the oracle
// of the P-chain indexer: a test builds blocks with avalanchego's block and tx
// constructors, the VM parses, verifies and accepts them, and its JSON-RPC
// service, served on 127.0.0.1 at the node's path (/ext/bc/P), is the node
// Permafrost indexes from. The VM runs with an upgrade configuration of the
// test's choosing, so one chain crosses Apricot, Banff, Cortina, Durango and
// Etna the way mainnet and Fuji did (issue #23).
package pvmoracle

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/chains"
	"github.com/ava-labs/avalanchego/chains/atomic"
	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/database/prefixdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow"
	"github.com/ava-labs/avalanchego/snow/consensus/snowman"
	"github.com/ava-labs/avalanchego/snow/uptime"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/upgrade"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/vms/platformvm"
	"github.com/ava-labs/avalanchego/vms/platformvm/block"
	"github.com/ava-labs/avalanchego/vms/platformvm/config"

	avagenesis "github.com/ava-labs/avalanchego/genesis"
)

// Oracle is a running platformvm and the HTTP node that serves it.
type Oracle struct {
	VM       *platformvm.VM
	Upgrades upgrade.Config
	// Network is the genesis the VM started from (its Path is the genesis
	// file --genesis reads).
	Network *Network
	// URL is the node's base URL (http://127.0.0.1:PORT).
	URL string

	ctx     *snow.Context
	memory  *atomic.Memory
	service http.Handler
}

// New starts the VM on the genesis cfg with the upgrades up, and its node:
// the VM's platform service on the node's two paths of it (/ext/bc/P, and
// /ext/P, which avalanchego's client uses), and the info calls a client
// asks first.
func New(t testing.TB, cfg *avagenesis.Config, up upgrade.Config) *Oracle {
	t.Helper()
	n := NewNetwork(t, cfg)
	db := memdb.New()
	memory := atomic.NewMemory(prefixdb.New([]byte{1}, db))
	ctx := n.Context(t, constants.PlatformChainID, memory, up)

	// The network's own staking and fee rules, as the node picks them for
	// the network ID (and Permafrost's indexer does).
	staking := avagenesis.GetStakingConfig(cfg.NetworkID)
	fees := avagenesis.GetTxFeeConfig(cfg.NetworkID)
	vm := &platformvm.VM{Internal: config.Internal{
		Chains:                 chains.TestManager,
		UptimeLockedCalculator: uptime.NewLockedCalculator(),
		SybilProtectionEnabled: true,
		Validators:             validators.NewManager(),
		DynamicFeeConfig:       fees.DynamicFeeConfig,
		ValidatorFeeConfig:     fees.ValidatorFeeConfig,
		MinValidatorStake:      staking.MinValidatorStake,
		MaxValidatorStake:      staking.MaxValidatorStake,
		MinDelegatorStake:      staking.MinDelegatorStake,
		MinDelegationFee:       staking.MinDelegationFee,
		UptimePercentage:       staking.UptimeRequirement,
		MinStakeDuration:       staking.MinStakeDuration,
		MaxStakeDuration:       staking.MaxStakeDuration,
		RewardConfig:           staking.RewardConfig,
		UpgradeConfig:          up,
	}}
	vm.Clock().Set(time.Unix(int64(cfg.StartTime), 0))
	// The P-chain is its own validator state (as the node's chain manager
	// sets it): atomic txs check their peer chain's subnet through it.
	ctx.ValidatorState = vm
	Start(t, vm, ctx, prefixdb.New([]byte{0}, db), n.Bytes, []byte(`{"network":{"max-validator-set-staleness":0}}`))
	handlers, err := vm.CreateHandlers(context.Background())
	if err != nil {
		t.Fatalf("pvmoracle: handlers: %v", err)
	}
	o := &Oracle{VM: vm, Upgrades: up, Network: n, ctx: ctx, memory: memory, service: handlers[""]}
	o.URL = Serve(t, map[string]http.Handler{"/ext/bc/P": o.service, "/ext/P": o.service, "/ext/info": http.HandlerFunc(o.info)})
	return o
}

// info answers info.getNetworkID and info.getBlockchainID the way the node does.
func (o *Oracle) info(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Alias string `json:"alias"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var result any
	switch req.Method {
	case "info.getNetworkID":
		result = map[string]string{"networkID": fmt.Sprint(o.ctx.NetworkID)}
	case "info.getBlockchainID":
		id, err := o.ctx.BCLookup.Lookup(req.Params.Alias)
		if err != nil {
			writeRPC(w, req.ID, nil, err.Error())
			return
		}
		result = map[string]string{"blockchainID": id.String()}
	default:
		writeRPC(w, req.ID, nil, "method not found")
		return
	}
	writeRPC(w, req.ID, result, "")
}

func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, errMsg string) {
	body := map[string]any{"jsonrpc": "2.0", "id": id}
	if errMsg != "" {
		body["error"] = map[string]any{"code": -32000, "message": errMsg}
	} else {
		body["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// Call asks the VM's platform service method with params (a JSON-RPC
// call through the node's HTTP handler) and returns the raw result, or the
// error message of an error answer.
func (o *Oracle) Call(method string, params any) (json.RawMessage, string, error) {
	return CallHandler(o.service, method, params)
}

// CallHandler posts one JSON-RPC 2.0 call to h: the raw result, or the error
// answer's message.
func CallHandler(h http.Handler, method string, params any) (json.RawMessage, string, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return nil, "", err
	}
	req, err := http.NewRequest(http.MethodPost, "/ext/bc/P", bytes.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	rec := &recorder{header: http.Header{}}
	h.ServeHTTP(rec, req)
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rec.body.Bytes(), &out); err != nil {
		return nil, "", fmt.Errorf("%s: status %d, body %q: %w", method, rec.code, rec.body.String(), err)
	}
	if out.Error != nil {
		return nil, out.Error.Message, nil
	}
	return out.Result, "", nil
}

// recorder is a minimal http.ResponseWriter (net/http/httptest stays out of
// non-test code).
type recorder struct {
	header http.Header
	body   bytes.Buffer
	code   int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.code = code }

var _ io.Writer = (*recorder)(nil)

// Accept parses, verifies and accepts a block, as consensus would, with the
// VM's clock at now. A proposal block must be followed by its option.
func (o *Oracle) Accept(b block.Block, now time.Time) error {
	o.ctx.Lock.Lock()
	defer o.ctx.Lock.Unlock()
	ctx := context.Background()
	o.VM.Clock().Set(now)
	blk, err := o.VM.ParseBlock(ctx, b.Bytes())
	if err != nil {
		return fmt.Errorf("parse %T at %d: %w", b, b.Height(), err)
	}
	if err := blk.Verify(ctx); err != nil {
		return fmt.Errorf("verify %T at %d: %w", b, b.Height(), err)
	}
	if err := blk.Accept(ctx); err != nil {
		return fmt.Errorf("accept %T at %d: %w", b, b.Height(), err)
	}
	return o.VM.SetPreference(ctx, blk.ID())
}

// AcceptProposal verifies a proposal block and its option (commit or
// abort), then accepts both, as consensus does with an option block.
func (o *Oracle) AcceptProposal(proposal, option block.Block, now time.Time) error {
	o.ctx.Lock.Lock()
	defer o.ctx.Lock.Unlock()
	ctx := context.Background()
	o.VM.Clock().Set(now)
	var parsed []snowman.Block
	for _, b := range []block.Block{proposal, option} {
		blk, err := o.VM.ParseBlock(ctx, b.Bytes())
		if err != nil {
			return fmt.Errorf("parse %T at %d: %w", b, b.Height(), err)
		}
		if err := blk.Verify(ctx); err != nil {
			return fmt.Errorf("verify %T at %d: %w", b, b.Height(), err)
		}
		parsed = append(parsed, blk)
	}
	for _, blk := range parsed {
		if err := blk.Accept(ctx); err != nil {
			return fmt.Errorf("accept %s at %d: %w", blk.ID(), blk.Height(), err)
		}
	}
	return o.VM.SetPreference(ctx, parsed[1].ID())
}

// Tip is the last accepted block's ID and height.
func (o *Oracle) Tip() (ids.ID, uint64, error) {
	o.ctx.Lock.Lock()
	defer o.ctx.Lock.Unlock()
	ctx := context.Background()
	id, err := o.VM.LastAccepted(ctx)
	if err != nil {
		return ids.Empty, 0, err
	}
	blk, err := o.VM.GetBlock(ctx, id)
	if err != nil {
		return ids.Empty, 0, err
	}
	return id, blk.Height(), nil
}

// PutAtomic puts UTXOs that chain sourceChain exported to the P-chain into
// shared memory, as the X or C chain's accepted export would.
func (o *Oracle) PutAtomic(sourceChain ids.ID, elems ...*atomic.Element) error {
	return o.memory.NewSharedMemory(sourceChain).Apply(map[ids.ID]*atomic.Requests{
		constants.PlatformChainID: {PutRequests: elems},
	})
}
