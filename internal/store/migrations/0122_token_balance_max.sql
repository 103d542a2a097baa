-- The largest balance each holder ever had of a token (issue #21: the Metrics
-- API's GET /v2/chains/{chainId}/contracts/{address}/balances, holders whose
-- balance reached a threshold). A decimal like balance; '' when the holder
-- never had a non-negative balance. Kept by the EVM indexer's balance write
-- (internal/decode/evm/writer.go, once per key and batch, the same upsert as
-- the balance: no other statement, no index). Filled here from the balance
-- history for an index made before it; reindex rebuilds it with the rows.
ALTER TABLE evm_token_balances ADD COLUMN max_balance TEXT NOT NULL DEFAULT '';
UPDATE evm_token_balances SET max_balance = COALESCE((SELECT h.balance FROM evm_token_balance_history h
    WHERE h.chain_key = evm_token_balances.chain_key AND h.holder = evm_token_balances.holder
    AND h.erc_type = evm_token_balances.erc_type AND h.token = evm_token_balances.token
    AND h.token_id = evm_token_balances.token_id AND h.balance NOT LIKE '-%'
    ORDER BY LENGTH(h.balance) DESC, h.balance DESC LIMIT 1), '');
