-- Webhook events (internal/webhooks): written by the emitter in the same
-- transaction as the block that raises them, so an event exists exactly when
-- its block is indexed. One row per event and webhook; message_id is derived
-- from (webhook, event) so re-applying a block (reindex) writes the same ids
-- and ON CONFLICT keeps the delivered rows as they are: nothing is sent twice.
-- Rows are ordered per webhook by (block_height, position): the delivery
-- queue of each webhook.
CREATE TABLE IF NOT EXISTS webhook_outbox (
    webhook_id      TEXT NOT NULL,
    block_height    BIGINT NOT NULL,
    position        INTEGER NOT NULL,            -- the event's place in its block (tx index, output, ...)
    message_id      TEXT NOT NULL,               -- UUID (v5 of webhook and event)
    chain_key       TEXT NOT NULL,
    payload         TEXT NOT NULL,               -- the request body, canonical JSON
    created_at      BIGINT NOT NULL,             -- unix milliseconds (commit-to-delivery latency)
    status          TEXT NOT NULL DEFAULT 'pending', -- pending, delivered
    attempts        INTEGER NOT NULL DEFAULT 0,
    delivered_at    BIGINT NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (webhook_id, block_height, position)
);
CREATE UNIQUE INDEX IF NOT EXISTS webhook_outbox_message ON webhook_outbox (message_id);

-- The delivery log: one row per attempt (operators' eyes, and the tests').
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    message_id  TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    webhook_id  TEXT NOT NULL,
    at          BIGINT NOT NULL,                 -- unix milliseconds the attempt ended
    status_code INTEGER NOT NULL,                -- HTTP status, 0 when none (refused, timeout)
    duration_ms BIGINT NOT NULL,
    error       TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (message_id, attempt)
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_webhook ON webhook_deliveries (webhook_id, at);

-- Each webhook's queue: how many of its events wait, when the next attempt
-- is due, and the lease of the worker delivering them. Workers lease a
-- queue, not an event: one worker sends a webhook's events, in order, and
-- replicas on one PostgreSQL never send the same attempt twice.
CREATE TABLE IF NOT EXISTS webhook_queues (
    webhook_id      TEXT PRIMARY KEY,
    pending         BIGINT NOT NULL DEFAULT 0,   -- events written minus events delivered
    next_attempt_at BIGINT NOT NULL DEFAULT 0,   -- unix milliseconds (backoff after a failure)
    lease_owner     TEXT NOT NULL DEFAULT '',
    lease_until     BIGINT NOT NULL DEFAULT 0    -- unix milliseconds
);
CREATE INDEX IF NOT EXISTS webhook_queues_due ON webhook_queues (next_attempt_at);
