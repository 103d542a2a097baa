-- Metrics service rollups, maintained incrementally by internal/metrics
-- (metrics.WithRollup wraps every chain's indexer) in the block's own
-- transaction, so the metrics never disagree with the indexed blocks and are
-- rebuilt by `reindex` like every other derived table.

-- One row per indexed chain: the span of its blocks and when its rollups were
-- last written. avg_tps reads the series bounds and lastRun from here.
CREATE TABLE IF NOT EXISTS metrics_chains (
    chain_key   TEXT PRIMARY KEY,
    first_time  BIGINT NOT NULL,              -- unix seconds of the oldest indexed block
    tip_time    BIGINT NOT NULL,              -- unix seconds of the newest indexed block
    tip_height  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL               -- unix seconds (wall clock) of the last rollup write
) WITHOUT ROWID;

-- Transactions per UTC hour and per UTC day (bucket = interval start, unix
-- seconds). Only intervals holding at least one block have a row; the API
-- answers 0 for the others. Week and month answers sum the daily rows.
CREATE TABLE IF NOT EXISTS metrics_tx_hourly (
    chain_key  TEXT NOT NULL,
    bucket     BIGINT NOT NULL,
    tx_count   BIGINT NOT NULL,
    PRIMARY KEY (chain_key, bucket)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS metrics_tx_daily (
    chain_key  TEXT NOT NULL,
    bucket     BIGINT NOT NULL,
    tx_count   BIGINT NOT NULL,
    PRIMARY KEY (chain_key, bucket)
) WITHOUT ROWID;

-- Current NFT holders (ERC-721 and ERC-1155 contracts of EVM chains): one row
-- per (contract, holder) with a positive balance, recomputed from
-- evm_token_balances for every pair a block's transfers touch. units_key is
-- the number of tokens held (ERC-1155: units summed over ids) as an
-- order-preserving text: two decimal digits giving the number of digits, then
-- the digits ("011" = 1, "03250" = 250), so text order is numeric order for
-- any uint256 sum. The rank index serves nfts:listHolders (sortKey
-- descending, then address) as an index range scan, covering the columns read.
CREATE TABLE IF NOT EXISTS metrics_nft_holders (
    chain_key  TEXT NOT NULL,
    token      TEXT NOT NULL,                 -- contract, 0x-lowercase
    holder     TEXT NOT NULL,                 -- 0x-lowercase
    units_key  TEXT NOT NULL,
    PRIMARY KEY (chain_key, token, holder)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS metrics_nft_holders_rank ON metrics_nft_holders (chain_key, token, units_key DESC, holder);

-- Per-contract totals of metrics_nft_holders, kept beside it so totalHolders
-- and totalTokens never count a million rows per request.
CREATE TABLE IF NOT EXISTS metrics_nft_collections (
    chain_key  TEXT NOT NULL,
    token      TEXT NOT NULL,
    holders    BIGINT NOT NULL,               -- rows in metrics_nft_holders
    units      TEXT NOT NULL,                 -- decimal sum of their units
    PRIMARY KEY (chain_key, token)
) WITHOUT ROWID;
