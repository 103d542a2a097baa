-- ERC-20 balances the index cannot vouch for (internal/decode/evm/wrapped.go).
-- A WETH9-style token mints on Deposit and burns on Withdrawal, with no
-- Transfer event; the indexer applies those events only when the native value
-- that backs them moved in the same tx, which only call traces show for a
-- withdrawal or a deposit made from inside another contract. A token with
-- such an event in a block indexed without traces is recorded here from that
-- block on, and the API reads its balances from the node (balanceOf) there.
CREATE TABLE IF NOT EXISTS evm_untrusted_tokens (
    chain_key   TEXT NOT NULL,
    token       BLOB NOT NULL,
    since_block BIGINT NOT NULL,
    PRIMARY KEY (chain_key, token)
) WITHOUT ROWID;
