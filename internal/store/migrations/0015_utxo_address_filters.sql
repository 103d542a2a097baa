-- UTXO facts the data API filters on, copied into utxo_addresses so that a
-- filtered page of one address is an ordered walk of one index instead of a
-- join to utxos row by row (internal/api/data/primary; docs/benchmarks.md
-- "Data service latency"). Written by internal/decode/primary.Writer.PutUTXO.
--   asset_id     utxos.asset_id: the X-chain assetId filter
--   reward_type  utxos.reward_type ('' unless a reward UTXO): rewards by address
ALTER TABLE utxo_addresses ADD COLUMN asset_id TEXT NOT NULL DEFAULT '';
ALTER TABLE utxo_addresses ADD COLUMN reward_type TEXT NOT NULL DEFAULT '';

-- Rows indexed before this migration. A join, not a subquery per row: one
-- pass over both tables on PostgreSQL. Every utxo_addresses row has its utxos
-- row (PutUTXO writes both); one without would keep ''.
-- PostgreSQL writes a new version of every row, and each into every index
-- of the table: the secondary indexes (0002, 0006, 0014) are dropped first
-- and rebuilt after, which is faster (1.1M rows: 2.6 min -> ~1 min). SQLite
-- updates the rows in place and touches no index without a changed column.
DROP INDEX IF EXISTS utxo_addresses_time;
DROP INDEX IF EXISTS utxo_addresses_amount;
DROP INDEX IF EXISTS utxo_addresses_any_time;
DROP INDEX IF EXISTS utxo_addresses_any_amount;
DROP INDEX IF EXISTS utxo_addresses_utxo;
UPDATE utxo_addresses SET asset_id = u.asset_id, reward_type = u.reward_type
    FROM utxos u WHERE u.utxo_id = utxo_addresses.utxo_id;
CREATE INDEX IF NOT EXISTS utxo_addresses_time ON utxo_addresses (address, chain_key, spent, created_time, utxo_id);
CREATE INDEX IF NOT EXISTS utxo_addresses_amount ON utxo_addresses (address, chain_key, spent, amount, utxo_id);
CREATE INDEX IF NOT EXISTS utxo_addresses_any_time ON utxo_addresses (address, chain_key, created_time, utxo_id);
CREATE INDEX IF NOT EXISTS utxo_addresses_any_amount ON utxo_addresses (address, chain_key, amount, utxo_id);
CREATE INDEX IF NOT EXISTS utxo_addresses_utxo ON utxo_addresses (utxo_id);

-- UTXOs of an address in one X-chain asset, in the orders of 0002 (unspent)
-- and 0006 (includeSpent). Partial: only the X-chain has several assets, so
-- P and C-atomic rows cost nothing more to write. Queries must say
-- chain_key = 'X' as a literal for the planners to use them.
CREATE INDEX IF NOT EXISTS utxo_addresses_x_asset_time ON utxo_addresses (address, asset_id, spent, created_time, utxo_id) WHERE chain_key = 'X';
CREATE INDEX IF NOT EXISTS utxo_addresses_x_asset_amount ON utxo_addresses (address, asset_id, spent, amount, utxo_id) WHERE chain_key = 'X';
CREATE INDEX IF NOT EXISTS utxo_addresses_x_asset_any_time ON utxo_addresses (address, asset_id, created_time, utxo_id) WHERE chain_key = 'X';
CREATE INDEX IF NOT EXISTS utxo_addresses_x_asset_any_amount ON utxo_addresses (address, asset_id, amount, utxo_id) WHERE chain_key = 'X';

-- Reward UTXOs of an address, by reward time (historical rewards by address):
-- a few rows per address, however many other UTXOs it has.
CREATE INDEX IF NOT EXISTS utxo_addresses_rewards ON utxo_addresses (address, chain_key, created_time, utxo_id) WHERE reward_type <> '';

-- 0014's index for the former rewards-by-address join (utxo_addresses into
-- reward UTXOs by id), which utxo_addresses_rewards replaces.
DROP INDEX IF EXISTS utxos_rewards_id;
