-- Rolling-window distinct counts of the Metrics API v2 (issue #21 part A; internal/metrics).
-- The newest time (unix milliseconds) each address played each role: the
-- distinct addresses of a rolling window ending at the newest block are the
-- index range last_ms >= the window's start, counted without reading the
-- window's per-interval sets.
CREATE TABLE IF NOT EXISTS metrics_evm_last (
    chain_key  TEXT NOT NULL,
    role       INTEGER NOT NULL,
    address    BLOB NOT NULL,
    last_ms    BIGINT NOT NULL,
    PRIMARY KEY (chain_key, role, address)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS metrics_evm_last_time ON metrics_evm_last (chain_key, role, last_ms);
