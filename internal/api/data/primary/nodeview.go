package primary

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// NodeView is what a running node observes about the current validators
// of the primary network: not chain state, so not in the index.
type NodeView interface {
	// Validators returns the observations by node id (NodeID-...).
	Validators(ctx context.Context) (map[string]Observed, error)
}

// Observed is one validator as our node sees it.
type Observed struct {
	Uptime    *float64 // percent, as platform.getCurrentValidators reports it
	Connected bool
	Version   string   // e.g. avalanchego/1.14.2
	Benched   []string // blockchain ids on which our node benched it
}

// Caller sends one JSON-RPC call to a node endpoint (source.Avalanche.Call).
type Caller interface {
	Call(ctx context.Context, endpointPath, method string, params, result any) error
}

// RPCNodeView observes validators through a node's platform and info APIs,
// polling at most once per TTL.
type RPCNodeView struct {
	node Caller
	ttl  time.Duration
	now  func() time.Time

	mu   sync.Mutex
	at   time.Time
	last map[string]Observed
}

// NewRPCNodeView polls node at most once per ttl (0: 30 s).
func NewRPCNodeView(node Caller, ttl time.Duration) *RPCNodeView {
	if ttl <= 0 {
		ttl = 30 * time.Second
	}
	return &RPCNodeView{node: node, ttl: ttl, now: time.Now}
}

// Validators implements NodeView.
func (v *RPCNodeView) Validators(ctx context.Context) (map[string]Observed, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.last != nil && v.now().Sub(v.at) < v.ttl {
		return v.last, nil
	}
	m, err := v.poll(ctx)
	if err != nil {
		return nil, err
	}
	v.last, v.at = m, v.now()
	return m, nil
}

func (v *RPCNodeView) poll(ctx context.Context) (map[string]Observed, error) {
	var cur struct {
		Validators []struct {
			NodeID    string `json:"nodeID"`
			Uptime    string `json:"uptime"`
			Connected bool   `json:"connected"`
		} `json:"validators"`
	}
	if err := v.node.Call(ctx, "/ext/bc/P", "platform.getCurrentValidators", struct{}{}, &cur); err != nil {
		return nil, fmt.Errorf("platform.getCurrentValidators: %w", err)
	}
	var peers struct {
		Peers []struct {
			NodeID  string   `json:"nodeID"`
			Version string   `json:"version"`
			Benched []string `json:"benched"`
		} `json:"peers"`
	}
	if err := v.node.Call(ctx, "/ext/info", "info.peers", struct{}{}, &peers); err != nil {
		return nil, fmt.Errorf("info.peers: %w", err)
	}
	var self struct {
		NodeID string `json:"nodeID"`
	}
	if err := v.node.Call(ctx, "/ext/info", "info.getNodeID", struct{}{}, &self); err != nil {
		return nil, fmt.Errorf("info.getNodeID: %w", err)
	}
	var ver struct {
		Version string `json:"version"`
	}
	if err := v.node.Call(ctx, "/ext/info", "info.getNodeVersion", struct{}{}, &ver); err != nil {
		return nil, fmt.Errorf("info.getNodeVersion: %w", err)
	}
	out := map[string]Observed{}
	for _, c := range cur.Validators {
		o := Observed{Connected: c.Connected}
		if u, err := strconv.ParseFloat(c.Uptime, 64); err == nil && c.Uptime != "" {
			o.Uptime = &u
		}
		out[c.NodeID] = o
	}
	for _, p := range peers.Peers {
		if o, ok := out[p.NodeID]; ok {
			o.Version, o.Benched = p.Version, p.Benched
			out[p.NodeID] = o
		}
	}
	if o, ok := out[self.NodeID]; ok {
		o.Version = ver.Version
		out[self.NodeID] = o
	}
	return out, nil
}
