-- PostgreSQL: a row of 0190's evm_token_balance_buckets is updated in place
-- by each batch that changes its key in its bucket, no index holding the
-- updated columns; room left in each page keeps those updates on the page
-- (HOT), as for the current balances (0155). Before the fill (_rows), so
-- that its pages leave the room.
ALTER TABLE evm_token_balance_buckets SET (fillfactor = 70);
