-- PostgreSQL only: raw block bodies are already S2-compressed by the indexer
-- (raw_blocks.encoding, RawS2), and TOAST's lz4 (migration 0016) saved 3.7%
-- of their bytes on the sustained benchmark's base for a compression attempt
-- of every body on the server and a decompression on every read. EXTERNAL
-- stores them out of line without that second compression (docs/benchmarks.md
-- "Twelfth session (s12-pgingest)"). New values only; no rewrite.
ALTER TABLE raw_blocks ALTER COLUMN body SET STORAGE EXTERNAL;
