-- PostgreSQL only: the current balances are updated in place once per key
-- per ingest batch (evm.Indexer.Flush), and no index holds the updated
-- columns (balance, block_number). With room left in each page the new row
-- version stays on its page and no index entry is added (a HOT update). In
-- the ingestion benchmark: 0.9 KB less WAL per block, server CPU per block
-- -3% over four interleaved pairs (docs/benchmarks.md, "PostgreSQL write
-- path"); more on a large database, where each index entry avoided is a
-- random page. New pages only; no rewrite.
ALTER TABLE evm_token_balances SET (fillfactor = 70);
ALTER TABLE evm_native_balances SET (fillfactor = 70);
