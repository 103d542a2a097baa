-- Internal transactions and trustworthy native balances (internal/decode/evm/trace.go).
-- evm_internal_txs: the nested call frames of traced blocks (debug_traceBlockByNumber,
-- callTracer) the published document lists: CALL and CALLCODE frames with value,
-- CREATE/CREATE2/CREATE3, and SELFDESTRUCT paying out value. trace_index is the
-- frame's position in its tx, depth first (0 would be the tx itself, not stored);
-- reverted: the frame, a caller or the tx failed (its value did not move).
CREATE TABLE IF NOT EXISTS evm_internal_txs (
    chain_key    TEXT NOT NULL,
    block_number BIGINT NOT NULL,
    tx_index     INTEGER NOT NULL,
    trace_index  INTEGER NOT NULL,
    tx_hash      BLOB NOT NULL,
    block_hash   BLOB NOT NULL,
    block_time   BIGINT NOT NULL,
    call_type    TEXT NOT NULL,
    from_addr    BLOB NOT NULL,
    to_addr      BLOB NOT NULL,
    value        TEXT NOT NULL,
    gas          BIGINT NOT NULL,
    gas_used     BIGINT NOT NULL,
    reverted     INTEGER NOT NULL,
    depth        INTEGER NOT NULL,
    PRIMARY KEY (chain_key, block_number, tx_index, trace_index)
) WITHOUT ROWID;
-- One row per party (from, and to when it differs) of each internal tx.
CREATE TABLE IF NOT EXISTS evm_address_internals (
    chain_key    TEXT NOT NULL,
    address      BLOB NOT NULL,
    block_number BIGINT NOT NULL,
    tx_index     INTEGER NOT NULL,
    trace_index  INTEGER NOT NULL,
    PRIMARY KEY (chain_key, address, block_number, tx_index, trace_index)
) WITHOUT ROWID;
-- Facts about a chain's computed native balances, each from since_block on
-- (internal/decode/evm/trace.go): address x'00' = value has entered contracts;
-- address x'' (empty) = a block indexed without call traces ran code while
-- contracts may hold value: no computed balance is vouched for from there on,
-- and the API reads native balances from the node. Keyed by address so that
-- per-address facts can join later.
CREATE TABLE IF NOT EXISTS evm_untrusted_balances (
    chain_key   TEXT NOT NULL,
    address     BLOB NOT NULL,
    since_block BIGINT NOT NULL,
    PRIMARY KEY (chain_key, address)
) WITHOUT ROWID;
