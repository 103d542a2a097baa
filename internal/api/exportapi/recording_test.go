package exportapi_test

import (
	"encoding/json"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/devnet"
)

// The expected EVM export rows, computed from the node's recorded answers
// (eth_getBlockByNumber with transactions, eth_getBlockReceipts) with a
// decoding of the transfer logs of its own, not from the index.

const (
	topicTransfer       = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
	topicTransferSingle = "0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62"
	topicTransferBatch  = "0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb"
)

type recBlock struct {
	Number, Hash, Timestamp string
	Transactions            []struct {
		Hash, From, Value, Input, TransactionIndex string
		To                                         *string
	}
}

type recReceipt struct {
	TransactionHash, GasUsed, EffectiveGasPrice, Status string
	ContractAddress                                     *string
	Logs                                                []struct {
		Address, LogIndex, Data string
		Topics                  []string
	}
}

type cRecording struct {
	blocks   map[int64]recBlock
	receipts map[int64][]recReceipt
}

func loadCRecording(t testing.TB) *cRecording {
	t.Helper()
	r := &cRecording{blocks: map[int64]recBlock{}, receipts: map[int64][]recReceipt{}}
	for _, x := range devnet.LoadRPC(t, devnet.CRPC) {
		if len(x.Response.Result) == 0 {
			continue // an error answer
		}
		var params []json.RawMessage
		if err := json.Unmarshal(x.Params, &params); err != nil {
			t.Fatal(err)
		}
		switch x.Method {
		case "eth_getBlockByNumber":
			if len(params) != 2 || string(params[1]) != "true" || string(x.Response.Result) == "null" {
				continue
			}
			var b recBlock
			if err := json.Unmarshal(x.Response.Result, &b); err != nil {
				t.Fatal(err)
			}
			r.blocks[hexInt(t, b.Number)] = b
		case "eth_getBlockReceipts":
			var n string
			if err := json.Unmarshal(params[0], &n); err != nil {
				t.Fatal(err)
			}
			var rs []recReceipt
			if err := json.Unmarshal(x.Response.Result, &rs); err != nil {
				t.Fatal(err)
			}
			r.receipts[hexInt(t, n)] = rs
		}
	}
	if len(r.blocks) < 30 {
		t.Fatalf("recording has %d full blocks", len(r.blocks))
	}
	return r
}

func hexBig(t testing.TB, s string) *big.Int {
	t.Helper()
	if s == "0x" {
		return new(big.Int)
	}
	v, ok := new(big.Int).SetString(strings.TrimPrefix(s, "0x"), 16)
	if !ok {
		t.Fatalf("not hex: %q", s)
	}
	return v
}

func hexInt(t testing.TB, s string) int64 { return hexBig(t, s).Int64() }

// expectedEVM returns the rows (by EVMHeader name) an export of addrs
// (lowercase) over blocks with timestamps in [lo, hi) must hold, in order.
// symbols gives token_symbol/token_decimals per token (metadata is
// enrichment, not in the recording).
func (r *cRecording) expectedEVM(t testing.TB, chainID string, addrs []string, lo, hi int64,
	symbols map[string][2]string) []map[string]string {
	t.Helper()
	in := map[string]bool{}
	for _, a := range addrs {
		in[a] = true
	}
	var nums []int64
	for n := range r.blocks {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	var out []map[string]string
	word := func(data string, i int) string {
		return hexBig(t, "0x"+data[64*i:64*i+64]).String()
	}
	for _, n := range nums {
		b := r.blocks[n]
		ts := hexInt(t, b.Timestamp)
		if ts < lo || ts >= hi {
			continue
		}
		receipts := r.receipts[n]
		if len(receipts) != len(b.Transactions) {
			t.Fatalf("block %d: %d txs, %d receipts", n, len(b.Transactions), len(receipts))
		}
		for i, tx := range b.Transactions {
			rc := receipts[i]
			if rc.TransactionHash != tx.Hash {
				t.Fatalf("block %d tx %d: receipt of %s", n, i, rc.TransactionHash)
			}
			base := map[string]string{
				"chain_id": chainID, "block_number": strconv.FormatInt(n, 10), "block_hash": b.Hash,
				"block_timestamp": strconv.FormatInt(ts, 10), "datetime_utc": time.Unix(ts, 0).UTC().Format(time.RFC3339),
				"tx_hash": tx.Hash, "tx_index": strconv.FormatInt(hexInt(t, tx.TransactionIndex), 10),
				"status":    map[string]string{"0x1": "success", "0x0": "failed"}[rc.Status],
				"method_id": "",
			}
			if len(tx.Input) >= 10 {
				base["method_id"] = strings.ToLower(tx.Input[:10])
			}
			from := strings.ToLower(tx.From)
			to, contract := "", ""
			if tx.To != nil {
				to = strings.ToLower(*tx.To)
			}
			if rc.ContractAddress != nil {
				contract = strings.ToLower(*rc.ContractAddress)
			}
			created := tx.To == nil && rc.Status == "0x1"
			if in[from] || in[to] || (created && in[contract]) {
				row := clone(base)
				gas, price := hexBig(t, rc.GasUsed), hexBig(t, rc.EffectiveGasPrice)
				row["row_type"], row["log_index"], row["batch_index"] = "NATIVE", "", ""
				row["from_address"], row["to_address"], row["value"] = from, to, hexBig(t, tx.Value).String()
				row["token_address"], row["token_symbol"], row["token_decimals"], row["token_id"] = "", "", "", ""
				row["fee_wei"] = new(big.Int).Mul(gas, price).String()
				row["gas_used"], row["gas_price_wei"], row["contract_address"] = gas.String(), price.String(), contract
				out = append(out, row)
			}
			for _, l := range rc.Logs {
				if len(l.Topics) == 0 {
					continue
				}
				data := strings.TrimPrefix(l.Data, "0x")
				addr := func(topic string) string { return "0x" + topic[26:] }
				type xfer struct{ typ, from, to, id, value string }
				var xs []xfer
				switch {
				case l.Topics[0] == topicTransfer && len(l.Topics) == 3:
					xs = append(xs, xfer{"ERC-20", addr(l.Topics[1]), addr(l.Topics[2]), "", word(data, 0)})
				case l.Topics[0] == topicTransfer && len(l.Topics) == 4:
					xs = append(xs, xfer{"ERC-721", addr(l.Topics[1]), addr(l.Topics[2]), hexBig(t, l.Topics[3]).String(), "1"})
				case l.Topics[0] == topicTransferSingle:
					xs = append(xs, xfer{"ERC-1155", addr(l.Topics[2]), addr(l.Topics[3]), word(data, 0), word(data, 1)})
				case l.Topics[0] == topicTransferBatch:
					ids := hexInt(t, "0x"+data[:64]) / 32
					vals := hexInt(t, "0x"+data[64:128]) / 32
					cnt := hexInt(t, "0x"+data[64*ids:64*ids+64])
					for k := int64(0); k < cnt; k++ {
						xs = append(xs, xfer{"ERC-1155", addr(l.Topics[2]), addr(l.Topics[3]),
							word(data, int(ids+1+k)), word(data, int(vals+1+k))})
					}
				}
				for k, x := range xs {
					if !in[x.from] && !in[x.to] {
						continue
					}
					row := clone(base)
					token := strings.ToLower(l.Address)
					row["row_type"], row["log_index"] = x.typ, strconv.FormatInt(hexInt(t, l.LogIndex), 10)
					row["batch_index"] = strconv.Itoa(k)
					row["from_address"], row["to_address"], row["value"] = x.from, x.to, x.value
					row["token_address"], row["token_id"] = token, x.id
					row["token_symbol"], row["token_decimals"] = symbols[token][0], symbols[token][1]
					row["fee_wei"], row["gas_used"], row["gas_price_wei"], row["contract_address"] = "", "", "", ""
					out = append(out, row)
				}
			}
		}
	}
	return out
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
