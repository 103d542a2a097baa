package evm

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"testing"

	"github.com/ava-labs/libevm/accounts/abi"
	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/devnet/indextest"
	"github.com/permafrost-dev/permafrost/internal/jsonscan"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func cChainConfig(t testing.TB) Config {
	t.Helper()
	cfg, err := CChainConfig(indextest.Genesis(t))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// atomicTouched lists the EVM addresses of the workload's atomic C-chain txs:
// their native balances need the atomic applier.
func atomicTouched(work []workloadTx) map[string]bool {
	out := map[string]bool{}
	for _, w := range work {
		if w.Chain == "C" && w.Extra.Atomic {
			for _, a := range w.Addresses {
				if strings.HasPrefix(a, "0x") {
					out[strings.ToLower(a)] = true
				}
			}
		}
	}
	return out
}

func TestRecordedCChain(t *testing.T) {
	rec := loadRecording(t)
	blocks := rec.rawBlocks(t)
	work := loadWorkload(t)
	net := loadNetwork(t)
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ix, err := NewIndexer(cChainConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		indextest.Apply(t, db, ix, blocks, 10)
		checkRecordedChain(t, db, rec, work, net, atomicTouched(work))
	})
}

// checkRecordedChain compares the index of devnet-a's C-chain with the
// recorded node answers. Native balances of addresses in skipNative are only
// compared at block 0 (before any atomic tx).
func checkRecordedChain(t *testing.T, db *store.DB, rec *recording, work []workloadTx, net *devnet.Network, skipNative map[string]bool) {
	ctx := context.Background()
	t.Run("blocks", func(t *testing.T) { checkBlocks(t, ctx, db, rec, net) })
	t.Run("workload_txs", func(t *testing.T) { checkWorkloadTxs(t, ctx, db, work) })
	t.Run("logs", func(t *testing.T) { checkLogs(t, ctx, db, rec) })
	t.Run("transfers", func(t *testing.T) { checkTransfers(t, ctx, db, rec) })
	t.Run("token_balances", func(t *testing.T) { checkTokenCalls(t, ctx, db, rec, net) })
	t.Run("token_history", func(t *testing.T) { checkTokenHistory(t, ctx, db, rec) })
	t.Run("contracts", func(t *testing.T) { checkContracts(t, ctx, db, work, net) })
	t.Run("native_balances", func(t *testing.T) { checkNative(t, ctx, db, rec, skipNative) })
	t.Run("list_native", func(t *testing.T) { checkListNative(t, ctx, db, rec) })
}

func checkBlocks(t *testing.T, ctx context.Context, db *store.DB, rec *recording, net *devnet.Network) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM evm_blocks WHERE chain_key = 'C'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != recordedTip+1 {
		t.Fatalf("blocks = %d, want %d", n, recordedTip+1)
	}
	for h := uint64(0); h <= recordedTip; h++ {
		var want struct {
			Hash, ParentHash, Miner, GasUsed, GasLimit, BaseFeePerGas, Timestamp, Size string
			BlockGasCost, ExtDataGasUsed, ExtDataHash                                  string
			Transactions                                                               []json.RawMessage
		}
		if err := json.Unmarshal(rec.find(t, "eth_getBlockByNumber", fmt.Sprintf(`["0x%x",true]`, h)), &want); err != nil {
			t.Fatal(err)
		}
		var hash, parent, miner, baseFee, bgc, edgu, edh string
		var ts, gasUsed, gasLimit, size int64
		var txCount int
		err := db.QueryRowContext(ctx, `SELECT hash, parent_hash, miner, base_fee, block_gas_cost, ext_data_gas_used,
			ext_data_hash, timestamp, gas_used, gas_limit, size_bytes, tx_count FROM evm_blocks WHERE chain_key = 'C' AND number = $1`, h).
			Scan(store.ScanHex(&hash), store.ScanHex(&parent), store.ScanHex(&miner), &baseFee, &bgc, &edgu, store.ScanHex(&edh), &ts, &gasUsed, &gasLimit, &size, &txCount)
		if err != nil {
			t.Fatalf("block %d: %v", h, err)
		}
		got := []string{hash, parent, miner, hexDec(baseFee), hexDec(bgc), hexDec(edgu), edh,
			hexDec(fmt.Sprint(ts)), hexDec(fmt.Sprint(gasUsed)), hexDec(fmt.Sprint(gasLimit)), hexDec(fmt.Sprint(size)), fmt.Sprint(txCount)}
		exp := []string{want.Hash, want.ParentHash, want.Miner, want.BaseFeePerGas, want.BlockGasCost, want.ExtDataGasUsed, want.ExtDataHash,
			want.Timestamp, want.GasUsed, want.GasLimit, want.Size, fmt.Sprint(len(want.Transactions))}
		for i := range got {
			if got[i] != exp[i] {
				t.Errorf("block %d field %d = %s, want %s", h, i, got[i], exp[i])
			}
		}
	}
	var tip string
	if err := db.QueryRowContext(ctx, `SELECT hash FROM evm_blocks WHERE chain_key = 'C' ORDER BY number DESC LIMIT 1`).Scan(store.ScanHex(&tip)); err != nil {
		t.Fatal(err)
	}
	if tip != net.Tips.C.BlockHash {
		t.Errorf("tip hash = %s, want %s", tip, net.Tips.C.BlockHash)
	}
}

// hexDec renders a decimal string as 0x-hex for comparison with node answers.
func hexDec(s string) string {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return "bad:" + s
	}
	return fmt.Sprintf("0x%x", v)
}

func checkWorkloadTxs(t *testing.T, ctx context.Context, db *store.DB, work []workloadTx) {
	evm := 0
	for _, w := range work {
		if w.Chain != "C" || w.Extra.Atomic {
			continue
		}
		evm++
		var block int64
		var status, typ int
		var gasUsed int64
		var to, contract, from string
		err := db.QueryRowContext(ctx, `SELECT block_number, status, tx_type, gas_used, to_addr, contract_address, from_addr
			FROM evm_txs WHERE chain_key = 'C' AND hash = $1`, store.Hex(w.TxID)).Scan(&block, &status, &typ, &gasUsed,
			store.ScanHex(&to), store.ScanHex(&contract), store.ScanHex(&from))
		if err != nil {
			t.Errorf("%s %s: %v", w.Step, w.TxID, err)
			continue
		}
		if block != *w.Extra.BlockNumber || status != *w.Extra.Status || typ != *w.Extra.TxType || gasUsed != *w.Extra.GasUsed {
			t.Errorf("%s: block/status/type/gasUsed = %d/%d/%d/%d, want %d/%d/%d/%d", w.Step, block, status, typ, gasUsed,
				*w.Extra.BlockNumber, *w.Extra.Status, *w.Extra.TxType, *w.Extra.GasUsed)
		}
		if to != strings.ToLower(w.Extra.To) {
			t.Errorf("%s: to = %q, want %q", w.Step, to, w.Extra.To)
		}
		if contract != strings.ToLower(w.Extra.ContractAddress) {
			t.Errorf("%s: contract = %q, want %q", w.Step, contract, w.Extra.ContractAddress)
		}
		if from != strings.ToLower(w.Addresses[0]) {
			t.Errorf("%s: from = %q, want %q", w.Step, from, w.Addresses[0])
		}
		// The sender and the recipient (or created contract) list the tx.
		for _, a := range []string{from, to, contract} {
			if a == "" {
				continue
			}
			var one int
			if err := db.QueryRowContext(ctx, `SELECT 1 FROM evm_address_txs a JOIN evm_txs t
				ON t.chain_key = a.chain_key AND t.block_number = a.block_number AND t.tx_index = a.tx_index
				WHERE a.chain_key = 'C' AND a.address = $1 AND t.hash = $2`, store.Hex(a), store.Hex(w.TxID)).Scan(&one); err != nil {
				t.Errorf("%s: address link %s: %v", w.Step, a, err)
			}
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM evm_txs WHERE chain_key = 'C'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if evm != 36 || n != evm {
		t.Errorf("indexed %d txs, workload has %d EVM txs (README: 36)", n, evm)
	}
}

type recLog struct {
	Address         string   `json:"address"`
	Topics          []string `json:"topics"`
	Data            string   `json:"data"`
	BlockNumber     string   `json:"blockNumber"`
	TransactionHash string   `json:"transactionHash"`
	LogIndex        string   `json:"logIndex"`
}

func recordedLogs(t *testing.T, rec *recording) []recLog {
	var logs []recLog
	if err := json.Unmarshal(rec.find(t, "eth_getLogs", `[{"fromBlock":"0x0","toBlock":"0x25"}]`), &logs); err != nil {
		t.Fatal(err)
	}
	if len(logs) == 0 {
		t.Fatal("no recorded logs")
	}
	return logs
}

func checkLogs(t *testing.T, ctx context.Context, db *store.DB, rec *recording) {
	logs := recordedLogs(t, rec)
	rows, err := db.QueryContext(ctx, `SELECT block_number, log_index, tx_hash, address, topic_count, topic0, topic1, topic2, topic3, data
		FROM evm_logs WHERE chain_key = 'C' ORDER BY block_number, log_index`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for ; rows.Next(); i++ {
		var block, idx int64
		var n int
		var txHash, addr string
		var topics [4]string
		var data []byte
		if err := rows.Scan(&block, &idx, store.ScanHex(&txHash), store.ScanHex(&addr), &n, store.ScanHex(&topics[0]),
			store.ScanHex(&topics[1]), store.ScanHex(&topics[2]), store.ScanHex(&topics[3]), &data); err != nil {
			t.Fatal(err)
		}
		if i >= len(logs) {
			t.Fatalf("more logs indexed than recorded (%d)", len(logs))
		}
		w := logs[i]
		got := fmt.Sprint(hexDec(fmt.Sprint(block)), hexDec(fmt.Sprint(idx)), txHash, addr, strings.Join(topics[:n], ","), hexString(data))
		exp := fmt.Sprint(w.BlockNumber, w.LogIndex, w.TransactionHash, w.Address, strings.Join(w.Topics, ","), w.Data)
		if got != exp {
			t.Errorf("log %d:\n got %s\nwant %s", i, got, exp)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if i != len(logs) {
		t.Errorf("indexed %d logs, recorded %d", i, len(logs))
	}
}

// expTransfer is a transfer decoded by the test from eth_getLogs, with the
// go-ethereum ABI decoder (independent of the indexer's decoder).
type expTransfer struct {
	block, logIndex, batch       int64
	token, typ, from, to, op, id string
	value, txHash                string
}

func expectedTransfers(t *testing.T, rec *recording) []expTransfer {
	u256Arr, _ := abi.NewType("uint256[]", "", nil)
	u256, _ := abi.NewType("uint256", "", nil)
	batchArgs := abi.Arguments{{Type: u256Arr}, {Type: u256Arr}}
	singleArgs := abi.Arguments{{Type: u256}, {Type: u256}}
	addr := func(topic string) string { return "0x" + topic[26:] }
	num := func(s string) int64 {
		v, ok := new(big.Int).SetString(strings.TrimPrefix(s, "0x"), 16)
		if !ok {
			t.Fatalf("bad hex %s", s)
		}
		return v.Int64()
	}
	var out []expTransfer
	for _, l := range recordedLogs(t, rec) {
		data := common.FromHex(l.Data)
		base := expTransfer{block: num(l.BlockNumber), logIndex: num(l.LogIndex), token: l.Address, txHash: l.TransactionHash}
		switch l.Topics[0] {
		case "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef":
			x := base
			x.from, x.to = addr(l.Topics[1]), addr(l.Topics[2])
			if len(l.Topics) == 3 {
				x.typ, x.value = "ERC-20", new(big.Int).SetBytes(data).String()
			} else {
				x.typ, x.value, x.id = "ERC-721", "1", new(big.Int).SetBytes(common.FromHex(l.Topics[3])).String()
			}
			out = append(out, x)
		case "0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62":
			v, err := singleArgs.Unpack(data)
			if err != nil {
				t.Fatal(err)
			}
			x := base
			x.typ, x.op, x.from, x.to = "ERC-1155", addr(l.Topics[1]), addr(l.Topics[2]), addr(l.Topics[3])
			x.id, x.value = v[0].(*big.Int).String(), v[1].(*big.Int).String()
			out = append(out, x)
		case "0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb":
			v, err := batchArgs.Unpack(data)
			if err != nil {
				t.Fatal(err)
			}
			ids, vals := v[0].([]*big.Int), v[1].([]*big.Int)
			for i := range ids {
				x := base
				x.batch = int64(i)
				x.typ, x.op, x.from, x.to = "ERC-1155", addr(l.Topics[1]), addr(l.Topics[2]), addr(l.Topics[3])
				x.id, x.value = ids[i].String(), vals[i].String()
				out = append(out, x)
			}
		}
	}
	return out
}

func checkTransfers(t *testing.T, ctx context.Context, db *store.DB, rec *recording) {
	want := expectedTransfers(t, rec)
	rows, err := db.QueryContext(ctx, `SELECT block_number, log_index, batch_index, token, erc_type, from_addr, to_addr,
		operator, token_id, value, tx_hash FROM evm_transfers WHERE chain_key = 'C' ORDER BY block_number, log_index, batch_index`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []expTransfer
	for rows.Next() {
		var x expTransfer
		if err := rows.Scan(&x.block, &x.logIndex, &x.batch, store.ScanHex(&x.token), &x.typ, store.ScanHex(&x.from),
			store.ScanHex(&x.to), store.ScanHex(&x.op), &x.id, &x.value, store.ScanHex(&x.txHash)); err != nil {
			t.Fatal(err)
		}
		got = append(got, x)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("transfers = %d, want %d", len(got), len(want))
	}
	kinds := map[string]int{}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("transfer %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
		kinds[want[i].typ]++
	}
	// The workload covers all three standards and a batch.
	if kinds["ERC-20"] == 0 || kinds["ERC-721"] == 0 || kinds["ERC-1155"] < 5 {
		t.Errorf("transfer kinds %v: recording not covered", kinds)
	}
	// /tokens/{address}/transfers: newest first by token, keyset-paginated.
	token := want[len(want)-1].token
	var pageBlock, pageLog, pageBatch int64 = 1 << 62, 0, 0
	var seen int
	for {
		r, err := db.QueryContext(ctx, `SELECT block_number, log_index, batch_index FROM evm_transfers
			WHERE chain_key = 'C' AND token = $1 AND (block_number, log_index, batch_index) < ($2, $3, $4)
			ORDER BY block_number DESC, log_index DESC, batch_index DESC LIMIT 2`, store.Hex(token), pageBlock, pageLog, pageBatch)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for r.Next() {
			if err := r.Scan(&pageBlock, &pageLog, &pageBatch); err != nil {
				t.Fatal(err)
			}
			n++
		}
		r.Close()
		seen += n
		if n < 2 {
			break
		}
	}
	wantN := 0
	for _, x := range want {
		if x.token == token {
			wantN++
		}
	}
	if seen != wantN {
		t.Errorf("paged transfers of %s = %d, want %d", token, seen, wantN)
	}
}

// checkTokenCalls compares balances and owners with the recorded eth_call
// answers at the tip: balanceOf (ERC-20 amount, ERC-721 count),
// balanceOf(address,uint256) and balanceOfBatch (ERC-1155), ownerOf.
func checkTokenCalls(t *testing.T, ctx context.Context, db *store.DB, rec *recording, net *devnet.Network) {
	typeOf := map[string]string{
		net.CChainContracts["erc20"]:        "ERC-20",
		net.CChainContracts["factoryChild"]: "ERC-20",
		net.CChainContracts["erc721"]:       "ERC-721",
		net.CChainContracts["erc1155"]:      "ERC-1155",
	}
	bal := func(holder, typ, token, id string) string {
		var s string
		err := db.QueryRowContext(ctx, `SELECT balance FROM evm_token_balances WHERE chain_key = 'C' AND holder = $1
			AND erc_type = $2 AND token = $3 AND token_id = $4`, store.Hex(holder), typ, store.Hex(token), id).Scan(&s)
		if err == sql.ErrNoRows {
			return "0"
		}
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	word := func(b []byte, i int) []byte { return b[i*32 : i*32+32] }
	checked := map[string]int{}
	for _, c := range rec.calls {
		if c.Method != "eth_call" {
			continue
		}
		var p []json.RawMessage
		var call struct{ To, Data string }
		if json.Unmarshal(c.Params, &p) != nil || len(p) != 2 || json.Unmarshal(p[0], &call) != nil {
			continue
		}
		if string(p[1]) != `"0x25"` {
			t.Fatalf("eth_call at %s, expected the tip", p[1])
		}
		token := strings.ToLower(call.To)
		typ := typeOf[token]
		in := common.FromHex(call.Data)
		if len(in) < 4 || typ == "" {
			continue
		}
		args := in[4:]
		var res []byte
		if c.Response.Error == nil {
			var s string
			if err := json.Unmarshal(c.Response.Result, &s); err != nil {
				t.Fatal(err)
			}
			res = common.FromHex(s)
		}
		sel := fmt.Sprintf("%x", in[:4])
		switch {
		case sel == "70a08231" && (typ == "ERC-20" || typ == "ERC-721"): // balanceOf(address)
			holder := "0x" + fmt.Sprintf("%x", word(args, 0)[12:])
			if got, want := bal(holder, typ, token, ""), new(big.Int).SetBytes(res).String(); got != want {
				t.Errorf("%s balanceOf(%s) = %s, want %s", token, holder, got, want)
			}
			checked[typ+" balanceOf"]++
		case sel == "6352211e": // ownerOf(uint256)
			id := new(big.Int).SetBytes(word(args, 0)).String()
			var owner string
			err := db.QueryRowContext(ctx, `SELECT owner FROM evm_nft_tokens WHERE chain_key = 'C' AND token = $1 AND token_id = $2`,
				token, id).Scan(&owner)
			if c.Response.Error != nil {
				if err != sql.ErrNoRows {
					t.Errorf("ownerOf(%s) reverts on the node, index has %q (%v)", id, owner, err)
				}
			} else if want := "0x" + fmt.Sprintf("%x", res[12:32]); err != nil || owner != want {
				t.Errorf("ownerOf(%s) = %q (%v), want %s", id, owner, err, want)
			}
			checked["ownerOf"]++
		case sel == "00fdd58e": // balanceOf(address,uint256)
			holder := "0x" + fmt.Sprintf("%x", word(args, 0)[12:])
			id := new(big.Int).SetBytes(word(args, 1)).String()
			if got, want := bal(holder, typ, token, id), new(big.Int).SetBytes(res).String(); got != want {
				t.Errorf("%s balanceOf(%s, %s) = %s, want %s", token, holder, id, got, want)
			}
			checked["ERC-1155 balanceOf"]++
		case sel == "4e1273f4": // balanceOfBatch(address[],uint256[])
			addrArr, _ := abi.NewType("address[]", "", nil)
			u256Arr, _ := abi.NewType("uint256[]", "", nil)
			in, err := abi.Arguments{{Type: addrArr}, {Type: u256Arr}}.Unpack(args)
			if err != nil {
				t.Fatal(err)
			}
			out, err := abi.Arguments{{Type: u256Arr}}.Unpack(res)
			if err != nil {
				t.Fatal(err)
			}
			holders, ids, vals := in[0].([]common.Address), in[1].([]*big.Int), out[0].([]*big.Int)
			for i := range holders {
				h := strings.ToLower(holders[i].Hex())
				if got := bal(h, typ, token, ids[i].String()); got != vals[i].String() {
					t.Errorf("balanceOfBatch %s id %s = %s, want %s", h, ids[i], got, vals[i])
				}
			}
			checked["balanceOfBatch"]++
		}
	}
	for _, k := range []string{"ERC-20 balanceOf", "ERC-721 balanceOf", "ownerOf", "ERC-1155 balanceOf", "balanceOfBatch"} {
		if checked[k] == 0 {
			t.Errorf("no recorded %s call checked", k)
		}
	}
	t.Logf("checked %v", checked)
}

// checkTokenHistory replays the recorded logs block by block and compares
// the as-of-block balances and owners with one indexed history query each.
func checkTokenHistory(t *testing.T, ctx context.Context, db *store.DB, rec *recording) {
	want := expectedTransfers(t, rec)
	type key struct{ holder, typ, token, id string }
	bals := map[key]*big.Int{}
	owners := map[[2]string]string{}
	zero := "0x0000000000000000000000000000000000000000"
	i := 0
	for n := int64(0); n <= recordedTip; n++ {
		for ; i < len(want) && want[i].block == n; i++ {
			x := want[i]
			id := x.id
			if x.typ == "ERC-721" {
				id = ""
				owners[[2]string{x.token, x.id}] = x.to
			}
			v, _ := new(big.Int).SetString(x.value, 10)
			for _, side := range []struct {
				a    string
				sign int64
			}{{x.from, -1}, {x.to, 1}} {
				if side.a == zero {
					continue
				}
				k := key{side.a, x.typ, x.token, id}
				if bals[k] == nil {
					bals[k] = new(big.Int)
				}
				bals[k].Add(bals[k], new(big.Int).Mul(v, big.NewInt(side.sign)))
			}
		}
		for k, v := range bals {
			var got string
			err := db.QueryRowContext(ctx, `SELECT balance FROM evm_token_balance_history WHERE chain_key = 'C' AND holder = $1
				AND erc_type = $2 AND token = $3 AND token_id = $4 AND block_number <= $5 ORDER BY block_number DESC LIMIT 1`,
				store.Hex(k.holder), k.typ, store.Hex(k.token), k.id, n).Scan(&got)
			if err == sql.ErrNoRows {
				got, err = "0", nil // never moved by a non-zero net amount in a block
			}
			if err != nil || got != v.String() {
				t.Errorf("block %d %+v: balance %q (%v), want %s", n, k, got, err, v)
			}
		}
		for k, o := range owners {
			var got string
			err := db.QueryRowContext(ctx, `SELECT owner FROM evm_nft_owner_history WHERE chain_key = 'C' AND token = $1
				AND token_id = $2 AND block_number <= $3 ORDER BY block_number DESC LIMIT 1`, store.Hex(k[0]), k[1], n).Scan(store.ScanHex(&got))
			if err != nil || got != o {
				t.Errorf("block %d owner of %v = %q (%v), want %s", n, k, got, err, o)
			}
		}
	}
	if len(bals) < 10 || len(owners) != 4 {
		t.Errorf("history covered %d balances, %d NFT owners", len(bals), len(owners))
	}
}

func checkContracts(t *testing.T, ctx context.Context, db *store.DB, work []workloadTx, net *devnet.Network) {
	type row struct{ kind, txHash, deployer, erc string }
	get := func(addr string) (row, error) {
		var r row
		err := db.QueryRowContext(ctx, `SELECT creation_kind, tx_hash, deployer_address, erc_type FROM evm_contracts
			WHERE chain_key = 'C' AND address = $1`, addr).Scan(&r.kind, &r.txHash, &r.deployer, &r.erc)
		return r, err
	}
	wantType := map[string]string{"erc20": "ERC-20", "erc721": "ERC-721", "erc1155": "ERC-1155", "factory": "", "factoryChild": "ERC-20"}
	creations := 0
	for _, w := range work {
		if w.Chain != "C" || w.Type != "ContractCreation" && w.Extra.CreatedContract == "" {
			continue
		}
		addr := strings.ToLower(w.Extra.ContractAddress)
		kind := "tx"
		if addr == "" {
			addr, kind = strings.ToLower(w.Extra.CreatedContract), "observed"
		}
		creations++
		r, err := get(addr)
		if err != nil {
			t.Errorf("%s: contract %s: %v", w.Step, addr, err)
			continue
		}
		if r.kind != kind || r.txHash != w.TxID || r.deployer != strings.ToLower(w.Addresses[0]) {
			t.Errorf("%s: contract %s = %+v, want kind %s tx %s deployer %s", w.Step, addr, r, kind, w.TxID, w.Addresses[0])
		}
	}
	if creations != 5 {
		t.Errorf("workload creations checked = %d, want 5", creations)
	}
	for name, typ := range wantType {
		r, err := get(net.CChainContracts[name])
		if err != nil || r.erc != typ {
			t.Errorf("%s: erc type %q (%v), want %q", name, r.erc, err, typ)
		}
	}
}

// checkNative compares native balances as of blocks 0, 0x12 and the tip with
// the recorded eth_getBalance answers for every recorded address.
func checkNative(t *testing.T, ctx context.Context, db *store.DB, rec *recording, skip map[string]bool) {
	compared := 0
	for _, c := range rec.calls {
		if c.Method != "eth_getBalance" {
			continue
		}
		var p []string
		if err := json.Unmarshal(c.Params, &p); err != nil || len(p) != 2 {
			t.Fatalf("params %s", c.Params)
		}
		addr := strings.ToLower(p[0])
		at, err := jsonscan.Uint64("block", []byte(p[1]))
		if err != nil {
			t.Fatal(err)
		}
		var s string
		if err := json.Unmarshal(c.Response.Result, &s); err != nil {
			t.Fatal(err)
		}
		want, _ := new(big.Int).SetString(strings.TrimPrefix(s, "0x"), 16)
		got := "0"
		err = db.QueryRowContext(ctx, `SELECT balance FROM evm_native_balance_history WHERE chain_key = 'C' AND address = $1
			AND block_number <= $2 ORDER BY block_number DESC LIMIT 1`, store.Hex(addr), at).Scan(&got)
		if err != nil && err != sql.ErrNoRows {
			t.Fatal(err)
		}
		if skip[addr] && at > 0 {
			if got != want.String() {
				t.Logf("%s at %d: %s, node %s (atomic txs not applied)", addr, at, got, want)
			}
			continue
		}
		compared++
		if got != want.String() {
			t.Errorf("%s at %d: balance %s, want %s", addr, at, got, want)
		}
	}
	if compared < 40 {
		t.Errorf("compared only %d balances", compared)
	}
	// The current table agrees with the history at the tip.
	var mismatched int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM evm_native_balances b WHERE b.chain_key = 'C' AND b.balance <>
		(SELECT h.balance FROM evm_native_balance_history h WHERE h.chain_key = b.chain_key AND h.address = b.address
		 ORDER BY h.block_number DESC LIMIT 1)`).Scan(&mismatched); err != nil {
		t.Fatal(err)
	}
	if mismatched != 0 {
		t.Errorf("%d current native balances differ from their latest history row", mismatched)
	}
}

// checkListNative pages an address's transactions newest first and compares
// with the recorded txs (eth_getTransactionByHash) sent or received by it.
func checkListNative(t *testing.T, ctx context.Context, db *store.DB, rec *recording) {
	addr := "0xcd315311aaea7571750fd94311410035d1c5a951"
	type pos struct{ block, index int64 }
	var want []pos
	for _, c := range rec.calls {
		if c.Method != "eth_getTransactionReceipt" || c.Response.Result == nil {
			continue
		}
		var r struct{ From, To, BlockNumber, TransactionIndex string }
		if err := json.Unmarshal(c.Response.Result, &r); err != nil || r.From == "" {
			continue
		}
		if r.From == addr || r.To == addr {
			b, _ := jsonscan.Uint64("", []byte(r.BlockNumber))
			i, _ := jsonscan.Uint64("", []byte(r.TransactionIndex))
			want = append(want, pos{int64(b), int64(i)})
		}
	}
	sort.Slice(want, func(i, j int) bool {
		return want[i].block > want[j].block || want[i].block == want[j].block && want[i].index > want[j].index
	})
	var got []pos
	cur := pos{1 << 62, 0}
	for {
		rows, err := db.QueryContext(ctx, `SELECT block_number, tx_index FROM evm_address_txs WHERE chain_key = 'C' AND address = $1
			AND (block_number, tx_index) < ($2, $3) ORDER BY block_number DESC, tx_index DESC LIMIT 3`, store.Hex(addr), cur.block, cur.index)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			if err := rows.Scan(&cur.block, &cur.index); err != nil {
				t.Fatal(err)
			}
			got = append(got, cur)
			n++
		}
		rows.Close()
		if n < 3 {
			break
		}
	}
	if len(want) < 5 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("listNative %s:\n got %v\nwant %v", addr, got, want)
	}
}
