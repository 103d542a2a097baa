-- Transaction export operations (internal/export). A job is a row; the worker
-- pools of every replica claim RUNNING jobs whose lease has expired with one
-- conditional UPDATE, so a job runs on one worker at a time and a crashed
-- worker's job is taken over once its lease runs out.
CREATE TABLE IF NOT EXISTS export_jobs (
    id           TEXT PRIMARY KEY,             -- operationId (UUID)
    op_type      TEXT NOT NULL,                -- OperationType
    status       TEXT NOT NULL,                -- RUNNING, COMPLETED, COMPLETED_WITH_WARNING, FAILED
    spec         TEXT NOT NULL,                -- JSON of the validated request (export.Spec)
    owner        TEXT NOT NULL DEFAULT '',     -- API key id of the creator; only it reads the operation
    created_at   BIGINT NOT NULL,              -- unix seconds
    updated_at   BIGINT NOT NULL,              -- unix seconds
    attempt      INTEGER NOT NULL DEFAULT 0,   -- claims so far: fences finishing writes, names the files
    failures     INTEGER NOT NULL DEFAULT 0,   -- runs that failed or whose worker vanished
    lease_owner  TEXT NOT NULL DEFAULT '',     -- worker holding the job, '' when none
    lease_until  BIGINT NOT NULL DEFAULT 0,    -- unix milliseconds; claimable once passed
    code         TEXT NOT NULL DEFAULT '',     -- metadata.code: WarnTruncatedExport, ErrInvalidRequest, ErrInternal
    message      TEXT NOT NULL DEFAULT '',
    next_date    TEXT NOT NULL DEFAULT '',     -- YYYY-MM-DD to continue a truncated export from
    file_name    TEXT NOT NULL DEFAULT '',     -- the CSV in the export directory, once completed
    file_size    BIGINT NOT NULL DEFAULT 0,
    row_count    BIGINT NOT NULL DEFAULT 0,
    finished_at  BIGINT NOT NULL DEFAULT 0,    -- unix seconds; retention counts from here
    last_error   TEXT NOT NULL DEFAULT ''      -- cause of the last failed run (operators' eyes only)
);
CREATE INDEX IF NOT EXISTS export_jobs_claim ON export_jobs (status, lease_until, created_at);
CREATE INDEX IF NOT EXISTS export_jobs_finished ON export_jobs (finished_at);
