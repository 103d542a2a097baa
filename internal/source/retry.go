package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Retry is the retry policy shared by the clients: exponential backoff with
// jitter, for errors Classify accepts, until the context ends (or
// MaxAttempts). The zero value is usable.
type Retry struct {
	// Initial is the backoff before the second attempt (default 250ms); it
	// doubles per attempt up to Max (default 15s). Each wait is drawn
	// uniformly from [d/2, d].
	Initial, Max time.Duration
	// MaxAttempts bounds the attempts; 0 retries until the context ends.
	MaxAttempts int
	// MaxBadAnswers bounds the attempts in a row that end in a malformed or
	// inconsistent answer (default 6: about 8 s of backoff; negative: no
	// bound). A node that keeps giving a wrong answer is reported to the
	// caller instead of being asked forever; transport failures are bounded
	// by MaxAttempts and the context only.
	MaxBadAnswers int
	// MaxElapsed bounds the time spent retrying a call that keeps failing
	// (default 30 s; negative: until the context ends): the caller learns
	// that the node is unreachable and says so once, instead of every call
	// retrying silently forever.
	MaxElapsed time.Duration
	// AttemptTimeout bounds one attempt, so a hung connection is retried
	// instead of waited on (default 60s; negative: no bound).
	AttemptTimeout time.Duration
	// Logger receives one DEBUG line per retry (default slog.Default()): the
	// callers log state changes (a chain stalled, resumed) once.
	Logger *slog.Logger
	// Classify says whether an error is worth retrying (default IsRetryable).
	Classify func(error) bool
	// Observe, when set, is told of every attempt: the call's name, how
	// long it took and its error (the node call metrics, internal/obs).
	Observe func(op string, took time.Duration, err error)
}

const (
	defaultMaxElapsed     = 30 * time.Second
	defaultMaxBadAnswers  = 6
	defaultInitial        = 250 * time.Millisecond
	defaultMax            = 15 * time.Second
	defaultAttemptTimeout = 60 * time.Second
)

func (r Retry) withDefaults() Retry {
	if r.Initial <= 0 {
		r.Initial = defaultInitial
	}
	if r.Max <= 0 {
		r.Max = defaultMax
	}
	if r.Max < r.Initial {
		r.Max = r.Initial
	}
	if r.MaxElapsed == 0 {
		r.MaxElapsed = defaultMaxElapsed
	}
	if r.MaxBadAnswers == 0 {
		r.MaxBadAnswers = defaultMaxBadAnswers
	}
	if r.AttemptTimeout == 0 {
		r.AttemptTimeout = defaultAttemptTimeout
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	if r.Classify == nil {
		r.Classify = IsRetryable
	}
	return r
}

// Backoff returns the wait after the given failed attempt (1-based).
func (r Retry) Backoff(attempt int) time.Duration {
	r = r.withDefaults()
	d := r.Initial
	for i := 1; i < attempt && d < r.Max; i++ {
		if d > r.Max/2 {
			d = r.Max
			break
		}
		d *= 2
	}
	if d > r.Max {
		d = r.Max
	}
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(d-half)+1))
}

// Do runs fn until it succeeds, fails with an error not worth retrying, or
// ctx ends. op names the call in logs and errors (e.g. the JSON-RPC method).
// The error returned wraps fn's last error and, when the context ended,
// ctx.Err().
func (r Retry) Do(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	r = r.withDefaults()
	// last is the latest failure not caused by ctx ending, reported when
	// giving up: "deadline exceeded" alone would hide why.
	var last error
	giveUp := func(attempts int) error {
		if last == nil {
			return fmt.Errorf("%s: %w", op, ctx.Err())
		}
		return fmt.Errorf("%s: giving up after %d attempts: %w (last error: %w)", op, attempts, ctx.Err(), last)
	}
	bad := 0 // bad answers in a row
	start := time.Now()
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return giveUp(attempt - 1)
		}
		err := r.attempt(ctx, op, fn)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			if last == nil {
				last = err
			}
			return giveUp(attempt)
		}
		last = err
		if !r.Classify(err) {
			return fmt.Errorf("%s: %w", op, err)
		}
		if r.MaxAttempts > 0 && attempt >= r.MaxAttempts {
			return fmt.Errorf("%s: giving up after %d attempts: %w", op, attempt, err)
		}
		if errors.Is(err, ErrMalformed) || errors.Is(err, ErrInconsistent) {
			bad++
		} else {
			bad = 0
		}
		if r.MaxBadAnswers > 0 && bad >= r.MaxBadAnswers {
			return fmt.Errorf("%s: giving up after %d bad answers in a row: %w", op, bad, err)
		}
		wait := r.Backoff(attempt)
		if r.MaxElapsed > 0 && time.Since(start)+wait > r.MaxElapsed {
			return fmt.Errorf("%s: giving up after %d attempts in %s: %w", op, attempt, time.Since(start).Round(time.Millisecond), err)
		}
		r.Logger.LogAttrs(ctx, slog.LevelDebug, "source: retrying call",
			slog.String("method", op), slog.Int("attempt", attempt),
			slog.Duration("backoff", wait), slog.String("error", err.Error()))
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return giveUp(attempt)
		}
	}
}

func (r Retry) attempt(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	if r.AttemptTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.AttemptTimeout)
		defer cancel()
	}
	if r.Observe == nil {
		return fn(ctx)
	}
	start := time.Now()
	err := fn(ctx)
	r.Observe(op, time.Since(start), err)
	return err
}

// RetryValue is Do for functions returning a value.
func RetryValue[T any](ctx context.Context, r Retry, op string, fn func(ctx context.Context) (T, error)) (T, error) {
	var out T
	err := r.Do(ctx, op, func(ctx context.Context) error {
		v, err := fn(ctx)
		if err != nil {
			return err
		}
		out = v
		return nil
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}
