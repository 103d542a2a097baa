-- How raw_blocks.body is encoded (internal/ingest/rawbody.go): 0 as fetched,
-- 1 S2-compressed (large bodies: EVM blocks with their receipts). Rows written
-- before this migration are 0.
ALTER TABLE raw_blocks ADD COLUMN encoding INTEGER NOT NULL DEFAULT 0;
