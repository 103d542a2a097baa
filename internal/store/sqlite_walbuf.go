package store

/*
#include "walbuf.h"
*/
import "C"

import (
	"github.com/mattn/go-sqlite3"
)

// walBufferVFS names the SQLite VFS that the writer connection opens its
// database through (walbuf.c): the default VFS, except that the WAL's frames
// are written in large writes instead of two system calls each. A catch-up
// batch appends ~36,000 frames; as ~72,000 pwrites they were 13-29% of the
// writer thread's samples, most of it per-call cost and the kernel zeroing
// the partial file blocks each small write leaves while the WAL grows
// (docs/benchmarks.md, "Fifteenth session" and "Seventeenth session"). Only
// the writer writes frames; readers and the checkpointer use the default VFS.
//
// Empty if the shim could not be registered (SQLite's symbols missing): the
// writer then uses the default VFS. Set once, by init (sqlite_config.go),
// after SQLite's configuration: registering a VFS initializes SQLite.
var walBufferVFS string

func registerWALBuffer(name string) string {
	// SQLite keeps the name's pointer for as long as the VFS is registered:
	// the life of the process.
	if C.pf_walbuf_register(C.CString(name)) == 0 {
		return ""
	}
	return name
}

// walBufferStats is what the shim counted on a WAL: the write calls SQLite
// made, the write calls that reached the file, the bytes written, and the
// reads served from the buffer.
type walBufferStats struct {
	Writes, Calls, Bytes, Served int64
}

// walBufferStatsOf reads c's counters; ok is false if c's WAL is not open
// through the shim (tests check that the frames are gathered).
func walBufferStatsOf(c *sqlite3.SQLiteConn) (st walBufferStats, ok bool) {
	h := handle(c)
	if h == nil {
		return st, false
	}
	var cs C.pf_walbuf_stats
	if C.pf_walbuf_stats_of(h, &cs) == 0 {
		return st, false
	}
	return walBufferStats{Writes: int64(cs.writes), Calls: int64(cs.calls), Bytes: int64(cs.bytes), Served: int64(cs.served)}, true
}
