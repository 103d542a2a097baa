-- Fills 0190's evm_token_balance_buckets from the balance history (token_id
-- '': ERC-20 balances, ERC-721 counts), as the indexer would have written
-- it: per holder, token and bucket of 4,096 blocks, the first and last
-- change, the balance before the first (the previous row's, '' for none)
-- and the largest balance held (the entering one and each after a change,
-- negatives as '0'). Decimals compare zero-padded to 81 characters (a
-- uint256 has 78 digits) and the padding is trimmed back. Inserted in key
-- order: on PostgreSQL the heap then holds a token's bucket together (a
-- page read reads its rows in two buckets, 3,500 on a busy token).
-- PostgreSQL: a span is updated in place by each batch that changes its key
-- in its bucket, no index holding the updated columns; room left in each page
-- keeps those updates on the page (HOT), as for the current balances (0155).
ALTER TABLE evm_token_balance_buckets SET (fillfactor = 70);
INSERT INTO evm_token_balance_buckets (chain_key, token, erc_type, bucket, holder, first_block, entering, last_block, last_balance, hi)
SELECT chain_key, token, erc_type, bucket, holder,
    MIN(block_number),
    MAX(CASE WHEN first_rank = 1 THEN prev END),
    MAX(block_number),
    MAX(CASE WHEN last_rank = 1 THEN balance END),
    COALESCE(NULLIF(LTRIM(MAX(GREATEST(lpad(CASE WHEN balance LIKE '-%' THEN '0' ELSE balance END, 81, '0'), lpad(CASE WHEN prev LIKE '-%' THEN '0' ELSE prev END, 81, '0'))), '0'), ''), '0')
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
