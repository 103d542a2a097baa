package api

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// Health answers whether the store and each chain's ingestion are fit to
// serve: the chain routes' 503s and the health and live checks.
type Health struct {
	db               *store.DB
	lagThreshold     int64
	staleAfter       time.Duration
	heartbeatTimeout time.Duration
	maxBlockInterval map[string]time.Duration
	now              func() time.Time
	shuttingDown     atomic.Bool
}

// NewHealth reads thresholds from cfg (defaults filled in).
func NewHealth(db *store.DB, cfg LimitsConfig, now func() time.Time) *Health {
	cfg = cfg.WithDefaults()
	if now == nil {
		now = time.Now
	}
	return &Health{db: db, lagThreshold: cfg.LagThreshold, staleAfter: cfg.StaleAfter, heartbeatTimeout: cfg.HeartbeatTimeout,
		maxBlockInterval: cfg.MaxBlockInterval, now: now}
}

// SetShuttingDown makes the health check answer 503 "shutting_down" so load
// balancers stop sending requests while in-flight ones drain.
func (h *Health) SetShuttingDown() { h.shuttingDown.Store(true) }

// storeTimeout bounds a health probe of the store.
const storeTimeout = 2 * time.Second

// StoreUp pings the store.
func (h *Health) StoreUp(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	return h.db.Ping(ctx) == nil
}

// ChainHealth is one chain's ingestion state.
type ChainHealth struct {
	Status        string `json:"status"` // up or down
	IndexedHeight int64  `json:"indexedHeight"`
	NodeHeight    int64  `json:"nodeHeight"`
	Lag           int64  `json:"lag"` // blocks the index is behind the node's tip
	UpdatedAt     int64  `json:"updatedAt,omitempty"`
	Message       string `json:"message,omitempty"`
	// Notice: ingesting, but in a lesser way (chains.notice).
	Notice string `json:"notice,omitempty"`
}

type checkpoint struct {
	ok                                 bool // a checkpoint row exists
	height, node, updatedAt, blockTime int64
	// stallErr and stalledSince: the ingester's batches fail (chains.stall_error).
	stallErr     string
	stalledSince int64
	notice       string
}

// chainStateColumns reads a chain's checkpoint and ingest state (aliases c
// for chains, k for checkpoints), as checkpoint.scan takes them.
const chainStateColumns = `k.height, COALESCE(k.node_height, 0), COALESCE(k.updated_at, 0), COALESCE(k.block_time, 0),
	COALESCE(c.stall_error, ''), COALESCE(c.stalled_since, 0), COALESCE(c.notice, '')`

func (c *checkpoint) scan(s interface{ Scan(...any) error }, dest ...any) error {
	var height sql.NullInt64
	if err := s.Scan(append(dest, &height, &c.node, &c.updatedAt, &c.blockTime, &c.stallErr, &c.stalledSince, &c.notice)...); err != nil {
		return err
	}
	c.ok, c.height = height.Valid, height.Int64
	return nil
}

// judge applies the thresholds. problem says why the chain is not fit (the
// readiness check's 503); refuse, why its routes answer 503 instead of
// serving the index as it is ("" for both when healthy). A stalled or
// silent ingester makes a chain unready but its index is still served, as
// long as it is not too far behind the node's tip.
func (h *Health) judge(chain string, c checkpoint) (ch ChainHealth, problem, refuse string) {
	ch = ChainHealth{Status: "up", IndexedHeight: c.height, NodeHeight: c.node, UpdatedAt: c.updatedAt, Notice: c.notice}
	if !c.ok {
		ch.IndexedHeight = -1
	}
	ch.Lag = max(c.node-c.height, 0)
	now := h.now()
	silent := now.Sub(time.Unix(c.updatedAt, 0))
	switch {
	case !c.ok:
		problem = fmt.Sprintf("chain %s has not indexed any block yet; try again later", chain)
		refuse = problem
	case ch.Lag > h.lagThreshold:
		problem = fmt.Sprintf("chain %s is being indexed: %d blocks behind its node (at most %d allowed); try again later", chain, ch.Lag, h.lagThreshold)
		refuse = problem
	case ch.Lag > 0 && silent > h.staleAfter:
		problem = fmt.Sprintf("ingestion of chain %s has not advanced for %s while %d blocks behind its node; try again later",
			chain, silent.Truncate(time.Second), ch.Lag)
		refuse = problem
	case c.stallErr != "":
		problem = fmt.Sprintf("ingestion of chain %s is stalled at height %d since %s (its node is at %d): %s",
			chain, c.height+1, time.Unix(c.stalledSince, 0).UTC().Format(time.RFC3339), c.node, c.stallErr)
	case h.heartbeatTimeout > 0 && silent > h.heartbeatTimeout:
		problem = fmt.Sprintf("ingestion of chain %s has not reported for %s (is the ingester running and its node reachable?); the index is served as of height %d",
			chain, silent.Truncate(time.Second), c.height)
	case h.maxBlockInterval[chain] > 0 && now.Sub(time.Unix(c.blockTime, 0)) > h.maxBlockInterval[chain]:
		problem = fmt.Sprintf("chain %s has had no new block for %s (at most %s expected); is its node following the network?",
			chain, now.Sub(time.Unix(c.blockTime, 0)).Truncate(time.Second), h.maxBlockInterval[chain])
	}
	if problem != "" {
		ch.Status, ch.Message = "down", problem
	}
	return ch, problem, refuse
}

// CheckChain returns nil when chain (a chain key: P, X, C or an EVM chain
// id, as in ChainRef.Key) can be served, else a 503 saying why: its
// ingestion lags the node beyond the threshold or is stuck, it has no block
// yet, or the store does not answer. Data handlers call it first:
//
//	if err := g.Health().CheckChain(r.Context(), chain.Key); err != nil {
//		return nil, err
//	}
func (h *Health) CheckChain(ctx context.Context, chain string) error {
	var c checkpoint
	err := c.scan(h.db.QueryRowContext(ctx, `SELECT `+chainStateColumns+`
		FROM chains c LEFT JOIN checkpoints k ON k.chain_key = c.chain_key WHERE c.chain_key = $1`, chain))
	switch {
	case err == nil:
	case errors.Is(err, sql.ErrNoRows):
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		return Unavailable("the store is unreachable; try again later")
	}
	if _, _, refuse := h.judge(chain, c); refuse != "" {
		return Unavailable(refuse)
	}
	return nil
}

// Indicator is one entry of a health report.
type Indicator map[string]any

// HealthReport is the HealthCheckResultDto of the published API: status ok,
// error or shutting_down; info holds the indicators that are up, error those
// that are down, details all of them. Indicators: "database" and one
// "chain:<key>" per indexed chain.
type HealthReport struct {
	Status  string               `json:"status"`
	Info    map[string]Indicator `json:"info"`
	Error   map[string]Indicator `json:"error"`
	Details map[string]Indicator `json:"details"`
}

// Report probes the store and every registered chain. ok is false when the
// store is down or (withChains) a chain is down.
func (h *Health) Report(ctx context.Context, withChains bool) (HealthReport, bool) {
	rep := HealthReport{Status: "ok", Info: map[string]Indicator{}, Error: map[string]Indicator{}, Details: map[string]Indicator{}}
	add := func(name string, ind Indicator, failing bool) {
		rep.Details[name] = ind
		if ind["status"] == "up" {
			rep.Info[name] = ind
		} else {
			rep.Error[name] = ind
			if failing {
				rep.Status = "error"
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	chains, err := h.chains(ctx)
	if err == nil {
		add("database", Indicator{"status": "up", "dialect": h.db.Dialect().String()}, true)
		for _, c := range chains {
			ch, _, _ := h.judge(c.key, c.checkpoint)
			ind := Indicator{"status": ch.Status, "indexedHeight": ch.IndexedHeight, "nodeHeight": ch.NodeHeight, "lag": ch.Lag}
			if ch.UpdatedAt != 0 {
				ind["updatedAt"] = ch.UpdatedAt
			}
			if ch.Message != "" {
				ind["message"] = ch.Message
			}
			if ch.Notice != "" {
				ind["notice"] = ch.Notice
			}
			add("chain:"+c.key, ind, withChains)
		}
	} else {
		add("database", Indicator{"status": "down", "dialect": h.db.Dialect().String(), "message": "the store is unreachable"}, true)
	}
	return rep, rep.Status == "ok"
}

type chainRow struct {
	key string
	checkpoint
}

// chains reads every registered chain's checkpoint in one query, which is
// also the store's read probe.
func (h *Health) chains(ctx context.Context) ([]chainRow, error) {
	if err := h.db.Ping(ctx); err != nil {
		return nil, err
	}
	rows, err := h.db.QueryContext(ctx, `SELECT c.chain_key, `+chainStateColumns+`
		FROM chains c LEFT JOIN checkpoints k ON k.chain_key = c.chain_key ORDER BY c.chain_key`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []chainRow
	for rows.Next() {
		var c chainRow
		if err := c.scan(rows, &c.key); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// HealthCheck is GET /v1/health-check (readiness): 200 when the store
// answers and every chain is within its lag threshold; otherwise, or while
// shutting down, 503 with the same report saying what is down.
func (h *Health) HealthCheck(r *http.Request) (any, error) {
	rep, ok := h.Report(r.Context(), true)
	if h.shuttingDown.Load() {
		rep.Status, ok = "shutting_down", false
	}
	if !ok {
		return statusBody{http.StatusServiceUnavailable, rep}, nil
	}
	return rep, nil
}

// LiveCheck is GET /v1/live-check (liveness, reads only): 200 while the
// store answers reads, reporting each chain's lag without failing on it;
// 503 when the store is unreachable.
func (h *Health) LiveCheck(r *http.Request) (any, error) {
	rep, ok := h.Report(r.Context(), false)
	if !ok {
		return statusBody{http.StatusServiceUnavailable, rep}, nil
	}
	return rep, nil
}
