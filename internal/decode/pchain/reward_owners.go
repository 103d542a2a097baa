package pchain

import (
	"context"
	"fmt"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// PutRewardOwners writes a staker's reward-owner addresses (a validator's
// validation reward owner, a delegator's reward owner) to
// p_staker_reward_owners (migration 0180), in the transaction of its
// p_stakers row: the key the delegator and pending-reward listings walk per
// address.
func PutRewardOwners(ctx context.Context, db *store.Tx, txID string, start int64, addrs []string) error {
	for _, a := range addrs {
		if _, err := db.Exec(ctx, `INSERT INTO p_staker_reward_owners (address, start_time, tx_id) VALUES ($1, $2, $3)
			ON CONFLICT DO NOTHING`, a, start, txID); err != nil {
			return fmt.Errorf("pchain: reward owner of staker %s: %w", txID, err)
		}
	}
	return nil
}
