-- What a chain's ingester says of itself beyond its checkpoint, for `status`
-- and the health checks of every replica (they read it from the store):
-- stall_error while its batches fail (the node's answers stay wrong, say),
-- notice while it ingests in a lesser way (P/X blocks without proposer
-- details while the node's block index fails). NULL when all is well.
ALTER TABLE chains ADD COLUMN stall_error TEXT;
ALTER TABLE chains ADD COLUMN stalled_since BIGINT;
ALTER TABLE chains ADD COLUMN notice TEXT;
ALTER TABLE chains ADD COLUMN notice_since BIGINT;
