// Package memstat says what a benchmark process's resident memory is made
// of at its peak: it samples the kernel's accounting (/proc/self/status),
// the Go runtime's (runtime/metrics) and the C heap's (glibc mallinfo2,
// where SQLite's page caches and statements live, since its own statistics
// are off: store.init) while the measured work runs, and keeps the sample
// with the highest resident set.
package memstat

/*
#include <malloc.h>

// pf_c_heap is what malloc holds from the OS (its arenas and mmapped
// chunks) and what of it is in use.
static void pf_c_heap(long long *held, long long *used) {
	struct mallinfo2 m = mallinfo2();
	*held = (long long)(m.arena + m.hblkhd);
	*used = (long long)(m.uordblks + m.hblkhd);
}
*/
import "C"

import (
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Sample is one reading, in bytes.
type Sample struct {
	RSS, Anon, File, Shmem int64 // VmRSS, RssAnon, RssFile, RssShmem
	// GoMapped is what the Go runtime has mapped and not returned to the
	// OS (all its memory classes less the released heap): at most what of
	// the resident set is Go's.
	GoMapped  int64
	GoObjects int64 // live and not yet swept heap objects
	GoGoal    int64 // the heap size the GC lets the heap reach before the next cycle
	CHeld     int64 // malloc's arenas and mmapped chunks
	CUsed     int64 // of which allocated
	At        time.Time
}

// Read takes one sample.
func Read() Sample {
	s := Sample{At: time.Now()}
	if st, err := Status(os.Getpid()); err == nil {
		s.RSS, s.Anon, s.File, s.Shmem = st["VmRSS"], st["RssAnon"], st["RssFile"], st["RssShmem"]
	}
	ms := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/goal:bytes"},
	}
	metrics.Read(ms)
	u := func(i int) int64 {
		if ms[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(ms[i].Value.Uint64())
	}
	s.GoMapped = u(0) - u(1)
	s.GoObjects = u(2)
	s.GoGoal = u(3)
	var held, used C.longlong
	C.pf_c_heap(&held, &used)
	s.CHeld, s.CUsed = int64(held), int64(used)
	return s
}

// Status is a process's /proc/<pid>/status figures given in kB (VmRSS,
// VmHWM, RssAnon, ...), in bytes.
func Status(pid int) (map[string]int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, fmt.Errorf("memstat: %w", err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(raw), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if f := strings.Fields(v); ok && len(f) == 2 && f[1] == "kB" {
			if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				out[name] = kb << 10
			}
		}
	}
	return out, nil
}

// Sampler reads a Sample every interval until Stop, and keeps the one with
// the highest RSS and the highest of each Go figure.
type Sampler struct {
	trace io.Writer // nil: no trace
	t0    time.Time
	stop  chan struct{}
	done  sync.WaitGroup
	mu    sync.Mutex
	peak  Sample // the sample with the highest RSS
	max   Sample // the highest of each field, over all samples
}

// Start starts sampling every interval; trace, if not nil, gets every
// sample as a line (seconds since the start, then RSS, Go mapped, Go
// objects, C held, mapped files, C used, in MB).
func Start(interval time.Duration, trace io.Writer) *Sampler {
	s := &Sampler{trace: trace, t0: time.Now(), stop: make(chan struct{})}
	s.add(Read())
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.add(Read())
			}
		}
	}()
	return s
}

func (s *Sampler) add(r Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.trace != nil {
		mb := func(v int64) float64 { return float64(v) / (1 << 20) }
		fmt.Fprintf(s.trace, "%.2f %.1f %.1f %.1f %.1f %.1f %.1f\n", r.At.Sub(s.t0).Seconds(), mb(r.RSS), mb(r.GoMapped), mb(r.GoObjects), mb(r.CHeld), mb(r.File), mb(r.CUsed)) //nolint:errcheck // a trace for reading
	}
	if r.RSS > s.peak.RSS {
		s.peak = r
	}
	m := &s.max
	for _, f := range [][2]*int64{{&m.RSS, &r.RSS}, {&m.Anon, &r.Anon}, {&m.File, &r.File}, {&m.Shmem, &r.Shmem},
		{&m.GoMapped, &r.GoMapped}, {&m.GoObjects, &r.GoObjects}, {&m.GoGoal, &r.GoGoal}, {&m.CHeld, &r.CHeld}, {&m.CUsed, &r.CUsed}} {
		*f[0] = max(*f[0], *f[1])
	}
}

// Stop ends the sampling (one last sample first) and returns the sample at
// the highest RSS and the highest of each figure.
func (s *Sampler) Stop() (peak, highest Sample) {
	s.add(Read())
	close(s.stop)
	s.done.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.max
}
