package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/vms/components/avax"

	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// servedMethods are the seven methods of the spec.
var servedMethods = map[string]bool{
	"platform.getBalance":           true,
	"platform.getBlock":             true,
	"platform.getBlockByHeight":     true,
	"platform.getBlockchains":       true,
	"platform.getBlockchainStatus":  true,
	"platform.getCurrentSupply":     true,
	"platform.getCurrentValidators": true,
}

// comparedCall reports whether a recorded call is one the differential test
// replays: the seven methods (answers and errors) and the recorded call of a
// method the node lacks.
func comparedCall(method string) bool {
	return servedMethods[method] || method == "platform.noSuchMethod"
}

// TestDifferential replays every recorded call of the seven methods (every
// parameter form the recording holds, error answers included) against the
// index of devnet-a and compares each answer with the recorded node's,
// member by member and byte for byte (after json.Compact, as recorded).
//
// With the recorded node as upstream, node-local facts come from it, so the
// answers must be identical. Without an upstream the only allowed
// differences are the node-local ones (see the package comment): uptime and
// connected are absent, and X and C are Syncing rather than Validating.
func TestDifferential(t *testing.T) {
	for _, backend := range storetest.Backends {
		for _, upstream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/upstream=%v", backend, upstream), func(t *testing.T) {
				e := setup(t, backend, setupOpts{upstream: upstream})
				counts := map[string]int{}
				errorsByMethod := map[string]int{}
				diffs, adjusted, reordered := 0, 0, 0
				for _, x := range pCalls(t) {
					if !comparedCall(x.Method) {
						continue
					}
					code, body := e.call(t, x.RecordedID(), x.Method, x.Params)
					want := x.Response
					if !upstream {
						if w := withoutNodeLocal(t, x.Method, want); !bytes.Equal(w, want) {
							want, adjusted = w, adjusted+1
						}
					}
					if x.Method == "platform.getBalance" {
						if w := e.sameCommitOrder(t, x.Params, want); !bytes.Equal(w, want) {
							want, reordered = w, reordered+1
						}
					}
					where := fmt.Sprintf("%s:%d %s %s", x.File, x.Line, x.Method, x.Params)
					if code != x.HTTPStatus {
						t.Errorf("%s: HTTP %d, want %d", where, code, x.HTTPStatus)
						diffs++
					}
					got := compact(t, body)
					if d := diffJSON("$", decodeNumbers(t, got), decodeNumbers(t, want)); len(d) > 0 {
						diffs += len(d)
						t.Errorf("%s:\n  %s", where, strings.Join(d, "\n  "))
					} else if !bytes.Equal(got, compact(t, want)) {
						diffs++
						t.Errorf("%s: same members, different bytes:\n got %s\nwant %s", where, trunc(got), trunc(want))
					}
					counts[x.Method]++
					if bytes.Contains(want, []byte(`"error":`)) {
						errorsByMethod[x.Method]++
					}
				}
				var lines []string
				total := 0
				for m, n := range counts {
					lines = append(lines, fmt.Sprintf("%-32s %3d calls (%d error answers)", m, n, errorsByMethod[m]))
					total += n
				}
				sort.Strings(lines)
				t.Logf("compared %d recorded calls, %d differences (node-local members dropped from %d answers; "+
					"utxoIDs of one commit reordered in %d answers):\n%s", total, diffs, adjusted, reordered, strings.Join(lines, "\n"))
				// Without upstream: the 5 primary-network validator lists and
				// the X and C statuses; with it, none.
				if wantAdjusted := map[bool]int{true: 0, false: 5}[upstream]; adjusted != wantAdjusted {
					t.Errorf("node-local adjustments in %d answers, want %d", adjusted, wantAdjusted)
				}
				for m := range servedMethods {
					if counts[m] == 0 {
						t.Errorf("no recorded call of %s compared", m)
					}
				}
				if total < 140 {
					t.Errorf("only %d calls compared", total)
				}
			})
		}
	}
}

// withoutNodeLocal turns a recorded answer into what Permafrost answers
// without an upstream node: no uptime/connected, and X/C Syncing.
func withoutNodeLocal(t *testing.T, method string, resp []byte) []byte {
	t.Helper()
	switch method {
	case "platform.getCurrentValidators":
		var r struct {
			JSONRPC string          `json:"jsonrpc"`
			Result  json.RawMessage `json:"result"`
			ID      json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(resp, &r); err != nil || r.Result == nil {
			return resp
		}
		// Drop the two members textually, keeping every other byte as
		// recorded (numbers included).
		out := string(resp)
		for _, field := range []string{`"uptime":"`, `"connected":`} {
			for {
				i := strings.Index(out, field)
				if i < 0 {
					break
				}
				j := i + len(field)
				if field == `"uptime":"` {
					j += strings.IndexByte(out[j:], '"') + 1
				} else if strings.HasPrefix(out[j:], "true") {
					j += 4
				} else {
					j += 5
				}
				if out[j] == ',' {
					j++
				} else if out[i-1] == ',' {
					i--
				}
				out = out[:i] + out[j:]
			}
		}
		return []byte(out)
	case "platform.getBlockchainStatus":
		return bytes.Replace(resp, []byte(`"status":"Validating"`), []byte(`"status":"Syncing"`), 1)
	}
	return resp
}

var utxoIDElem = regexp.MustCompile(`\{"txID":"([^"]+)","outputIndex":(\d+)\}`)

// sameCommitOrder checks that the recorded getBalance utxoIDs come in our
// order up to permutations among UTXOs that entered the node's address
// index in the same commit (the node writes a commit's UTXOs in Go map
// order, so that order is random), and returns the recorded answer with
// each such group in our order, every other byte as recorded.
func (e *env) sameCommitOrder(t *testing.T, params json.RawMessage, want []byte) []byte {
	t.Helper()
	var p struct {
		Addresses []string `json:"addresses"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		t.Fatal(err)
	}
	addrs, err := avax.ParseServiceAddresses(e.svc.addrs, p.Addresses)
	if err != nil {
		return want // an error answer
	}
	ctx := context.Background()
	tip, err := e.svc.tip(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := e.svc.utxosAt(ctx, addrs, tip.state)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		addr     int
		inserted uint64
	}
	pos := map[string]int{}
	keys := map[string]key{}
	for i, u := range ours {
		s := u.utxo.TxID.String() + ":" + fmt.Sprint(u.utxo.OutputIndex)
		pos[s], keys[s] = i, key{u.addr, u.inserted}
	}
	start := bytes.Index(want, []byte(`"utxoIDs":[`))
	if start < 0 {
		return want
	}
	start += len(`"utxoIDs":[`)
	end := start + bytes.IndexByte(want[start:], ']')
	elems := utxoIDElem.FindAllSubmatch(want[start:end], -1)
	var recorded, groups []string
	for _, m := range elems {
		s := string(m[1]) + ":" + string(m[2])
		if _, ok := pos[s]; !ok {
			return want // a set difference: the member diff shows it
		}
		recorded = append(recorded, string(m[0]))
		groups = append(groups, fmt.Sprint(keys[s]))
	}
	var ourGroups []string
	for _, u := range ours {
		ourGroups = append(ourGroups, fmt.Sprint(key{u.addr, u.inserted}))
	}
	if strings.Join(groups, " ") != strings.Join(ourGroups, " ") {
		t.Errorf("getBalance %v: recorded UTXO order by (address, commit) %v, ours %v", p.Addresses, groups, ourGroups)
		return want
	}
	sort.SliceStable(recorded, func(i, j int) bool {
		mi, mj := utxoIDElem.FindStringSubmatch(recorded[i]), utxoIDElem.FindStringSubmatch(recorded[j])
		return pos[mi[1]+":"+mi[2]] < pos[mj[1]+":"+mj[2]]
	})
	out := append([]byte{}, want[:start]...)
	out = append(out, strings.Join(recorded, ",")...)
	return append(out, want[end:]...)
}
