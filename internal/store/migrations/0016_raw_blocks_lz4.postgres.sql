-- PostgreSQL only: raw block bodies (tens of KB of JSON or codec bytes each)
-- compressed with lz4 instead of pglz when TOASTed. pglz_compress was 15% of
-- the server's CPU while ingesting EVM blocks; lz4 cut the server's CPU by
-- 15-20% (docs/benchmarks.md "Ingestion"). New values only; no rewrite. A
-- server built without lz4 keeps pglz.
DO $$ BEGIN ALTER TABLE raw_blocks ALTER COLUMN body SET COMPRESSION lz4; EXCEPTION WHEN feature_not_supported THEN NULL; END $$;
