package devnet

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/utils/formatting"
)

// The files of rpc/, one per node endpoint.
const (
	Info  = "ext_info.jsonl"      // /ext/info
	P     = "ext_bc_P.jsonl"      // /ext/bc/P
	X     = "ext_bc_X.jsonl"      // /ext/bc/X
	CRPC  = "ext_bc_C_rpc.jsonl"  // /ext/bc/C/rpc (eth_*, net_*, web3_*)
	CAvax = "ext_bc_C_avax.jsonl" // /ext/bc/C/avax (avax.*)
)

// RPCError is the error member of a JSON-RPC answer.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// Response is a recorded JSON-RPC response body.
type Response struct {
	// Result is the result member as recorded; nil when the body has none.
	Result json.RawMessage
	// Error is the error member; nil when the body has none.
	Error *RPCError
	// Raw is the whole body as recorded.
	Raw json.RawMessage
}

// UnmarshalJSON keeps the body as recorded next to its decoded members.
func (r *Response) UnmarshalJSON(b []byte) error {
	var body struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return err
	}
	r.Result, r.Error, r.Raw = body.Result, body.Error, append(json.RawMessage(nil), b...)
	return nil
}

// Exchange is one recorded JSON-RPC call and the node's answer.
type Exchange struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	// Response is the answer's body.
	Response Response `json:"response"`
	// Node is the ID of the answering node.
	Node       string `json:"node"`
	HTTPStatus int    `json:"httpStatus"`
}

// Calls are recorded exchanges, in the order the calls were made.
type Calls []Exchange

// LoadRPC reads rpc/<file> of the recording; file is one of Info, P, X, CRPC
// and CAvax.
func LoadRPC(t testing.TB, file string) Calls {
	t.Helper()
	switch file {
	case Info, P, X, CRPC, CAvax:
	default:
		t.Fatalf("devnet: unknown endpoint file %q (known: %s, %s, %s, %s, %s)", file, Info, P, X, CRPC, CAvax)
	}
	return readLines[Exchange](t, "rpc/"+file)
}

// LoadRPCIn reads rpc/<file> of the recording in directory dir (another
// bundled recording, such as testdata/devnet-d; any endpoint file, an L1's
// ext_bc_<blockchainID>_rpc.jsonl included).
func LoadRPCIn(t testing.TB, dir, file string) Calls {
	t.Helper()
	return readLinesAt[Exchange](t, filepath.Join(dir, "rpc", file))
}

// Match selects exchanges.
type Match func(Exchange) bool

// ParamsContain matches exchanges whose params, as recorded, contain s.
func ParamsContain(s string) Match {
	return func(x Exchange) bool { return strings.Contains(string(x.Params), s) }
}

// ParamsEqual matches exchanges whose params compact to params exactly,
// e.g. `["0x1",true]`.
func ParamsEqual(params string) Match {
	return func(x Exchange) bool {
		var buf bytes.Buffer
		return json.Compact(&buf, x.Params) == nil && buf.String() == params
	}
}

// AnsweredBy matches exchanges answered by the node with this ID.
func AnsweredBy(nodeID string) Match {
	return func(x Exchange) bool { return x.Node == nodeID }
}

// Method returns the exchanges of method that satisfy every match, in order.
func (c Calls) Method(method string, match ...Match) Calls {
	var out Calls
next:
	for _, x := range c {
		if x.Method != method {
			continue
		}
		for _, m := range match {
			if !m(x) {
				continue next
			}
		}
		out = append(out, x)
	}
	return out
}

// Find returns the first exchange of method that satisfies every match and
// was answered with a result; false if there is none.
func (c Calls) Find(method string, match ...Match) (Exchange, bool) {
	for _, x := range c.Method(method, match...) {
		if x.Response.Result != nil && x.Response.Error == nil {
			return x, true
		}
	}
	return Exchange{}, false
}

// Params decodes the exchange's params into v (numbers as json.Number).
func Params(t testing.TB, x Exchange, v any) {
	t.Helper()
	decode(t, x.Method+" params", x.Params, v)
}

// Result decodes the exchange's result into v (numbers as json.Number).
func Result(t testing.TB, x Exchange, v any) {
	t.Helper()
	decode(t, x.Method+" result", x.Response.Result, v)
}

// FindResult decodes the result of c.Find(method, match...) into v; false
// when there is no such answer.
func (c Calls) FindResult(t testing.TB, v any, method string, match ...Match) bool {
	t.Helper()
	x, ok := c.Find(method, match...)
	if ok {
		Result(t, x, v)
	}
	return ok
}

// HexBytes decodes avalanchego's "hex" encoding (0x, the bytes, a 4-byte
// checksum), verifying and dropping the checksum.
func HexBytes(t testing.TB, s string) []byte {
	t.Helper()
	b, err := formatting.Decode(formatting.Hex, s)
	if err != nil {
		t.Fatalf("devnet: decode %q: %v", s[:min(len(s), 24)], err)
	}
	return b
}

// EthCall is one recorded eth_call (all were made at the tip).
type EthCall struct {
	To, Data string // 0x-lowercase
	Result   string // 0x-hex; "" when the call reverted
	Reverted bool
}

// EthCalls returns every eth_call of calls (the /ext/bc/C/rpc answers).
func EthCalls(t testing.TB, calls Calls) []EthCall {
	t.Helper()
	var out []EthCall
	for _, x := range calls.Method("eth_call") {
		var ps []json.RawMessage
		var call struct{ To, Data string }
		if err := json.Unmarshal(x.Params, &ps); err != nil || len(ps) != 2 || json.Unmarshal(ps[0], &call) != nil {
			t.Fatalf("devnet: eth_call params %s", x.Params)
		}
		c := EthCall{To: strings.ToLower(call.To), Data: strings.ToLower(call.Data)}
		if x.Response.Error != nil {
			c.Reverted = true
		} else if err := json.Unmarshal(x.Response.Result, &c.Result); err != nil {
			t.Fatalf("devnet: eth_call result: %v", err)
		}
		out = append(out, c)
	}
	return out
}
