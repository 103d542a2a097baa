-- Indexes no query uses, dropped: each cost the ingest writer a B-tree write
-- per row (docs/benchmarks.md "Ingestion").
-- evm_nft_tokens_owner: the API finds an address's NFTs, and a token's owner at
-- a block, in evm_nft_owner_history (its own owner index); evm_nft_tokens.owner
-- is only shown. Each ownership change also moved the row in this index: 13 µs
-- per NFT row, half the table's cost.
DROP INDEX IF EXISTS evm_nft_tokens_owner;
-- evm_logs_address: no endpoint lists logs by emitting contract (ICM has its
-- own tables).
DROP INDEX IF EXISTS evm_logs_address;
