-- Fills 0199's evm_token_balance_buckets from the balance history (token_id
-- '': ERC-20 balances, ERC-721 counts), as the indexer would have written
-- it: per holder, token and bucket of 4,096 blocks, the first and last
-- change, the balance before the first (the previous row's, '' for none),
-- the balance after the last and every change in block order (string_agg
-- with ORDER BY: PostgreSQL, SQLite 3.44 on). Inserted in key order: on
-- PostgreSQL the heap then holds a token's bucket together (a page reads its
-- rows in two buckets, 3,500 on a busy token).
INSERT INTO evm_token_balance_buckets (chain_key, token, erc_type, bucket, holder, first_block, entering, last_block, last_balance, changes)
SELECT chain_key, token, erc_type, bucket, holder,
    MIN(block_number),
    MAX(CASE WHEN first_rank = 1 THEN prev END),
    MAX(block_number),
    MAX(CASE WHEN last_rank = 1 THEN balance END),
    string_agg(CAST(block_number AS TEXT) || ':' || balance || ';', '' ORDER BY block_number)
FROM (
    SELECT chain_key, token, erc_type, holder, block_number, balance, block_number / 4096 AS bucket,
        LAG(balance, 1, '') OVER (PARTITION BY chain_key, holder, erc_type, token ORDER BY block_number) AS prev,
        ROW_NUMBER() OVER (PARTITION BY chain_key, holder, erc_type, token, block_number / 4096 ORDER BY block_number) AS first_rank,
        ROW_NUMBER() OVER (PARTITION BY chain_key, holder, erc_type, token, block_number / 4096 ORDER BY block_number DESC) AS last_rank
    FROM evm_token_balance_history
    WHERE token_id = ''
) h
GROUP BY chain_key, token, erc_type, bucket, holder
ORDER BY chain_key, token, erc_type, bucket, holder;
