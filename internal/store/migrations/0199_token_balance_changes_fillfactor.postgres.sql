-- PostgreSQL: as 0190's (a row is updated by each batch that changes its key
-- in its bucket; the room keeps the updates on the page), before the fill.
ALTER TABLE evm_token_balance_buckets SET (fillfactor = 70);
