-- Each webhook's queue keeps its delivery cursor (internal/webhooks
-- deliverer): the last delivered event's (block_height, position) and the
-- attempts of the event after it. A webhook's events are delivered in that
-- order, so the delivered ones are exactly those at or before the cursor: a
-- round of deliveries updates one queue row, not each event's outbox row
-- (a 2-3 kB row rewritten with its index entries). The outbox becomes
-- append-only; the delivery log (webhook_deliveries) is the record of each
-- attempt and its outcome.
ALTER TABLE webhook_queues ADD COLUMN delivered_height BIGINT NOT NULL DEFAULT -1;
ALTER TABLE webhook_queues ADD COLUMN delivered_position INTEGER NOT NULL DEFAULT -1;
ALTER TABLE webhook_queues ADD COLUMN head_attempts INTEGER NOT NULL DEFAULT 0;
UPDATE webhook_queues SET
    delivered_height = COALESCE((SELECT o.block_height FROM webhook_outbox o WHERE o.webhook_id = webhook_queues.webhook_id
        AND o.status = 'delivered' ORDER BY o.block_height DESC, o.position DESC LIMIT 1), -1),
    delivered_position = COALESCE((SELECT o.position FROM webhook_outbox o WHERE o.webhook_id = webhook_queues.webhook_id
        AND o.status = 'delivered' ORDER BY o.block_height DESC, o.position DESC LIMIT 1), -1),
    head_attempts = COALESCE((SELECT o.attempts FROM webhook_outbox o WHERE o.webhook_id = webhook_queues.webhook_id
        AND o.status = 'pending' ORDER BY o.block_height, o.position LIMIT 1), 0);
DROP INDEX IF EXISTS webhook_outbox_pending;
ALTER TABLE webhook_outbox DROP COLUMN status;
ALTER TABLE webhook_outbox DROP COLUMN attempts;
ALTER TABLE webhook_outbox DROP COLUMN delivered_at;
ALTER TABLE webhook_outbox DROP COLUMN last_error;
