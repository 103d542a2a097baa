-- Each webhook's queue head (internal/webhooks deliverer): its first pending
-- event, found without walking the delivered ones before it.
CREATE INDEX IF NOT EXISTS webhook_outbox_pending ON webhook_outbox (webhook_id, block_height, position) WHERE status = 'pending';
