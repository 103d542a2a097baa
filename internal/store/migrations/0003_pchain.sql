-- P-chain state derived by internal/decode/pchain (owner of this file).
-- Common rows (px_blocks, px_txs, utxos, links) live in 0002_primary.sql.
-- Conventions: ids are cb58 ("NodeID-..." for nodes), addresses bech32 without
-- chain prefix, uint64 amounts/weights are 20-digit zero-padded decimal TEXT
-- (text order = numeric order; see primary.PadAmount), owners are JSON
-- {"locktime":N,"threshold":N,"addresses":[...]}, BLS keys 0x-hex compressed.
-- Heights are P heights; -1 means "not yet / never".

-- A stake output is a UTXO row from the staker tx on (same ID as the output the
-- node gives back when the staker leaves); it is locked while the staker holds
-- it. The node's spendable set (platform.getUTXOs) is
-- spent = FALSE AND stake_locked = FALSE; platform.getStake is stake_locked = TRUE.
ALTER TABLE utxos ADD COLUMN stake_locked BOOLEAN NOT NULL DEFAULT FALSE;

-- Chain state after each P block. For a proposal block: the state after its
-- decision txs (the option block that follows settles the proposal).
CREATE TABLE IF NOT EXISTS p_block_state (
    height               BIGINT PRIMARY KEY,
    block_id             TEXT NOT NULL,
    chain_time           BIGINT NOT NULL,          -- unix seconds
    current_supply       TEXT NOT NULL,            -- primary network, padded
    fee_capacity         TEXT NOT NULL,            -- ACP-103 gas state (decimal)
    fee_excess           TEXT NOT NULL,
    l1_excess            TEXT NOT NULL,            -- ACP-77 validator fee excess (decimal)
    l1_accrued_fees      TEXT NOT NULL,            -- accumulated per-validator fee (padded)
    active_l1_validators INTEGER NOT NULL,
    gas_consumed         TEXT NOT NULL,            -- gas of the block's txs (decimal)
    burned               TEXT NOT NULL             -- tx fees burned in the block (padded)
);

-- P-specific facts of every P tx (px_txs holds the shared ones).
CREATE TABLE IF NOT EXISTS p_txs (
    tx_id           TEXT PRIMARY KEY,
    height          BIGINT NOT NULL,               -- block holding the tx (0 for genesis txs)
    status          TEXT NOT NULL,                 -- Committed, Aborted, Processing (proposal before its option block)
    decided_height  BIGINT NOT NULL,               -- block that decided it (option block for proposals)
    burned          TEXT NOT NULL,                 -- fee: AVAX consumed - produced - staked - L1 balance (padded)
    subnet_id       TEXT NOT NULL DEFAULT '',
    node_id         TEXT NOT NULL DEFAULT '',
    validation_id   TEXT NOT NULL DEFAULT '',
    blockchain_id   TEXT NOT NULL DEFAULT ''       -- CreateChainTx: the new chain; L1 conversion: manager chain
);
CREATE INDEX IF NOT EXISTS p_txs_subnet ON p_txs (subnet_id, height);
CREATE INDEX IF NOT EXISTS p_txs_node ON p_txs (node_id, height);
CREATE INDEX IF NOT EXISTS p_txs_validation ON p_txs (validation_id, height);

-- Every staker: primary-network validators and delegators, permissioned subnet
-- validators, elastic-subnet validators/delegators. Pending vs current is
-- start_time vs the tip time; the set history is p_validator_set.
CREATE TABLE IF NOT EXISTS p_stakers (
    tx_id                    TEXT PRIMARY KEY,     -- staker tx
    tx_type                  TEXT NOT NULL,
    kind                     TEXT NOT NULL,        -- VALIDATOR, DELEGATOR, SUBNET_VALIDATOR (permissioned)
    subnet_id                TEXT NOT NULL,
    node_id                  TEXT NOT NULL,
    weight                   TEXT NOT NULL,        -- padded
    stake_asset              TEXT NOT NULL DEFAULT '',
    stake_amount             TEXT NOT NULL,        -- padded sum of stake outputs
    start_time               BIGINT NOT NULL,      -- validating from (post-Durango: accept time)
    end_time                 BIGINT NOT NULL,
    delegation_shares        INTEGER NOT NULL DEFAULT 0, -- validators: fee in millionths (delegationFee % = shares/10000)
    bls_public_key           TEXT NOT NULL DEFAULT '',
    bls_pop                  TEXT NOT NULL DEFAULT '',
    validation_reward_owner  TEXT NOT NULL DEFAULT '', -- validators
    delegation_reward_owner  TEXT NOT NULL DEFAULT '', -- validators: owner of delegation fees
    reward_owner             TEXT NOT NULL DEFAULT '', -- delegators
    validator_tx_id          TEXT NOT NULL DEFAULT '', -- delegators: the validator they delegate to
    potential_reward         TEXT NOT NULL,        -- padded
    accrued_delegatee_reward TEXT NOT NULL,        -- validators: deferred fees of rewarded delegators (padded)
    priority                 INTEGER NOT NULL,     -- avalanchego txs.Priority of the pending staker (promotion order)
    added_height             BIGINT NOT NULL,
    added_time               BIGINT NOT NULL,
    current_height           BIGINT NOT NULL DEFAULT -1, -- joined the current set
    removed_height           BIGINT NOT NULL DEFAULT -1,
    removed_time             BIGINT NOT NULL DEFAULT 0,
    removal                  TEXT NOT NULL DEFAULT '',   -- REWARDED, NOT_REWARDED, REMOVED, EXPIRED
    removal_tx_id            TEXT NOT NULL DEFAULT '',   -- RewardValidatorTx or RemoveSubnetValidatorTx
    reward_amount            TEXT NOT NULL,        -- own reward paid (VALIDATOR / DELEGATOR UTXO), padded
    delegation_fee_amount    TEXT NOT NULL         -- validators: delegation fees paid (VALIDATOR_FEE UTXOs), padded
);
CREATE INDEX IF NOT EXISTS p_stakers_node ON p_stakers (subnet_id, node_id, removed_height);
CREATE INDEX IF NOT EXISTS p_stakers_validator ON p_stakers (validator_tx_id);
CREATE INDEX IF NOT EXISTS p_stakers_active ON p_stakers (removed_height, end_time);
CREATE INDEX IF NOT EXISTS p_stakers_pending ON p_stakers (current_height, start_time);
CREATE INDEX IF NOT EXISTS p_stakers_node_only ON p_stakers (node_id, removed_height);

-- Validator-set history: one row per (subnet, node) per stretch of heights with
-- constant weight and key. Set at height h: from_height <= h AND to_height > h.
-- Primary/elastic subnets: validator + delegators; permissioned subnets: the
-- subnet validator with the node's primary-network key; L1s: active validators,
-- inactive ones summed under the empty node id without key (as avalanchego).
CREATE TABLE IF NOT EXISTS p_validator_set (
    subnet_id   TEXT NOT NULL,
    node_id     TEXT NOT NULL,
    from_height BIGINT NOT NULL,
    to_height   BIGINT NOT NULL,                   -- 9223372036854775807 while open
    weight      TEXT NOT NULL,                     -- padded
    public_key  TEXT NOT NULL,                     -- '' when none
    PRIMARY KEY (subnet_id, node_id, from_height)
);
CREATE INDEX IF NOT EXISTS p_validator_set_at ON p_validator_set (subnet_id, to_height, from_height);

CREATE TABLE IF NOT EXISTS p_subnets (
    subnet_id          TEXT PRIMARY KEY,
    created_tx_id      TEXT NOT NULL,              -- = subnet_id ('' for the primary network)
    created_height     BIGINT NOT NULL,
    created_time       BIGINT NOT NULL,
    owner_threshold    INTEGER NOT NULL,
    owner_locktime     BIGINT NOT NULL,
    owner_addresses    TEXT NOT NULL,              -- JSON array, sorted
    owner_height       BIGINT NOT NULL,            -- last owner change
    transform_tx_id    TEXT NOT NULL DEFAULT '',   -- elastic subnet (TransformSubnetTx)
    current_supply     TEXT NOT NULL DEFAULT '',   -- elastic subnets, padded
    conversion_tx_id   TEXT NOT NULL DEFAULT '',   -- ConvertSubnetToL1Tx
    conversion_id      TEXT NOT NULL DEFAULT '',
    manager_chain_id   TEXT NOT NULL DEFAULT '',
    manager_address    TEXT NOT NULL DEFAULT '',   -- 0x-hex
    converted_height   BIGINT NOT NULL DEFAULT -1,
    converted_time     BIGINT NOT NULL DEFAULT 0
);

-- Owner history (CreateSubnetTx, then each TransferSubnetOwnershipTx).
CREATE TABLE IF NOT EXISTS p_subnet_owners (
    subnet_id  TEXT NOT NULL,
    height     BIGINT NOT NULL,
    tx_id      TEXT NOT NULL,
    threshold  INTEGER NOT NULL,
    locktime   BIGINT NOT NULL,
    addresses  TEXT NOT NULL,
    PRIMARY KEY (subnet_id, height, tx_id)
);

-- Blockchains (genesis X and C, and every CreateChainTx). The P-chain is not listed.
CREATE TABLE IF NOT EXISTS p_blockchains (
    blockchain_id  TEXT PRIMARY KEY,
    name           TEXT NOT NULL,
    subnet_id      TEXT NOT NULL,
    vm_id          TEXT NOT NULL,
    fx_ids         TEXT NOT NULL,                  -- JSON array
    genesis_data   BLOB NOT NULL,
    chain_key      TEXT NOT NULL DEFAULT '',       -- X, C (or a configured key); '' otherwise
    created_height BIGINT NOT NULL,
    created_time   BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS p_blockchains_subnet ON p_blockchains (subnet_id);

-- ACP-77 L1 validators. Balance at a height = end_accumulated_fee - accrued fees
-- (p_block_state.l1_accrued_fees) while active; inactive when end_accumulated_fee = 0.
CREATE TABLE IF NOT EXISTS p_l1_validators (
    validation_id           TEXT PRIMARY KEY,
    subnet_id               TEXT NOT NULL,
    node_id                 TEXT NOT NULL,
    public_key              TEXT NOT NULL,
    weight                  TEXT NOT NULL,         -- padded
    min_nonce               TEXT NOT NULL,         -- padded
    end_accumulated_fee     TEXT NOT NULL,         -- padded; 0 = inactive
    remaining_balance_owner TEXT NOT NULL,
    deactivation_owner      TEXT NOT NULL,
    start_time              BIGINT NOT NULL,
    conversion_index        INTEGER NOT NULL DEFAULT -1, -- initial validators of ConvertSubnetToL1Tx
    created_height          BIGINT NOT NULL,
    created_tx_id           TEXT NOT NULL,
    removed_height          BIGINT NOT NULL DEFAULT -1,
    removed_tx_id           TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS p_l1_validators_subnet ON p_l1_validators (subnet_id, removed_height);
CREATE INDEX IF NOT EXISTS p_l1_validators_fee ON p_l1_validators (removed_height, end_accumulated_fee);

-- Every change of an L1 validator. event: CONVERT, REGISTER, SET_WEIGHT, REMOVE,
-- INCREASE_BALANCE, DISABLE, DEACTIVATE (out of balance). balance is what it had
-- left right after the change.
CREATE TABLE IF NOT EXISTS p_l1_validator_history (
    validation_id       TEXT NOT NULL,
    height              BIGINT NOT NULL,
    seq                 INTEGER NOT NULL,          -- order within the block
    tx_id               TEXT NOT NULL,             -- '' for changes made by time passing
    event               TEXT NOT NULL,
    weight              TEXT NOT NULL,
    balance             TEXT NOT NULL,
    end_accumulated_fee TEXT NOT NULL,
    active              BOOLEAN NOT NULL,
    min_nonce           TEXT NOT NULL,
    timestamp           BIGINT NOT NULL,
    PRIMARY KEY (validation_id, height, seq)
);

-- Proposal txs waiting for their option block (commit or abort) at height + 1.
CREATE TABLE IF NOT EXISTS p_pending_proposals (
    proposal_height  BIGINT PRIMARY KEY,
    proposal_block_id TEXT NOT NULL,
    tx_id            TEXT NOT NULL,
    tx_index         INTEGER NOT NULL,
    block_time       BIGINT NOT NULL
);
