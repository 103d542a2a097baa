// Package warpindex gives the Warp signature aggregator (internal/warp) what
// it needs from Permafrost's own P-chain index (internal/decode/pchain):
// validator sets at P-chain heights (warp.ValidatorSets) and the L1 txs with
// their validations and conversions (warp.L1Txs), plus the peers of the
// configured avalanchego node (warp.PeerLister). NewAggregator wires them
// into a running warp.Aggregator.
package warpindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/ava-labs/avalanchego/cache/lru"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"

	"github.com/permafrost-dev/permafrost/internal/decode/pchain"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/warp"
)

const (
	// RecentlyAcceptedWindow is avalanchego's P-chain window in seconds
	// (vms/platformvm/validators.RecentlyAcceptedWindowTTL): the proposed
	// height is the last block accepted at least this long ago...
	RecentlyAcceptedWindow = 30
	// ...but at most this many blocks behind the tip
	// (MaxRecentlyAcceptedWindowSize).
	maxRecentlyAccepted = 64

	// keyCacheSize bounds the parsed BLS keys kept: parsing a compressed key
	// checks it is on the curve, which costs more than the query.
	keyCacheSize = 1 << 14
)

// Index answers the aggregator's questions from the P-chain tables. It is
// safe for concurrent use.
type Index struct {
	db   *store.DB
	keys *lru.Cache[string, *bls.PublicKey]
}

var (
	_ warp.ValidatorSets = (*Index)(nil)
	_ warp.L1Txs         = (*Index)(nil)
)

// New returns the index over db (migrated, filled by the P-chain indexer).
func New(db *store.DB) *Index {
	return &Index{db: db, keys: lru.NewCache[string, *bls.PublicKey](keyCacheSize)}
}

// block is an indexed P-chain block: its height and chain time.
type block struct {
	height uint64
	time   int64
}

// tip is the last indexed P-chain block.
func (x *Index) tip(ctx context.Context) (block, error) {
	var b block
	var h int64
	err := x.db.QueryRowContext(ctx, `SELECT height, chain_time FROM p_block_state ORDER BY height DESC LIMIT 1`).Scan(&h, &b.time)
	if errors.Is(err, sql.ErrNoRows) {
		return b, errors.New("warpindex: the P-chain is not indexed yet")
	}
	if err != nil {
		return b, fmt.Errorf("warpindex: P-chain tip: %w", err)
	}
	if h < 0 {
		return b, fmt.Errorf("warpindex: stored P-chain height %d", h)
	}
	b.height = uint64(h)
	return b, nil
}

// ProposedHeight is platform.getProposedHeight computed from the index: the
// last block accepted at least RecentlyAcceptedWindow seconds before the
// indexed tip, but no more than 64 blocks behind it; the tip when every block
// is younger. Block times stand for acceptance times, and the window is
// measured from the tip's time rather than the wall clock, so that an index
// lagging behind the network still picks a height every validator has long
// accepted, and the answer is a function of the indexed data alone.
func (x *Index) ProposedHeight(ctx context.Context) (uint64, error) {
	tip, err := x.tip(ctx)
	if err != nil {
		return 0, err
	}
	// avalanchego's window keeps at most 64 blocks: the answer is never
	// further behind.
	full := tip.height >= maxRecentlyAccepted
	lowest := uint64(0)
	if full {
		lowest = tip.height - maxRecentlyAccepted
	}
	// The primary key bounds the scan to the last 65 blocks.
	rows, err := x.db.QueryContext(ctx, `SELECT height, chain_time FROM p_block_state WHERE height >= $1 AND height <= $2
		ORDER BY height DESC`, int64(lowest), int64(tip.height))
	if err != nil {
		return 0, fmt.Errorf("warpindex: recent P-chain blocks: %w", err)
	}
	defer rows.Close()
	cutoff := tip.time - RecentlyAcceptedWindow
	for rows.Next() {
		var b block
		var h int64
		if err := rows.Scan(&h, &b.time); err != nil {
			return 0, fmt.Errorf("warpindex: recent P-chain blocks: %w", err)
		}
		if b.time <= cutoff {
			return uint64(h), nil
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("warpindex: recent P-chain blocks: %w", err)
	}
	if full {
		return lowest, nil
	}
	return tip.height, nil
}

// ValidatorSet is platform.getValidatorsAt(subnetID, pHeight) from the
// index, L1 validators included: an L1's inactive validators come as one
// entry under the empty node id without a key, whose weight counts toward the
// total but cannot sign. Errors: warp.ErrUnknownHeight above the indexed tip;
// warp.ErrNotFound when the subnet is unknown or created after pHeight
// (avalanchego answers an empty set there; for the aggregator it is a request
// for a subnet that does not exist, not an outage).
func (x *Index) ValidatorSet(ctx context.Context, subnetID ids.ID, pHeight uint64) ([]warp.Validator, error) {
	if pHeight > math.MaxInt64 {
		return nil, fmt.Errorf("warpindex: P-chain height %d: %w", pHeight, warp.ErrUnknownHeight)
	}
	tip, err := x.tip(ctx)
	if err != nil {
		return nil, err
	}
	if pHeight > tip.height {
		return nil, fmt.Errorf("warpindex: P-chain height %d (indexed tip %d): %w", pHeight, tip.height, warp.ErrUnknownHeight)
	}
	var created int64
	err = x.db.QueryRowContext(ctx, `SELECT created_height FROM p_subnets WHERE subnet_id = $1`, subnetID.String()).Scan(&created)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("warpindex: subnet %s: %w", subnetID, warp.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("warpindex: subnet %s: %w", subnetID, err)
	case created > int64(pHeight):
		return nil, fmt.Errorf("warpindex: subnet %s was created at P-chain height %d, after %d: %w",
			subnetID, created, pHeight, warp.ErrNotFound)
	}
	set, err := pchain.ValidatorSetAt(ctx, x.db, subnetID, pHeight)
	if err != nil {
		return nil, fmt.Errorf("warpindex: %w", err)
	}
	out := make([]warp.Validator, len(set))
	for i, v := range set {
		out[i] = warp.Validator{NodeID: v.NodeID, Weight: v.Weight}
		if v.PublicKey == nil {
			continue
		}
		if out[i].PublicKey, err = x.publicKey(v.PublicKey); err != nil {
			return nil, fmt.Errorf("warpindex: BLS key of %s on subnet %s at height %d: %w", v.NodeID, subnetID, pHeight, err)
		}
	}
	return out, nil
}

func (x *Index) publicKey(compressed []byte) (*bls.PublicKey, error) {
	if pk, ok := x.keys.Get(string(compressed)); ok {
		return pk, nil
	}
	pk, err := bls.PublicKeyFromCompressedBytes(compressed)
	if err != nil {
		return nil, err
	}
	x.keys.Put(string(compressed), pk)
	return pk, nil
}

// SubnetOfChain is platform.validatedBy: the subnet of a blockchain created
// on the P-chain (the primary network for X and C, which genesis created);
// warp.ErrNotFound for an unknown chain. The P-chain itself is validated by
// the primary network.
func (x *Index) SubnetOfChain(ctx context.Context, chainID ids.ID) (ids.ID, error) {
	if chainID == constants.PlatformChainID {
		return constants.PrimaryNetworkID, nil
	}
	var s string
	err := x.db.QueryRowContext(ctx, `SELECT subnet_id FROM p_blockchains WHERE blockchain_id = $1`, chainID.String()).Scan(&s)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ids.Empty, fmt.Errorf("warpindex: blockchain %s: %w", chainID, warp.ErrNotFound)
	case err != nil:
		return ids.Empty, fmt.Errorf("warpindex: blockchain %s: %w", chainID, err)
	}
	subnetID, err := ids.FromString(s)
	if err != nil {
		return ids.Empty, fmt.Errorf("warpindex: stored subnet id %q of blockchain %s: %w", s, chainID, err)
	}
	return subnetID, nil
}
