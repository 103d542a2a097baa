-- Balances of the data API (internal/api/data/primary, /balances) in one
-- row per address, chain and asset instead of a sum over every plain UTXO
-- (0042) of the address: the busiest address holds 100,000s of them, and
-- summing that index range was the p99 of /balances (docs/benchmarks.md,
-- "Issue #17 part B"). Kept by internal/decode/primary.Writer in the
-- block's transaction: PutUTXO adds a new unspent plain UTXO, SpendUTXO
-- subtracts it. Amounts are uint64 (utxo_addresses.amount, 20 padded
-- digits), whose sum may exceed BIGINT: the row keeps the sums of the
-- leading and the trailing 10 digits (amount = amount_hi * 10^10 +
-- amount_lo), each exact in BIGINT for up to 900 million UTXOs.
-- Rows whose UTXOs are all spent stay with utxo_count 0.
CREATE TABLE IF NOT EXISTS utxo_plain_balances (
    address    TEXT NOT NULL,
    chain_key  TEXT NOT NULL,
    asset_id   TEXT NOT NULL,
    amount_hi  BIGINT NOT NULL,
    amount_lo  BIGINT NOT NULL,
    utxo_count BIGINT NOT NULL,
    PRIMARY KEY (address, chain_key, asset_id)
) WITHOUT ROWID;
-- A stake output is plain once its staker left (stake_locked = FALSE: the
-- node gives it back, and its bucket no longer changes): Writer.UnlockStake
-- marks it from now on; the returned stakes of a database indexed before
-- are marked here. (A busy staker's address holds thousands of them.)
UPDATE utxo_addresses SET plain = TRUE FROM utxos u WHERE u.utxo_id = utxo_addresses.utxo_id
    AND u.utxo_type = 'STAKE' AND u.stake_locked = FALSE AND u.fx_type = 'secp256k1fx.TransferOutput'
    AND u.threshold = 1 AND u.locktime = 0 AND u.created_chain = u.chain_key AND u.addresses NOT LIKE '%,%';
-- A database indexed before: the same sums from the rows.
INSERT INTO utxo_plain_balances (address, chain_key, asset_id, amount_hi, amount_lo, utxo_count)
    SELECT address, chain_key, asset_id, SUM(CAST(SUBSTR(amount, 1, 10) AS BIGINT)),
        SUM(CAST(SUBSTR(amount, 11, 10) AS BIGINT)), COUNT(*)
    FROM utxo_addresses WHERE spent = FALSE AND plain = TRUE GROUP BY address, chain_key, asset_id;
