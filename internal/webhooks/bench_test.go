package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/webhooks"
)

// BenchmarkDelivery measures delivery from the outbox to a receiver on
// 127.0.0.1 answering 200 at once: 1,000 webhooks watching 100,000
// addresses (100 each), WEBHOOK_BENCH_EVENTS events (default 20,000) spread
// over them in block order, as the emitter writes them. It reports
// deliveries/s and the p50/p99 latency from the event's commit to its
// delivery being recorded. WEBHOOK_BENCH_BACKEND picks sqlite (default) or
// postgres.
//
//	go test ./internal/webhooks -run '^$' -bench Delivery -benchtime 1x
func BenchmarkDelivery(b *testing.B) {
	backend := os.Getenv("WEBHOOK_BENCH_BACKEND")
	if backend == "" {
		backend = "sqlite"
	}
	events := 20000
	if s := os.Getenv("WEBHOOK_BENCH_EVENTS"); s != "" {
		events, _ = strconv.Atoi(s)
	}
	const hooks, perHook = 1000, 100
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		db, err := store.Open(ctx, storetest.DSNFor(b, backend))
		if err != nil {
			b.Fatal(err)
		}
		if err := db.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
		reg := webhooks.NewRegistry(db, nil)
		ids := make([]string, hooks)
		for h := range hooks {
			keys := make([]string, perHook)
			for k := range keys {
				keys[k] = fmt.Sprintf("0x%040x", h*perHook+k+1)
			}
			w := &webhooks.Webhook{EventType: webhooks.EventAddressActivity, URL: rcv.URL + "/" + strconv.Itoa(h), ChainID: "88888",
				ChainKey: "C", Status: webhooks.StatusActive, Metadata: []byte(`{}`), Keys: keys}
			if err := reg.Create(ctx, "owner", w); err != nil {
				b.Fatal(err)
			}
			ids[h] = w.ID
		}
		payload := `{"event":{"transaction":{"txHash":"0x` + fmt.Sprintf("%064x", 1) + `"}},"eventType":"address_activity"}`
		tx, err := db.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now().UnixMilli()
		for e := range events {
			h := e % hooks
			if _, err := tx.Exec(ctx, `INSERT INTO webhook_outbox (webhook_id, block_height, position, message_id, chain_key, payload, created_at)
				VALUES ($1,$2,$3,$4,'C',$5,$6)`, ids[h], e/hooks, 0, webhooks.MessageID(ids[h], "C", uint64(e/hooks), 0), payload, now); err != nil {
				b.Fatal(err)
			}
		}
		for h := range hooks {
			if _, err := tx.Exec(ctx, `INSERT INTO webhook_queues (webhook_id, pending) VALUES ($1, $2)`,
				ids[h], (events-h+hooks-1)/hooks); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		d := webhooks.NewDeliverer(db, webhooks.DeliveryConfig{Workers: 8, Poll: 5 * time.Millisecond,
			Policy: webhooks.URLPolicy{AllowLoopback: true}}, nil)
		b.StartTimer()
		start := time.Now()
		if err := d.Start(ctx); err != nil {
			b.Fatal(err)
		}
		for {
			var pending int
			if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_outbox WHERE status = 'pending'`).Scan(&pending); err != nil {
				b.Fatal(err)
			}
			if pending == 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		d.Close()
		rcv.Close()
		// Latency from the moment delivery could start (every event was
		// committed before): delivered_at - start.
		rows, err := db.QueryContext(ctx, `SELECT delivered_at FROM webhook_outbox`)
		if err != nil {
			b.Fatal(err)
		}
		var lat []int64
		for rows.Next() {
			var at int64
			if err := rows.Scan(&at); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, at-start.UnixMilli())
		}
		rows.Close()
		slices.Sort(lat)
		b.ReportMetric(float64(events)/elapsed.Seconds(), "deliveries/s")
		b.ReportMetric(float64(lat[len(lat)/2]), "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ms")
		db.Close()
	}
}
