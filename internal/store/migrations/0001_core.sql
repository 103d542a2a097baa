-- Chains this index follows, and how far each one is indexed.
CREATE TABLE IF NOT EXISTS chains (
    chain_key      TEXT PRIMARY KEY,          -- P, X, C, or the EVM chain id of an L1
    kind           TEXT NOT NULL,             -- P, X, EVM
    blockchain_id  TEXT NOT NULL,             -- cb58
    evm_chain_id   TEXT,                      -- decimal, EVM chains only
    network_id     BIGINT NOT NULL,
    name           TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX IF NOT EXISTS chains_blockchain_id ON chains (blockchain_id);

CREATE TABLE IF NOT EXISTS checkpoints (
    chain_key   TEXT PRIMARY KEY,
    height      BIGINT NOT NULL,              -- last indexed height
    block_hash  TEXT NOT NULL,
    block_time  BIGINT NOT NULL,              -- unix seconds of that block
    node_height BIGINT NOT NULL DEFAULT 0,    -- tip the node last reported
    rate        DOUBLE PRECISION NOT NULL DEFAULT 0, -- recent blocks/s
    updated_at  BIGINT NOT NULL
);

-- Raw blocks, apart from the derived tables, so `reindex` rebuilds without refetching.
CREATE TABLE IF NOT EXISTS raw_blocks (
    chain_key  TEXT NOT NULL,
    height     BIGINT NOT NULL,
    hash       TEXT NOT NULL,
    block_time BIGINT NOT NULL,
    body       BLOB NOT NULL,
    PRIMARY KEY (chain_key, height)
);

-- Small shared settings (e.g. the page-token signing secret, so every replica agrees).
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Server-side page tokens (metrics service): valid 24 hours, shared by replicas.
CREATE TABLE IF NOT EXISTS page_tokens (
    token      TEXT PRIMARY KEY,              -- UUID
    route      TEXT NOT NULL,
    payload    TEXT NOT NULL,                 -- JSON cursor
    created_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS page_tokens_created ON page_tokens (created_at);
