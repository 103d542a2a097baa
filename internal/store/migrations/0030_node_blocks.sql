-- Blocks by their proposer (internal/api/data/primary blocks.go,
-- listPrimaryNetworkBlocksByNodeId): a node's blocks newest first, walked in
-- index order. proposer_node_id is written with the block (from the node's
-- index API), so existing databases need no backfill beyond the index.
CREATE INDEX IF NOT EXISTS px_blocks_proposer ON px_blocks (chain_key, proposer_node_id, timestamp, height);
