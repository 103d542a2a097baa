package export

import (
	"bytes"
	"context"
	"encoding/csv"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// clock is a settable test clock.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock    { c := &clock{}; c.ns.Store(t.UnixNano()); return c }
func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

func testLog() *slog.Logger {
	if os.Getenv("EXPORT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

func newService(t testing.TB, db *store.DB, cfg Config, opts ...Option) *Service {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = "https://exports.example"
	}
	if cfg.Poll == 0 {
		cfg.Poll = 10 * time.Millisecond
	}
	s, err := New(context.Background(), db, cfg, testLog(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func start(t testing.TB, s *Service) {
	t.Helper()
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
}

// evmSpec validates an EVM export request of genAddr on the generated chain.
func evmSpec(t testing.TB, db *store.DB, first, last string) Spec {
	t.Helper()
	n, err := api.LoadNetwork(context.Background(), db, "")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Request{Type: string(TypeEVM), FirstDate: first, LastDate: last,
		Options: &RequestOptions{Addresses: []string{genAddr}, IncludeChains: []string{genChainID}}}.Validate(n, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// waitOp polls until the operation leaves RUNNING.
func waitOp(t testing.TB, s *Service, id string) Operation {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		op, err := s.Get(context.Background(), id, "")
		if err != nil {
			t.Fatal(err)
		}
		if op.OperationStatus != StatusRunning {
			return op
		}
		if time.Now().After(deadline) {
			t.Fatalf("operation %s still RUNNING", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fetch opens an operation's file through its signed download URL and
// returns the records after the header.
func fetch(t testing.TB, s *Service, op Operation) [][]string {
	t.Helper()
	if op.Metadata == nil || op.Metadata.DownloadURL == "" {
		t.Fatalf("operation %+v has no download URL", op)
	}
	u, err := url.Parse(op.Metadata.DownloadURL)
	if err != nil || !strings.HasPrefix(op.Metadata.DownloadURL, s.cfg.publicBase()+DownloadPath(op.OperationID)+"?") {
		t.Fatalf("download URL %q", op.Metadata.DownloadURL)
	}
	f, err := s.Open(context.Background(), op.OperationID, u.Query().Get("expires"), u.Query().Get("sig"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || strings.Join(recs[0], ",") != strings.Join(Header(op.OperationType), ",") {
		t.Fatalf("bad header %v", recs[:min(1, len(recs))])
	}
	if !bytes.HasSuffix(b, []byte("\r\n")) {
		t.Errorf("file does not end with a complete record")
	}
	return recs[1:]
}

// filesOf lists the directory's files of operation id.
func filesOf(t testing.TB, dir, id string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, id+"*"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	sort.Strings(m)
	return m
}

func jobRow(t testing.TB, db *store.DB, id string) *job {
	t.Helper()
	j, err := jobs{db: db}.get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func joinRecs(recs [][]string) string {
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(strings.Join(r, ","))
		b.WriteByte('\n')
	}
	return b.String()
}

// TestTruncationAndContinuation: with a row cap, an export ends at a day
// boundary with WarnTruncatedExport and nextDate; exports continued from
// each nextDate together hold exactly the rows of an uncapped export, each
// once, in order, whatever the cap (smaller than a day, equal to one, or
// spanning several).
func TestTruncationAndContinuation(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		// Rows per day (each day with transfers also has one NATIVE row):
		// 31, 0, 26, 51, 6, 0, 0, 13 = 127.
		want := genDays(t, db, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), []int{30, 0, 25, 50, 5, 0, 0, 12}, 8, true)
		if len(want) != 127 {
			t.Fatalf("generated %d rows", len(want))
		}
		cases := []struct {
			cap   int64
			files []int    // rows per file
			next  []string // nextDate of each truncated file
		}{
			{-1, []int{127}, nil},
			{127, []int{127}, nil},
			{60, []int{57, 57, 13}, []string{"2024-03-04", "2024-03-08"}},
			{31, []int{31, 26, 51, 19}, []string{"2024-03-03", "2024-03-04", "2024-03-05"}},
			{20, []int{31, 26, 51, 19}, []string{"2024-03-03", "2024-03-04", "2024-03-05"}}, // days larger than the cap stay whole
			{1000, []int{127}, nil},
		}
		for _, c := range cases {
			s := newService(t, db, Config{RowCap: c.cap, Workers: 1})
			start(t, s)
			var got [][]string
			var sizes []int
			var nexts []string
			first := "2024-02-15"
			for range 10 {
				op, err := s.Create(context.Background(), evmSpec(t, db, first, "2024-03-31"), "")
				if err != nil {
					t.Fatal(err)
				}
				op = waitOp(t, s, op.OperationID)
				rows := fetch(t, s, op)
				got = append(got, rows...)
				sizes = append(sizes, len(rows))
				if op.OperationStatus == StatusCompleted {
					if op.Metadata.Code != "" || op.Metadata.NextDate != "" {
						t.Errorf("cap %d: completed with %+v", c.cap, op.Metadata)
					}
					break
				}
				if op.OperationStatus != StatusCompletedWithWarning || op.Metadata.Code != CodeTruncated ||
					op.Metadata.NextDate <= first || !strings.Contains(op.Message, op.Metadata.NextDate) {
					t.Fatalf("cap %d: %+v %+v", c.cap, op, op.Metadata)
				}
				// The file ends before nextDate: no day is split.
				if last := rows[len(rows)-1][4][:10]; last >= op.Metadata.NextDate {
					t.Errorf("cap %d: file ends on %s, nextDate %s", c.cap, last, op.Metadata.NextDate)
				}
				first = op.Metadata.NextDate
				nexts = append(nexts, first)
			}
			if joinRecs(got) != joinRecs(want) {
				t.Errorf("cap %d: continued exports differ from the data:\n got %d rows\nwant %d rows", c.cap, len(got), len(want))
			}
			if !equalInts(sizes, c.files) || strings.Join(nexts, ",") != strings.Join(c.next, ",") {
				t.Errorf("cap %d: files of %v rows, nextDates %v; want %v, %v", c.cap, sizes, nexts, c.files, c.next)
			}
			s.Close()
		}
	})
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestClaimIsExclusive: many workers claiming at once never share a job.
func TestClaimIsExclusive(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		s := newService(t, db, Config{})
		spec := Spec{Type: TypeEVM, First: "2024-01-01", Last: "2024-01-02", Chains: []string{"C"}, Addresses: []string{genAddr}}
		const n = 40
		for range n {
			if _, err := s.Create(context.Background(), spec, ""); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		claimed := map[string]int{}
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					j, err := s.jobs.claim(context.Background(), "w"+string(rune('a'+w)), time.Now(), time.Minute)
					if err != nil {
						t.Error(err)
						return
					}
					if j == nil {
						return
					}
					mu.Lock()
					claimed[j.ID]++
					mu.Unlock()
					if j.Attempt != 1 || j.Failures != 0 {
						t.Errorf("first claim of %s: attempt %d failures %d", j.ID, j.Attempt, j.Failures)
					}
				}
			}()
		}
		wg.Wait()
		if len(claimed) != n {
			t.Errorf("%d jobs claimed, want %d", len(claimed), n)
		}
		for id, c := range claimed {
			if c != 1 {
				t.Errorf("job %s claimed %d times", id, c)
			}
		}
	})
}

// TestLeaseFencing: a job is claimable again only once its lease passes;
// the worker that lost it can neither renew nor finish it.
func TestLeaseFencing(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		s := newService(t, db, Config{})
		ctx := context.Background()
		op, err := s.Create(ctx, Spec{Type: TypeEVM, First: "2024-01-01", Last: "2024-01-01", Chains: []string{"C"}}, "")
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		j1, err := s.jobs.claim(ctx, "w1", now, time.Minute)
		if err != nil || j1 == nil || j1.ID != op.OperationID || j1.Attempt != 1 {
			t.Fatalf("claim: %+v %v", j1, err)
		}
		if j, err := s.jobs.claim(ctx, "w2", now.Add(59*time.Second), time.Minute); err != nil || j != nil {
			t.Fatalf("claimed a leased job: %+v %v", j, err)
		}
		if ok, err := s.jobs.renew(ctx, j1.ID, 1, now.Add(90*time.Second).UnixMilli()); err != nil || !ok {
			t.Fatalf("renew: %v %v", ok, err)
		}
		if j, _ := s.jobs.claim(ctx, "w2", now.Add(80*time.Second), time.Minute); j != nil {
			t.Fatal("claimed a job whose lease was renewed")
		}
		j2, err := s.jobs.claim(ctx, "w2", now.Add(91*time.Second), time.Minute)
		if err != nil || j2 == nil || j2.Attempt != 2 || j2.Failures != 1 || j2.LeaseOwner != "w2" {
			t.Fatalf("take-over: %+v %v", j2, err)
		}
		if ok, _ := s.jobs.renew(ctx, j1.ID, 1, now.Add(time.Hour).UnixMilli()); ok {
			t.Error("the old attempt renewed a lease it lost")
		}
		j1.Status, j1.FileName = StatusCompleted, "stale.csv"
		if ok, _ := s.jobs.finish(ctx, j1, 1); ok {
			t.Error("the old attempt finished the job")
		}
		j2.Status, j2.FileName = StatusCompleted, "good.csv"
		if ok, err := s.jobs.finish(ctx, j2, 2); err != nil || !ok {
			t.Fatalf("finish: %v %v", ok, err)
		}
		if j := jobRow(t, db, op.OperationID); j.Status != StatusCompleted || j.FileName != "good.csv" || j.LeaseOwner != "" {
			t.Errorf("job %+v", j)
		}
		if j, _ := s.jobs.claim(ctx, "w3", now.Add(time.Hour), time.Minute); j != nil {
			t.Error("claimed a finished job")
		}
	})
}

// TestResumeAfterCrash: a worker died mid-job (its lease stands, its
// temporary file is half written). A new pool takes the job over once the
// lease passes and finishes it into exactly one complete file.
func TestResumeAfterCrash(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		want := genDays(t, db, time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), []int{40, 40}, 10, true)
		dir := t.TempDir()
		ctx := context.Background()
		dead := newService(t, db, Config{Dir: dir})
		op, err := dead.Create(ctx, evmSpec(t, db, "2024-05-01", "2024-05-02"), "")
		if err != nil {
			t.Fatal(err)
		}
		j, err := dead.jobs.claim(ctx, "dead-worker", time.Now(), 500*time.Millisecond)
		if err != nil || j == nil {
			t.Fatal(err)
		}
		half := filepath.Join(dir, fileName(j.ID, j.Attempt, true))
		if err := os.WriteFile(half, []byte(strings.Join(EVMHeader, ",")+"\r\n43114,1,0x"), 0o640); err != nil {
			t.Fatal(err)
		}
		s := newService(t, db, Config{Dir: dir, Lease: 500 * time.Millisecond})
		start(t, s)
		done := waitOp(t, s, op.OperationID)
		if done.OperationStatus != StatusCompleted {
			t.Fatalf("%+v %+v", done, done.Metadata)
		}
		if got := fetch(t, s, done); joinRecs(got) != joinRecs(want) {
			t.Errorf("resumed export holds %d rows, want %d", len(got), len(want))
		}
		if files := filesOf(t, dir, op.OperationID); strings.Join(files, ",") != fileName(op.OperationID, 2, false) {
			t.Errorf("files %v, want exactly the second attempt's", files)
		}
		if r := jobRow(t, db, op.OperationID); r.Attempt != 2 || r.Failures != 1 || r.RowCount != int64(len(want)) {
			t.Errorf("job after resume: attempt %d failures %d rows %d", r.Attempt, r.Failures, r.RowCount)
		}
	})
}

// TestShutdownGivesBack: Close mid-job releases the job at once (not as a
// failure) and removes the partial file; the next pool finishes it.
func TestShutdownGivesBack(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		want := genDays(t, db, time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC), []int{200}, 20, true)
		dir := t.TempDir()
		s := newService(t, db, Config{Dir: dir, Lease: time.Minute})
		mid := make(chan struct{})
		var once sync.Once
		s.rowHook = func(_ string, rows int64, _ func() error) {
			if rows == 50 {
				once.Do(func() { close(mid) })
			}
			time.Sleep(2 * time.Millisecond)
		}
		start(t, s)
		op, err := s.Create(context.Background(), evmSpec(t, db, "2024-06-01", "2024-06-01"), "")
		if err != nil {
			t.Fatal(err)
		}
		<-mid
		s.Close()
		r := jobRow(t, db, op.OperationID)
		if r.Status != StatusRunning || r.LeaseOwner != "" || r.LeaseUntil != 0 || r.Failures != 0 || r.Attempt != 1 {
			t.Fatalf("after shutdown: %+v", r)
		}
		if files := filesOf(t, dir, op.OperationID); len(files) != 0 {
			t.Errorf("files left by the interrupted attempt: %v", files)
		}
		s2 := newService(t, db, Config{Dir: dir})
		start(t, s2)
		done := waitOp(t, s2, op.OperationID)
		if got := fetch(t, s2, done); joinRecs(got) != joinRecs(want) {
			t.Errorf("%d rows, want %d", len(got), len(want))
		}
		if files := filesOf(t, dir, op.OperationID); strings.Join(files, ",") != fileName(op.OperationID, 2, false) {
			t.Errorf("files %v", files)
		}
	})
}
