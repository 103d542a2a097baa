package warp

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/proto/pb/platformvm"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/message"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/payload"

	"github.com/permafrost-dev/permafrost/internal/devnet"
)

const (
	subnetB      = "2XYadBUQHDYHP687R1YnJhm2Ph77zKK8CtaMXF7jfr5uJ1Ewur" // the L1 of devnet-a
	convertTx    = "2HB19HSQuuU44g1yV1DEhabukMMz518kBUmhGqYLwpThKmmDE9"
	registerTx   = "2aFMyUwywqR2cMcLu3HWESyyf9WY3TkZD1ZaNhgUCBvxKYPhZ1"
	setWeightTx  = "2Kqi8RGk853gzabK4MuFYxfHckMtKX9Di8AukrGsQMNLV8rDgD" // weight 150000, nonce 0
	disableTx    = "R88F4Fr6sEMXffh6byDzHy6jKsNFqVFoNuBAReZD9MvEikk7n"
	removeTx     = "xzx56JNDTMYYNy9ETiGeB9RxKWqR6sqLTZQh9TFjEtgjERtBD" // weight 0, nonce 1
	createSubnet = "2XYadBUQHDYHP687R1YnJhm2Ph77zKK8CtaMXF7jfr5uJ1Ewur"
	l1v3Val      = "28fZp7THsjoq9WttkJw4fLWqy9STzxMRizzeeLP8jWX7dMRwCP"
)

// pState is the part of P-chain state the P-chain's ACP-118 verifier reads
// (vms/platformvm/network/warp.go), at one height of devnet-a.
type pState struct {
	conversions map[ids.ID]ids.ID // subnet -> conversion id
	l1          map[ids.ID]struct{ weight, minNonce uint64 }
	expiries    map[ids.ID]uint64 // validation -> expiry entry still in state
	timestamp   uint64
}

// pChainVerifier applies the P-chain's signing rules for its L1 messages
// (vms/platformvm/network/warp.go of avalanchego v1.14.2) to a pState.
type pChainVerifier struct {
	mu    sync.Mutex
	state pState
}

func (v *pChainVerifier) setState(s pState) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.state = s
}

func refuse(format string, args ...any) *common.AppError {
	return &common.AppError{Code: 1, Message: fmt.Sprintf(format, args...)}
}

func (v *pChainVerifier) Verify(_ context.Context, msg *warp.UnsignedMessage, justification []byte) *common.AppError {
	v.mu.Lock()
	defer v.mu.Unlock()
	call, err := payload.ParseAddressedCall(msg.Payload)
	if err != nil {
		return refuse("not an addressed call: %v", err)
	}
	if len(call.SourceAddress) != 0 {
		return refuse("source address should be empty")
	}
	p, err := message.Parse(call.Payload)
	if err != nil {
		return refuse("payload: %v", err)
	}
	switch p := p.(type) {
	case *message.SubnetToL1Conversion:
		subnetID, err := ids.ToID(justification)
		if err != nil {
			return refuse("justification: %v", err)
		}
		conv, ok := v.state.conversions[subnetID]
		if !ok {
			return refuse("subnet %s not converted", subnetID)
		}
		if p.ID != conv {
			return refuse("conversion id %s != %s", p.ID, conv)
		}
		return nil
	case *message.L1ValidatorRegistration:
		_, exists := v.state.l1[p.ValidationID]
		if p.Registered {
			if !exists {
				return refuse("validation %s does not exist", p.ValidationID)
			}
			return nil
		}
		var j platformvm.L1ValidatorRegistrationJustification
		if err := proto.Unmarshal(justification, &j); err != nil {
			return refuse("justification: %v", err)
		}
		switch pre := j.GetPreimage().(type) {
		case *platformvm.L1ValidatorRegistrationJustification_ConvertSubnetToL1TxData:
			subnetID, err := ids.ToID(pre.ConvertSubnetToL1TxData.GetSubnetId())
			if err != nil {
				return refuse("subnet id: %v", err)
			}
			if subnetID.Append(pre.ConvertSubnetToL1TxData.GetIndex()) != p.ValidationID {
				return refuse("mismatched validation id")
			}
			if _, ok := v.state.conversions[subnetID]; !ok {
				return refuse("subnet not converted")
			}
			if exists {
				return refuse("validation exists")
			}
			return nil
		case *platformvm.L1ValidatorRegistrationJustification_RegisterL1ValidatorMessage:
			reg, err := message.ParseRegisterL1Validator(pre.RegisterL1ValidatorMessage)
			if err != nil {
				return refuse("register message: %v", err)
			}
			if reg.ValidationID() != p.ValidationID {
				return refuse("mismatched validation id")
			}
			if exists {
				return refuse("validation exists")
			}
			if reg.Expiry <= v.state.timestamp {
				return nil
			}
			if exp, ok := v.state.expiries[p.ValidationID]; !ok || exp != reg.Expiry {
				return refuse("validation can still be registered")
			}
			return nil
		default:
			return refuse("invalid justification type %T", j.Preimage)
		}
	case *message.L1ValidatorWeight:
		if p.Nonce == math.MaxUint64 {
			return refuse("impossible nonce")
		}
		l1, ok := v.state.l1[p.ValidationID]
		switch {
		case !ok:
			return refuse("validation %s does not exist", p.ValidationID)
		case p.Nonce+1 != l1.minNonce:
			return refuse("wrong nonce")
		case p.Weight != l1.weight:
			return refuse("wrong weight")
		}
		return nil
	default:
		return refuse("unsupported payload %T", p)
	}
}

func mustID(t testing.TB, s string) ids.ID {
	t.Helper()
	id, err := ids.FromString(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// pPayload opens a signed P-chain message and returns its payload.
func pPayload(t testing.TB, msg *warp.Message) message.Payload {
	t.Helper()
	if msg.SourceChainID != constants.PlatformChainID || msg.NetworkID != testNetworkID {
		t.Fatalf("message from chain %s of network %d", msg.SourceChainID, msg.NetworkID)
	}
	call, err := payload.ParseAddressedCall(msg.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if len(call.SourceAddress) != 0 {
		t.Fatalf("source address %x", call.SourceAddress)
	}
	p, err := message.Parse(call.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAggregateForL1Txs builds the P-chain messages of devnet-a's real L1
// txs and has them signed by in-process validators holding the recorded L1
// validators' BLS keys, whose verifier applies the P-chain's rules to the
// recorded P-chain state.
func TestAggregateForL1Txs(t *testing.T) {
	lines := devnet.LoadRPC(t, devnet.P)
	ptxs := devnet.PTxs(t, lines)
	wl := devnet.LoadWorkload[json.RawMessage](t)
	keys := devnet.BLSSigners(t)
	b := mustID(t, subnetB)

	// The tx index of the test: every recorded P-chain tx.
	l1 := newMemL1Txs()
	l1.txs = ptxs
	for txID, tx := range ptxs {
		switch u := tx.Unsigned.(type) {
		case *txs.ConvertSubnetToL1Tx:
			l1.conversions[u.Subnet] = txID
			for i := range u.Validators {
				l1.validations[u.Subnet.Append(uint32(i))] = txID
			}
		case *txs.RegisterL1ValidatorTx:
			reg, err := registerMessageOf(u.Message)
			if err != nil {
				t.Fatal(err)
			}
			l1.validations[reg.ValidationID()] = txID
		}
	}
	// The derived validation ids are the ones the workload recorded.
	for _, e := range wl {
		var extra struct {
			ValidationID  string   `json:"validationID"`
			ValidationIDs []string `json:"validationIDs"`
			Expiry        uint64   `json:"expiry"`
		}
		if e.Chain == "X" {
			l1.otherChain[mustID(t, e.TxID)] = true
		}
		if e.Type != "ConvertSubnetToL1Tx" && e.Type != "RegisterL1ValidatorTx" {
			continue
		}
		if err := json.Unmarshal(e.Extra, &extra); err != nil {
			t.Fatal(err)
		}
		for _, v := range append(extra.ValidationIDs, extra.ValidationID) {
			if v == "" {
				continue
			}
			if got := l1.validations[mustID(t, v)]; got != mustID(t, e.TxID) {
				t.Fatalf("validation %s: index says tx %s, workload says %s", v, got, e.TxID)
			}
		}
	}

	// Recorded P-chain state at the tip (height 41).
	var subnet struct {
		ConversionID string `json:"conversionID"`
	}
	if !lines.FindResult(t, &subnet, "platform.getSubnet", devnet.ParamsContain(subnetB)) {
		t.Fatalf("no platform.getSubnet answer with %s", subnetB)
	}
	var l1v3Register struct {
		Expiry uint64 `json:"expiry"`
	}
	for _, e := range wl {
		if e.TxID == registerTx {
			if err := json.Unmarshal(e.Extra, &l1v3Register); err != nil {
				t.Fatal(err)
			}
		}
	}
	var ts struct {
		Timestamp string `json:"timestamp"`
	}
	if !lines.FindResult(t, &ts, "platform.getTimestamp") {
		t.Fatal("no platform.getTimestamp answer")
	}
	tipState := pState{
		conversions: map[ids.ID]ids.ID{b: mustID(t, subnet.ConversionID)},
		l1:          map[ids.ID]struct{ weight, minNonce uint64 }{},
		expiries:    map[ids.ID]uint64{mustID(t, l1v3Val): l1v3Register.Expiry},
		timestamp:   1795348479, // 2026-11-22T11:54:39Z
	}
	if ts.Timestamp != "2026-11-22T11:54:39Z" {
		t.Fatalf("recorded timestamp %s", ts.Timestamp)
	}
	for _, v := range []string{"cQPayD7Pbk9gbfDn3qK1eAQU424dhTPyWAQpUKu8vLpETYgNA", "2SGw9bBiEb4U3X9mU9fjtBkpAViDhoAv3hkQ7HExTozkZ1mQaV", l1v3Val} {
		var r struct {
			Weight   string `json:"weight"`
			MinNonce string `json:"minNonce"`
		}
		found := false
		for _, l := range lines {
			if l.Method == "platform.getL1Validator" && strings.Contains(string(l.Params), v) && l.Response.Result != nil {
				if err := json.Unmarshal(l.Response.Result, &r); err != nil {
					t.Fatal(err)
				}
				found = true
			}
		}
		if !found {
			continue // removed (the node answered "not found")
		}
		var w, n uint64
		fmt.Sscan(r.Weight, &w)
		fmt.Sscan(r.MinNonce, &n)
		tipState.l1[mustID(t, v)] = struct{ weight, minNonce uint64 }{w, n}
	}
	if len(tipState.l1) != 2 {
		t.Fatalf("tip has %d L1 validators, want the 2 initial ones", len(tipState.l1))
	}

	// In-process validators holding the recorded L1 validators' BLS keys.
	verifier := &pChainVerifier{}
	byPK := make(map[string]*testValidator)
	var started []*testValidator
	for _, rv := range devnet.ValidatorsOf(t, lines, subnetB, 21) { // l1v1, l1v2, l1v3
		key, ok := keys[rv.PKHex]
		if !ok {
			t.Fatalf("no secret key for L1 validator %s", rv.NodeID)
		}
		v := startValidator(t, validatorOpts{blsKey: key, verifier: verifier})
		byPK[rv.PKHex] = v
		started = append(started, v)
	}
	// The validator sets of subnet B as recorded, with node ids replaced by
	// those of the in-process peers (node ids come from TLS certificates the
	// recording does not hold; the canonical order only depends on keys).
	sets := newMemValidatorSets(41)
	sets.set(constants.PrimaryNetworkID, 0, nil)
	inProc := func(h uint64) []Validator {
		var out []Validator
		for _, rv := range devnet.ValidatorsOf(t, lines, subnetB, h) {
			out = append(out, Validator{NodeID: byPK[rv.PKHex].node.id, PublicKey: rv.PublicKey, Weight: rv.Weight})
		}
		return out
	}
	recorded := func(h uint64) []Validator {
		var out []Validator
		for _, rv := range devnet.ValidatorsOf(t, lines, subnetB, h) {
			out = append(out, Validator{NodeID: rv.NodeID, PublicKey: rv.PublicKey, Weight: rv.Weight})
		}
		return out
	}
	sets.set(b, 19, inProc(19))
	sets.set(b, 21, inProc(21))
	sets.set(b, 28, inProc(41)) // l1v3 removed at height 28

	agg := startAggregator(t, testAggOpts{sets: sets, l1: l1, bootstrap: peersOf(started)})
	waitConnected(t, agg, nodeIDsOf(started))
	at := func(height uint64, s pState) {
		sets.mu.Lock()
		sets.proposed = height
		sets.mu.Unlock()
		verifier.setState(s)
	}
	ctx := context.Background()

	var conversionMsg []byte
	t.Run("ConvertSubnetToL1Tx", func(t *testing.T) {
		at(41, tipState)
		signed, err := agg.AggregateForTx(ctx, testNetworkID, convertTx)
		if err != nil {
			t.Fatal(err)
		}
		msg, weight := verifySigned(t, signed, recorded(41), 67)
		conv, ok := pPayload(t, msg).(*message.SubnetToL1Conversion)
		if !ok || conv.ID.String() != subnet.ConversionID {
			t.Fatalf("payload %T %v, want the recorded conversion id %s", pPayload(t, msg), conv, subnet.ConversionID)
		}
		if weight < 1340000 {
			t.Fatalf("signed weight %d", weight)
		}
		conversionMsg = msg.UnsignedMessage.Bytes()
	})

	var removalMsg []byte
	for _, txID := range []string{disableTx, removeTx} {
		t.Run("removal by "+txID, func(t *testing.T) {
			at(41, tipState)
			signed, err := agg.AggregateForTx(ctx, testNetworkID, txID)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := verifySigned(t, signed, recorded(41), 67)
			reg, ok := pPayload(t, msg).(*message.L1ValidatorRegistration)
			if !ok || reg.Registered || reg.ValidationID.String() != l1v3Val {
				t.Fatalf("payload %+v, want L1ValidatorRegistration(%s, false)", pPayload(t, msg), l1v3Val)
			}
			if removalMsg != nil && !bytes.Equal(removalMsg, msg.UnsignedMessage.Bytes()) {
				t.Fatal("disable and removal give different messages")
			}
			removalMsg = msg.UnsignedMessage.Bytes()
		})
	}

	t.Run("RegisterL1ValidatorTx after the validator left", func(t *testing.T) {
		at(41, tipState)
		_, err := agg.AggregateForTx(ctx, testNetworkID, registerTx)
		qErr, ok := errAs[*QuorumError](err)
		if !ok || qErr.Signed != 0 || qErr.Total != 2000000 || qErr.Needed != 1340000 || qErr.SubnetID != b {
			t.Fatalf("want quorum error 0 of 1340000/2000000, got %v", err)
		}
	})

	t.Run("RegisterL1ValidatorTx at height 21", func(t *testing.T) {
		s := tipState
		s.l1 = map[ids.ID]struct{ weight, minNonce uint64 }{mustID(t, l1v3Val): {100000, 0}}
		for k, v := range tipState.l1 {
			s.l1[k] = v
		}
		at(21, s)
		signed, err := agg.AggregateForTx(ctx, testNetworkID, registerTx)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := verifySigned(t, signed, recorded(21), 67)
		reg, ok := pPayload(t, msg).(*message.L1ValidatorRegistration)
		if !ok || !reg.Registered || reg.ValidationID.String() != l1v3Val {
			t.Fatalf("payload %+v, want L1ValidatorRegistration(%s, true)", pPayload(t, msg), l1v3Val)
		}
	})

	t.Run("SetL1ValidatorWeightTx at height 23", func(t *testing.T) {
		s := tipState
		s.l1 = map[ids.ID]struct{ weight, minNonce uint64 }{mustID(t, l1v3Val): {150000, 1}}
		at(23, s)
		signed, err := agg.AggregateForTx(ctx, testNetworkID, setWeightTx)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := verifySigned(t, signed, recorded(21), 67)
		w, ok := pPayload(t, msg).(*message.L1ValidatorWeight)
		if !ok || w.ValidationID.String() != l1v3Val || w.Nonce != 0 || w.Weight != 150000 {
			t.Fatalf("payload %+v, want L1ValidatorWeight(%s, 0, 150000)", pPayload(t, msg), l1v3Val)
		}
	})

	t.Run("justification alone", func(t *testing.T) {
		at(41, tipState)
		signed, err := agg.Aggregate(ctx, Request{Justification: hex.EncodeToString(b[:])})
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := verifySigned(t, signed, recorded(41), 67)
		if !bytes.Equal(msg.UnsignedMessage.Bytes(), conversionMsg) {
			t.Fatal("justification-only request signed another message than the conversion tx")
		}
		// An L1ValidatorRegistrationJustification names a removal.
		reg, err := message.ParseRegisterL1Validator(mustRegisterPayload(t, ptxs[mustID(t, registerTx)]))
		if err != nil {
			t.Fatal(err)
		}
		j, err := proto.Marshal(&platformvm.L1ValidatorRegistrationJustification{
			Preimage: &platformvm.L1ValidatorRegistrationJustification_RegisterL1ValidatorMessage{RegisterL1ValidatorMessage: reg.Bytes()},
		})
		if err != nil {
			t.Fatal(err)
		}
		signed, err = agg.Aggregate(ctx, Request{Justification: "0x" + hex.EncodeToString(j)})
		if err != nil {
			t.Fatal(err)
		}
		msg, _ = verifySigned(t, signed, recorded(41), 67)
		if !bytes.Equal(msg.UnsignedMessage.Bytes(), removalMsg) {
			t.Fatal("registration justification signed another message than the removal")
		}
	})

	t.Run("P-chain message defaults to the L1's validators", func(t *testing.T) {
		at(41, tipState)
		signed, err := agg.Aggregate(ctx, Request{
			Message:       "0x" + hex.EncodeToString(conversionMsg),
			Justification: "0x" + hex.EncodeToString(b[:]),
		})
		if err != nil {
			t.Fatal(err)
		}
		verifySigned(t, signed, recorded(41), 67)
	})

	for _, tc := range []struct {
		name, tx string
		check    func(error) bool
		want     string
	}{
		{"CreateSubnetTx is not an L1 tx", createSubnet, isRequestError, "CreateSubnetTx"},
		{"X-chain tx", firstXTx(t, wl), isRequestError, "not a platform-chain transaction"},
		{"unknown tx", ids.GenerateTestID().String(), func(err error) bool { return errors.Is(err, ErrNotFound) }, "not found"},
		{"malformed hash", "0x1234", isRequestError, "txHash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agg.AggregateForTx(ctx, testNetworkID, tc.tx)
			if !tc.check(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	t.Run("other network", func(t *testing.T) {
		if _, err := agg.AggregateForTx(ctx, 1, convertTx); !isRequestError(err) {
			t.Fatalf("want RequestError, got %v", err)
		}
	})
}

func isRequestError(err error) bool {
	_, ok := errAs[*RequestError](err)
	return ok
}

func firstXTx(t testing.TB, wl []devnet.Tx[json.RawMessage]) string {
	for _, e := range wl {
		if e.Chain == "X" {
			return e.TxID
		}
	}
	t.Fatal("no X-chain tx in the workload")
	return ""
}

func mustRegisterPayload(t testing.TB, tx *txs.Tx) []byte {
	t.Helper()
	u, ok := tx.Unsigned.(*txs.RegisterL1ValidatorTx)
	if !ok {
		t.Fatalf("tx is a %T", tx.Unsigned)
	}
	reg, err := registerMessageOf(u.Message)
	if err != nil {
		t.Fatal(err)
	}
	return reg.Bytes()
}
