-- Indexes found missing by the data-service latency benchmark
-- (internal/bench/apibench, docs/benchmarks.md "Data service latency").

-- SpendUTXO marks a UTXO's address rows spent by utxo_id: without this index
-- every spend scanned all of utxo_addresses (ingestion slowed down as the
-- table grew, and held the SQLite writer meanwhile).
CREATE INDEX IF NOT EXISTS utxo_addresses_utxo ON utxo_addresses (utxo_id);
