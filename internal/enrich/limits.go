package enrich

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// hostLimiter bounds concurrent requests per host.
type hostLimiter struct {
	per int
	mu  sync.Mutex
	sem map[string]chan struct{}
	use map[string]int // holders and waiters, to drop idle hosts
}

func newHostLimiter(per int) *hostLimiter {
	return &hostLimiter{per: per, sem: map[string]chan struct{}{}, use: map[string]int{}}
}

// acquire waits up to wait for a slot of host and returns its release.
func (h *hostLimiter) acquire(ctx context.Context, host string, wait time.Duration) (func(), error) {
	h.mu.Lock()
	s, ok := h.sem[host]
	if !ok {
		s = make(chan struct{}, h.per)
		h.sem[host] = s
	}
	h.use[host]++
	h.mu.Unlock()
	done := func() {
		h.mu.Lock()
		if h.use[host]--; h.use[host] == 0 {
			delete(h.use, host)
			delete(h.sem, host)
		}
		h.mu.Unlock()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case s <- struct{}{}:
		return func() { <-s; done() }, nil
	case <-t.C:
		done()
		return nil, fmt.Errorf("%w: %s had %d requests in flight for %s", errHostBusy, host, h.per, wait)
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}

// tokenBucket is a non-blocking rate limiter: callers that find it empty
// do without (a price is left out) instead of waiting.
type tokenBucket struct {
	mu       sync.Mutex
	rate     float64 // tokens per second
	burst    float64
	tokens   float64
	last     time.Time
	blockTil time.Time // set by an upstream 429
	now      func() time.Time
}

func newTokenBucket(perMinute int, burst int, now func() time.Time) *tokenBucket {
	b := float64(burst)
	return &tokenBucket{rate: float64(perMinute) / 60, burst: b, tokens: b, last: now(), now: now}
}

// allow takes one token if there is one.
func (b *tokenBucket) allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if now.Before(b.blockTil) {
		return false
	}
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// pause empties the bucket until d from now (the upstream said 429).
func (b *tokenBucket) pause(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.now().Add(d); t.After(b.blockTil) {
		b.blockTil = t
	}
	b.tokens = 0
}

// backoff is the delay before attempt n+1 after n failures (n >= 1):
// base·2^(n-1) with ±20% jitter, at most ceil, and at least hint (a
// server's Retry-After) when that is within ceil.
func backoff(base, ceil time.Duration, n int, hint time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < ceil; i++ {
		d *= 2
	}
	if d > ceil {
		d = ceil
	}
	if d > 0 {
		d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	}
	if hint > d {
		d = max(d, min(hint, ceil))
	}
	return d
}
