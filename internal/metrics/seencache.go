package metrics

// seenCap bounds each (role, kind) set of a seenCache: 32,768 addresses, so
// that a chain's 14 sets hold at most ~20 MB of heap (TestSeenCacheBounded
// logs it; docs/benchmarks.md, "Thirteenth session"), one cache per EVM
// chain. A full set stops growing: the addresses past it are probed, as
// without the set.
const seenCap = 1 << 15

// seenCache remembers addresses metrics_evm_seen already holds, per role and
// interval kind for the kind's newest bucket the rollup wrote (the "ever"
// kind: its one bucket), so that a batch probes only the addresses its
// bucket may not hold yet: most of an hour's or a day's addresses were seen
// by an earlier batch of the same bucket (issue #22: 6.8% of the server's
// statement time, most of the rows conflicts).
//
// An entry only ever says "stored, committed or in the batch being written":
// a missing one costs a probe, never a wrong count. It is therefore emptied
// whenever stored rows may have gone: a batch abandoned (Discard, also after
// a failed commit), or a batch that does not start where the last one ended
// (a restart from the checkpoint, a reindex of the same indexer).
type seenCache struct {
	next int64 // the first height of the batch after the last one written; 0: none
	sets map[seenSlot]*seenSet
}

type seenSlot struct {
	role int
	kind Interval
}

type seenSet struct {
	bucket int64
	addrs  map[[20]byte]struct{}
}

// begin drops everything unless the batch starting at height lo follows the
// last one written.
func (c *seenCache) begin(lo int64) {
	if lo != c.next {
		c.forget()
	}
}

// end records that the batch ended at hi.
func (c *seenCache) end(hi int64) { c.next = hi + 1 }

// forget empties the cache.
func (c *seenCache) forget() {
	c.next = 0
	clear(c.sets)
}

// unknown returns the addresses of key (sorted, distinct) not known to be
// stored, reusing addrs' array.
func (c *seenCache) unknown(key seenKey, addrs []string) []string {
	s := c.sets[seenSlot{key.role, key.kind}]
	if s == nil || s.bucket != key.bucket {
		return addrs
	}
	out := addrs[:0]
	for _, a := range addrs {
		if len(a) == 20 {
			if _, ok := s.addrs[[20]byte([]byte(a))]; ok {
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// add records addrs as stored in key's bucket. A bucket newer than the
// slot's replaces it (blocks come in time order); an older one is left out.
func (c *seenCache) add(key seenKey, addrs []string) {
	slot := seenSlot{key.role, key.kind}
	s := c.sets[slot]
	switch {
	case s == nil:
		if c.sets == nil {
			c.sets = map[seenSlot]*seenSet{}
		}
		s = &seenSet{bucket: key.bucket, addrs: map[[20]byte]struct{}{}}
		c.sets[slot] = s
	case key.bucket > s.bucket:
		s.bucket = key.bucket
		clear(s.addrs)
	case key.bucket < s.bucket:
		return
	}
	for _, a := range addrs {
		if len(s.addrs) >= seenCap {
			return
		}
		if len(a) == 20 {
			s.addrs[[20]byte([]byte(a))] = struct{}{}
		}
	}
}
