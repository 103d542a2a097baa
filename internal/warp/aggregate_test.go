package warp

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/staking"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/crypto/bls/signer/localsigner"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
)

// fiveWeights give a total of 150; 67% needs 101.
var fiveWeights = []uint64{10, 20, 30, 40, 50}

type cluster struct {
	vals    []*testValidator
	set     []Validator
	sets    *memValidatorSets
	chainID ids.ID
	subnet  ids.ID
	agg     *Aggregator
}

// startCluster starts one validator per opts (all serving a fresh chain of
// a fresh subnet), an aggregator bootstrapped with all of them, and waits
// for the connections.
func startCluster(t *testing.T, weights []uint64, opts []validatorOpts, agg testAggOpts) *cluster {
	t.Helper()
	c := &cluster{chainID: ids.GenerateTestID(), subnet: ids.GenerateTestID()}
	for i := range weights {
		var o validatorOpts
		if i < len(opts) {
			o = opts[i]
		}
		o.chains = []ids.ID{c.chainID}
		c.vals = append(c.vals, startValidator(t, o))
	}
	c.set = weighted(c.vals, weights)
	c.sets = newMemValidatorSets(10)
	c.sets.set(c.subnet, 1, c.set)
	c.sets.chains[c.chainID] = c.subnet
	agg.sets = c.sets
	agg.bootstrap = peersOf(c.vals)
	c.agg = startAggregator(t, agg)
	waitConnected(t, c.agg, nodeIDsOf(c.vals))
	return c
}

func (c *cluster) message(t *testing.T, text string) *warp.UnsignedMessage {
	t.Helper()
	m, err := warp.NewUnsignedMessage(testNetworkID, c.chainID, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func hexOf(m *warp.UnsignedMessage) string { return "0x" + hex.EncodeToString(m.Bytes()) }

func num(n int) json.RawMessage { return json.RawMessage(strings.TrimSpace(string(mustJSON(n)))) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestAggregateReachesQuorum(t *testing.T) {
	c := startCluster(t, fiveWeights, nil, testAggOpts{})
	msg := c.message(t, "quorum")
	signed, err := c.agg.Aggregate(context.Background(), Request{NetworkID: testNetworkID, Message: hexOf(msg)})
	if err != nil {
		t.Fatal(err)
	}
	got, weight := verifySigned(t, signed, c.set, DefaultQuorumPercentage)
	if got.UnsignedMessage.ID() != msg.ID() {
		t.Fatalf("signed another message: %s", got.UnsignedMessage.ID())
	}
	if weight < 101 || weight > 150 {
		t.Fatalf("signed weight %d, want 101..150", weight)
	}
	// Without the 0x prefix, with an explicit quorum: same rules.
	signed, err = c.agg.Aggregate(context.Background(), Request{
		Message:          hex.EncodeToString(c.message(t, "quorum 80").Bytes()),
		QuorumPercentage: num(80),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, weight := verifySigned(t, signed, c.set, 80); weight < 120 {
		t.Fatalf("signed weight %d below 80%% of 150", weight)
	}
}

func TestAggregateBuffer(t *testing.T) {
	t.Run("all sign: keeps asking up to quorum+buffer", func(t *testing.T) {
		c := startCluster(t, fiveWeights, nil, testAggOpts{})
		signed, err := c.agg.Aggregate(context.Background(), Request{
			Message:                hexOf(c.message(t, "buffer")),
			QuorumPercentage:       num(50),
			QuorumPercentageBuffer: num(50),
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, weight := verifySigned(t, signed, c.set, 100); weight != 150 {
			t.Fatalf("signed weight %d, want all 150", weight)
		}
	})
	t.Run("buffer not reachable: best result once everyone answered", func(t *testing.T) {
		c := startCluster(t, fiveWeights, []validatorOpts{4: {verifier: refuseAll}}, testAggOpts{})
		start := time.Now()
		signed, err := c.agg.Aggregate(context.Background(), Request{
			Message:                hexOf(c.message(t, "buffer2")),
			QuorumPercentage:       num(60),
			QuorumPercentageBuffer: num(40),
		})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("took %s although every validator answered at once", d)
		}
		msg, weight := verifySigned(t, signed, c.set, 60)
		if weight != 100 {
			t.Fatalf("signed weight %d, want 100 (all but the refusing validator)", weight)
		}
		if signerNodes(t, msg, c.set)[c.vals[4].node.id] {
			t.Fatal("refusing validator is marked as signer")
		}
		if n := c.vals[4].requests.Load(); n != 1 {
			t.Fatalf("refusing validator asked %d times, want 1 (a refusal is final)", n)
		}
	})
}

func TestAggregateNotEnoughWeight(t *testing.T) {
	c := startCluster(t, fiveWeights, []validatorOpts{4: {verifier: refuseAll}}, testAggOpts{})
	_, err := c.agg.Aggregate(context.Background(), Request{Message: hexOf(c.message(t, "short"))})
	qErr, ok := errAs[*QuorumError](err)
	if !ok {
		t.Fatalf("want *QuorumError, got %v", err)
	}
	if qErr.Signed != 100 || qErr.Needed != 101 || qErr.Total != 150 || qErr.QuorumPercentage != 67 || qErr.SubnetID != c.subnet {
		t.Fatalf("quorum error %+v", qErr)
	}
	for _, want := range []string{"100", "101", "150"} {
		if !strings.Contains(qErr.Error(), want) {
			t.Errorf("error %q does not say %s", qErr.Error(), want)
		}
	}
}

func TestAggregateTimeout(t *testing.T) {
	release := make(chan struct{})
	c := startCluster(t, fiveWeights, []validatorOpts{4: {verifier: stallUntil(release)}},
		testAggOpts{requestTimeout: 200 * time.Millisecond, maxAttempts: 2})
	t.Cleanup(func() { close(release) }) // runs before the validators close
	start := time.Now()
	signed, err := c.agg.Aggregate(context.Background(), Request{
		Message:                hexOf(c.message(t, "slow")),
		QuorumPercentage:       num(60),
		QuorumPercentageBuffer: num(40),
	})
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	msg, weight := verifySigned(t, signed, c.set, 60)
	if weight != 100 || signerNodes(t, msg, c.set)[c.vals[4].node.id] {
		t.Fatalf("signed weight %d; want 100 without the silent validator", weight)
	}
	// Two attempts of 200 ms each (plus a retry delay), not the 8 s deadline.
	if d < 400*time.Millisecond || d > 3*time.Second {
		t.Fatalf("took %s, want two request timeouts", d)
	}
	if n := c.vals[4].requests.Load(); n != 2 {
		t.Fatalf("silent validator asked %d times, want 2 (MaxAttempts)", n)
	}

	// When the silent validator is needed, the answer is a quorum error.
	_, err = c.agg.Aggregate(context.Background(), Request{Message: hexOf(c.message(t, "slow2"))})
	if qErr, ok := errAs[*QuorumError](err); !ok || qErr.Signed != 100 {
		t.Fatalf("want quorum error with 100 signed, got %v", err)
	}
}

func TestAggregateDropsWrongKey(t *testing.T) {
	other, err := localsigner.New()
	if err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, fiveWeights, []validatorOpts{4: {warpKey: other}}, testAggOpts{})
	signed, err := c.agg.Aggregate(context.Background(), Request{
		Message:                hexOf(c.message(t, "wrong key")),
		QuorumPercentage:       num(60),
		QuorumPercentageBuffer: num(40),
	})
	if err != nil {
		t.Fatal(err)
	}
	msg, weight := verifySigned(t, signed, c.set, 60)
	if weight != 100 || signerNodes(t, msg, c.set)[c.vals[4].node.id] {
		t.Fatalf("signed weight %d; the wrong-key signature must be dropped", weight)
	}
	if n := c.vals[4].requests.Load(); n != 1 {
		t.Fatalf("wrong-key validator asked %d times, want 1", n)
	}
	_, err = c.agg.Aggregate(context.Background(), Request{Message: hexOf(c.message(t, "wrong key 2"))})
	if qErr, ok := errAs[*QuorumError](err); !ok || qErr.Signed != 100 {
		t.Fatalf("want quorum error with 100 signed, got %v", err)
	}
}

func TestAggregateOfflineValidator(t *testing.T) {
	c := startCluster(t, fiveWeights[:4], nil, testAggOpts{connectWait: 300 * time.Millisecond})
	// A fifth validator of weight 50 that no process runs.
	k, err := localsigner.New()
	if err != nil {
		t.Fatal(err)
	}
	c.set = append(c.set, Validator{NodeID: ids.GenerateTestNodeID(), PublicKey: k.PublicKey(), Weight: 50})
	c.sets.set(c.subnet, 1, c.set)
	start := time.Now()
	_, err = c.agg.Aggregate(context.Background(), Request{Message: hexOf(c.message(t, "offline"))})
	if qErr, ok := errAs[*QuorumError](err); !ok || qErr.Signed != 100 || qErr.Total != 150 {
		t.Fatalf("want quorum error 100/150, got %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %s, want about ConnectWait", d)
	}
}

func TestAggregateCachesSignatures(t *testing.T) {
	c := startCluster(t, fiveWeights, nil, testAggOpts{})
	req := Request{Message: hexOf(c.message(t, "cache")), QuorumPercentage: num(100)}
	first, err := c.agg.Aggregate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	before := make([]int64, len(c.vals))
	for i, v := range c.vals {
		before[i] = v.requests.Load()
		if before[i] != 1 {
			t.Fatalf("validator %d asked %d times", i, before[i])
		}
	}
	second, err := c.agg.Aggregate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range c.vals {
		if n := v.requests.Load(); n != before[i] {
			t.Fatalf("validator %d asked again (%d requests): the cache was not used", i, n)
		}
	}
	if hex.EncodeToString(first) != hex.EncodeToString(second) {
		t.Fatal("repeated request gave another signed message")
	}
	verifySigned(t, second, c.set, 100)
}

func TestAggregatePChainHeight(t *testing.T) {
	c := startCluster(t, fiveWeights, nil, testAggOpts{})
	old := c.set[:3]     // weights 10, 20, 30 from height 1
	current := c.set[2:] // weights 30, 40, 50 from height 8
	c.sets.set(c.subnet, 1, old)
	c.sets.set(c.subnet, 8, current)

	for _, tc := range []struct {
		name   string
		height json.RawMessage
		set    []Validator
	}{
		{"proposed height", nil, current},
		{"explicit 0 is the proposed height", num(0), current},
		{"height 5", num(5), old},
		{"height 9", num(9), current},
	} {
		t.Run(tc.name, func(t *testing.T) {
			signed, err := c.agg.Aggregate(context.Background(), Request{
				Message:          hexOf(c.message(t, "height "+tc.name)),
				QuorumPercentage: num(100),
				PChainHeight:     tc.height,
			})
			if err != nil {
				t.Fatal(err)
			}
			verifySigned(t, signed, tc.set, 100)
		})
	}
}

func TestAggregateDiscoversValidatorsByGossip(t *testing.T) {
	// Four primary-network validators that know each other; the aggregator
	// is told about only the first and learns the others' signed IPs from
	// avalanchego's peer-list gossip.
	shared := validators.NewManager()
	var vals []*testValidator
	cChain := ids.GenerateTestID()
	for i := 0; i < 4; i++ {
		vals = append(vals, startValidator(t, validatorOpts{vdrs: shared, chains: []ids.ID{cChain}}))
	}
	set := weighted(vals, []uint64{100, 100, 100, 100})
	for _, v := range set {
		if err := shared.AddStaker(constants.PrimaryNetworkID, v.NodeID, v.PublicKey, ids.GenerateTestID(), v.Weight); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range vals {
		for _, o := range vals {
			if v != o {
				v.node.net.ManuallyTrack(o.node.id, o.addr)
			}
		}
	}
	sets := newMemValidatorSets(3)
	sets.set(constants.PrimaryNetworkID, 1, set)
	sets.chains[cChain] = constants.PrimaryNetworkID
	agg := startAggregator(t, testAggOpts{sets: sets, bootstrap: []Peer{vals[0].peer()}})
	waitConnected(t, agg, nodeIDsOf(vals))

	msg, err := warp.NewUnsignedMessage(testNetworkID, cChain, []byte("gossip"))
	if err != nil {
		t.Fatal(err)
	}
	signed, err := agg.Aggregate(context.Background(), Request{Message: hexOf(msg), QuorumPercentage: num(100)})
	if err != nil {
		t.Fatal(err)
	}
	verifySigned(t, signed, set, 100)
}

func TestAggregateRejectsBadRequests(t *testing.T) {
	c := startCluster(t, fiveWeights[:1], nil, testAggOpts{})
	good := hexOf(c.message(t, "ok"))
	otherNet, err := warp.NewUnsignedMessage(1, c.chainID, []byte("mainnet"))
	if err != nil {
		t.Fatal(err)
	}
	unknownChain, err := warp.NewUnsignedMessage(testNetworkID, ids.GenerateTestID(), []byte("where"))
	if err != nil {
		t.Fatal(err)
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"nothing", Request{}, "one of message or justification"},
		{"blank", Request{Message: "0x", Justification: " "}, "one of message or justification"},
		{"message not hex", Request{Message: "0xzz"}, "message is not valid hex"},
		{"justification not hex", Request{Message: good, Justification: "abc"}, "justification is not valid hex"},
		{"not a warp message", Request{Message: "0x0102"}, "not an unsigned Warp message"},
		{"message of another network", Request{Message: hexOf(otherNet)}, "network 1"},
		{"path of another network", Request{NetworkID: 1, Message: good}, "network 1 is not served"},
		{"unknown source chain", Request{Message: hexOf(unknownChain)}, "unknown source chain"},
		{"quorum above 100", Request{Message: good, QuorumPercentage: raw("101")}, "between 0 and 100"},
		{"quorum negative", Request{Message: good, QuorumPercentage: raw("-1")}, "between 0 and 100"},
		{"quorum fraction", Request{Message: good, QuorumPercentage: raw("67.5")}, "must be an integer"},
		{"quorum exponent", Request{Message: good, QuorumPercentage: raw("1e999999999")}, "must be an integer"},
		{"quorum string", Request{Message: good, QuorumPercentage: raw(`"67"`)}, "must be a number"},
		{"quorum bool", Request{Message: good, QuorumPercentage: raw("true")}, "must be a number"},
		{"buffer negative", Request{Message: good, QuorumPercentageBuffer: raw("-5")}, "between 0 and 100"},
		{"sum above 100", Request{Message: good, QuorumPercentage: raw("67"), QuorumPercentageBuffer: raw("34")}, "at most 100"},
		{"default quorum plus buffer above 100", Request{Message: good, QuorumPercentageBuffer: raw("34")}, "at most 100"},
		{"height fraction", Request{Message: good, PChainHeight: raw("1.5")}, "must be an integer"},
		{"height above tip", Request{Message: good, PChainHeight: raw("11")}, "above the indexed P-chain tip"},
		{"signing subnet garbage", Request{Message: good, SigningSubnetID: "not-an-id"}, "signingSubnetId"},
		{"signing subnet short hex", Request{Message: good, SigningSubnetID: "0xabcd"}, "signingSubnetId"},
		{"unknown signing subnet", Request{Message: good, SigningSubnetID: ids.GenerateTestID().String()}, "unknown subnet"},
		{"justification alone, meaningless", Request{Justification: "0x0102"}, "does not determine a message"},
		{"justification alone, unconverted subnet", Request{Justification: hex.EncodeToString(c.subnet[:])}, "not converted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.agg.Aggregate(context.Background(), tc.req)
			reqErr, ok := errAs[*RequestError](err)
			if !ok {
				t.Fatalf("want *RequestError, got %T %v", err, err)
			}
			if !strings.Contains(reqErr.Msg, tc.want) {
				t.Fatalf("error %q does not contain %q", reqErr.Msg, tc.want)
			}
		})
	}

	// The same subnet given as cb58 and as hex is accepted.
	for _, s := range []string{c.subnet.String(), hex.EncodeToString(c.subnet[:]), "0x" + hex.EncodeToString(c.subnet[:])} {
		if _, err := c.agg.Aggregate(context.Background(), Request{Message: good, SigningSubnetID: s}); err != nil {
			t.Fatalf("signingSubnetId %s: %v", s, err)
		}
	}
}

func TestDecodeRequest(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"not json", "{", "not a valid JSON object"},
		{"array", "[]", "not a valid JSON object"},
		{"message not a string", `{"message": 5}`, "field message must be a string"},
		{"trailing data", `{} {}`, "data after the JSON object"},
		{"too large", `{"message":"` + strings.Repeat("00", MaxRequestBodyBytes/2) + `"}`, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRequest(strings.NewReader(tc.body))
			reqErr, ok := errAs[*RequestError](err)
			if !ok || !strings.Contains(reqErr.Msg, tc.want) {
				t.Fatalf("want RequestError containing %q, got %v", tc.want, err)
			}
		})
	}
	req, err := DecodeRequest(strings.NewReader(`{"message":"0x01","justification":"02","signingSubnetId":"x","quorumPercentage":67,"quorumPercentageBuffer":null,"pChainHeight":12,"extra":1}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := parseRequest(Request{Message: "0x", Justification: req.Justification, QuorumPercentage: req.QuorumPercentage, QuorumPercentageBuffer: req.QuorumPercentageBuffer, PChainHeight: req.PChainHeight})
	if err != nil {
		t.Fatal(err)
	}
	if p.quorum != 67 || p.buffer != 0 || p.pChainHeight != 12 || hex.EncodeToString(p.justification) != "02" {
		t.Fatalf("parsed %+v", p)
	}
}

func TestAggregateReasksForBadCachedSignature(t *testing.T) {
	c := startCluster(t, fiveWeights, nil, testAggOpts{})
	msg := c.message(t, "poisoned")
	// A well-formed signature of validator 0 over another message.
	wrong, err := c.vals[0].blsKey.Sign([]byte("something else"))
	if err != nil {
		t.Fatal(err)
	}
	pk := string(bls.PublicKeyToUncompressedBytes(c.vals[0].blsKey.PublicKey()))
	c.agg.cache.Put(sigKey{msgID: msg.ID(), pk: pk}, wrong)

	signed, err := c.agg.Aggregate(context.Background(), Request{Message: hexOf(msg), QuorumPercentage: num(100)})
	if err != nil {
		t.Fatal(err)
	}
	verifySigned(t, signed, c.set, 100)
	if n := c.vals[0].requests.Load(); n != 1 {
		t.Fatalf("validator 0 asked %d times, want 1 after its cached signature failed", n)
	}
	if got, ok := c.agg.cache.Get(sigKey{msgID: msg.ID(), pk: pk}); !ok || got == wrong {
		t.Fatal("bad cached signature was not replaced")
	}
}

type staticPeers []Peer

func (p staticPeers) Peers(context.Context) ([]Peer, error) { return p, nil }

func TestAggregateFindsValidatorsThroughPeerLister(t *testing.T) {
	// No bootstrappers: the validators' IPs come from the peer lister (the
	// configured node's info.peers) once their subnet is asked for.
	chainID, subnetID := ids.GenerateTestID(), ids.GenerateTestID()
	var vals []*testValidator
	for i := 0; i < 3; i++ {
		vals = append(vals, startValidator(t, validatorOpts{chains: []ids.ID{chainID}}))
	}
	set := weighted(vals, []uint64{1, 1, 1})
	sets := newMemValidatorSets(1)
	sets.set(subnetID, 1, set)
	sets.chains[chainID] = subnetID
	agg := startAggregator(t, testAggOpts{sets: sets, peers: staticPeers(peersOf(vals)), connectWait: 5 * time.Second})
	msg, err := warp.NewUnsignedMessage(testNetworkID, chainID, []byte("lister"))
	if err != nil {
		t.Fatal(err)
	}
	signed, err := agg.Aggregate(context.Background(), Request{Message: hexOf(msg), QuorumPercentage: num(100)})
	if err != nil {
		t.Fatal(err)
	}
	verifySigned(t, signed, set, 100)
}

func TestAggregateReconnects(t *testing.T) {
	cert, err := staking.NewTLSCert()
	if err != nil {
		t.Fatal(err)
	}
	key, err := localsigner.New()
	if err != nil {
		t.Fatal(err)
	}
	chainID := ids.GenerateTestID()
	first := startValidator(t, validatorOpts{tlsCert: cert, blsKey: key, chains: []ids.ID{chainID}})
	c := &cluster{chainID: chainID, subnet: ids.GenerateTestID(), vals: []*testValidator{first}}
	c.set = weighted(c.vals, []uint64{10})
	c.sets = newMemValidatorSets(1)
	c.sets.set(c.subnet, 1, c.set)
	c.sets.chains[chainID] = c.subnet
	c.agg = startAggregator(t, testAggOpts{sets: c.sets, bootstrap: []Peer{first.peer()}, connectWait: 5 * time.Second})
	waitConnected(t, c.agg, []ids.NodeID{first.node.id})
	if _, err := c.agg.Aggregate(context.Background(), Request{Message: hexOf(c.message(t, "before"))}); err != nil {
		t.Fatal(err)
	}

	// The validator goes away and comes back with the same identity and
	// address; the network dials it again by itself.
	if err := first.node.close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.agg.node.connected([]ids.NodeID{first.node.id}).Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("still connected to a closed validator")
		}
		time.Sleep(10 * time.Millisecond)
	}
	second := startValidator(t, validatorOpts{tlsCert: cert, blsKey: key, addr: first.addr.String(), chains: []ids.ID{chainID}})
	if second.node.id != first.node.id {
		t.Fatal("restarted validator has another node id")
	}
	waitConnected(t, c.agg, []ids.NodeID{second.node.id})
	signed, err := c.agg.Aggregate(context.Background(), Request{Message: hexOf(c.message(t, "after"))})
	if err != nil {
		t.Fatal(err)
	}
	verifySigned(t, signed, c.set, 67)
}
