package warp

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/network/p2p/acp118"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/crypto/bls/signer/localsigner"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
)

const testNetworkID = 88888 // devnet-a's network id

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testValidator is an in-process avalanchego peer on 127.0.0.1: its own
// staking certificate and BLS key, avalanchego's network stack (TLS,
// handshake, gossip) and avalanchego's ACP-118 handler.
type testValidator struct {
	node   *p2pNode
	addr   netip.AddrPort
	blsKey bls.Signer // the key the P-chain knows; it also signs the IP
	// requests counts the ACP-118 requests that reached the verifier.
	requests atomic.Int64
}

type validatorOpts struct {
	blsKey bls.Signer // nil: a new key
	// warpKey signs Warp messages; nil: blsKey. A different key models a
	// validator that signs with a key the P-chain does not know.
	warpKey  bls.Signer
	verifier acp118.Verifier // nil: sign everything
	chains   []ids.ID        // chains served; nil: the P-chain
	// vdrs is the validator's own view of the validator set (for gossip);
	// nil: empty, the validator only answers.
	vdrs validators.Manager
	// tlsCert and addr restart a validator with the same identity and
	// address; nil / "": a new certificate on a free port.
	tlsCert *tls.Certificate
	addr    string
}

func (v *testValidator) peer() Peer { return Peer{NodeID: v.node.id, Addr: v.addr} }

func startValidator(t testing.TB, o validatorOpts) *testValidator {
	t.Helper()
	if o.blsKey == nil {
		k, err := localsigner.New()
		if err != nil {
			t.Fatal(err)
		}
		o.blsKey = k
	}
	if o.warpKey == nil {
		o.warpKey = o.blsKey
	}
	if o.verifier == nil {
		o.verifier = verifierFunc(func(context.Context, *warp.UnsignedMessage, []byte) *common.AppError { return nil })
	}
	if o.chains == nil {
		o.chains = []ids.ID{ids.Empty}
	}
	if o.addr == "" {
		o.addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		t.Fatal(err)
	}
	node, err := newP2PNode(nodeConfig{
		networkID:       testNetworkID,
		tlsCert:         o.tlsCert,
		blsKey:          o.blsKey,
		listener:        ln,
		vdrs:            o.vdrs,
		allowPrivateIPs: true,
		requestTimeout:  time.Second,
		log:             quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	v := &testValidator{node: node, addr: netip.MustParseAddrPort(ln.Addr().String()), blsKey: o.blsKey}
	counting := verifierFunc(func(ctx context.Context, m *warp.UnsignedMessage, j []byte) *common.AppError {
		v.requests.Add(1)
		return o.verifier.Verify(ctx, m, j)
	})
	for _, chainID := range o.chains {
		c, err := node.chain(chainID)
		if err != nil {
			t.Fatal(err)
		}
		handler := acp118.NewHandler(counting, warp.NewSigner(o.warpKey, testNetworkID, chainID))
		if err := c.p2p.AddHandler(acp118.HandlerID, handler); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = node.close() })
	return v
}

type verifierFunc func(ctx context.Context, msg *warp.UnsignedMessage, justification []byte) *common.AppError

func (f verifierFunc) Verify(ctx context.Context, msg *warp.UnsignedMessage, justification []byte) *common.AppError {
	return f(ctx, msg, justification)
}

var refuseAll = verifierFunc(func(context.Context, *warp.UnsignedMessage, []byte) *common.AppError {
	return &common.AppError{Code: 42, Message: "refusing to sign"}
})

// stallUntil makes a verifier that never answers before release closes.
func stallUntil(release <-chan struct{}) verifierFunc {
	return func(context.Context, *warp.UnsignedMessage, []byte) *common.AppError {
		<-release
		return &common.AppError{Code: 43, Message: "too late"}
	}
}

// memValidatorSets is P-chain validator-set test data held in memory: per
// subnet, the sets from given heights on.
type memValidatorSets struct {
	mu       sync.Mutex
	proposed uint64
	tip      uint64
	sets     map[ids.ID]map[uint64][]Validator
	chains   map[ids.ID]ids.ID // chain -> subnet
}

func newMemValidatorSets(proposed uint64) *memValidatorSets {
	return &memValidatorSets{
		proposed: proposed,
		tip:      proposed,
		sets:     make(map[ids.ID]map[uint64][]Validator),
		chains:   make(map[ids.ID]ids.ID),
	}
}

func (m *memValidatorSets) set(subnetID ids.ID, fromHeight uint64, vals []Validator) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sets[subnetID] == nil {
		m.sets[subnetID] = make(map[uint64][]Validator)
	}
	m.sets[subnetID][fromHeight] = vals
}

func (m *memValidatorSets) ProposedHeight(context.Context) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proposed, nil
}

func (m *memValidatorSets) ValidatorSet(_ context.Context, subnetID ids.ID, h uint64) ([]Validator, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h > m.tip {
		return nil, ErrUnknownHeight
	}
	byHeight, ok := m.sets[subnetID]
	if !ok {
		return nil, ErrNotFound
	}
	heights := make([]uint64, 0, len(byHeight))
	for from := range byHeight {
		heights = append(heights, from)
	}
	sort.Slice(heights, func(i, j int) bool { return heights[i] > heights[j] })
	for _, from := range heights {
		if from <= h {
			return append([]Validator(nil), byHeight[from]...), nil
		}
	}
	return nil, ErrNotFound
}

func (m *memValidatorSets) SubnetOfChain(_ context.Context, chainID ids.ID) (ids.ID, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.chains[chainID]
	if !ok {
		return ids.Empty, ErrNotFound
	}
	return s, nil
}

// memL1Txs is P-chain tx test data held in memory.
type memL1Txs struct {
	txs         map[ids.ID]*txs.Tx
	otherChain  map[ids.ID]bool // known txs of the X-chain
	validations map[ids.ID]ids.ID
	conversions map[ids.ID]ids.ID
}

func newMemL1Txs() *memL1Txs {
	return &memL1Txs{
		txs:         make(map[ids.ID]*txs.Tx),
		otherChain:  make(map[ids.ID]bool),
		validations: make(map[ids.ID]ids.ID),
		conversions: make(map[ids.ID]ids.ID),
	}
}

func (m *memL1Txs) PChainTx(_ context.Context, txID ids.ID) (*txs.Tx, error) {
	if tx, ok := m.txs[txID]; ok {
		return tx, nil
	}
	if m.otherChain[txID] {
		return nil, ErrNotPChainTx
	}
	return nil, ErrNotFound
}

func (m *memL1Txs) ValidationTx(_ context.Context, validationID ids.ID) (ids.ID, error) {
	if id, ok := m.validations[validationID]; ok {
		return id, nil
	}
	return ids.Empty, ErrNotFound
}

func (m *memL1Txs) ConversionTx(_ context.Context, subnetID ids.ID) (ids.ID, error) {
	if id, ok := m.conversions[subnetID]; ok {
		return id, nil
	}
	return ids.Empty, ErrNotFound
}

type testAggOpts struct {
	sets           *memValidatorSets
	l1             *memL1Txs
	bootstrap      []Peer
	peers          PeerLister
	requestTimeout time.Duration
	connectWait    time.Duration
	maxAttempts    int
}

func startAggregator(t testing.TB, o testAggOpts) *Aggregator {
	t.Helper()
	if o.l1 == nil {
		o.l1 = newMemL1Txs()
	}
	allow := true
	a, err := New(Config{
		NetworkID:          testNetworkID,
		ValidatorSets:      o.sets,
		L1Txs:              o.l1,
		Bootstrappers:      o.bootstrap,
		Peers:              o.peers,
		AllowPrivateIPs:    &allow,
		RequestTimeout:     o.requestTimeout,
		AggregationTimeout: 8 * time.Second,
		ConnectWait:        o.connectWait,
		MaxAttempts:        o.maxAttempts,
		Logger:             quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return a
}

// waitConnected waits until the aggregator finished the handshake with all
// of nodeIDs.
func waitConnected(t testing.TB, a *Aggregator, nodeIDs []ids.NodeID) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := a.node.connected(nodeIDs)
		if got.Len() == len(nodeIDs) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("connected to %d of %d validators after 10s", got.Len(), len(nodeIDs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// weighted builds a validator set naming the in-process validators.
func weighted(vs []*testValidator, weights []uint64) []Validator {
	out := make([]Validator, len(vs))
	for i, v := range vs {
		out[i] = Validator{NodeID: v.node.id, PublicKey: v.blsKey.PublicKey(), Weight: weights[i]}
	}
	return out
}

func nodeIDsOf(vs []*testValidator) []ids.NodeID {
	out := make([]ids.NodeID, len(vs))
	for i, v := range vs {
		out[i] = v.node.id
	}
	return out
}

func peersOf(vs []*testValidator) []Peer {
	out := make([]Peer, len(vs))
	for i, v := range vs {
		out[i] = v.peer()
	}
	return out
}

// verifySigned checks a signed message the way a receiving chain does, with
// avalanchego's warp verification against the canonical set that
// avalanchego's validators.FlattenValidatorSet builds from vals, and returns
// the signed weight.
func verifySigned(t testing.TB, signedBytes []byte, vals []Validator, quorum uint64) (*warp.Message, uint64) {
	t.Helper()
	msg, err := warp.ParseMessage(signedBytes)
	if err != nil {
		t.Fatalf("signed message does not parse: %v", err)
	}
	m := make(map[ids.NodeID]*validators.GetValidatorOutput, len(vals))
	for _, v := range vals {
		m[v.NodeID] = &validators.GetValidatorOutput{NodeID: v.NodeID, PublicKey: v.PublicKey, Weight: v.Weight}
	}
	set, err := validators.FlattenValidatorSet(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := msg.Signature.Verify(&msg.UnsignedMessage, testNetworkID, set, quorum, 100); err != nil {
		t.Fatalf("signature does not verify: %v", err)
	}
	bitSig, ok := msg.Signature.(*warp.BitSetSignature)
	if !ok {
		t.Fatalf("signature is a %T", msg.Signature)
	}
	signers, err := warp.FilterValidators(bitsOf(bitSig), set.Validators)
	if err != nil {
		t.Fatal(err)
	}
	w, err := warp.SumWeight(signers)
	if err != nil {
		t.Fatal(err)
	}
	return msg, w
}

func errAs[E error](err error) (E, bool) {
	var e E
	ok := errors.As(err, &e)
	return e, ok
}

func bitsOf(sig *warp.BitSetSignature) set.Bits { return set.BitsFromBytes(sig.Signers) }

// signerNodes returns the node ids whose validator's bit is set.
func signerNodes(t testing.TB, msg *warp.Message, vals []Validator) map[ids.NodeID]bool {
	t.Helper()
	vset, err := canonicalSet(vals)
	if err != nil {
		t.Fatal(err)
	}
	bits := bitsOf(msg.Signature.(*warp.BitSetSignature))
	out := make(map[ids.NodeID]bool)
	for i, v := range vset.Validators {
		if bits.Contains(i) {
			for _, id := range v.NodeIDs {
				out[id] = true
			}
		}
	}
	return out
}
