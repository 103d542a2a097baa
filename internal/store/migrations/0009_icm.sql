-- ICM (Teleporter) messages, written by internal/decode/icm from the logs of the
-- TeleporterMessenger contracts of every indexed EVM chain.
--
-- icm_events keeps every message-related Teleporter log as emitted (topics and
-- data), keyed like evm_logs. icm_messages is rebuilt from all the events of a
-- message ID each time one arrives, so the record is the same whichever chain
-- is indexed first. Status is not stored: pending / delivered /
-- delivered_source_not_indexed follow at query time from has_source and
-- has_destination, and EVM chain ids are looked up in `chains` at query time,
-- so a chain indexed later shows up without rewriting rows.
-- Message ids and hashes: 0x-lowercase hex; blockchain ids: cb58; uint256
-- values (nonces, gas limits, fee amounts): decimal TEXT.

CREATE TABLE IF NOT EXISTS icm_events (
    chain_key        TEXT NOT NULL,
    block_number     BIGINT NOT NULL,
    log_index        INTEGER NOT NULL,              -- position in the block
    message_id       TEXT NOT NULL,
    event            TEXT NOT NULL,                 -- SendCrossChainMessage, ReceiveCrossChainMessage, ...
    chain_blockchain_id TEXT NOT NULL,              -- cb58 id of the emitting chain
    contract_address TEXT NOT NULL,
    block_time       BIGINT NOT NULL,
    tx_index         INTEGER NOT NULL,
    tx_hash          TEXT NOT NULL,
    tx_from          TEXT NOT NULL,
    tx_gas_used      BIGINT NOT NULL,
    topics           TEXT NOT NULL,                 -- all topics, 0x-hex, comma-separated
    data             BLOB NOT NULL,
    PRIMARY KEY (chain_key, block_number, log_index)
);
CREATE INDEX IF NOT EXISTS icm_events_message ON icm_events (message_id);

CREATE TABLE IF NOT EXISTS icm_messages (
    message_id                TEXT PRIMARY KEY,
    contract_address          TEXT NOT NULL,
    source_blockchain_id      TEXT NOT NULL,
    destination_blockchain_id TEXT NOT NULL,
    message_nonce             TEXT NOT NULL,
    origin_sender             TEXT NOT NULL,
    destination_address       TEXT NOT NULL,
    required_gas_limit        TEXT NOT NULL,
    allowed_relayers          TEXT NOT NULL,        -- JSON array of addresses
    receipts                  TEXT NOT NULL,        -- JSON array of {"nonce": decimal, "relayer": address}
    payload                   BLOB NOT NULL,        -- the message bytes
    sort_time                 BIGINT NOT NULL,      -- source tx time when indexed, else destination tx time
    -- Source side: the first SendCrossChainMessage (a retried send keeps it).
    has_source                BOOLEAN NOT NULL,
    src_chain_key             TEXT NOT NULL,
    src_block                 BIGINT NOT NULL,
    src_tx_hash               TEXT NOT NULL,
    src_tx_from               TEXT NOT NULL,
    src_time                  BIGINT NOT NULL,
    src_gas_used              BIGINT NOT NULL,
    fee_token                 TEXT NOT NULL,        -- '' when no source-side event is indexed
    fee_amount                TEXT NOT NULL,        -- latest of send / AddFeeAmount total / ReceiptReceived
    fee_additions             INTEGER NOT NULL,     -- AddFeeAmount events seen
    receipt_delivered         BOOLEAN NOT NULL,
    receipt_tx_hash           TEXT NOT NULL,
    receipt_time              BIGINT NOT NULL,
    receipt_relayer           TEXT NOT NULL,
    -- Destination side: the ReceiveCrossChainMessage.
    has_destination           BOOLEAN NOT NULL,
    dst_chain_key             TEXT NOT NULL,
    dst_block                 BIGINT NOT NULL,
    dst_tx_hash               TEXT NOT NULL,
    dst_time                  BIGINT NOT NULL,
    dst_gas_used              BIGINT NOT NULL,
    deliverer                 TEXT NOT NULL,
    reward_redeemer           TEXT NOT NULL,
    executed                  BOOLEAN NOT NULL,
    executed_tx_hash          TEXT NOT NULL,        -- the delivery tx, or the retryMessageExecution tx
    executed_time             BIGINT NOT NULL,
    execution_failures        INTEGER NOT NULL,     -- MessageExecutionFailed events seen
    failed_tx_hash            TEXT NOT NULL         -- the last failed execution
);
CREATE INDEX IF NOT EXISTS icm_messages_time ON icm_messages (sort_time, message_id);
CREATE INDEX IF NOT EXISTS icm_messages_source ON icm_messages (source_blockchain_id, sort_time, message_id);
CREATE INDEX IF NOT EXISTS icm_messages_destination ON icm_messages (destination_blockchain_id, sort_time, message_id);
CREATE INDEX IF NOT EXISTS icm_messages_from ON icm_messages (origin_sender, sort_time, message_id);
CREATE INDEX IF NOT EXISTS icm_messages_to ON icm_messages (destination_address, sort_time, message_id);

-- By-address listing: one row per (address, message) for the origin sender and
-- the destination address, newest first by (sort_time, message_id).
CREATE TABLE IF NOT EXISTS icm_address_messages (
    address     TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    sort_time   BIGINT NOT NULL,
    PRIMARY KEY (address, message_id)
);
CREATE INDEX IF NOT EXISTS icm_address_messages_time ON icm_address_messages (address, sort_time, message_id);
CREATE INDEX IF NOT EXISTS icm_address_messages_message ON icm_address_messages (message_id);

-- One row per message ID, taken (upserted) before a message is rebuilt: on
-- PostgreSQL two chains' ingest transactions touching the same message then
-- rebuild it one after the other, the second seeing the first's events.
CREATE TABLE IF NOT EXISTS icm_message_locks (
    message_id  TEXT PRIMARY KEY
);

-- redeemRelayerRewards: not tied to a message.
CREATE TABLE IF NOT EXISTS icm_reward_redemptions (
    chain_key        TEXT NOT NULL,
    block_number     BIGINT NOT NULL,
    log_index        INTEGER NOT NULL,
    contract_address TEXT NOT NULL,
    block_time       BIGINT NOT NULL,
    tx_hash          TEXT NOT NULL,
    redeemer         TEXT NOT NULL,
    asset            TEXT NOT NULL,
    amount           TEXT NOT NULL,                 -- decimal
    PRIMARY KEY (chain_key, block_number, log_index)
);
CREATE INDEX IF NOT EXISTS icm_reward_redemptions_redeemer ON icm_reward_redemptions (redeemer, block_time);
