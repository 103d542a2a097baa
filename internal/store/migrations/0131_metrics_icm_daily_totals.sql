-- Running totals of metrics_icm_daily (issue #21 part B follow-up), written by
-- internal/metrics in the block's own transaction and rebuilt by `reindex`:
-- per key of metrics_icm_daily (a pair, or an aggregate with '' for every
-- blockchain on a side) and per UTC day its count changed on, the messages
-- counted up to the end of that day. The messages before a day start t are the row
-- with the latest bucket < t (0 without one), so a summary window of any
-- length is two point reads per group, whatever the history.
CREATE TABLE IF NOT EXISTS metrics_icm_daily_totals (
    src       TEXT NOT NULL,
    dst       TEXT NOT NULL,
    bucket    BIGINT NOT NULL,
    messages  BIGINT NOT NULL,
    PRIMARY KEY (src, dst, bucket)
) WITHOUT ROWID;

-- The totals of the daily counts already indexed.
INSERT INTO metrics_icm_daily_totals (src, dst, bucket, messages)
SELECT src, dst, bucket, SUM(messages) OVER (PARTITION BY src, dst ORDER BY bucket)
FROM metrics_icm_daily WHERE true ON CONFLICT (src, dst, bucket) DO NOTHING;

-- One row, locked (upserted) by a batch before it changes the totals: a new
-- total row copies the one before it, so on PostgreSQL two chains' ingest
-- transactions change the totals one after the other (under READ COMMITTED
-- the second then reads the first's rows).
CREATE TABLE IF NOT EXISTS metrics_icm_totals_lock (
    id  INTEGER PRIMARY KEY
);
