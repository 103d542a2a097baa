-- evm_token_balance_buckets again (0190), with each holder's changes in the
-- bucket instead of the largest balance held (hi): a page of the Metrics
-- API's token holders over time ending between a holder's first and last
-- change in End's bucket bounded it by hi and sought its history, 100-470
-- seeks a page of 100 on a busy token (20-40 us each on PostgreSQL: half of
-- the page's time); the changes give its balance after End in the row.
-- changes: every change in the bucket in block order, each
-- "<block>:<balance after it>;" (balances as stored: decimal, maybe
-- negative); a batch appends its own. The other columns as in 0190.
-- Dropped and filled again from the history (_rows) rather than altered:
-- every row changes.
DROP TABLE IF EXISTS evm_token_balance_buckets;
CREATE TABLE evm_token_balance_buckets (
    chain_key TEXT NOT NULL,
    token BLOB NOT NULL,
    erc_type TEXT NOT NULL,
    bucket BIGINT NOT NULL,
    holder BLOB NOT NULL,
    first_block BIGINT NOT NULL,
    entering TEXT NOT NULL,
    last_block BIGINT NOT NULL,
    last_balance TEXT NOT NULL,
    changes TEXT NOT NULL,
    PRIMARY KEY (chain_key, token, erc_type, bucket, holder)
) WITHOUT ROWID;
