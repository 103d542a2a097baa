package livenet

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"sync"
	"time"

	"github.com/ava-labs/libevm/common"
	"golang.org/x/sync/errgroup"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	walletcommon "github.com/ava-labs/avalanchego/wallet/subnet/primary/common"
)

// WorkloadConfig configures Run.
type WorkloadConfig struct {
	// StakeDuration is how long the workload's primary-network validators
	// stake (delegators a little less). Run waits for their
	// RewardValidatorTx, so it bounds the workload's length. Default 60s.
	StakeDuration time.Duration
	// SkipRewardWait returns without waiting for the stakers to end.
	SkipRewardWait bool
	// WhileStaking, when set, runs once every tx is issued and before the
	// wait for the stakers to end, while they are current validators and
	// delegators (e.g. to compare an indexer's validators with the node's).
	WhileStaking func(ctx context.Context, res *WorkloadResult)
	Logf         func(string, ...any)
}

// Staker is a primary-network staker added by the workload.
type Staker struct {
	Name      string // "l1node-validator", "l1node-delegator", "beta-validator", "beta-delegator"
	NodeID    ids.NodeID
	TxID      ids.ID
	Type      string // AddPermissionlessValidatorTx or AddPermissionlessDelegatorTx
	End       time.Time
	Weight    uint64
	Running   bool // the node behind it runs (uptime ok: expect a reward)
	RewardTx  ids.ID
	RewardsAt uint64 // P height of the RewardValidatorTx's proposal block
}

// L1ValidatorInfo is an L1 validator created by the workload's second L1
// (whose validators are offline keys, signed for locally).
type L1ValidatorInfo struct {
	Name         string
	NodeID       ids.NodeID
	ValidationID ids.ID
	Weight       uint64 // weight after the workload
	Signer       WarpSigner
}

// WorkloadResult is what the workload created, for later checks.
type WorkloadResult struct {
	Duration time.Duration
	Phases   map[string]time.Duration

	// XAssets: created X-chain assets by symbol.
	XAssets map[string]ids.ID
	// CContracts / L1Contracts: contract addresses by name ("DevToken",
	// "DevNFT", "DevMulti", "WAVAX", "TokenFactory", "FactoryChild").
	CContracts  map[string]common.Address
	L1Contracts map[string]common.Address
	// Subnets by name: "A" (permissioned, never converted), "B" (converted
	// to an L1 whose validators are offline keys).
	Subnets map[string]ids.ID
	// Chains created on those subnets (never run).
	Chains       map[string]ids.ID
	Stakers      []*Staker
	L1Validators []*L1ValidatorInfo
	// Tips per chain after the workload (P, X, C, L1).
	Tips map[string]uint64
}

// workload holds the state shared by the phases.
type workload struct {
	n    *Network
	cfg  WorkloadConfig
	logf func(string, ...any)
	res  *WorkloadResult

	contracts map[string]*Contract
	c, l1     *EVMChain

	mu sync.Mutex
}

// Run drives the workload against n, logging every tx into n.Log.
func Run(ctx context.Context, n *Network, cfg WorkloadConfig) (*WorkloadResult, error) {
	start := time.Now()
	if cfg.StakeDuration == 0 {
		cfg.StakeDuration = 60 * time.Second
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	contracts, err := Contracts()
	if err != nil {
		return nil, err
	}
	w := &workload{n: n, cfg: cfg, logf: logf, contracts: contracts, res: &WorkloadResult{
		Phases:      map[string]time.Duration{},
		XAssets:     map[string]ids.ID{},
		CContracts:  map[string]common.Address{},
		L1Contracts: map[string]common.Address{},
		Subnets:     map[string]ids.ID{},
		Chains:      map[string]ids.ID{},
		Tips:        map[string]uint64{},
	}}
	if w.c, err = DialEVM(ctx, ChainC, n.CChainID, n.CRPCURL(), n.Log); err != nil {
		return nil, fmt.Errorf("dialing the C-chain: %w", err)
	}
	if w.l1, err = DialEVM(ctx, ChainL1, n.L1.BlockchainID, n.L1RPCURL(), n.Log); err != nil {
		return nil, fmt.Errorf("dialing the L1: %w", err)
	}

	// Phase 1: one goroutine per chain or key group; they spend from
	// disjoint keys, so they never race for UTXOs or nonces.
	if err := w.phase("main", func() error {
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() error { return w.timed("x", func() error { return w.xChain(gctx) }) })
		g.Go(func() error { return w.timed("atomic", func() error { return w.atomic(gctx) }) })
		g.Go(func() error { return w.timed("p-staking", func() error { return w.pStaking(gctx) }) })
		g.Go(func() error { return w.timed("p-l1", func() error { return w.pL1(gctx) }) })
		g.Go(func() error { return w.timed("c", func() error { return w.cChain(gctx) }) })
		g.Go(func() error { return w.timed("l1", func() error { return w.l1Chain(gctx) }) })
		return g.Wait()
	}); err != nil {
		return w.res, err
	}
	// Phase 2: several txs per block on every chain.
	if err := w.phase("concurrent", func() error { return w.concurrent(ctx) }); err != nil {
		return w.res, err
	}
	if cfg.WhileStaking != nil {
		cfg.WhileStaking(ctx, w.res)
	}
	if !cfg.SkipRewardWait {
		if err := w.phase("rewards", func() error { return w.waitStakersGone(ctx) }); err != nil {
			return w.res, err
		}
	}
	if err := w.phase("resolve", func() error { return ResolveHeights(ctx, n, w.res) }); err != nil {
		return w.res, err
	}
	w.res.Duration = time.Since(start)
	return w.res, nil
}

func (w *workload) phase(name string, f func() error) error {
	start := time.Now()
	err := f()
	d := time.Since(start)
	w.mu.Lock()
	w.res.Phases[name] = d
	w.mu.Unlock()
	w.logf("livenet: workload phase %s: %s", name, d.Round(time.Millisecond))
	if err != nil {
		return fmt.Errorf("workload phase %s: %w", name, err)
	}
	return nil
}

func (w *workload) timed(name string, f func() error) error {
	start := time.Now()
	err := f()
	w.mu.Lock()
	w.res.Phases["main/"+name] = time.Since(start)
	w.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// issue logs an Avalanche tx (X, P, or atomic C) and runs f, which issues
// it and waits for acceptance (the wallet SDK's default).
func (w *workload) issue(chain, step, typ, purpose string, addrs []string, extra map[string]any, f func() (ids.ID, error)) (ids.ID, error) {
	if extra == nil {
		extra = map[string]any{}
	}
	rec := w.n.Log.Add(&TxRecord{Step: step, Chain: chain, Type: typ, Purpose: purpose, Addresses: dedupe(addrs), Extra: extra})
	rec.Atomic = chain == ChainC
	id, err := f()
	if err != nil {
		w.n.Log.update(func([]*TxRecord) { rec.Extra["error"] = err.Error() })
		return ids.Empty, fmt.Errorf("%s: %w", step, err)
	}
	w.n.accepted(rec, id)
	return id, nil
}

// addrs formats the named keys' addresses for chain "X", "P" or "C" (bech32).
func (w *workload) addrs(chain string, names ...string) []string {
	var out []string
	for _, name := range names {
		out = append(out, w.n.Keys.Get(name).Bech32(chain, w.n.NetworkID))
	}
	return out
}

func (w *workload) key(name string) *Key { return w.n.Keys.Get(name) }

// owners is a threshold-of-n owner of the named keys (addresses sorted, as
// the codec requires).
func (w *workload) owners(threshold uint32, names ...string) *secp256k1fx.OutputOwners {
	var addrs []ids.ShortID
	for _, name := range names {
		addrs = append(addrs, w.key(name).ShortID())
	}
	slices.SortFunc(addrs, func(a, b ids.ShortID) int { return a.Compare(b) })
	return &secp256k1fx.OutputOwners{Threshold: threshold, Addrs: addrs}
}

// out is a TransferableOutput of amount of asset to owners.
func out(asset ids.ID, amount uint64, owners *secp256k1fx.OutputOwners) *avax.TransferableOutput {
	return &avax.TransferableOutput{
		Asset: avax.Asset{ID: asset},
		Out:   &secp256k1fx.TransferOutput{Amt: amount, OutputOwners: *owners},
	}
}

// cBaseFee is twice the C-chain's suggested gas price, for atomic txs (as
// avalanchego's e2e tests do), so a rising base fee does not reject them.
func (w *workload) cBaseFee(ctx context.Context) (walletcommon.Option, error) {
	price, _, err := w.c.gasPrices(ctx)
	if err != nil {
		return nil, err
	}
	return walletcommon.WithBaseFee(new(big.Int).Mul(price, big.NewInt(2))), nil
}
