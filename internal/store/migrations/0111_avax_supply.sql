-- GET /v1/avax/supply (internal/api/data/primary, supply.go) reads these
-- running totals instead of summing the chains' history: one row per chain,
-- added to by the indexers in the block's own transaction
-- (internal/decode/primary.Writer.AddSupply; P: decode/pchain at each
-- block, X: decode/xchain, C: the atomic txs, decode/catomic). nAVAX; every
-- AVAX total is bounded by the supply (720,000,000 AVAX on mainnet, 7.2e17
-- nAVAX), within BIGINT.
--   genesis_supply  P: the genesis's initial supply (what getCurrentSupply starts from)
--   burned          fees: AVAX consumed minus AVAX produced, staked and put into L1 validator balances
--   rewards         P: staking rewards paid (reward UTXOs minted)
--   staked          P: AVAX in the stake outputs of stakers not yet removed
--   l1_deposits     P: AVAX put into L1 validator balances
--   l1_refunds      P: L1 validator balances returned to their owners
-- The C-chain's EVM fees are the balance of its blackhole coinbase
-- (evm_native_balances), kept by the EVM indexer already.
CREATE TABLE IF NOT EXISTS avax_supply (
    chain_key      TEXT PRIMARY KEY,
    genesis_supply BIGINT NOT NULL DEFAULT 0,
    burned         BIGINT NOT NULL DEFAULT 0,
    rewards        BIGINT NOT NULL DEFAULT 0,
    staked         BIGINT NOT NULL DEFAULT 0,
    l1_deposits    BIGINT NOT NULL DEFAULT 0,
    l1_refunds     BIGINT NOT NULL DEFAULT 0
);
-- A database indexed before this migration has history these totals never
-- counted: the row '' says so until `permafrost reindex` (which clears the
-- table and replays every block) rebuilds them; the endpoint answers 503
-- naming the command meanwhile.
INSERT INTO avax_supply (chain_key) SELECT '' WHERE EXISTS (SELECT 1 FROM px_blocks);
-- totalLocked: the unspent UTXOs with a lock, whose lock is judged at the
-- tip's time when asked (a lock expires with time, not with a block): a
-- walk of the few locked UTXOs, not of every UTXO.
CREATE INDEX IF NOT EXISTS utxos_locked ON utxos (asset_id) WHERE consumed_height < 0 AND (locktime > 0 OR stakeable_locktime > 0);
