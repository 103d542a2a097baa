package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/ava-labs/avalanchego/api"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/formatting"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/vms/platformvm"

	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// TestRealClient points avalanchego's own Go client for this API
// (platformvm.NewClient, which posts to /ext/P) at Permafrost and calls all
// seven methods with every argument the recording holds. Values must equal
// the recorded node's: the same client pointed at the replay node of the
// recording where the client's request matches a recorded one, else the
// recorded answer decoded into the client's own types.
func TestRealClient(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			e := setup(t, backend, setupOpts{upstream: true})
			ctx := context.Background()
			ours := platformvm.NewClient(e.url)
			node := platformvm.NewClient(e.te.NodeURL) // the recording, served by the replay node
			n := map[string]int{}

			for _, x := range pCalls(t) {
				switch x.Method {
				case "platform.getBalance":
					var p platformvm.GetBalanceRequest
					mustUnmarshal(t, x.Params, &p)
					addrs := make([]ids.ShortID, 0, len(p.Addresses))
					for _, a := range p.Addresses {
						_, _, b, err := address.Parse(a)
						if err != nil {
							addrs = nil
							break
						}
						id, err := ids.ToShortID(b)
						if err != nil {
							t.Fatal(err)
						}
						addrs = append(addrs, id)
					}
					if addrs == nil {
						continue // the malformed-address call: the client cannot send it
					}
					// The client sends cb58 short IDs, not recorded: compare
					// with the recorded answer in the client's type.
					got, err := ours.GetBalance(ctx, addrs)
					if err != nil {
						t.Fatalf("GetBalance %v: %v", p.Addresses, err)
					}
					var want platformvm.GetBalanceResponse
					mustResult(t, x.Response, &want)
					sortUTXOIDs(got)
					sortUTXOIDs(&want)
					if !reflect.DeepEqual(got, &want) {
						t.Errorf("GetBalance %v = %+v, want %+v", p.Addresses, got, &want)
					}
					n["getBalance"]++

				case "platform.getBlock":
					var p api.GetBlockArgs
					if json.Unmarshal(x.Params, &p) != nil || p.Encoding != formatting.Hex || hasError(x.Response) {
						continue
					}
					got, err := ours.GetBlock(ctx, p.BlockID)
					if err != nil {
						t.Fatalf("GetBlock %s: %v", p.BlockID, err)
					}
					if want := recordedBlock(t, x.Response); !bytes.Equal(got, want) {
						t.Errorf("GetBlock %s: bytes differ", p.BlockID)
					}
					n["getBlock"]++

				case "platform.getBlockByHeight":
					var p api.GetBlockByHeightArgs
					if unmarshalParams(x.Params, &p) != nil || p.Encoding != formatting.Hex || hasError(x.Response) {
						continue
					}
					// The client asks for hexnc, which the recording lacks.
					got, err := ours.GetBlockByHeight(ctx, uint64(p.Height))
					if err != nil {
						t.Fatalf("GetBlockByHeight %d: %v", p.Height, err)
					}
					if want := recordedBlock(t, x.Response); !bytes.Equal(got, want) {
						t.Errorf("GetBlockByHeight %d: bytes differ", p.Height)
					}
					n["getBlockByHeight"]++

				case "platform.getBlockchains":
					got, err := ours.GetBlockchains(ctx)
					if err != nil {
						t.Fatal(err)
					}
					want, err := node.GetBlockchains(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, want) || len(got) != 4 {
						t.Errorf("GetBlockchains = %+v, want %+v", got, want)
					}
					n["getBlockchains"]++

				case "platform.getBlockchainStatus":
					var p platformvm.GetBlockchainStatusArgs
					mustUnmarshal(t, x.Params, &p)
					got, gerr := ours.GetBlockchainStatus(ctx, p.BlockchainID)
					want, werr := node.GetBlockchainStatus(ctx, p.BlockchainID)
					if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) || werr != nil {
						t.Errorf("GetBlockchainStatus %s = %s (%v), want %s (%v)", p.BlockchainID, got, gerr, want, werr)
					}
					n["getBlockchainStatus"]++

				case "platform.getCurrentSupply":
					var p platformvm.GetCurrentSupplyArgs
					mustUnmarshal(t, x.Params, &p)
					gs, gh, gerr := ours.GetCurrentSupply(ctx, p.SubnetID)
					ws, wh, werr := node.GetCurrentSupply(ctx, p.SubnetID)
					if gs != ws || gh != wh || fmt.Sprint(gerr) != fmt.Sprint(werr) {
						t.Errorf("GetCurrentSupply %s = %d@%d (%v), want %d@%d (%v)", p.SubnetID, gs, gh, gerr, ws, wh, werr)
					}
					n["getCurrentSupply"]++

				case "platform.getCurrentValidators":
					var p platformvm.GetCurrentValidatorsArgs
					mustUnmarshal(t, x.Params, &p)
					got, err := ours.GetCurrentValidators(ctx, p.SubnetID, p.NodeIDs)
					if err != nil {
						t.Fatalf("GetCurrentValidators %s: %v", x.Params, err)
					}
					want, err := node.GetCurrentValidators(ctx, p.SubnetID, p.NodeIDs)
					if err != nil {
						t.Fatalf("recorded GetCurrentValidators %s: %v", x.Params, err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("GetCurrentValidators %s =\n%+v, want\n%+v", x.Params, got, want)
					}
					n["getCurrentValidators"]++
				}
			}
			t.Logf("client calls compared: %v", n)
			for _, m := range []string{"getBalance", "getBlock", "getBlockByHeight", "getBlockchains",
				"getBlockchainStatus", "getCurrentSupply", "getCurrentValidators"} {
				if n[m] == 0 {
					t.Errorf("no %s call compared", m)
				}
			}
		})
	}
}

func mustUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := unmarshalParams(b, v); err != nil {
		t.Fatalf("params %s: %v", b, err)
	}
}

// unmarshalParams decodes params as gorilla does (an object, or an array
// holding it).
func unmarshalParams(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err == nil {
		return nil
	}
	arr := [1]any{v}
	return json.Unmarshal(b, &arr)
}

func hasError(resp []byte) bool {
	var r struct {
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal(resp, &r) == nil && r.Error != nil
}

func mustResult(t *testing.T, resp []byte, v any) {
	t.Helper()
	var r struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(resp, &r); err != nil || r.Result == nil {
		t.Fatalf("recorded answer %s: %v", resp, err)
	}
	if err := json.Unmarshal(r.Result, v); err != nil {
		t.Fatal(err)
	}
}

func recordedBlock(t *testing.T, resp []byte) []byte {
	t.Helper()
	var r api.FormattedBlock
	mustResult(t, resp, &r)
	b, err := formatting.Decode(r.Encoding, r.Block)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sortUTXOIDs orders utxoIDs by ID: the node's order within one commit is
// random (TestDifferential checks the order across commits).
func sortUTXOIDs(r *platformvm.GetBalanceResponse) {
	sort.Slice(r.UTXOIDs, func(i, j int) bool {
		a, b := r.UTXOIDs[i].InputID(), r.UTXOIDs[j].InputID()
		return bytes.Compare(a[:], b[:]) < 0
	})
}
