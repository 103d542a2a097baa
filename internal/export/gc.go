package export

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"
)

// collect removes expired operations and orphan files every GCInterval.
func (s *Service) collect(ctx context.Context) {
	t := time.NewTicker(s.cfg.GCInterval)
	defer t.Stop()
	for {
		if err := s.GC(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("export garbage collection", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// orphanGrace is how old a file without a job row must be before it is
// removed (rows are written before files, so this only guards clock skew
// between replicas sharing the directory).
const orphanGrace = 10 * time.Minute

// GC removes operations finished more than Retention ago with their files,
// and files no operation owns: files of attempts that lost their job, and
// files of deleted operations. Files whose names this package did not make
// are left alone. Safe to run on several replicas at once.
func (s *Service) GC(ctx context.Context) error {
	cutoff := s.now().Add(-s.cfg.Retention).Unix()
	for {
		js, err := s.jobs.expired(ctx, cutoff, 100)
		if err != nil {
			return err
		}
		for _, j := range js {
			if j.FileName != "" {
				if err := os.Remove(filepath.Join(s.cfg.Dir, j.FileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
			if err := s.jobs.delete(ctx, j.ID); err != nil {
				return err
			}
			s.log.Info("export expired", "operation", j.ID)
		}
		if len(js) < 100 {
			break
		}
	}
	return s.removeOrphans(ctx)
}

func (s *Service) removeOrphans(ctx context.Context) error {
	entries, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return err
	}
	type file struct {
		name    string
		attempt int64
		tmp     bool
		mod     time.Time
	}
	byID := map[string][]file{}
	var ids []string
	for _, e := range entries {
		id, attempt, tmp, ok := parseFileName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if _, seen := byID[id]; !seen {
			ids = append(ids, id)
		}
		byID[id] = append(byID[id], file{name: e.Name(), attempt: attempt, tmp: tmp, mod: info.ModTime()})
	}
	if len(ids) == 0 {
		return nil
	}
	known, err := s.jobs.known(ctx, ids)
	if err != nil {
		return err
	}
	now := s.now()
	for _, id := range ids {
		j := known[id]
		for _, f := range byID[id] {
			var orphan bool
			switch {
			case j == nil:
				orphan = now.Sub(f.mod) > orphanGrace
			case j.Status == StatusRunning:
				orphan = f.attempt < j.Attempt // a dead attempt's leftovers
			default:
				orphan = f.name != j.FileName
			}
			if orphan {
				if err := os.Remove(filepath.Join(s.cfg.Dir, f.name)); err == nil {
					s.log.Info("removed orphan export file", "file", f.name)
				}
			}
		}
	}
	return nil
}
