-- The stakers whose reward goes to an address, by start time: the page of
-- primary.delegators?rewardAddresses= and rewards:listPending?addresses=
-- (internal/api/data/primary/delegators.go) is one walk per address of this
-- key, merged. They matched the owner JSON with LIKE while walking every
-- staker in start-time order: at five million UTXOs (issue #22,
-- docs/benchmarks.md "Reward owners") an owner with few stakes read all
-- 120,904 delegators, 60-80 ms. One row per address of a validator's
-- validation_reward_owner and of a delegator's reward_owner (the columns
-- those routes match), written with the p_stakers row
-- (internal/decode/pchain/reward_owners.go); 0181 fills it from the
-- existing rows. start_time is the staker's, which never changes.
CREATE TABLE IF NOT EXISTS p_staker_reward_owners (
    address TEXT NOT NULL,
    start_time BIGINT NOT NULL,
    tx_id TEXT NOT NULL,
    PRIMARY KEY (address, start_time, tx_id)
) WITHOUT ROWID;
