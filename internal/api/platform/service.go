package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"time"

	"github.com/ava-labs/avalanchego/api"
	"github.com/ava-labs/avalanchego/cache/lru"
	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow"
	"github.com/ava-labs/avalanchego/upgrade"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/formatting"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/platformvm"
	"github.com/ava-labs/avalanchego/vms/platformvm/block"
	"github.com/ava-labs/avalanchego/vms/platformvm/stakeable"
	"github.com/ava-labs/avalanchego/vms/platformvm/status"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	avajson "github.com/ava-labs/avalanchego/utils/json"
	safemath "github.com/ava-labs/avalanchego/utils/math"

	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/store"
)

const (
	// maxBalanceAddrs bounds getBalance (the node has no bound; its
	// getUTXOs allows 1024 addresses).
	maxBalanceAddrs = 1024
	// attrCacheSize bounds the parsed staker/L1 attributes kept in memory.
	attrCacheSize = 100_000
)

var (
	errMissingBlockchainID = errors.New("argument 'blockchainID' not given")
	// errInternal is what a caller sees of a database failure (logged).
	errInternal = errors.New("internal error")
)

// Service is the "platform" service: exactly the seven methods of the spec,
// with the node's signatures and types (gorilla registers every exported
// method of this shape, so there are no others).
type Service struct {
	db       *store.DB
	g        *genesis.Genesis
	ctx      *snow.Context
	addrs    avax.AddressManager
	upgrades upgrade.Config
	node     *upstream // nil without an upstream
	now      func() time.Time
	timeout  time.Duration
	log      *slog.Logger

	stakerAttrs *lru.Cache[ids.ID, *stakerAttributes]
	l1Owners    *lru.Cache[ids.ID, *l1Owners]
}

func newService(deps Deps, up *upstream) (*Service, error) {
	ctx, err := snowContext(deps.Genesis)
	if err != nil {
		return nil, err
	}
	return &Service{
		db:          deps.DB,
		g:           deps.Genesis,
		ctx:         ctx,
		addrs:       avax.NewAddressManager(ctx),
		upgrades:    deps.Genesis.Upgrades,
		node:        up,
		now:         deps.Now,
		timeout:     deps.CallTimeout,
		log:         deps.Log,
		stakerAttrs: lru.NewCache[ids.ID, *stakerAttributes](attrCacheSize),
		l1Owners:    lru.NewCache[ids.ID, *l1Owners](attrCacheSize),
	}, nil
}

// snowContext is the part of the P-chain's snow.Context that formatting and
// address parsing read: network, chain, AVAX asset and the chain aliases of
// the primary network (genesis.Aliases), so addresses format as "P-..." and
// parse with the node's errors.
func snowContext(g *genesis.Genesis) (*snow.Context, error) {
	aliaser := ids.NewAliaser()
	add := func(id ids.ID, aliases ...string) error {
		for _, a := range append(aliases, id.String()) {
			if err := aliaser.Alias(id, a); err != nil {
				return fmt.Errorf("platform: alias %s: %w", a, err)
			}
		}
		return nil
	}
	if err := add(constants.PlatformChainID, "P", "platform"); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		vm      ids.ID
		aliases []string
	}{{constants.AVMID, []string{"X", "avm"}}, {constants.EVMID, []string{"C", "evm"}}} {
		tx, _, err := g.Chain(c.vm)
		if err != nil {
			return nil, fmt.Errorf("platform: %w", err)
		}
		if err := add(tx.ID(), c.aliases...); err != nil {
			return nil, err
		}
	}
	return &snow.Context{
		NetworkID:   g.NetworkID,
		SubnetID:    constants.PrimaryNetworkID,
		ChainID:     constants.PlatformChainID,
		AVAXAssetID: g.AvaxAssetID,
		BCLookup:    aliaser,
	}, nil
}

// callCtx bounds one method call.
func (s *Service) callCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.timeout)
}

// internal logs a database failure and returns what the caller sees.
func (s *Service) internal(method string, err error) error {
	if errors.Is(err, errNotIndexed) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("call timed out after %s", s.timeout)
	}
	if errors.Is(err, context.Canceled) {
		return context.Canceled
	}
	s.log.Error("platform: "+method, "err", err)
	return errInternal
}

// GetBalance answers platform.getBalance (deprecated on the node, served all
// the same) like service.go: the spendable UTXOs of the addresses at the tip,
// split by lock state against the wall clock.
func (s *Service) GetBalance(r *http.Request, args *platformvm.GetBalanceRequest, response *platformvm.GetBalanceResponse) error {
	ctx, cancel := s.callCtx(r)
	defer cancel()
	if len(args.Addresses) > maxBalanceAddrs {
		return fmt.Errorf("number of addresses given, %d, exceeds maximum, %d", len(args.Addresses), maxBalanceAddrs)
	}
	addrs, err := avax.ParseServiceAddresses(s.addrs, args.Addresses)
	if err != nil {
		return err
	}
	tip, err := s.tip(ctx)
	if err != nil {
		return s.internal("getBalance", err)
	}
	utxos, err := s.utxosAt(ctx, addrs, tip.state)
	if err != nil {
		return s.internal("getBalance", fmt.Errorf("couldn't get UTXO set of %v: %w", args.Addresses, err))
	}
	list := make([]*avax.UTXO, len(utxos))
	for i, e := range utxos {
		list[i] = e.utxo
	}
	fillBalance(response, list, uint64(s.now().Unix()), s.ctx.AVAXAssetID)
	return nil
}

// fillBalance is the node's GetBalance arithmetic over a UTXO set.
func fillBalance(response *platformvm.GetBalanceResponse, utxos []*avax.UTXO, currentTime uint64, avaxID ids.ID) {
	unlockeds := map[ids.ID]uint64{}
	lockedStakeables := map[ids.ID]uint64{}
	lockedNotStakeables := map[ids.ID]uint64{}
	add := func(m map[ids.ID]uint64, asset ids.ID, amount uint64) {
		v, err := safemath.Add(m[asset], amount)
		if err != nil {
			v = math.MaxUint64
		}
		m[asset] = v
	}
	for _, utxo := range utxos {
		assetID := utxo.AssetID()
		switch out := utxo.Out.(type) {
		case *secp256k1fx.TransferOutput:
			if out.Locktime <= currentTime {
				add(unlockeds, assetID, out.Amount())
			} else {
				add(lockedNotStakeables, assetID, out.Amount())
			}
		case *stakeable.LockOut:
			innerOut, ok := out.TransferableOut.(*secp256k1fx.TransferOutput)
			switch {
			case !ok:
				continue
			case innerOut.Locktime > currentTime:
				add(lockedNotStakeables, assetID, out.Amount())
			case out.Locktime <= currentTime:
				add(unlockeds, assetID, out.Amount())
			default:
				add(lockedStakeables, assetID, out.Amount())
			}
		default:
			continue
		}
		response.UTXOIDs = append(response.UTXOIDs, &utxo.UTXOID)
	}
	balances := maps.Clone(lockedStakeables)
	for assetID, amount := range lockedNotStakeables {
		add(balances, assetID, amount)
	}
	for assetID, amount := range unlockeds {
		add(balances, assetID, amount)
	}
	response.Balances = jsonBalances(balances)
	response.Unlockeds = jsonBalances(unlockeds)
	response.LockedStakeables = jsonBalances(lockedStakeables)
	response.LockedNotStakeables = jsonBalances(lockedNotStakeables)
	response.Balance = response.Balances[avaxID]
	response.Unlocked = response.Unlockeds[avaxID]
	response.LockedStakeable = response.LockedStakeables[avaxID]
	response.LockedNotStakeable = response.LockedNotStakeables[avaxID]
}

func jsonBalances(m map[ids.ID]uint64) map[ids.ID]avajson.Uint64 {
	out := make(map[ids.ID]avajson.Uint64, len(m))
	for k, v := range m {
		out[k] = avajson.Uint64(v)
	}
	return out
}

// GetBlock answers platform.getBlock: an indexed P block by ID.
func (s *Service) GetBlock(r *http.Request, args *api.GetBlockArgs, response *api.GetBlockResponse) error {
	ctx, cancel := s.callCtx(r)
	defer cancel()
	b, err := s.blockByID(ctx, args.BlockID)
	if err != nil {
		if !errors.Is(err, database.ErrNotFound) {
			err = s.internal("getBlock", err)
		}
		return fmt.Errorf("couldn't get block with id %s: %w", args.BlockID, err)
	}
	return s.formatBlock(args.BlockID, b, args.Encoding, response)
}

// GetBlockByHeight answers platform.getBlockByHeight.
func (s *Service) GetBlockByHeight(r *http.Request, args *api.GetBlockByHeightArgs, response *api.GetBlockResponse) error {
	ctx, cancel := s.callCtx(r)
	defer cancel()
	id, b, err := s.blockAt(ctx, uint64(args.Height))
	if err != nil {
		if !errors.Is(err, database.ErrNotFound) {
			err = s.internal("getBlockByHeight", err)
		}
		return fmt.Errorf("couldn't get block at height %d: %w", args.Height, err)
	}
	return s.formatBlock(id, b, args.Encoding, response)
}

// formatBlock encodes a block as service.go does: the codec bytes in the
// requested encoding, or the parsed block marshalled after InitCtx.
func (s *Service) formatBlock(id ids.ID, b []byte, enc formatting.Encoding, response *api.GetBlockResponse) error {
	response.Encoding = enc
	var (
		result any
		err    error
	)
	if enc == formatting.JSON {
		blk, err := block.Parse(block.GenesisCodec, b)
		if err != nil {
			return fmt.Errorf("couldn't parse block %s: %w", id, err)
		}
		blk.InitCtx(s.ctx)
		result = blk
	} else {
		result, err = formatting.Encode(enc, b)
		if err != nil {
			return fmt.Errorf("couldn't encode block %s as %s: %w", id, enc, err)
		}
	}
	response.Block, err = json.Marshal(result)
	return err
}

// GetBlockchains answers platform.getBlockchains (deprecated on the node):
// every blockchain but the P-chain, subnets' chains first, in key order.
func (s *Service) GetBlockchains(r *http.Request, _ *struct{}, response *platformvm.GetBlockchainsResponse) error {
	ctx, cancel := s.callCtx(r)
	defer cancel()
	tip, err := s.tip(ctx)
	if err != nil {
		return s.internal("getBlockchains", err)
	}
	chains, err := s.blockchainsAt(ctx, tip.state)
	if err != nil {
		return s.internal("getBlockchains", fmt.Errorf("couldn't retrieve subnets: %w", err))
	}
	response.Blockchains = chains
	return nil
}

// GetBlockchainStatus answers platform.getBlockchainStatus (see the package
// comment for the node's point of view).
func (s *Service) GetBlockchainStatus(r *http.Request, args *platformvm.GetBlockchainStatusArgs, reply *platformvm.GetBlockchainStatusReply) error {
	if args.BlockchainID == "" {
		return errMissingBlockchainID
	}
	ctx, cancel := s.callCtx(r)
	defer cancel()
	tip, err := s.tip(ctx)
	if err != nil {
		return s.internal("getBlockchainStatus", err)
	}
	// The node looks chains up in its last accepted block's state, which
	// for a proposal block already holds the block's own decision txs.
	st, err := s.chainStatusAt(ctx, args.BlockchainID, tip.height)
	if err != nil {
		return err
	}
	reply.Status = st
	return nil
}

// GetCurrentSupply answers platform.getCurrentSupply: the primary network's
// or an elastic subnet's supply at the tip.
func (s *Service) GetCurrentSupply(r *http.Request, args *platformvm.GetCurrentSupplyArgs, reply *platformvm.GetCurrentSupplyReply) error {
	ctx, cancel := s.callCtx(r)
	defer cancel()
	tip, err := s.tip(ctx)
	if err != nil {
		return s.internal("getCurrentSupply", err)
	}
	supply, err := s.supplyAt(ctx, args.SubnetID, tip.state)
	if err != nil {
		if !errors.Is(err, database.ErrNotFound) {
			err = s.internal("getCurrentSupply", err)
		}
		return fmt.Errorf("fetching current supply failed: %w", err)
	}
	reply.Supply = avajson.Uint64(supply)
	reply.Height = avajson.Uint64(tip.height)
	return nil
}

// GetCurrentValidators answers platform.getCurrentValidators for the primary
// network, a subnet or an L1, as service.go shapes each kind.
func (s *Service) GetCurrentValidators(r *http.Request, args *platformvm.GetCurrentValidatorsArgs, reply *platformvm.GetCurrentValidatorsReply) error {
	ctx, cancel := s.callCtx(r)
	defer cancel()
	tip, err := s.tip(ctx)
	if err != nil {
		return s.internal("getCurrentValidators", err)
	}
	nodeIDs := set.Of(args.NodeIDs...)
	var obs map[ids.NodeID]observed
	if args.SubnetID == constants.PrimaryNetworkID {
		obs = s.node.observed(ctx)
	}
	vdrs, err := s.validatorsAt(ctx, args.SubnetID, nodeIDs, tip.state, obs)
	if err != nil {
		return s.internal("getCurrentValidators", err)
	}
	reply.Validators = vdrs
	return nil
}

// chainStatusAt mirrors GetBlockchainStatus as of height h.
func (s *Service) chainStatusAt(ctx context.Context, arg string, h uint64) (status.BlockchainStatus, error) {
	// Chains the node runs are known by alias: P, X and C always, others
	// when the upstream node runs them.
	if id, err := s.ctx.BCLookup.Lookup(arg); err == nil {
		return s.runningStatus(ctx, id, h)
	}
	chainID, err := ids.FromString(arg)
	if err != nil {
		return status.UnknownChain, fmt.Errorf("problem parsing blockchainID %q: %w", arg, err)
	}
	created, err := s.chainCreatedAt(ctx, chainID)
	if err != nil {
		return status.UnknownChain, s.internal("getBlockchainStatus", fmt.Errorf("problem looking up blockchain: %w", err))
	}
	switch {
	case created < 0:
		return status.UnknownChain, nil
	case uint64(created) <= h:
		if s.node.runsChain(ctx, chainID) {
			return s.runningStatus(ctx, chainID, h)
		}
		return status.Created, nil
	case uint64(created) == h+1:
		// Block h+1 was the preferred block while h was the last accepted.
		return status.Preferred, nil
	default:
		return status.UnknownChain, nil
	}
}

// runningStatus is the node's nodeValidates: Validating when the node
// validates the chain's subnet, else Syncing (always for the P-chain).
func (s *Service) runningStatus(ctx context.Context, chainID ids.ID, h uint64) (status.BlockchainStatus, error) {
	if chainID == constants.PlatformChainID {
		return status.Syncing, nil
	}
	nodeID, ok := s.node.identity(ctx)
	if !ok {
		return status.Syncing, nil
	}
	subnetID, err := s.chainSubnet(ctx, chainID)
	if err != nil {
		if errors.Is(err, database.ErrNotFound) {
			return status.Syncing, nil
		}
		return status.UnknownChain, s.internal("getBlockchainStatus", err)
	}
	validates, err := s.isValidatorAt(ctx, subnetID, nodeID, h)
	if err != nil {
		return status.UnknownChain, s.internal("getBlockchainStatus", err)
	}
	if validates {
		return status.Validating, nil
	}
	return status.Syncing, nil
}
