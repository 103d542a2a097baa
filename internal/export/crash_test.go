package export

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// Environment of TestCrashChild, the worker process TestRestartAfterKill kills.
const (
	envCrashDSN  = "PERMAFROST_EXPORT_CRASH_DSN"
	envCrashDir  = "PERMAFROST_EXPORT_CRASH_DIR"
	envCrashMark = "PERMAFROST_EXPORT_CRASH_MARK"
)

// TestRestartAfterKill: a worker process is killed (SIGKILL) in the middle
// of a job, with rows already in its temporary file. A pool started again
// takes the job over when the dead worker's lease passes and finishes it
// into exactly one complete file; the half-written one is gone.
func TestRestartAfterKill(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			dsn := storetest.DSNFor(t, backend)
			db := storetest.Open(t, dsn)
			want := genDays(t, db, time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC), []int{120, 80}, 10, true)
			dir := t.TempDir()
			ctx := context.Background()
			s := newService(t, db, Config{Dir: dir, Lease: time.Second})
			op, err := s.Create(ctx, evmSpec(t, db, "2024-07-01", "2024-07-02"), "")
			if err != nil {
				t.Fatal(err)
			}
			mark := filepath.Join(t.TempDir(), "mid-job")
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), envCrashDSN+"="+dsn, envCrashDir+"="+dir, envCrashMark+"="+mark)
			out := &strings.Builder{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			deadline := time.After(60 * time.Second)
		wait:
			for {
				select {
				case err := <-exited:
					t.Fatalf("worker process exited before the kill: %v\n%s", err, out)
				case <-deadline:
					cmd.Process.Kill()
					t.Fatalf("worker process never got mid-job\n%s", out)
				case <-time.After(10 * time.Millisecond):
					if _, err := os.Stat(mark); err == nil {
						break wait
					}
				}
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-exited

			// What the crash left: the job leased to the dead worker, a
			// half-written temporary file.
			r := jobRow(t, db, op.OperationID)
			if r.Status != StatusRunning || r.Attempt != 1 || r.LeaseOwner == "" {
				t.Fatalf("after the kill: %+v", r)
			}
			tmp := filepath.Join(dir, fileName(op.OperationID, 1, true))
			b, err := os.ReadFile(tmp)
			if err != nil {
				t.Fatalf("no half-written file: %v", err)
			}
			if lines := strings.Count(string(b), "\r\n"); lines < 11 || lines > len(want) {
				t.Fatalf("the dead worker's file has %d lines", lines)
			}

			s2 := newService(t, db, Config{Dir: dir, Lease: time.Second})
			start(t, s2)
			done := waitOp(t, s2, op.OperationID)
			if done.OperationStatus != StatusCompleted {
				t.Fatalf("%+v %+v", done, done.Metadata)
			}
			if got := fetch(t, s2, done); joinRecs(got) != joinRecs(want) {
				t.Errorf("%d rows after restart, want %d", len(got), len(want))
			}
			if files := filesOf(t, dir, op.OperationID); strings.Join(files, ",") != fileName(op.OperationID, 2, false) {
				t.Errorf("files %v, want exactly one complete file", files)
			}
			if r := jobRow(t, db, op.OperationID); r.Attempt != 2 || r.Failures != 1 {
				t.Errorf("attempt %d failures %d", r.Attempt, r.Failures)
			}
		})
	}
}

// TestCrashChild is the worker process of TestRestartAfterKill: it runs the
// pool and, 10 rows into the job, flushes them to its temporary file,
// signals, and hangs until killed.
func TestCrashChild(t *testing.T) {
	dsn := os.Getenv(envCrashDSN)
	if dsn == "" {
		t.Skip("helper process of TestRestartAfterKill")
	}
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	s := newService(t, db, Config{Dir: os.Getenv(envCrashDir), Lease: time.Second, Workers: 1})
	s.rowHook = func(_ string, rows int64, flush func() error) {
		if rows != 10 {
			return
		}
		if err := flush(); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(os.Getenv(envCrashMark), nil, 0o600); err != nil {
			t.Error(err)
		}
		select {} // killed here
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Minute)
	t.Error("not killed")
}
