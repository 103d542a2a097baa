-- The contracts recognised as TeleporterMessengers, per chain: a contract
-- qualifies with its first message-carrying event (send, receive, failed
-- execution) whose message ID is calculateMessageID of the emitting
-- contract's address and the message. Events that carry no message (executed,
-- receipts, fees, redemptions) count only from a recognised messenger, so a
-- contract that merely emits look-alike events cannot touch a message.
CREATE TABLE IF NOT EXISTS icm_messengers (
    chain_key        TEXT NOT NULL,
    contract_address TEXT NOT NULL,   -- 0x-hex, lowercase
    first_block      BIGINT NOT NULL,
    first_log_index  BIGINT NOT NULL,
    PRIMARY KEY (chain_key, contract_address)
);
