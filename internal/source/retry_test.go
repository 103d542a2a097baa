package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	r := Retry{Initial: 100 * time.Millisecond, Max: time.Second}
	for attempt := 1; attempt <= 12; attempt++ {
		base := 100 * time.Millisecond << (attempt - 1)
		if base > time.Second || attempt > 5 {
			base = time.Second
		}
		for i := 0; i < 50; i++ {
			d := r.Backoff(attempt)
			if d < base/2 || d > base {
				t.Fatalf("attempt %d: backoff %v outside [%v, %v]", attempt, d, base/2, base)
			}
		}
	}
	huge := Retry{Initial: time.Second, Max: time.Duration(1<<63 - 1)}
	for attempt := 1; attempt < 200; attempt += 7 {
		if d := huge.Backoff(attempt); d <= 0 {
			t.Fatalf("attempt %d: backoff %v overflowed", attempt, d)
		}
	}
	if d := (Retry{}).Backoff(1); d < defaultInitial/2 || d > defaultInitial {
		t.Fatalf("default first backoff %v", d)
	}
}

func TestIsRetryable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"rpc error", &RPCError{Code: -32000, Message: "not found"}, false},
		{"wrapped rpc error", fmt.Errorf("x: %w", &RPCError{Code: -32601}), false},
		{"500", &HTTPError{StatusCode: 500}, true},
		{"503 wrapped", fmt.Errorf("x: %w", &HTTPError{StatusCode: 503}), true},
		{"429", &HTTPError{StatusCode: 429}, true},
		{"408", &HTTPError{StatusCode: 408}, true},
		{"404", &HTTPError{StatusCode: 404}, false},
		{"401", &HTTPError{StatusCode: 401}, false},
		{"malformed", fmt.Errorf("%w: x", ErrMalformed), true},
		{"inconsistent", fmt.Errorf("%w: x", ErrInconsistent), true},
		{"transport", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{"eof", io.ErrUnexpectedEOF, true},
		{"attempt timeout", fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{"canceled", context.Canceled, false},
		{"permanent", Permanent(fmt.Errorf("%w: x", ErrMalformed)), false},
	}
	for _, tt := range tests {
		if got := IsRetryable(tt.err); got != tt.want {
			t.Errorf("%s: IsRetryable = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestIsNotFound(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&RPCError{Code: -32000, Message: "couldn't get block at height 1041: not found"}, true},
		{&RPCError{Code: -32000, Message: "could not find tx 2h52eVzs934z3GB47UArpCwLZ8L4Q9ENmuAVit2Q18zyfceS5e"}, true},
		{&RPCError{Code: -32000, Message: "cannot query unfinalized data"}, true},
		{fmt.Errorf("%w: block 5: %w", ErrInconsistent, ErrNotFound), true},
		{&RPCError{Code: -32601, Message: "the method x does not exist/is not available"}, false},
		{&HTTPError{StatusCode: 404}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := IsNotFound(tt.err); got != tt.want {
			t.Errorf("IsNotFound(%v) = %v", tt.err, got)
		}
	}
}

var (
	inconsistent = fmt.Errorf("%w: asked height 5, got a block of height 7", ErrInconsistent)
	malformed    = fmt.Errorf("%w: empty hex", ErrMalformed)
)

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

func TestRetryDo(t *testing.T) {
	definitive := &RPCError{Code: -32000, Message: "nope"}
	tests := []struct {
		name      string
		errs      []error // returned by successive attempts; then success
		max       int
		wantCalls int
		wantLogs  int
		wantErr   error
	}{
		{"first try", nil, 0, 1, 0, nil},
		{"two transient", []error{io.ErrUnexpectedEOF, &HTTPError{StatusCode: 502}}, 0, 3, 2, nil},
		{"definitive", []error{definitive}, 0, 1, 0, definitive},
		{"transient then definitive", []error{io.EOF, definitive}, 0, 2, 1, definitive},
		{"max attempts", []error{io.EOF, io.EOF, io.EOF, io.EOF}, 3, 3, 2, io.EOF},
		// A node that keeps answering wrongly is reported after
		// defaultMaxBadAnswers answers in a row, even with no MaxAttempts.
		{"bad answers bounded", repeat(inconsistent, 10), 0, defaultMaxBadAnswers, defaultMaxBadAnswers - 1, ErrInconsistent},
		{"malformed counts too", append(repeat(inconsistent, 3), repeat(malformed, 10)...), 0, defaultMaxBadAnswers, defaultMaxBadAnswers - 1, ErrMalformed},
		// A transport failure in between restarts the count.
		{"bad answers in a row only", append(append(repeat(inconsistent, 5), io.EOF), repeat(inconsistent, 5)...), 0, 12, 11, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &logBuffer{}
			r := fastRetry(logs)
			r.MaxAttempts = tt.max
			calls := 0
			err := r.Do(context.Background(), "test.method", func(context.Context) error {
				calls++
				if calls <= len(tt.errs) {
					return tt.errs[calls-1]
				}
				return nil
			})
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "test.method: ") {
				t.Fatalf("error lacks the method: %v", err)
			}
			if calls != tt.wantCalls {
				t.Fatalf("%d calls, want %d", calls, tt.wantCalls)
			}
			lines := logs.lines()
			if len(lines) != tt.wantLogs {
				t.Fatalf("%d log lines, want %d", len(lines), tt.wantLogs)
			}
			for i, l := range lines {
				if !strings.Contains(l, "method=test.method") || !strings.Contains(l, fmt.Sprintf("attempt=%d", i+1)) || !strings.Contains(l, "error=") {
					t.Fatalf("log line %q", l)
				}
			}
		})
	}

	t.Run("context already done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		calls := 0
		err := fastRetry(nil).Do(ctx, "m", func(context.Context) error { calls++; return nil })
		if !errors.Is(err, context.Canceled) || calls != 0 {
			t.Fatalf("err %v, %d calls", err, calls)
		}
	})
	t.Run("context ends while backing off", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		r := fastRetry(nil)
		r.Initial, r.Max, r.MaxElapsed = time.Hour, time.Hour, -1
		start := time.Now()
		err := r.Do(ctx, "m", func(context.Context) error { return io.EOF })
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, io.EOF) || time.Since(start) > 2*time.Second {
			t.Fatalf("err %v after %v", err, time.Since(start))
		}
	})
	t.Run("max elapsed", func(t *testing.T) {
		// A node that stays unreachable: the call gives up after MaxElapsed
		// with the last failure, so the caller can say so.
		r := fastRetry(nil)
		r.MaxElapsed = 60 * time.Millisecond
		start := time.Now()
		calls := 0
		err := r.Do(context.Background(), "m", func(context.Context) error { calls++; return io.EOF })
		if !errors.Is(err, io.EOF) || errors.Is(err, context.DeadlineExceeded) || calls < 3 || time.Since(start) > 2*time.Second {
			t.Fatalf("err %v after %d calls, %v", err, calls, time.Since(start))
		}
	})
	t.Run("attempt timeout", func(t *testing.T) {
		r := fastRetry(nil)
		r.AttemptTimeout = 20 * time.Millisecond
		calls := 0
		err := r.Do(context.Background(), "m", func(ctx context.Context) error {
			calls++
			if calls == 1 {
				<-ctx.Done() // a hung first attempt
				return ctx.Err()
			}
			return nil
		})
		if err != nil || calls != 2 {
			t.Fatalf("err %v, %d calls", err, calls)
		}
	})
	t.Run("value", func(t *testing.T) {
		n := 0
		v, err := RetryValue(context.Background(), fastRetry(nil), "m", func(context.Context) (int, error) {
			n++
			if n < 3 {
				return -1, io.EOF
			}
			return 42, nil
		})
		if err != nil || v != 42 {
			t.Fatalf("%d, %v", v, err)
		}
		v, err = RetryValue(context.Background(), fastRetry(nil), "m", func(context.Context) (int, error) { return 7, definitive })
		if v != 0 || !errors.Is(err, definitive) {
			t.Fatalf("%d, %v", v, err)
		}
	})
}
