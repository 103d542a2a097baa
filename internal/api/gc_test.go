package api

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestReplicaGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for _, c := range []struct {
		name         string
		env          map[string]string
		percent      int
		limit        int64
		wantP, wantL int64
	}{
		{"defaults", nil, replicaGCPercent, replicaMemoryLimit, replicaGCPercent, replicaMemoryLimit},
		{"GOGC set", map[string]string{"GOGC": "50"}, 0, 0, 100, math.MaxInt64},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, 0, 0, 100, math.MaxInt64},
	} {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		p, l := ReplicaGC(func(k string) string { return c.env[k] })
		if p != c.percent || l != c.limit {
			t.Errorf("%s: set %d, %d; want %d, %d", c.name, p, l, c.percent, c.limit)
		}
		// What the runtime now has (SetGCPercent and SetMemoryLimit return it).
		if got := debug.SetGCPercent(100); int64(got) != c.wantP {
			t.Errorf("%s: GC percent %d, want %d", c.name, got, c.wantP)
		}
		if got := debug.SetMemoryLimit(math.MaxInt64); got != c.wantL {
			t.Errorf("%s: memory limit %d, want %d", c.name, got, c.wantL)
		}
	}
}
