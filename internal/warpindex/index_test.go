package warpindex_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	avawarp "github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/message"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/payload"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
	"github.com/permafrost-dev/permafrost/internal/warp"
	"github.com/permafrost-dev/permafrost/internal/warpindex"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// forEachBackend runs body on the devnet-a index of every backend.
func forEachBackend(t *testing.T, body func(t *testing.T, x *warpindex.Index)) {
	for _, b := range storetest.Backends {
		t.Run(b, func(t *testing.T) { body(t, warpindex.New(testenv.Devnet(t, b).DB)) })
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustID(t testing.TB, s string) ids.ID {
	t.Helper()
	id, err := ids.FromString(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// recording is what the tests compare with: answers of the real node.
type recording struct {
	p        devnet.Calls
	workload []devnet.Tx[json.RawMessage]
	times    map[uint64]int64    // block timestamps (Banff blocks)
	txHeight map[ids.ID]uint64   // block of every tx in a recorded block
	created  map[ids.ID]uint64   // subnet -> height of its CreateSubnetTx
	txBytes  map[ids.ID][]byte   // platform.getTx answers
	typed    map[string][]string // workload tx type -> tx ids
}

func load(t *testing.T) *recording {
	t.Helper()
	r := &recording{
		p:        devnet.LoadRPC(t, devnet.P),
		workload: devnet.LoadWorkload[json.RawMessage](t),
		times:    map[uint64]int64{},
		txHeight: map[ids.ID]uint64{},
		created:  map[ids.ID]uint64{},
		txBytes:  map[ids.ID][]byte{},
		typed:    map[string][]string{},
	}
	for id, tx := range devnet.PTxs(t, r.p) {
		r.txBytes[id] = tx.Bytes()
	}
	for h, blk := range devnet.PBlocks(t, r.p) {
		if ts, ok := blk.(interface{ Timestamp() time.Time }); ok {
			r.times[h] = ts.Timestamp().Unix()
		}
		for _, tx := range blk.Txs() {
			r.txHeight[tx.ID()] = h
			if _, ok := tx.Unsigned.(*txs.CreateSubnetTx); ok {
				r.created[tx.ID()] = h
			}
		}
	}
	r.created[constants.PrimaryNetworkID] = 0
	for _, e := range r.workload {
		r.typed[e.Chain+":"+e.Type] = append(r.typed[e.Chain+":"+e.Type], e.TxID)
	}
	return r
}

func (r *recording) tip(t *testing.T) uint64 {
	var h struct {
		Height string `json:"height"`
	}
	if !r.p.FindResult(t, &h, "platform.getHeight") {
		t.Fatal("no platform.getHeight answer")
	}
	n, err := strconv.ParseUint(h.Height, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestValidatorSetsMatchRecording compares every recorded
// platform.getValidatorsAt answer (primary network, permissioned subnet A,
// L1 subnet B, heights 1..41 and "proposed") with the index's set.
func TestValidatorSetsMatchRecording(t *testing.T) {
	rec := load(t)
	calls := devnet.ValidatorsAt(t, rec.p)
	if len(calls) < 20 {
		t.Fatalf("only %d recorded getValidatorsAt answers", len(calls))
	}
	var proposed struct {
		Height string `json:"height"`
	}
	if !rec.p.FindResult(t, &proposed, "platform.getProposedHeight") {
		t.Fatal("no platform.getProposedHeight answer")
	}
	forEachBackend(t, func(t *testing.T, x *warpindex.Index) {
		ctx := ctxT(t)
		for _, c := range calls {
			height := c.Height
			if height == "proposed" {
				height = proposed.Height // the node's proposed height when it answered
			}
			h, err := strconv.ParseUint(height, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			created, ok := rec.created[c.SubnetID]
			if !ok {
				t.Fatalf("subnet %s of a recorded call was never created", c.SubnetID)
			}
			got, err := x.ValidatorSet(ctx, c.SubnetID, h)
			if h < created {
				// The node answers {} for a subnet that does not exist yet;
				// the index reports it as unknown (a 400 for the aggregator).
				if len(c.Set) != 0 || !errors.Is(err, warp.ErrNotFound) {
					t.Errorf("%s at %d (created at %d): got %v, %v; recorded %d validators", c.SubnetID, h, created, got, err, len(c.Set))
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s at %d: %v", c.SubnetID, h, err)
			}
			if len(got) != len(c.Set) {
				t.Errorf("%s at %d: %d validators, recorded %d", c.SubnetID, h, len(got), len(c.Set))
			}
			for _, v := range got {
				want, ok := c.Set[v.NodeID]
				switch {
				case !ok:
					t.Errorf("%s at %d: %s is not in the recorded set", c.SubnetID, h, v.NodeID)
				case v.Weight != want.Weight:
					t.Errorf("%s at %d: %s weight %d, recorded %d", c.SubnetID, h, v.NodeID, v.Weight, want.Weight)
				case (v.PublicKey == nil) != (want.PublicKey == nil) || (v.PublicKey != nil && !v.PublicKey.Equals(want.PublicKey)):
					t.Errorf("%s at %d: %s key differs from %s", c.SubnetID, h, v.NodeID, want.PKHex)
				}
			}
		}
	})
}

// TestInactiveL1Validator: between its DisableL1ValidatorTx and its removal
// the registered L1 validator is inactive; avalanchego then reports its
// weight under the empty node id without a key. The weight counts toward
// the Warp total, but the validator cannot sign.
func TestInactiveL1Validator(t *testing.T) {
	rec := load(t)
	subnetB := subnetOf(t, rec, "P:ConvertSubnetToL1Tx")
	disabled := rec.txHeight[mustID(t, rec.typed["P:DisableL1ValidatorTx"][0])]
	weights := rec.typed["P:SetL1ValidatorWeightTx"]
	removed := rec.txHeight[mustID(t, weights[len(weights)-1])]
	var setWeight struct {
		Weight uint64 `json:"weight"`
	}
	for _, e := range rec.workload {
		if e.TxID == weights[0] {
			if err := json.Unmarshal(e.Extra, &setWeight); err != nil {
				t.Fatal(err)
			}
		}
	}
	if disabled == 0 || removed <= disabled || setWeight.Weight == 0 {
		t.Fatalf("recording: disabled at %d, removed at %d, weight %d", disabled, removed, setWeight.Weight)
	}
	initial := devnet.ValidatorsAt(t, rec.p)
	var initialSet map[ids.NodeID]devnet.Validator
	for _, c := range initial {
		if c.SubnetID == subnetB && c.Height == "41" {
			initialSet = c.Set
		}
	}
	if len(initialSet) != 2 {
		t.Fatalf("recorded L1 set at 41 has %d validators", len(initialSet))
	}
	forEachBackend(t, func(t *testing.T, x *warpindex.Index) {
		ctx := ctxT(t)
		for h := disabled; h < removed; h++ {
			got, err := x.ValidatorSet(ctx, subnetB, h)
			if err != nil {
				t.Fatal(err)
			}
			var inactive uint64
			byNode := map[ids.NodeID]*validators.GetValidatorOutput{}
			for _, v := range got {
				if v.NodeID == ids.EmptyNodeID {
					if v.PublicKey != nil {
						t.Errorf("height %d: inactive entry has a key", h)
					}
					inactive += v.Weight
				} else if want, ok := initialSet[v.NodeID]; !ok || want.Weight != v.Weight || !want.PublicKey.Equals(v.PublicKey) {
					t.Errorf("height %d: unexpected active validator %s", h, v.NodeID)
				}
				byNode[v.NodeID] = &validators.GetValidatorOutput{NodeID: v.NodeID, PublicKey: v.PublicKey, Weight: v.Weight}
			}
			if inactive != setWeight.Weight {
				t.Errorf("height %d: inactive weight %d, want %d", h, inactive, setWeight.Weight)
			}
			// What a receiving chain verifies against.
			ws, err := validators.FlattenValidatorSet(byNode)
			if err != nil {
				t.Fatal(err)
			}
			if len(ws.Validators) != 2 || ws.TotalWeight != 2_000_000+setWeight.Weight {
				t.Errorf("height %d: warp set of %d signers, total %d", h, len(ws.Validators), ws.TotalWeight)
			}
		}
		got, err := x.ValidatorSet(ctx, subnetB, removed)
		if err != nil || len(got) != 2 {
			t.Errorf("after the removal: %v, %v", got, err)
		}
	})
}

func subnetOf(t *testing.T, rec *recording, kind string) ids.ID {
	t.Helper()
	for _, e := range rec.workload {
		if e.Chain+":"+e.Type == kind {
			var x struct {
				SubnetID string `json:"subnetID"`
			}
			if err := json.Unmarshal(e.Extra, &x); err != nil {
				t.Fatal(err)
			}
			return mustID(t, x.SubnetID)
		}
	}
	t.Fatalf("no %s in the workload", kind)
	return ids.Empty
}

func TestValidatorSetErrors(t *testing.T) {
	rec := load(t)
	tip := rec.tip(t)
	forEachBackend(t, func(t *testing.T, x *warpindex.Index) {
		ctx := ctxT(t)
		for _, tc := range []struct {
			name   string
			subnet ids.ID
			height uint64
			want   error
		}{
			{"above the tip", constants.PrimaryNetworkID, tip + 1, warp.ErrUnknownHeight},
			{"largest height", constants.PrimaryNetworkID, math.MaxUint64, warp.ErrUnknownHeight},
			{"int64 overflow", constants.PrimaryNetworkID, math.MaxInt64 + 1, warp.ErrUnknownHeight},
			{"unknown subnet", ids.GenerateTestID(), tip, warp.ErrNotFound},
			{"unknown subnet above the tip", ids.GenerateTestID(), tip + 1, warp.ErrUnknownHeight},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := x.ValidatorSet(ctx, tc.subnet, tc.height)
				if !errors.Is(err, tc.want) {
					t.Fatalf("got %v, %v; want %v", got, err, tc.want)
				}
			})
		}
		// The tip itself is known.
		if _, err := x.ValidatorSet(ctx, constants.PrimaryNetworkID, tip); err != nil {
			t.Fatal(err)
		}
	})
}

// TestProposedHeight: the last block at least 30 s older than the tip,
// from the recorded blocks' timestamps. (The node itself answered the tip,
// 41: it was asked minutes after block 41, and avalanchego measures the
// window with the wall clock.)
func TestProposedHeight(t *testing.T) {
	rec := load(t)
	tip := rec.tip(t)
	tipTime, ok := rec.times[tip]
	if !ok {
		t.Fatalf("no recorded block %d", tip)
	}
	want := tip
	for h := tip; h+64 >= tip && h > 0; h-- {
		if ts, ok := rec.times[h]; ok && ts <= tipTime-warpindex.RecentlyAcceptedWindow {
			want = h
			break
		}
	}
	if want == tip {
		t.Fatal("the recording has no block 30 s older than its tip")
	}
	forEachBackend(t, func(t *testing.T, x *warpindex.Index) {
		got, err := x.ProposedHeight(ctxT(t))
		if err != nil || got != want {
			t.Fatalf("got %d, %v; want %d", got, err, want)
		}
	})
}

func TestSubnetOfChain(t *testing.T) {
	rec := load(t)
	want := map[ids.ID]ids.ID{constants.PlatformChainID: constants.PrimaryNetworkID}
	var chains struct {
		Blockchains []struct {
			ID       string `json:"id"`
			SubnetID string `json:"subnetID"`
		} `json:"blockchains"`
	}
	if !rec.p.FindResult(t, &chains, "platform.getBlockchains") || len(chains.Blockchains) < 4 {
		t.Fatalf("recorded getBlockchains: %+v", chains)
	}
	for _, c := range chains.Blockchains {
		want[mustID(t, c.ID)] = mustID(t, c.SubnetID)
	}
	for _, l := range rec.p {
		if l.Method != "platform.validatedBy" {
			continue
		}
		var p struct{ BlockchainID string }
		var r struct{ SubnetID string }
		if json.Unmarshal(l.Params, &p) != nil || json.Unmarshal(l.Response.Result, &r) != nil {
			t.Fatal("bad validatedBy line")
		}
		if want[mustID(t, p.BlockchainID)] != mustID(t, r.SubnetID) {
			t.Fatalf("getBlockchains and validatedBy disagree on %s", p.BlockchainID)
		}
	}
	forEachBackend(t, func(t *testing.T, x *warpindex.Index) {
		ctx := ctxT(t)
		for chain, subnet := range want {
			got, err := x.SubnetOfChain(ctx, chain)
			if err != nil || got != subnet {
				t.Errorf("chain %s: got %s, %v; want %s", chain, got, err, subnet)
			}
		}
		if _, err := x.SubnetOfChain(ctx, ids.GenerateTestID()); !errors.Is(err, warp.ErrNotFound) {
			t.Errorf("unknown chain: %v", err)
		}
	})
}

func TestPChainTx(t *testing.T) {
	rec := load(t)
	if len(rec.txBytes) < 30 {
		t.Fatalf("only %d recorded P-chain txs", len(rec.txBytes))
	}
	var notFound []ids.ID
	for _, l := range rec.p {
		var p struct{ TxID string }
		if l.Method == "platform.getTx" && l.Response.Error != nil && json.Unmarshal(l.Params, &p) == nil {
			notFound = append(notFound, mustID(t, p.TxID))
		}
	}
	if len(notFound) == 0 {
		t.Fatal("the recording has no getTx 'not found' answer")
	}
	notP := append(rec.typed["X:BaseTx"], rec.typed["X:ExportTx"]...)
	notP = append(notP, rec.typed["C:ImportTx"]...) // atomic txs of the C-chain
	notP = append(notP, rec.typed["C:ExportTx"]...)
	if len(notP) < 3 {
		t.Fatalf("workload: %d X-chain and atomic txs", len(notP))
	}
	forEachBackend(t, func(t *testing.T, x *warpindex.Index) {
		ctx := ctxT(t)
		for id, b := range rec.txBytes {
			tx, err := x.PChainTx(ctx, id)
			if err != nil {
				t.Errorf("tx %s: %v", id, err)
				continue
			}
			if tx.ID() != id || hex.EncodeToString(tx.Bytes()) != hex.EncodeToString(b) {
				t.Errorf("tx %s: bytes differ from platform.getTx", id)
			}
		}
		for _, id := range notFound {
			if _, err := x.PChainTx(ctx, id); !errors.Is(err, warp.ErrNotFound) {
				t.Errorf("tx %s the node did not know: %v", id, err)
			}
		}
		for _, s := range notP {
			if _, err := x.PChainTx(ctx, mustID(t, s)); !errors.Is(err, warp.ErrNotPChainTx) {
				t.Errorf("tx %s: want ErrNotPChainTx, got %v", s, err)
			}
		}
	})
}

// TestValidationAndConversionTxs: the origin of every recorded validation,
// checked the way the P-chain defines validation ids.
func TestValidationAndConversionTxs(t *testing.T) {
	rec := load(t)
	convertID := mustID(t, rec.typed["P:ConvertSubnetToL1Tx"][0])
	registerID := mustID(t, rec.typed["P:RegisterL1ValidatorTx"][0])
	subnetB := subnetOf(t, rec, "P:ConvertSubnetToL1Tx")
	var subnetA ids.ID // the permissioned one
	for _, s := range rec.typed["P:CreateSubnetTx"] {
		if id := mustID(t, s); id != subnetB {
			subnetA = id
		}
	}

	// validation id -> origin, from the recorded txs themselves.
	want := map[ids.ID]ids.ID{}
	convert, err := txs.Parse(txs.Codec, rec.txBytes[convertID])
	if err != nil {
		t.Fatal(err)
	}
	cu := convert.Unsigned.(*txs.ConvertSubnetToL1Tx)
	for i := range cu.Validators {
		want[cu.Subnet.Append(uint32(i))] = convertID
	}
	register, err := txs.Parse(txs.Codec, rec.txBytes[registerID])
	if err != nil {
		t.Fatal(err)
	}
	signed, err := avawarp.ParseMessage(register.Unsigned.(*txs.RegisterL1ValidatorTx).Message)
	if err != nil {
		t.Fatal(err)
	}
	call, err := payload.ParseAddressedCall(signed.Payload)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := message.ParseRegisterL1Validator(call.Payload)
	if err != nil {
		t.Fatal(err)
	}
	want[reg.ValidationID()] = registerID
	// ...which are the ids the workload logged.
	for _, e := range rec.workload {
		var extra struct {
			ValidationID  string   `json:"validationID"`
			ValidationIDs []string `json:"validationIDs"`
		}
		if e.Type != "ConvertSubnetToL1Tx" && e.Type != "RegisterL1ValidatorTx" {
			continue
		}
		if err := json.Unmarshal(e.Extra, &extra); err != nil {
			t.Fatal(err)
		}
		for _, v := range append(extra.ValidationIDs, extra.ValidationID) {
			if v != "" && want[mustID(t, v)] != mustID(t, e.TxID) {
				t.Fatalf("workload validation %s of %s not derived", v, e.TxID)
			}
		}
	}
	if len(want) != 3 {
		t.Fatalf("%d validations", len(want))
	}

	forEachBackend(t, func(t *testing.T, x *warpindex.Index) {
		ctx := ctxT(t)
		for v, origin := range want {
			got, err := x.ValidationTx(ctx, v)
			if err != nil || got != origin {
				t.Errorf("validation %s: got %s, %v; want %s", v, got, err, origin)
			}
		}
		if _, err := x.ValidationTx(ctx, ids.GenerateTestID()); !errors.Is(err, warp.ErrNotFound) {
			t.Errorf("unknown validation: %v", err)
		}
		if got, err := x.ConversionTx(ctx, subnetB); err != nil || got != convertID {
			t.Errorf("conversion of %s: got %s, %v", subnetB, got, err)
		}
		for _, s := range []ids.ID{subnetA, constants.PrimaryNetworkID, ids.GenerateTestID()} {
			if _, err := x.ConversionTx(ctx, s); !errors.Is(err, warp.ErrNotFound) {
				t.Errorf("subnet %s was not converted: %v", s, err)
			}
		}
	})
}
