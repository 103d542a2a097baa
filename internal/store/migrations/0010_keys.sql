-- API keys (`permafrost keys create|list|revoke`). Only the SHA-256 of a key
-- is stored; the plaintext is shown once, at creation.
CREATE TABLE IF NOT EXISTS api_keys (
    id         TEXT PRIMARY KEY,              -- public id, also embedded in the key
    key_hash   TEXT NOT NULL,                 -- hex sha256 of the whole key
    name       TEXT NOT NULL,
    tier       TEXT NOT NULL,                 -- rate-limit tier (budgets are in the server config)
    scopes     TEXT NOT NULL DEFAULT '',      -- comma list, e.g. exports,reindex
    created_at BIGINT NOT NULL,
    expires_at BIGINT,                        -- unix seconds; NULL: never
    revoked_at BIGINT                         -- unix seconds; NULL: active
);
CREATE UNIQUE INDEX IF NOT EXISTS api_keys_hash ON api_keys (key_hash);

-- Rate-limit counters shared by API replicas (PostgreSQL): compute units used
-- per subject (key or client IP) in one fixed one-minute window.
CREATE TABLE IF NOT EXISTS rate_windows (
    subject      TEXT NOT NULL,
    window_start BIGINT NOT NULL,             -- unix seconds, a multiple of 60
    used         BIGINT NOT NULL,
    PRIMARY KEY (subject, window_start)
);
CREATE INDEX IF NOT EXISTS rate_windows_start ON rate_windows (window_start);
