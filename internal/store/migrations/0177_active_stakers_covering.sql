-- getNetworkDetails (internal/api/data/primary network.go) sums the stake
-- and potential reward of the primary network's active stakers by kind: at
-- five million UTXOs (issue #22, docs/benchmarks.md "Five million rows"),
-- 22,000 active stakers read one table row each through 0031's index, 16 ms
-- of CPU per request. This index holds what the sums and the version
-- distribution read, with kind before the range so that each kind is one
-- walk and the grouping needs no sort: 3 ms of CPU. Same name and leading
-- column as 0031's, which it replaces (no other query reads it).
DROP INDEX IF EXISTS p_stakers_subnet_active;
CREATE INDEX IF NOT EXISTS p_stakers_subnet_active ON p_stakers (subnet_id, kind, removed_height, start_time, stake_amount, potential_reward, node_id);
