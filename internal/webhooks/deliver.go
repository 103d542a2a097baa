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
	"maps"
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

// queue is a webhook's queue leased by this worker, with its delivery
// cursor: the last delivered event and the attempts of the next one.
type queue struct {
	webhookID, worker, url, secret string
	leaseUntil                     time.Time
	height                         int64 // the last delivered event's block (-1: none yet)
	position, attempts             int
}

// claimCandidates is how many due queues a worker reads on SQLite before
// claiming up to claimBatch of them. A round's outcomes for all its
// queues are one transaction of a few statements (one queue update, one
// log insert), so several queues per round spare commits on SQLite and
// round trips on PostgreSQL without holding queue rows while sending.
const (
	claimCandidates = 32
	claimBatch      = 8
)

// claim leases up to claimBatch queues of active webhooks with events due,
// those served longest ago first (a release sets served_at, so queues take
// turns). A claim repeats the conditions in its UPDATE, so a queue another
// worker or replica took meanwhile is left alone (as NFT enrichment claims
// its jobs). A claim that finds nothing due spares the process's other
// workers their claims until the next poll.
func (d *Deliverer) claim(ctx context.Context, worker string) ([]*queue, error) {
	now := d.now()
	d.idleMu.Lock()
	idle := now.Before(d.idleUntil)
	d.idleMu.Unlock()
	if idle {
		return nil, nil
	}
	var out []*queue
	var err error
	if d.db.Dialect() == store.Postgres {
		out, err = d.claimPostgres(ctx, worker, now)
	} else {
		out, err = d.claimSQLite(ctx, worker, now)
	}
	if err == nil && len(out) == 0 {
		d.idleMu.Lock()
		d.idleUntil = now.Add(d.cfg.Poll)
		d.idleMu.Unlock()
	}
	// Recorded in webhook id order: the emitter's Flush locks queue rows
	// in that order too (no deadlock on PostgreSQL).
	slices.SortFunc(out, func(a, b *queue) int { return strings.Compare(a.webhookID, b.webhookID) })
	return out, err
}

// dueQueue is the condition of a queue with events due at $3: the
// inactive webhooks' queues are excluded by a set read once per statement
// (usually empty), not by a lookup of each queue's webhook, which made a
// claim cost a probe per due queue (most of them are due while a backlog
// drains).
const dueQueue = `pending > 0 AND next_attempt_at <= $3 AND lease_until < $3
	AND webhook_id NOT IN (SELECT id FROM webhooks WHERE status <> 'active')`

// claimPostgres claims in one statement: the due queues' rows are locked
// as they are chosen, skipping those other transactions hold (the
// emitter's Flush, other workers' and replicas' claims and rounds: FOR
// UPDATE SKIP LOCKED waits for none of them), and the claimed webhooks'
// URLs and secrets come back with them. A read of the candidates before
// the claim (as on SQLite) doubled the scans of the queues, the server's
// main cost per delivery (docs/benchmarks.md).
func (d *Deliverer) claimPostgres(ctx context.Context, worker string, now time.Time) ([]*queue, error) {
	until := now.Add(d.cfg.Lease)
	rows, err := d.db.WriterDB().QueryContext(ctx, `WITH c AS (UPDATE webhook_queues SET lease_owner = $1, lease_until = $2
		WHERE webhook_id IN (SELECT webhook_id FROM webhook_queues WHERE `+dueQueue+`
			ORDER BY served_at, webhook_id LIMIT `+strconv.Itoa(claimBatch)+` FOR UPDATE SKIP LOCKED)
		RETURNING webhook_id, delivered_height, delivered_position, head_attempts)
		SELECT c.webhook_id, c.delivered_height, c.delivered_position, c.head_attempts, w.url, s.secret
		FROM c JOIN webhooks w ON w.id = c.webhook_id JOIN webhook_secrets s ON s.owner = w.owner`,
		worker, until.UnixMilli(), now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("webhooks: claim: %w", err)
	}
	defer rows.Close()
	var out []*queue
	for rows.Next() {
		q := &queue{worker: worker, leaseUntil: until}
		if err := rows.Scan(&q.webhookID, &q.height, &q.position, &q.attempts, &q.url, &q.secret); err != nil {
			return nil, fmt.Errorf("webhooks: claim: %w", err)
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("webhooks: claim: %w", err)
	}
	return out, nil
}

// claimSQLite reads the due queues from the read pool (an idle worker's
// poll takes no write lock: SQLite's single writer is the indexer's), then
// claims up to claimBatch of them, starting from a random one so workers
// rarely race for the same queues, in one fenced UPDATE.
func (d *Deliverer) claimSQLite(ctx context.Context, worker string, now time.Time) ([]*queue, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT q.webhook_id, w.url, s.secret FROM (SELECT webhook_id, served_at FROM webhook_queues
		WHERE `+strings.ReplaceAll(dueQueue, "$3", "$1")+` ORDER BY served_at, webhook_id LIMIT `+strconv.Itoa(claimCandidates)+`) q
		JOIN webhooks w ON w.id = q.webhook_id JOIN webhook_secrets s ON s.owner = w.owner
		ORDER BY q.served_at, q.webhook_id`, now.UnixMilli())
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
		return nil, err
	}
	until := d.now().Add(d.cfg.Lease)
	args := []any{worker, until.UnixMilli(), now.UnixMilli()}
	off := mrand.IntN(len(ids))
	for i := range min(claimBatch, len(ids)) {
		args = append(args, ids[(off+i)%len(ids)])
	}
	res, err := d.db.WriterDB().QueryContext(ctx, `UPDATE webhook_queues SET lease_owner = $1, lease_until = $2
		WHERE pending > 0 AND next_attempt_at <= $3 AND lease_until < $3 AND webhook_id IN (`+placeholders(4, len(args)-3)+`)
		AND webhook_id IN (SELECT id FROM webhooks WHERE status = 'active')
		RETURNING webhook_id, delivered_height, delivered_position, head_attempts`, args...)
	if err != nil {
		return nil, fmt.Errorf("webhooks: claim: %w", err)
	}
	defer res.Close()
	var out []*queue
	for res.Next() {
		var id string
		var h int64
		var pos, att int
		if err := res.Scan(&id, &h, &pos, &att); err != nil {
			return nil, fmt.Errorf("webhooks: claim: %w", err)
		}
		q := due[id]
		q.leaseUntil, q.height, q.position, q.attempts = until, h, pos, att
		out = append(out, q)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("webhooks: claim: %w", err)
	}
	return out, nil
}

// event is an event of a queue after its cursor.
type event struct {
	height             int64
	position, attempts int // attempts before this one
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

// sent is what a round did with one claimed queue.
type sent struct {
	q     *queue
	as    []attempt // successes, then possibly one failure
	empty bool      // nothing after the cursor: the pending count is stale
}

// round sends a page of each claimed queue, the queues concurrently and
// each queue's events in order, then records every outcome and releases
// the queues in one transaction (a crash before it sends them again: at
// least once).
func (d *Deliverer) round(ctx context.Context, qs []*queue) error {
	pages, err := d.heads(ctx, qs, pageSize)
	if err != nil && ctx.Err() == nil {
		// Nothing is sent; the queues are released as they are.
		d.log.Warn("read webhook queues", "err", err)
	}
	out := make([]sent, len(qs))
	var wg sync.WaitGroup
	for i, q := range qs {
		out[i].q = q
		if pages == nil {
			continue
		}
		out[i].empty = len(pages[i]) == 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].as = d.send(ctx, q, pages[i])
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
	if err := d.record(ctx, tx, qs[0].worker, out); err != nil {
		return err
	}
	return tx.Commit()
}

// send posts page, the events after q's cursor, in order until one fails
// or half the lease is used.
func (d *Deliverer) send(ctx context.Context, q *queue, page []event) (done []attempt) {
	for _, ev := range page {
		if len(done) > 0 && !d.now().Before(q.leaseUntil.Add(-d.cfg.Lease/2)) {
			break // slow answers: record what was sent while the lease holds
		}
		a := attempt{ev: ev, start: d.now()}
		var perr error
		a.code, perr = d.post(ctx, q, []byte(ev.payload))
		if ctx.Err() != nil {
			return nil
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
	return done
}

// heads reads the first n events after each queue's cursor, in order, in
// one query for the round (a query per queue was most of a round's
// statements); the first event of a queue has had q.attempts attempts, the
// others none (an event is sent only once the one before it is delivered).
func (d *Deliverer) heads(ctx context.Context, qs []*queue, n int) ([][]event, error) {
	parts := make([]string, len(qs))
	args := make([]any, 0, 3*len(qs))
	at := map[string]int{}
	for i, q := range qs {
		b := 3*i + 1
		parts[i] = fmt.Sprintf(`SELECT * FROM (SELECT webhook_id, block_height, position, message_id, payload FROM webhook_outbox
			WHERE webhook_id = $%d AND block_height >= $%d AND (block_height, position) > ($%d, $%d)
			ORDER BY block_height, position LIMIT %d) AS h%d`, b, b+1, b+1, b+2, n, i)
		args = append(args, q.webhookID, q.height, q.position)
		at[q.webhookID] = i
	}
	rows, err := d.db.QueryContext(ctx, strings.Join(parts, " UNION ALL "), args...)
	if err != nil {
		return nil, fmt.Errorf("read queue heads: %w", err)
	}
	defer rows.Close()
	out := make([][]event, len(qs))
	for rows.Next() {
		var id string
		var ev event
		if err := rows.Scan(&id, &ev.height, &ev.position, &ev.messageID, &ev.payload); err != nil {
			return nil, fmt.Errorf("read queue heads: %w", err)
		}
		i := at[id]
		if len(out[i]) == 0 {
			ev.attempts = qs[i].attempts
		}
		out[i] = append(out[i], ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read queue heads: %w", err)
	}
	return out, nil
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

// record writes a round's outcomes in tx, in a few statements whatever the
// number of queues and attempts: each queue's cursor moves past its
// delivered events, its pending count falls by as many, and it is
// released (one UPDATE of the queue rows, only those whose lease is still
// ours: a lease that ran out and was taken over writes nothing); then
// every attempt goes to the delivery log (one INSERT) and the webhooks'
// failure counts are set. A failure releases the queue until its backoff
// has passed and counts against the webhook, deactivating it at
// MaxFailures in a row; otherwise the queue goes behind those served
// longer ago.
func (d *Deliverer) record(ctx context.Context, tx *store.Tx, worker string, out []sent) error {
	const cols = 7
	var vals strings.Builder
	args := make([]any, 0, cols*len(out)+1)
	type failed struct {
		n    int // failures in a row, this one included
		last string
	}
	failures := map[string]failed{} // the webhooks whose last attempt failed
	var stale []any
	for i, s := range out {
		q := s.q
		if s.empty {
			stale = append(stale, q.webhookID)
		}
		ok, next, served := s.as, int64(0), d.now().UnixMilli() // due at once, behind the queues served before it
		h, pos, att := q.height, q.position, q.attempts
		if len(s.as) > 0 {
			last := s.as[len(s.as)-1]
			served = last.end.UnixMilli()
			if last.failure != "" {
				ok = s.as[:len(s.as)-1]
				n := 0
				if len(ok) == 0 { // the successes before it reset the count
					if err := tx.QueryRow(ctx, `SELECT failures FROM webhooks WHERE id = $1`, q.webhookID).Scan(&n); err != nil {
						return fmt.Errorf("webhook %s: %w", q.webhookID, err)
					}
				}
				failures[q.webhookID] = failed{n + 1, last.failure}
				next = last.end.Add(min(d.cfg.BaseBackoff<<min(n, 30), d.cfg.MaxBackoff)).UnixMilli()
				att = last.ev.attempts + 1
			}
			if len(ok) > 0 {
				h, pos = ok[len(ok)-1].ev.height, ok[len(ok)-1].ev.position
				if last.failure == "" {
					att = 0
				}
			}
		}
		if i > 0 {
			vals.WriteByte(',')
		}
		b := i*cols + 1
		fmt.Fprintf(&vals, "($%d, CAST($%d AS BIGINT), CAST($%d AS BIGINT), CAST($%d AS BIGINT), CAST($%d AS BIGINT), CAST($%d AS INTEGER), CAST($%d AS INTEGER))",
			b, b+1, b+2, b+3, b+4, b+5, b+6)
		args = append(args, q.webhookID, len(ok), next, served, h, pos, att)
	}
	if tx.Dialect() == store.Postgres {
		// Lock the queue rows in webhook id order, as the emitter's Flush
		// does: an UPDATE ... FROM locks in its join's order (a deadlock).
		ids := make([]any, len(out))
		for i, s := range out {
			ids[i] = s.q.webhookID
		}
		if _, err := tx.Exec(ctx, `SELECT webhook_id FROM webhook_queues WHERE webhook_id IN (`+placeholders(1, len(ids))+`)
			ORDER BY webhook_id FOR UPDATE`, ids...); err != nil {
			return fmt.Errorf("lock queues: %w", err)
		}
	}
	args = append(args, worker)
	rows, err := tx.Query(ctx, `UPDATE webhook_queues SET pending = pending - v.column2, next_attempt_at = v.column3, served_at = v.column4,
		delivered_height = v.column5, delivered_position = v.column6, head_attempts = v.column7, lease_owner = '', lease_until = 0
		FROM (VALUES `+vals.String()+`) AS v WHERE webhook_queues.webhook_id = v.column1 AND webhook_queues.lease_owner = $`+strconv.Itoa(len(args))+`
		RETURNING webhook_id`, args...)
	if err != nil {
		return fmt.Errorf("release queues: %w", err)
	}
	ours := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("release queues: %w", err)
		}
		ours[id] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("release queues: %w", err)
	}
	var logged []attempt
	var logIDs []string
	var reset []any
	for _, s := range out {
		if !ours[s.q.webhookID] || len(s.as) == 0 {
			continue
		}
		logged = append(logged, s.as...)
		for range s.as {
			logIDs = append(logIDs, s.q.webhookID)
		}
		if _, bad := failures[s.q.webhookID]; !bad {
			reset = append(reset, s.q.webhookID)
		}
	}
	if err := logAttempts(ctx, tx, logIDs, logged); err != nil {
		return err
	}
	if len(stale) > 0 {
		// Nothing after the cursor although events were counted (a reindex
		// raised events behind it, for addresses added since): count again
		// rather than claim the queue at every poll.
		if _, err := tx.Exec(ctx, `UPDATE webhook_queues SET pending = (SELECT COUNT(*) FROM webhook_outbox o
			WHERE o.webhook_id = webhook_queues.webhook_id AND (o.block_height, o.position) > (webhook_queues.delivered_height, webhook_queues.delivered_position))
			WHERE webhook_id IN (`+placeholders(1, len(stale))+`)`, stale...); err != nil {
			return fmt.Errorf("recount queues: %w", err)
		}
	}
	if len(reset) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE webhooks SET failures = 0 WHERE failures <> 0 AND id IN (`+placeholders(1, len(reset))+`)`,
			reset...); err != nil {
			return fmt.Errorf("reset failures: %w", err)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(failures)) {
		if !ours[id] {
			continue
		}
		f := failures[id]
		var err error
		if f.n >= d.cfg.MaxFailures {
			_, err = tx.Exec(ctx, `UPDATE webhooks SET failures = $1, status = 'inactive', inactive_reason = $2 WHERE id = $3`,
				f.n, fmt.Sprintf("deactivated after %d failed deliveries in a row; last: %s", f.n, truncateErr(f.last)), id)
		} else {
			_, err = tx.Exec(ctx, `UPDATE webhooks SET failures = $1 WHERE id = $2`, f.n, id)
		}
		if err != nil {
			return fmt.Errorf("webhook %s: count failure: %w", id, err)
		}
	}
	return nil
}

// logAttempts appends the attempts (of webhooks ids) to the delivery log,
// many rows per statement.
func logAttempts(ctx context.Context, tx *store.Tx, ids []string, as []attempt) error {
	const cols, chunk = 7, 500
	for len(as) > chunk {
		if err := logAttempts(ctx, tx, ids[:chunk], as[:chunk]); err != nil {
			return err
		}
		ids, as = ids[chunk:], as[chunk:]
	}
	if len(as) == 0 {
		return nil
	}
	args := make([]any, 0, cols*len(as))
	var vals strings.Builder
	for i, a := range as {
		if i > 0 {
			vals.WriteByte(',')
		}
		fmt.Fprintf(&vals, "($%d,$%d,$%d,$%d,$%d,$%d,$%d)", i*cols+1, i*cols+2, i*cols+3, i*cols+4, i*cols+5, i*cols+6, i*cols+7)
		args = append(args, a.ev.messageID, a.ev.attempts+1, ids[i], a.end.UnixMilli(), a.code,
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
