-- The unspent-only orders of utxo_addresses hold only unspent rows (issue
-- #22, docs/benchmarks.md "Five million rows"). utxo_addresses with its
-- eleven indexes was 1.5 KB of every UTXO, and the indexes below were full
-- orders of every row although their readers only walk unspent ones:
--   utxo_addresses_time, _amount, _x_asset_time, _x_asset_amount: the UTXO
--     listings without includeSpent (internal/api/data/primary utxos.go),
--     which say "ua.spent = FALSE" as a literal: a partial index is used
--     only when the query itself implies its WHERE (a parameter does not);
--   utxo_addresses_balance: the balances' UTXOs that are not summed in
--     utxo_plain_balances (balances.go: unspent and not plain), now only
--     those, with the utxo_id the query reads instead of the asset and
--     amount that 0042's sums read (0110 replaced them).
-- The columns stay as they were (spent, plain: one header byte each), so
-- each index keeps its equality prefix and the planners keep preferring it.
-- A spend (Writer.SpendUTXO) now takes the row out of these indexes.
DROP INDEX IF EXISTS utxo_addresses_time;
DROP INDEX IF EXISTS utxo_addresses_amount;
DROP INDEX IF EXISTS utxo_addresses_x_asset_time;
DROP INDEX IF EXISTS utxo_addresses_x_asset_amount;
DROP INDEX IF EXISTS utxo_addresses_balance;
CREATE INDEX IF NOT EXISTS utxo_addresses_time ON utxo_addresses (address, chain_key, spent, created_time, utxo_id) WHERE spent = FALSE;
CREATE INDEX IF NOT EXISTS utxo_addresses_amount ON utxo_addresses (address, chain_key, spent, amount, utxo_id) WHERE spent = FALSE;
CREATE INDEX IF NOT EXISTS utxo_addresses_x_asset_time ON utxo_addresses (address, asset_id, spent, created_time, utxo_id) WHERE chain_key = 'X' AND spent = FALSE;
CREATE INDEX IF NOT EXISTS utxo_addresses_x_asset_amount ON utxo_addresses (address, asset_id, spent, amount, utxo_id) WHERE chain_key = 'X' AND spent = FALSE;
CREATE INDEX IF NOT EXISTS utxo_addresses_balance ON utxo_addresses (address, chain_key, spent, plain, utxo_id) WHERE spent = FALSE AND plain = FALSE;
