-- Metrics API v2 rollups beside 0008's (issue #21 part B), written by
-- internal/metrics in the block's own transaction and rebuilt by `reindex`:
-- staking per subnet and day, continuous fees paid by L1 validators per day,
-- and ICM message counts per source/destination pair.

-- A subnet's current stakers at the end of every UTC day (bucket = day start)
-- in which they changed; a day without a row has the previous row's values.
-- validators/validator_weight are p_stakers validators (primary network,
-- elastic and permissioned subnets), l1_* the L1 validators registered and
-- not removed (p_l1_validators), delegators/delegator_weight p_stakers
-- delegators. Weights are decimal (a sum of uint64 weights).
CREATE TABLE IF NOT EXISTS metrics_staking_daily (
    subnet_id         TEXT NOT NULL,
    bucket            BIGINT NOT NULL,
    validators        BIGINT NOT NULL,
    validator_weight  TEXT NOT NULL,
    l1_validators     BIGINT NOT NULL,
    l1_weight         TEXT NOT NULL,
    delegators        BIGINT NOT NULL,
    delegator_weight  TEXT NOT NULL,
    PRIMARY KEY (subnet_id, bucket)
) WITHOUT ROWID;

-- nAVAX of continuous fee (ACP-77) each L1 validation paid per UTC day, counted
-- on the day of the P-chain block that charged it. Only days with a fee have a
-- row. The subnet and total tables are the sums of these rows per day, with
-- paying = the validations with a row that day, kept so a series never sums
-- every validator's rows per request.
CREATE TABLE IF NOT EXISTS metrics_l1_fees_daily (
    validation_id  TEXT NOT NULL,
    bucket         BIGINT NOT NULL,
    subnet_id      TEXT NOT NULL,
    node_id        TEXT NOT NULL,
    fees           BIGINT NOT NULL,
    PRIMARY KEY (validation_id, bucket)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS metrics_l1_fees_daily_node ON metrics_l1_fees_daily (node_id, bucket);

CREATE TABLE IF NOT EXISTS metrics_l1_fees_subnet_daily (
    subnet_id  TEXT NOT NULL,
    bucket     BIGINT NOT NULL,
    fees       BIGINT NOT NULL,
    paying     BIGINT NOT NULL,
    PRIMARY KEY (subnet_id, bucket)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS metrics_l1_fees_total_daily (
    bucket     BIGINT PRIMARY KEY,
    fees       BIGINT NOT NULL,
    paying     BIGINT NOT NULL
) WITHOUT ROWID;

-- Where each ICM message is counted: its source and destination blockchain
-- ids and its time (icm_messages.sort_time: the send when the source chain is
-- indexed, else the receipt). A message is counted once; when its time moves
-- (its other side was indexed later) the count moves with it.
CREATE TABLE IF NOT EXISTS metrics_icm_messages (
    message_id  TEXT PRIMARY KEY,
    src         TEXT NOT NULL,
    dst         TEXT NOT NULL,
    msg_time    BIGINT NOT NULL
) WITHOUT ROWID;

-- Messages per (src, dst) and hour, day, all time. Beside every pair the
-- rollup keeps the aggregate keys (src, ''), ('', dst) and ('', ''): an empty
-- id stands for every blockchain on that side, so a query reads one key range
-- per group it answers.
CREATE TABLE IF NOT EXISTS metrics_icm_hourly (
    src       TEXT NOT NULL,
    dst       TEXT NOT NULL,
    bucket    BIGINT NOT NULL,
    messages  BIGINT NOT NULL,
    PRIMARY KEY (src, dst, bucket)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS metrics_icm_daily (
    src       TEXT NOT NULL,
    dst       TEXT NOT NULL,
    bucket    BIGINT NOT NULL,
    messages  BIGINT NOT NULL,
    PRIMARY KEY (src, dst, bucket)
) WITHOUT ROWID;

-- A query with many groups reads every key of its level in one time range.
CREATE INDEX IF NOT EXISTS metrics_icm_hourly_time ON metrics_icm_hourly (bucket, src, dst, messages);
CREATE INDEX IF NOT EXISTS metrics_icm_daily_time ON metrics_icm_daily (bucket, src, dst, messages);

CREATE TABLE IF NOT EXISTS metrics_icm_pairs (
    src       TEXT NOT NULL,
    dst       TEXT NOT NULL,
    messages  BIGINT NOT NULL,
    PRIMARY KEY (src, dst)
) WITHOUT ROWID;

-- The rollups find a block's L1 validator changes by height, and
-- validators:getAddresses lists a subnet's validator txs by time.
CREATE INDEX IF NOT EXISTS p_l1_validator_history_height ON p_l1_validator_history (height);
CREATE INDEX IF NOT EXISTS p_stakers_subnet_added ON p_stakers (subnet_id, kind, added_time, tx_id);
