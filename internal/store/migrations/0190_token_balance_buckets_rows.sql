-- Fills 0190's evm_token_balance_buckets from the balance history (token_id
-- '': ERC-20 balances, ERC-721 counts), as the indexer would have written
-- it: per holder, token and bucket of 4,096 blocks, the first and last
-- change, the balance before the first (the previous row's, '' for none)
-- and the largest balance held (the entering one and each after a change,
-- negatives as '0'). Decimals compare zero-padded to 81 characters (a
-- uint256 has 78 digits: FORMAT pads with spaces on both backends, REPLACE
-- makes them zeros) and the padding is trimmed back. Inserted in key order:
-- on PostgreSQL the heap then holds a token's bucket together (a page read
-- reads its rows in two buckets, 3,500 on a busy token).
INSERT INTO evm_token_balance_buckets (chain_key, token, erc_type, bucket, holder, first_block, entering, last_block, last_balance, hi)
SELECT chain_key, token, erc_type, bucket, holder, first_block, entering, last_block, last_balance,
    COALESCE(NULLIF(LTRIM(CASE WHEN hi_after >= hi_before THEN hi_after ELSE hi_before END, '0'), ''), '0')
FROM (
    SELECT chain_key, token, erc_type, bucket, holder,
        MIN(block_number) AS first_block,
        MAX(CASE WHEN first_rank = 1 THEN prev END) AS entering,
        MAX(block_number) AS last_block,
        MAX(CASE WHEN last_rank = 1 THEN balance END) AS last_balance,
        MAX(REPLACE(FORMAT('%81s', CASE WHEN balance LIKE '-%' THEN '0' ELSE balance END), ' ', '0')) AS hi_after,
        MAX(REPLACE(FORMAT('%81s', CASE WHEN prev LIKE '-%' THEN '0' ELSE prev END), ' ', '0')) AS hi_before
    FROM (
        SELECT chain_key, token, erc_type, holder, block_number, balance, block_number / 4096 AS bucket,
            LAG(balance, 1, '') OVER (PARTITION BY chain_key, holder, erc_type, token ORDER BY block_number) AS prev,
            ROW_NUMBER() OVER (PARTITION BY chain_key, holder, erc_type, token, block_number / 4096 ORDER BY block_number) AS first_rank,
            ROW_NUMBER() OVER (PARTITION BY chain_key, holder, erc_type, token, block_number / 4096 ORDER BY block_number DESC) AS last_rank
        FROM evm_token_balance_history
        WHERE token_id = ''
    ) h
    GROUP BY chain_key, token, erc_type, bucket, holder
) s
ORDER BY chain_key, token, erc_type, bucket, holder;
