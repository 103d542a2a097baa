package export

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// TestRetentionAndGC: download URLs expire (never after the retention);
// after the retention an operation is gone (404) with its file, and files
// no operation owns are removed while others' files are left alone.
func TestRetentionAndGC(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		genDays(t, db, time.Date(2024, 8, 1, 0, 0, 0, 0, time.UTC), []int{5}, 5, false)
		ctx := context.Background()
		clk := newClock(time.Now())
		dir := t.TempDir()
		s := newService(t, db, Config{Dir: dir, URLTTL: time.Hour, Retention: 3 * time.Hour, GCInterval: time.Hour},
			WithClock(clk.now))
		start(t, s)
		op, err := s.Create(ctx, evmSpec(t, db, "2024-08-01", "2024-08-01"), "key-a")
		if err != nil {
			t.Fatal(err)
		}
		var done Operation
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if done, err = s.Get(ctx, op.OperationID, "key-a"); err != nil || done.OperationStatus != StatusRunning {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("still running")
			}
		}
		if err != nil || done.OperationStatus != StatusCompleted {
			t.Fatalf("%+v %v", done, err)
		}
		if _, err := s.Get(ctx, op.OperationID, "key-b"); !errors.Is(err, ErrNotFound) {
			t.Errorf("another owner reads the operation: %v", err)
		}
		u, _ := url.Parse(done.Metadata.DownloadURL)
		exp, _ := strconv.ParseInt(u.Query().Get("expires"), 10, 64)
		if exp != clk.now().Add(time.Hour).Unix() {
			t.Errorf("URL expires at %d, want now + URLTTL", exp)
		}
		sig := u.Query().Get("sig")
		if f, err := s.Open(ctx, op.OperationID, u.Query().Get("expires"), sig); err != nil {
			t.Fatal(err)
		} else {
			f.Close()
		}
		clk.add(time.Hour)
		if _, err := s.Open(ctx, op.OperationID, u.Query().Get("expires"), sig); !errors.Is(err, ErrURLExpired) {
			t.Errorf("an expired URL opens: %v", err)
		}
		// A fresh URL never outlives the retention.
		clk.add(90 * time.Minute)
		again, err := s.Get(ctx, op.OperationID, "key-a")
		if err != nil {
			t.Fatal(err)
		}
		u2, _ := url.Parse(again.Metadata.DownloadURL)
		j := jobRow(t, db, op.OperationID)
		if got := u2.Query().Get("expires"); got != strconv.FormatInt(j.FinishedAt+3*3600, 10) {
			t.Errorf("URL expires %s, want at the end of the retention %d", got, j.FinishedAt+3*3600)
		}

		// Files: the operation's, a dead attempt's, an unknown operation's
		// (old and new), and one this package did not make.
		orphanID := uuid.NewString()
		mk := func(name string, age time.Duration) {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte("x"), 0o640); err != nil {
				t.Fatal(err)
			}
			mt := time.Now().Add(-age)
			if err := os.Chtimes(p, mt, mt); err != nil {
				t.Fatal(err)
			}
		}
		mk(fileName(op.OperationID, 7, true), 0)
		mk(fileName(orphanID, 1, false), 0)
		mk(fileName(uuid.NewString(), 1, true), 0)
		oldOrphan := fileName(uuid.NewString(), 3, false)
		mk(oldOrphan, time.Hour)
		mk("notes.txt", time.Hour)
		// The GC clock is ahead of the files' times by the 2.5 h advanced.
		if err := s.GC(ctx); err != nil {
			t.Fatal(err)
		}
		left := func() []string {
			es, _ := os.ReadDir(dir)
			var out []string
			for _, e := range es {
				out = append(out, e.Name())
			}
			return out
		}
		got := strings.Join(left(), ",")
		if !strings.Contains(got, j.FileName) || !strings.Contains(got, "notes.txt") ||
			strings.Contains(got, fileName(op.OperationID, 7, true)) || strings.Contains(got, oldOrphan) ||
			strings.Contains(got, orphanID) {
			t.Errorf("after GC within the retention: %s", got)
		}
		clk.add(31 * time.Minute) // past the retention
		if _, err := s.Get(ctx, op.OperationID, "key-a"); !errors.Is(err, ErrNotFound) {
			t.Errorf("an expired operation is still served: %v", err)
		}
		if _, err := s.Open(ctx, op.OperationID, u2.Query().Get("expires"), u2.Query().Get("sig")); err == nil {
			t.Error("an expired operation's file opens")
		}
		if err := s.GC(ctx); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(left(), ","); got != "notes.txt" {
			t.Errorf("after GC past the retention: %s", got)
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM export_jobs WHERE id = $1`, op.OperationID).Scan(&n); err != nil || n != 0 {
			t.Errorf("expired job row: %d %v", n, err)
		}
	})
}

// TestFailures: a request that cannot be served fails at once with
// ErrInvalidRequest; a run that keeps failing is retried with a backoff and
// FAILED with ErrInternal after MaxAttempts, without internals in its message.
func TestFailures(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		genDays(t, db, time.Date(2024, 9, 1, 0, 0, 0, 0, time.UTC), []int{5}, 5, false)
		ctx := context.Background()
		clk := newClock(time.Now())
		dir := filepath.Join(t.TempDir(), "exports")
		s := newService(t, db, Config{Dir: dir, MaxAttempts: 2}, WithClock(clk.now))
		start(t, s)

		gone, err := s.Create(ctx, Spec{Type: TypeEVM, First: "2024-09-01", Last: "2024-09-01", Chains: []string{"999"},
			Addresses: []string{genAddr}}, "")
		if err != nil {
			t.Fatal(err)
		}
		op := waitOp(t, s, gone.OperationID)
		if op.OperationStatus != StatusFailed || op.Metadata == nil || op.Metadata.Code != CodeInvalidRequest ||
			!strings.Contains(op.Message, "chain 999 is no longer indexed") || op.Metadata.DownloadURL != "" {
			t.Errorf("unservable request: %+v %+v", op, op.Metadata)
		}

		// The export directory turns into a file: every run fails.
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		broken, err := s.Create(ctx, evmSpec(t, db, "2024-09-01", "2024-09-01"), "")
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for jobRow(t, db, broken.OperationID).Failures < 1 {
			if time.Now().After(deadline) {
				t.Fatal("the run never failed")
			}
			time.Sleep(5 * time.Millisecond)
		}
		r := jobRow(t, db, broken.OperationID)
		if r.Status != StatusRunning || r.LeaseOwner != "" || r.LeaseUntil <= clk.now().UnixMilli() || r.LastError == "" {
			t.Fatalf("after a failed run: %+v", r)
		}
		time.Sleep(50 * time.Millisecond)
		if r2 := jobRow(t, db, broken.OperationID); r2.Attempt != 1 {
			t.Fatalf("retried before the backoff: attempt %d", r2.Attempt)
		}
		clk.add(time.Minute)
		s.poke()
		op = waitOp(t, s, broken.OperationID)
		r = jobRow(t, db, broken.OperationID)
		if op.OperationStatus != StatusFailed || op.Metadata.Code != CodeInternal || strings.Contains(op.Message, dir) ||
			r.Attempt != 2 || r.Failures != 2 || !strings.Contains(r.LastError, "create file") {
			t.Errorf("after MaxAttempts: %+v %+v; row %+v", op, op.Metadata, r)
		}
	})
}

func TestConfig(t *testing.T) {
	c := Config{PublicURL: "https://x.example/"}.WithDefaults()
	if c.Dir != DefaultDir || c.RowCap != DefaultRowCap || c.Retention != DefaultRetention || c.Workers != DefaultWorkers ||
		c.URLTTL != DefaultURLTTL || c.validate() != nil || c.publicBase() != "https://x.example" {
		t.Errorf("defaults %+v: %v", c, c.validate())
	}
	for _, bad := range []Config{
		{}, {PublicURL: "/relative"}, {PublicURL: "ftp://x"}, {PublicURL: "https://x?a=1"},
		{PublicURL: "https://x", Retention: -1}, {PublicURL: "https://x", MaxAttempts: -1},
	} {
		if err := bad.WithDefaults().validate(); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"aa22054a-cb7c-4a4e-9b83-59f2ede74138.3.csv", true},
		{"aa22054a-cb7c-4a4e-9b83-59f2ede74138.12.csv.tmp", true},
		{"aa22054a-cb7c-4a4e-9b83-59f2ede74138.0.csv", false},
		{"aa22054a-cb7c-4a4e-9b83-59f2ede74138.x.csv", false},
		{"short.1.csv", false},
		{"notes.txt", false},
	} {
		if _, _, _, ok := parseFileName(c.name); ok != c.ok {
			t.Errorf("parseFileName(%q) = %v", c.name, ok)
		}
	}
}
