package api

import "runtime/debug"

// An API-only replica's collector (ReplicaGC): at most every time the heap
// grows by four times what is live, under a soft limit of the Go memory.
const (
	replicaGCPercent   = 400
	replicaMemoryLimit = 256 << 20
)

// ReplicaGC sets the Go collector of an API-only replica (serve
// --ingest=false) unless the operator set GOGC or GOMEMLIMIT (getenv reads
// the environment; the runtime has applied them), and returns what it set
// (0, 0 for nothing). A replica's live heap is small, tens of MB, and each
// request's rows are garbage at once: at Go's default GOGC=100 the
// collector ran every few MB allocated and took about a third of the
// replica's CPU on the metrics route that reads a token's 2,000 holders a
// page (docs/benchmarks.md, "Token holders over time at x5evm, thirteenth
// session"). The memory limit keeps a burst of large pages from growing the
// heap by four times it: near the limit the collector runs as often as it
// must. An indexing process keeps Go's default (its live heap is the
// indexer's caches, and its peak is what docs/operations.md budgets).
func ReplicaGC(getenv func(string) string) (percent int, limit int64) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return 0, 0
	}
	debug.SetGCPercent(replicaGCPercent)
	debug.SetMemoryLimit(replicaMemoryLimit)
	return replicaGCPercent, replicaMemoryLimit
}
