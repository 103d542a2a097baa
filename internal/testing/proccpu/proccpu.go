// Package proccpu reads processes' CPU time from /proc for the benchmarks:
// a process's own, and a PostgreSQL server's (its postmaster and backends),
// so that a change is judged by CPU per unit of work, which the load of a
// shared machine does not inflate as it does wall-clock figures.
package proccpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// Stat is a process's CPU time (user + system) and its parent.
type Stat struct {
	PPID     int
	Self     time.Duration // utime + stime
	Children time.Duration // cutime + cstime: the children it reaped
}

// tick is USER_HZ, the unit of /proc/pid/stat's times.
const tick = time.Second / 100

// Read reads /proc/pid/stat; false if the process is gone or unreadable.
func Read(pid int) (Stat, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, false
	}
	// The command name (field 2) may hold spaces; fields restart after ')'.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Stat{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return Stat{}, false
	}
	num := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
	// f[0] is field 3 (state): ppid is field 4, utime..cstime fields 14..17.
	return Stat{
		PPID:     int(num(1)),
		Self:     time.Duration(num(11)+num(12)) * tick,
		Children: time.Duration(num(13)+num(14)) * tick,
	}, true
}

// Process is pid's own CPU time so far; 0 once it is gone.
func Process(pid int) time.Duration {
	st, _ := Read(pid)
	return st.Self
}

// Server is a PostgreSQL server running on this machine.
type Server struct {
	Postmaster, Backend int // Backend: the connection FindServer asked
}

// FindServer finds the server behind db through one of its backends. ok is
// false for SQLite, or a server out of reach of this machine's /proc; err
// is the backend query's failure.
func FindServer(ctx context.Context, db *store.DB) (s Server, ok bool, err error) {
	if db.Dialect() != store.Postgres {
		return Server{}, false, nil
	}
	if err := db.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&s.Backend); err != nil {
		return Server{}, false, fmt.Errorf("proccpu: backend pid: %w", err)
	}
	st, ok := Read(s.Backend)
	if !ok {
		return Server{}, false, nil
	}
	s.Postmaster = st.PPID
	return s, true, nil
}

// CPU is the server's CPU time so far: its postmaster (with the children it
// reaped, e.g. parallel workers and ended backends) and its live children.
func (s Server) CPU() time.Duration {
	pm, ok := Read(s.Postmaster)
	if !ok {
		return 0
	}
	total := pm.Self + pm.Children
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		if st, ok := Read(pid); ok && st.PPID == s.Postmaster {
			total += st.Self
		}
	}
	return total
}
