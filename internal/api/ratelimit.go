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

// RateWindow is the period budgets are given for: a subject may spend its
// whole budget at once, and it refills continuously over one RateWindow.
const RateWindow = time.Minute

// Decision is the outcome of charging a request.
type Decision struct {
	Allowed   bool
	Limit     int64 // the subject's budget per RateWindow
	Remaining int64 // what could be spent now, after the charge (or without it, when denied)
	// Reset: allowed, until the budget is whole again; denied, until this
	// request would fit (the Retry-After).
	Reset time.Duration
}

// Limiter charges compute units to a subject (a key or a client IP). The
// algorithm is GCRA (the generic cell rate algorithm, a leaky bucket kept
// as one timestamp per subject): the budget refills at limit per RateWindow
// and holds at most limit, so no interval of length t admits more than
// limit*(1 + t/RateWindow) CU. The fixed minute windows it replaces let
// twice the budget through across a window boundary (issue #19). A request
// that does not fit is denied and charges nothing.
type Limiter interface {
	Take(ctx context.Context, subject string, cost, limit int64) (Decision, error)
}

// NewLimiter picks the limiter for a store: on PostgreSQL the state is
// shared by every replica through the database, on SQLite (one process owns
// the file) it stays in memory.
func NewLimiter(db *store.DB, now func() time.Time) Limiter {
	if now == nil {
		now = time.Now
	}
	if db != nil && db.Dialect() == store.Postgres {
		return NewSQLLimiter(db, now)
	}
	return NewMemoryLimiter(now)
}

// gcra is the arithmetic both limiters share, in microseconds.
type gcra struct {
	now, period, inc int64
}

func newGCRA(now time.Time, cost, limit int64) gcra {
	period := RateWindow.Microseconds()
	g := gcra{now: now.UnixMicro(), period: period}
	if limit > 0 {
		// Rounded up: rounding must never grant more than the budget.
		g.inc = (cost*period + limit - 1) / limit
	} else {
		g.inc = period + 1
	}
	return g
}

// next is the subject's arrival time after charging this request, and
// whether that fits in the budget (tat 0: a subject never seen).
func (g gcra) next(tat int64) (int64, bool) {
	n := max(tat, g.now) + g.inc
	return n, n-g.now <= g.period
}

// decide builds the Decision from the arrival time after the request.
func (g gcra) decide(tat int64, allowed bool, limit int64) Decision {
	d := Decision{Allowed: allowed, Limit: limit}
	ahead := max(tat-g.now, 0) // spent budget, as time to refill it
	if limit > 0 {
		d.Remaining = max((g.period-ahead)*limit/g.period, 0)
	}
	d.Reset = time.Duration(ahead) * time.Microsecond
	if !allowed && g.inc <= g.period {
		// When this request will fit.
		d.Reset = time.Duration(max(tat, g.now)+g.inc-g.period-g.now) * time.Microsecond
	}
	return d
}

// MemoryLimiter is the in-process limiter: exact under concurrency (one
// mutex), one timestamp per subject, forgotten once its budget is whole.
type MemoryLimiter struct {
	now       func() time.Time
	mu        sync.Mutex
	tat       map[string]int64
	lastSweep int64
}

// maxSubjects bounds memory; past it, new subjects share one overflow
// state (so a flood of addresses is still limited, together).
const maxSubjects = 1 << 20

const overflowSubject = "\x00overflow"

// NewMemoryLimiter returns an in-process limiter on clock now.
func NewMemoryLimiter(now func() time.Time) *MemoryLimiter {
	if now == nil {
		now = time.Now
	}
	return &MemoryLimiter{now: now, tat: map[string]int64{}}
}

// Take implements Limiter.
func (l *MemoryLimiter) Take(_ context.Context, subject string, cost, limit int64) (Decision, error) {
	g := newGCRA(l.now(), cost, limit)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(g)
	tat, ok := l.tat[subject]
	if !ok && len(l.tat) >= maxSubjects {
		subject = overflowSubject
		tat = l.tat[subject]
	}
	n, allowed := g.next(tat)
	if allowed {
		l.tat[subject] = n
		tat = n
	}
	return g.decide(tat, allowed, limit), nil
}

// sweep forgets subjects whose budget is whole again, once per RateWindow
// (an absent subject and a refilled one are the same).
func (l *MemoryLimiter) sweep(g gcra) {
	if g.now-l.lastSweep < g.period && len(l.tat) < maxSubjects {
		return
	}
	l.lastSweep = g.now
	for s, tat := range l.tat {
		if tat <= g.now {
			delete(l.tat, s)
		}
	}
}

// SQLLimiter keeps each subject's arrival time in the rate_gcra table, so
// API replicas sharing one PostgreSQL database share every budget. One
// statement per request charges atomically: the conditional upsert below
// either advances the row (creating it) or, the WHERE failing, changes
// nothing and returns no row; concurrent requests serialise on the row lock,
// so the budget is never exceeded. Time is each replica's clock (keep
// clocks in sync, as NTP does: a replica ahead by s seconds grants up to
// s/60 of a budget more).
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
	g := newGCRA(l.now(), cost, limit)
	w := l.db.WriterDB()
	var tat int64
	var err error
	allowed := false
	if g.inc <= g.period {
		// CASE instead of GREATEST/MAX: one statement for both dialects.
		err = w.QueryRowContext(ctx, `INSERT INTO rate_gcra (subject, tat) VALUES ($1, CAST($2 AS BIGINT) + CAST($3 AS BIGINT))
			ON CONFLICT (subject) DO UPDATE
			SET tat = (CASE WHEN rate_gcra.tat > CAST($2 AS BIGINT) THEN rate_gcra.tat ELSE CAST($2 AS BIGINT) END) + CAST($3 AS BIGINT)
			WHERE (CASE WHEN rate_gcra.tat > CAST($2 AS BIGINT) THEN rate_gcra.tat ELSE CAST($2 AS BIGINT) END) + CAST($3 AS BIGINT) - CAST($2 AS BIGINT) <= CAST($4 AS BIGINT)
			RETURNING tat`, subject, g.now, g.inc, g.period).Scan(&tat)
		if err == nil {
			allowed = true
		}
	} else {
		err = sql.ErrNoRows // can never fit: charge nothing
	}
	if errors.Is(err, sql.ErrNoRows) {
		err = w.QueryRowContext(ctx, `SELECT tat FROM rate_gcra WHERE subject = $1`, subject).Scan(&tat)
		if errors.Is(err, sql.ErrNoRows) {
			tat, err = 0, nil
		}
	}
	if err != nil {
		return Decision{}, fmt.Errorf("rate limit: %w", err)
	}
	l.cleanup(ctx, g)
	return g.decide(tat, allowed, limit), nil
}

// cleanup drops subjects whose budget is whole again, once per RateWindow
// per replica.
func (l *SQLLimiter) cleanup(ctx context.Context, g gcra) {
	last := l.lastCleanup.Load()
	if g.now-last < g.period || !l.lastCleanup.CompareAndSwap(last, g.now) {
		return
	}
	// Best effort: a failure leaves rows for the next cleanup.
	_, _ = l.db.ExecContext(ctx, `DELETE FROM rate_gcra WHERE tat <= $1`, g.now)
}
