package webhooks

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// SignatureHeader carries the hex HMAC-SHA256 of the body with the owner's
// shared secret: the header the hosted service documents.
const SignatureHeader = "x-signature"

// Sign is the signature of body with secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// DeliveryConfig tunes the delivery workers; zero values take the defaults.
type DeliveryConfig struct {
	Workers int           // concurrent deliveries of this process (default 4; negative: none)
	Poll    time.Duration // idle workers look for due events this often (default 250ms)
	Lease   time.Duration // a claimed event's lease; a vanished worker's event is retried after it (default 1m)
	Timeout time.Duration // one request, connection to response headers and body (default 10s)
	// Backoff after the n-th failed attempt of an event: BaseBackoff·2^(n-1),
	// at most MaxBackoff (defaults 1s and 10m).
	BaseBackoff, MaxBackoff time.Duration
	// MaxFailures consecutive failed attempts deactivate a webhook (default 50).
	MaxFailures int
	Policy      URLPolicy
}

// WithDefaults fills zero fields.
func (c DeliveryConfig) WithDefaults() DeliveryConfig {
	if c.Workers == 0 {
		c.Workers = 4
	}
	if c.Poll <= 0 {
		c.Poll = 250 * time.Millisecond
	}
	if c.Lease <= 0 {
		c.Lease = time.Minute
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.BaseBackoff <= 0 {
		c.BaseBackoff = time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 10 * time.Minute
	}
	if c.MaxFailures <= 0 {
		c.MaxFailures = 50
	}
	return c
}

// Deliverer sends outbox events to their webhooks: a worker leases a
// webhook's queue (webhook_queues) and sends its events in order, the next
// only once the previous one is delivered, so several replicas on one
// PostgreSQL send an event once per attempt; a failure is retried with
// exponential backoff; every attempt is logged in webhook_deliveries.
type Deliverer struct {
	db     *store.DB
	cfg    DeliveryConfig
	log    *slog.Logger
	client *http.Client
	now    func() time.Time
	node   string
	batch  int // queues claimed at once

	mu      sync.Mutex
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started bool

	// idleUntil: a claim that found no due queue spares the other workers
	// their reads until the next poll (one read per poll and process when
	// idle, not one per worker).
	idleMu    sync.Mutex
	idleUntil time.Time
}

// NewDeliverer prepares the workers; Start runs them.
func NewDeliverer(db *store.DB, cfg DeliveryConfig, log *slog.Logger) *Deliverer {
	cfg = cfg.WithDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	batch := claimBatch
	if db.Dialect() == store.Postgres {
		batch = 1
	}
	return &Deliverer{db: db, cfg: cfg, log: log, client: safeClient(cfg), now: time.Now, node: hex.EncodeToString(b), batch: batch}
}

// safeClient checks every connection's resolved address against the policy
// just before connecting (DNS answers and rebinding cannot reach a refused
// address), ignores environment proxies and follows no redirect (a 3xx is a
// failed attempt).
func safeClient(cfg DeliveryConfig) *http.Client {
	d := &net.Dialer{Timeout: cfg.Timeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("refused address %q", address)
		}
		return cfg.Policy.CheckAddr(ap.Addr())
	}}
	return &http.Client{
		Timeout: cfg.Timeout,
		// Keep-alive: as many idle connections per host as posts in flight.
		Transport: &http.Transport{Proxy: nil, DialContext: d.DialContext, MaxIdleConnsPerHost: max(16, cfg.Workers*claimBatch),
			IdleConnTimeout: 90 * time.Second, ResponseHeaderTimeout: cfg.Timeout, MaxResponseHeaderBytes: 64 << 10},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Start runs the workers until ctx ends or Close.
func (d *Deliverer) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return errors.New("webhooks: delivery already started")
	}
	d.started = true
	ctx, d.cancel = context.WithCancel(ctx)
	for i := range max(d.cfg.Workers, 0) {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			d.work(ctx, fmt.Sprintf("%s#%d", d.node, i))
		}()
	}
	d.log.Info("webhook delivery started", "workers", d.cfg.Workers)
	return nil
}

// Close stops the workers and waits for them (an attempt in flight is
// abandoned; its lease lets it be retried).
func (d *Deliverer) Close() error {
	d.mu.Lock()
	cancel := d.cancel
	d.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	d.wg.Wait()
	return nil
}

func (d *Deliverer) work(ctx context.Context, worker string) {
	t := time.NewTicker(d.cfg.Poll)
	defer t.Stop()
	for ctx.Err() == nil {
		qs, err := d.claim(ctx, worker)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("claim webhook queues", "err", err)
		}
		if len(qs) > 0 {
			if err := d.round(ctx, qs); err != nil && ctx.Err() == nil {
				d.log.Warn("deliver webhook events", "err", err)
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// queue is a webhook's queue leased by this worker.
type queue struct {
	webhookID, worker, url, secret string
	leaseUntil                     time.Time
}

// claimCandidates is how many due queues a worker reads before claiming
// up to claimBatch of them (SQLite) or one (PostgreSQL): workers start from
// different candidates, so they rarely race for the same queues. On SQLite a
// round's one transaction for several queues spares commits of its single
// writer; on PostgreSQL it would hold several queue rows locked that the
// emitter's Flush and other claims then wait for (measured: half the
// deliveries/s, docs/benchmarks.md).
const (
	claimCandidates = 32
	claimBatch      = 8
)

// claim leases up to d.batch queues of active webhooks with events due,
// those served longest ago first (a release sets served_at, so queues take
// turns). The due queues are read from the read pool:
// an idle worker's poll takes no write lock (SQLite's single writer is the
// indexer's). The claim is one UPDATE that repeats the conditions, so a
// queue another worker or replica took meanwhile is left alone (as NFT
// enrichment claims its jobs).
func (d *Deliverer) claim(ctx context.Context, worker string) ([]*queue, error) {
	now := d.now()
	d.idleMu.Lock()
	idle := now.Before(d.idleUntil)
	d.idleMu.Unlock()
	if idle {
		return nil, nil
	}
	rows, err := d.db.QueryContext(ctx, `SELECT q.webhook_id, w.url, s.secret FROM webhook_queues q
		JOIN webhooks w ON w.id = q.webhook_id JOIN webhook_secrets s ON s.owner = w.owner
		WHERE q.pending > 0 AND q.next_attempt_at <= $1 AND q.lease_until < $1 AND w.status = 'active'
		ORDER BY q.served_at, q.webhook_id LIMIT `+strconv.Itoa(claimCandidates), now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("webhooks: due queues: %w", err)
	}
	due := map[string]*queue{}
	var ids []string
	for rows.Next() {
		q := &queue{worker: worker}
		if err := rows.Scan(&q.webhookID, &q.url, &q.secret); err != nil {
			rows.Close()
			return nil, fmt.Errorf("webhooks: due queues: %w", err)
		}
		due[q.webhookID] = q
		ids = append(ids, q.webhookID)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		if err == nil {
			d.idleMu.Lock()
			d.idleUntil = now.Add(d.cfg.Poll)
			d.idleMu.Unlock()
		}
		return nil, err
	}
	until := d.now().Add(d.cfg.Lease)
	args := []any{worker, until.UnixMilli(), now.UnixMilli()}
	off := mrand.IntN(len(ids))
	for i := range min(d.batch, len(ids)) {
		args = append(args, ids[(off+i)%len(ids)])
	}
	res, err := d.db.WriterDB().QueryContext(ctx, `UPDATE webhook_queues SET lease_owner = $1, lease_until = $2
		WHERE pending > 0 AND next_attempt_at <= $3 AND lease_until < $3 AND webhook_id IN (`+placeholders(4, len(args)-3)+`)
		AND webhook_id IN (SELECT id FROM webhooks WHERE status = 'active')
		RETURNING webhook_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("webhooks: claim: %w", err)
	}
	defer res.Close()
	var out []*queue
	for res.Next() {
		var id string
		if err := res.Scan(&id); err != nil {
			return nil, fmt.Errorf("webhooks: claim: %w", err)
		}
		q := due[id]
		q.leaseUntil = until
		out = append(out, q)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("webhooks: claim: %w", err)
	}
	// Recorded in webhook id order: the emitter's Flush locks queue rows
	// in that order too (no deadlock on PostgreSQL).
	slices.SortFunc(out, func(a, b *queue) int { return strings.Compare(a.webhookID, b.webhookID) })
	return out, nil
}

// event is the head of a queue.
type event struct {
	height             int64
	position, attempts int
	messageID, payload string
}

// pageSize bounds the events of a queue sent in one round: then the queue
// is given back, behind the queues served longer ago, so queues take turns.
const pageSize = 50

// attempt is one sent event and its outcome.
type attempt struct {
	ev         event
	code       int
	failure    string
	start, end time.Time
}

// round sends a page of each claimed queue, the queues concurrently and
// each queue's events in order, then records every outcome and releases
// the queues in one transaction (a crash before it sends them again: at
// least once).
func (d *Deliverer) round(ctx context.Context, qs []*queue) error {
	sent := make([][]attempt, len(qs))
	var wg sync.WaitGroup
	for i, q := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if sent[i], err = d.send(ctx, q); err != nil && ctx.Err() == nil {
				d.log.Warn("deliver webhook events", "webhook", q.webhookID, "err", err)
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil // shutting down: the leases let the events be retried
	}
	tx, err := d.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for i, q := range qs {
		if err := d.record(ctx, tx, q, sent[i]); err != nil {
			return fmt.Errorf("webhook %s: %w", q.webhookID, err)
		}
	}
	return tx.Commit()
}

// send posts the head of q's queue in order until one fails, pageSize were
// sent or half the lease is used.
func (d *Deliverer) send(ctx context.Context, q *queue) ([]attempt, error) {
	page, err := d.head(ctx, q.webhookID, pageSize)
	if err != nil {
		return nil, err
	}
	var done []attempt
	for _, ev := range page {
		if len(done) > 0 && !d.now().Before(q.leaseUntil.Add(-d.cfg.Lease/2)) {
			break // slow answers: record what was sent while the lease holds
		}
		a := attempt{ev: ev, start: d.now()}
		var perr error
		a.code, perr = d.post(ctx, q, []byte(ev.payload))
		if ctx.Err() != nil {
			return nil, nil
		}
		a.end = d.now()
		if perr != nil {
			a.failure = perr.Error()
		} else if a.code < 200 || a.code > 299 {
			a.failure = fmt.Sprintf("HTTP %d", a.code)
		}
		done = append(done, a)
		if a.failure != "" {
			break
		}
	}
	return done, nil
}

// head reads the first n pending events of a webhook's queue, in order.
func (d *Deliverer) head(ctx context.Context, webhookID string, n int) ([]event, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT block_height, position, attempts, message_id, payload FROM webhook_outbox
		WHERE webhook_id = $1 AND status = 'pending' ORDER BY block_height, position LIMIT `+strconv.Itoa(n), webhookID)
	if err != nil {
		return nil, fmt.Errorf("read queue head: %w", err)
	}
	defer rows.Close()
	var out []event
	for rows.Next() {
		var ev event
		if err := rows.Scan(&ev.height, &ev.position, &ev.attempts, &ev.messageID, &ev.payload); err != nil {
			return nil, fmt.Errorf("read queue head: %w", err)
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}

func (d *Deliverer) post(ctx context.Context, q *queue, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, q.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, Sign(q.secret, body))
	req.Header.Set("User-Agent", "permafrost-webhooks")
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// record writes attempts (successes, then possibly one failure) to the
// log and their outcomes to the events, the queue and the webhook, in tx
// and a few statements whatever their number, and releases the queue, while
// its lease is still ours (when it is not, another worker took the queue
// over and nothing is written). A failure releases the queue until its
// backoff has passed and counts against the webhook, deactivating it at
// MaxFailures in a row; otherwise the queue goes behind those served longer
// ago.
func (d *Deliverer) record(ctx context.Context, tx *store.Tx, q *queue, as []attempt) error {
	if len(as) == 0 {
		_, err := tx.Exec(ctx, `UPDATE webhook_queues SET lease_owner = '', lease_until = 0, served_at = $1
			WHERE webhook_id = $2 AND lease_owner = $3`, d.now().UnixMilli(), q.webhookID, q.worker)
		return err
	}
	last := as[len(as)-1]
	ok := as
	if last.failure != "" {
		ok = as[:len(as)-1]
	}
	var failures int
	next := int64(0) // due at once, behind the queues served before it (served_at)
	if last.failure != "" {
		if err := tx.QueryRow(ctx, `SELECT failures FROM webhooks WHERE id = $1`, q.webhookID).Scan(&failures); err != nil {
			return err
		}
		if len(ok) > 0 {
			failures = 0 // the successes before it reset the count
		}
		next = last.end.Add(min(d.cfg.BaseBackoff<<min(failures, 30), d.cfg.MaxBackoff)).UnixMilli()
	}
	res, err := tx.Exec(ctx, `UPDATE webhook_queues SET pending = pending - $1, next_attempt_at = $2, served_at = $3, lease_owner = '', lease_until = 0
		WHERE webhook_id = $4 AND lease_owner = $5`, len(ok), next, last.end.UnixMilli(), q.webhookID, q.worker)
	if err != nil {
		return err
	}
	// Fence: a lease that ran out and was taken over writes nothing.
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return err
	}
	if err := logAttempts(ctx, tx, q.webhookID, as); err != nil {
		return err
	}
	if len(ok) > 0 {
		// The delivered events, by message id (unique): one statement.
		args := make([]any, 0, 2*len(ok))
		var when, ids strings.Builder
		for i, a := range ok {
			fmt.Fprintf(&when, " WHEN $%d THEN CAST($%d AS BIGINT)", 2*i+1, 2*i+2)
			if i > 0 {
				ids.WriteByte(',')
			}
			fmt.Fprintf(&ids, "$%d", 2*i+1)
			args = append(args, a.ev.messageID, a.end.UnixMilli())
		}
		if _, err := tx.Exec(ctx, `UPDATE webhook_outbox SET status = 'delivered', delivered_at = CASE message_id`+when.String()+` END,
			attempts = attempts + 1, last_error = '' WHERE message_id IN (`+ids.String()+`)`, args...); err != nil {
			return fmt.Errorf("record deliveries: %w", err)
		}
	}
	if last.failure != "" {
		if _, err := tx.Exec(ctx, `UPDATE webhook_outbox SET attempts = attempts + 1, last_error = $1 WHERE message_id = $2`,
			truncateErr(last.failure), last.ev.messageID); err != nil {
			return fmt.Errorf("record failure: %w", err)
		}
	}
	switch {
	case last.failure == "":
		_, err = tx.Exec(ctx, `UPDATE webhooks SET failures = 0 WHERE id = $1 AND failures <> 0`, q.webhookID)
	case failures+1 >= d.cfg.MaxFailures:
		_, err = tx.Exec(ctx, `UPDATE webhooks SET failures = $1, status = 'inactive', inactive_reason = $2 WHERE id = $3`,
			failures+1, fmt.Sprintf("deactivated after %d failed deliveries in a row; last: %s", failures+1, truncateErr(last.failure)), q.webhookID)
	default:
		_, err = tx.Exec(ctx, `UPDATE webhooks SET failures = $1 WHERE id = $2`, failures+1, q.webhookID)
	}
	return err
}

// logAttempts appends the attempts to the delivery log in one statement.
func logAttempts(ctx context.Context, tx *store.Tx, webhookID string, as []attempt) error {
	const cols = 7
	args := make([]any, 0, cols*len(as))
	var vals strings.Builder
	for i, a := range as {
		if i > 0 {
			vals.WriteByte(',')
		}
		fmt.Fprintf(&vals, "($%d,$%d,$%d,$%d,$%d,$%d,$%d)", i*cols+1, i*cols+2, i*cols+3, i*cols+4, i*cols+5, i*cols+6, i*cols+7)
		args = append(args, a.ev.messageID, a.ev.attempts+1, webhookID, a.end.UnixMilli(), a.code,
			a.end.Sub(a.start).Milliseconds(), truncateErr(a.failure))
	}
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (message_id, attempt, webhook_id, at, status_code, duration_ms, error)
		VALUES `+vals.String()+` ON CONFLICT DO NOTHING`, args...); err != nil {
		return fmt.Errorf("log deliveries: %w", err)
	}
	return nil
}

func truncateErr(s string) string {
	if len(s) > 500 {
		return s[:497] + "..."
	}
	return s
}
