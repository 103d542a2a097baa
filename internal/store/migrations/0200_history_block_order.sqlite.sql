-- SQLite: the five address-keyed history tables clustered by block, their
-- address order a covering index that a bulk catch-up defers (deferrable.txt,
-- docs/benchmarks.md "Eighteenth session"). Keyed by address, each row of a
-- block landed on a random leaf of a table bigger than the writer's page
-- cache: 40% of the writer's time at 250,000 blocks. Keyed by block, a
-- block's rows append to the table's last leaves. The key's columns are the
-- same (the same rows are unique); only their order changes. PostgreSQL keeps
-- its heap tables and their primary keys, whose index already plays the
-- covering index's part.
CREATE TABLE evm_address_txs_by_block (
    chain_key     TEXT NOT NULL,
    address       TEXT NOT NULL,
    block_number  BIGINT NOT NULL,
    tx_index      INTEGER NOT NULL,
    PRIMARY KEY (chain_key, block_number, tx_index, address)
) WITHOUT ROWID;
INSERT INTO evm_address_txs_by_block (chain_key, address, block_number, tx_index)
    SELECT chain_key, address, block_number, tx_index FROM evm_address_txs;
DROP TABLE evm_address_txs;
ALTER TABLE evm_address_txs_by_block RENAME TO evm_address_txs;
CREATE INDEX IF NOT EXISTS evm_address_txs_address ON evm_address_txs (chain_key, address, block_number, tx_index);

CREATE TABLE evm_address_internals_by_block (
    chain_key    TEXT NOT NULL,
    address      BLOB NOT NULL,
    block_number BIGINT NOT NULL,
    tx_index     INTEGER NOT NULL,
    trace_index  INTEGER NOT NULL,
    PRIMARY KEY (chain_key, block_number, tx_index, trace_index, address)
) WITHOUT ROWID;
INSERT INTO evm_address_internals_by_block (chain_key, address, block_number, tx_index, trace_index)
    SELECT chain_key, address, block_number, tx_index, trace_index FROM evm_address_internals;
DROP TABLE evm_address_internals;
ALTER TABLE evm_address_internals_by_block RENAME TO evm_address_internals;
CREATE INDEX IF NOT EXISTS evm_address_internals_address ON evm_address_internals (chain_key, address, block_number, tx_index, trace_index);

-- The history indexes carry the value after the key: the balance (or owner)
-- as of a block is read from the index alone.
CREATE TABLE evm_native_balance_history_by_block (
    chain_key     TEXT NOT NULL,
    address       TEXT NOT NULL,
    block_number  BIGINT NOT NULL,
    balance       TEXT NOT NULL,                  -- balance after this block
    PRIMARY KEY (chain_key, block_number, address)
) WITHOUT ROWID;
INSERT INTO evm_native_balance_history_by_block (chain_key, address, block_number, balance)
    SELECT chain_key, address, block_number, balance FROM evm_native_balance_history;
DROP TABLE evm_native_balance_history;
ALTER TABLE evm_native_balance_history_by_block RENAME TO evm_native_balance_history;
CREATE INDEX IF NOT EXISTS evm_native_balance_history_address ON evm_native_balance_history (chain_key, address, block_number, balance);

CREATE TABLE evm_token_balance_history_by_block (
    chain_key     TEXT NOT NULL,
    holder        TEXT NOT NULL,
    erc_type      TEXT NOT NULL,
    token         TEXT NOT NULL,
    token_id      TEXT NOT NULL,
    block_number  BIGINT NOT NULL,
    balance       TEXT NOT NULL,                  -- balance after this block
    PRIMARY KEY (chain_key, block_number, holder, erc_type, token, token_id)
) WITHOUT ROWID;
INSERT INTO evm_token_balance_history_by_block (chain_key, holder, erc_type, token, token_id, block_number, balance)
    SELECT chain_key, holder, erc_type, token, token_id, block_number, balance FROM evm_token_balance_history;
DROP TABLE evm_token_balance_history;
ALTER TABLE evm_token_balance_history_by_block RENAME TO evm_token_balance_history;
CREATE INDEX IF NOT EXISTS evm_token_balance_history_holder ON evm_token_balance_history (chain_key, holder, erc_type, token, token_id, block_number, balance);

CREATE TABLE evm_nft_owner_history_by_block (
    chain_key     TEXT NOT NULL,
    token         TEXT NOT NULL,
    token_id      TEXT NOT NULL,
    block_number  BIGINT NOT NULL,
    owner         TEXT NOT NULL,
    PRIMARY KEY (chain_key, block_number, token, token_id)
) WITHOUT ROWID;
INSERT INTO evm_nft_owner_history_by_block (chain_key, token, token_id, block_number, owner)
    SELECT chain_key, token, token_id, block_number, owner FROM evm_nft_owner_history;
DROP TABLE evm_nft_owner_history;
ALTER TABLE evm_nft_owner_history_by_block RENAME TO evm_nft_owner_history;
CREATE INDEX IF NOT EXISTS evm_nft_owner_history_token ON evm_nft_owner_history (chain_key, token, token_id, block_number, owner);
-- Dropped with the table (0007_evm_api.sql).
CREATE INDEX IF NOT EXISTS evm_nft_owner_history_owner ON evm_nft_owner_history (chain_key, owner, token, token_id, block_number);
