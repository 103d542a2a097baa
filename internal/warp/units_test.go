package warp

import (
	"context"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/proto/pb/platformvm"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/bls/signer/localsigner"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/message"

	"github.com/permafrost-dev/permafrost/internal/devnet"
)

func TestCanonicalSetMatchesAvalanchego(t *testing.T) {
	var vals []Validator
	shared, err := localsigner.New()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		k, err := localsigner.New()
		if err != nil {
			t.Fatal(err)
		}
		v := Validator{NodeID: ids.GenerateTestNodeID(), PublicKey: k.PublicKey(), Weight: uint64(10 * (i + 1))}
		switch i {
		case 4, 5: // two nodes sharing one key merge into one signer
			v.PublicKey = shared.PublicKey()
		case 3: // no key: counts toward the total only
			v.PublicKey = nil
		}
		vals = append(vals, v)
	}
	m := make(map[ids.NodeID]*validators.GetValidatorOutput)
	for _, v := range vals {
		m[v.NodeID] = &validators.GetValidatorOutput{NodeID: v.NodeID, PublicKey: v.PublicKey, Weight: v.Weight}
	}
	want, err := validators.FlattenValidatorSet(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := canonicalSet(vals)
	if err != nil {
		t.Fatal(err)
	}
	if got.TotalWeight != want.TotalWeight || len(got.Validators) != len(want.Validators) {
		t.Fatalf("total %d / %d signers, avalanchego: %d / %d", got.TotalWeight, len(got.Validators), want.TotalWeight, len(want.Validators))
	}
	for i := range want.Validators {
		g, w := got.Validators[i], want.Validators[i]
		gotIDs, wantIDs := map[ids.NodeID]bool{}, map[ids.NodeID]bool{}
		for _, id := range g.NodeIDs {
			gotIDs[id] = true
		}
		for _, id := range w.NodeIDs {
			wantIDs[id] = true
		}
		if string(g.PublicKeyBytes) != string(w.PublicKeyBytes) || g.Weight != w.Weight || !reflect.DeepEqual(gotIDs, wantIDs) {
			t.Fatalf("signer %d differs from avalanchego's", i)
		}
	}
	// Inactive L1 validators all appear under the empty node id.
	inactive := append(vals[:3:3], Validator{Weight: 7}, Validator{Weight: 8})
	s, err := canonicalSet(inactive)
	if err != nil || s.TotalWeight != 10+20+30+7+8 || len(s.Validators) != 3 {
		t.Fatalf("inactive weights: %+v %v", s, err)
	}
	if _, err := canonicalSet(append(vals[:1:1], vals[0])); err == nil {
		t.Fatal("duplicate node id accepted")
	}
}

func TestQuorumArithmeticMatchesWarpVerification(t *testing.T) {
	for _, total := range []uint64{1, 3, 7, 100, 150, 2_000_000, 1<<64 - 1} {
		for _, pct := range []uint64{1, 33, 50, 66, 67, 99, 100} {
			need := neededWeight(total, pct)
			if err := warp.VerifyWeight(need, total, pct, 100); err != nil {
				t.Fatalf("total %d, %d%%: needed %d fails warp: %v", total, pct, need, err)
			}
			if !meetsQuorum(need, total, pct) {
				t.Fatalf("total %d, %d%%: needed %d does not meet", total, pct, need)
			}
			if need > 0 {
				if warp.VerifyWeight(need-1, total, pct, 100) == nil || meetsQuorum(need-1, total, pct) {
					t.Fatalf("total %d, %d%%: %d is not the smallest", total, pct, need)
				}
			}
		}
	}
}

func TestSyncManager(t *testing.T) {
	m := validators.NewManager()
	subnet := ids.GenerateTestID()
	k1, _ := localsigner.New()
	k2, _ := localsigner.New()
	a, b := ids.GenerateTestNodeID(), ids.GenerateTestNodeID()
	steps := [][]Validator{
		{{NodeID: a, PublicKey: k1.PublicKey(), Weight: 5}, {NodeID: b, PublicKey: k2.PublicKey(), Weight: 7}},
		{{NodeID: a, PublicKey: k1.PublicKey(), Weight: 9}, {NodeID: b, PublicKey: k2.PublicKey(), Weight: 2}},
		{{NodeID: a, PublicKey: k2.PublicKey(), Weight: 9}, {NodeID: ids.EmptyNodeID, Weight: 3}},
		nil,
	}
	for i, vals := range steps {
		if err := syncManager(m, subnet, vals); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		got := m.GetMap(subnet)
		n := 0
		for _, v := range vals {
			if v.PublicKey == nil {
				continue
			}
			n++
			g, ok := got[v.NodeID]
			if !ok || g.Weight != v.Weight || !g.PublicKey.Equals(v.PublicKey) {
				t.Fatalf("step %d: manager has %+v for %s", i, g, v.NodeID)
			}
		}
		if len(got) != n {
			t.Fatalf("step %d: manager has %d validators, want %d", i, len(got), n)
		}
	}
}

// An initial L1 validator (from ConvertSubnetToL1Tx) is removed with a
// justification naming the conversion's subnet and index.
func TestRemovalJustificationOfInitialValidator(t *testing.T) {
	lines := devnet.LoadRPC(t, devnet.P)
	ptxs := devnet.PTxs(t, lines)
	convID := mustID(t, convertTx)
	u := ptxs[convID].Unsigned.(*txs.ConvertSubnetToL1Tx)
	l1 := newMemL1Txs()
	l1.txs = ptxs
	for i := range u.Validators {
		l1.validations[u.Subnet.Append(uint32(i))] = convID
	}
	a := &Aggregator{cfg: Config{NetworkID: testNetworkID, L1Txs: l1}}
	for i := range u.Validators {
		validationID := u.Subnet.Append(uint32(i))
		lm, err := a.removalMessage(context.Background(), validationID)
		if err != nil {
			t.Fatal(err)
		}
		if lm.subnetID != u.Subnet || lm.msg.SourceChainID != constants.PlatformChainID {
			t.Fatalf("message of subnet %s from %s", lm.subnetID, lm.msg.SourceChainID)
		}
		var j platformvm.L1ValidatorRegistrationJustification
		if err := proto.Unmarshal(lm.justification, &j); err != nil {
			t.Fatal(err)
		}
		idx := j.GetConvertSubnetToL1TxData()
		if idx == nil || string(idx.GetSubnetId()) != string(u.Subnet[:]) || idx.GetIndex() != uint32(i) {
			t.Fatalf("justification %v", &j)
		}
		// The P-chain rules accept it once the validator is gone.
		v := &pChainVerifier{state: pState{conversions: map[ids.ID]ids.ID{u.Subnet: ids.GenerateTestID()}}}
		if err := v.Verify(context.Background(), lm.msg, lm.justification); err != nil {
			t.Fatalf("P-chain rules refuse: %v", err)
		}
		p := pPayload(t, &warp.Message{UnsignedMessage: *lm.msg})
		if reg, ok := p.(*message.L1ValidatorRegistration); !ok || reg.Registered || reg.ValidationID != validationID {
			t.Fatalf("payload %+v", p)
		}
	}
}
