package warpindex

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/warp"
)

// NodeAPI is what NodePeers needs of the configured avalanchego node;
// *source.Avalanche implements it.
type NodeAPI interface {
	Peers(ctx context.Context) ([]source.Peer, error)
	Call(ctx context.Context, endpointPath, method string, params, result any) error
}

// NodePeers lists the configured node's peers (info.peers) and the node
// itself (info.getNodeID, info.getNodeIP): a warp.PeerLister.
type NodePeers struct {
	Node NodeAPI
	// Log receives a warning when the node's own address cannot be read
	// while its peers can (nil: slog.Default()).
	Log *slog.Logger
}

var _ warp.PeerLister = (*NodePeers)(nil)

// Self is the node itself as a peer to connect to (a bootstrapper).
func (p *NodePeers) Self(ctx context.Context) (warp.Peer, error) {
	var id struct {
		NodeID ids.NodeID `json:"nodeID"`
	}
	if err := p.Node.Call(ctx, source.PathInfo, "info.getNodeID", nil, &id); err != nil {
		return warp.Peer{}, fmt.Errorf("warpindex: info.getNodeID: %w", err)
	}
	if id.NodeID == ids.EmptyNodeID {
		return warp.Peer{}, fmt.Errorf("warpindex: info.getNodeID answered no node id")
	}
	var ip struct {
		IP string `json:"ip"`
	}
	if err := p.Node.Call(ctx, source.PathInfo, "info.getNodeIP", nil, &ip); err != nil {
		return warp.Peer{}, fmt.Errorf("warpindex: info.getNodeIP: %w", err)
	}
	addr, err := netip.ParseAddrPort(ip.IP)
	if err != nil {
		return warp.Peer{}, fmt.Errorf("warpindex: info.getNodeIP answered %q: %w", ip.IP, err)
	}
	if !dialable(addr) {
		return warp.Peer{}, fmt.Errorf("warpindex: info.getNodeIP answered %s, which cannot be dialled", addr)
	}
	return warp.Peer{NodeID: id.NodeID, Addr: addr}, nil
}

// Peers returns the node's peers with the address they listen on, and the
// node itself. Peers without a usable public address are left out: the
// address the node sees an inbound peer at is not one it listens on.
func (p *NodePeers) Peers(ctx context.Context) ([]warp.Peer, error) {
	list, err := p.Node.Peers(ctx)
	if err != nil {
		return nil, fmt.Errorf("warpindex: info.peers: %w", err)
	}
	out := make([]warp.Peer, 0, len(list)+1)
	for _, ps := range list {
		if ps.NodeID == ids.EmptyNodeID || !dialable(ps.PublicIP) {
			continue
		}
		out = append(out, warp.Peer{NodeID: ps.NodeID, Addr: ps.PublicIP})
	}
	self, err := p.Self(ctx)
	if err != nil {
		// The peers are still worth having.
		log := p.Log
		if log == nil {
			log = slog.Default()
		}
		log.Warn("warpindex: the node's own address is unknown", "error", err)
		return out, nil
	}
	return append(out, self), nil
}

func dialable(a netip.AddrPort) bool {
	return a.IsValid() && a.Port() != 0 && !a.Addr().IsUnspecified()
}
