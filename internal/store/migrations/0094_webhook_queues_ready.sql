-- The queues with events waiting, in the order deliverers claim them (the
-- one served longest ago first): a claim walks these, not every webhook's
-- queue (internal/webhooks deliverer).
CREATE INDEX IF NOT EXISTS webhook_queues_ready ON webhook_queues (next_attempt_at, webhook_id) WHERE pending > 0;
