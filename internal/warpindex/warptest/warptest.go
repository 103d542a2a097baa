// Package warptest runs in-process Avalanche validators for tests of Warp
// signature aggregation: each one is avalanchego's own p2p network stack
// (TLS, handshake, peer-list gossip, throttling) listening on 127.0.0.1 with
// its own staking certificate and a BLS key of the test's choosing, and
// answers ACP-118 signature requests with avalanchego's acp118 handler and
// Warp signer.
package warptest

import (
	"context"
	"crypto"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

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
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/version"
	avawarp "github.com/ava-labs/avalanchego/vms/platformvm/warp"

	"github.com/permafrost-dev/permafrost/internal/warp"
)

// VerifierFunc adapts a function to acp118.Verifier.
type VerifierFunc func(ctx context.Context, msg *avawarp.UnsignedMessage, justification []byte) *common.AppError

// Verify implements acp118.Verifier.
func (f VerifierFunc) Verify(ctx context.Context, msg *avawarp.UnsignedMessage, justification []byte) *common.AppError {
	return f(ctx, msg, justification)
}

// Options configure a validator.
type Options struct {
	// NetworkID is the network the validator is on. Required.
	NetworkID uint32
	// BLSKey is the validator's BLS key: it signs Warp messages and the
	// validator's IP in the handshake. Required.
	BLSKey bls.Signer
	// Verifier decides what the validator signs; nil signs everything.
	Verifier acp118.Verifier
	// Chains are the chains whose messages the validator signs; nil: the
	// P-chain only.
	Chains []ids.ID
}

// Validator is a running in-process validator.
type Validator struct {
	NodeID ids.NodeID
	Addr   netip.AddrPort
	BLSKey bls.Signer

	requests atomic.Int64
	net      network.Network
	msgs     message.OutboundMsgBuilder
	chains   map[ids.ID]*p2p.Network
	done     chan error
	once     sync.Once
}

// Peer is the validator as a peer to connect to.
func (v *Validator) Peer() warp.Peer { return warp.Peer{NodeID: v.NodeID, Addr: v.Addr} }

// Requests is the number of signature requests that reached the verifier.
func (v *Validator) Requests() int64 { return v.requests.Load() }

// Start runs a validator on 127.0.0.1 until the test ends.
func Start(t testing.TB, o Options) *Validator {
	t.Helper()
	v, err := start(o)
	if err != nil {
		t.Fatalf("warptest: %v", err)
	}
	t.Cleanup(func() {
		if err := v.Close(); err != nil {
			t.Errorf("warptest: close validator %s: %v", v.NodeID, err)
		}
	})
	return v
}

func start(o Options) (*Validator, error) {
	if o.NetworkID == 0 || o.BLSKey == nil {
		return nil, fmt.Errorf("a network id and a BLS key are required")
	}
	if o.Chains == nil {
		o.Chains = []ids.ID{constants.PlatformChainID}
	}
	if o.Verifier == nil {
		o.Verifier = VerifierFunc(func(context.Context, *avawarp.UnsignedMessage, []byte) *common.AppError { return nil })
	}
	tlsCert, err := staking.NewTLSCert()
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	cert, err := staking.ParseCertificate(tlsCert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("parse TLS certificate: %w", err)
	}
	tlsKey, ok := tlsCert.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("TLS key %T cannot sign", tlsCert.PrivateKey)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := netip.MustParseAddrPort(ln.Addr().String())

	reg := prometheus.NewRegistry()
	log := logging.NoLog{}
	// A validator only answers: its own validator view stays empty.
	netCfg, err := network.NewTestNetworkConfig(reg, o.NetworkID, validators.NewManager(), set.Set[ids.ID]{})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("network config: %w", err)
	}
	netCfg.TLSConfig = peer.TLSConfig(*tlsCert, nil)
	netCfg.TLSKey = tlsKey
	netCfg.BLSKey = o.BLSKey
	netCfg.MyNodeID = ids.NodeIDFromCert(cert)
	netCfg.MyIPPort = utils.NewAtomic(addr)
	netCfg.AllowPrivateIPs = true

	msgs, err := message.NewCreator(reg, constants.DefaultNetworkCompressionType, constants.DefaultNetworkMaximumInboundTimeout)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("message creator: %w", err)
	}
	v := &Validator{
		NodeID: netCfg.MyNodeID,
		Addr:   addr,
		BLSKey: o.BLSKey,
		msgs:   msgs,
		chains: make(map[ids.ID]*p2p.Network, len(o.Chains)),
		done:   make(chan error, 1),
	}
	counting := VerifierFunc(func(ctx context.Context, m *avawarp.UnsignedMessage, j []byte) *common.AppError {
		v.requests.Add(1)
		return o.Verifier.Verify(ctx, m, j)
	})
	for _, chainID := range o.Chains {
		pn, err := p2p.NewNetwork(log, &sender{v: v, chainID: chainID}, prometheus.NewRegistry(), "p2p")
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("p2p network of chain %s: %w", chainID, err)
		}
		h := acp118.NewHandler(counting, avawarp.NewSigner(o.BLSKey, o.NetworkID, chainID))
		if err := pn.AddHandler(acp118.HandlerID, h); err != nil {
			ln.Close()
			return nil, fmt.Errorf("ACP-118 handler: %w", err)
		}
		v.chains[chainID] = pn
	}
	v.net, err = network.NewNetwork(
		netCfg,
		upgrade.GetConfig(o.NetworkID).GraniteTime,
		msgs,
		reg,
		log,
		ln,
		dialer.NewDialer(constants.NetworkType, netCfg.DialerConfig, log),
		(*inbound)(v),
	)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("p2p network: %w", err)
	}
	go func() { v.done <- v.net.Dispatch() }()
	return v, nil
}

// Close stops the validator.
func (v *Validator) Close() error {
	var err error
	v.once.Do(func() {
		v.net.StartClose()
		err = <-v.done
	})
	return err
}

// inbound routes the network's app messages to the chains' p2p networks.
type inbound Validator

var _ router.ExternalHandler = (*inbound)(nil)

func (in *inbound) HandleInbound(_ context.Context, msg *message.InboundMessage) {
	req, ok := msg.Message.(*p2ppb.AppRequest)
	if !ok {
		msg.OnFinishedHandling() // gossip, pings, responses: nothing to do
		return
	}
	chainID, err := ids.ToID(req.ChainId)
	pn := in.chains[chainID]
	if err != nil || pn == nil {
		msg.OnFinishedHandling()
		return
	}
	// Off the peer's read goroutine, as a node's chain handler does.
	go func() {
		defer msg.OnFinishedHandling()
		_ = pn.AppRequest(context.Background(), msg.NodeID, req.RequestId, msg.Expiration, req.AppBytes)
	}()
}

func (*inbound) Connected(ids.NodeID, *version.Application, ids.ID) {}
func (*inbound) Disconnected(ids.NodeID)                            {}

// sender sends one chain's responses.
type sender struct {
	v       *Validator
	chainID ids.ID
}

var _ common.AppSender = (*sender)(nil)

func (s *sender) send(msg *message.OutboundMessage, nodeID ids.NodeID) {
	s.v.net.Send(msg, common.SendConfig{NodeIDs: set.Of(nodeID)}, constants.PrimaryNetworkID, subnets.NoOpAllower)
}

func (s *sender) SendAppResponse(_ context.Context, nodeID ids.NodeID, requestID uint32, payload []byte) error {
	msg, err := s.v.msgs.AppResponse(s.chainID, requestID, payload)
	if err != nil {
		return err
	}
	s.send(msg, nodeID)
	return nil
}

func (s *sender) SendAppError(_ context.Context, nodeID ids.NodeID, requestID uint32, code int32, errMsg string) error {
	msg, err := s.v.msgs.AppError(s.chainID, requestID, code, errMsg)
	if err != nil {
		return err
	}
	s.send(msg, nodeID)
	return nil
}

func (*sender) SendAppRequest(context.Context, set.Set[ids.NodeID], uint32, []byte) error {
	return fmt.Errorf("warptest: validators do not send requests")
}

func (*sender) SendAppGossip(context.Context, common.SendConfig, []byte) error { return nil }
