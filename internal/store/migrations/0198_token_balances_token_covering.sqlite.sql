-- SQLite: the token index of the current balances covers what the Metrics
-- API's token holders over time read of each holder (issue #22: GET
-- /v2/chains/{chainId}/contracts/{address}/balances reads a token's every
-- holder whose largest balance reached the threshold, 2,000 a page on a busy
-- token): through the index alone, where each entry was a descent of the
-- table's holder-first primary key. A balance change now rewrites the entry
-- too; a bulk catch-up defers the index (deferrable.txt) and builds it once.
-- PostgreSQL keeps the narrower index: columns it includes would make every
-- balance update a non-HOT one (migration 0155), and its index-only scans
-- need all-visible pages, which a busy token's are not.
-- An index deferred when this runs is built here; its deferred definition
-- (the old one) is forgotten.
DROP INDEX IF EXISTS evm_token_balances_token;
CREATE INDEX IF NOT EXISTS evm_token_balances_token ON evm_token_balances (chain_key, token, erc_type, holder, token_id, block_number, balance, max_balance);
DELETE FROM deferred_indexes WHERE name = 'evm_token_balances_token';
