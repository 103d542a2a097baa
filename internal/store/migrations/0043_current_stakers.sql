-- transactions:listStaking (internal/api/data/primary) pages the txs of the
-- current and pending stakers by acceptance time: a walk of this index
-- instead of a sort of every current staker.
CREATE INDEX IF NOT EXISTS p_stakers_current ON p_stakers (removed_height, added_time, tx_id);
