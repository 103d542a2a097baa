-- Indexes found missing by the data-service latency benchmark
-- (internal/bench/apibench, docs/benchmarks.md "Data service latency").

-- SpendUTXO marks a UTXO's address rows spent by utxo_id: without this index
-- every spend scanned all of utxo_addresses (ingestion slowed down as the
-- table grew, and held the SQLite writer meanwhile).
CREATE INDEX IF NOT EXISTS utxo_addresses_utxo ON utxo_addresses (utxo_id);

-- Historical rewards by address (internal/api/data/primary rewards.go): each
-- UTXO of the addresses is probed here, a small index of the reward UTXOs,
-- rather than in utxos (seconds for an address with tens of thousands of
-- UTXOs).
CREATE INDEX IF NOT EXISTS utxos_rewards_id ON utxos (utxo_id, created_time) WHERE reward_type <> '';
