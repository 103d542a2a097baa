package evm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/store"
)

type evmBlock struct {
	ChainID                    string      `json:"chainId"`
	BlockNumber                string      `json:"blockNumber"`
	BlockTimestamp             json.Number `json:"blockTimestamp"`
	BlockTimestampMilliseconds json.Number `json:"blockTimestampMilliseconds"`
	BlockMinDelayExcess        json.Number `json:"blockMinDelayExcess"`
	BlockHash                  string      `json:"blockHash"`
	TxCount                    json.Number `json:"txCount"`
	BaseFee                    string      `json:"baseFee"`
	GasUsed                    string      `json:"gasUsed"`
	GasLimit                   string      `json:"gasLimit"`
	GasCost                    string      `json:"gasCost"`
	ParentHash                 string      `json:"parentHash"`
	FeesSpent                  string      `json:"feesSpent"`
	CumulativeTransactions     string      `json:"cumulativeTransactions"`
}

type blockList struct {
	NextPageToken string     `json:"nextPageToken"`
	Blocks        []evmBlock `json:"blocks"`
}

func blockPage(l blockList) ([]evmBlock, string) { return l.Blocks, l.NextPageToken }

// recordedBlocks builds the expected EvmBlock of every recorded block from
// eth_getBlockByNumber (header fields, transaction count) and
// eth_getBlockReceipts (fees: gasUsed × effectiveGasPrice of each receipt),
// oldest first; cumulativeTransactions is the running count of the recorded
// blocks' transactions (the recording holds every block from genesis).
func recordedBlocks(t *testing.T, e *env) []evmBlock {
	t.Helper()
	fees := map[string]*big.Int{}
	e.rec.each("eth_getBlockReceipts", func(ps []json.RawMessage, res json.RawMessage) {
		var num string
		_ = json.Unmarshal(ps[0], &num)
		var rs []struct{ GasUsed, EffectiveGasPrice string }
		if err := json.Unmarshal(res, &rs); err != nil {
			t.Fatal(err)
		}
		sum := new(big.Int)
		for _, r := range rs {
			sum.Add(sum, new(big.Int).Mul(hexBig(t, r.GasUsed), hexBig(t, r.EffectiveGasPrice)))
		}
		fees[hexDec(t, num)] = sum
	})
	var out []evmBlock
	e.rec.each("eth_getBlockByNumber", func(ps []json.RawMessage, res json.RawMessage) {
		var full bool
		if len(ps) < 2 || json.Unmarshal(ps[1], &full) != nil || !full {
			return
		}
		var b struct {
			Number, Hash, ParentHash, Timestamp, TimestampMilliseconds, GasUsed, GasLimit string
			BaseFeePerGas, BlockGasCost, MinDelayExcess                                   string
			Transactions                                                                  []json.RawMessage
		}
		if json.Unmarshal(res, &b) != nil || b.Number == "" {
			return
		}
		x := evmBlock{ChainID: "88888", BlockNumber: hexDec(t, b.Number), BlockTimestamp: json.Number(hexDec(t, b.Timestamp)),
			BlockHash: b.Hash, TxCount: json.Number(strconv.Itoa(len(b.Transactions))), BaseFee: hexDec(t, b.BaseFeePerGas),
			GasUsed: hexDec(t, b.GasUsed), GasLimit: hexDec(t, b.GasLimit), GasCost: hexDec(t, b.BlockGasCost),
			ParentHash: b.ParentHash, FeesSpent: "0"}
		if b.TimestampMilliseconds != "" {
			x.BlockTimestampMilliseconds = json.Number(hexDec(t, b.TimestampMilliseconds))
		}
		if b.MinDelayExcess != "" {
			x.BlockMinDelayExcess = json.Number(hexDec(t, b.MinDelayExcess))
		}
		if f, ok := fees[x.BlockNumber]; ok {
			x.FeesSpent = f.String()
		} else if len(b.Transactions) > 0 {
			t.Fatalf("no recorded receipts of block %s", x.BlockNumber)
		}
		out = append(out, x)
	})
	sort.Slice(out, func(i, j int) bool { return num(out[i].BlockNumber) < num(out[j].BlockNumber) })
	cum := 0
	for i := range out {
		if num(out[i].BlockNumber) != int64(i) {
			t.Fatalf("recorded blocks are not 0..n: %d at %d", num(out[i].BlockNumber), i)
		}
		n, _ := out[i].TxCount.Int64()
		cum += int(n)
		out[i].CumulativeTransactions = strconv.Itoa(cum)
	}
	if len(out) != 38 {
		t.Fatalf("%d recorded blocks, want 38", len(out))
	}
	return out
}

func num(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(s)
	}
	return n
}

func (b evmBlock) String() string {
	j, _ := json.Marshal(b)
	return string(j)
}

func blockStrings(bs []evmBlock) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = b.String()
	}
	return strings.Join(s, "\n")
}

// Every recorded block, asked by number (decimal and hex) and by hash,
// equals the node's answer; the listings are the recorded blocks newest
// first, whatever the page size.
func TestBlocks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		want := recordedBlocks(t, e)
		for _, b := range want {
			for _, id := range []string{b.BlockNumber, fmt.Sprintf("0x%x", num(b.BlockNumber)), b.BlockHash, strings.ToUpper(b.BlockHash[2:])} {
				if !strings.HasPrefix(id, "0x") && len(id) == 64 {
					id = "0x" + id // a hash in upper case
				}
				var got evmBlock
				e.ok(t, "/v1/chains/88888/blocks/"+id, &got)
				if got.String() != b.String() {
					t.Errorf("block %s:\ngot      %s\nrecorded %s", id, got, b)
				}
			}
			var byChainKey evmBlock
			e.ok(t, "/v1/chains/C/blocks/"+b.BlockNumber, &byChainKey)
			if byChainKey.String() != b.String() {
				t.Errorf("block %s by chain key C: %s", b.BlockNumber, byChainKey)
			}
		}
		newest := make([]evmBlock, len(want))
		for i, b := range want {
			newest[len(want)-1-i] = b
		}
		for _, base := range []string{"/v1/chains/88888/blocks", "/v1/blocks", "/v1/blocks?network=testnet"} {
			for _, size := range []string{"", "1", "7", "100"} {
				path := base
				if size != "" {
					path = withQuery(base, "pageSize", size)
				}
				got := allPages(t, e, path, blockPage)
				if blockStrings(got) != blockStrings(newest) {
					t.Errorf("%s:\ngot\n%s\nrecorded\n%s", path, blockStrings(got), blockStrings(newest))
				}
			}
		}
		sameAs(t, e, "/v1/chains/allBlocks", "/v1/blocks", "?pageSize=5", "?pageSize=5&network=fuji")
		var other blockList
		e.ok(t, "/v1/blocks?network=mainnet", &other)
		if len(other.Blocks) != 0 || other.NextPageToken != "" {
			t.Errorf("mainnet blocks: %+v", other)
		}
	})
}

func TestBlockErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		h := "0x52667364d54baae683512c595ec4929eedcb8d5ab806945657ecd0946e959f63"
		for _, c := range []struct {
			path string
			code int
			want []string
		}{
			{"/v1/chains/88888/blocks/xyz", 400, []string{"blockId"}},
			{"/v1/chains/88888/blocks/-1", 400, []string{"blockId"}},
			{"/v1/chains/88888/blocks/1.5", 400, []string{"blockId"}},
			{"/v1/chains/88888/blocks/" + h[:65], 400, []string{"blockId"}},
			{"/v1/chains/88888/blocks/" + h + "00", 400, []string{"blockId"}},
			{"/v1/chains/88888/blocks/99999999999999999999999", 400, []string{"blockId"}},
			{"/v1/chains/88888/blocks/38", 404, []string{"38", "not indexed"}},
			{"/v1/chains/88888/blocks/0x" + strings.Repeat("ab", 32), 404, []string{"not indexed"}},
			{"/v1/chains/88888/blocks/38/transactions", 404, []string{"38"}},
			{"/v1/chains/88888/blocks/xyz/transactions", 400, []string{"blockId"}},
			{"/v1/chains/88888/blocks/37/transactions?pageSize=101", 400, []string{"pageSize"}},
			{"/v1/chains/88888/blocks/37/transactions?pageSize=-1", 400, []string{"pageSize"}},
			{"/v1/chains/88888/blocks/37/transactions?pageToken=AAAA.BBBB", 400, []string{"pageToken"}},
			{"/v1/chains/88888/blocks?pageSize=0", 400, []string{"pageSize"}},
			{"/v1/chains/88888/blocks?pageSize=101", 400, []string{"pageSize"}},
			{"/v1/chains/88888/blocks?pageToken=xyz", 400, []string{"pageToken"}},
			{"/v1/blocks?network=devnet", 400, []string{"network"}},
			{"/v1/blocks?pageSize=1000", 400, []string{"pageSize"}},
			{"/v1/chains/x-chain/blocks", 404, []string{"x-chain"}},
			{"/v1/chains/12345/blocks/1", 404, []string{"12345"}},
		} {
			e.fails(t, c.path, c.code, c.want...)
		}
		// A token of one listing is refused by another, and by the same
		// listing of another block.
		var l nativeTxList
		e.ok(t, "/v1/chains/88888/blocks/37/transactions?pageSize=1", &l)
		if l.NextPageToken == "" {
			t.Fatal("block 37 has 4 transactions: no second page")
		}
		e.fails(t, "/v1/chains/88888/blocks/36/transactions?pageSize=1&pageToken="+l.NextPageToken, 400, "pageToken")
		e.fails(t, "/v1/chains/88888/blocks?pageToken="+l.NextPageToken, 400, "pageToken")
	})
}

// A block's transactions are the recorded transactions of the block, in
// block order, by number and by hash, whatever the page size.
func TestBlockTransactions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		txs, _ := recordedTxs(t, e)
		byBlock := map[string][]nativeTx{}
		for _, x := range txs {
			byBlock[x.BlockNumber] = append(byBlock[x.BlockNumber], x)
		}
		for _, b := range recordedBlocks(t, e) {
			want := byBlock[b.BlockNumber]
			sort.Slice(want, func(i, j int) bool { return want[i].BlockIndex < want[j].BlockIndex })
			var ws []string
			for _, x := range want {
				ws = append(ws, x.key())
			}
			n, _ := b.TxCount.Int64()
			if int(n) != len(want) {
				t.Errorf("block %s: %d transactions, %d recorded", b.BlockNumber, n, len(want))
			}
			for _, id := range []string{b.BlockNumber, b.BlockHash} {
				for _, q := range []string{"", "?pageSize=0", "?pageSize=1", "?pageSize=3", "?pageSize=100"} {
					path := "/v1/chains/88888/blocks/" + id + "/transactions" + q
					var gs []string
					for _, x := range allPages(t, e, path, func(l nativeTxList) ([]nativeTx, string) { return l.Transactions, l.NextPageToken }) {
						gs = append(gs, x.key())
					}
					if strings.Join(gs, "\n") != strings.Join(ws, "\n") {
						t.Errorf("%s:\ngot\n  %s\nrecorded\n  %s", path, strings.Join(gs, "\n  "), strings.Join(ws, "\n  "))
					}
				}
			}
		}
	})
}

// sameAs checks that the SDK-only path alias (absent from the published
// document, which would read it as /v1/chains/{chainId}) answers what path
// answers, byte for byte, page after page: its bodies are validated as
// path's.
func sameAs(t *testing.T, e *env, alias, path string, queries ...string) {
	t.Helper()
	for _, q := range append([]string{""}, queries...) {
		a, p := alias+q, path+q
		for i := 0; i < 50; i++ {
			code, body := e.do(t, p)
			acode, abody := apitest.ServeUnvalidated(t, e.mux, "GET", a)
			if code != acode || string(body) != string(abody) {
				t.Fatalf("%s: %d %s\n%s: %d %s", a, acode, abody, p, code, body)
			}
			var l struct{ NextPageToken string }
			_ = json.Unmarshal(body, &l)
			if l.NextPageToken == "" {
				break
			}
			a, p = withQuery(alias+q, "pageToken", l.NextPageToken), withQuery(path+q, "pageToken", l.NextPageToken)
		}
	}
}

// Migration 0050 fills cumulative_txs of blocks indexed before it: run on
// the index with the column cleared (in a transaction rolled back after),
// it gives the recorded running counts, as the indexer wrote them.
func TestCumulativeTxsBackfill(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		text, err := store.MigrationText("0050_evm_block_totals.sql")
		if err != nil {
			t.Fatal(err)
		}
		var update string
		for _, stmt := range strings.Split(text, ";\n") {
			var lines []string
			for _, l := range strings.Split(stmt, "\n") {
				if !strings.HasPrefix(strings.TrimSpace(l), "--") {
					lines = append(lines, l)
				}
			}
			if s := strings.TrimSpace(strings.Join(lines, "\n")); strings.HasPrefix(s, "UPDATE evm_blocks") {
				update = s
			}
		}
		if update == "" {
			t.Fatal("no UPDATE evm_blocks in 0050")
		}
		tx, err := e.DB.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback() //nolint:errcheck
		if _, err := tx.Exec(ctx, `UPDATE evm_blocks SET cumulative_txs = 0`); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, update); err != nil {
			t.Fatal(err)
		}
		want := recordedBlocks(t, e)
		for _, b := range want {
			var got int64
			if err := tx.QueryRow(ctx, `SELECT cumulative_txs FROM evm_blocks WHERE chain_key = 'C' AND number = $1`, num(b.BlockNumber)).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != b.CumulativeTransactions {
				t.Errorf("block %s: backfilled %d, recorded %s", b.BlockNumber, got, b.CumulativeTransactions)
			}
		}
	})
}
