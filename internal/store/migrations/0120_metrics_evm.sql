-- Metrics API v2 EVM chain metrics (issue #21 part A; definitions in
-- docs/metrics.md), maintained by internal/metrics (evmrollup.go) in the
-- block's own transaction, once per batch, and rebuilt by `reindex`.

-- One row per EVM chain, interval kind (1 hour, 2 day, 3 week from Monday,
-- 4 month; UTC) and interval start (bucket, unix seconds) holding at least one
-- block. Sums and maxima of the interval's blocks, the distinct counts of
-- metrics_evm_seen, and cum_* = totals from the chain's first block to the end
-- of the interval (rows are written in block order, so each new row starts
-- from the previous row's totals). Amounts in wei as decimal TEXT (any size).
CREATE TABLE IF NOT EXISTS metrics_evm_buckets (
    chain_key         TEXT NOT NULL,
    kind              INTEGER NOT NULL,
    bucket            BIGINT NOT NULL,
    tx_count          BIGINT NOT NULL,
    gas_used          BIGINT NOT NULL,
    fees_paid         TEXT NOT NULL,            -- sum of gas used x effective gas price
    gas_price_sum     TEXT NOT NULL,            -- sum of the txs' effective gas prices
    max_gas_price     TEXT NOT NULL,
    max_tps           DOUBLE PRECISION NOT NULL, -- max over blocks of txs / seconds since the previous block
    max_gps           DOUBLE PRECISION NOT NULL, -- same with gas used
    contracts         BIGINT NOT NULL,
    active_addresses  BIGINT NOT NULL,
    active_senders    BIGINT NOT NULL,
    deployers         BIGINT NOT NULL,
    last_ms           BIGINT NOT NULL,          -- time of the interval's newest block, unix milliseconds
    cum_txs           BIGINT NOT NULL,
    cum_addresses     BIGINT NOT NULL,
    cum_contracts     BIGINT NOT NULL,
    cum_deployers     BIGINT NOT NULL,
    PRIMARY KEY (chain_key, kind, bucket)
) WITHOUT ROWID;

-- The distinct addresses behind the counts: one row per (role, kind, bucket,
-- address) the first time the address plays the role in that interval (role 1
-- active address, 2 sender, 3 deployer); kind 0 bucket 0 is "ever" (roles 1
-- and 3), whose new rows are the cumulative counts' increments. Inserting with
-- ON CONFLICT DO NOTHING says exactly which addresses are new, so a count is
-- never recomputed from the blocks.
CREATE TABLE IF NOT EXISTS metrics_evm_seen (
    chain_key  TEXT NOT NULL,
    role       INTEGER NOT NULL,
    kind       INTEGER NOT NULL,
    bucket     BIGINT NOT NULL,
    address    BLOB NOT NULL,
    PRIMARY KEY (chain_key, role, kind, bucket, address)
) WITHOUT ROWID;
