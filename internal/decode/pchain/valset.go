package pchain

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/math"

	"github.com/permafrost-dev/permafrost/internal/decode/primary"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// currentEntry computes the validator-set entry of (subnet, node) from the
// current state, as avalanchego's validator manager sees it: the staker
// weights (validator + delegators) with the node's primary-network BLS key,
// plus an active L1 validator's weight and key; the empty node ID carries the
// summed weight of the subnet's inactive L1 validators, without key.
func currentEntry(ctx context.Context, db *store.Tx, subnet ids.ID, node ids.NodeID) (uint64, string, error) {
	var (
		total uint64
		key   string
	)
	add := func(s string) error {
		w, err := parseUint(s)
		if err != nil {
			return err
		}
		if total, err = math.Add(total, w); err != nil {
			return fmt.Errorf("pchain: weight of %s on %s overflows", node, subnet)
		}
		return nil
	}
	if node == ids.EmptyNodeID {
		rows, err := db.Query(ctx, `SELECT weight FROM p_l1_validators WHERE subnet_id = $1 AND removed_height = -1
			AND end_accumulated_fee = $2`, subnet.String(), zeroPad)
		if err != nil {
			return 0, "", fmt.Errorf("pchain: inactive L1 weight: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var w string
			if err := rows.Scan(&w); err != nil {
				return 0, "", err
			}
			if err := add(w); err != nil {
				return 0, "", err
			}
		}
		return total, "", rows.Err()
	}

	rows, err := db.Query(ctx, `SELECT weight FROM p_stakers WHERE subnet_id = $1 AND node_id = $2
		AND removed_height = -1 AND current_height >= 0`, subnet.String(), node.String())
	if err != nil {
		return 0, "", fmt.Errorf("pchain: staker weight: %w", err)
	}
	stakers := 0
	for rows.Next() {
		var w string
		if err := rows.Scan(&w); err != nil {
			rows.Close()
			return 0, "", err
		}
		if err := add(w); err != nil {
			rows.Close()
			return 0, "", err
		}
		stakers++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, "", err
	}
	if stakers > 0 {
		err := db.QueryRow(ctx, `SELECT bls_public_key FROM p_stakers WHERE subnet_id = $1 AND node_id = $2 AND kind = $3
			AND removed_height = -1 AND current_height >= 0 ORDER BY added_height DESC LIMIT 1`,
			constants.PrimaryNetworkID.String(), node.String(), KindValidator).Scan(&key)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, "", fmt.Errorf("pchain: primary key of %s: %w", node, err)
		}
	}

	var w, k string
	err = db.QueryRow(ctx, `SELECT weight, public_key FROM p_l1_validators WHERE subnet_id = $1 AND node_id = $2
		AND removed_height = -1 AND end_accumulated_fee <> $3`, subnet.String(), node.String(), zeroPad).Scan(&w, &k)
	switch {
	case err == nil:
		if err := add(w); err != nil {
			return 0, "", err
		}
		if key == "" {
			key = k
		}
	case !errors.Is(err, sql.ErrNoRows):
		return 0, "", fmt.Errorf("pchain: L1 weight of %s: %w", node, err)
	}
	return total, key, nil
}

// refreshSet records the entry of (subnet, node) from height eff on, if it
// changed: the open interval closes at eff and a new one opens.
func (ix *Indexer) refreshSet(ctx context.Context, db *store.Tx, eff uint64, subnet ids.ID, node ids.NodeID) error {
	weight, key, err := currentEntry(ctx, db, subnet, node)
	if err != nil {
		return err
	}
	sub, nd, w := subnet.String(), node.String(), primary.PadAmount(weight)
	var (
		from         int64
		oldW, oldKey string
	)
	err = db.QueryRow(ctx, `SELECT from_height, weight, public_key FROM p_validator_set WHERE subnet_id = $1
		AND node_id = $2 AND to_height = $3`, sub, nd, int64(maxHeight)).Scan(&from, &oldW, &oldKey)
	open := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("pchain: validator set of %s/%s: %w", sub, nd, err)
	}
	if open && oldW == w && oldKey == key {
		return nil
	}
	if !open && weight == 0 {
		return nil
	}
	if open {
		if from == int64(eff) {
			_, err = db.Exec(ctx, `DELETE FROM p_validator_set WHERE subnet_id = $1 AND node_id = $2 AND from_height = $3`, sub, nd, from)
		} else {
			_, err = db.Exec(ctx, `UPDATE p_validator_set SET to_height = $1 WHERE subnet_id = $2 AND node_id = $3 AND from_height = $4`,
				int64(eff), sub, nd, from)
		}
		if err != nil {
			return fmt.Errorf("pchain: close validator set entry %s/%s: %w", sub, nd, err)
		}
	}
	if weight == 0 {
		return nil
	}
	// A change undone within the same height reopens the previous interval.
	res, err := db.Exec(ctx, `UPDATE p_validator_set SET to_height = $1 WHERE subnet_id = $2 AND node_id = $3
		AND to_height = $4 AND weight = $5 AND public_key = $6`, int64(maxHeight), sub, nd, int64(eff), w, key)
	if err != nil {
		return fmt.Errorf("pchain: reopen validator set entry %s/%s: %w", sub, nd, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	if _, err := db.Exec(ctx, `INSERT INTO p_validator_set (subnet_id, node_id, from_height, to_height, weight, public_key)
		VALUES ($1,$2,$3,$4,$5,$6)`, sub, nd, int64(eff), int64(maxHeight), w, key); err != nil {
		return fmt.Errorf("pchain: open validator set entry %s/%s: %w", sub, nd, err)
	}
	return nil
}

// refreshNodeSubnets refreshes a node's entries on other subnets after its
// primary-network validator (hence its key) changed.
func (ix *Indexer) refreshNodeSubnets(ctx context.Context, db *store.Tx, eff uint64, node ids.NodeID) error {
	rows, err := db.Query(ctx, `SELECT DISTINCT subnet_id FROM p_stakers WHERE node_id = $1 AND subnet_id <> $2
		AND removed_height = -1 AND current_height >= 0`, node.String(), constants.PrimaryNetworkID.String())
	if err != nil {
		return fmt.Errorf("pchain: subnets of %s: %w", node, err)
	}
	var subnets []ids.ID
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return err
		}
		id, err := ids.FromString(s)
		if err != nil {
			rows.Close()
			return fmt.Errorf("pchain: stored subnet id %q: %w", s, err)
		}
		subnets = append(subnets, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, s := range subnets {
		if err := ix.refreshSet(ctx, db, eff, s, node); err != nil {
			return err
		}
	}
	return nil
}
