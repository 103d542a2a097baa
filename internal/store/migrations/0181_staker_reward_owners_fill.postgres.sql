-- Fills 0180's p_staker_reward_owners from the existing p_stakers rows: a
-- scan of p_stakers per owner column, each owner's JSON
-- ({"locktime":..,"threshold":..,"addresses":[..]}, internal/decode/pchain
-- rows.go Owner) expanded by jsonb_array_elements_text. '' (no owner)
-- becomes NULL, which expands to no rows.
INSERT INTO p_staker_reward_owners (address, start_time, tx_id)
SELECT a.address, s.start_time, s.tx_id
FROM p_stakers s CROSS JOIN LATERAL jsonb_array_elements_text(NULLIF(s.validation_reward_owner, '')::jsonb -> 'addresses') AS a(address)
UNION ALL
SELECT a.address, s.start_time, s.tx_id
FROM p_stakers s CROSS JOIN LATERAL jsonb_array_elements_text(NULLIF(s.reward_owner, '')::jsonb -> 'addresses') AS a(address)
ON CONFLICT DO NOTHING;
