package export

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// ErrNotFound: no operation with that id (or not visible to the caller).
var ErrNotFound = fmt.Errorf("export: operation %w", store.ErrNotFound)

// job is one export_jobs row.
type job struct {
	ID         string
	Type       OperationType
	Status     Status
	Spec       string
	Owner      string
	CreatedAt  int64
	UpdatedAt  int64
	Attempt    int64
	Failures   int64
	LeaseOwner string
	LeaseUntil int64 // unix ms
	Code       string
	Message    string
	NextDate   string
	FileName   string
	FileSize   int64
	RowCount   int64
	FinishedAt int64
	LastError  string
}

const jobColumns = `id, op_type, status, spec, owner, created_at, updated_at, attempt, failures, lease_owner,
	lease_until, code, message, next_date, file_name, file_size, row_count, finished_at, last_error`

func scanJob(s interface{ Scan(...any) error }) (*job, error) {
	var j job
	var typ, status string
	if err := s.Scan(&j.ID, &typ, &status, &j.Spec, &j.Owner, &j.CreatedAt, &j.UpdatedAt, &j.Attempt, &j.Failures,
		&j.LeaseOwner, &j.LeaseUntil, &j.Code, &j.Message, &j.NextDate, &j.FileName, &j.FileSize, &j.RowCount,
		&j.FinishedAt, &j.LastError); err != nil {
		return nil, err
	}
	j.Type, j.Status = OperationType(typ), Status(status)
	return &j, nil
}

// jobs is the job table.
type jobs struct{ db *store.DB }

func (s jobs) insert(ctx context.Context, j *job) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO export_jobs (id, op_type, status, spec, owner, created_at, updated_at)
		VALUES ($1,$2,$3,$4,$5,$6,$7)`, j.ID, string(j.Type), string(j.Status), j.Spec, j.Owner, j.CreatedAt, j.UpdatedAt)
	if err != nil {
		return fmt.Errorf("export: create job: %w", err)
	}
	return nil
}

func (s jobs) get(ctx context.Context, id string) (*job, error) {
	j, err := scanJob(s.db.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM export_jobs WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("export: read job %s: %w", id, err)
	}
	return j, nil
}

// claim takes the oldest RUNNING job whose lease has passed for worker,
// leasing it until leaseUntil (unix ms). The outer WHERE repeats the
// condition: on PostgreSQL a concurrent claimer of the same row re-checks it
// after the winner commits and updates nothing, so a job has one holder.
// A claim of a job that still names a lease owner means its last worker
// vanished without releasing it: that counts as a failed run.
func (s jobs) claim(ctx context.Context, worker string, now time.Time, lease time.Duration) (*job, error) {
	nowMs := now.UnixMilli()
	// RETURNING needs the writer (SQLite's read pool is read-only).
	j, err := scanJob(s.db.WriterDB().QueryRowContext(ctx, `UPDATE export_jobs SET attempt = attempt + 1,
		failures = failures + CASE WHEN lease_owner <> '' THEN 1 ELSE 0 END,
		lease_owner = $1, lease_until = $2, updated_at = $3
		WHERE id = (SELECT id FROM export_jobs WHERE status = 'RUNNING' AND lease_until < $4
			ORDER BY created_at, id LIMIT 1)
		AND status = 'RUNNING' AND lease_until < $4
		RETURNING `+jobColumns, worker, nowMs+lease.Milliseconds(), now.Unix(), nowMs))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("export: claim job: %w", err)
	}
	return j, nil
}

// renew extends the lease of attempt; false when the job is no longer ours.
func (s jobs) renew(ctx context.Context, id string, attempt, leaseUntil int64) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE export_jobs SET lease_until = $1
		WHERE id = $2 AND attempt = $3 AND status = 'RUNNING'`, leaseUntil, id, attempt)
	if err != nil {
		return false, fmt.Errorf("export: renew lease of %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("export: renew lease of %s: %w", id, err)
	}
	return n == 1, nil
}

// finish records the outcome of attempt; false when another attempt owns
// the job now (the caller then discards its file).
func (s jobs) finish(ctx context.Context, j *job, attempt int64) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE export_jobs SET status = $1, code = $2, message = $3, next_date = $4,
		file_name = $5, file_size = $6, row_count = $7, finished_at = $8, updated_at = $8, lease_owner = '',
		lease_until = 0, last_error = $9, failures = $10
		WHERE id = $11 AND attempt = $12 AND status = 'RUNNING'`,
		string(j.Status), j.Code, j.Message, j.NextDate, j.FileName, j.FileSize, j.RowCount, j.FinishedAt,
		j.LastError, j.Failures, j.ID, attempt)
	if err != nil {
		return false, fmt.Errorf("export: finish job %s: %w", j.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("export: finish job %s: %w", j.ID, err)
	}
	return n == 1, nil
}

// release gives a job back after a failed or interrupted run of attempt:
// claimable again from retryAt (unix ms). failed counts the run.
func (s jobs) release(ctx context.Context, id string, attempt int64, failed bool, cause string, retryAt, nowSec int64) error {
	inc := 0
	if failed {
		inc = 1
	}
	_, err := s.db.ExecContext(ctx, `UPDATE export_jobs SET lease_owner = '', lease_until = $1, failures = failures + $2,
		last_error = CASE WHEN $3 = '' THEN last_error ELSE $3 END, updated_at = $4
		WHERE id = $5 AND attempt = $6 AND status = 'RUNNING'`, retryAt, inc, cause, nowSec, id, attempt)
	if err != nil {
		return fmt.Errorf("export: release job %s: %w", id, err)
	}
	return nil
}

// expired lists finished jobs that finished before cutoff (unix s).
func (s jobs) expired(ctx context.Context, cutoff int64, limit int) ([]*job, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+jobColumns+` FROM export_jobs
		WHERE finished_at > 0 AND finished_at < $1 AND status <> 'RUNNING' ORDER BY finished_at LIMIT $2`, cutoff, limit)
	if err != nil {
		return nil, fmt.Errorf("export: list expired jobs: %w", err)
	}
	defer rows.Close()
	var out []*job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("export: list expired jobs: %w", err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("export: list expired jobs: %w", err)
	}
	return out, nil
}

func (s jobs) delete(ctx context.Context, id string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM export_jobs WHERE id = $1 AND status <> 'RUNNING'`, id); err != nil {
		return fmt.Errorf("export: delete job %s: %w", id, err)
	}
	return nil
}

// known returns, of ids, those with a job row.
func (s jobs) known(ctx context.Context, ids []string) (map[string]*job, error) {
	out := map[string]*job{}
	for len(ids) > 0 {
		n := min(len(ids), 200)
		args := make([]any, n)
		for i := range n {
			args[i] = ids[i]
		}
		rows, err := s.db.QueryContext(ctx, `SELECT `+jobColumns+` FROM export_jobs WHERE id IN (`+placeholders(1, n)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("export: look up jobs: %w", err)
		}
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("export: look up jobs: %w", err)
			}
			out[j.ID] = j
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("export: look up jobs: %w", err)
		}
		ids = ids[n:]
	}
	return out, nil
}

func placeholders(first, n int) string {
	b := make([]byte, 0, n*4)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '$')
		b = fmt.Appendf(b, "%d", first+i)
	}
	return string(b)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
