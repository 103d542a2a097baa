-- Enrichment (internal/enrich): token metadata, NFT metadata, factory deployers,
-- reputation and historical prices. Background work beside ingestion, never in an
-- ingest transaction. It fills the columns 0005_evm.sql leaves for it
-- (evm_contracts name/symbol/decimals/metadata_status/deployer_contract_address,
-- evm_nft_tokens token_uri/metadata/metadata_status) with single-row statements,
-- and keeps its own durable state in the enrich_* tables below: those are not
-- derived tables, so after `permafrost reindex` (which clears the evm_* tables)
-- the results are copied back without asking nodes or metadata hosts again.

-- When an NFT's metadata status was last written (metadataLastUpdatedTimestamp).
ALTER TABLE evm_nft_tokens ADD COLUMN metadata_updated_at BIGINT NOT NULL DEFAULT 0;

-- Work still to do, as small partial indexes: contracts and NFTs whose metadata
-- enrichment has not started ('unknown' is the indexer's column default), and
-- contracts first seen inside another contract's execution without a deployer.
CREATE INDEX IF NOT EXISTS evm_contracts_unenriched ON evm_contracts (chain_key, address) WHERE metadata_status = 'unknown';
CREATE INDEX IF NOT EXISTS evm_nft_tokens_unenriched ON evm_nft_tokens (chain_key, token, token_id) WHERE metadata_status = 'unknown';
CREATE INDEX IF NOT EXISTS evm_contracts_untraced ON evm_contracts (chain_key, block_number, address) WHERE creation_kind = 'observed' AND deployer_contract_address = '';

-- Token metadata read by eth_call (the cache of evm_contracts' enrichment columns).
-- state: resolved (read; fields may still be NULL when the contract lacks the
-- method or answered garbage), retry (the node failed; next_attempt), failed
-- (the node kept failing).
CREATE TABLE IF NOT EXISTS enrich_token_meta (
    chain_key     TEXT NOT NULL,
    address       TEXT NOT NULL,
    state         TEXT NOT NULL,
    erc_type      TEXT NOT NULL DEFAULT '',     -- detected: ERC-20, ERC-721, ERC-1155, '' unknown
    name          TEXT,
    symbol        TEXT,
    decimals      INTEGER,
    block_number  BIGINT NOT NULL DEFAULT 0,    -- block the calls were made at
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_attempt  BIGINT NOT NULL DEFAULT 0,    -- unix ms
    last_error    TEXT NOT NULL DEFAULT '',
    updated_at    BIGINT NOT NULL,              -- unix s
    PRIMARY KEY (chain_key, address)
);

-- Deployers of contracts created inside another contract, from
-- debug_traceBlockByNumber's callTracer. state: found, absent (no CREATE of it in
-- the block it was first seen in), retry, failed.
CREATE TABLE IF NOT EXISTS enrich_contract_trace (
    chain_key     TEXT NOT NULL,
    address       TEXT NOT NULL,
    state         TEXT NOT NULL,
    tx_hash       TEXT NOT NULL DEFAULT '',
    deployer_address TEXT NOT NULL DEFAULT '',
    deployer_contract_address TEXT NOT NULL DEFAULT '',
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_attempt  BIGINT NOT NULL DEFAULT 0,    -- unix ms
    last_error    TEXT NOT NULL DEFAULT '',
    updated_at    BIGINT NOT NULL,              -- unix s
    PRIMARY KEY (chain_key, address)
);

-- NFT metadata fetch jobs, one per token. state: pending (due at next_attempt),
-- done. status is the last outcome (the published NftTokenMetadataStatus), ''
-- before the first; attempts counts the consecutive attempts that ended in it
-- (retries are capped per status). A worker owns a job while lease_until is in
-- the future and writes its outcome fenced by lease_token.
CREATE TABLE IF NOT EXISTS enrich_nft_jobs (
    chain_key      TEXT NOT NULL,
    token          TEXT NOT NULL,
    token_id       TEXT NOT NULL,
    erc_type       TEXT NOT NULL,
    state          TEXT NOT NULL,
    status         TEXT NOT NULL DEFAULT '',
    attempts       INTEGER NOT NULL DEFAULT 0,
    total_attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt   BIGINT NOT NULL,             -- unix ms
    lease_until    BIGINT NOT NULL DEFAULT 0,   -- unix ms
    lease_token    TEXT NOT NULL DEFAULT '',
    token_uri      TEXT,
    metadata       TEXT,                        -- normalised metadata JSON (INDEXED only)
    updated_at     BIGINT NOT NULL DEFAULT 0,   -- unix s of status
    last_error     TEXT NOT NULL DEFAULT '',
    reindex_at     BIGINT NOT NULL DEFAULT 0,   -- unix ms of the last accepted :reindex
    PRIMARY KEY (chain_key, token, token_id)
);
CREATE INDEX IF NOT EXISTS enrich_nft_jobs_due ON enrich_nft_jobs (next_attempt) WHERE state = 'pending';

-- tokenReputation per token: from the operator's registry (source operator,
-- wins) or the documented heuristics (source heuristic). No row: null.
CREATE TABLE IF NOT EXISTS enrich_token_reputation (
    chain_key     TEXT NOT NULL,
    address       TEXT NOT NULL,
    reputation    TEXT NOT NULL,                -- Malicious, Benign
    source        TEXT NOT NULL,                -- operator, heuristic
    reason        TEXT NOT NULL DEFAULT '',
    updated_at    BIGINT NOT NULL,
    PRIMARY KEY (chain_key, address)
);

-- Daily prices from the price provider (they do not change once the day is over).
CREATE TABLE IF NOT EXISTS enrich_price_history (
    provider      TEXT NOT NULL,
    asset_chain   TEXT NOT NULL,                -- EVM chain id, or primary
    asset_token   TEXT NOT NULL,                -- '' native
    currency      TEXT NOT NULL,
    day           TEXT NOT NULL,                -- YYYY-MM-DD (UTC)
    value         TEXT NOT NULL,                -- decimal
    fetched_at    BIGINT NOT NULL,
    PRIMARY KEY (provider, asset_chain, asset_token, currency, day)
);
