package export

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// invalidError fails a job with ErrInvalidRequest: the request cannot be
// served, whatever the retries (e.g. a chain that is no longer indexed).
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }

func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// errLeaseLost: another worker took the job over (this one stalled).
var errLeaseLost = errors.New("export: lease lost")

// runJob runs one claimed attempt of j to its end: finished, failed, or given
// back for a retry.
func (s *Service) runJob(ctx context.Context, j *job, worker string) {
	log := s.log.With("operation", j.ID, "attempt", j.Attempt, "worker", worker)
	// Final bookkeeping must happen even when ctx ends (shutdown).
	bg := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	}
	if j.Failures >= int64(s.cfg.MaxAttempts) {
		log.Error("export gave up", "failures", j.Failures, "last_error", j.LastError)
		fctx, cancel := bg()
		defer cancel()
		s.fail(fctx, j, CodeInternal, fmt.Sprintf("the export could not be completed (%d attempts failed); try again later", j.Failures))
		return
	}
	spec, err := decodeSpec(j.Spec)
	if err != nil || spec.Type != j.Type {
		fctx, cancel := bg()
		defer cancel()
		j.LastError = fmt.Sprint(err)
		s.fail(fctx, j, CodeInvalidRequest, "the stored export request is unreadable; create the export again")
		return
	}

	runCtx, cancelRun := context.WithTimeout(ctx, s.cfg.JobTimeout)
	lost := make(chan struct{})
	hbDone := make(chan struct{})
	go func() { // heartbeat: keep the lease while the run lasts
		defer close(hbDone)
		t := time.NewTicker(max(s.cfg.Lease/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
			}
			ok, err := s.jobs.renew(runCtx, j.ID, j.Attempt, s.now().Add(s.cfg.Lease).UnixMilli())
			if err != nil {
				if runCtx.Err() == nil {
					log.Warn("renew export lease", "err", err)
				}
				continue
			}
			if !ok {
				close(lost)
				cancelRun()
				return
			}
		}
	}()
	start := time.Now()
	res, file, runErr := s.export(runCtx, j, spec)
	cancelRun()
	<-hbDone
	select {
	case <-lost:
		runErr = errLeaseLost
	default:
	}

	fctx, cancel := bg()
	defer cancel()
	var inv *invalidError
	switch {
	case runErr == nil:
		j.Status, j.Code, j.Message = StatusCompleted, "", ""
		if res.truncated {
			j.Status, j.Code, j.NextDate = StatusCompletedWithWarning, CodeTruncated, res.nextDate
			j.Message = fmt.Sprintf("the export reached the limit of %d rows: it holds the days before %s; continue with firstDate %s",
				s.cfg.RowCap, res.nextDate, res.nextDate)
		}
		j.FileName, j.FileSize, j.RowCount, j.FinishedAt = file, res.size, res.rows, s.now().Unix()
		ok, err := s.jobs.finish(fctx, j, j.Attempt)
		if err != nil || !ok {
			// Not recorded: the file is nobody's. A later attempt writes its own.
			os.Remove(filepath.Join(s.cfg.Dir, file)) //nolint:errcheck
			if err != nil {
				log.Error("record finished export", "err", err)
				s.retry(fctx, j, err)
			} else {
				log.Warn("export finished after its lease was taken over; discarded")
			}
			return
		}
		log.Info("export completed", "status", j.Status, "rows", res.rows, "bytes", res.size, "took", time.Since(start))
	case errors.As(runErr, &inv):
		s.fail(fctx, j, CodeInvalidRequest, inv.msg)
	case errors.Is(runErr, errLeaseLost):
		log.Warn("export lease lost; another worker continues it")
	case ctx.Err() != nil:
		// Shutdown: give the job back at once, not as a failure.
		if err := s.jobs.release(fctx, j.ID, j.Attempt, false, "", 0, s.now().Unix()); err != nil {
			log.Warn("release export job", "err", err)
		}
	default:
		if errors.Is(runErr, context.DeadlineExceeded) {
			runErr = fmt.Errorf("run exceeded %s: %w", s.cfg.JobTimeout, runErr)
		}
		log.Warn("export attempt failed", "err", runErr)
		s.retry(fctx, j, runErr)
	}
}

// retry counts a failed run: the job is FAILED after MaxAttempts, else
// claimable again after a backoff.
func (s *Service) retry(ctx context.Context, j *job, cause error) {
	failures := j.Failures + 1
	j.LastError = clipErr(cause)
	if failures >= int64(s.cfg.MaxAttempts) {
		j.Failures = failures
		s.fail(ctx, j, CodeInternal, fmt.Sprintf("the export could not be completed (%d attempts failed); try again later", failures))
		return
	}
	backoff := min(time.Duration(1<<min(failures, 8))*time.Second, 5*time.Minute)
	if err := s.jobs.release(ctx, j.ID, j.Attempt, true, j.LastError, s.now().Add(backoff).UnixMilli(), s.now().Unix()); err != nil {
		s.log.Warn("release export job", "operation", j.ID, "err", err)
	}
}

func (s *Service) fail(ctx context.Context, j *job, code, msg string) {
	j.Status, j.Code, j.Message, j.NextDate, j.FileName = StatusFailed, code, msg, "", ""
	j.FileSize, j.RowCount, j.FinishedAt = 0, 0, s.now().Unix()
	if _, err := s.jobs.finish(ctx, j, j.Attempt); err != nil {
		s.log.Error("record failed export", "operation", j.ID, "err", err)
	}
}

func clipErr(err error) string {
	s := err.Error()
	if len(s) > 2000 {
		s = s[:2000]
	}
	return s
}

// fileName is attempt's file of operation id; tmp while being written.
func fileName(id string, attempt int64, tmp bool) string {
	n := id + "." + strconv.FormatInt(attempt, 10) + ".csv"
	if tmp {
		n += ".tmp"
	}
	return n
}

// parseFileName reads a name made by fileName.
func parseFileName(name string) (id string, attempt int64, tmp, ok bool) {
	rest, tmp := strings.CutSuffix(name, ".csv.tmp")
	if !tmp {
		var found bool
		if rest, found = strings.CutSuffix(name, ".csv"); !found {
			return "", 0, false, false
		}
	}
	id, n, found := strings.Cut(rest, ".")
	if !found || len(id) != 36 {
		return "", 0, false, false
	}
	a, err := strconv.ParseInt(n, 10, 64)
	if err != nil || a <= 0 {
		return "", 0, false, false
	}
	return id, a, tmp, true
}

// export writes attempt j.Attempt's file and returns its name.
func (s *Service) export(ctx context.Context, j *job, spec Spec) (result, string, error) {
	n, err := api.LoadNetwork(ctx, s.db, "")
	if err != nil {
		return result{}, "", err
	}
	for _, k := range spec.Chains {
		if _, ok := n.Chain[k]; !ok {
			return result{}, "", invalidf("chain %s is no longer indexed by this server", k)
		}
	}
	lo, hi, err := spec.span()
	if err != nil {
		return result{}, "", invalidf("the stored export request is unreadable; create the export again")
	}
	header, sources, err := s.sources(ctx, n, spec)
	if err != nil {
		return result{}, "", err
	}
	s.removeStale(j.ID, j.Attempt)

	tmp := filepath.Join(s.cfg.Dir, fileName(j.ID, j.Attempt, true))
	// O_EXCL: an attempt writes a file of its own, never another's.
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return result{}, "", fmt.Errorf("export: create file: %w", err)
	}
	out, err := newCSVFile(f, header)
	if err == nil && s.rowHook != nil {
		out.hook = func(rows int64) { s.rowHook(j.ID, rows, out.flush) }
	}
	var res result
	if err == nil {
		res, err = writeRows(ctx, out, sources, lo, hi, s.cfg.RowCap)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("export: close file: %w", cerr)
	}
	if err != nil {
		os.Remove(tmp) //nolint:errcheck
		return result{}, "", err
	}
	final := fileName(j.ID, j.Attempt, false)
	if err := os.Rename(tmp, filepath.Join(s.cfg.Dir, final)); err != nil {
		os.Remove(tmp) //nolint:errcheck
		return result{}, "", fmt.Errorf("export: rename file: %w", err)
	}
	syncDir(s.cfg.Dir)
	return res, final, nil
}

// removeStale deletes the files of earlier attempts of id: the temporary
// file of a worker that died mid-way, or a file renamed by a worker that
// died before recording it.
func (s *Service) removeStale(id string, attempt int64) {
	matches, _ := filepath.Glob(filepath.Join(s.cfg.Dir, id+".*"))
	for _, m := range matches {
		if mid, a, _, ok := parseFileName(filepath.Base(m)); ok && mid == id && a < attempt {
			if err := os.Remove(m); err == nil {
				s.log.Info("removed stale export file", "file", filepath.Base(m))
			}
		}
	}
}

// syncDir makes a rename durable (best effort: not every OS syncs directories).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
