-- /validators (internal/api/data/primary) shows each validator's
-- delegations: for an active one the delegators current at the tip (count,
-- stake, and the validator's share of their potential rewards: the
-- potentialRewards.delegationRewardAmount estimate), for a completed one
-- every delegator it had; delegationCapacity filters and sorts by the
-- current stake. Summing them per request (one query per page, one over
-- every current delegator for the capacity) was a third of its CPU
-- (docs/benchmarks.md, "Issue #17 part C", part D). The P indexer keeps them on the
-- validator's row in the block's transaction (internal/decode/pchain,
-- DelegationsChanged): a delegator adds when it joins the current set
-- (accepted, or promoted from pending) and subtracts when it is rewarded;
-- the all-time count and stake add when it is accepted. Zero on other rows.
-- Amounts are sums of uint64 values, kept as BIGINT halves as in 0110:
-- amount = *_hi * 10^10 + *_lo (each exact in BIGINT).
ALTER TABLE p_stakers ADD COLUMN cur_delegators BIGINT NOT NULL DEFAULT 0;
ALTER TABLE p_stakers ADD COLUMN cur_delegated_hi BIGINT NOT NULL DEFAULT 0;
ALTER TABLE p_stakers ADD COLUMN cur_delegated_lo BIGINT NOT NULL DEFAULT 0;
ALTER TABLE p_stakers ADD COLUMN cur_delegatee_hi BIGINT NOT NULL DEFAULT 0;
ALTER TABLE p_stakers ADD COLUMN cur_delegatee_lo BIGINT NOT NULL DEFAULT 0;
ALTER TABLE p_stakers ADD COLUMN all_delegators BIGINT NOT NULL DEFAULT 0;
ALTER TABLE p_stakers ADD COLUMN all_delegated_hi BIGINT NOT NULL DEFAULT 0;
ALTER TABLE p_stakers ADD COLUMN all_delegated_lo BIGINT NOT NULL DEFAULT 0;
-- A database indexed before: the same sums from the delegator rows. The
-- validator's share of a reward p with shares s (millionths) is
-- p - floor(p * (10^6 - s) / 10^6) (avalanchego reward.Split); with
-- p = ph * 10^10 + pl that is ph * s * 10^4 + pl - floor(pl * (10^6 - s) / 10^6),
-- whose first term is split into halves so that no product leaves BIGINT.
UPDATE p_stakers SET all_delegators = d.n, all_delegated_hi = d.a_hi, all_delegated_lo = d.a_lo
    FROM (SELECT validator_tx_id AS v, COUNT(*) AS n, SUM(CAST(SUBSTR(stake_amount, 1, 10) AS BIGINT)) AS a_hi,
            SUM(CAST(SUBSTR(stake_amount, 11, 10) AS BIGINT)) AS a_lo
        FROM p_stakers WHERE kind = 'DELEGATOR' GROUP BY validator_tx_id) AS d
    WHERE p_stakers.tx_id = d.v;
UPDATE p_stakers SET cur_delegators = d.n, cur_delegated_hi = d.a_hi, cur_delegated_lo = d.a_lo,
        cur_delegatee_hi = d.f_hi, cur_delegatee_lo = d.f_lo
    FROM (SELECT x.validator_tx_id AS v, COUNT(*) AS n, SUM(CAST(SUBSTR(x.stake_amount, 1, 10) AS BIGINT)) AS a_hi,
            SUM(CAST(SUBSTR(x.stake_amount, 11, 10) AS BIGINT)) AS a_lo,
            SUM(CAST(SUBSTR(x.potential_reward, 1, 10) AS BIGINT) * y.delegation_shares / 1000000) AS f_hi,
            SUM(CAST(SUBSTR(x.potential_reward, 1, 10) AS BIGINT) * y.delegation_shares % 1000000 * 10000
                + CAST(SUBSTR(x.potential_reward, 11, 10) AS BIGINT)
                - CAST(SUBSTR(x.potential_reward, 11, 10) AS BIGINT) * (1000000 - y.delegation_shares) / 1000000) AS f_lo
        FROM p_stakers x JOIN p_stakers y ON y.tx_id = x.validator_tx_id
        WHERE x.kind = 'DELEGATOR' AND x.removed_height < 0 AND x.current_height >= 0
        GROUP BY x.validator_tx_id) AS d
    WHERE p_stakers.tx_id = d.v;
