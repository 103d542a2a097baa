package apibench

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

// Meter reads a CPU time counter (user + system) of the serving side: the
// replica process, the PostgreSQL server. Run reads each one when its
// measured requests start and after they end, so a change is judged by the
// CPU time per request, which the load of a shared machine does not inflate
// as it does latency.
type Meter struct {
	Name string
	Read func() time.Duration
}

// procCPU is a process's own CPU time and its reaped children's, and its
// parent, from /proc/pid/stat.
func procCPU(pid int) (self, children time.Duration, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, false
	}
	// The command name (field 2) may hold spaces: the fields after it.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0, 0, 0, false
	}
	n := make([]int64, 4)
	for k := range n {
		n[k], _ = strconv.ParseInt(f[11+k], 10, 64) // utime, stime, cutime, cstime
	}
	ppid, _ = strconv.Atoi(f[1])
	tick := time.Second / 100 // USER_HZ
	return time.Duration(n[0]+n[1]) * tick, time.Duration(n[2]+n[3]) * tick, ppid, true
}

// CPU is the replica's CPU time so far.
func (r *Replica) CPU() time.Duration {
	self, _, _, _ := procCPU(r.cmd.Process.Pid)
	return self
}

// ServerMeter meters the PostgreSQL server behind db when it runs on this
// machine: its postmaster (with the children it reaped, e.g. parallel
// workers) and its live children (the backends). ok is false for SQLite or
// a server out of reach of /proc.
func ServerMeter(ctx context.Context, db *store.DB) (m Meter, ok bool) {
	if db.Dialect() != store.Postgres {
		return Meter{}, false
	}
	var backend int
	if err := db.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return Meter{}, false
	}
	_, _, postmaster, ok := procCPU(backend)
	if !ok {
		return Meter{}, false
	}
	return Meter{Name: "server", Read: func() time.Duration {
		self, reaped, _, ok := procCPU(postmaster)
		if !ok {
			return 0
		}
		total := self + reaped
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			pid, _ := strconv.Atoi(filepath.Base(d))
			if self, _, ppid, ok := procCPU(pid); ok && ppid == postmaster {
				total += self
			}
		}
		return total
	}}, true
}
