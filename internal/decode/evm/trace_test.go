package evm

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/devnet/indextest"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// The traced generated chain has value moved inside contract execution
// (wrapper withdrawals paying the caller or a third party, failed payment
// frames). Its expected balances are the generator's own ledger: the coins
// as it moved them, not as the indexer computes them.

func tracedGenerated(seed int64, n int) (*Generator, []ingest.RawBlock) {
	gen := NewTracedGenerator(seed, 20)
	blocks := make([]ingest.RawBlock, 0, n)
	for i := 0; i < n; i++ {
		blocks = append(blocks, gen.Next())
	}
	return gen, blocks
}

// storedBalance is address's balance after block n ("0" without a row).
func storedBalance(t *testing.T, db *store.DB, a common.Address, n int) *big.Int {
	t.Helper()
	return storedDecimal(t, db, `SELECT balance FROM evm_native_balance_history
		WHERE chain_key = 'gen' AND address = $1 AND block_number <= $2 ORDER BY block_number DESC LIMIT 1`, a[:], n)
}

// storedDecimal runs a query of one decimal balance ("0" without a row).
func storedDecimal(t *testing.T, db *store.DB, q string, args ...any) *big.Int {
	t.Helper()
	var s string
	err := db.QueryRowContext(context.Background(), q, args...).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return new(big.Int)
	}
	if err != nil {
		t.Fatal(err)
	}
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("balance %q", s)
	}
	return v
}

func TestTracedGeneratedChain(t *testing.T) {
	const n = 120
	gen, blocks := tracedGenerated(11, n)
	mid, _ := tracedGenerated(11, n/2)
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		indextest.Apply(t, db, genIndexer(t, gen), blocks, 25)
		for _, c := range []struct {
			g      *Generator
			height int
		}{{mid, n/2 - 1}, {gen, n - 1}} {
			for a, want := range c.g.Ledger() {
				if got := storedBalance(t, db, a, c.height); got.Cmp(want) != 0 {
					t.Fatalf("%s after block %d: %s, ledger %s", a.Hex(), c.height, got, want)
				}
			}
		}
		var done, reverted int
		if err := db.QueryRowContext(context.Background(), `SELECT
				COALESCE(SUM(CASE WHEN reverted = 0 THEN 1 ELSE 0 END), 0), COALESCE(SUM(reverted), 0)
			FROM evm_internal_txs WHERE chain_key = 'gen'`).Scan(&done, &reverted); err != nil {
			t.Fatal(err)
		}
		if done == 0 || reverted == 0 {
			t.Fatalf("internal txs: %d moved value, %d reverted", done, reverted)
		}
		facts := untrustedFacts(t, db)
		if _, ok := facts[string(allAddr)]; ok || len(facts) != 1 {
			t.Fatalf("traced chain: untrusted facts %v, want only value in contracts", facts)
		}
		// The wrapper's token balances (WETH9-style Deposit/Withdrawal, no
		// Transfer) are the generator's: deposits and withdrawals paid to the
		// caller or a third party count, a Withdrawal whose payment failed
		// (no value backs it) does not.
		for _, c := range []struct {
			g      *Generator
			height int
		}{{mid, n/2 - 1}, {gen, n - 1}} {
			wrapped := c.g.Wrapped()
			if len(wrapped) < 10 {
				t.Fatalf("only %d accounts ever wrapped", len(wrapped))
			}
			for a, want := range wrapped {
				if got := storedTokenBalance(t, db, gen.Wrapper(), a, c.height); got.Cmp(want) != 0 {
					t.Fatalf("wrapped balance of %s after block %d: %s, generator %s", a.Hex(), c.height, got, want)
				}
			}
		}
		if toks := untrustedTokens(t, db); len(toks) != 0 {
			t.Fatalf("traced chain: untrusted tokens %v", toks)
		}
		// The look-alike's Deposit events (no value backs them) are no
		// token movements.
		var lookalike int
		if err := db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM evm_token_balance_history WHERE chain_key = 'gen' AND token = $1`,
			gen.Lookalike().Bytes()).Scan(&lookalike); err != nil || lookalike != 0 {
			t.Fatalf("look-alike Deposit events applied: %d balance rows (%v)", lookalike, err)
		}
		if !anyBlockHas(blocks, gen.Lookalike()) {
			t.Fatal("the chain has no look-alike Deposit event")
		}
		var xfers int
		if err := db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM evm_transfers WHERE chain_key = 'gen' AND token = $1`,
			gen.Wrapper().Bytes()).Scan(&xfers); err != nil || xfers != 0 {
			t.Fatalf("wrapper deposits/withdrawals listed as %d transfers (%v): they are not Transfer events", xfers, err)
		}
	})
}

// storedTokenBalance is holder's ERC-20 balance of token after block n.
func storedTokenBalance(t *testing.T, db *store.DB, token, holder common.Address, n int) *big.Int {
	t.Helper()
	return storedDecimal(t, db, `SELECT balance FROM evm_token_balance_history
		WHERE chain_key = 'gen' AND holder = $1 AND erc_type = 'ERC-20' AND token = $2 AND token_id = '' AND block_number <= $3
		ORDER BY block_number DESC LIMIT 1`, holder[:], token[:], n)
}

// untrustedTokens are the chain's evm_untrusted_tokens rows: token -> since.
func untrustedTokens(t *testing.T, db *store.DB) map[common.Address]int64 {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT token, since_block FROM evm_untrusted_tokens WHERE chain_key = 'gen'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[common.Address]int64{}
	for rows.Next() {
		var a []byte
		var since int64
		if err := rows.Scan(&a, &since); err != nil {
			t.Fatal(err)
		}
		out[common.BytesToAddress(a)] = since
	}
	return out
}

// untrustedFacts are the chain's evm_untrusted_balances rows: address -> since.
func untrustedFacts(t *testing.T, db *store.DB) map[string]int64 {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT address, since_block FROM evm_untrusted_balances WHERE chain_key = 'gen'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var a []byte
		var since int64
		if err := rows.Scan(&a, &since); err != nil {
			t.Fatal(err)
		}
		out[string(a)] = since
	}
	return out
}

// Without traces the same chain's computed balances miss the wrapper's
// payments, to callers and to third parties alike: from the first block that
// ran code while the wrapper held value, no computed balance is vouched for
// (the API asks the node), and every wrong one is wrong only from there.
func TestUntracedGeneratedChain(t *testing.T) {
	const n = 120
	gen, blocks := tracedGenerated(11, n)
	for i := range blocks {
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(blocks[i].Bytes, &doc); err != nil {
			t.Fatal(err)
		}
		delete(doc, "traces")
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		blocks[i].Bytes = b
	}
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		indextest.Apply(t, db, genIndexer(t, gen), blocks, 25)
		facts := untrustedFacts(t, db)
		since, ok := facts[string(allAddr)]
		if !ok || facts[string(hotAddr)] > since {
			t.Fatalf("untrusted facts %v", facts)
		}
		wrong := 0
		for a, want := range gen.Ledger() {
			if storedBalance(t, db, a, n-1).Cmp(want) != 0 {
				wrong++
			}
		}
		if wrong == 0 {
			t.Fatal("no computed balance is wrong: the chain moves no value internally")
		}
		// Before the first untraced block that could move value unseen, the
		// computed balances are right: the ledger at that height says so.
		before, _ := tracedGenerated(11, int(since))
		for a, want := range before.Ledger() {
			if got := storedBalance(t, db, a, int(since)-1); got.Cmp(want) != 0 {
				t.Fatalf("%s after block %d (before the untrusted mark %d): %s, ledger %s", a.Hex(), since-1, since, got, want)
			}
		}
		// A Withdrawal cannot be checked without traces: the wrapper token is
		// untrusted from the first block that has one; its deposits before
		// (paid by the tx itself) are exact.
		first := -1
		for i := range blocks {
			if bytes.Contains(blocks[i].Bytes, []byte(topicWithdrawal.Hex()[2:])) {
				first = i
				break
			}
		}
		// The look-alike's Deposit (no value at top level, no traces to
		// look further) cannot be checked either: untrusted from its first.
		firstLA := -1
		for i := range blocks {
			if anyBlockHas(blocks[i:i+1], gen.Lookalike()) {
				firstLA = i
				break
			}
		}
		toks := untrustedTokens(t, db)
		if first < 0 || firstLA < 0 || len(toks) != 2 || toks[gen.Wrapper()] != int64(first) || toks[gen.Lookalike()] != int64(firstLA) {
			t.Fatalf("untrusted tokens %v, want the wrapper %s from block %d and the look-alike %s from %d", toks,
				gen.Wrapper().Hex(), first, gen.Lookalike().Hex(), firstLA)
		}
		wbefore, _ := tracedGenerated(11, first)
		for a, want := range wbefore.Wrapped() {
			if got := storedTokenBalance(t, db, gen.Wrapper(), a, first-1); got.Cmp(want) != 0 {
				t.Fatalf("wrapped balance of %s after block %d: %s, generator %s", a.Hex(), first-1, got, want)
			}
		}
	})
}

// Hostile traces fail the block with an error, never a panic or a silent
// half-applied block.
func TestHostileTraces(t *testing.T) {
	gen := NewTracedGenerator(5, 4)
	var blk ingest.RawBlock
	for i := 0; i < 4; i++ {
		blk = gen.Next()
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(blk.Bytes, &doc); err != nil {
		t.Fatal(err)
	}
	var traces []map[string]json.RawMessage
	if err := json.Unmarshal(doc["traces"], &traces); err != nil || len(traces) != 4 {
		t.Fatalf("traces: %v (%d)", err, len(traces))
	}
	deep := `{"type":"CALL","from":"0x0000000000000000000000000000000000000001","to":"0x0000000000000000000000000000000000000002","calls":[`
	nested := strings.Repeat(deep, 1200) + strings.Repeat(`]}`, 1200)
	for _, tt := range []struct {
		name string
		edit func(tr []map[string]json.RawMessage) any
	}{
		{"fewer traces", func(tr []map[string]json.RawMessage) any { return tr[:3] }},
		{"more traces", func(tr []map[string]json.RawMessage) any { return append(tr, tr[0]) }},
		{"swapped", func(tr []map[string]json.RawMessage) any { tr[0], tr[1] = tr[1], tr[0]; return tr }},
		{"null result", func(tr []map[string]json.RawMessage) any { tr[2]["result"] = json.RawMessage(`null`); return tr }},
		{"not a frame", func(tr []map[string]json.RawMessage) any { tr[2]["result"] = json.RawMessage(`[1]`); return tr }},
		{"bad value", func(tr []map[string]json.RawMessage) any {
			tr[2]["result"] = json.RawMessage(`{"type":"CALL","from":"0x0000000000000000000000000000000000000001","to":"0x0000000000000000000000000000000000000002","calls":[{"type":"CALL","from":"0x0000000000000000000000000000000000000001","to":"0x0000000000000000000000000000000000000002","value":"-1"}]}`)
			return tr
		}},
		{"frame without from", func(tr []map[string]json.RawMessage) any {
			tr[2]["result"] = json.RawMessage(`{"type":"CALL","from":"0x0000000000000000000000000000000000000001","to":"0x0000000000000000000000000000000000000002","calls":[{"type":"CALL","to":"0x0000000000000000000000000000000000000002"}]}`)
			return tr
		}},
		{"too deep", func(tr []map[string]json.RawMessage) any { tr[2]["result"] = json.RawMessage(nested); return tr }},
		{"not an array", func([]map[string]json.RawMessage) any { return map[string]int{"a": 1} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var cp []map[string]json.RawMessage
			json.Unmarshal(doc["traces"], &cp) //nolint:errcheck // decoded above
			edited, err := json.Marshal(tt.edit(cp))
			if err != nil {
				t.Fatal(err)
			}
			d := map[string]json.RawMessage{"block": doc["block"], "receipts": doc["receipts"], "traces": edited}
			body, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			var b block
			if err := b.parse(body); err == nil {
				t.Fatalf("accepted traces %.200s", edited)
			}
		})
	}
}

// A successful call to a minting precompile (subnet-evm's native minter)
// creates value no frame shows: from the first block with such a call, no
// computed balance is vouched for. Any address can stand for the minter in
// the generated chain: here the contract its wrapper withdrawals go through.
func TestMinterCallsUntrust(t *testing.T) {
	const n = 60
	gen, blocks := tracedGenerated(11, n)
	var doc struct {
		Block struct {
			Transactions []struct {
				Hash string `json:"hash"`
				To   string `json:"to"`
			} `json:"transactions"`
		} `json:"block"`
		Receipts []struct {
			TransactionHash string `json:"transactionHash"`
			Status          string `json:"status"`
		} `json:"receipts"`
	}
	// The minter: the callee of the first successful call in a block past
	// the first few; the expected mark is its first successful call.
	var minter common.Address
	want := int64(-1)
	for i := range blocks {
		if err := json.Unmarshal(blocks[i].Bytes, &doc); err != nil {
			t.Fatal(err)
		}
		for j, tx := range doc.Block.Transactions {
			ok := j < len(doc.Receipts) && doc.Receipts[j].Status == "0x1"
			switch {
			case !ok || tx.To == "":
			case minter == (common.Address{}) && i >= 5:
				minter, want = common.HexToAddress(tx.To), int64(blocks[i].Height)
			case common.HexToAddress(tx.To) == minter && int64(blocks[i].Height) < want:
				want = int64(blocks[i].Height)
			}
		}
	}
	if want < 0 {
		t.Fatal("no successful call in the generated chain")
	}
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ix, err := NewIndexer(Config{ChainKey: "gen", ChainID: big.NewInt(43112), GenesisAlloc: gen.Alloc(), Minters: []common.Address{minter}})
		if err != nil {
			t.Fatal(err)
		}
		indextest.Apply(t, db, ix, blocks, 25)
		facts := untrustedFacts(t, db)
		if since, ok := facts[string(allAddr)]; !ok || since > want {
			t.Fatalf("untrusted facts %v, want every balance untrusted from block %d at the latest", facts, want)
		}
	})
}

// anyBlockHas reports whether one of the blocks mentions address a.
func anyBlockHas(blocks []ingest.RawBlock, a common.Address) bool {
	for i := range blocks {
		if bytes.Contains(blocks[i].Bytes, []byte(strings.ToLower(a.Hex()[2:]))) {
			return true
		}
	}
	return false
}
