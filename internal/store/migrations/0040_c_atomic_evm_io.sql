-- The EVM side of the C-chain's atomic txs (internal/decode/catomic): the
-- EVMInputs an ExportTx takes from accounts and the EVMOutputs an ImportTx
-- credits, for the data API's CChainExportTransaction.evmInputs and
-- CChainImportTransaction.evmOutputs. Written with the tx's px_txs row;
-- reindex rebuilds it from the C-chain's raw blocks.
CREATE TABLE IF NOT EXISTS c_atomic_evm_io (
    tx_id      TEXT NOT NULL,
    direction  TEXT NOT NULL,                 -- IN (export's EVMInput) or OUT (import's EVMOutput)
    io_index   INTEGER NOT NULL,              -- position in the tx's Ins / Outs
    address    TEXT NOT NULL,                 -- 0x-hex, EIP-55 checksummed
    asset_id   TEXT NOT NULL,
    amount     TEXT NOT NULL,                 -- padded decimal (nAVAX for AVAX)
    nonce      BIGINT NOT NULL DEFAULT 0,     -- EVMInput nonce
    PRIMARY KEY (tx_id, direction, io_index)
);
