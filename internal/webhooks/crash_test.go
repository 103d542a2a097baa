package webhooks_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
	"github.com/permafrost-dev/permafrost/internal/webhooks"
)

// crashChildEnv carries "DSN\x1fNODE_URL\x1fGENESIS" to the re-executed
// test binary, which then indexes and delivers until it is killed.
const crashChildEnv = "PERMAFROST_WEBHOOK_CRASH_CHILD"

// crashChild indexes devnet-a into the database and delivers webhook events
// with no end: the parent kills it.
func crashChild(args string) error {
	parts := strings.Split(args, "\x1f")
	if len(parts) != 3 {
		return fmt.Errorf("bad %s", crashChildEnv)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, parts[0])
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := webhooks.NewDeliverer(db, webhooks.DeliveryConfig{Workers: 2, Poll: 5 * time.Millisecond, Timeout: time.Second, Lease: 3 * time.Second,
		BaseBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Policy: webhooks.URLPolicy{AllowLoopback: true}}, log)
	if err := d.Start(ctx); err != nil {
		return err
	}
	set, err := chains.Build(ctx, chains.Options{NodeURL: parts[1], GenesisPath: parts[2], Log: log, BatchSize: 4})
	if err != nil {
		return err
	}
	if err := ingest.New(db, set.Chains, ingest.Options{UntilTip: true, Discover: set.Discover(db)}, log).Run(ctx); err != nil {
		return err
	}
	select {} // deliver until killed
}

// TestCrashDelivery kills the indexing and delivering process with SIGKILL
// at random moments (at least 20 times), restarting it each time: in the
// end every event the recorded blocks imply (address, primary-network and
// validator activity) was received at least once, and the receiver saw
// none they do not imply.
func TestCrashDelivery(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	blocks := recordedCChain(t)
	watch := watchLists(t, blocks)
	rec := loadRecording(t)
	platform := rec.platformHooks(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			rcv := newReceiver(t, apitest.Load(t))
			dsn := storetest.DSNFor(t, backend)
			db, err := store.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			hooks := registerHooks(t, ctx, db, watch, rcv.srv.URL+"/")
			if rcv.secret, err = webhooks.NewRegistry(db, nil).Secret(ctx, "owner"); err != nil {
				t.Fatal(err)
			}
			want := expected(blocks, watch, hooks)
			names := registerPlatformHooks(t, ctx, db, platform, rcv.srv.URL+"/")
			wantPlatform, amounts := rec.wantPlatform(t, platform, names)
			args := strings.Join([]string{dsn, testenv.ReplayNode(t), filepath.Join(testenv.DevnetDir(t), "genesis.json")}, "\x1f")
			rng := rand.New(rand.NewSource(time.Now().UnixNano()))
			start := func() *exec.Cmd {
				cmd := exec.Command(exe, "-test.run=^$")
				cmd.Env = append(os.Environ(), crashChildEnv+"="+args)
				cmd.Stderr = os.Stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				return cmd
			}
			kills := 0
			for ; kills < 24; kills++ {
				cmd := start()
				time.Sleep(time.Duration(100+rng.Intn(600)) * time.Millisecond)
				_ = cmd.Process.Kill() // SIGKILL
				_ = cmd.Wait()
			}
			cmd := start()
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			waitAll(t, ctx, db, len(want)+len(wantPlatform))

			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			if rcv.badSig > 0 || len(rcv.invalids) > 0 {
				t.Errorf("%d bad signatures; invalid payloads: %v", rcv.badSig, rcv.invalids)
			}
			seen := map[event]int{}
			for _, g := range rcv.got {
				ev := event{g.hook, g.height, g.tx}
				if !want[ev] {
					t.Errorf("received an event the blocks do not imply: %+v", g)
				}
				seen[ev]++
			}
			dups := 0
			for ev := range want {
				if seen[ev] == 0 {
					t.Errorf("never received: webhook %s block %d tx %d", hooks[ev.hook], ev.height, ev.tx)
				}
				dups += max(seen[ev]-1, 0)
			}
			comparePlatform(t, rec, rcv.platform, wantPlatform, amounts, names)
			t.Logf("%d kills; %d address_activity events, %d received again after a crash; %d primary-network and validator events, %d received",
				kills, len(want), dups, len(wantPlatform), len(rcv.platform))
		})
	}
}

// registerHooks is ingestWithHooks' registration alone.
func registerHooks(t *testing.T, ctx context.Context, db *store.DB, watch map[string][]string, urlBase string) map[string]string {
	t.Helper()
	reg := webhooks.NewRegistry(db, nil)
	hooks := map[string]string{}
	for name, keys := range watch {
		w := &webhooks.Webhook{EventType: webhooks.EventAddressActivity, URL: urlBase + name, ChainID: "88888", ChainKey: "C",
			Status: webhooks.StatusActive, Metadata: []byte(`{}`), IncludeLogs: name == "logs", Keys: keys}
		if err := reg.Create(ctx, "owner", w); err != nil {
			t.Fatal(err)
		}
		hooks[w.ID] = name
	}
	return hooks
}

// waitAll waits until the chains are indexed to the recorded tips (n events
// raised) and every event is delivered.
func waitAll(t *testing.T, ctx context.Context, db *store.DB, n int) {
	t.Helper()
	for {
		var total, delivered int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*), SUM(CASE WHEN `+outboxStatus+` = 'delivered' THEN 1 ELSE 0 END)
			FROM webhook_outbox o LEFT JOIN webhook_queues q ON q.webhook_id = o.webhook_id`).Scan(&total, &delivered); err != nil && ctx.Err() == nil {
			// SUM of no rows is NULL.
			total, delivered = 0, 0
		}
		if total >= n && delivered == total {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d events raised, %d delivered", total, n, delivered)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
