package warpindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"

	"github.com/permafrost-dev/permafrost/internal/warp"
)

// PChainTx returns the accepted P-chain tx txID parsed from its stored
// signed bytes. Errors: warp.ErrNotFound when the index does not know the
// id, warp.ErrNotPChainTx when it is an X-chain tx (or an atomic tx of the
// C-chain), so that the caller can tell "not an L1 tx" from "unknown".
func (x *Index) PChainTx(ctx context.Context, txID ids.ID) (*txs.Tx, error) {
	var (
		chain string
		raw   []byte
	)
	err := x.db.QueryRowContext(ctx, `SELECT chain_key, tx_bytes FROM px_txs WHERE tx_id = $1`, txID.String()).Scan(&chain, &raw)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("warpindex: tx %s: %w", txID, warp.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("warpindex: tx %s: %w", txID, err)
	case chain != "P":
		return nil, fmt.Errorf("warpindex: tx %s is a %s-chain tx: %w", txID, chain, warp.ErrNotPChainTx)
	}
	tx, err := txs.Parse(txs.Codec, raw)
	if err != nil {
		return nil, fmt.Errorf("warpindex: stored tx %s does not parse: %w", txID, err)
	}
	if tx.ID() != txID {
		return nil, fmt.Errorf("warpindex: stored bytes of tx %s hash to %s", txID, tx.ID())
	}
	return tx, nil
}

// ValidationTx returns the tx that created the L1 validation validationID:
// the ConvertSubnetToL1Tx of an initial validator or the
// RegisterL1ValidatorTx. The P-chain indexer records it when it creates the
// validator (p_l1_validators.created_tx_id); removed validators keep theirs.
func (x *Index) ValidationTx(ctx context.Context, validationID ids.ID) (ids.ID, error) {
	var s string
	err := x.db.QueryRowContext(ctx, `SELECT created_tx_id FROM p_l1_validators WHERE validation_id = $1`,
		validationID.String()).Scan(&s)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ids.Empty, fmt.Errorf("warpindex: L1 validation %s: %w", validationID, warp.ErrNotFound)
	case err != nil:
		return ids.Empty, fmt.Errorf("warpindex: L1 validation %s: %w", validationID, err)
	}
	txID, err := ids.FromString(s)
	if err != nil {
		return ids.Empty, fmt.Errorf("warpindex: stored tx id %q of L1 validation %s: %w", s, validationID, err)
	}
	return txID, nil
}

// ConversionTx returns the ConvertSubnetToL1Tx of subnetID, or
// warp.ErrNotFound when the subnet is unknown or was not converted.
func (x *Index) ConversionTx(ctx context.Context, subnetID ids.ID) (ids.ID, error) {
	var s string
	err := x.db.QueryRowContext(ctx, `SELECT conversion_tx_id FROM p_subnets WHERE subnet_id = $1`, subnetID.String()).Scan(&s)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ids.Empty, fmt.Errorf("warpindex: subnet %s: %w", subnetID, warp.ErrNotFound)
	case err != nil:
		return ids.Empty, fmt.Errorf("warpindex: subnet %s: %w", subnetID, err)
	case s == "":
		return ids.Empty, fmt.Errorf("warpindex: subnet %s was not converted to an L1: %w", subnetID, warp.ErrNotFound)
	}
	txID, err := ids.FromString(s)
	if err != nil {
		return ids.Empty, fmt.Errorf("warpindex: stored conversion tx id %q of subnet %s: %w", s, subnetID, err)
	}
	return txID, nil
}
