package export

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Header returns the CSV header of an operation type.
func Header(t OperationType) []string {
	switch t {
	case TypeEVM:
		return EVMHeader
	case TypePrimary:
		return PrimaryHeader
	case TypePrimarySimple:
		return SimpleHeader
	case TypePrimaryStaking:
		return StakingHeader
	}
	return nil
}

// sources builds the row sources of spec, bounded to what is indexed now,
// so a run reads a stable snapshot of a chain even while it grows.
func (s *Service) sources(ctx context.Context, n *api.Network, spec Spec) ([]string, []rowSource, error) {
	var out []rowSource
	assets := newAssetCache(s.db)
	for _, key := range spec.Chains {
		c := n.Chain[key]
		switch spec.Type {
		case TypeEVM:
			if c.Kind != "EVM" {
				return nil, nil, invalidf("chain %s is not an EVM chain", key)
			}
			tip, ok, err := tipBlock(ctx, s.db, key)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				out = append(out, newEVMSource(ctx, s.db, key, c.EVMChainID, tip, spec.Addresses))
			}
		case TypePrimary, TypePrimarySimple, TypePrimaryStaking:
			if key != "P" && key != "X" && key != "C" {
				return nil, nil, invalidf("chain %s is not a primary-network chain", key)
			}
			tip, ok, err := tipTime(ctx, s.db, key)
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				continue
			}
			if spec.Type == TypePrimaryStaking {
				out = append(out, newStakingSource(s.db, tip, spec.Addresses))
				continue
			}
			out = append(out, newPXSource(s.db, key, c.BlockchainID, spec.Type == TypePrimarySimple, tip,
				spec.Addresses, spec.EVMAddresses, assets))
		default:
			return nil, nil, invalidf("unknown export type %s", spec.Type)
		}
	}
	return Header(spec.Type), out, nil
}

// tipBlock is the last indexed block of an EVM chain.
func tipBlock(ctx context.Context, db *store.DB, key string) (int64, bool, error) {
	var h int64
	err := db.QueryRowContext(ctx, `SELECT height FROM checkpoints WHERE chain_key = $1`, key).Scan(&h)
	if err == nil {
		return h, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, false, fmt.Errorf("export: checkpoint of %s: %w", key, err)
	}
	// Blocks written without the ingest driver (no checkpoint row).
	var m sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MAX(number) FROM evm_blocks WHERE chain_key = $1`, key).Scan(&m); err != nil {
		return 0, false, fmt.Errorf("export: tip of %s: %w", key, err)
	}
	return m.Int64, m.Valid, nil
}

// tipTime is the time of the last indexed block of a primary-network chain.
func tipTime(ctx context.Context, db *store.DB, key string) (int64, bool, error) {
	var t int64
	err := db.QueryRowContext(ctx, `SELECT block_time FROM checkpoints WHERE chain_key = $1`, key).Scan(&t)
	if err == nil {
		return t, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, false, fmt.Errorf("export: checkpoint of %s: %w", key, err)
	}
	var m sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MAX(timestamp) FROM px_txs WHERE chain_key = $1`, key).Scan(&m); err != nil {
		return 0, false, fmt.Errorf("export: tip of %s: %w", key, err)
	}
	return m.Int64, m.Valid, nil
}
