package webhooks_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/webhooks"
)

// receiver is a webhook endpoint on 127.0.0.1 recording what it accepts.
// fault, when set, decides the fate of a request before it is accepted:
// "down" drops the connection, "500" answers 500, "slow" answers after the
// deliverer's timeout, "" accepts.
type receiver struct {
	srv    *httptest.Server
	secret string
	oapi   *apitest.Spec
	fault  atomic.Pointer[func(n int64) string]
	n      atomic.Int64

	mu       sync.Mutex
	got      []received // accepted address_activity events, in arrival order
	platform [][]byte   // accepted primary-network and validator events, in arrival order
	badSig   int
	invalids []string
}

type received struct {
	hook, messageID string
	height          uint64
	tx              int
}

func newReceiver(t *testing.T, oapi *apitest.Spec) *receiver {
	r := &receiver{oapi: oapi}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	n := r.n.Add(1)
	if f := r.fault.Load(); f != nil {
		switch (*f)(n) {
		case "down":
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
		case "500":
			http.Error(w, "no", http.StatusInternalServerError)
			return
		case "slow":
			time.Sleep(400 * time.Millisecond)
			return
		}
	}
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if webhooks.Sign(r.secret, body) != req.Header.Get("x-signature") {
		r.badSig++
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var env struct{ EventType string }
	if err := json.Unmarshal(body, &env); err == nil && env.EventType != webhooks.EventAddressActivity {
		// Primary-network and validator events (primary_test.go).
		if err := checkPlatformPayload(r.oapi, body); err != nil {
			r.invalids = append(r.invalids, err.Error())
		}
		r.platform = append(r.platform, body)
		return
	}
	if err := r.oapi.CheckSchema("WebhookAddressActivityResponse", body); err != nil {
		r.invalids = append(r.invalids, err.Error())
	}
	var p struct {
		WebhookID, MessageID string
		Event                struct {
			Transaction struct {
				BlockNumber      string
				TransactionIndex int
			}
		}
	}
	if err := json.Unmarshal(body, &p); err != nil {
		r.invalids = append(r.invalids, err.Error())
		return
	}
	var h uint64
	for _, c := range p.Event.Transaction.BlockNumber {
		h = h*10 + uint64(c-'0')
	}
	r.got = append(r.got, received{p.WebhookID, p.MessageID, h, p.Event.Transaction.TransactionIndex})
}

// TestDelivery sends the events of devnet-a's blocks to a real receiver on
// 127.0.0.1 through faults (connections dropped, 500s, timeouts): every
// event the recorded blocks imply arrives, signed, valid against the
// document, in block order per webhook, and nothing else arrives.
func TestDelivery(t *testing.T) {
	blocks := recordedCChain(t)
	oapi := apitest.Load(t)
	watch := watchLists(t, blocks)
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			rcv := newReceiver(t, oapi)
			// The first 30 requests meet faults: 10 dropped connections, 10
			// 500s, 10 timeouts.
			fault := func(n int64) string {
				switch {
				case n <= 10:
					return "down"
				case n <= 20:
					return "500"
				case n <= 30:
					return "slow"
				}
				return ""
			}
			rcv.fault.Store(&fault)
			db, _, hooks := ingestWithHooks(t, ctx, backend, watch, rcv.srv.URL+"/")
			secret, err := webhooks.NewRegistry(db, nil).Secret(ctx, "owner")
			if err != nil {
				t.Fatal(err)
			}
			rcv.secret = secret
			want := expected(blocks, watch, hooks)

			deliverAll(t, ctx, db, webhooks.DeliveryConfig{Workers: 3, Poll: 10 * time.Millisecond,
				Timeout: 200 * time.Millisecond, BaseBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
				Policy: webhooks.URLPolicy{AllowLoopback: true}})

			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			if rcv.badSig > 0 || len(rcv.invalids) > 0 {
				t.Errorf("%d bad signatures; invalid payloads: %v", rcv.badSig, rcv.invalids)
			}
			seen := map[event]bool{}
			last := map[string]received{}
			for _, g := range rcv.got {
				ev := event{g.hook, g.height, g.tx}
				if !want[ev] {
					t.Errorf("received an event the blocks do not imply: %+v", g)
				}
				if g.messageID != webhooks.MessageID(g.hook, "C", g.height, g.tx) {
					t.Errorf("message id %s for %+v", g.messageID, g)
				}
				// In order per webhook (a retry of an accepted event may repeat it).
				if l, ok := last[g.hook]; ok && (g.height < l.height || (g.height == l.height && g.tx < l.tx)) && !seen[ev] {
					t.Errorf("webhook %s: %+v after %+v", hooks[g.hook], g, l)
				}
				last[g.hook] = g
				seen[ev] = true
			}
			for ev := range want {
				if !seen[ev] {
					t.Errorf("not received: webhook %s block %d tx %d", hooks[ev.hook], ev.height, ev.tx)
				}
			}
			var attempts, failed int
			if err := db.QueryRowContext(ctx, `SELECT COUNT(*), SUM(CASE WHEN error <> '' THEN 1 ELSE 0 END) FROM webhook_deliveries`).Scan(&attempts, &failed); err != nil {
				t.Fatal(err)
			}
			if failed < 30 || attempts != failed+len(want) {
				t.Errorf("delivery log: %d attempts, %d failed, %d events", attempts, failed, len(want))
			}
		})
	}
}

// TestDeactivation: a webhook whose endpoint keeps failing is deactivated
// after MaxFailures attempts in a row (visible through the registry, as GET
// shows it), and its events wait, undelivered.
func TestDeactivation(t *testing.T) {
	blocks := recordedCChain(t)
	watch := watchLists(t, blocks)
	delete(watch, "silent")
	delete(watch, "logs")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rcv := newReceiver(t, apitest.Load(t))
	fault := func(int64) string { return "500" }
	rcv.fault.Store(&fault)
	db, _, hooks := ingestWithHooks(t, ctx, "sqlite", watch, rcv.srv.URL+"/")
	d := webhooks.NewDeliverer(db, webhooks.DeliveryConfig{Workers: 2, Poll: 5 * time.Millisecond, BaseBackoff: time.Millisecond,
		MaxBackoff: 2 * time.Millisecond, MaxFailures: 5, Policy: webhooks.URLPolicy{AllowLoopback: true}}, nil)
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	reg := webhooks.NewRegistry(db, nil)
	for id := range hooks {
		for {
			w, err := reg.Get(ctx, "owner", id)
			if err != nil {
				t.Fatal(err)
			}
			if w.Status == webhooks.StatusInactive {
				if !strings.Contains(w.InactiveReason, "5 failed deliveries") || w.Failures != 5 {
					t.Errorf("deactivated: %+v", w)
				}
				break
			}
			if ctx.Err() != nil {
				t.Fatal("not deactivated")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := rcv.n.Load(); n != 5 {
		t.Errorf("%d requests, want 5 (then none: the webhook is inactive)", n)
	}
	if undelivered(t, ctx, db) == 0 {
		t.Error("no event waits for the deactivated webhook")
	}
}

func waitDelivered(t testing.TB, ctx context.Context, db *store.DB) {
	t.Helper()
	for {
		pending := undelivered(t, ctx, db)
		if pending == 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%d events undelivered", pending)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// outboxStatus is each outbox event's delivery state, from its queue's
// cursor (the events at or before it were delivered).
const outboxStatus = `CASE WHEN q.webhook_id IS NOT NULL AND (o.block_height, o.position) <= (q.delivered_height, q.delivered_position)
	THEN 'delivered' ELSE 'pending' END`

// undelivered counts the outbox events after their queues' cursors.
func undelivered(t testing.TB, ctx context.Context, db *store.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_outbox o LEFT JOIN webhook_queues q ON q.webhook_id = o.webhook_id
		WHERE `+outboxStatus+` = 'pending'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// deliverAll runs a deliverer with cfg until every event is delivered.
func deliverAll(t *testing.T, ctx context.Context, db *store.DB, cfg webhooks.DeliveryConfig) {
	t.Helper()
	d := webhooks.NewDeliverer(db, cfg, nil)
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	waitDelivered(t, ctx, db)
}

// TestStaleQueue: events written behind a queue's cursor (a reindex raising
// events of blocks already delivered, for addresses added since) are not
// sent, and the queue's count of them is corrected rather than the queue
// claimed at every poll; an event after the cursor is still delivered.
func TestStaleQueue(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			db := storetest.Open(t, storetest.DSNFor(t, backend))
			var hits atomic.Int64
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
			defer rcv.Close()
			w := &webhooks.Webhook{EventType: webhooks.EventAddressActivity, URL: rcv.URL, ChainID: "43112", ChainKey: "C",
				Status: webhooks.StatusActive, Metadata: []byte(`{}`), Keys: []string{"0x" + strings.Repeat("ab", 20)}}
			if err := webhooks.NewRegistry(db, nil).Create(ctx, "owner", w); err != nil {
				t.Fatal(err)
			}
			// Delivered up to block 10; events at 5 and 10 (behind or at the
			// cursor) and the queue counting them as pending.
			for _, h := range []int64{5, 10} {
				if _, err := db.ExecContext(ctx, `INSERT INTO webhook_outbox (webhook_id, block_height, position, message_id, chain_key, payload, created_at)
					VALUES ($1, $2, 0, $3, 'C', '{}', 0)`, w.ID, h, webhooks.MessageID(w.ID, "C", uint64(h), 0)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO webhook_queues (webhook_id, pending, delivered_height, delivered_position)
				VALUES ($1, 2, 10, 0)`, w.ID); err != nil {
				t.Fatal(err)
			}
			pending := func() (n int64) {
				if err := db.QueryRowContext(ctx, `SELECT pending FROM webhook_queues WHERE webhook_id = $1`, w.ID).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			d := webhooks.NewDeliverer(db, webhooks.DeliveryConfig{Workers: 2, Poll: 5 * time.Millisecond,
				Policy: webhooks.URLPolicy{AllowLoopback: true}}, nil)
			if err := d.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			for pending() != 0 {
				if ctx.Err() != nil {
					t.Fatal("the stale count was not corrected")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if n := hits.Load(); n != 0 {
				t.Errorf("%d events behind the cursor sent", n)
			}
			// A new event after the cursor, counted as the emitter's Flush does.
			if _, err := db.ExecContext(ctx, `INSERT INTO webhook_outbox (webhook_id, block_height, position, message_id, chain_key, payload, created_at)
				VALUES ($1, 11, 0, $2, 'C', '{}', 0)`, w.ID, webhooks.MessageID(w.ID, "C", 11, 0)); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `UPDATE webhook_queues SET pending = pending + 1 WHERE webhook_id = $1`, w.ID); err != nil {
				t.Fatal(err)
			}
			waitDelivered(t, ctx, db)
			if n := hits.Load(); n != 1 {
				t.Errorf("%d events sent, want the one after the cursor", n)
			}
			if p := pending(); p != 0 {
				t.Errorf("pending %d after delivering everything", p)
			}
		})
	}
}
