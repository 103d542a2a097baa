-- P-chain balances (internal/api/data/primary, /balances) of a busy
-- staker's address without reading each of its locked stake outputs: such
-- an address holds thousands (docs/benchmarks.md, "Locked-stake sums and
-- the capacity sort"). While its staker is in the validator set, a stake
-- output of one owner, threshold 1, no locktime and a start not after its
-- own block (every staker since Durango) is always in the unlockedStaked
-- bucket: it is summed here per address and asset, as 0110 sums plain
-- UTXOs, and flagged plain so that the query of the other UTXOs (0175's
-- partial index) skips it. Kept by internal/decode/primary.Writer in the
-- block's transaction: LockStake adds it, UnlockStake moves it to
-- utxo_plain_balances. Amounts as in 0110 (amount_hi * 10^10 + amount_lo).
CREATE TABLE IF NOT EXISTS utxo_stake_balances (
    address    TEXT NOT NULL,
    chain_key  TEXT NOT NULL,
    asset_id   TEXT NOT NULL,
    amount_hi  BIGINT NOT NULL,
    amount_lo  BIGINT NOT NULL,
    utxo_count BIGINT NOT NULL,
    PRIMARY KEY (address, chain_key, asset_id)
) WITHOUT ROWID;
-- A database indexed before: the locked stakes of the stakers still in the
-- set (found by their tx, not by a scan of every UTXO), flagged and summed
-- by the same predicate. A locked stake is never plain before this.
UPDATE utxo_addresses SET plain = TRUE WHERE plain = FALSE AND spent = FALSE AND utxo_id IN (SELECT u.utxo_id FROM utxos u
    WHERE u.tx_id IN (SELECT tx_id FROM p_stakers WHERE removed_height < 0)
    AND u.utxo_type = 'STAKE' AND u.stake_locked = TRUE AND u.consumed_height < 0 AND u.stake_start <= u.created_time
    AND u.fx_type = 'secp256k1fx.TransferOutput' AND u.threshold = 1 AND u.locktime = 0 AND u.created_chain = u.chain_key
    AND u.addresses NOT LIKE '%,%');
INSERT INTO utxo_stake_balances (address, chain_key, asset_id, amount_hi, amount_lo, utxo_count)
    SELECT address, chain_key, asset_id, SUM(CAST(SUBSTR(amount, 1, 10) AS BIGINT)),
        SUM(CAST(SUBSTR(amount, 11, 10) AS BIGINT)), COUNT(*)
    FROM utxo_addresses WHERE plain = TRUE AND spent = FALSE AND utxo_id IN (SELECT u.utxo_id FROM utxos u
        WHERE u.tx_id IN (SELECT tx_id FROM p_stakers WHERE removed_height < 0) AND u.utxo_type = 'STAKE' AND u.stake_locked = TRUE)
    GROUP BY address, chain_key, asset_id;
