package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/ava-labs/avalanchego/ids"

	avajson "github.com/ava-labs/avalanchego/utils/json"
)

const (
	// observedTTL: how long the upstream's uptimes are reused.
	observedTTL = 5 * time.Second
	// identityTTL: how long the upstream's node ID and chains are reused.
	identityTTL = time.Minute
	// failureBackoff: after a failed upstream call, don't retry for this
	// long, so a down node costs one timeout, not one per request.
	failureBackoff = 10 * time.Second
	// maxUpstreamBody bounds what is read from the upstream node.
	maxUpstreamBody = 32 << 20
)

// observed is what the upstream node itself knows of a validator.
type observed struct {
	Uptime    *avajson.Float32
	Connected *bool
}

// upstream asks a running avalanchego node for node-local facts, with
// short timeouts and caching; it never fails a request, it only knows less.
type upstream struct {
	base    string
	client  *http.Client
	timeout time.Duration
	log     *slog.Logger
	now     func() time.Time

	mu       sync.Mutex
	obs      map[ids.NodeID]observed
	obsAt    time.Time
	nodeID   ids.NodeID
	nodeAt   time.Time
	chains   map[ids.ID]cachedBool
	failedAt time.Time
}

type cachedBool struct {
	v  bool
	at time.Time
}

func newUpstream(base string, timeout time.Duration, log *slog.Logger) *upstream {
	return &upstream{
		base:    base,
		client:  &http.Client{Timeout: timeout},
		timeout: timeout,
		log:     log,
		now:     time.Now,
		chains:  map[ids.ID]cachedBool{},
	}
}

// rpcError is a JSON-RPC error answer of the upstream node.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("upstream: %s (%d)", e.Message, e.Code) }

// call sends one JSON-RPC call to path on the upstream node.
func (u *upstream) call(ctx context.Context, path, method string, params, result any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return fmt.Errorf("upstream %s: %w", method, err)
	}
	raw, err := u.post(ctx, path, body)
	if err != nil {
		return fmt.Errorf("upstream %s: %w", method, err)
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return fmt.Errorf("upstream %s: decode answer: %w", method, err)
	}
	if resp.Error != nil {
		return resp.Error
	}
	if err := json.Unmarshal(resp.Result, result); err != nil {
		return fmt.Errorf("upstream %s: decode result: %w", method, err)
	}
	return nil
}

// post sends body to path and returns the answer of a 200 response.
func (u *upstream) post(ctx context.Context, path string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := u.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxUpstreamBody {
		return nil, errors.New("answer too large")
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return raw, nil
}

// backingOff reports whether a recent failure says not to call now; mu held.
func (u *upstream) backingOff() bool {
	return !u.failedAt.IsZero() && u.now().Sub(u.failedAt) < failureBackoff
}

func (u *upstream) failed(what string, err error) {
	u.failedAt = u.now()
	u.log.Warn("platform: upstream node unavailable; node-local fields omitted", "call", what, "err", err)
}

// observed returns the upstream node's uptime and connectivity of the
// primary-network validators; nil when it does not answer.
func (u *upstream) observed(ctx context.Context) map[ids.NodeID]observed {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.obs != nil && u.now().Sub(u.obsAt) < observedTTL {
		return u.obs
	}
	if u.backingOff() {
		return nil
	}
	var reply struct {
		Validators []struct {
			NodeID    ids.NodeID       `json:"nodeID"`
			Uptime    *avajson.Float32 `json:"uptime"`
			Connected *bool            `json:"connected"`
		} `json:"validators"`
	}
	if err := u.call(ctx, "/ext/bc/P", "platform.getCurrentValidators", struct{}{}, &reply); err != nil {
		u.failed("platform.getCurrentValidators", err)
		return nil
	}
	m := make(map[ids.NodeID]observed, len(reply.Validators))
	for _, v := range reply.Validators {
		m[v.NodeID] = observed{Uptime: v.Uptime, Connected: v.Connected}
	}
	u.obs, u.obsAt = m, u.now()
	return m
}

// identity returns the upstream node's ID; false when unknown.
func (u *upstream) identity(ctx context.Context) (ids.NodeID, bool) {
	if u == nil {
		return ids.EmptyNodeID, false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.nodeID != ids.EmptyNodeID && u.now().Sub(u.nodeAt) < identityTTL {
		return u.nodeID, true
	}
	if u.backingOff() {
		return ids.EmptyNodeID, false
	}
	var reply struct {
		NodeID ids.NodeID `json:"nodeID"`
	}
	if err := u.call(ctx, "/ext/info", "info.getNodeID", struct{}{}, &reply); err != nil {
		u.failed("info.getNodeID", err)
		return ids.EmptyNodeID, false
	}
	u.nodeID, u.nodeAt = reply.NodeID, u.now()
	return u.nodeID, u.nodeID != ids.EmptyNodeID
}

// runsChain reports whether the upstream node runs the chain (it answers
// info.isBootstrapped for it); false when it does not or cannot tell.
func (u *upstream) runsChain(ctx context.Context, chainID ids.ID) bool {
	if u == nil {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if c, ok := u.chains[chainID]; ok && u.now().Sub(c.at) < identityTTL {
		return c.v
	}
	if u.backingOff() {
		return false
	}
	var reply struct {
		IsBootstrapped bool `json:"isBootstrapped"`
	}
	err := u.call(ctx, "/ext/info", "info.isBootstrapped", map[string]string{"chain": chainID.String()}, &reply)
	var rerr *rpcError
	switch {
	case err == nil:
	case errors.As(err, &rerr):
		// The node answered: it does not know the chain.
	default:
		u.failed("info.isBootstrapped", err)
		return false
	}
	if len(u.chains) > 10_000 {
		clear(u.chains)
	}
	u.chains[chainID] = cachedBool{v: err == nil, at: u.now()}
	return err == nil
}

// proxy forwards a raw JSON-RPC request body to the upstream's P-chain API
// and returns its answer (nil, false when the upstream did not answer).
func (u *upstream) proxy(ctx context.Context, body []byte) ([]byte, bool) {
	raw, err := u.post(ctx, "/ext/bc/P", body)
	if err != nil {
		u.log.Warn("platform: proxying to the upstream node failed", "err", err)
		return nil, false
	}
	return raw, true
}
