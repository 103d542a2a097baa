-- Rate limits as GCRA (issue #19): one row per subject (key or client IP)
-- holding its theoretical arrival time, in unix microseconds. A subject's
-- budget refills continuously, so no window boundary lets twice the budget
-- through. rate_windows (0010) is kept for replicas of older versions
-- during a rolling upgrade; nothing reads it any more.
CREATE TABLE IF NOT EXISTS rate_gcra (
    subject TEXT PRIMARY KEY,
    tat     BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS rate_gcra_tat ON rate_gcra (tat);
