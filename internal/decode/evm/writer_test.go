package evm

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/permafrost-dev/permafrost/internal/devnet/indextest"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// SQLite numbers $N parameters by first appearance, so block columns must
// take their numbers in the first row and repeat them after.
func TestInsertStatements(t *testing.T) {
	spec := newInsert("t", []column{bText("chain_key"), cText("a"), bInt("block_number"), cBlob("d")}, "ON CONFLICT DO NOTHING")
	tests := []struct {
		name, got, want string
	}{
		{"one row", spec.values(1), "INSERT OR FAIL INTO t (chain_key, a, block_number, d) VALUES ($1,$2,$3,$4) ON CONFLICT DO NOTHING"},
		{"three rows", spec.values(3), "INSERT OR FAIL INTO t (chain_key, a, block_number, d) VALUES ($1,$2,$3,$4),($1,$5,$3,$6),($1,$7,$3,$8) ON CONFLICT DO NOTHING"},
		{"postgres one row", spec.pgOne, "INSERT INTO t (chain_key, a, block_number, d) VALUES ($1,$2,$3,$4) ON CONFLICT DO NOTHING"},
		{"postgres arrays", spec.unnest, "INSERT INTO t (chain_key, a, block_number, d) SELECT $1::text, u.a, $2::bigint, u.d" +
			" FROM unnest($3::text[], $4::bytea[]) AS u(a, d) ON CONFLICT DO NOTHING"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got  %s\nwant %s", tt.got, tt.want)
			}
		})
	}
	r := rowSet{spec: spec, blockArgs: []any{"C", int64(7)}, args: []any{"x", []byte{1}, "y", []byte(nil)}}
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(r.fullRow(nil, 1)); got != "[C y 7 []]" {
		t.Errorf("fullRow(1) = %s", got)
	}
	r.args = append(r.args, "z")
	if r.check() == nil {
		t.Error("check accepted a partial row")
	}
}

// An indexer started on a database that already holds part of the chain (a
// restart) reads the stored balances it has not cached; one that indexes from
// genesis knows every balance and reads none. Both must write the same rows.
func TestRestartedIndexerMatchesOneRun(t *testing.T) {
	gen, blocks := generated(7, 120)
	newIx := func(t *testing.T) *Indexer { return genIndexer(t, gen) }
	tables := []string{
		"SELECT address, balance, block_number FROM evm_native_balances ORDER BY 1",
		"SELECT address, block_number, balance FROM evm_native_balance_history ORDER BY 1, 2",
		"SELECT holder, erc_type, token, token_id, balance, block_number FROM evm_token_balances ORDER BY 1, 2, 3, 4",
		"SELECT holder, erc_type, token, token_id, block_number, balance FROM evm_token_balance_history ORDER BY 1, 2, 3, 4, 5",
		"SELECT token, token_id, owner, owner_block, first_block FROM evm_nft_tokens ORDER BY 1, 2",
		"SELECT address, erc_type, erc_type_block, block_number FROM evm_contracts ORDER BY 1",
		"SELECT COUNT(*), SUM(tx_index), SUM(block_number) FROM evm_address_txs",
	}
	storetest.ForEachBackend(t, func(t *testing.T, one *store.DB) {
		indextest.Apply(t, one, newIx(t), blocks, 25)
		want := dumpTables(t, one, tables)

		restarted := sameBackend(t, one)
		indextest.Apply(t, restarted, newIx(t), blocks[:60], 25)
		indextest.Apply(t, restarted, newIx(t), blocks[60:], 25)
		got := dumpTables(t, restarted, tables)
		for i := range tables {
			if got[i] != want[i] {
				t.Errorf("%s differs after a restart (%d vs %d bytes)", tables[i], len(got[i]), len(want[i]))
			}
		}
		if !strings.Contains(want[0], "\n") {
			t.Fatal("no native balances indexed")
		}
	})
}

// The enrichment sets a contract's erc_type from calls (token metadata)
// as soon as it sees the contract, often before any Transfer event of it
// is indexed; the indexer must still record the block whose events first
// showed the type, so that a database built while following the chain (the
// enrichment first) equals one indexed from scratch (the events first).
// Found by the live-network suite (internal/testing/livenet).
func TestErcTypeBlockIndependentOfEnrichment(t *testing.T) {
	gen, blocks := generated(11, 120)
	const q = "SELECT address, erc_type, erc_type_block FROM evm_contracts ORDER BY 1"
	storetest.ForEachBackend(t, func(t *testing.T, one *store.DB) {
		ctx := context.Background()
		indextest.Apply(t, one, genIndexer(t, gen), blocks, 25)
		want := dumpTables(t, one, []string{q})[0]

		// The split: the block before the first one whose events typed a
		// contract created earlier (the generator deploys its tokens with
		// no event).
		var first int64
		if err := one.QueryRowContext(ctx, `SELECT COALESCE(MIN(erc_type_block), 0) FROM evm_contracts
			WHERE chain_key = 'gen' AND erc_type_block > block_number`).Scan(&first); err != nil {
			t.Fatal(err)
		}
		rows, err := one.QueryContext(ctx, `SELECT address, erc_type FROM evm_contracts
			WHERE chain_key = 'gen' AND block_number < $1 AND erc_type_block >= $1`, first)
		if err != nil {
			t.Fatal(err)
		}
		late := map[string]string{}
		for rows.Next() {
			var a, typ string
			if err := rows.Scan(&a, &typ); err != nil {
				t.Fatal(err)
			}
			late[a] = typ
		}
		rows.Close()
		if first == 0 || len(late) == 0 {
			t.Fatal("the generated chain has no contract typed by its events after it was created")
		}
		split := 0
		for split < len(blocks) && int64(blocks[split].Height) < first {
			split++
		}

		followed := sameBackend(t, one)
		indextest.Apply(t, followed, genIndexer(t, gen), blocks[:split], 25)
		for a, typ := range late {
			// What the enrichment's applyToken writes (erc_type only where unknown).
			if _, err := followed.ExecContext(ctx, `UPDATE evm_contracts SET erc_type = CASE WHEN erc_type = '' THEN $1 ELSE erc_type END
				WHERE chain_key = 'gen' AND address = $2`, typ, a); err != nil {
				t.Fatal(err)
			}
		}
		indextest.Apply(t, followed, genIndexer(t, gen), blocks[split:], 25)
		if got := dumpTables(t, followed, []string{q})[0]; got != want {
			t.Errorf("evm_contracts differs when the enrichment typed %d contracts first:\ngot  %s\nwant %s", len(late), got, want)
		}
	})
}

// generated is the generator seeded with seed after n blocks of 20 txs, and
// those blocks.
func generated(seed int64, n int) (*Generator, []ingest.RawBlock) {
	gen := NewGenerator(seed, 20)
	blocks := make([]ingest.RawBlock, 0, n)
	for i := 0; i < n; i++ {
		blocks = append(blocks, gen.Next())
	}
	return gen, blocks
}

// genIndexer is an indexer of gen's chain ("gen", from its genesis alloc).
func genIndexer(t *testing.T, gen *Generator) *Indexer {
	t.Helper()
	ix, err := NewIndexer(Config{ChainKey: "gen", ChainID: big.NewInt(43112), GenesisAlloc: gen.Alloc()})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// sameBackend opens a fresh database of db's backend.
func sameBackend(t *testing.T, db *store.DB) *store.DB {
	t.Helper()
	return storetest.Open(t, storetest.DSNFor(t, map[store.Dialect]string{store.SQLite: "sqlite", store.Postgres: "postgres"}[db.Dialect()]))
}

func dumpTables(t *testing.T, db *store.DB, queries []string) []string {
	t.Helper()
	out := make([]string, len(queries))
	for i, q := range queries {
		rows, err := db.QueryContext(context.Background(), q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for j := range vals {
			ptrs[j] = &vals[j]
		}
		var b strings.Builder
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				if raw, ok := v.([]byte); ok {
					v = string(raw)
				}
				fmt.Fprintf(&b, "%v|", v)
			}
			b.WriteByte('\n')
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		out[i] = b.String()
	}
	return out
}

// indexedTables dumps what an EVM indexer writes, in key order, to compare
// two ways of writing the same blocks.
var indexedTables = []string{
	"SELECT address, balance, block_number FROM evm_native_balances ORDER BY 1",
	"SELECT address, block_number, balance FROM evm_native_balance_history ORDER BY 1, 2",
	"SELECT holder, erc_type, token, token_id, balance, block_number FROM evm_token_balances ORDER BY 1, 2, 3, 4",
	"SELECT holder, erc_type, token, token_id, block_number, balance FROM evm_token_balance_history ORDER BY 1, 2, 3, 4, 5",
	"SELECT token, token_id, erc_type, owner, owner_block, first_block FROM evm_nft_tokens ORDER BY 1, 2",
	"SELECT number, hash, tx_count, cumulative_txs FROM evm_blocks ORDER BY 1",
	"SELECT block_number, tx_index, hash, from_addr, to_addr, value, status FROM evm_txs ORDER BY 1, 2",
	"SELECT block_number, log_index, batch_index, token, from_addr, to_addr, token_id, value FROM evm_transfers ORDER BY 1, 2, 3",
	"SELECT address, block_number, tx_index FROM evm_address_txs ORDER BY 1, 2, 3",
	"SELECT token, token_id, block_number, owner FROM evm_nft_owner_history ORDER BY 1, 2, 3",
	"SELECT block_number, log_index, tx_index, address, topic0, topic1, topic2, data FROM evm_logs ORDER BY 1, 2",
	"SELECT address, creation_kind, tx_hash, block_number, erc_type, erc_type_block FROM evm_contracts ORDER BY 1",
}

// Current balances and NFT ids' rows are written once per batch (Flush),
// from what the batch's blocks left; on PostgreSQL the per-block tables are
// loaded by one COPY per batch; on SQLite the address-keyed tables' rows are
// kept and inserted in key order (sqliteSorted). Whatever the batch size,
// with caches emptied while keys wait for the flush (they must not be read
// back from the table then), with kept rows written before the batch ends,
// and with a batch abandoned halfway (Discard), the tables must be those of
// one block per transaction with every row written with its block, and each
// current balance its history's last.
func TestBalancesFlushedPerBatch(t *testing.T) {
	gen, blocks := generated(11, 120)
	tables := indexedTables
	// Rows whose current balance or block is not the history's last.
	stale := []string{
		`SELECT COUNT(*) FROM evm_native_balances b WHERE b.balance <> (SELECT h.balance FROM evm_native_balance_history h
			WHERE h.chain_key = b.chain_key AND h.address = b.address ORDER BY h.block_number DESC LIMIT 1)
			OR b.block_number <> (SELECT MAX(h.block_number) FROM evm_native_balance_history h
			WHERE h.chain_key = b.chain_key AND h.address = b.address)`,
		`SELECT COUNT(*) FROM evm_token_balances b WHERE b.balance <> (SELECT h.balance FROM evm_token_balance_history h
			WHERE h.chain_key = b.chain_key AND h.holder = b.holder AND h.erc_type = b.erc_type AND h.token = b.token
			AND h.token_id = b.token_id ORDER BY h.block_number DESC LIMIT 1)`,
	}
	// sorted: SQLite's kept rows written every sorted rows (0: the default;
	// -1: none kept, each block's rows written with it).
	newIx := func(t *testing.T, cached, sorted int) *Indexer {
		ix := genIndexer(t, gen)
		if cached > 0 {
			ix.w.maxCached = cached
		}
		if sorted != 0 {
			ix.w.sq.max = max(sorted, 0)
		}
		return ix
	}
	// streamed: on PostgreSQL the kept rows go to the server in lots of
	// lot rows, queued mid-batch (pgWriter.send); with readBack every block
	// reads its predecessor's evm_blocks row back (cumulate, as after a
	// restart): a row a queued COPY wrote, which the read must wait for.
	streamed := func(lot int, readBack bool) func(t *testing.T, db *store.DB, ix *Indexer) {
		return func(t *testing.T, db *store.DB, ix *Indexer) {
			ix.w.pg.streamRows = lot
			ctx := context.Background()
			for i := 0; i < len(blocks); i += 40 {
				tx, err := db.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, b := range blocks[i:min(i+40, len(blocks))] {
					if readBack && b.Height > 0 {
						ix.w.cumAt = -1
					}
					if err := ix.Apply(ctx, tx, b); err != nil {
						t.Fatalf("apply %d: %v", b.Height, err)
					}
				}
				if err := ingest.Flush(ctx, ix, tx); err != nil {
					t.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// overlapped: batches of 40 as the pipeline overlaps them on
	// PostgreSQL (ingest.Pipeline.overlaps): each batch's commit runs on its
	// own (CommitAsync, held back 100 ms by a queued sleep) while the next
	// batch is applied on another connection (BeginAfter), whose Flush
	// waits for it. With caches of 3 the next batch reads balances the
	// batch in flight changed: they must come from memory, not from the
	// committed rows (on SQLite the commits are synchronous).
	overlapped := func(t *testing.T, db *store.DB, ix *Indexer) {
		ctx := context.Background()
		var prev *store.Pending
		for i := 0; i < len(blocks); i += 40 {
			tx, err := db.BeginAfter(ctx, prev)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range blocks[i:min(i+40, len(blocks))] {
				if err := ix.Apply(ctx, tx, b); err != nil {
					t.Fatalf("apply %d: %v", b.Height, err)
				}
			}
			if err := prev.Wait(); err != nil {
				t.Fatal(err)
			}
			if err := ingest.Flush(ctx, ix, tx); err != nil {
				t.Fatal(err)
			}
			if db.Dialect() == store.Postgres {
				if err := tx.QueueAtCommit(ctx, func(context.Context, *pgx.Conn) error {
					time.Sleep(100 * time.Millisecond)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			prev = tx.CommitAsync(nil)
		}
		if err := prev.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	storetest.ForEachBackend(t, func(t *testing.T, perBlockDB *store.DB) {
		indextest.Apply(t, perBlockDB, newIx(t, 0, -1), blocks, 1)
		want := dumpTables(t, perBlockDB, tables)
		if !strings.Contains(want[2], "\n") {
			t.Fatal("no token balances indexed")
		}
		var moved int // ERC-721 ids that changed owner after their mint
		if err := perBlockDB.QueryRowContext(context.Background(),
			"SELECT COUNT(*) FROM evm_nft_tokens WHERE owner_block > first_block").Scan(&moved); err != nil || moved == 0 {
			t.Fatalf("%d NFT ids moved after their first block (%v): the merge per batch is not exercised", moved, err)
		}
		cases := []struct {
			name           string
			cached, sorted int
			apply          func(t *testing.T, db *store.DB, ix *Indexer)
		}{
			{"batches of 25", 0, 0, func(t *testing.T, db *store.DB, ix *Indexer) { indextest.Apply(t, db, ix, blocks, 25) }},
			{"batches of 40, caches of 3", 3, 0, func(t *testing.T, db *store.DB, ix *Indexer) { indextest.Apply(t, db, ix, blocks, 40) }},
			{"batches of 60, kept rows written every 50", 0, 50, func(t *testing.T, db *store.DB, ix *Indexer) { indextest.Apply(t, db, ix, blocks, 60) }},
			{"one batch, kept rows written every 7", 0, 7, func(t *testing.T, db *store.DB, ix *Indexer) { indextest.Apply(t, db, ix, blocks, len(blocks)) }},
			{"a batch discarded", 0, 50, func(t *testing.T, db *store.DB, ix *Indexer) {
				indextest.Apply(t, db, ix, blocks[:40], 20)
				ctx := context.Background()
				tx, err := db.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, b := range blocks[40:70] {
					if err := ix.Apply(ctx, tx, b); err != nil {
						t.Fatal(err)
					}
				}
				ix.Discard()
				if err := tx.Rollback(); err != nil {
					t.Fatal(err)
				}
				indextest.Apply(t, db, ix, blocks[40:], 30)
			}},
			{"batches of 40 in lots of 50 rows, caches of 3", 3, 0, streamed(50, false)},
			{"lots of one block, each block reading the last one's row", 0, 0, streamed(1, true)},
			{"batches of 40 overlapping the last one's commit, caches of 3", 3, 0, overlapped},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				db := sameBackend(t, perBlockDB)
				c.apply(t, db, newIx(t, c.cached, c.sorted))
				got := dumpTables(t, db, tables)
				for i := range tables {
					if got[i] != want[i] {
						t.Errorf("%s differs from one block per transaction", tables[i])
					}
				}
				for _, q := range stale {
					var k int
					if err := db.QueryRowContext(context.Background(), q).Scan(&k); err != nil || k != 0 {
						t.Errorf("%d stale current balances (err %v): %s", k, err, q)
					}
				}
			})
		}
	})
}

// Blocks prepared ahead (parsed by Prepare on the pipeline's fetch
// goroutine, their rows collected by Collect on a goroutine of their own
// while the block before is applied: ingest.ApplyBlocks) index exactly as
// blocks Apply parses and collects itself, one block per transaction: no row
// lost, duplicated or moved to another block, and the writer's state
// (balances, NFT owners, contracts known) taken in block order, with Prepare
// on its own goroutine up to two chunks ahead of Apply, as in the pipeline
// (run with -race: nothing of a block collected is shared with the one being
// applied). A batch
// discarded halfway, with the next blocks already prepared, leaks nothing
// into its retry. A block Prepare cannot parse is left to Apply, which
// reports the error.
func TestPreparedBlocksIndexTheSame(t *testing.T) {
	gen, blocks := generated(5, 120)
	const chunk = 20
	// prefetch prepares blocks[from:to] by chunks on its own goroutine,
	// handing each over as the pipeline's prefetcher does; stop ends it.
	// decoded: each block decoded first as the fetch does (DecodeBlock),
	// which Prepare leaves as it is.
	prefetch := func(t *testing.T, ix *Indexer, from, to int, decoded bool) (chunks <-chan []ingest.RawBlock, stop func()) {
		out, done := make(chan []ingest.RawBlock, 1), make(chan struct{})
		go func() {
			defer close(out)
			var facts source.EVMBlockFacts
			for i := from; i < to; i += chunk {
				c := slices.Clone(blocks[i:min(i+chunk, to)])
				for j := range c {
					if !decoded {
						break
					}
					facts = source.EVMBlockFacts{}
					p, err := ix.DecodeBlock(c[j].Bytes, &facts)
					if err != nil || facts.Number != c[j].Height {
						t.Errorf("block %d: decoded as %d: %v", c[j].Height, facts.Number, err)
						return
					}
					c[j].Prepared = p
				}
				ingest.Prepare(ix, c)
				select {
				case out <- c:
				case <-done:
					return
				}
			}
		}()
		return out, func() {
			close(done)
			for range out {
			}
		}
	}
	// apply applies n blocks from chunks in one transaction (n < 0: until
	// the chunks end) and flushes and commits it, or discards it.
	apply := func(t *testing.T, db *store.DB, ix *Indexer, chunks <-chan []ingest.RawBlock, pending *[]ingest.RawBlock, n int, discard bool) int {
		ctx := context.Background()
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		applied := 0
		for n < 0 || applied < n {
			if len(*pending) == 0 {
				c, ok := <-chunks
				if !ok {
					break
				}
				if p := c[0].Prepared.(*preparedBlock); p.rows == nil {
					t.Fatalf("block %d: rows not collected by Prepare", c[0].Height)
				}
				*pending = c
			}
			k := len(*pending)
			if n >= 0 {
				k = min(k, n-applied)
			}
			for _, b := range (*pending)[:k] {
				if b.Prepared == nil {
					t.Fatalf("block %d not prepared", b.Height)
				}
			}
			// Each next block collected while the one before is applied.
			if err := ingest.ApplyBlocks(ctx, tx, ix, (*pending)[:k]); err != nil {
				t.Fatal(err)
			}
			*pending = (*pending)[k:]
			applied += k
		}
		if discard {
			ix.Discard()
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			return applied
		}
		if err := ingest.Flush(ctx, ix, tx); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		return applied
	}
	// run applies blocks[from:] prepared ahead, in batches of batch.
	run := func(t *testing.T, db *store.DB, ix *Indexer, from, batch int, decoded bool) {
		chunks, stop := prefetch(t, ix, from, len(blocks), decoded)
		defer stop()
		var pending []ingest.RawBlock
		for apply(t, db, ix, chunks, &pending, batch, false) == batch {
		}
	}
	storetest.ForEachBackend(t, func(t *testing.T, perBlock *store.DB) {
		reference := genIndexer(t, gen)
		reference.w.sq.max = 0
		indextest.Apply(t, perBlock, reference, blocks, 1)
		want := dumpTables(t, perBlock, indexedTables)
		for i, q := range indexedTables {
			if !strings.Contains(want[i], "\n") {
				t.Fatalf("nothing indexed: %s", q)
			}
		}
		cases := []struct {
			name   string
			cached int
			apply  func(t *testing.T, db *store.DB, ix *Indexer)
		}{
			{"batches of 40", 0, func(t *testing.T, db *store.DB, ix *Indexer) { run(t, db, ix, 0, 40, false) }},
			{"batches of 40, decoded in the fetch", 0, func(t *testing.T, db *store.DB, ix *Indexer) { run(t, db, ix, 0, 40, true) }},
			{"batches of 25 across chunks, caches of 3", 3, func(t *testing.T, db *store.DB, ix *Indexer) { run(t, db, ix, 0, 25, false) }},
			{"a batch discarded with the next chunks prepared", 0, func(t *testing.T, db *store.DB, ix *Indexer) {
				chunks, stop := prefetch(t, ix, 0, len(blocks), false)
				var pending []ingest.RawBlock
				apply(t, db, ix, chunks, &pending, 40, false)
				apply(t, db, ix, chunks, &pending, 30, true)
				stop() // the pipeline fetches and prepares the batch again
				run(t, db, ix, 40, 40, true)
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				db := sameBackend(t, perBlock)
				ix := genIndexer(t, gen)
				if c.cached > 0 {
					ix.w.maxCached = c.cached
				}
				c.apply(t, db, ix)
				got := dumpTables(t, db, indexedTables)
				for i := range indexedTables {
					if got[i] != want[i] {
						t.Errorf("%s differs from one block per transaction, not prepared", indexedTables[i])
					}
				}
			})
		}

		db := sameBackend(t, perBlock)
		ix := genIndexer(t, gen)
		bad := gen.Next()
		bad.Bytes = bad.Bytes[:len(bad.Bytes)/2]
		ix.Prepare(&bad)
		if bad.Prepared != nil {
			t.Fatal("a truncated block was prepared")
		}
		tx, err := db.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback() //nolint:errcheck
		if err := ix.Apply(context.Background(), tx, bad); err == nil {
			t.Fatal("Apply accepted a truncated block")
		}
	})
}
