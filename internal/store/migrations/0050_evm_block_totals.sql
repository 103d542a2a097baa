-- Block and transaction listings of the EVM data API (issue #18, internal/api/data/evm).

-- EvmBlock.cumulativeTransactions: the chain's transactions up to and including
-- the block, written by the EVM indexer with the block (a running sum it carries
-- from block to block). Existing rows are filled here in one pass.
ALTER TABLE evm_blocks ADD COLUMN cumulative_txs BIGINT NOT NULL DEFAULT 0;
UPDATE evm_blocks SET cumulative_txs = c.cum
    FROM (SELECT chain_key, number, SUM(tx_count) OVER (PARTITION BY chain_key ORDER BY number) AS cum FROM evm_blocks) AS c
    WHERE evm_blocks.chain_key = c.chain_key AND evm_blocks.number = c.number;

-- /transactions?status=failed: reverted transactions newest first. Partial: only
-- failed transactions are in it (a small share), so ingestion barely pays for it;
-- status=success walks the primary key and skips the few failed ones.
CREATE INDEX IF NOT EXISTS evm_txs_failed ON evm_txs (chain_key, block_number, tx_index) WHERE status = 0;

-- contracts/{address}/deployments: the contracts an address deployed, newest first.
CREATE INDEX IF NOT EXISTS evm_contracts_deployer ON evm_contracts (chain_key, deployer_address, block_number, address);
