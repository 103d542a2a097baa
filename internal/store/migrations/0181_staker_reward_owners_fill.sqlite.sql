-- Fills 0180's p_staker_reward_owners from the existing p_stakers rows: a
-- scan of p_stakers per owner column, each owner's JSON
-- ({"locktime":..,"threshold":..,"addresses":[..]}, internal/decode/pchain
-- rows.go Owner) expanded by json_each. '' (no owner) becomes NULL, which
-- expands to no rows.
INSERT INTO p_staker_reward_owners (address, start_time, tx_id)
SELECT a.value, s.start_time, s.tx_id
FROM p_stakers s, json_each(NULLIF(s.validation_reward_owner, ''), '$.addresses') a
UNION ALL
SELECT a.value, s.start_time, s.tx_id
FROM p_stakers s, json_each(NULLIF(s.reward_owner, ''), '$.addresses') a
WHERE true
ON CONFLICT DO NOTHING;
