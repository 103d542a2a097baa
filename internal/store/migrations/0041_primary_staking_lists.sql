-- Orders of the staking listings of the data API (internal/api/data/primary:
-- /validators, /delegators, rewards:listPending): every validation record by
-- start time (blockIndex), end time (timeRemaining) and delegation fee, so a
-- page is a walk of an index instead of a sort of p_stakers.
CREATE INDEX IF NOT EXISTS p_stakers_start ON p_stakers (start_time, tx_id);
CREATE INDEX IF NOT EXISTS p_stakers_end ON p_stakers (end_time, tx_id);
CREATE INDEX IF NOT EXISTS p_stakers_fee ON p_stakers (delegation_shares, tx_id);
