package metrics

import (
	"context"
	"fmt"
	"maps"
	"math/big"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// xfer is one scripted token movement.
type xfer struct {
	token, typ, from, to, id string
	value                    string // decimal; ERC-721: "1"
}

// scriptIndexer writes what the EVM indexer writes for token transfers
// (evm_blocks, evm_transfers, evm_token_balances with ERC-721 per-holder
// counts under token_id ” and ERC-1155 balances per id, the zero address
// untracked), for scripted blocks, so edge cases the recording lacks (burns,
// balances a lying token drives negative, amounts past 2^64) reach the
// rollup through the real store.
type scriptIndexer struct {
	blocks map[uint64][]xfer
	bal    map[[4]string]*big.Int // holder, type, token, id
}

func (s *scriptIndexer) DerivedTables() []string {
	return []string{"evm_blocks", "evm_transfers", "evm_token_balances"}
}

func (s *scriptIndexer) Apply(ctx context.Context, tx *store.Tx, b ingest.RawBlock) error {
	xs := s.blocks[b.Height]
	if _, err := tx.Exec(ctx, `INSERT INTO evm_blocks (chain_key, number, hash, parent_hash, timestamp, tx_count, gas_used,
		gas_limit, miner, size_bytes, state_root, extra_data) VALUES ('C',$1,$2,$3,$4,$5,0,0,$3,0,$3,'0x')`,
		int64(b.Height), store.Hex(b.Hash), []byte{}, b.Timestamp, int64(len(xs))); err != nil {
		return err
	}
	touched := map[[4]string]bool{}
	for i, x := range xs {
		if _, err := tx.Exec(ctx, `INSERT INTO evm_transfers (chain_key, block_number, log_index, batch_index, tx_index,
			tx_hash, block_time, token, erc_type, from_addr, to_addr, token_id, value) VALUES ('C',$1,$2,0,$2,$3,$4,$5,$6,$7,$8,$9,$10)`,
			int64(b.Height), i, []byte{}, b.Timestamp, store.Hex(x.token), x.typ, store.Hex(x.from), store.Hex(x.to), x.id, x.value); err != nil {
			return err
		}
		v, _ := new(big.Int).SetString(x.value, 10)
		id := x.id
		if x.typ == "ERC-721" {
			id = ""
		}
		for _, side := range []struct {
			addr string
			sign int64
		}{{x.from, -1}, {x.to, 1}} {
			if side.addr == zeroAddress {
				continue
			}
			k := [4]string{side.addr, x.typ, x.token, id}
			if s.bal[k] == nil {
				s.bal[k] = new(big.Int)
			}
			s.bal[k].Add(s.bal[k], new(big.Int).Mul(v, big.NewInt(side.sign)))
			touched[k] = true
		}
	}
	for k := range touched {
		if _, err := tx.Exec(ctx, `INSERT INTO evm_token_balances (chain_key, holder, erc_type, token, token_id, balance, block_number)
			VALUES ('C',$1,$2,$3,$4,$5,$6) ON CONFLICT (chain_key, holder, erc_type, token, token_id)
			DO UPDATE SET balance = excluded.balance, block_number = excluded.block_number`,
			store.Hex(k[0]), k[1], store.Hex(k[2]), k[3], s.bal[k].String(), int64(b.Height)); err != nil {
			return err
		}
	}
	return nil
}

// applyBatch indexes blocks (height -> time) with ix in one transaction, in
// height order, and flushes the batch.
func applyBatch(t *testing.T, db *store.DB, ix ingest.Indexer, blocks map[uint64]int64) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, h := range slices.Sorted(maps.Keys(blocks)) {
		if err := ix.Apply(ctx, tx, ingest.RawBlock{Height: h, Hash: fmt.Sprintf("0x%064x", h), Timestamp: blocks[h]}); err != nil {
			t.Fatalf("block %d: %v", h, err)
		}
	}
	if err := ingest.Flush(ctx, ix, tx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func addr(n int) string { return fmt.Sprintf("0x%040x", n) }

// holderState reads metrics_nft_holders as token -> holder -> units.
func holderState(t *testing.T, db *store.DB) map[string]map[string]string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT token, holder, units_key FROM metrics_nft_holders WHERE chain_key = 'C'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]map[string]string{}
	for rows.Next() {
		var tok, h, k string
		if err := rows.Scan(&tok, &h, &k); err != nil {
			t.Fatal(err)
		}
		d, err := ParseUnitsKey(k)
		if err != nil {
			t.Fatal(err)
		}
		if out[tok] == nil {
			out[tok] = map[string]string{}
		}
		out[tok][h] = d
	}
	return out
}

// recomputeHolders is the definition, evaluated from scratch: per (contract,
// holder), the sum of the positive ERC-721 and ERC-1155 balances.
func recomputeHolders(t *testing.T, db *store.DB) map[string]map[string]string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT token, holder, balance FROM evm_token_balances
		WHERE chain_key = 'C' AND erc_type IN ('ERC-721', 'ERC-1155')`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	sums := map[string]map[string]*big.Int{}
	for rows.Next() {
		var tok, h, bal string
		if err := rows.Scan(store.ScanHex(&tok), store.ScanHex(&h), &bal); err != nil {
			t.Fatal(err)
		}
		v, ok := new(big.Int).SetString(bal, 10)
		if !ok {
			t.Fatalf("balance %q", bal)
		}
		if v.Sign() <= 0 {
			continue
		}
		if sums[tok] == nil {
			sums[tok] = map[string]*big.Int{}
		}
		if sums[tok][h] == nil {
			sums[tok][h] = new(big.Int)
		}
		sums[tok][h].Add(sums[tok][h], v)
	}
	out := map[string]map[string]string{}
	for tok, hs := range sums {
		out[tok] = map[string]string{}
		for h, v := range hs {
			out[tok][h] = v.String()
		}
	}
	return out
}

// checkCollections compares metrics_nft_collections with the holder rows.
func checkCollections(t *testing.T, db *store.DB, holders map[string]map[string]string) {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT token, holders, units FROM metrics_nft_collections WHERE chain_key = 'C'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var tok, units string
		var n int64
		if err := rows.Scan(&tok, &n, &units); err != nil {
			t.Fatal(err)
		}
		seen[tok] = true
		sum := new(big.Int)
		for _, u := range holders[tok] {
			v, _ := new(big.Int).SetString(u, 10)
			sum.Add(sum, v)
		}
		if n != int64(len(holders[tok])) || units != sum.String() {
			t.Errorf("collection %s: %d holders, %s units; holder rows say %d, %s", tok, n, units, len(holders[tok]), sum)
		}
	}
	for tok := range holders {
		if !seen[tok] {
			t.Errorf("collection %s has holders but no totals row", tok)
		}
	}
}

func TestHolderRollupScripted(t *testing.T) {
	nft, multi := addr(0xa721), addr(0xb1155)
	h1, h2, h3 := addr(1), addr(2), addr(3)
	big30 := "1000000000000000000000000000000" // 10^30: past 2^64
	script := map[uint64][]xfer{
		1: { // mints
			{nft, "ERC-721", zeroAddress, h1, "1", "1"},
			{nft, "ERC-721", zeroAddress, h1, "2", "1"},
			{nft, "ERC-721", zeroAddress, h2, "3", "1"},
		},
		2: { // a transfer and a burn: h2 holds nothing any more
			{nft, "ERC-721", h1, h3, "1", "1"},
			{nft, "ERC-721", h2, zeroAddress, "3", "1"},
		},
		3: { // ERC-1155: units summed over ids, amounts past 2^64
			{multi, "ERC-1155", zeroAddress, h1, "1", "5"},
			{multi, "ERC-1155", zeroAddress, h2, "2", big30},
			{multi, "ERC-1155", zeroAddress, h2, "1", "3"},
		},
		4: { // h2 gives away its big id; a lying token drives h1 negative on id 9
			{multi, "ERC-1155", h2, h3, "2", big30},
			{multi, "ERC-1155", h1, h3, "9", "7"},
			{multi, "ERC-1155", h3, h3, "1", "0"}, // self-transfer of nothing
		},
		5: {}, // no transfers: nothing changes
		6: { // everyone leaves the ERC-721 collection
			{nft, "ERC-721", h1, zeroAddress, "2", "1"},
			{nft, "ERC-721", h3, zeroAddress, "1", "1"},
		},
	}
	want := map[uint64]map[string]map[string]string{
		1: {nft: {h1: "2", h2: "1"}},
		2: {nft: {h1: "1", h3: "1"}},
		3: {nft: {h1: "1", h3: "1"}, multi: {h1: "5", h2: "1000000000000000000000000000003"}},
		4: {nft: {h1: "1", h3: "1"}, multi: {h1: "5", h2: "3", h3: "1000000000000000000000000000007"}},
		5: {nft: {h1: "1", h3: "1"}, multi: {h1: "5", h2: "3", h3: "1000000000000000000000000000007"}},
		6: {multi: {h1: "5", h2: "3", h3: "1000000000000000000000000000007"}},
	}
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := time.Unix(1_800_000_000, 0)
		ix := WithRollup("C", KindEVM, &scriptIndexer{blocks: script, bal: map[[4]string]*big.Int{}},
			WithClock(func() time.Time { return clock }))
		for h := uint64(0); h <= 6; h++ {
			applyBatch(t, db, ix, map[uint64]int64{h: 1_700_000_000 + int64(h)*10})
			got := holderState(t, db)
			if h > 0 && !reflect.DeepEqual(got, want[h]) {
				t.Errorf("after block %d: holders %v, want %v", h, got, want[h])
			}
			if re := recomputeHolders(t, db); !reflect.DeepEqual(got, re) {
				t.Errorf("after block %d: holders %v, recomputed from balances %v", h, got, re)
			}
			checkCollections(t, db, got)
		}
		// The emptied ERC-721 collection keeps a zero totals row.
		c, err := LoadCollection(ctx, db, "C", nft)
		if err != nil || c.Holders != 0 || c.Units != "0" {
			t.Errorf("emptied collection: %+v, %v", c, err)
		}
		// The listing order: units descending, then address.
		hs, err := Holders(ctx, db, "C", multi, nil, 10)
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, h := range hs {
			order = append(order, h.Address+"="+h.Units)
		}
		wantOrder := []string{h3 + "=1000000000000000000000000000007", h1 + "=5", h2 + "=3"}
		if !reflect.DeepEqual(order, wantOrder) {
			t.Errorf("order %v, want %v", order, wantOrder)
		}
		// Rollups of a P/X-style chain are untouched by the EVM holder logic,
		// and tx counts are the block rows' (here: transfers per block).
		var txs int64
		if err := db.QueryRowContext(ctx, `SELECT SUM(tx_count) FROM metrics_tx_hourly WHERE chain_key = 'C'`).Scan(&txs); err != nil || txs != 13 {
			t.Errorf("hourly tx total %d (%v), want 13", txs, err)
		}
		var updated int64
		if err := db.QueryRowContext(ctx, `SELECT updated_at FROM metrics_chains WHERE chain_key = 'C'`).Scan(&updated); err != nil || updated != clock.Unix() {
			t.Errorf("updated_at %d (%v), want the injected clock %d", updated, err, clock.Unix())
		}
	})
}

// An unknown chain kind fails the block (the rollup would be wrong) rather
// than being skipped.
func TestRollupUnknownKind(t *testing.T) {
	db := storetest.Open(t, storetest.SQLiteDSN(t))
	ctx := context.Background()
	ix := WithRollup("Q", "BTC", &scriptIndexer{blocks: map[uint64][]xfer{}, bal: map[[4]string]*big.Int{}})
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := ix.Apply(ctx, tx, ingest.RawBlock{Height: 0, Hash: "0x00", Timestamp: 1}); err == nil {
		t.Fatal("unknown kind accepted")
	}
}

// A block the inner indexer wrote no row for is an error, not a silent zero.
func TestRollupMissingBlockRow(t *testing.T) {
	db := storetest.Open(t, storetest.SQLiteDSN(t))
	ctx := context.Background()
	ix := WithRollup("P", KindP, &scriptIndexer{blocks: map[uint64][]xfer{}, bal: map[[4]string]*big.Int{}})
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	// scriptIndexer writes evm_blocks, so the P rollup finds no px_blocks row.
	if err := ix.Apply(ctx, tx, ingest.RawBlock{Height: 0, Hash: "0x00", Timestamp: 1}); err == nil {
		t.Fatal("missing px_blocks row accepted")
	}
}
