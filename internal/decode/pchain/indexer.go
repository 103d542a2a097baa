// Package pchain indexes the P-chain: it replays every accepted P block (codec
// bytes) against the database and keeps the derived state avalanchego keeps —
// UTXOs (including stake, reward and atomic ones), stakers and their rewards,
// subnets, blockchains, L1 validators with their fee accounting, the supply and
// a per-height validator-set history — so the data API, the platform.* RPC and
// Warp validator sets are straight queries (tables: migrations/0003_pchain.sql).
//
// The state rules follow avalanchego v1.14.2 vms/platformvm (block/executor and
// txs/executor); comments name the function mirrored where it matters.
package pchain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/upgrade"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/vms/components/gas"
	"github.com/ava-labs/avalanchego/vms/platformvm/block"
	"github.com/ava-labs/avalanchego/vms/platformvm/reward"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"

	avagenesis "github.com/ava-labs/avalanchego/genesis"
	txfee "github.com/ava-labs/avalanchego/vms/platformvm/txs/fee"
	validatorfee "github.com/ava-labs/avalanchego/vms/platformvm/validators/fee"

	"github.com/permafrost-dev/permafrost/internal/decode/primary"
	"github.com/permafrost-dev/permafrost/internal/decode/proposervm"
	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// ChainKey names a blockchain for the shared tables (utxos.chain_key etc.).
type ChainKey struct {
	Key          string
	BlockchainID ids.ID
}

// Params are the network rules the indexer replays with. NewIndexer fills them
// the way avalanchego does for the network ID (mainnet, fuji, else the local
// defaults, which custom networks such as tmpnet ones use); override fields
// before the first Apply if the network runs with other node flags.
type Params struct {
	Reward       reward.Config
	DynamicFee   gas.Config
	ValidatorFee validatorfee.Config
	Upgrades     upgrade.Config
}

// Indexer implements ingest.Indexer for the P-chain of one network.
type Indexer struct {
	Params Params
	Log    *slog.Logger

	g         *genesis.Genesis
	hrp       string
	avax      ids.ID
	chainKeys map[ids.ID]string
	w         primary.Writer
}

var _ ingest.Indexer = (*Indexer)(nil)

// NewIndexer builds the P-chain indexer. Chain keys of the genesis chains (P,
// X, C) are derived from g; extra maps more blockchain IDs to keys (e.g. an L1
// EVM chain indexed under its own key).
func NewIndexer(g *genesis.Genesis, extra ...ChainKey) (*Indexer, error) {
	if g == nil || g.P == nil {
		return nil, errors.New("pchain: genesis is required")
	}
	keys, err := ChainKeys(g)
	if err != nil {
		return nil, err
	}
	for _, c := range extra {
		if c.Key == "" {
			return nil, fmt.Errorf("pchain: empty chain key for %s", c.BlockchainID)
		}
		keys[c.BlockchainID] = c.Key
	}
	staking := avagenesis.GetStakingConfig(g.NetworkID)
	fees := avagenesis.GetTxFeeConfig(g.NetworkID)
	return &Indexer{
		Params: Params{
			Reward:       staking.RewardConfig,
			DynamicFee:   fees.DynamicFeeConfig,
			ValidatorFee: fees.ValidatorFeeConfig,
			Upgrades:     g.Upgrades,
		},
		Log:       slog.Default(),
		g:         g,
		hrp:       g.HRP,
		avax:      g.AvaxAssetID,
		chainKeys: keys,
		w:         primary.Writer{HRP: g.HRP},
	}, nil
}

// ChainKeys maps the P-chain and the genesis chains of g to their keys P, X, C.
func ChainKeys(g *genesis.Genesis) (map[ids.ID]string, error) {
	keys := map[ids.ID]string{constants.PlatformChainID: "P"}
	for key, vm := range map[string]ids.ID{"X": constants.AVMID, "C": constants.EVMID} {
		tx, _, err := g.Chain(vm)
		if err != nil {
			return nil, fmt.Errorf("pchain: %w", err)
		}
		keys[tx.ID()] = key
	}
	return keys, nil
}

// ChainKeyOf returns the key (P, X, C) of a primary-network blockchain of g.
func ChainKeyOf(g *genesis.Genesis, blockchainID ids.ID) (string, bool) {
	keys, err := ChainKeys(g)
	if err != nil {
		return "", false
	}
	k, ok := keys[blockchainID]
	return k, ok
}

// chainKey maps a blockchain ID to its key; unknown chains keep their cb58 ID
// so rows stay distinguishable.
func (ix *Indexer) chainKey(id ids.ID) string {
	if k, ok := ix.chainKeys[id]; ok {
		return k
	}
	return id.String()
}

// DerivedTables lists the tables Apply writes. The shared primary-network
// tables (utxos, utxo_addresses, px_*) also hold X and C-atomic rows, so
// clearing them means replaying those chains too (as ingest.Reindex does).
func (*Indexer) DerivedTables() []string {
	return []string{
		"p_block_state", "p_txs", "p_stakers", "p_staker_reward_owners", "p_validator_set", "p_subnets", "p_subnet_owners",
		"p_blockchains", "p_l1_validators", "p_l1_validator_history", "p_pending_proposals",
		"px_blocks", "px_txs", "px_tx_assets", "px_tx_addresses", "utxos", "utxo_addresses", "utxo_plain_balances",
		"utxo_stake_balances", "avax_supply",
	}
}

// maxHeight marks an open interval in p_validator_set.
const maxHeight = math.MaxInt64

// chainState is the P-chain state carried from block to block (p_block_state).
type chainState struct {
	Time     int64 // unix seconds
	Supply   uint64
	Fee      gas.State
	L1Excess gas.Gas
	Accrued  uint64
}

// blockCtx is the block being applied.
type blockCtx struct {
	height  uint64
	blockID ids.ID
	time    int64 // block time (Banff) or chain time
	st      chainState
	// eff is the height at which state changes take effect: the block itself,
	// or for a proposal block its option block (height+1), which is where
	// avalanchego writes the proposal's state and validator diffs.
	eff    uint64
	seq    int // L1 history order within the block
	burned uint64
	// The block's changes of the AVAX totals besides burned (avax_supply).
	supply primary.Supply
	gas    gas.Gas
	prop   *proposervm.Details // the block's proposervm wrapper, when the source had it
}

// Apply indexes one P block. Height 0 also loads the genesis state.
func (ix *Indexer) Apply(ctx context.Context, tx *store.Tx, b ingest.RawBlock) error {
	inner, prop, err := proposervm.Unwrap(b.Bytes, b.Hash)
	if err != nil {
		return fmt.Errorf("pchain: height %d: %w", b.Height, err)
	}
	b.Bytes = inner
	blk, err := block.Parse(block.Codec, b.Bytes)
	if err != nil {
		if b.Height == 0 {
			return fmt.Errorf("pchain: genesis block: %w", err)
		}
		return ix.applyUndecodable(ctx, tx, b, err)
	}
	if blk.Height() != b.Height {
		return fmt.Errorf("pchain: block %s has height %d, expected %d", blk.ID(), blk.Height(), b.Height)
	}
	if b.Hash != "" && b.Hash != blk.ID().String() {
		return fmt.Errorf("pchain: block at height %d hashes to %s, source says %s", b.Height, blk.ID(), b.Hash)
	}
	bc := &blockCtx{height: blk.Height(), blockID: blk.ID(), eff: blk.Height(), prop: prop}

	if b.Height == 0 {
		if blk.Parent() != ix.g.ID() {
			return fmt.Errorf("pchain: genesis block parent %s is not the genesis hash %s", blk.Parent(), ix.g.ID())
		}
		if err := ix.applyGenesis(ctx, tx, bc); err != nil {
			return err
		}
		return ix.finishBlock(ctx, tx, bc, blk, len(b.Bytes), "ApricotCommitBlock")
	}

	prevID, st, err := loadState(ctx, tx, b.Height-1)
	if err != nil {
		return err
	}
	if blk.Parent() != prevID {
		return fmt.Errorf("pchain: block %s at height %d has parent %s, indexed parent is %s", blk.ID(), b.Height, blk.Parent(), prevID)
	}
	bc.st = st
	bc.time = st.Time

	var typ string
	switch blk := blk.(type) {
	case *block.BanffStandardBlock:
		typ = "BanffStandardBlock"
		err = ix.applyBanffDecisions(ctx, tx, bc, blk.Timestamp(), blk.Transactions, nil)
	case *block.BanffProposalBlock:
		typ = "BanffProposalBlock"
		bc.eff = bc.height + 1
		err = ix.applyBanffDecisions(ctx, tx, bc, blk.Timestamp(), blk.Transactions, blk.Tx)
	case *block.BanffCommitBlock:
		typ = "BanffCommitBlock"
		err = ix.settleProposal(ctx, tx, bc, true)
	case *block.BanffAbortBlock:
		typ = "BanffAbortBlock"
		err = ix.settleProposal(ctx, tx, bc, false)
	case *block.ApricotCommitBlock:
		typ = "ApricotCommitBlock"
		err = ix.settleProposal(ctx, tx, bc, true)
	case *block.ApricotAbortBlock:
		typ = "ApricotAbortBlock"
		err = ix.settleProposal(ctx, tx, bc, false)
	case *block.ApricotStandardBlock:
		typ = "ApricotStandardBlock"
		err = ix.applyTxs(ctx, tx, bc, blk.Transactions, 0)
	case *block.ApricotAtomicBlock:
		typ = "ApricotAtomicBlock"
		err = ix.applyTxs(ctx, tx, bc, []*txs.Tx{blk.Tx}, 0)
	case *block.ApricotProposalBlock:
		typ = "ApricotProposalBlock"
		bc.eff = bc.height + 1
		err = ix.proposeTx(ctx, tx, bc, blk.Tx, 0)
	default:
		return fmt.Errorf("pchain: unsupported block type %T at height %d", blk, b.Height)
	}
	if err != nil {
		return fmt.Errorf("pchain: height %d (%s): %w", b.Height, typ, err)
	}
	return ix.finishBlock(ctx, tx, bc, blk, len(b.Bytes), typ)
}

// applyBanffDecisions mirrors verifier.BanffStandardBlock/BanffProposalBlock:
// advance the chain time, charge the block's gas, execute the decision txs,
// deactivate L1 validators that cannot pay the next second, then (proposal
// blocks) record the proposal tx for its option block.
func (ix *Indexer) applyBanffDecisions(ctx context.Context, tx *store.Tx, bc *blockCtx, t time.Time, decisions []*txs.Tx, proposal *txs.Tx) error {
	if t.Unix() < bc.st.Time {
		return fmt.Errorf("block time %d before chain time %d", t.Unix(), bc.st.Time)
	}
	if err := ix.advanceTime(ctx, tx, bc, t.Unix()); err != nil {
		return err
	}
	if ix.Params.Upgrades.IsEtnaActivated(t) {
		var total gas.Dimensions
		for _, stx := range decisions {
			c, err := txfee.TxComplexity(stx.Unsigned)
			if err != nil {
				ix.Log.Warn("pchain: tx complexity", "tx", stx.ID(), "err", err)
				continue
			}
			if total, err = total.Add(&c); err != nil {
				return fmt.Errorf("block complexity: %w", err)
			}
		}
		g, err := total.ToGas(ix.Params.DynamicFee.Weights)
		if err != nil {
			return fmt.Errorf("block gas: %w", err)
		}
		bc.gas = g
		fs, err := bc.st.Fee.ConsumeGas(g)
		if err != nil {
			// The chain accepted the block, so our fee parameters differ from
			// the network's; keep going with an empty capacity.
			ix.Log.Warn("pchain: block gas above capacity; check the dynamic fee config", "height", bc.height, "err", err)
			fs = gas.State{Capacity: 0, Excess: bc.st.Fee.Excess + g}
		}
		bc.st.Fee = fs
	}
	if err := ix.applyTxs(ctx, tx, bc, decisions, 0); err != nil {
		return err
	}
	if err := ix.deactivateLowBalance(ctx, tx, bc); err != nil {
		return err
	}
	if proposal != nil {
		return ix.proposeTx(ctx, tx, bc, proposal, len(decisions))
	}
	return nil
}

// finishBlock writes px_blocks and p_block_state.
func (ix *Indexer) finishBlock(ctx context.Context, tx *store.Tx, bc *blockCtx, blk block.Block, size int, typ string) error {
	all := blk.Txs()
	txIDs := make([]string, len(all))
	for i, t := range all {
		txIDs[i] = t.ID().String()
	}
	active, err := countActiveL1(ctx, tx)
	if err != nil {
		return err
	}
	accrued := int64(0)
	if bc.st.Accrued <= math.MaxInt64 {
		accrued = int64(bc.st.Accrued)
	}
	ts := bc.time
	if bb, ok := blk.(block.BanffBlock); ok {
		ts = bb.Timestamp().Unix()
	} else if bc.height > 0 {
		ts = bc.st.Time
	}
	propID, propParent, propNode, propPHeight, propTime := bc.prop.Row()
	if _, err := tx.Exec(ctx, `INSERT INTO px_blocks (chain_key, height, block_id, parent_id, timestamp, block_type,
		tx_count, tx_ids, size_bytes, current_supply, l1_validators_accrued_fees, active_l1_validators,
		proposer_id, proposer_parent_id, proposer_node_id, proposer_p_height, proposer_timestamp)
		VALUES ('P',$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16)`,
		int64(bc.height), bc.blockID.String(), blk.Parent().String(), ts, typ, len(all), jsonString(txIDs), size,
		fmt.Sprint(bc.st.Supply), accrued, active, propID, propParent, propNode, propPHeight, propTime); err != nil {
		return fmt.Errorf("pchain: insert block %d: %w", bc.height, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO p_block_state (height, block_id, chain_time, current_supply, fee_capacity,
		fee_excess, l1_excess, l1_accrued_fees, active_l1_validators, gas_consumed, burned)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)`,
		int64(bc.height), bc.blockID.String(), bc.st.Time, primary.PadAmount(bc.st.Supply),
		fmt.Sprint(uint64(bc.st.Fee.Capacity)), fmt.Sprint(uint64(bc.st.Fee.Excess)), fmt.Sprint(uint64(bc.st.L1Excess)),
		primary.PadAmount(bc.st.Accrued), active, fmt.Sprint(uint64(bc.gas)), primary.PadAmount(bc.burned)); err != nil {
		return fmt.Errorf("pchain: insert block state %d: %w", bc.height, err)
	}
	bc.supply.Burned = int64(bc.burned)
	return ix.w.AddSupply(ctx, tx, "P", bc.supply)
}

// loadState reads the state after block height.
func loadState(ctx context.Context, tx *store.Tx, height uint64) (ids.ID, chainState, error) {
	var (
		blockID, supply, capacity, excess, l1Excess, accrued string
		st                                                   chainState
	)
	err := tx.QueryRow(ctx, `SELECT block_id, chain_time, current_supply, fee_capacity, fee_excess, l1_excess, l1_accrued_fees
		FROM p_block_state WHERE height = $1`, int64(height)).Scan(&blockID, &st.Time, &supply, &capacity, &excess, &l1Excess, &accrued)
	if err != nil {
		return ids.Empty, st, fmt.Errorf("pchain: state after height %d (blocks must be applied in order): %w", height, err)
	}
	id, err := ids.FromString(blockID)
	if err != nil {
		return ids.Empty, st, fmt.Errorf("pchain: stored block id %q: %w", blockID, err)
	}
	var vals [5]uint64
	for i, s := range []string{supply, capacity, excess, l1Excess, accrued} {
		if vals[i], err = parseUint(s); err != nil {
			return ids.Empty, st, fmt.Errorf("pchain: stored state at %d: %w", height, err)
		}
	}
	st.Supply, st.Fee.Capacity, st.Fee.Excess, st.L1Excess, st.Accrued = vals[0], gas.Gas(vals[1]), gas.Gas(vals[2]), gas.Gas(vals[3]), vals[4]
	return id, st, nil
}

// applyUndecodable keeps a block the codec rejects: the block row (type
// UNKNOWN) and one UNKNOWN tx holding its bytes, so nothing is dropped and the
// problem is visible. State derived from it is necessarily missing.
func (ix *Indexer) applyUndecodable(ctx context.Context, tx *store.Tx, b ingest.RawBlock, cause error) error {
	id := ids.ID(hash256(b.Bytes))
	ix.Log.Error("pchain: undecodable block stored as UNKNOWN", "height", b.Height, "id", id, "err", cause)
	ts := b.Timestamp
	prevID, st, err := loadState(ctx, tx, b.Height-1)
	if err != nil {
		return err
	}
	parent := prevID.String()
	if ts <= 0 {
		ts = st.Time
	}
	if _, err := tx.Exec(ctx, `INSERT INTO px_blocks (chain_key, height, block_id, parent_id, timestamp, block_type,
		tx_count, tx_ids, size_bytes, current_supply) VALUES ('P',$1,$2,$3,$4,'UNKNOWN',1,$5,$6,$7)`,
		int64(b.Height), id.String(), parent, ts, jsonString([]string{id.String()}), len(b.Bytes), fmt.Sprint(st.Supply)); err != nil {
		return fmt.Errorf("pchain: insert unknown block %d: %w", b.Height, err)
	}
	if err := insertTxRow(ctx, tx, txRow{id: id.String(), height: b.Height, blockID: id.String(), time: ts,
		typ: "UNKNOWN", bytes: b.Bytes, status: "Committed"}); err != nil {
		return err
	}
	active, err := countActiveL1(ctx, tx)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO p_block_state (height, block_id, chain_time, current_supply, fee_capacity,
		fee_excess, l1_excess, l1_accrued_fees, active_l1_validators, gas_consumed, burned)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,'0',$10)`,
		int64(b.Height), id.String(), st.Time, primary.PadAmount(st.Supply), fmt.Sprint(uint64(st.Fee.Capacity)),
		fmt.Sprint(uint64(st.Fee.Excess)), fmt.Sprint(uint64(st.L1Excess)), primary.PadAmount(st.Accrued), active,
		primary.PadAmount(0))
	if err != nil {
		return fmt.Errorf("pchain: insert unknown block state %d: %w", b.Height, err)
	}
	return nil
}

// typeName is the Go type name without package, e.g. "AddValidatorTx".
func typeName(v any) string {
	s := fmt.Sprintf("%T", v)
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimPrefix(s, "*")
}
