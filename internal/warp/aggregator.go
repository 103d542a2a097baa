package warp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/ava-labs/avalanchego/cache/lru"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/network/p2p"
	"github.com/ava-labs/avalanchego/proto/pb/sdk"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
)

// Defaults of Config.
const (
	DefaultRequestTimeout     = 5 * time.Second
	DefaultAggregationTimeout = 10 * time.Second
	DefaultConnectWait        = 3 * time.Second
	DefaultMaxAttempts        = 3
	DefaultSignatureCacheSize = 1 << 16
	DefaultRefreshInterval    = time.Minute

	// Subnets (other than the primary network) whose validators we stay
	// connected to after a request; the least recently used is dropped.
	maxTrackedSubnets = 64
	subnetIdleTime    = time.Hour
)

// Config configures an Aggregator.
type Config struct {
	// NetworkID of the network served (88888 for devnet-a). Required.
	NetworkID uint32
	// ValidatorSets and L1Txs are the P-chain index. Required.
	ValidatorSets ValidatorSets
	L1Txs         L1Txs

	// Bootstrappers are peers to connect to at start and to keep connected
	// (typically the configured avalanchego node). Peers, when set, is asked
	// for more validator IPs every RefreshInterval.
	Bootstrappers []Peer
	Peers         PeerLister

	// TLSCert is the staking certificate that gives this peer its node id;
	// nil uses an ephemeral one (a new node id each start).
	TLSCert *tls.Certificate
	// AllowPrivateIPs lets the network dial private and loopback addresses.
	// avalanchego allows them on every network but mainnet and fuji.
	AllowPrivateIPs *bool

	// RequestTimeout bounds one ACP-118 request to one validator.
	RequestTimeout time.Duration
	// AggregationTimeout bounds one Aggregate / AggregateForTx call (the
	// caller's context may end it earlier).
	AggregationTimeout time.Duration
	// ConnectWait is how long an aggregation keeps retrying validators that
	// are not connected yet.
	ConnectWait time.Duration
	// MaxAttempts is how many requests a validator gets that time out (or are
	// throttled) before it counts as not answering.
	MaxAttempts int
	// SignatureCacheSize is the number of (message, validator) signatures kept.
	SignatureCacheSize int
	// RefreshInterval is how often the validator sets the network stays
	// connected to are refreshed from the index.
	RefreshInterval time.Duration

	Logger *slog.Logger
	// AvalancheLogger receives avalanchego's own networking logs (default: none).
	AvalancheLogger logging.Logger
	// Registerer receives avalanchego's networking metrics (default: a private registry).
	Registerer prometheus.Registerer
}

// Aggregator collects ACP-118 signatures from validators over the avalanchego
// p2p network and aggregates them into signed Warp messages.
type Aggregator struct {
	cfg   Config
	node  *p2pNode
	vdrs  validators.Manager
	cache *lru.Cache[sigKey, *bls.Signature]
	log   *slog.Logger

	syncMu   sync.Mutex           // serializes validator-manager updates
	subnetMu sync.Mutex           // guards subnets
	subnets  map[ids.ID]time.Time // tracked subnets -> last use

	kick chan struct{} // asks keepWarm for an early refresh
	stop context.CancelFunc
	done chan struct{}
}

type sigKey struct {
	msgID ids.ID
	pk    string // uncompressed BLS public key
}

// New starts the p2p node and returns the aggregator. Close releases it.
func New(cfg Config) (*Aggregator, error) {
	if cfg.NetworkID == 0 {
		return nil, errors.New("warp: NetworkID is required")
	}
	if cfg.ValidatorSets == nil || cfg.L1Txs == nil {
		return nil, errors.New("warp: ValidatorSets and L1Txs are required")
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.AggregationTimeout <= 0 {
		cfg.AggregationTimeout = DefaultAggregationTimeout
	}
	if cfg.ConnectWait <= 0 {
		cfg.ConnectWait = DefaultConnectWait
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.SignatureCacheSize <= 0 {
		cfg.SignatureCacheSize = DefaultSignatureCacheSize
	}
	if cfg.RefreshInterval <= 0 {
		cfg.RefreshInterval = DefaultRefreshInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	allowPrivate := !constants.ProductionNetworkIDs.Contains(cfg.NetworkID)
	if cfg.AllowPrivateIPs != nil {
		allowPrivate = *cfg.AllowPrivateIPs
	}

	vdrs := validators.NewManager()
	node, err := newP2PNode(nodeConfig{
		networkID:              cfg.NetworkID,
		tlsCert:                cfg.TLSCert,
		vdrs:                   vdrs,
		connectToAllValidators: true, // we want every validator we track, on any subnet
		allowPrivateIPs:        allowPrivate,
		requestTimeout:         cfg.RequestTimeout,
		log:                    cfg.Logger,
		avaLog:                 cfg.AvalancheLogger,
		registerer:             cfg.Registerer,
	})
	if err != nil {
		return nil, fmt.Errorf("warp: start p2p node: %w", err)
	}
	for _, p := range cfg.Bootstrappers {
		node.net.ManuallyTrack(p.NodeID, p.Addr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &Aggregator{
		cfg:     cfg,
		node:    node,
		vdrs:    vdrs,
		cache:   lru.NewCache[sigKey, *bls.Signature](cfg.SignatureCacheSize),
		log:     cfg.Logger,
		subnets: make(map[ids.ID]time.Time),
		kick:    make(chan struct{}, 1),
		stop:    cancel,
		done:    make(chan struct{}),
	}
	go a.keepWarm(ctx)
	a.log.Info("warp: p2p node started", "nodeID", node.id, "networkID", cfg.NetworkID)
	return a, nil
}

// NodeID is the node id this peer presents to the network.
func (a *Aggregator) NodeID() ids.NodeID { return a.node.id }

// Close stops the refresh loop and the p2p node.
func (a *Aggregator) Close() error {
	a.stop()
	<-a.done
	if err := a.node.close(); err != nil {
		return fmt.Errorf("warp: close p2p node: %w", err)
	}
	return nil
}

// Aggregate serves POST .../aggregateSignatures: it validates the request,
// asks the signing subnet's validators for their signatures and returns the
// signed Warp message bytes. Errors: *RequestError (400), *QuorumError (503),
// other (500).
func (a *Aggregator) Aggregate(ctx context.Context, req Request) ([]byte, error) {
	p, err := parseRequest(req)
	if err != nil {
		return nil, err
	}
	if err := a.checkNetwork(req.NetworkID); err != nil {
		return nil, err
	}
	msg, justification := p.msg, p.justification
	var about *ids.ID
	if msg == nil {
		lm, err := a.messageFromJustification(ctx, justification)
		if err != nil {
			return nil, err
		}
		msg, about = lm.msg, &lm.subnetID
	}
	if msg.NetworkID != a.cfg.NetworkID {
		return nil, badRequest("message is for network %d, this server serves network %d", msg.NetworkID, a.cfg.NetworkID)
	}
	sourceSubnet, err := a.sourceSubnet(ctx, msg.SourceChainID)
	if err != nil {
		return nil, err
	}
	signing := sourceSubnet
	switch {
	case p.hasSigningSubnet:
		signing = p.signingSubnet
	case about != nil:
		signing = *about
	case msg.SourceChainID == constants.PlatformChainID:
		if signing, err = a.pChainSigningSubnet(ctx, msg, justification); err != nil {
			return nil, err
		}
	}
	return a.sign(ctx, job{
		msg:           msg,
		justification: justification,
		subnetID:      signing,
		pChainHeight:  p.pChainHeight,
		quorum:        p.quorum,
		buffer:        p.buffer,
	})
}

// AggregateForTx serves GET .../aggregateSignatures/{txHash}: the P-chain's
// message about an L1 validator tx (see messageForTx), signed by the L1's
// validators at the proposed height with the default quorum. networkID is
// the {network} of the path (0 skips the check); txHash is cb58 or hex.
// Errors: *RequestError (400: malformed hash, not an L1 tx), ErrNotFound
// (404), *QuorumError (503), other (500).
func (a *Aggregator) AggregateForTx(ctx context.Context, networkID uint32, txHash string) ([]byte, error) {
	if err := a.checkNetwork(networkID); err != nil {
		return nil, err
	}
	txID, err := parseID(txHash)
	if err != nil {
		return nil, badRequest("txHash: %v", err)
	}
	tx, err := a.cfg.L1Txs.PChainTx(ctx, txID)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, fmt.Errorf("transaction %s: %w", txID, ErrNotFound)
	case errors.Is(err, ErrNotPChainTx):
		return nil, badRequest("transaction %s is not a platform-chain transaction; only L1 validator transactions have a Warp message", txID)
	case err != nil:
		return nil, fmt.Errorf("warp: load tx %s: %w", txID, err)
	}
	lm, err := a.messageForTx(ctx, tx)
	if err != nil {
		var reqErr *RequestError
		if errors.As(err, &reqErr) {
			return nil, badRequest("transaction %s: %s", txID, reqErr.Msg)
		}
		return nil, fmt.Errorf("warp: message of tx %s: %w", txID, err)
	}
	return a.sign(ctx, job{
		msg:           lm.msg,
		justification: lm.justification,
		subnetID:      lm.subnetID,
		quorum:        DefaultQuorumPercentage,
	})
}

func (a *Aggregator) checkNetwork(networkID uint32) error {
	if networkID != 0 && networkID != a.cfg.NetworkID {
		return badRequest("network %d is not served here (this server serves network %d)", networkID, a.cfg.NetworkID)
	}
	return nil
}

func (a *Aggregator) sourceSubnet(ctx context.Context, chainID ids.ID) (ids.ID, error) {
	if chainID == constants.PlatformChainID {
		return constants.PrimaryNetworkID, nil
	}
	subnetID, err := a.cfg.ValidatorSets.SubnetOfChain(ctx, chainID)
	if errors.Is(err, ErrNotFound) {
		return ids.Empty, badRequest("unknown source chain %s", chainID)
	}
	if err != nil {
		return ids.Empty, fmt.Errorf("warp: subnet of chain %s: %w", chainID, err)
	}
	return subnetID, nil
}

type job struct {
	msg           *warp.UnsignedMessage
	justification []byte
	subnetID      ids.ID
	pChainHeight  uint64 // 0 = proposed height
	quorum        uint64
	buffer        uint64
}

// sign runs one aggregation: validator set, signatures, aggregate, verify.
func (a *Aggregator) sign(ctx context.Context, j job) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.AggregationTimeout)
	defer cancel()

	height := j.pChainHeight
	if height == 0 {
		h, err := a.cfg.ValidatorSets.ProposedHeight(ctx)
		if err != nil {
			return nil, fmt.Errorf("warp: proposed P-chain height: %w", err)
		}
		height = h
	}
	vals, err := a.cfg.ValidatorSets.ValidatorSet(ctx, j.subnetID, height)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, badRequest("unknown subnet %s at P-chain height %d", j.subnetID, height)
	case errors.Is(err, ErrUnknownHeight):
		return nil, badRequest("pChainHeight %d is above the indexed P-chain tip", height)
	case err != nil:
		return nil, fmt.Errorf("warp: validators of subnet %s at height %d: %w", j.subnetID, height, err)
	}
	vset, err := canonicalSet(vals)
	if err != nil {
		return nil, fmt.Errorf("warp: validators of subnet %s at height %d: %w", j.subnetID, height, err)
	}
	qErr := &QuorumError{SubnetID: j.subnetID, PChainHeight: height, QuorumPercentage: j.quorum, Total: vset.TotalWeight}
	if vset.TotalWeight == 0 {
		return nil, qErr
	}
	qErr.Needed = neededWeight(vset.TotalWeight, j.quorum)
	a.track(j.subnetID, vals)

	chain, err := a.node.chain(j.msg.SourceChainID)
	if err != nil {
		return nil, fmt.Errorf("warp: %w", err)
	}
	sigs, weight, err := a.collect(ctx, chain, j, vset)
	if err != nil {
		return nil, err
	}
	if !meetsQuorum(weight, vset.TotalWeight, j.quorum) {
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, fmt.Errorf("warp: aggregation canceled: %w", ctx.Err())
		}
		qErr.Signed = weight
		return nil, qErr
	}

	indices := make([]int, 0, len(sigs))
	for i := range sigs {
		indices = append(indices, i)
	}
	sort.Ints(indices)
	list := make([]*bls.Signature, len(indices))
	for k, i := range indices {
		list[k] = sigs[i]
	}
	agg, err := bls.AggregateSignatures(list)
	if err != nil {
		return nil, fmt.Errorf("warp: aggregate signatures: %w", err)
	}
	bitSig := &warp.BitSetSignature{Signers: set.NewBits(indices...).Bytes()}
	copy(bitSig.Signature[:], bls.SignatureToBytes(agg))
	signed, err := warp.NewMessage(j.msg, bitSig)
	if err != nil {
		return nil, fmt.Errorf("warp: signed message: %w", err)
	}
	// Exactly what a receiving chain will check.
	if err := bitSig.Verify(j.msg, a.cfg.NetworkID, vset, j.quorum, 100); err != nil {
		return nil, fmt.Errorf("warp: aggregated signature does not verify: %w", err)
	}
	a.log.Debug("warp: aggregated", "message", j.msg.ID(), "subnet", j.subnetID, "height", height,
		"signers", len(indices), "weight", weight, "total", vset.TotalWeight)
	return signed.Bytes(), nil
}

// nodeState is the aggregation loop's view of one node of a validator.
// Only the loop goroutine touches it.
type nodeState struct {
	nodeID   ids.NodeID
	v        int // index in the canonical set
	inFlight bool
	done     bool // answered for good (refused, bad signature, gave up)
	timeouts int  // requests that timed out or were throttled
	retries  int
	retryAt  time.Time
}

type result struct {
	node *nodeState
	sig  *bls.Signature
	err  error
}

// inbox collects results from response callbacks, which run on the peers'
// read goroutines and must never block.
type inbox struct {
	mu     sync.Mutex
	items  []result
	signal chan struct{}
}

func (in *inbox) push(r result) {
	in.mu.Lock()
	in.items = append(in.items, r)
	in.mu.Unlock()
	select {
	case in.signal <- struct{}{}:
	default:
	}
}

func (in *inbox) drain() []result {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := in.items
	in.items = nil
	return out
}

// collect gathers signatures until the signed weight reaches quorum+buffer,
// every validator answered for good, or ctx ends. Cached signatures count
// without a request.
//
// Signatures are checked in one batch: the aggregate signature against the
// aggregate key of the signers (one pairing instead of one per validator).
// Only when the batch fails is each one checked, and the bad ones dropped
// (and evicted from the cache); collection then goes on. Cached signatures
// are part of every batch, so the cache never vouches for a signature.
//
// Why not acp118.SignatureAggregator: it stops at the first threshold (no
// buffer above the quorum), computes the threshold with a floor division
// that can accept weight below the quorum warp verification requires, keeps
// no per-validator signatures to cache, never retries, verifies every
// signature on its own, and its unbuffered result channel blocks the
// response callbacks (on the peers' read goroutines) once it has returned.
func (a *Aggregator) collect(ctx context.Context, chain *chainNet, j job, vset validators.WarpSet) (map[int]*bls.Signature, uint64, error) {
	msgBytes := j.msg.Bytes()
	msgID := j.msg.ID()
	target := j.quorum + j.buffer
	key := func(i int) sigKey { return sigKey{msgID: msgID, pk: string(vset.Validators[i].PublicKeyBytes)} }

	g := &gathering{
		a:       a,
		chain:   chain,
		vset:    vset,
		target:  target,
		sigs:    make(map[int]*bls.Signature),
		byIndex: make(map[int][]*nodeState),
		in:      &inbox{signal: make(chan struct{}, 1)},
		start:   time.Now(),
	}
	fromCache := make(map[int]bool)
	for i, v := range vset.Validators {
		if sig, ok := a.cache.Get(key(i)); ok {
			g.sigs[i] = sig
			g.weight += v.Weight
			fromCache[i] = true
		}
		for _, nodeID := range v.NodeIDs {
			n := &nodeState{nodeID: nodeID, v: i}
			g.nodes = append(g.nodes, n)
			g.byIndex[i] = append(g.byIndex[i], n)
		}
	}
	var err error
	if g.reqBytes, err = proto.Marshal(&sdk.SignatureRequest{Message: msgBytes, Justification: j.justification}); err != nil {
		return nil, 0, fmt.Errorf("warp: marshal signature request: %w", err)
	}

	for {
		g.run(ctx)
		bad := badSignatures(g.sigs, vset, msgBytes)
		if len(bad) == 0 {
			break
		}
		for _, i := range bad {
			a.log.Debug("warp: dropping invalid signature", "nodes", vset.Validators[i].NodeIDs, "cached", fromCache[i])
			a.cache.Evict(key(i))
			delete(g.sigs, i)
			g.weight -= vset.Validators[i].Weight
			if fromCache[i] {
				delete(fromCache, i) // ask the validator itself
				continue
			}
			for _, n := range g.byIndex[i] {
				n.done = true // a validator that signed wrongly is not asked again
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	for i, sig := range g.sigs {
		a.cache.Put(key(i), sig)
	}
	return g.sigs, g.weight, nil
}

// gathering is the state of one aggregation's requests; only the collect
// goroutine touches it.
type gathering struct {
	a        *Aggregator
	chain    *chainNet
	vset     validators.WarpSet
	target   uint64
	reqBytes []byte
	sigs     map[int]*bls.Signature // not yet verified
	weight   uint64
	nodes    []*nodeState
	byIndex  map[int][]*nodeState
	in       *inbox
	start    time.Time
	inFlight int
}

// run sends requests and takes answers until the signatures' weight reaches
// the target, every node answered for good, or ctx ends.
func (g *gathering) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for !meetsQuorum(g.weight, g.vset.TotalWeight, g.target) {
		now := time.Now()
		var wake time.Time
		for _, n := range g.nodes {
			if n.done || n.inFlight || g.sigs[n.v] != nil {
				continue
			}
			if now.Before(n.retryAt) {
				if wake.IsZero() || n.retryAt.Before(wake) {
					wake = n.retryAt
				}
				continue
			}
			n.inFlight = true
			g.inFlight++
			if err := g.chain.client.AppRequest(ctx, set.Of(n.nodeID), g.reqBytes, g.in.callback(n)); err != nil {
				g.a.log.Warn("warp: send signature request", "node", n.nodeID, "error", err)
				n.inFlight, n.done = false, true
				g.inFlight--
			}
		}
		if g.inFlight == 0 && wake.IsZero() {
			return // every validator answered for good
		}
		var wakeC <-chan time.Time
		if !wake.IsZero() {
			timer.Reset(time.Until(wake))
			wakeC = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-g.in.signal:
		case <-wakeC:
		}
		timer.Stop()
		for _, r := range g.in.drain() {
			n := r.node
			n.inFlight = false
			g.inFlight--
			switch {
			case g.sigs[n.v] != nil:
				// another node of the same validator was faster
			case r.sig != nil:
				g.sigs[n.v] = r.sig
				g.weight += g.vset.Validators[n.v].Weight
			default:
				g.a.afterFailure(n, r.err, g.start)
			}
		}
	}
}

// callback parses a validator's answer on the peer's read goroutine. The
// signature is verified later, in a batch.
func (in *inbox) callback(n *nodeState) p2p.AppResponseCallback {
	return func(_ context.Context, _ ids.NodeID, respBytes []byte, err error) {
		if err != nil {
			in.push(result{node: n, err: err})
			return
		}
		sig, err := parseResponse(respBytes)
		in.push(result{node: n, sig: sig, err: err})
	}
}

func parseResponse(respBytes []byte) (*bls.Signature, error) {
	var resp sdk.SignatureResponse
	if err := proto.Unmarshal(respBytes, &resp); err != nil {
		return nil, fmt.Errorf("malformed signature response: %w", err)
	}
	sig, err := bls.SignatureFromBytes(resp.Signature)
	if err != nil {
		return nil, fmt.Errorf("malformed signature: %w", err)
	}
	return sig, nil
}

// badSignatures returns the validators whose signature does not verify with
// their key: none if the aggregate verifies against the aggregate key.
func badSignatures(sigs map[int]*bls.Signature, vset validators.WarpSet, msgBytes []byte) []int {
	if len(sigs) == 0 {
		return nil
	}
	list := make([]*bls.Signature, 0, len(sigs))
	pks := make([]*bls.PublicKey, 0, len(sigs))
	for i, sig := range sigs {
		list = append(list, sig)
		pks = append(pks, vset.Validators[i].PublicKey)
	}
	aggSig, err1 := bls.AggregateSignatures(list)
	aggPK, err2 := bls.AggregatePublicKeys(pks)
	if err1 == nil && err2 == nil && bls.Verify(aggPK, aggSig, msgBytes) {
		return nil
	}
	var bad []int
	for i, sig := range sigs {
		if !bls.Verify(vset.Validators[i].PublicKey, sig, msgBytes) {
			bad = append(bad, i)
		}
	}
	return bad
}

// afterFailure decides whether a node that did not sign is asked again.
func (a *Aggregator) afterFailure(n *nodeState, err error, start time.Time) {
	appErr, _ := err.(*common.AppError)
	now := time.Now()
	switch {
	case appErr == errPeerNotReached:
		// Not connected (yet): the network is dialing; try again for a while.
		if now.Sub(start) >= a.cfg.ConnectWait {
			n.done = true
			a.log.Debug("warp: validator not connected", "node", n.nodeID)
			return
		}
	case appErr == errRequestTimedOut || (appErr != nil && appErr.Code == p2p.ErrThrottled.Code):
		n.timeouts++
		if n.timeouts >= a.cfg.MaxAttempts {
			n.done = true
			a.log.Debug("warp: validator did not answer", "node", n.nodeID, "error", err)
			return
		}
	default:
		// A refusal (AppError from the validator) or a bad signature.
		n.done = true
		a.log.Debug("warp: validator did not sign", "node", n.nodeID, "error", err)
		return
	}
	n.retries++
	n.retryAt = now.Add(retryDelay(n.retries))
}

func retryDelay(retry int) time.Duration {
	d := 100 * time.Millisecond << min(retry-1, 4)
	return min(d, time.Second)
}

// track makes the network stay connected to subnetID's validators.
func (a *Aggregator) track(subnetID ids.ID, vals []Validator) {
	a.subnetMu.Lock()
	_, known := a.subnets[subnetID]
	a.subnets[subnetID] = time.Now()
	var evict []ids.ID
	if !known && subnetID != constants.PrimaryNetworkID {
		for len(a.subnets) > maxTrackedSubnets+1 { // +1: the primary network never leaves
			oldest, oldestAt := ids.Empty, time.Time{}
			for s, at := range a.subnets {
				if s != constants.PrimaryNetworkID && s != subnetID && (oldestAt.IsZero() || at.Before(oldestAt)) {
					oldest, oldestAt = s, at
				}
			}
			delete(a.subnets, oldest)
			evict = append(evict, oldest)
		}
	}
	a.subnetMu.Unlock()
	if known {
		return
	}
	a.syncMu.Lock()
	defer a.syncMu.Unlock()
	for _, s := range evict {
		if err := syncManager(a.vdrs, s, nil); err != nil {
			a.log.Warn("warp: forget validators", "subnet", s, "error", err)
		}
	}
	if err := syncManager(a.vdrs, subnetID, vals); err != nil {
		a.log.Warn("warp: track validators", "subnet", subnetID, "error", err)
	}
	// Ask the peer lister for the new validators' IPs now rather than at
	// the next tick; gossip alone may take a few seconds.
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// keepWarm refreshes the tracked validator sets (and so the network's
// connections) from the index, and asks the PeerLister for IPs of validators
// we are not connected to.
func (a *Aggregator) keepWarm(ctx context.Context) {
	defer close(a.done)
	ticker := time.NewTicker(a.cfg.RefreshInterval)
	defer ticker.Stop()
	for {
		a.refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-a.kick:
		}
	}
}

func (a *Aggregator) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RefreshInterval)
	defer cancel()

	a.subnetMu.Lock()
	a.subnets[constants.PrimaryNetworkID] = time.Now()
	var subnets, idle []ids.ID
	for s, at := range a.subnets {
		if s != constants.PrimaryNetworkID && time.Since(at) > subnetIdleTime {
			delete(a.subnets, s)
			idle = append(idle, s)
			continue
		}
		subnets = append(subnets, s)
	}
	a.subnetMu.Unlock()

	height, err := a.cfg.ValidatorSets.ProposedHeight(ctx)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("warp: refresh validators: proposed height", "error", err)
		}
		return
	}
	a.syncMu.Lock()
	for _, s := range idle {
		if err := syncManager(a.vdrs, s, nil); err != nil {
			a.log.Warn("warp: forget validators", "subnet", s, "error", err)
		}
	}
	wanted := set.NewSet[ids.NodeID](0)
	for _, s := range subnets {
		vals, err := a.cfg.ValidatorSets.ValidatorSet(ctx, s, height)
		if err != nil {
			a.log.Warn("warp: refresh validators", "subnet", s, "height", height, "error", err)
			continue
		}
		if err := syncManager(a.vdrs, s, vals); err != nil {
			a.log.Warn("warp: refresh validators", "subnet", s, "error", err)
		}
		for _, v := range vals {
			wanted.Add(v.NodeID)
		}
	}
	a.syncMu.Unlock()

	if a.cfg.Peers == nil {
		return
	}
	peers, err := a.cfg.Peers.Peers(ctx)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("warp: list peers", "error", err)
		}
		return
	}
	connected := a.node.connected(wanted.List())
	for _, p := range peers {
		if wanted.Contains(p.NodeID) && !connected.Contains(p.NodeID) && p.Addr.IsValid() {
			a.node.net.ManuallyTrack(p.NodeID, p.Addr)
		}
	}
}
