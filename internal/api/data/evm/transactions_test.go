package evm_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
)

type nativeTx struct {
	BlockNumber    string      `json:"blockNumber"`
	BlockTimestamp json.Number `json:"blockTimestamp"`
	BlockHash      string      `json:"blockHash"`
	ChainID        string      `json:"chainId"`
	BlockIndex     json.Number `json:"blockIndex"`
	TxHash         string      `json:"txHash"`
	TxStatus       string      `json:"txStatus"`
	TxType         json.Number `json:"txType"`
	GasLimit       string      `json:"gasLimit"`
	GasUsed        string      `json:"gasUsed"`
	GasPrice       string      `json:"gasPrice"`
	Nonce          string      `json:"nonce"`
	From           addrInfo    `json:"from"`
	To             addrInfo    `json:"to"`
	Method         struct {
		CallType   string `json:"callType"`
		MethodHash string `json:"methodHash"`
		MethodName string `json:"methodName"`
	} `json:"method"`
	Value string `json:"value"`
}

type nativeTxList struct {
	NextPageToken string     `json:"nextPageToken"`
	Transactions  []nativeTx `json:"transactions"`
}

func (x nativeTx) key() string {
	return fmt.Sprintf("%s@%s/%s %s ts=%s chain=%s status=%s type=%s gas=%s/%s price=%s nonce=%s %s->%s %s %s value=%s",
		x.TxHash, x.BlockNumber, x.BlockIndex, x.BlockHash, x.BlockTimestamp, x.ChainID, x.TxStatus, x.TxType, x.GasLimit,
		x.GasUsed, x.GasPrice, x.Nonce, x.From.Address, x.To.Address, x.Method.CallType, x.Method.MethodHash, x.Value)
}

// recordedTxs builds the expected NativeTransaction of every recorded EVM tx
// from eth_getTransactionByHash, eth_getTransactionReceipt, the block
// timestamps and eth_getCode (a call reaches an address with code).
func recordedTxs(t *testing.T, e *env) (txs []nativeTx, involved map[string][]string) {
	code := map[string]string{}
	e.rec.each("eth_getCode", func(ps []json.RawMessage, res json.RawMessage) {
		var a, c string
		_ = json.Unmarshal(ps[0], &a)
		_ = json.Unmarshal(res, &c)
		code[strings.ToLower(a)] = c
	})
	type receipt struct {
		TransactionHash, Status, GasUsed, EffectiveGasPrice string
		ContractAddress                                     *string
	}
	rcpts := map[string]receipt{}
	e.rec.each("eth_getTransactionReceipt", func(_ []json.RawMessage, res json.RawMessage) {
		var r receipt
		if json.Unmarshal(res, &r) == nil && r.TransactionHash != "" {
			rcpts[r.TransactionHash] = r
		}
	})
	times := blockTimes(t, e)
	involved = map[string][]string{}
	e.rec.each("eth_getTransactionByHash", func(_ []json.RawMessage, res json.RawMessage) {
		var tx struct {
			Hash, BlockNumber, BlockHash, TransactionIndex, From, Gas, Nonce, Type, Value, Input string
			To                                                                                   *string
		}
		if err := json.Unmarshal(res, &tx); err != nil || tx.Hash == "" {
			t.Fatalf("recorded tx: %s", res)
		}
		r, ok := rcpts[tx.Hash]
		if !ok {
			t.Fatalf("no recorded receipt of %s", tx.Hash)
		}
		x := nativeTx{BlockNumber: hexDec(t, tx.BlockNumber), BlockHash: tx.BlockHash, ChainID: "88888",
			BlockIndex: json.Number(hexDec(t, tx.TransactionIndex)), TxHash: tx.Hash, TxStatus: hexDec(t, r.Status),
			TxType: json.Number(hexDec(t, tx.Type)), GasLimit: hexDec(t, tx.Gas), GasUsed: hexDec(t, r.GasUsed),
			GasPrice: hexDec(t, r.EffectiveGasPrice), Nonce: hexDec(t, tx.Nonce), Value: hexDec(t, tx.Value)}
		x.BlockTimestamp = json.Number(times[x.BlockNumber])
		x.From.Address = strings.ToLower(tx.From)

		who := []string{x.From.Address}
		switch {
		case tx.To == nil:
			x.Method.CallType = "CONTRACT_CREATION"
			if r.ContractAddress == nil {
				t.Fatalf("creation %s without contractAddress", tx.Hash)
			}
			x.To.Address = strings.ToLower(*r.ContractAddress)
			if x.TxStatus == "1" {
				who = append(who, x.To.Address)
			}
		default:
			x.To.Address = strings.ToLower(*tx.To)
			c, ok := code[x.To.Address]
			if !ok {
				t.Fatalf("no recorded eth_getCode of %s", x.To.Address)
			}
			x.Method.CallType = "NATIVE_TRANSFER"
			if c != "0x" {
				// The document sets methodHash for contract calls only.
				x.Method.CallType = "CONTRACT_CALL"
				if len(tx.Input) >= 10 {
					x.Method.MethodHash = tx.Input[:10]
				}
			}
			who = append(who, x.To.Address)
		}
		txs = append(txs, x)
		seen := map[string]bool{}
		for _, a := range who {
			if !seen[a] {
				seen[a] = true
				involved[a] = append(involved[a], x.key())
			}
		}
	})
	if len(txs) != 36 {
		t.Fatalf("%d recorded EVM txs, want 36", len(txs))
	}
	return txs, involved
}

// An address's native transactions equal the recorded transactions and
// receipts that name it (sender, recipient, created contract), newest first.
func TestNativeTransactions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		txs, involved := recordedTxs(t, e)
		byKey := map[string]nativeTx{}
		for _, x := range txs {
			byKey[x.key()] = x
		}
		order := func(keys []string, lo, hi int64) []string {
			var sel []nativeTx
			for _, k := range keys {
				x := byKey[k]
				var b int64
				fmt.Sscan(x.BlockNumber, &b)
				if b >= lo && b < hi {
					sel = append(sel, x)
				}
			}
			sort.Slice(sel, func(i, j int) bool {
				var bi, bj, ii, ij int64
				fmt.Sscan(sel[i].BlockNumber, &bi)
				fmt.Sscan(sel[j].BlockNumber, &bj)
				fmt.Sscan(sel[i].BlockIndex.String(), &ii)
				fmt.Sscan(sel[j].BlockIndex.String(), &ij)
				if bi != bj {
					return bi > bj
				}
				return ii > ij
			})
			out := make([]string, len(sel))
			for i, x := range sel {
				out[i] = x.key()
			}
			return out
		}
		names := map[string]int{}
		for _, x := range txs {
			names[x.Method.CallType]++
		}
		if names["NATIVE_TRANSFER"] == 0 || names["CONTRACT_CALL"] == 0 || names["CONTRACT_CREATION"] != 4 {
			t.Fatalf("recorded call types: %v", names)
		}
		addrs := append(holders(e, t), "0xc92d4b6f67f90cd4a57ce07615b57f9d773e6cfa", "0xb773571300704198c38ffab53f021cdb7f3bd659")
		for _, c := range e.net.CChainContracts {
			addrs = append(addrs, c)
		}
		for _, a := range addrs {
			for _, c := range []struct {
				q      string
				lo, hi int64
			}{
				{"", 0, 1 << 40},
				{"?pageSize=1", 0, 1 << 40},
				{"?pageSize=100", 0, 1 << 40},
				{"?startBlock=20", 20, 1 << 40},
				{"?endBlock=20&pageSize=3", 0, 20},
				{"?startBlock=10&endBlock=30", 10, 30},
				{"?startBlock=37&endBlock=38", 37, 38},
			} {
				path := "/v1/chains/88888/addresses/" + a + "/transactions:listNative" + c.q
				var keys []string
				for _, x := range allPages(t, e, path, func(l nativeTxList) ([]nativeTx, string) { return l.Transactions, l.NextPageToken }) {
					keys = append(keys, x.key())
					// The document's names of the calls that have no selector.
					if want := map[string]string{"NATIVE_TRANSFER": "Native Transfer", "CONTRACT_CREATION": "Contract Created"}[x.Method.CallType]; want != "" && x.Method.MethodName != want {
						t.Errorf("%s: method %+v, want the name %q", path, x.Method, want)
					}
				}
				want := order(involved[a], c.lo, c.hi)
				if strings.Join(keys, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s:\ngot\n  %s\nrecorded\n  %s", path, strings.Join(keys, "\n  "), strings.Join(want, "\n  "))
				}
			}
		}
		// Standard selectors are named.
		var l nativeTxList
		e.ok(t, "/v1/chains/88888/addresses/"+e.net.CChainContracts["erc20"]+"/transactions:listNative?pageSize=100", &l)
		named := map[string]string{}
		for _, x := range l.Transactions {
			named[x.Method.MethodHash] = x.Method.MethodName
		}
		if named["0xa9059cbb"] != "transfer(address,uint256)" || named["0x23b872dd"] != "transferFrom(address,address,uint256)" {
			t.Errorf("method names: %v", named)
		}
		base := "/v1/chains/88888/addresses/" + addrs[0] + "/transactions:listNative?"
		for q, want := range map[string][]string{
			"startBlock=x":              {"startBlock"},
			"endBlock=-2":               {"endBlock"},
			"startBlock=5&endBlock=4":   {"startBlock"},
			"pageSize=101":              {"pageSize"},
			"pageSize=0":                {"pageSize"},
			"pageToken=AAAA.BBBB":       {"pageToken"},
			"pageSize=1000&startBlock=": {"pageSize"},
		} {
			e.fails(t, base+q, 400, want...)
		}
		e.fails(t, "/v1/chains/88888/addresses/0x0/transactions:listNative", 400, "address")
		e.fails(t, "/v1/chains/x-chain/addresses/"+addrs[0]+"/transactions:listNative", 404, "x-chain")
	})
}
