-- /validators (internal/api/data/primary, validatorlist.go) sorted or
-- filtered by delegationCapacity: how much more stake a current primary
-- validator takes, max(0, min(max stake, 5 x own) - own - current
-- delegations). It was computed in Go for every current validator (8,201
-- at x5px) and sorted per request (docs/benchmarks.md, "Locked-stake sums
-- and the capacity sort"). It depends on the row alone, not on the time
-- (the current delegations are kept on it by the P indexer, 0113), so it
-- is an index expression: a page is a walk of this index. The expression
-- is validatorlist.go's capacitySQL, character for character (the planners
-- match it); 3,000,000 AVAX is MaxValidatorStake of every network in
-- avalanchego v1.14.2 (genesis params: mainnet, fuji, local and custom),
-- 5 its MaxValidatorWeightFactor. The literals of the WHERE are the
-- query's (a partial index is used only when the query implies it).
CREATE INDEX IF NOT EXISTS p_validators_capacity ON p_stakers ((CASE WHEN (CASE WHEN CAST(weight AS BIGINT) > 600000000000000 THEN 3000000000000000 - CAST(weight AS BIGINT) ELSE 4 * CAST(weight AS BIGINT) END) - (cur_delegated_hi * 10000000000 + cur_delegated_lo) > 0 THEN (CASE WHEN CAST(weight AS BIGINT) > 600000000000000 THEN 3000000000000000 - CAST(weight AS BIGINT) ELSE 4 * CAST(weight AS BIGINT) END) - (cur_delegated_hi * 10000000000 + cur_delegated_lo) ELSE 0 END), tx_id)
    WHERE kind = 'VALIDATOR' AND removed_height < 0 AND subnet_id = '11111111111111111111111111111111LpoYY';
