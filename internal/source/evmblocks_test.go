package source

import (
	"errors"
	"testing"

	"github.com/ava-labs/libevm/common"
)

func TestSplitBatch(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		n      int
		ok     bool
		rpcErr int // call with an *RPCError, -1: none
	}{
		{"in order", `[{"jsonrpc":"2.0","id":0,"result":{}},{"jsonrpc":"2.0","id":1,"result":[]}]`, 2, true, -1},
		{"any order", `[{"id":1,"result":null},{"result":"x","id":0}]`, 2, true, -1},
		{"call error", `[{"id":0,"result":1},{"id":1,"error":{"code":-32000,"message":"not found","data":{"a":1}}}]`, 2, true, 1},
		{"missing", `[{"id":0,"result":1}]`, 2, false, -1},
		{"repeated", `[{"id":0,"result":1},{"id":0,"result":1}]`, 2, false, -1},
		{"unknown id", `[{"id":0,"result":1},{"id":7,"result":1}]`, 2, false, -1},
		{"string id", `[{"id":"0","result":1}]`, 1, false, -1},
		{"negative id", `[{"id":-1,"result":1}]`, 1, false, -1},
		{"neither", `[{"id":0}]`, 1, false, -1},
		{"not array", `{"id":null,"error":{"code":-32600,"message":"too big"}}`, 1, false, -1},
		{"truncated", `[{"id":0,"result":{"a":`, 1, false, -1},
		{"invalid inside result", `[{"id":0,"result":{"a":01}}]`, 1, false, -1},
		{"trailing", `[{"id":0,"result":1}] x`, 1, false, -1},
		{"empty", ``, 1, false, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := splitBatch([]byte(tt.body), tt.n)
			if tt.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("%v is not ErrMalformed", err)
				}
				return
			}
			for i, r := range rs {
				if (r.err != nil) != (i == tt.rpcErr) {
					t.Fatalf("call %d: error %v", i, r.err)
				}
			}
			if tt.rpcErr >= 0 {
				if e := rs[tt.rpcErr].err; e.Code != -32000 || e.Message != "not found" || string(e.Data) != `{"a":1}` {
					t.Fatalf("rpc error %+v", e)
				}
			}
		})
	}
}

// FuzzSplitBatch: any answer is split or refused as malformed, never a panic,
// and every kept block passed its checks.
func FuzzSplitBatch(f *testing.F) {
	f.Add([]byte(`[{"id":0,"result":{"number":"0x1","hash":"0x` + hash64 + `","parentHash":"0x` + hash64 +
		`","timestamp":"0x5","transactions":[{"hash":"0x` + hash64 + `"}]}},{"id":1,"result":[{"transactionHash":"0x` + hash64 +
		`","blockHash":"0x` + hash64 + `","blockNumber":"0x1"}]}]`))
	f.Add([]byte(`[{"id":1,"error":{"code":1,"message":"m"}},{"id":0,"result":null}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		rs, err := splitBatch(body, 2)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%v is not ErrMalformed", err)
			}
			return
		}
		if rs[0].err != nil || rs[1].err != nil {
			return
		}
		b, err := parseRawBlock(1, rs[0].result, rs[1].result, nil, nil, new(EVMBlockFacts))
		if err == nil && (b.Height != 1 || b.TxCount < 0) {
			t.Fatalf("accepted %+v", b)
		}
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrInconsistent) {
			t.Fatalf("%v is neither malformed nor inconsistent", err)
		}
	})
}

const hash64 = "0000000000000000000000000000000000000000000000000000000000000001"

func TestCheckTraces(t *testing.T) {
	h1 := common.HexToHash("0x" + hash64)
	h2 := common.HexToHash("0x02")
	frame := `{"type":"CALL","from":"0x0000000000000000000000000000000000000001","to":"0x0000000000000000000000000000000000000002","value":"0x0"}`
	tests := []struct {
		name   string
		traces string
		txs    []common.Hash
		want   error // nil: accepted
	}{
		{"empty block", `[]`, nil, nil},
		{"in order", `[{"txHash":"` + h1.Hex() + `","result":` + frame + `},{"txHash":"` + h2.Hex() + `","result":` + frame + `}]`, []common.Hash{h1, h2}, nil},
		{"no txHash (older nodes)", `[{"result":` + frame + `}]`, []common.Hash{h1}, nil},
		{"wrong tx", `[{"txHash":"` + h2.Hex() + `","result":` + frame + `}]`, []common.Hash{h1}, ErrInconsistent},
		{"fewer traces", `[]`, []common.Hash{h1}, ErrInconsistent},
		{"more traces", `[{"result":` + frame + `}]`, nil, ErrInconsistent},
		{"null", `null`, []common.Hash{h1}, ErrInconsistent},
		{"trace error", `[{"txHash":"` + h1.Hex() + `","error":"execution timeout"}]`, []common.Hash{h1}, ErrMalformed},
		{"result not a frame", `[{"txHash":"` + h1.Hex() + `","result":"0x"}]`, []common.Hash{h1}, ErrMalformed},
		{"no result", `[{"txHash":"` + h1.Hex() + `"}]`, []common.Hash{h1}, ErrMalformed},
		{"not an array", `{}`, []common.Hash{h1}, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkTraces(7, []byte(tt.traces), tt.txs)
			if (err == nil) != (tt.want == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestIsMethodMissing(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&RPCError{Code: -32601, Message: "the method debug_traceBlockByNumber does not exist/is not available"}, true},
		{&RPCError{Code: -32000, Message: "genesis is not traceable"}, false},
		{errors.New("connection refused"), false},
	} {
		if got := IsMethodMissing(tt.err); got != tt.want {
			t.Errorf("IsMethodMissing(%v) = %v", tt.err, got)
		}
	}
}
