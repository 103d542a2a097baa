-- The stakers of a subnet active at the tip (internal/api/data/primary
-- network.go, getNetworkDetails): a range of this index instead of every
-- staker the subnet ever had (p_stakers_node).
CREATE INDEX IF NOT EXISTS p_stakers_subnet_active ON p_stakers (subnet_id, removed_height, start_time);
