package export

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// Service creates operations, runs them on a bounded pool of workers, serves
// their files and removes them after the retention.
type Service struct {
	db   *store.DB
	cfg  Config
	log  *slog.Logger
	sign *signer
	jobs jobs
	now  func() time.Time
	// node names this process's workers in lease_owner.
	node string
	wake chan struct{}

	mu      sync.Mutex
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started bool

	// rowHook, when set (tests), runs after each row a job writes; flush
	// pushes the rows written so far to the temporary file.
	rowHook func(id string, rows int64, flush func() error)
}

// Option adjusts a Service (tests inject clocks).
type Option func(*Service)

// WithClock sets the clock of timestamps, leases, URL expiry and retention.
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// New prepares the service on db: the export directory and the URL signing
// key (shared by replicas through the meta table). Workers start with Start.
func New(ctx context.Context, db *store.DB, cfg Config, log *slog.Logger, opts ...Option) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// A run reads lookups while its cursor is open: it needs a pool of more
	// than one connection, which an in-memory SQLite database is not.
	if dsn := db.String(); dsn == "sqlite:" || strings.HasPrefix(dsn, "sqlite::memory:") {
		return nil, fmt.Errorf("export: needs a file SQLite or a PostgreSQL database, not %s", dsn)
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("export: create directory: %w", err)
	}
	sg, err := loadSigner(ctx, db)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	s := &Service{db: db, cfg: cfg, log: log.With("component", "export"), sign: sg, jobs: jobs{db: db}, now: time.Now,
		node: fmt.Sprintf("%s/%d/%s", clip(host), os.Getpid(), hex.EncodeToString(b)), wake: make(chan struct{}, 1)}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Config returns the effective configuration.
func (s *Service) Config() Config { return s.cfg }

// Create stores a new RUNNING operation for spec on behalf of owner (an API
// key id) and wakes a worker.
func (s *Service) Create(ctx context.Context, spec Spec, owner string) (Operation, error) {
	now := s.now().Unix()
	j := &job{ID: uuid.NewString(), Type: spec.Type, Status: StatusRunning, Spec: spec.encode(), Owner: owner,
		CreatedAt: now, UpdatedAt: now}
	if err := s.jobs.insert(ctx, j); err != nil {
		return Operation{}, err
	}
	s.poke()
	return s.operation(j), nil
}

// Get returns the operation id as owner sees it. Operations of other owners,
// and those past their retention, are ErrNotFound.
func (s *Service) Get(ctx context.Context, id, owner string) (Operation, error) {
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return Operation{}, ErrNotFound
	}
	j, err := s.jobs.get(ctx, strings.ToLower(id))
	if err != nil {
		return Operation{}, err
	}
	if j.Owner != owner || s.expired(j) {
		return Operation{}, ErrNotFound
	}
	return s.operation(j), nil
}

func (s *Service) expired(j *job) bool {
	return j.FinishedAt > 0 && s.now().Unix() >= j.FinishedAt+int64(s.cfg.Retention/time.Second)
}

func (s *Service) operation(j *job) Operation {
	op := Operation{OperationID: j.ID, OperationType: j.Type, OperationStatus: j.Status, Message: j.Message,
		CreatedAtTimestamp: j.CreatedAt, UpdatedAtTimestamp: j.UpdatedAt}
	md := &Metadata{Code: j.Code, NextDate: j.NextDate}
	if (j.Status == StatusCompleted || j.Status == StatusCompletedWithWarning) && j.FileName != "" {
		md.DownloadURL = s.downloadURL(j)
	}
	if *md != (Metadata{}) {
		op.Metadata = md
	}
	return op
}

// DownloadPath is the route of a download below PublicURL.
func DownloadPath(id string) string { return "/v1/operations/" + id + "/download" }

// downloadURL signs a URL valid for URLTTL, never beyond the retention.
func (s *Service) downloadURL(j *job) string {
	exp := s.now().Add(s.cfg.URLTTL).Unix()
	exp = min(exp, j.FinishedAt+int64(s.cfg.Retention/time.Second))
	q := url.Values{"expires": {strconv.FormatInt(exp, 10)}, "sig": {s.sign.sign(j.ID, exp)}}
	return s.cfg.publicBase() + DownloadPath(j.ID) + "?" + q.Encode()
}

// Download errors.
var (
	// ErrBadSignature: the URL was not issued by this service (or was altered).
	ErrBadSignature = errors.New("export: the download URL is not valid")
	// ErrURLExpired: the URL's expiry has passed.
	ErrURLExpired = errors.New("export: the download URL has expired")
)

// File is an export file opened for download.
type File struct {
	*os.File
	Name    string // suggested file name
	ModTime time.Time
	Size    int64
}

// Open checks a download URL's expiry and signature and opens the file of
// operation id. The caller closes the file.
func (s *Service) Open(ctx context.Context, id, expires, sig string) (*File, error) {
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 || id != strings.ToLower(id) {
		return nil, ErrNotFound
	}
	exp, err := strconv.ParseInt(expires, 10, 64)
	if err != nil || exp <= 0 || len(expires) > 12 || sig == "" || !s.sign.verify(id, exp, sig) {
		return nil, ErrBadSignature
	}
	if s.now().Unix() >= exp {
		return nil, ErrURLExpired
	}
	j, err := s.jobs.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if (j.Status != StatusCompleted && j.Status != StatusCompletedWithWarning) || j.FileName == "" || s.expired(j) {
		return nil, ErrNotFound
	}
	f, err := os.Open(filepath.Join(s.cfg.Dir, j.FileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("export: open %s: %w", j.FileName, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("export: stat %s: %w", j.FileName, err)
	}
	name := strings.ToLower(strings.TrimPrefix(string(j.Type), "TRANSACTION_EXPORT_"))
	return &File{File: f, Name: "transactions-" + strings.ReplaceAll(name, "_", "-") + "-" + j.ID + ".csv",
		ModTime: st.ModTime(), Size: st.Size()}, nil
}

// poke wakes one idle worker of this process.
func (s *Service) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Start runs the workers and the garbage collector until ctx ends or Close.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("export: already started")
	}
	s.started = true
	ctx, s.cancel = context.WithCancel(ctx)
	for i := range max(s.cfg.Workers, 0) {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.work(ctx, fmt.Sprintf("%s#%d", s.node, i))
		}()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.collect(ctx)
	}()
	s.log.Info("export workers started", "workers", s.cfg.Workers, "dir", s.cfg.Dir)
	return nil
}

// Close stops the workers and waits for them: a job in progress is given
// back (its lease released, not counted as a failure) for the next start
// or another replica to run again.
func (s *Service) Close() error {
	s.mu.Lock()
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.wg.Wait()
	return nil
}

func (s *Service) work(ctx context.Context, worker string) {
	t := time.NewTicker(s.cfg.Poll)
	defer t.Stop()
	for {
		now := s.now()
		j, err := s.jobs.claim(ctx, worker, now, s.cfg.Lease)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("claim export job", "err", err)
		}
		if j != nil {
			s.poke() // another idle worker may find more
			s.runJob(ctx, j, worker)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-t.C:
		}
	}
}
