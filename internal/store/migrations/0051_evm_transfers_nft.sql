-- transactions:listErc721 and :listErc1155 (internal/api/data/evm): an address's
-- NFT transfers, newest first, without walking its ERC-20 transfers (most of a
-- busy address's rows). Partial: ERC-20 transfers, the bulk of a chain's, are not
-- in them, so ingestion writes two more index entries per NFT transfer only.
-- Queries name the predicate literally (erc_type <> 'ERC-20') so SQLite may use
-- them. :listErc20 walks evm_transfers_from / evm_transfers_to.
CREATE INDEX IF NOT EXISTS evm_transfers_from_nft ON evm_transfers (chain_key, from_addr, erc_type, block_number, log_index, batch_index) WHERE erc_type <> 'ERC-20';
CREATE INDEX IF NOT EXISTS evm_transfers_to_nft ON evm_transfers (chain_key, to_addr, erc_type, block_number, log_index, batch_index) WHERE erc_type <> 'ERC-20';
