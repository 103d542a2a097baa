-- Webhooks (internal/webhooks, served by internal/api/webhooks). A webhook
-- belongs to the API key that created it (owner); only that key reads or
-- changes it. DELETE deactivates: rows are never removed, so the ids of
-- delivered events stay meaningful.
CREATE TABLE IF NOT EXISTS webhooks (
    id                   TEXT PRIMARY KEY,            -- UUID
    owner                TEXT NOT NULL,               -- API key id
    event_type           TEXT NOT NULL,               -- address_activity, primary_network_address_activity, validator_activity
    url                  TEXT NOT NULL,
    chain_id             TEXT NOT NULL DEFAULT '',    -- EVM chain id, or the primary-network blockchain id
    chain_key            TEXT NOT NULL DEFAULT '',    -- the indexed chain whose blocks raise its events (P for validators)
    start_height         BIGINT NOT NULL DEFAULT -1,  -- that chain's indexed height at creation: events start after it
    network              TEXT NOT NULL DEFAULT '',    -- mainnet or fuji (primary network and validator webhooks)
    name                 TEXT NOT NULL DEFAULT '',
    description          TEXT NOT NULL DEFAULT '',
    status               TEXT NOT NULL,               -- active, inactive
    metadata             TEXT NOT NULL,               -- JSON of the validated metadata without its keys (webhook_keys)
    include_internal_txs BOOLEAN NOT NULL DEFAULT FALSE,
    include_logs         BOOLEAN NOT NULL DEFAULT FALSE,
    created_at           BIGINT NOT NULL,             -- unix milliseconds
    updated_at           BIGINT NOT NULL,             -- unix milliseconds
    failures             INTEGER NOT NULL DEFAULT 0,  -- consecutive failed deliveries; deactivation at the limit
    inactive_reason      TEXT NOT NULL DEFAULT ''     -- why it was deactivated (operators' eyes; '' when active)
);
CREATE INDEX IF NOT EXISTS webhooks_owner ON webhooks (owner, created_at, id);
CREATE INDEX IF NOT EXISTS webhooks_chain ON webhooks (chain_key, event_type, status);

-- What a webhook watches: EVM addresses (lower-case hex), primary-network
-- addresses (bech32 without the chain prefix), node ids or subnet ids. The
-- (key, webhook_id) index is the emitter's lookup from a block's rows.
CREATE TABLE IF NOT EXISTS webhook_keys (
    webhook_id TEXT NOT NULL,
    key        TEXT NOT NULL,
    PRIMARY KEY (webhook_id, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS webhook_keys_key ON webhook_keys (key, webhook_id);

-- The signing secret of each API key's webhooks (generateOrRotateSharedSecret).
CREATE TABLE IF NOT EXISTS webhook_secrets (
    owner      TEXT PRIMARY KEY,                      -- API key id
    secret     TEXT NOT NULL,                         -- 64 hex characters
    created_at BIGINT NOT NULL                        -- unix milliseconds
);
