-- EVM addresses and hashes as bytes in the tables the EVM indexer writes per
-- block: 20 or 32 bytes instead of 42 or 66 characters of 0x-hex text in every
-- key and index entry (ingestion +10-15%, docs/benchmarks.md). '' (no recipient,
-- no operator, no topic) becomes the empty byte string. Queries bind
-- store.Hex and scan with store.ScanHex (internal/store/hex.go).
-- evm_contracts and evm_nft_tokens, which enrichment updates and joins with
-- its own tables, keep 0x-hex text, as do the other packages' tables.
ALTER TABLE evm_blocks ALTER COLUMN ext_data_hash DROP DEFAULT;
ALTER TABLE evm_blocks ALTER COLUMN hash TYPE BYTEA USING decode(substr(hash, 3), 'hex'), ALTER COLUMN parent_hash TYPE BYTEA USING decode(substr(parent_hash, 3), 'hex'), ALTER COLUMN miner TYPE BYTEA USING decode(substr(miner, 3), 'hex'), ALTER COLUMN state_root TYPE BYTEA USING decode(substr(state_root, 3), 'hex'), ALTER COLUMN ext_data_hash TYPE BYTEA USING decode(substr(ext_data_hash, 3), 'hex');
ALTER TABLE evm_blocks ALTER COLUMN ext_data_hash SET DEFAULT ''::bytea;
ALTER TABLE evm_txs ALTER COLUMN contract_address DROP DEFAULT;
ALTER TABLE evm_txs ALTER COLUMN hash TYPE BYTEA USING decode(substr(hash, 3), 'hex'), ALTER COLUMN block_hash TYPE BYTEA USING decode(substr(block_hash, 3), 'hex'), ALTER COLUMN from_addr TYPE BYTEA USING decode(substr(from_addr, 3), 'hex'), ALTER COLUMN to_addr TYPE BYTEA USING decode(substr(to_addr, 3), 'hex'), ALTER COLUMN contract_address TYPE BYTEA USING decode(substr(contract_address, 3), 'hex');
ALTER TABLE evm_txs ALTER COLUMN contract_address SET DEFAULT ''::bytea;
ALTER TABLE evm_address_txs ALTER COLUMN address TYPE BYTEA USING decode(substr(address, 3), 'hex');
ALTER TABLE evm_logs ALTER COLUMN tx_hash TYPE BYTEA USING decode(substr(tx_hash, 3), 'hex'), ALTER COLUMN address TYPE BYTEA USING decode(substr(address, 3), 'hex'), ALTER COLUMN topic0 TYPE BYTEA USING decode(substr(topic0, 3), 'hex'), ALTER COLUMN topic1 TYPE BYTEA USING decode(substr(topic1, 3), 'hex'), ALTER COLUMN topic2 TYPE BYTEA USING decode(substr(topic2, 3), 'hex'), ALTER COLUMN topic3 TYPE BYTEA USING decode(substr(topic3, 3), 'hex');
ALTER TABLE evm_transfers ALTER COLUMN operator DROP DEFAULT;
ALTER TABLE evm_transfers ALTER COLUMN tx_hash TYPE BYTEA USING decode(substr(tx_hash, 3), 'hex'), ALTER COLUMN token TYPE BYTEA USING decode(substr(token, 3), 'hex'), ALTER COLUMN from_addr TYPE BYTEA USING decode(substr(from_addr, 3), 'hex'), ALTER COLUMN to_addr TYPE BYTEA USING decode(substr(to_addr, 3), 'hex'), ALTER COLUMN operator TYPE BYTEA USING decode(substr(operator, 3), 'hex');
ALTER TABLE evm_transfers ALTER COLUMN operator SET DEFAULT ''::bytea;
ALTER TABLE evm_nft_owner_history ALTER COLUMN token TYPE BYTEA USING decode(substr(token, 3), 'hex'), ALTER COLUMN owner TYPE BYTEA USING decode(substr(owner, 3), 'hex');
ALTER TABLE evm_token_balances ALTER COLUMN holder TYPE BYTEA USING decode(substr(holder, 3), 'hex'), ALTER COLUMN token TYPE BYTEA USING decode(substr(token, 3), 'hex');
ALTER TABLE evm_token_balance_history ALTER COLUMN holder TYPE BYTEA USING decode(substr(holder, 3), 'hex'), ALTER COLUMN token TYPE BYTEA USING decode(substr(token, 3), 'hex');
ALTER TABLE evm_native_balances ALTER COLUMN address TYPE BYTEA USING decode(substr(address, 3), 'hex');
ALTER TABLE evm_native_balance_history ALTER COLUMN address TYPE BYTEA USING decode(substr(address, 3), 'hex');
