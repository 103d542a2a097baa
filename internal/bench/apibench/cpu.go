package apibench

import (
	"context"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/testing/proccpu"
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

// CPU is the replica's CPU time so far.
func (r *Replica) CPU() time.Duration { return proccpu.Process(r.cmd.Process.Pid) }

// ServerMeter meters the PostgreSQL server behind db when it runs on this
// machine: its postmaster (with the children it reaped, e.g. parallel
// workers) and its live children (the backends). ok is false for SQLite or
// a server out of reach of /proc.
func ServerMeter(ctx context.Context, db *store.DB) (m Meter, ok bool) {
	srv, ok, err := proccpu.FindServer(ctx, db)
	if err != nil || !ok {
		return Meter{}, false
	}
	return Meter{Name: "server", Read: srv.CPU}, true
}
