-- Indexes for the primary-network data API (internal/api/data/primary).
-- Its listings are keyset pages; each index below lets one of them walk its
-- order directly instead of sorting.

-- UTXOs by address with includeSpent=true (spent and unspent in one order),
-- and historical rewards by address: by time, and by amount.
CREATE INDEX IF NOT EXISTS utxo_addresses_any_time ON utxo_addresses (address, chain_key, created_time, utxo_id);
CREATE INDEX IF NOT EXISTS utxo_addresses_any_amount ON utxo_addresses (address, chain_key, amount, utxo_id);

-- Reward UTXOs (a small part of all UTXOs), in reward-time order.
CREATE INDEX IF NOT EXISTS utxos_rewards ON utxos (created_time, utxo_id) WHERE reward_type <> '';

-- Validation records of a node, by start time.
CREATE INDEX IF NOT EXISTS p_stakers_node_start ON p_stakers (node_id, start_time, tx_id);
