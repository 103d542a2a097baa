-- UTXOs exported from P to X or C are listed on those chains in their own
-- lower-case vocabulary ("transfer"); indexes built before this fix stored
-- P's "TRANSFER" for them (internal/decode/pchain ExportTx).
UPDATE utxos SET utxo_type = 'transfer' WHERE created_chain = 'P' AND chain_key <> 'P' AND utxo_type = 'TRANSFER';
