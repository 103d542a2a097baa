package api

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// RateWindow is the length of a rate-limit window: budgets are per minute.
const RateWindow = time.Minute

// Decision is the outcome of charging a request.
type Decision struct {
	Allowed   bool
	Limit     int64         // the subject's budget per window
	Remaining int64         // what is left in this window after the charge (or without it, when denied)
	Reset     time.Duration // until the window ends and the budget is whole again
}

// Limiter charges compute units to a subject (a key or a client IP) in fixed
// one-minute windows. Take never lets a window's charges exceed limit: a
// request that would is denied and charges nothing.
type Limiter interface {
	Take(ctx context.Context, subject string, cost, limit int64) (Decision, error)
}

// NewLimiter picks the limiter for a store: on PostgreSQL the counters are
// shared by every replica through the database, on SQLite (one process owns
// the file) they stay in memory.
func NewLimiter(db *store.DB, now func() time.Time) Limiter {
	if now == nil {
		now = time.Now
	}
	if db != nil && db.Dialect() == store.Postgres {
		return NewSQLLimiter(db, now)
	}
	return NewMemoryLimiter(now)
}

// window returns the start of now's window (unix seconds) and the time left
// in it. Truncate counts from the zero time, which is minute-aligned with
// the Unix epoch, so every replica agrees on the windows.
func window(now time.Time) (int64, time.Duration) {
	start := now.Truncate(RateWindow)
	return start.Unix(), start.Add(RateWindow).Sub(now)
}

// MemoryLimiter is the in-process limiter: exact under concurrency (one
// mutex), and it forgets everything when a new window starts.
type MemoryLimiter struct {
	now     func() time.Time
	mu      sync.Mutex
	current int64
	used    map[string]int64
}

// maxSubjects bounds a window's memory; past it, new subjects share one
// overflow counter (so a flood of addresses is still limited, together).
const maxSubjects = 1 << 20

// NewMemoryLimiter returns an in-process limiter on clock now.
func NewMemoryLimiter(now func() time.Time) *MemoryLimiter {
	if now == nil {
		now = time.Now
	}
	return &MemoryLimiter{now: now, used: map[string]int64{}}
}

// Take implements Limiter.
func (l *MemoryLimiter) Take(_ context.Context, subject string, cost, limit int64) (Decision, error) {
	start, reset := window(l.now())
	l.mu.Lock()
	defer l.mu.Unlock()
	if start != l.current {
		l.current = start
		clear(l.used)
	}
	used, ok := l.used[subject]
	if !ok && len(l.used) >= maxSubjects {
		subject = "\x00overflow"
		used = l.used[subject]
	}
	d := Decision{Limit: limit, Reset: reset}
	if used+cost <= limit {
		used += cost
		l.used[subject] = used
		d.Allowed = true
	}
	d.Remaining = max(limit-used, 0)
	return d, nil
}

// SQLLimiter keeps the counters in the rate_windows table, so API replicas
// sharing one PostgreSQL database share every budget. One statement per
// request charges atomically: the conditional upsert below either adds the
// cost to the window's row, creating it, or (the WHERE failing) changes
// nothing and returns no row; concurrent requests serialise on the row lock,
// so a window never exceeds its limit. Windows are aligned to the minute on
// each replica's clock (keep clocks in sync, as NTP does).
type SQLLimiter struct {
	db          *store.DB
	now         func() time.Time
	lastCleanup atomic.Int64
}

// NewSQLLimiter returns a database-backed limiter (works on both backends).
func NewSQLLimiter(db *store.DB, now func() time.Time) *SQLLimiter {
	if now == nil {
		now = time.Now
	}
	return &SQLLimiter{db: db, now: now}
}

// Take implements Limiter.
func (l *SQLLimiter) Take(ctx context.Context, subject string, cost, limit int64) (Decision, error) {
	start, reset := window(l.now())
	d := Decision{Limit: limit, Reset: reset}
	w := l.db.WriterDB()
	var used int64
	var err error
	if cost <= limit {
		err = w.QueryRowContext(ctx, `INSERT INTO rate_windows (subject, window_start, used) VALUES ($1, $2, $3)
			ON CONFLICT (subject, window_start) DO UPDATE SET used = rate_windows.used + excluded.used
			WHERE rate_windows.used + excluded.used <= $4
			RETURNING used`, subject, start, cost, limit).Scan(&used)
		if err == nil {
			d.Allowed = true
		}
	} else {
		err = sql.ErrNoRows // can never fit: charge nothing
	}
	if errors.Is(err, sql.ErrNoRows) {
		err = w.QueryRowContext(ctx, `SELECT used FROM rate_windows WHERE subject = $1 AND window_start = $2`, subject, start).Scan(&used)
		if errors.Is(err, sql.ErrNoRows) {
			used, err = 0, nil
		}
	}
	if err != nil {
		return Decision{}, fmt.Errorf("rate limit: %w", err)
	}
	d.Remaining = max(limit-used, 0)
	l.cleanup(ctx, start)
	return d, nil
}

// cleanup drops finished windows, once per window per replica.
func (l *SQLLimiter) cleanup(ctx context.Context, start int64) {
	last := l.lastCleanup.Load()
	if last >= start || !l.lastCleanup.CompareAndSwap(last, start) {
		return
	}
	// Best effort: a failure leaves rows for the next window's cleanup.
	_, _ = l.db.ExecContext(ctx, `DELETE FROM rate_windows WHERE window_start < $1`, start)
}
