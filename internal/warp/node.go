package warp

import (
	"context"
	"crypto"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/message"
	"github.com/ava-labs/avalanchego/network"
	"github.com/ava-labs/avalanchego/network/dialer"
	"github.com/ava-labs/avalanchego/network/p2p"
	"github.com/ava-labs/avalanchego/network/p2p/acp118"
	"github.com/ava-labs/avalanchego/network/peer"
	p2ppb "github.com/ava-labs/avalanchego/proto/pb/p2p"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/snow/networking/router"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/staking"
	"github.com/ava-labs/avalanchego/subnets"
	"github.com/ava-labs/avalanchego/upgrade"
	"github.com/ava-labs/avalanchego/utils"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/crypto/bls/signer/localsigner"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/version"
)

// Failures the node reports itself, as opposed to AppErrors sent by peers.
// They are compared by identity, because peers may send the same codes.
var (
	errRequestTimedOut = &common.AppError{Code: common.ErrTimeout.Code, Message: "request timed out"}
	errPeerNotReached  = &common.AppError{Code: common.ErrTimeout.Code, Message: "peer not connected"}
	errBuildRequest    = &common.AppError{Code: common.ErrUndefined.Code, Message: "could not build the request message"}
)

// nodeConfig configures a p2pNode.
type nodeConfig struct {
	networkID uint32
	// tlsCert is the staking certificate (the node id derives from it); nil
	// creates an ephemeral one.
	tlsCert *tls.Certificate
	// blsKey signs our IP in the handshake; nil creates an ephemeral one.
	blsKey bls.Signer
	// listener accepts inbound connections; nil makes an outbound-only node.
	listener net.Listener
	// vdrs is the validator view of the node: the network connects to the
	// validators in it and verifies their IP signatures against their keys.
	vdrs                   validators.Manager
	connectToAllValidators bool
	allowPrivateIPs        bool
	requestTimeout         time.Duration
	log                    *slog.Logger
	avaLog                 logging.Logger
	registerer             prometheus.Registerer
}

// p2pNode is one avalanchego peer-to-peer node: avalanchego's network (TLS,
// handshake, peer-list gossip, throttling) plus the glue that avalanchego's
// chain router would normally provide: routing app messages to a p2p.Network
// per chain, request timeouts, and refusing responses nobody asked for.
type p2pNode struct {
	id      ids.NodeID
	net     network.Network
	msgs    message.OutboundMsgBuilder
	vdrs    validators.Manager
	timeout time.Duration
	log     *slog.Logger
	avaLog  logging.Logger

	dispatchDone chan error

	mu      sync.Mutex
	chains  map[ids.ID]*chainNet
	pending map[requestKey]*time.Timer
	closed  bool
}

type requestKey struct {
	chainID   ids.ID
	nodeID    ids.NodeID
	requestID uint32
}

// chainNet is the p2p.Network of one chain: ACP-118 requests for messages of
// that chain travel with its chain id.
type chainNet struct {
	chainID ids.ID
	p2p     *p2p.Network
	client  *p2p.Client
}

func newP2PNode(cfg nodeConfig) (*p2pNode, error) {
	if cfg.log == nil {
		cfg.log = slog.Default()
	}
	if cfg.avaLog == nil {
		cfg.avaLog = logging.NoLog{}
	}
	if cfg.registerer == nil {
		cfg.registerer = prometheus.NewRegistry()
	}
	if cfg.vdrs == nil {
		cfg.vdrs = validators.NewManager()
	}
	if cfg.requestTimeout <= 0 {
		cfg.requestTimeout = DefaultRequestTimeout
	}
	var err error
	if cfg.tlsCert == nil {
		if cfg.tlsCert, err = staking.NewTLSCert(); err != nil {
			return nil, fmt.Errorf("create TLS certificate: %w", err)
		}
	}
	if cfg.blsKey == nil {
		if cfg.blsKey, err = localsigner.New(); err != nil {
			return nil, fmt.Errorf("create BLS key: %w", err)
		}
	}
	if len(cfg.tlsCert.Certificate) == 0 {
		return nil, errors.New("TLS certificate has no certificate")
	}
	cert, err := staking.ParseCertificate(cfg.tlsCert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("parse TLS certificate: %w", err)
	}
	tlsKey, ok := cfg.tlsCert.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("TLS private key %T cannot sign", cfg.tlsCert.PrivateKey)
	}

	// The test-network config of avalanchego is a complete config with the
	// node defaults (throttling, timeouts, gossip); we replace the identity.
	netCfg, err := network.NewTestNetworkConfig(cfg.registerer, cfg.networkID, cfg.vdrs, set.Set[ids.ID]{})
	if err != nil {
		return nil, fmt.Errorf("network config: %w", err)
	}
	netCfg.TLSConfig = peer.TLSConfig(*cfg.tlsCert, nil)
	netCfg.TLSKey = tlsKey
	netCfg.BLSKey = cfg.blsKey
	netCfg.MyNodeID = ids.NodeIDFromCert(cert)
	netCfg.ConnectToAllValidators = cfg.connectToAllValidators
	netCfg.AllowPrivateIPs = cfg.allowPrivateIPs

	listener := cfg.listener
	myIP := netip.AddrPortFrom(netip.IPv4Unspecified(), 1)
	if listener != nil {
		ap, err := netip.ParseAddrPort(listener.Addr().String())
		if err != nil {
			return nil, fmt.Errorf("listener address: %w", err)
		}
		myIP = ap
	} else {
		listener = newNoListener()
	}
	netCfg.MyIPPort = utils.NewAtomic(myIP)

	msgCreator, err := message.NewCreator(
		cfg.registerer,
		constants.DefaultNetworkCompressionType,
		constants.DefaultNetworkMaximumInboundTimeout,
	)
	if err != nil {
		return nil, fmt.Errorf("message creator: %w", err)
	}

	n := &p2pNode{
		id:           netCfg.MyNodeID,
		msgs:         msgCreator,
		vdrs:         cfg.vdrs,
		timeout:      cfg.requestTimeout,
		log:          cfg.log,
		avaLog:       cfg.avaLog,
		dispatchDone: make(chan error, 1),
		chains:       make(map[ids.ID]*chainNet),
		pending:      make(map[requestKey]*time.Timer),
	}
	n.net, err = network.NewNetwork(
		netCfg,
		// The oldest peer version we accept, as avalanchego's own node does.
		upgrade.GetConfig(cfg.networkID).GraniteTime,
		msgCreator,
		cfg.registerer,
		cfg.avaLog,
		listener,
		dialer.NewDialer(constants.NetworkType, netCfg.DialerConfig, cfg.avaLog),
		(*nodeRouter)(n),
	)
	if err != nil {
		return nil, fmt.Errorf("create p2p network: %w", err)
	}
	go func() { n.dispatchDone <- n.net.Dispatch() }()
	return n, nil
}

// close shuts the network down and fails every pending request.
func (n *p2pNode) close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()

	n.net.StartClose()
	err := <-n.dispatchDone

	n.mu.Lock()
	keys := make([]requestKey, 0, len(n.pending))
	for k := range n.pending {
		keys = append(keys, k)
	}
	n.mu.Unlock()
	for _, k := range keys {
		n.failRequest(k, errPeerNotReached)
	}
	return err
}

// chain returns the p2p.Network for chainID, creating it on first use.
// Callers bound the chain ids they pass (known chains only).
func (n *p2pNode) chain(chainID ids.ID) (*chainNet, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.chains[chainID]; ok {
		return c, nil
	}
	sender := &chainSender{node: n, chainID: chainID}
	// Metrics of these per-chain networks are not exported: a throwaway
	// registry avoids duplicate registration across chains.
	pn, err := p2p.NewNetwork(n.avaLog, sender, prometheus.NewRegistry(), "p2p")
	if err != nil {
		return nil, fmt.Errorf("p2p network for chain %s: %w", chainID, err)
	}
	c := &chainNet{
		chainID: chainID,
		p2p:     pn,
		client:  pn.NewClient(acp118.HandlerID, p2p.PeerSampler{Peers: &p2p.Peers{}}),
	}
	n.chains[chainID] = c
	return c, nil
}

func (n *p2pNode) lookupChain(chainID ids.ID) *chainNet {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.chains[chainID]
}

// connected reports which of nodeIDs have finished the handshake with us.
func (n *p2pNode) connected(nodeIDs []ids.NodeID) set.Set[ids.NodeID] {
	out := set.NewSet[ids.NodeID](len(nodeIDs))
	if len(nodeIDs) == 0 {
		return out
	}
	for _, info := range n.net.PeerInfo(nodeIDs) {
		out.Add(info.ID)
	}
	return out
}

// sendRequest sends one AppRequest and arms its timeout. Failures are
// delivered asynchronously: p2p.Client holds its router lock while it calls
// the sender and registers the request only afterwards.
func (n *p2pNode) sendRequest(chainID ids.ID, nodeID ids.NodeID, requestID uint32, payload []byte) {
	key := requestKey{chainID: chainID, nodeID: nodeID, requestID: requestID}
	n.mu.Lock()
	// Stale duplicates cannot happen: p2p.Client never reuses a pending id.
	n.pending[key] = time.AfterFunc(n.timeout, func() { n.failRequest(key, errRequestTimedOut) })
	n.mu.Unlock()

	msg, err := n.msgs.AppRequest(chainID, requestID, n.timeout, payload)
	if err != nil {
		n.log.Warn("warp: build AppRequest", "chain", chainID, "error", err)
		go n.failRequest(key, errBuildRequest)
		return
	}
	sent := n.net.Send(msg, common.SendConfig{NodeIDs: set.Of(nodeID)}, constants.PrimaryNetworkID, subnets.NoOpAllower)
	if !sent.Contains(nodeID) {
		go n.failRequest(key, errPeerNotReached)
	}
}

// takePending removes a pending request; false if it already finished.
func (n *p2pNode) takePending(key requestKey) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, ok := n.pending[key]
	if ok {
		t.Stop()
		delete(n.pending, key)
	}
	return ok
}

func (n *p2pNode) failRequest(key requestKey, appErr *common.AppError) {
	if !n.takePending(key) {
		return
	}
	c := n.lookupChain(key.chainID)
	if c == nil {
		return
	}
	if err := c.p2p.AppRequestFailed(context.Background(), key.nodeID, key.requestID, appErr); err != nil {
		n.log.Debug("warp: deliver request failure", "node", key.nodeID, "error", err)
	}
}

func (n *p2pNode) send(msg *message.OutboundMessage, nodeID ids.NodeID) {
	n.net.Send(msg, common.SendConfig{NodeIDs: set.Of(nodeID)}, constants.PrimaryNetworkID, subnets.NoOpAllower)
}

// nodeRouter receives what avalanchego's network hands to a node's chain
// router: every app-level message of connected peers.
type nodeRouter p2pNode

var _ router.ExternalHandler = (*nodeRouter)(nil)

func (r *nodeRouter) HandleInbound(_ context.Context, msg *message.InboundMessage) {
	n := (*p2pNode)(r)
	// Runs on the peer's read goroutine: everything here must be quick.
	switch m := msg.Message.(type) {
	case *p2ppb.AppResponse:
		defer msg.OnFinishedHandling()
		chainID, err := ids.ToID(m.ChainId)
		if err != nil {
			return
		}
		key := requestKey{chainID: chainID, nodeID: msg.NodeID, requestID: m.RequestId}
		if !n.takePending(key) {
			return // late, duplicate or unrequested
		}
		if c := n.lookupChain(chainID); c != nil {
			_ = c.p2p.AppResponse(context.Background(), msg.NodeID, m.RequestId, m.AppBytes)
		}
	case *p2ppb.AppError:
		defer msg.OnFinishedHandling()
		chainID, err := ids.ToID(m.ChainId)
		if err != nil {
			return
		}
		key := requestKey{chainID: chainID, nodeID: msg.NodeID, requestID: m.RequestId}
		if !n.takePending(key) {
			return
		}
		if c := n.lookupChain(chainID); c != nil {
			appErr := &common.AppError{Code: m.ErrorCode, Message: m.ErrorMessage}
			_ = c.p2p.AppRequestFailed(context.Background(), msg.NodeID, m.RequestId, appErr)
		}
	case *p2ppb.AppRequest:
		chainID, err := ids.ToID(m.ChainId)
		c := n.lookupChain(chainID)
		if err != nil || c == nil {
			// Like avalanchego for chains it does not run: drop.
			msg.OnFinishedHandling()
			return
		}
		// Handlers may be slow (signing); the chain handler of a real node
		// also works off the read goroutine.
		go func() {
			defer msg.OnFinishedHandling()
			_ = c.p2p.AppRequest(context.Background(), msg.NodeID, m.RequestId, msg.Expiration, m.AppBytes)
		}()
	default:
		// Gossip and consensus messages are of no use to us.
		msg.OnFinishedHandling()
	}
}

func (r *nodeRouter) Connected(nodeID ids.NodeID, _ *version.Application, subnetID ids.ID) {
	if subnetID == constants.PrimaryNetworkID {
		(*p2pNode)(r).log.Debug("warp: peer connected", "node", nodeID)
	}
}

func (r *nodeRouter) Disconnected(nodeID ids.NodeID) {
	(*p2pNode)(r).log.Debug("warp: peer disconnected", "node", nodeID)
}

// chainSender is the common.AppSender of one chain's p2p.Network.
type chainSender struct {
	node    *p2pNode
	chainID ids.ID
}

var _ common.AppSender = (*chainSender)(nil)

func (s *chainSender) SendAppRequest(_ context.Context, nodeIDs set.Set[ids.NodeID], requestID uint32, payload []byte) error {
	for nodeID := range nodeIDs {
		s.node.sendRequest(s.chainID, nodeID, requestID, payload)
	}
	return nil
}

func (s *chainSender) SendAppResponse(_ context.Context, nodeID ids.NodeID, requestID uint32, payload []byte) error {
	msg, err := s.node.msgs.AppResponse(s.chainID, requestID, payload)
	if err != nil {
		return fmt.Errorf("build AppResponse: %w", err)
	}
	s.node.send(msg, nodeID)
	return nil
}

func (s *chainSender) SendAppError(_ context.Context, nodeID ids.NodeID, requestID uint32, code int32, errMsg string) error {
	msg, err := s.node.msgs.AppError(s.chainID, requestID, code, errMsg)
	if err != nil {
		return fmt.Errorf("build AppError: %w", err)
	}
	s.node.send(msg, nodeID)
	return nil
}

func (*chainSender) SendAppGossip(context.Context, common.SendConfig, []byte) error {
	return nil // we never gossip
}

// noListener is the listener of an outbound-only node: Accept blocks until
// Close, like the one of avalanchego's test network.
type noListener struct {
	once   sync.Once
	closed chan struct{}
}

func newNoListener() *noListener { return &noListener{closed: make(chan struct{})} }

func (l *noListener) Accept() (net.Conn, error) {
	<-l.closed
	return nil, net.ErrClosed
}

func (l *noListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (*noListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4zero, Port: 1} }
