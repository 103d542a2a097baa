-- Indexes for the EVM data API (internal/api/data/evm); the tables are 0005_evm.sql's.

-- balances:listErc721 / listCollectibles: the ERC-721 tokens an address owns as of a
-- block are its owner-history rows with no later row up to that block; this index
-- walks one owner's rows in (contract, token id) order.
CREATE INDEX IF NOT EXISTS evm_nft_owner_history_owner ON evm_nft_owner_history (chain_key, owner, token, token_id, block_number);

-- nfts/collections/{address}/tokens: token ids in numeric order. Ids are canonical
-- decimals (no leading zeros), so (length, digits) is numeric order.
CREATE INDEX IF NOT EXISTS evm_nft_tokens_numeric ON evm_nft_tokens (chain_key, token, (LENGTH(token_id)), token_id);
