-- EVM chains (the C-chain and any EVM L1), written by internal/decode/evm.
-- Every table is keyed by chain_key first (C, or an L1's EVM chain id).
-- Hashes and addresses: 0x-lowercase hex TEXT here; migration 0020 stores them as bytes
-- in every table but evm_contracts and evm_nft_tokens. uint256 amounts, gas prices, token ids
-- and balances: decimal TEXT (math/big in Go). Lists are served newest first by
-- keyset pagination on (block_number, tx_index / log_index, batch_index) DESC.
-- Tables written per tx/log/balance change are WITHOUT ROWID on SQLite: the rows
-- live in their primary-key b-tree, one b-tree fewer to update per row.

CREATE TABLE IF NOT EXISTS evm_blocks (
    chain_key          TEXT NOT NULL,
    number             BIGINT NOT NULL,
    hash               TEXT NOT NULL,
    parent_hash        TEXT NOT NULL,
    timestamp          BIGINT NOT NULL,           -- unix seconds
    timestamp_ms       BIGINT NOT NULL DEFAULT 0, -- timestampMilliseconds (coreth/subnet-evm), 0 if absent
    tx_count           INTEGER NOT NULL,
    gas_used           BIGINT NOT NULL,
    gas_limit          BIGINT NOT NULL,
    base_fee           TEXT NOT NULL DEFAULT '',  -- decimal wei, '' before London
    miner              TEXT NOT NULL,
    size_bytes         BIGINT NOT NULL,
    state_root         TEXT NOT NULL,
    extra_data         TEXT NOT NULL,             -- 0x-hex header extraData
    -- coreth / subnet-evm header fields ('' when the chain has none)
    ext_data_hash      TEXT NOT NULL DEFAULT '',
    ext_data_gas_used  TEXT NOT NULL DEFAULT '',  -- decimal
    block_gas_cost     TEXT NOT NULL DEFAULT '',  -- decimal
    min_delay_excess   TEXT NOT NULL DEFAULT '',  -- decimal
    block_extra_data   BLOB,                      -- coreth atomic txs; NULL when empty
    PRIMARY KEY (chain_key, number)
);
CREATE INDEX IF NOT EXISTS evm_blocks_hash ON evm_blocks (chain_key, hash);
CREATE INDEX IF NOT EXISTS evm_blocks_time ON evm_blocks (chain_key, timestamp, number);

CREATE TABLE IF NOT EXISTS evm_txs (
    chain_key          TEXT NOT NULL,
    block_number       BIGINT NOT NULL,
    tx_index           INTEGER NOT NULL,
    hash               TEXT NOT NULL,
    block_hash         TEXT NOT NULL,
    block_time         BIGINT NOT NULL,
    from_addr          TEXT NOT NULL,
    to_addr            TEXT NOT NULL,             -- '' for a contract creation
    value              TEXT NOT NULL,             -- decimal wei
    gas_limit          BIGINT NOT NULL,
    gas_price          TEXT NOT NULL,             -- effective gas price, decimal wei
    max_fee_per_gas    TEXT NOT NULL DEFAULT '',  -- type 2+ only
    max_priority_fee_per_gas TEXT NOT NULL DEFAULT '',
    gas_used           BIGINT NOT NULL,
    nonce              BIGINT NOT NULL,
    tx_type            INTEGER NOT NULL,          -- 0 legacy, 1 access list, 2 dynamic fee, ...
    status             INTEGER NOT NULL,          -- receipt status: 1 success, 0 reverted
    method_id          TEXT NOT NULL,             -- 0x + first 4 input bytes, '' if input < 4 bytes
    input_size         INTEGER NOT NULL,          -- input length in bytes
    contract_address   TEXT NOT NULL DEFAULT '',  -- receipt contractAddress of a creation
    log_count          INTEGER NOT NULL,
    PRIMARY KEY (chain_key, block_number, tx_index)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS evm_txs_hash ON evm_txs (chain_key, hash);

-- transactions:listNative: one row per (address, tx) for the sender, the recipient and
-- the created contract. Newest first: ORDER BY block_number DESC, tx_index DESC.
CREATE TABLE IF NOT EXISTS evm_address_txs (
    chain_key     TEXT NOT NULL,
    address       TEXT NOT NULL,
    block_number  BIGINT NOT NULL,
    tx_index      INTEGER NOT NULL,
    PRIMARY KEY (chain_key, address, block_number, tx_index)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS evm_logs (
    chain_key     TEXT NOT NULL,
    block_number  BIGINT NOT NULL,
    log_index     INTEGER NOT NULL,               -- position in the block
    tx_index      INTEGER NOT NULL,
    tx_hash       TEXT NOT NULL,
    address       TEXT NOT NULL,
    topic_count   INTEGER NOT NULL,
    topic0        TEXT NOT NULL,                  -- '' when absent
    topic1        TEXT NOT NULL,
    topic2        TEXT NOT NULL,
    topic3        TEXT NOT NULL,
    data          BLOB NOT NULL,
    PRIMARY KEY (chain_key, block_number, log_index)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS evm_logs_address ON evm_logs (chain_key, address, block_number, log_index);

-- ERC-20/721/1155 transfers decoded from logs; a TransferBatch gives one row per id
-- (batch_index 0..n-1; 0 for every other transfer).
CREATE TABLE IF NOT EXISTS evm_transfers (
    chain_key     TEXT NOT NULL,
    block_number  BIGINT NOT NULL,
    log_index     INTEGER NOT NULL,
    batch_index   INTEGER NOT NULL,
    tx_index      INTEGER NOT NULL,
    tx_hash       TEXT NOT NULL,
    block_time    BIGINT NOT NULL,
    token         TEXT NOT NULL,                  -- contract address
    erc_type      TEXT NOT NULL,                  -- ERC-20, ERC-721, ERC-1155
    from_addr     TEXT NOT NULL,
    to_addr       TEXT NOT NULL,
    operator      TEXT NOT NULL DEFAULT '',       -- ERC-1155 operator
    token_id      TEXT NOT NULL DEFAULT '',       -- decimal; '' for ERC-20
    value         TEXT NOT NULL,                  -- decimal; 1 for ERC-721
    PRIMARY KEY (chain_key, block_number, log_index, batch_index)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS evm_transfers_token ON evm_transfers (chain_key, token, block_number, log_index, batch_index);
CREATE INDEX IF NOT EXISTS evm_transfers_from ON evm_transfers (chain_key, from_addr, block_number, log_index, batch_index);
CREATE INDEX IF NOT EXISTS evm_transfers_to ON evm_transfers (chain_key, to_addr, block_number, log_index, batch_index);

-- Contracts and tokens: every address created by a top-level creation (creation_kind
-- 'tx', from the receipt's contractAddress) or first seen emitting a log in a tx that
-- did not create it at top level ('observed': created internally by a factory, or
-- existing from genesis / a precompile). For 'observed', tx_hash/block are where it
-- was first seen, deployer_address is that tx's sender, and deployer_contract_address
-- is left for a tracer step. erc_type is guessed from the first transfer log's shape.
-- name/symbol/decimals are filled by metadata enrichment (metadata_status).
CREATE TABLE IF NOT EXISTS evm_contracts (
    chain_key          TEXT NOT NULL,
    address            TEXT NOT NULL,
    creation_kind      TEXT NOT NULL,             -- tx, observed
    tx_hash            TEXT NOT NULL,
    block_number       BIGINT NOT NULL,
    block_time         BIGINT NOT NULL,
    deployer_address   TEXT NOT NULL,
    deployer_contract_address TEXT NOT NULL DEFAULT '',
    erc_type           TEXT NOT NULL DEFAULT '',  -- ERC-20, ERC-721, ERC-1155, '' unknown
    erc_type_block     BIGINT NOT NULL DEFAULT -1,
    name               TEXT,
    symbol             TEXT,
    decimals           INTEGER,
    metadata_status    TEXT NOT NULL DEFAULT 'unknown',
    metadata_updated_at BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (chain_key, address)
);
CREATE INDEX IF NOT EXISTS evm_contracts_erc_type ON evm_contracts (chain_key, erc_type, address);

-- NFT tokens (ERC-721 and ERC-1155 ids) seen in transfers; owner is the current
-- ERC-721 owner ('' for ERC-1155; the zero address once burned).
CREATE TABLE IF NOT EXISTS evm_nft_tokens (
    chain_key       TEXT NOT NULL,
    token           TEXT NOT NULL,
    token_id        TEXT NOT NULL,                -- decimal
    erc_type        TEXT NOT NULL,
    owner           TEXT NOT NULL,
    owner_block     BIGINT NOT NULL,
    first_block     BIGINT NOT NULL,
    token_uri       TEXT,
    metadata        TEXT,
    metadata_status TEXT NOT NULL DEFAULT 'unknown',
    PRIMARY KEY (chain_key, token, token_id)
);
CREATE INDEX IF NOT EXISTS evm_nft_tokens_owner ON evm_nft_tokens (chain_key, owner, token, token_id);

-- ERC-721 owner after each block that moved the token: owner as of block N is
-- ... WHERE block_number <= N ORDER BY block_number DESC LIMIT 1.
CREATE TABLE IF NOT EXISTS evm_nft_owner_history (
    chain_key     TEXT NOT NULL,
    token         TEXT NOT NULL,
    token_id      TEXT NOT NULL,
    block_number  BIGINT NOT NULL,
    owner         TEXT NOT NULL,
    PRIMARY KEY (chain_key, token, token_id, block_number)
) WITHOUT ROWID;

-- Token balances computed from transfers: ERC-20 (token_id ''), ERC-721 per-holder
-- token counts (token_id ''), ERC-1155 per id. The zero address is not tracked.
CREATE TABLE IF NOT EXISTS evm_token_balances (
    chain_key     TEXT NOT NULL,
    holder        TEXT NOT NULL,
    erc_type      TEXT NOT NULL,
    token         TEXT NOT NULL,
    token_id      TEXT NOT NULL,
    balance       TEXT NOT NULL,                  -- decimal (negative only if the token's logs lie)
    block_number  BIGINT NOT NULL,                -- last change
    PRIMARY KEY (chain_key, holder, erc_type, token, token_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS evm_token_balances_token ON evm_token_balances (chain_key, token, erc_type, holder, token_id);

CREATE TABLE IF NOT EXISTS evm_token_balance_history (
    chain_key     TEXT NOT NULL,
    holder        TEXT NOT NULL,
    erc_type      TEXT NOT NULL,
    token         TEXT NOT NULL,
    token_id      TEXT NOT NULL,
    block_number  BIGINT NOT NULL,
    balance       TEXT NOT NULL,                  -- balance after this block
    PRIMARY KEY (chain_key, holder, erc_type, token, token_id, block_number)
) WITHOUT ROWID;

-- Native balances computed from the index: genesis alloc, tx values and fees, the
-- coinbase tip, atomic import/export effects. Internal value transfers (calls with
-- value inside contracts, selfdestruct) need traces and are not included.
CREATE TABLE IF NOT EXISTS evm_native_balances (
    chain_key     TEXT NOT NULL,
    address       TEXT NOT NULL,
    balance       TEXT NOT NULL,                  -- decimal wei
    block_number  BIGINT NOT NULL,                -- last change
    PRIMARY KEY (chain_key, address)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS evm_native_balance_history (
    chain_key     TEXT NOT NULL,
    address       TEXT NOT NULL,
    block_number  BIGINT NOT NULL,
    balance       TEXT NOT NULL,                  -- balance after this block
    PRIMARY KEY (chain_key, address, block_number)
) WITHOUT ROWID;
