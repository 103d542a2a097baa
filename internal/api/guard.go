package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/permafrost-dev/permafrost/internal/keys"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Weight is what one request to a route costs, in compute units (CU), out of
// the caller's budget per minute. The classes are the published API's.
type Weight int64

const (
	Free   Weight = 1
	Small  Weight = 10
	Medium Weight = 20
	Large  Weight = 50
	XL     Weight = 100
	XXL    Weight = 200
)

// Scopes a key can carry and a route can require (keys.ScopeAll grants all;
// keys.Scopes lists them, and keys create refuses others).
const (
	ScopeExports = keys.ScopeExports
	ScopeReindex = keys.ScopeReindex
	ScopeAdmin   = keys.ScopeAdmin
	// ScopeWebhooks guards /v1/webhooks (internal/api/webhooks).
	ScopeWebhooks = keys.ScopeWebhooks
)

// RouteOpts is what the guard needs to know about a route: its weight and
// the scope it requires. Written once, next to the route's registration.
type RouteOpts struct {
	// Weight is charged per request; 0 means Medium.
	Weight Weight
	// Scope, when set, requires a valid key carrying it: no key is a 401, a
	// key without the scope a 403. Empty: anonymous callers are welcome.
	Scope string
	// PerIP marks a keyless route (the metrics service, health checks): no
	// API key is read, every caller is limited per client IP with
	// LimitsConfig.MetricsPerIPPerMinute. It cannot be combined with Scope.
	PerIP bool
	// failOpen serves the route when the limiter's store fails (health
	// checks must report the failure, not be hidden by it).
	failOpen bool
}

// LimitsConfig is the guard's and the HTTP server's configuration. Zero
// fields take the DefaultLimits value, so a caller sets only what it changes.
type LimitsConfig struct {
	// Tiers maps a key's tier to its budget in CU per minute.
	// Default: free 8000, base 10000, growth 14000, pro 20000 (the published tiers).
	Tiers map[string]int64
	// AnonymousCU is the budget per minute of a client IP without a key
	// (IPv6 clients are counted per /64). Default 6000. Negative: keys are
	// required on every data-service route (401 without one).
	AnonymousCU int64
	// MetricsPerIPPerMinute is the metrics service's budget per client IP, in CU. Default 8000.
	MetricsPerIPPerMinute int64
	// TrustedProxies are the only peers whose X-Forwarded-For is believed.
	// Default none: the client is the TCP peer.
	TrustedProxies []netip.Prefix
	// LagThreshold: a chain more than this many blocks behind the node's tip
	// answers 503 on its routes. Default 100.
	LagThreshold int64
	// StaleAfter: a chain that is behind the node and whose checkpoint has
	// not moved for this long answers 503 (ingestion stuck). Default 5m.
	StaleAfter time.Duration
	// HeartbeatTimeout: the health check calls a chain down when its
	// ingester has not reported (a block or the node's tip) for this long;
	// its index is still served. Default 1m; negative: not checked.
	HeartbeatTimeout time.Duration
	// MaxBlockInterval: per chain key, the longest time without a new block
	// the health check accepts (a chain that always has traffic, like a busy
	// C-chain). Default none.
	MaxBlockInterval map[string]time.Duration
	// CORSOrigins are the origins browsers may call from; "*" allows any.
	// nil: ["*"] (a public read API authenticated by a header, not cookies).
	// An empty non-nil slice disables CORS.
	CORSOrigins []string
	// Request limits. Defaults: body 1 MiB, URL 8 KiB, all headers 32 KiB,
	// one header value 8 KiB, 100 header lines, 100 items in a comma list
	// (Params.List answers 400 beyond).
	MaxListItems        int
	MaxBodyBytes        int64
	MaxURLBytes         int
	MaxHeaderBytes      int
	MaxHeaderValueBytes int
	MaxHeaderCount      int
	// Server timeouts. Defaults: read header 10s, read 30s, write 60s, idle
	// 120s; HandlerTimeout 45s (a handler's context deadline, below the write
	// timeout so the 503 still reaches the client); ShutdownGrace 30s.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	HandlerTimeout    time.Duration
	ShutdownGrace     time.Duration
	// KeyCacheTTL is how long a key lookup is remembered. A revocation
	// does not wait for it: the cache is dropped when the keys' version
	// moves, checked at most once a second (keyCache). Default 30s;
	// negative: no cache.
	KeyCacheTTL time.Duration
}

// DefaultLimits returns the defaults documented on LimitsConfig.
func DefaultLimits() LimitsConfig {
	return LimitsConfig{
		Tiers:                 map[string]int64{"free": 8000, "base": 10000, "growth": 14000, "pro": 20000},
		AnonymousCU:           6000,
		MetricsPerIPPerMinute: 8000,
		LagThreshold:          100,
		StaleAfter:            5 * time.Minute,
		HeartbeatTimeout:      time.Minute,
		CORSOrigins:           []string{"*"},
		MaxListItems:          MaxListItems,
		MaxBodyBytes:          1 << 20,
		MaxURLBytes:           8 << 10,
		MaxHeaderBytes:        32 << 10,
		MaxHeaderValueBytes:   8 << 10,
		MaxHeaderCount:        100,
		ReadHeaderTimeout:     10 * time.Second,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          60 * time.Second,
		IdleTimeout:           120 * time.Second,
		HandlerTimeout:        45 * time.Second,
		ShutdownGrace:         30 * time.Second,
		KeyCacheTTL:           30 * time.Second,
	}
}

// WithDefaults fills every zero field from DefaultLimits.
func (c LimitsConfig) WithDefaults() LimitsConfig {
	d := DefaultLimits()
	if c.Tiers == nil {
		c.Tiers = d.Tiers
	}
	if c.CORSOrigins == nil {
		c.CORSOrigins = d.CORSOrigins
	}
	c.AnonymousCU = cmp.Or(c.AnonymousCU, d.AnonymousCU)
	c.MetricsPerIPPerMinute = cmp.Or(c.MetricsPerIPPerMinute, d.MetricsPerIPPerMinute)
	c.LagThreshold = cmp.Or(c.LagThreshold, d.LagThreshold)
	c.StaleAfter = cmp.Or(c.StaleAfter, d.StaleAfter)
	c.HeartbeatTimeout = cmp.Or(c.HeartbeatTimeout, d.HeartbeatTimeout)
	c.MaxListItems = cmp.Or(c.MaxListItems, d.MaxListItems)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, d.MaxBodyBytes)
	c.MaxURLBytes = cmp.Or(c.MaxURLBytes, d.MaxURLBytes)
	c.MaxHeaderBytes = cmp.Or(c.MaxHeaderBytes, d.MaxHeaderBytes)
	c.MaxHeaderValueBytes = cmp.Or(c.MaxHeaderValueBytes, d.MaxHeaderValueBytes)
	c.MaxHeaderCount = cmp.Or(c.MaxHeaderCount, d.MaxHeaderCount)
	c.ReadHeaderTimeout = cmp.Or(c.ReadHeaderTimeout, d.ReadHeaderTimeout)
	c.ReadTimeout = cmp.Or(c.ReadTimeout, d.ReadTimeout)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, d.WriteTimeout)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, d.IdleTimeout)
	c.HandlerTimeout = cmp.Or(c.HandlerTimeout, d.HandlerTimeout)
	c.ShutdownGrace = cmp.Or(c.ShutdownGrace, d.ShutdownGrace)
	c.KeyCacheTTL = cmp.Or(c.KeyCacheTTL, d.KeyCacheTTL)
	return c
}

// Guard enforces API keys, scopes and rate limits on the routes registered
// with Mux.HandleGuarded, and knows the store's and the chains' health.
// One Guard may serve several Muxes (data and metrics listeners).
type Guard struct {
	db      *store.DB
	cfg     LimitsConfig
	log     *slog.Logger
	now     func() time.Time
	keys    *keyCache
	limiter Limiter
	health  *Health
	obs     Observer
	mu      sync.Mutex
	muxes   []*Mux // where Install put the guard
}

// GuardOption adjusts a Guard (tests inject clocks and limiters).
type GuardOption func(*Guard)

// WithClock sets the clock of key expiry, rate windows and lag checks.
func WithClock(now func() time.Time) GuardOption { return func(g *Guard) { g.now = now } }

// WithObserver has the guard and the routers it is installed on report
// their measurements (requests, rate-limit rejections) to o.
func WithObserver(o Observer) GuardOption { return func(g *Guard) { g.obs = o } }

// WithLimiter replaces the limiter NewGuard picks for the store.
func WithLimiter(l Limiter) GuardOption { return func(g *Guard) { g.limiter = l } }

// NewGuard builds the guard for db. The limiter follows the dialect: on
// PostgreSQL counters live in the database so every replica shares one
// budget; on SQLite (the single-binary default) they live in this process.
func NewGuard(db *store.DB, cfg LimitsConfig, log *slog.Logger, opts ...GuardOption) *Guard {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Guard{db: db, cfg: cfg.WithDefaults(), log: log, now: time.Now}
	for _, o := range opts {
		o(g)
	}
	if g.limiter == nil {
		g.limiter = NewLimiter(db, g.now)
	}
	g.keys = newKeyCache(db, g.cfg.KeyCacheTTL, g.now)
	g.health = NewHealth(db, g.cfg, g.now)
	return g
}

// RevokeKey revokes the key with the public id and forgets this process's
// cached lookups at once; other processes notice within a second (the
// keys' version, see keyCache). An administrative route revoking keys must
// call this rather than keys.Revoke.
func (g *Guard) RevokeKey(ctx context.Context, id string) error {
	if err := keys.Revoke(ctx, g.db, id); err != nil {
		return err
	}
	g.keys.forget()
	return nil
}

// Config returns the effective configuration (defaults filled in).
func (g *Guard) Config() LimitsConfig { return g.cfg }

// Health is the store and chain health the guard uses; data handlers call
// g.Health().CheckChain(ctx, chainKey) before answering from a chain.
func (g *Guard) Health() *Health { return g.health }

// Install puts the guard in front of m: CORS and request limits on every
// request, keys and rate limits on the HandleGuarded routes, and registers
// GET /v1/health-check and GET /v1/live-check. Call before serving.
func (g *Guard) Install(m *Mux) {
	m.guard = g
	g.mu.Lock()
	g.muxes = append(g.muxes, m)
	g.mu.Unlock()
	m.obs = g.obs
	m.Use(CORS(g.cfg.CORSOrigins), Harden(g.cfg, m.writePreRouting))
	health := RouteOpts{Weight: Free, PerIP: true, failOpen: true}
	m.HandleGuarded("GET /v1/health-check", health, MessageString, g.health.HealthCheck)
	m.HandleGuarded("GET /v1/live-check", health, MessageString, g.health.LiveCheck)
}

// Use adds middleware around the router, inside the request id and panic
// recovery of ServeHTTP; the first added is the outermost. Call before serving.
func (m *Mux) Use(mw ...func(http.Handler) http.Handler) {
	m.mws = append(m.mws, mw...)
	var h http.Handler = http.HandlerFunc(m.route)
	for i := len(m.mws) - 1; i >= 0; i-- {
		h = m.mws[i](h)
	}
	m.h = h
}

// HandleGuarded registers a data- or metrics-service route behind the guard:
//
//	m.HandleGuarded("GET /v1/chains/{chainId}/addresses/{address}/balances:getNative",
//		api.RouteOpts{Weight: api.Medium}, api.MessageString, h.getNative)
//	m.HandleGuarded("POST /v1/operations/transactions:export",
//		api.RouteOpts{Weight: api.Medium, Scope: api.ScopeExports}, api.MessageString, h.export)
//	m.HandleGuarded("GET /v1/avg_tps/{chainId}",
//		api.RouteOpts{Weight: api.Medium, PerIP: true}, api.MessageArray, h.avgTPS)
//
// Per request, before h runs: the key (x-data-api-key, or x-glacier-api-key)
// is checked (unknown, revoked, expired: 401), the route's weight is charged
// to the key or, without one, to the client IP (over budget: 429), and the
// scope is checked (none given: 401; key without it: 403). Every guarded
// response carries ratelimit-limit and ratelimit-remaining. The handler
// reads its caller with CallerFrom(r).
//
// What h returns is mapped as by Handle, plus: ErrUpstream / Upstream(err)
// is a 502, Unavailable(msg) a 503 (see CheckChain for lagging chains);
// any other error becomes a 503 when the store does not answer or the
// handler ran out of time, else a 500; 5xx causes are logged with the
// request id. Without an installed Guard (unit tests of handlers), routes
// with a Scope refuse every request and others run unguarded.
func (m *Mux) HandleGuarded(pattern string, opts RouteOpts, style ErrorStyle, h Handler) {
	if opts.PerIP && opts.Scope != "" {
		// A programming error, caught at startup like a bad mux pattern.
		panic(fmt.Sprintf("api: route %q: a PerIP route reads no key, so it cannot require scope %q", pattern, opts.Scope))
	}
	m.register(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.guard == nil {
			if opts.Scope != "" {
				WriteError(w, r, style, m.log, Errorf(http.StatusUnauthorized, "this route needs an API key with the %q scope", opts.Scope))
				return
			}
			Wrap(style, m.log, h)(w, r)
			return
		}
		m.guard.serve(w, r, opts, style, h)
	}))
}

// Caller is who made a guarded request.
type Caller struct {
	IP  netip.Addr // client address (after trusted proxies)
	Key *keys.Key  // nil without a valid key, and on PerIP routes
}

const callerKey ctxKey = 101

// CallerFrom returns the caller of a guarded request (zero outside one).
func CallerFrom(r *http.Request) Caller {
	if c, ok := r.Context().Value(callerKey).(*Caller); ok {
		return *c
	}
	return Caller{}
}

const msgInvalidKey = "the API key is not valid (unknown, revoked or expired)"

func (g *Guard) serve(w http.ResponseWriter, r *http.Request, opts RouteOpts, style ErrorStyle, h Handler) {
	weight := int64(opts.Weight)
	if weight <= 0 {
		weight = int64(Medium)
	}
	caller, e := g.admit(w, r, opts, weight)
	if e != nil {
		WriteError(w, r, style, g.log, e)
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), callerKey, caller))
	v, err := g.mapErrors(h)(r)
	if err != nil {
		WriteError(w, r, style, g.log, err)
		return
	}
	if sb, ok := v.(statusBody); ok {
		WriteJSON(w, sb.status, sb.body)
		return
	}
	Wrap(style, g.log, func(*http.Request) (any, error) { return v, nil })(w, r)
}

// admit identifies the caller (key or client IP), charges cost CU to it and
// sets the rate-limit headers on w. A non-nil *Error is the answer instead
// of the route's (401, 403, 429 or 503), for the caller to write in its
// route's shape.
func (g *Guard) admit(w http.ResponseWriter, r *http.Request, opts RouteOpts, cost int64) (*Caller, *Error) {
	ctx := r.Context()
	caller := &Caller{IP: ClientIP(r, g.cfg.TrustedProxies)}
	var subject string
	var budget int64
	var denied *Error // decided before charging, answered after: a 429 wins
	switch plaintext := APIKey(r); {
	case opts.PerIP:
		subject, budget = "perip:"+ipSubject(caller.IP), g.cfg.MetricsPerIPPerMinute
	case plaintext != "":
		k, err := g.keys.lookup(ctx, plaintext)
		if err != nil {
			g.log.Error("api key lookup failed", "request_id", RequestID(r), "err", err)
			return nil, Unavailable("the store is unreachable; try again later")
		}
		if k == nil || k.Valid(g.now()) != nil {
			if g.cfg.AnonymousCU < 0 {
				return nil, Errorf(http.StatusUnauthorized, msgInvalidKey)
			}
			// Bad keys spend the IP's anonymous budget: guessing costs.
			subject, budget = "ip:"+ipSubject(caller.IP), g.cfg.AnonymousCU
			denied = Errorf(http.StatusUnauthorized, msgInvalidKey)
			break
		}
		kc := *k // handlers get a copy, not the cache's entry
		caller.Key = &kc
		noteKey(r, k.ID)
		subject, budget = "key:"+k.ID, g.tierBudget(k)
		if opts.Scope != "" && !k.HasScope(opts.Scope) {
			denied = Errorf(http.StatusForbidden, "the API key lacks the %q scope this route needs", opts.Scope)
		}
	default:
		if g.cfg.AnonymousCU < 0 {
			return nil, Errorf(http.StatusUnauthorized, "this server needs an API key (header x-data-api-key)")
		}
		subject, budget = "ip:"+ipSubject(caller.IP), g.cfg.AnonymousCU
		if opts.Scope != "" {
			denied = Errorf(http.StatusUnauthorized, "this route needs an API key with the %q scope", opts.Scope)
		}
	}
	d, err := g.limiter.Take(ctx, subject, cost, budget)
	if err != nil {
		g.log.Error("rate limiter failed", "request_id", RequestID(r), "err", err)
		if !opts.failOpen {
			return nil, Unavailable("the store is unreachable; try again later")
		}
		d = Decision{Allowed: true, Limit: budget, Remaining: budget}
	}
	hd := w.Header()
	hd.Set("Ratelimit-Limit", strconv.FormatInt(d.Limit, 10))
	hd.Set("Ratelimit-Remaining", strconv.FormatInt(d.Remaining, 10))
	if !d.Allowed {
		if g.obs != nil {
			g.obs.RateLimited(routeOf(r), subjectKind(subject))
		}
		reset := strconv.FormatInt(int64((d.Reset+time.Second-1)/time.Second), 10)
		e := Errorf(http.StatusTooManyRequests, "rate limit exceeded: this request costs %d compute units, %d of %d per minute remain; retry in %s s",
			cost, d.Remaining, d.Limit, reset)
		e.Headers = http.Header{"Ratelimit-Reset": {reset}, "Retry-After": {reset}}
		return nil, e
	}
	if denied != nil {
		return nil, denied
	}
	return caller, nil
}

// subjectKind is a rate-limit subject's class, a metric label ("key", "ip", "perip").
func subjectKind(subject string) string {
	kind, _, _ := strings.Cut(subject, ":")
	return kind
}

// statusBody is a response with a status of its own that is not an
// ErrorBody (the health report's 503).
type statusBody struct {
	status int
	body   any
}

func (g *Guard) tierBudget(k *keys.Key) int64 {
	if b, ok := g.cfg.Tiers[k.Tier]; ok {
		return b
	}
	// An operator typo must not grant an unlimited key.
	g.log.Warn("api key has a tier without a configured budget; using the anonymous budget", "key_id", k.ID, "tier", k.Tier)
	return max(g.cfg.AnonymousCU, 0)
}

// mapErrors turns the failures a handler cannot classify into 503s when the
// cause is the store or the deadline, and logs every 5xx cause.
func (g *Guard) mapErrors(h Handler) Handler {
	return func(r *http.Request) (any, error) {
		v, err := h(r)
		if err == nil {
			return v, nil
		}
		var e *Error
		if errors.As(err, &e) {
			if e.Status >= 500 {
				g.log.Warn("request failed", "request_id", RequestID(r), "method", r.Method, "path", r.URL.Path, "status", e.Status, "err", err)
			}
			return nil, err
		}
		ctx := r.Context()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			g.log.Warn("request timed out", "request_id", RequestID(r), "method", r.Method, "path", r.URL.Path, "err", err)
			return nil, Unavailable(fmt.Sprintf("the request took longer than %s; try a smaller page", g.cfg.HandlerTimeout))
		}
		if ctx.Err() == nil && !g.health.StoreUp(ctx) {
			g.log.Error("request failed: store unreachable", "request_id", RequestID(r), "method", r.Method, "path", r.URL.Path, "err", err)
			return nil, Unavailable("the store is unreachable; try again later")
		}
		return nil, err // a 500, logged by WriteError with the request id
	}
}
