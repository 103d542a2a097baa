package webhooks

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
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

// Deliverer sends outbox events to their webhooks: each webhook's events in
// order (one in flight per webhook, the next only once the previous one is
// delivered), each attempt leased so several replicas on one PostgreSQL
// send an event once per attempt, failures retried with exponential
// backoff, every attempt logged in webhook_deliveries.
type Deliverer struct {
	db     *store.DB
	cfg    DeliveryConfig
	log    *slog.Logger
	client *http.Client
	now    func() time.Time
	node   string

	mu      sync.Mutex
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started bool
}

// NewDeliverer prepares the workers; Start runs them.
func NewDeliverer(db *store.DB, cfg DeliveryConfig, log *slog.Logger) *Deliverer {
	cfg = cfg.WithDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return &Deliverer{db: db, cfg: cfg, log: log, client: safeClient(cfg), now: time.Now, node: hex.EncodeToString(b)}
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
		Transport: &http.Transport{Proxy: nil, DialContext: d.DialContext, MaxIdleConnsPerHost: 16,
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
		ev, err := d.claim(ctx, worker)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("claim webhook event", "err", err)
		}
		if ev != nil {
			d.deliver(ctx, ev)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// claimed is an event leased for one attempt.
type claimed struct {
	webhookID, messageID, payload, url, owner string
	height                                    int64
	position, attempt                         int
}

// claim leases the due head of some active webhook's queue: its oldest
// pending event, when no earlier one is pending (so events go out in order)
// and no lease on it runs. The outer WHERE repeats the condition: on
// PostgreSQL a concurrent claimer of the same row re-checks it after the
// winner commits and updates nothing.
func (d *Deliverer) claim(ctx context.Context, worker string) (*claimed, error) {
	now := d.now().UnixMilli()
	var c claimed
	err := d.db.WriterDB().QueryRowContext(ctx, `UPDATE webhook_outbox SET attempts = attempts + 1, lease_owner = $1, lease_until = $2
		WHERE (webhook_id, block_height, position) IN (
			SELECT o.webhook_id, o.block_height, o.position FROM webhook_outbox o JOIN webhooks w ON w.id = o.webhook_id
			WHERE o.status = 'pending' AND o.next_attempt_at <= $3 AND o.lease_until < $3 AND w.status = 'active'
			AND NOT EXISTS (SELECT 1 FROM webhook_outbox p WHERE p.webhook_id = o.webhook_id AND p.status = 'pending'
				AND (p.block_height < o.block_height OR (p.block_height = o.block_height AND p.position < o.position)))
			ORDER BY o.next_attempt_at, o.created_at LIMIT 1)
		AND status = 'pending' AND lease_until < $3
		RETURNING webhook_id, block_height, position, message_id, payload, attempts`,
		worker, now+d.cfg.Lease.Milliseconds(), now).Scan(&c.webhookID, &c.height, &c.position, &c.messageID, &c.payload, &c.attempt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("webhooks: claim: %w", err)
	}
	if err := d.db.QueryRowContext(ctx, `SELECT url, owner FROM webhooks WHERE id = $1`, c.webhookID).Scan(&c.url, &c.owner); err != nil {
		return nil, fmt.Errorf("webhooks: claim: read webhook %s: %w", c.webhookID, err)
	}
	return &c, nil
}

// deliver makes one attempt and records its outcome.
func (d *Deliverer) deliver(ctx context.Context, c *claimed) {
	start := d.now()
	code, err := d.post(ctx, c)
	if ctx.Err() != nil {
		return // shutting down: the lease lets another worker retry
	}
	end := d.now()
	msg := ""
	if err != nil {
		msg = err.Error()
	} else if code < 200 || code > 299 {
		msg = fmt.Sprintf("HTTP %d", code)
	}
	if err := d.record(ctx, c, code, msg, start, end); err != nil && ctx.Err() == nil {
		d.log.Warn("record webhook delivery", "webhook", c.webhookID, "message", c.messageID, "err", err)
	}
}

func (d *Deliverer) post(ctx context.Context, c *claimed) (int, error) {
	secret, err := NewRegistry(d.db, d.now).Secret(ctx, c.owner)
	if err != nil {
		return 0, fmt.Errorf("signing secret: %w", err)
	}
	body := []byte(c.payload)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, Sign(secret, body))
	req.Header.Set("User-Agent", "permafrost-webhooks")
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// record writes the attempt to the log and its outcome to the event (only
// while the lease is ours: attempts fences a worker that lost it) and to
// the webhook's failure count, deactivating it at MaxFailures.
func (d *Deliverer) record(ctx context.Context, c *claimed, code int, failure string, start, end time.Time) error {
	tx, err := d.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (message_id, attempt, webhook_id, at, status_code, duration_ms, error)
		VALUES ($1,$2,$3,$4,$5,$6,$7) ON CONFLICT DO NOTHING`, c.messageID, c.attempt, c.webhookID, end.UnixMilli(), code,
		end.Sub(start).Milliseconds(), truncateErr(failure)); err != nil {
		return err
	}
	var res sql.Result
	if failure == "" {
		res, err = tx.Exec(ctx, `UPDATE webhook_outbox SET status = 'delivered', delivered_at = $1, lease_owner = '', lease_until = 0, last_error = ''
			WHERE webhook_id = $2 AND block_height = $3 AND position = $4 AND attempts = $5 AND status = 'pending'`,
			end.UnixMilli(), c.webhookID, c.height, c.position, c.attempt)
	} else {
		backoff := min(d.cfg.BaseBackoff<<min(c.attempt-1, 30), d.cfg.MaxBackoff)
		res, err = tx.Exec(ctx, `UPDATE webhook_outbox SET next_attempt_at = $1, lease_owner = '', lease_until = 0, last_error = $2
			WHERE webhook_id = $3 AND block_height = $4 AND position = $5 AND attempts = $6 AND status = 'pending'`,
			end.Add(backoff).UnixMilli(), truncateErr(failure), c.webhookID, c.height, c.position, c.attempt)
	}
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // another attempt owns the event now
	}
	if failure == "" {
		_, err = tx.Exec(ctx, `UPDATE webhooks SET failures = 0 WHERE id = $1 AND failures <> 0`, c.webhookID)
	} else {
		_, err = tx.Exec(ctx, `UPDATE webhooks SET failures = failures + 1,
			status = CASE WHEN failures + 1 >= $1 THEN 'inactive' ELSE status END,
			inactive_reason = CASE WHEN failures + 1 >= $1 THEN $2 ELSE inactive_reason END
			WHERE id = $3`, d.cfg.MaxFailures, fmt.Sprintf("deactivated after %d failed deliveries in a row; last: %s", d.cfg.MaxFailures, truncateErr(failure)), c.webhookID)
	}
	if err != nil {
		return err
	}
	return tx.Commit()
}

func truncateErr(s string) string {
	if len(s) > 500 {
		return s[:497] + "..."
	}
	return s
}
