-- Webhook validator events (internal/webhooks, validator_activity): the
-- emitter reads the L1 validator changes of each P block it applies.
CREATE INDEX IF NOT EXISTS p_l1_validator_history_height ON p_l1_validator_history (height, seq);
