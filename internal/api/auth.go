package api

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permafrost-dev/permafrost/internal/keys"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// APIKey returns the key a request presents: x-data-api-key, or the older
// x-glacier-api-key. "" when neither is given.
func APIKey(r *http.Request) string {
	if k := strings.TrimSpace(r.Header.Get("X-Data-Api-Key")); k != "" {
		return k
	}
	return strings.TrimSpace(r.Header.Get("X-Glacier-Api-Key"))
}

// maxForwardedHops bounds the X-Forwarded-For walk.
const maxForwardedHops = 32

// ClientIP is the address a request is limited by: the TCP peer, or, when
// the peer is a trusted proxy, the nearest X-Forwarded-For hop that is not
// itself trusted (walking from the right, where our proxies appended). A
// client cannot choose its address by sending its own X-Forwarded-For: only
// hops our proxies vouch for are read. Unparseable hops end the walk at the
// last trusted address.
func ClientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	addr := parseHost(r.RemoteAddr)
	if !addr.IsValid() || !isTrusted(addr, trusted) {
		return addr
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i, n := len(hops)-1, 0; i >= 0 && n < maxForwardedHops; i, n = i-1, n+1 {
		a := parseHost(strings.TrimSpace(hops[i]))
		if !a.IsValid() {
			return addr
		}
		addr = a
		if !isTrusted(a, trusted) {
			return a
		}
	}
	return addr
}

// parseHost reads "ip", "ip:port" or "[ipv6]:port" (zones dropped).
func parseHost(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return a.Unmap().WithZone("")
	}
	return netip.Addr{}
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ipSubject is the rate-limit identity of an address: IPv4 as is, IPv6 by
// its /64 (one subscriber usually owns a whole /64).
func ipSubject(a netip.Addr) string {
	if !a.IsValid() {
		return "unknown"
	}
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// keyCache remembers key lookups (by hash) for a short time, including
// misses, so a request costs no database round trip for its key. At most
// once per keyVersionEvery (on the first lookup after it) it reads the
// keys' version (keys.Version, bumped by every revocation and creation) and
// forgets every entry when it moved: a key revoked by any process stops
// working here within that time, whatever the TTL (issue #19).
type keyCache struct {
	db  *store.DB
	ttl time.Duration
	now func() time.Time
	mu  sync.Mutex
	m   map[string]cachedKey
	gen uint64 // counts forgets (under mu)

	checkMu   sync.Mutex // one version check at a time; the others wait for it
	checkedAt atomic.Int64
	version   int64 // under checkMu
}

// keyVersionEvery bounds how stale a cached key can be after a revocation.
const keyVersionEvery = time.Second

type cachedKey struct {
	key *keys.Key // nil: no such key
	at  time.Time
}

// maxCachedKeys bounds memory when clients present many distinct bad keys.
const maxCachedKeys = 10000

func newKeyCache(db *store.DB, ttl time.Duration, now func() time.Time) *keyCache {
	return &keyCache{db: db, ttl: ttl, now: now, m: map[string]cachedKey{}}
}

// lookup returns the key (nil when unknown); an error means the store failed.
func (c *keyCache) lookup(ctx context.Context, plaintext string) (*keys.Key, error) {
	if !keys.LooksLikeKey(plaintext) {
		return nil, nil
	}
	h := keys.Hash(plaintext)
	now := c.now()
	if c.ttl > 0 {
		if err := c.checkVersion(ctx, now); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	e, ok := c.m[h]
	gen := c.gen
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl && now.Sub(e.at) >= 0 {
		return e.key, nil
	}
	k, err := keys.Lookup(ctx, c.db, plaintext)
	var kp *keys.Key
	switch {
	case err == nil:
		kp = &k
	case errors.Is(err, keys.ErrNotFound):
	default:
		return nil, err
	}
	if c.ttl > 0 {
		c.mu.Lock()
		if len(c.m) >= maxCachedKeys {
			clear(c.m)
		}
		// A forget since the read above may be the revocation of this
		// very key: the read is then not worth remembering.
		if c.gen == gen {
			c.m[h] = cachedKey{key: kp, at: now}
		}
		c.mu.Unlock()
	}
	return kp, nil
}

// checkVersion drops the cache when the keys' version moved since the last
// check, checking when keyVersionEvery has passed. A failed check drops the
// cache too: a revocation it cannot rule out must not be served.
func (c *keyCache) checkVersion(ctx context.Context, now time.Time) error {
	fresh := func() bool {
		d := now.Sub(time.Unix(0, c.checkedAt.Load()))
		return d >= 0 && d < keyVersionEvery
	}
	if fresh() {
		return nil
	}
	c.checkMu.Lock()
	defer c.checkMu.Unlock()
	if fresh() {
		return nil // another request checked meanwhile
	}
	v, err := keys.Version(ctx, c.db)
	if err != nil || v != c.version {
		c.forget()
	}
	if err != nil {
		c.checkedAt.Store(0)
		return err
	}
	c.version = v
	c.checkedAt.Store(now.UnixNano())
	return nil
}

// forget drops every cached lookup (a key was revoked or created).
func (c *keyCache) forget() {
	c.mu.Lock()
	clear(c.m)
	c.gen++
	c.mu.Unlock()
}
