-- Balances of the data API (internal/api/data/primary, /balances) without
-- reading every UTXO row of a busy address: utxo_addresses.plain marks a
-- UTXO whose balance bucket depends on nothing but its asset and amount
-- (a secp256k1 transfer output of one owner, threshold 1, no locktime, not
-- a stake output, spendable on the chain that created it). Balances sum
-- those from the covering index below and read the few others from utxos.
-- Written by internal/decode/primary.Writer.PutUTXO; this fills it for a
-- database indexed before.
ALTER TABLE utxo_addresses ADD COLUMN plain BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE utxo_addresses SET plain = TRUE FROM utxos u WHERE u.utxo_id = utxo_addresses.utxo_id
    AND u.fx_type = 'secp256k1fx.TransferOutput' AND u.threshold = 1 AND u.locktime = 0 AND u.utxo_type <> 'STAKE'
    AND u.staked = FALSE AND u.created_chain = u.chain_key AND u.addresses NOT LIKE '%,%';
CREATE INDEX IF NOT EXISTS utxo_addresses_balance ON utxo_addresses (address, chain_key, spent, plain, asset_id, amount);
