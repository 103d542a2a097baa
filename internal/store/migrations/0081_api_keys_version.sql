-- A counter every key revocation (and creation) increments in its own
-- transaction (issue #19): API processes compare it at most once a second
-- and drop their cached key lookups when it moved, so a revoked key stops
-- working within a second on every replica, on both backends (a
-- `permafrost keys revoke` is another process even on SQLite).
CREATE TABLE IF NOT EXISTS api_keys_version (
    id      INTEGER PRIMARY KEY,              -- always 1
    version BIGINT NOT NULL
);
INSERT INTO api_keys_version (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
