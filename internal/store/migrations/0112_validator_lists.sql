-- /validators (internal/api/data/primary, validatorlist.go) pages validation
-- records (kind <> 'DELEGATOR') in start, end or fee order. The indexes of
-- 0041 hold every staker, delegators included (most of them), so a page of
-- active validators walked thousands of entries and read each row to
-- filter it. These hold only the validation records, with the columns the
-- filters test (status: removed_height, start_time, removal; nodeIds:
-- node_id; subnetId; fee filters: kind), so a page reads only the rows it
-- returns.
CREATE INDEX IF NOT EXISTS p_validators_start ON p_stakers (start_time, tx_id, removed_height, node_id, kind, removal, subnet_id)
    WHERE kind <> 'DELEGATOR';
CREATE INDEX IF NOT EXISTS p_validators_end ON p_stakers (end_time, tx_id, removed_height, start_time, node_id, kind, removal, subnet_id)
    WHERE kind <> 'DELEGATOR';
CREATE INDEX IF NOT EXISTS p_validators_fee ON p_stakers (delegation_shares, tx_id, removed_height, start_time, node_id, kind, removal,
    subnet_id) WHERE kind <> 'DELEGATOR';
-- The delegators of a page's validators (one query per page) and the
-- current delegations of every validator (delegationCapacity), read from
-- the index alone (kind is a column too, so that SQLite sees it covered).
CREATE INDEX IF NOT EXISTS p_delegations ON p_stakers (validator_tx_id, removed_height, start_time, stake_amount, potential_reward, kind)
    WHERE kind = 'DELEGATOR';
CREATE INDEX IF NOT EXISTS p_delegations_current ON p_stakers (removed_height, start_time, validator_tx_id, stake_amount, kind)
    WHERE kind = 'DELEGATOR';
