-- Bulk catch-up (internal/store/deferred.go, docs/operations.md "Bulk
-- catch-up"): the secondary indexes of deferrable.txt that were dropped while
-- ingestion was far behind the tip, with the definition to build them from
-- (the index's own CREATE statement as the database printed it). A row is
-- removed in the transaction that builds its index (SQLite) or after the
-- build committed (PostgreSQL, CONCURRENTLY): a crash leaves the row, and the
-- next start resumes.
CREATE TABLE IF NOT EXISTS deferred_indexes (
    name        TEXT PRIMARY KEY,
    table_name  TEXT NOT NULL,
    definition  TEXT NOT NULL,
    deferred_at BIGINT NOT NULL
);
