-- When a deliverer last gave each webhook's queue back (unix milliseconds):
-- workers claim the due queues served longest ago first, so queues take
-- turns (internal/webhooks deliverer). Not indexed, like pending: the
-- updates of a queue row (counts, leases, turns) then stay heap-only on
-- PostgreSQL instead of adding index entries at every delivery.
ALTER TABLE webhook_queues ADD COLUMN served_at BIGINT NOT NULL DEFAULT 0;
