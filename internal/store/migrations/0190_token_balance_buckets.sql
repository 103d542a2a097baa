-- A token holder's changes within one bucket of 4,096 blocks (issue #22: the
-- Metrics API's token holders over time, GET
-- /v2/chains/{chainId}/contracts/{address}/balances, sorts holders by their
-- balance after a past block; reading it from each holder's history cost one
-- seek a holder, 2,000 a page on a busy token). One row per (token, bucket,
-- holder) with a change in the bucket, ERC-20 balances and ERC-721 counts
-- (token_id ''): first_block and last_block its first and last change,
-- entering the balance before the first ('' when none), last_balance after
-- the last, hi the largest balance held in the bucket ('0' for a negative
-- one: an upper bound, never read as a balance). Ordered by token first: a page reads a token's
-- holders in two buckets in one range. Kept by the EVM indexer's balance
-- flush (internal/decode/evm/writer.go, one upsert per key and batch);
-- filled by 0190_..._rows from the balance history; reindex rebuilds it.
-- The bucket size is evm.HolderBucketBits (block_number >> 12).
CREATE TABLE IF NOT EXISTS evm_token_balance_buckets (
    chain_key TEXT NOT NULL,
    token BLOB NOT NULL,
    erc_type TEXT NOT NULL,
    bucket BIGINT NOT NULL,
    holder BLOB NOT NULL,
    first_block BIGINT NOT NULL,
    entering TEXT NOT NULL,
    last_block BIGINT NOT NULL,
    last_balance TEXT NOT NULL,
    hi TEXT NOT NULL,
    PRIMARY KEY (chain_key, token, erc_type, bucket, holder)
) WITHOUT ROWID;
