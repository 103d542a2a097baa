-- Primary network (P and X chains, plus the C-chain's atomic side) shared tables.
-- Written by internal/decode/pchain, internal/decode/xchain and the C-chain atomic indexer.

CREATE TABLE IF NOT EXISTS px_blocks (
    chain_key        TEXT NOT NULL,           -- P or X
    height           BIGINT NOT NULL,
    block_id         TEXT NOT NULL,           -- cb58
    parent_id        TEXT NOT NULL,
    timestamp        BIGINT NOT NULL,         -- unix seconds (P: block time or parent's for options; X: block time)
    block_type       TEXT NOT NULL,           -- Go type name, e.g. BanffStandardBlock, StandardBlock
    tx_count         INTEGER NOT NULL,
    tx_ids           TEXT NOT NULL,           -- JSON array of tx ids in block order
    size_bytes       INTEGER NOT NULL,
    -- Filled when the node exposes proposervm data; empty otherwise.
    proposer_id          TEXT NOT NULL DEFAULT '',
    proposer_parent_id   TEXT NOT NULL DEFAULT '',
    proposer_node_id     TEXT NOT NULL DEFAULT '',
    proposer_p_height    BIGINT NOT NULL DEFAULT 0,
    proposer_timestamp   BIGINT NOT NULL DEFAULT 0,
    -- P-chain only: state after this block.
    current_supply           TEXT NOT NULL DEFAULT '',
    l1_validators_accrued_fees BIGINT NOT NULL DEFAULT 0,
    active_l1_validators       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (chain_key, height)
);
CREATE UNIQUE INDEX IF NOT EXISTS px_blocks_id ON px_blocks (block_id);
CREATE INDEX IF NOT EXISTS px_blocks_time ON px_blocks (chain_key, timestamp, height);

CREATE TABLE IF NOT EXISTS px_txs (
    tx_id            TEXT PRIMARY KEY,        -- cb58
    chain_key        TEXT NOT NULL,           -- P, X, or C (atomic txs of the C-chain)
    height           BIGINT NOT NULL,         -- block height on chain_key (-1 for genesis-only txs)
    tx_index         INTEGER NOT NULL,        -- position in the block
    block_id         TEXT NOT NULL,
    timestamp        BIGINT NOT NULL,
    tx_type          TEXT NOT NULL,           -- PrimaryNetworkTxType, UNKNOWN for undecodable
    memo             TEXT NOT NULL DEFAULT '',-- 0x-hex
    source_chain     TEXT NOT NULL DEFAULT '',-- blockchain id (imports)
    destination_chain TEXT NOT NULL DEFAULT '',-- blockchain id (exports)
    credentials      TEXT NOT NULL DEFAULT '[]', -- JSON: per input index, [{signature, publicKey}] base64
    tx_bytes         BLOB NOT NULL,           -- signed tx bytes
    -- RewardValidatorTx: the staker tx and whether its option block committed.
    reward_staker_tx TEXT NOT NULL DEFAULT '',
    rewarded         BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX IF NOT EXISTS px_txs_chain_time ON px_txs (chain_key, timestamp, tx_id);
CREATE INDEX IF NOT EXISTS px_txs_chain_height ON px_txs (chain_key, height, tx_index);

-- Which assets a tx touches (inputs, outputs, created, minted): the asset transaction list.
CREATE TABLE IF NOT EXISTS px_tx_assets (
    asset_id   TEXT NOT NULL,
    chain_key  TEXT NOT NULL,
    timestamp  BIGINT NOT NULL,
    tx_id      TEXT NOT NULL,
    PRIMARY KEY (asset_id, chain_key, timestamp, tx_id)
);

-- Which addresses a tx touches (inputs' owners, outputs' owners, staking owners).
CREATE TABLE IF NOT EXISTS px_tx_addresses (
    address    TEXT NOT NULL,                 -- bech32 without chain prefix, e.g. custom1...
    chain_key  TEXT NOT NULL,
    timestamp  BIGINT NOT NULL,
    tx_id      TEXT NOT NULL,
    PRIMARY KEY (address, chain_key, timestamp, tx_id)
);

-- Every output ever created on P, X or (atomically) for C, with its spend.
CREATE TABLE IF NOT EXISTS utxos (
    utxo_id          TEXT PRIMARY KEY,        -- cb58 of the UTXO ID (tx id + output index)
    tx_id            TEXT NOT NULL,           -- creating tx (for rewards: the staker tx, as the node does)
    output_index     INTEGER NOT NULL,
    created_chain    TEXT NOT NULL,           -- chain key where the creating tx was accepted
    chain_key        TEXT NOT NULL,           -- chain key where it is spendable (destination of an export)
    asset_id         TEXT NOT NULL,
    amount           TEXT NOT NULL,           -- decimal, left-padded with zeros to 20 digits (text order = numeric order)
    fx_type          TEXT NOT NULL,           -- secp256k1fx.TransferOutput, stakeable.LockOut, nftfx.MintOutput, ...
    utxo_type        TEXT NOT NULL,           -- TRANSFER, STAKE (P); transfer, mint, nft ... (X)
    addresses        TEXT NOT NULL,           -- JSON array of bech32 addresses without chain prefix, sorted
    threshold        INTEGER NOT NULL,
    locktime         BIGINT NOT NULL,         -- secp256k1fx locktime (platformLocktime)
    stakeable_locktime BIGINT NOT NULL DEFAULT 0,
    group_id         INTEGER NOT NULL DEFAULT 0,
    payload          TEXT NOT NULL DEFAULT '',-- 0x-hex NFT payload
    staked           BOOLEAN NOT NULL DEFAULT FALSE,
    stake_start      BIGINT NOT NULL DEFAULT 0,
    stake_end        BIGINT NOT NULL DEFAULT 0,
    reward_type      TEXT NOT NULL DEFAULT '',-- VALIDATOR, DELEGATOR, VALIDATOR_FEE for reward UTXOs
    utxo_bytes       BLOB NOT NULL,           -- codec bytes of avax.UTXO
    created_height   BIGINT NOT NULL,
    created_time     BIGINT NOT NULL,
    consumed_tx      TEXT NOT NULL DEFAULT '',
    consumed_chain   TEXT NOT NULL DEFAULT '',
    consumed_height  BIGINT NOT NULL DEFAULT -1,
    consumed_time    BIGINT NOT NULL DEFAULT 0,
    consumed_input_index INTEGER NOT NULL DEFAULT -1 -- index of the input in consumed_tx (credentials)
);
CREATE INDEX IF NOT EXISTS utxos_tx ON utxos (tx_id, output_index);
CREATE INDEX IF NOT EXISTS utxos_consumed_tx ON utxos (consumed_tx);

CREATE TABLE IF NOT EXISTS utxo_addresses (
    address    TEXT NOT NULL,                 -- bech32 without chain prefix
    chain_key  TEXT NOT NULL,                 -- chain where spendable
    spent      BOOLEAN NOT NULL,
    created_time BIGINT NOT NULL,
    amount     TEXT NOT NULL,                 -- same padded form as utxos.amount
    utxo_id    TEXT NOT NULL,
    PRIMARY KEY (address, chain_key, utxo_id)
);
CREATE INDEX IF NOT EXISTS utxo_addresses_time ON utxo_addresses (address, chain_key, spent, created_time, utxo_id);
CREATE INDEX IF NOT EXISTS utxo_addresses_amount ON utxo_addresses (address, chain_key, spent, amount, utxo_id);

CREATE TABLE IF NOT EXISTS assets (
    asset_id      TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    symbol        TEXT NOT NULL,
    denomination  INTEGER NOT NULL,
    asset_type    TEXT NOT NULL,              -- secp256k1 (fungible) or nft
    cap           TEXT NOT NULL,              -- fixed or variable
    created_tx    TEXT NOT NULL,
    created_time  BIGINT NOT NULL
);
