-- EVM addresses and hashes as bytes in the tables the EVM indexer writes per
-- block: 20 or 32 bytes instead of 42 or 66 characters of 0x-hex text in every
-- key and index entry (ingestion +10-15%, docs/benchmarks.md). '' (no recipient,
-- no operator, no topic) becomes the empty byte string. Queries bind
-- store.Hex and scan with store.ScanHex (internal/store/hex.go).
-- evm_contracts and evm_nft_tokens, which enrichment updates and joins with
-- its own tables, keep 0x-hex text, as do the other packages' tables.
-- SQLite cannot change a column's declared type: the columns keep TEXT (an
-- affinity that stores blobs as they are) and hold BLOBs from here on. OR FAIL:
-- no statement journal (a copy of every page each UPDATE changes, in memory on
-- the writer); an error fails the migration's transaction as a whole anyway.
UPDATE OR FAIL evm_blocks SET hash = unhex(substr(hash, 3)), parent_hash = unhex(substr(parent_hash, 3)), miner = unhex(substr(miner, 3)), state_root = unhex(substr(state_root, 3)), ext_data_hash = unhex(substr(ext_data_hash, 3));
UPDATE OR FAIL evm_txs SET hash = unhex(substr(hash, 3)), block_hash = unhex(substr(block_hash, 3)), from_addr = unhex(substr(from_addr, 3)), to_addr = unhex(substr(to_addr, 3)), contract_address = unhex(substr(contract_address, 3));
UPDATE OR FAIL evm_address_txs SET address = unhex(substr(address, 3));
UPDATE OR FAIL evm_logs SET tx_hash = unhex(substr(tx_hash, 3)), address = unhex(substr(address, 3)), topic0 = unhex(substr(topic0, 3)), topic1 = unhex(substr(topic1, 3)), topic2 = unhex(substr(topic2, 3)), topic3 = unhex(substr(topic3, 3));
UPDATE OR FAIL evm_transfers SET tx_hash = unhex(substr(tx_hash, 3)), token = unhex(substr(token, 3)), from_addr = unhex(substr(from_addr, 3)), to_addr = unhex(substr(to_addr, 3)), operator = unhex(substr(operator, 3));
UPDATE OR FAIL evm_nft_owner_history SET token = unhex(substr(token, 3)), owner = unhex(substr(owner, 3));
UPDATE OR FAIL evm_token_balances SET holder = unhex(substr(holder, 3)), token = unhex(substr(token, 3));
UPDATE OR FAIL evm_token_balance_history SET holder = unhex(substr(holder, 3)), token = unhex(substr(token, 3));
UPDATE OR FAIL evm_native_balances SET address = unhex(substr(address, 3));
UPDATE OR FAIL evm_native_balance_history SET address = unhex(substr(address, 3));
