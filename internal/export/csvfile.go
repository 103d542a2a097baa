package export

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// csvFile writes CSV records to a file, remembering where the current day
// began so a day that would pass the row cap can be taken back whole.
type csvFile struct {
	f    *os.File
	n    countWriter
	bw   *bufio.Writer
	w    *csv.Writer
	rows int64
	// Where the current day began.
	dayOffset, dayRows int64
	// hook, when set (tests), runs after each row.
	hook func(rows int64)
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func newCSVFile(f *os.File, header []string) (*csvFile, error) {
	c := &csvFile{f: f}
	c.n.w = f
	c.bw = bufio.NewWriterSize(&c.n, 64<<10)
	c.w = csv.NewWriter(c.bw) // reuses bw: it is a large enough bufio.Writer
	c.w.UseCRLF = true        // RFC 4180
	if err := c.w.Write(header); err != nil {
		return nil, fmt.Errorf("export: write header: %w", err)
	}
	return c, nil
}

func (c *csvFile) write(rec []string) error {
	if err := c.w.Write(rec); err != nil {
		return fmt.Errorf("export: write row: %w", err)
	}
	c.rows++
	if c.hook != nil {
		c.hook(c.rows)
	}
	return nil
}

func (c *csvFile) flush() error {
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return fmt.Errorf("export: write file: %w", err)
	}
	return nil
}

// beginDay marks the start of a day's rows.
func (c *csvFile) beginDay() error {
	if err := c.flush(); err != nil {
		return err
	}
	c.dayOffset, c.dayRows = c.n.n, c.rows
	return nil
}

// rollbackDay removes the rows written since beginDay.
func (c *csvFile) rollbackDay() error {
	if err := c.flush(); err != nil {
		return err
	}
	if err := c.f.Truncate(c.dayOffset); err != nil {
		return fmt.Errorf("export: truncate file: %w", err)
	}
	if _, err := c.f.Seek(c.dayOffset, io.SeekStart); err != nil {
		return fmt.Errorf("export: truncate file: %w", err)
	}
	c.n.n, c.rows = c.dayOffset, c.dayRows
	return nil
}

// finish flushes and syncs the file; it stays open for the caller to close.
func (c *csvFile) finish() (int64, error) {
	if err := c.flush(); err != nil {
		return 0, err
	}
	if err := c.f.Sync(); err != nil {
		return 0, fmt.Errorf("export: sync file: %w", err)
	}
	return c.n.n, nil
}

// rowSource yields one kind of rows of one chain, a day at a time.
type rowSource interface {
	// next returns the time (unix s) of the chain's first activity at or
	// after from; ok is false when there is none. It may be earlier than
	// the first row the source would emit (a day without matches costs one
	// day query), never later.
	next(ctx context.Context, from int64) (t int64, ok bool, err error)
	// day emits the rows of [lo, hi) in order.
	day(ctx context.Context, lo, hi int64, emit func([]string) error) error
}

// result is what a run produced.
type result struct {
	rows      int64
	size      int64
	truncated bool
	nextDate  string // YYYY-MM-DD when truncated
}

const daySeconds = 24 * 60 * 60

// errOverCap stops a day that would pass the cap.
var errOverCap = errors.New("row cap reached")

// writeRows streams the rows of [lo, hi) from sources into out, day by day
// (within a day, source by source), ending at a day boundary once cap rows
// are written (cap <= 0: no cap). A day is never split: one that would pass
// the cap is taken back and becomes nextDate, unless it is the first day
// written, which is kept whole so a continuation always progresses.
func writeRows(ctx context.Context, out *csvFile, sources []rowSource, lo, hi, cap int64) (result, error) {
	var res result
	days := 0
	for cursor := lo; cursor < hi; {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		t, ok := int64(0), false
		for _, s := range sources {
			st, sok, err := s.next(ctx, cursor)
			if err != nil {
				return res, err
			}
			if sok && (!ok || st < t) {
				t, ok = st, true
			}
		}
		if !ok || t >= hi {
			break
		}
		day := max(cursor, t-floorMod(t, daySeconds))
		if cap > 0 && out.rows >= cap {
			res.truncated, res.nextDate = true, dateOf(day)
			break
		}
		if err := out.beginDay(); err != nil {
			return res, err
		}
		emit := func(rec []string) error {
			if err := out.write(rec); err != nil {
				return err
			}
			if cap > 0 && out.rows > cap && days > 0 {
				return errOverCap
			}
			return nil
		}
		var err error
		for _, s := range sources {
			if err = s.day(ctx, day, min(day+daySeconds, hi), emit); err != nil {
				break
			}
		}
		if errors.Is(err, errOverCap) {
			if err := out.rollbackDay(); err != nil {
				return res, err
			}
			res.truncated, res.nextDate = true, dateOf(day)
			break
		}
		if err != nil {
			return res, err
		}
		days++
		cursor = day + daySeconds
	}
	size, err := out.finish()
	if err != nil {
		return res, err
	}
	res.rows, res.size = out.rows, size
	return res, nil
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

func dateOf(unix int64) string { return time.Unix(unix, 0).UTC().Format(time.DateOnly) }

func datetime(unix int64) string { return time.Unix(unix, 0).UTC().Format(time.RFC3339) }
