-- px_tx_addresses and px_tx_assets are all key: every column is in the
-- primary key, so on SQLite each row was stored twice, in the rowid table
-- and in its key's automatic index (issue #22, docs/benchmarks.md "Five
-- million rows": 0.45 KB of every P/X tx). WITHOUT ROWID keeps one B-tree,
-- in the key's order, which is the order every reader walks. The same
-- columns, key and rows; PostgreSQL (a heap and its key's index) is left as
-- it is. SQLite cannot change a table to WITHOUT ROWID: each is copied.
CREATE TABLE px_tx_assets_new (
    asset_id   TEXT NOT NULL,
    chain_key  TEXT NOT NULL,
    timestamp  BIGINT NOT NULL,
    tx_id      TEXT NOT NULL,
    PRIMARY KEY (asset_id, chain_key, timestamp, tx_id)
) WITHOUT ROWID;
INSERT INTO px_tx_assets_new SELECT asset_id, chain_key, timestamp, tx_id FROM px_tx_assets ORDER BY asset_id, chain_key, timestamp, tx_id;
DROP TABLE px_tx_assets;
ALTER TABLE px_tx_assets_new RENAME TO px_tx_assets;
CREATE TABLE px_tx_addresses_new (
    address    TEXT NOT NULL,
    chain_key  TEXT NOT NULL,
    timestamp  BIGINT NOT NULL,
    tx_id      TEXT NOT NULL,
    PRIMARY KEY (address, chain_key, timestamp, tx_id)
) WITHOUT ROWID;
INSERT INTO px_tx_addresses_new SELECT address, chain_key, timestamp, tx_id FROM px_tx_addresses ORDER BY address, chain_key, timestamp, tx_id;
DROP TABLE px_tx_addresses;
ALTER TABLE px_tx_addresses_new RENAME TO px_tx_addresses;
