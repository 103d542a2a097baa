package catomic_test

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	pblock "github.com/ava-labs/avalanchego/vms/platformvm/block"
	ptxs "github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/decode/catomic"
	"github.com/permafrost-dev/permafrost/internal/decode/primary"
	"github.com/permafrost-dev/permafrost/internal/decode/xchain"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/devnet/indextest"
	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// cBlock is a recorded C block with atomic txs.
type cBlock struct {
	blk   catomic.Block
	extra []byte
}

// recordedCBlocks returns the C blocks whose blockExtraData is not empty.
func recordedCBlocks(t testing.TB) []cBlock {
	t.Helper()
	var out []cBlock
	for _, e := range devnet.LoadRPC(t, devnet.CRPC) {
		if e.Method != "eth_getBlockByNumber" || !strings.HasSuffix(string(e.Params), "true]") || e.Response.Result == nil {
			continue
		}
		var r struct {
			Number, Hash, Timestamp string
			BlockExtraData          string `json:"blockExtraData"`
		}
		devnet.Result(t, e, &r)
		if r.BlockExtraData == "" || r.BlockExtraData == "0x" {
			continue
		}
		n, ok1 := new(big.Int).SetString(strings.TrimPrefix(r.Number, "0x"), 16)
		ts, ok2 := new(big.Int).SetString(strings.TrimPrefix(r.Timestamp, "0x"), 16)
		extra := common.FromHex(r.BlockExtraData)
		if !ok1 || !ok2 || len(extra) == 0 {
			t.Fatalf("block %s: bad number/time/extra", r.Number)
		}
		out = append(out, cBlock{blk: catomic.Block{Height: n.Uint64(), Hash: r.Hash, Time: ts.Int64()}, extra: extra})
	}
	return out
}

// recordedAtomicTxs maps tx ID -> (bytes, block height) from avax.getAtomicTx.
func recordedAtomicTxs(t testing.TB) map[string]struct {
	raw    []byte
	height string
} {
	t.Helper()
	out := map[string]struct {
		raw    []byte
		height string
	}{}
	for _, e := range devnet.LoadRPC(t, devnet.CAvax) {
		if e.Method != "avax.getAtomicTx" || e.Response.Result == nil {
			continue
		}
		var p struct{ TxID string }
		var r struct{ Tx, BlockHeight string }
		devnet.Params(t, e, &p)
		devnet.Result(t, e, &r)
		out[p.TxID] = struct {
			raw    []byte
			height string
		}{devnet.HexBytes(t, r.Tx), r.BlockHeight}
	}
	return out
}

func TestDecodeRecordedAtomicTxs(t *testing.T) {
	blocks := recordedCBlocks(t)
	want := recordedAtomicTxs(t)
	types := map[string]string{}
	for _, w := range devnet.LoadWorkload[map[string]any](t) {
		if w.Chain == "C" && w.Extra["atomic"] == true {
			types[w.TxID] = w.Type
		}
	}
	if len(blocks) != 5 || len(want) != 5 || len(types) != 5 {
		t.Fatalf("recorded: %d blocks, %d txs, %d workload txs; want 5 each", len(blocks), len(want), len(types))
	}
	seen := 0
	for _, b := range blocks {
		txs, err := catomic.Decode(b.extra)
		if err != nil {
			t.Fatalf("block %d: %v", b.blk.Height, err)
		}
		if len(txs) != 1 {
			t.Fatalf("block %d: %d atomic txs, want 1", b.blk.Height, len(txs))
		}
		for _, tx := range txs {
			id := tx.ID().String()
			rec, ok := want[id]
			if !ok {
				t.Fatalf("block %d: tx %s not among avax.getAtomicTx answers", b.blk.Height, id)
			}
			if !bytes.Equal(tx.Bytes(), rec.raw) {
				t.Errorf("tx %s: bytes differ from avax.getAtomicTx", id)
			}
			if rec.height != fmt.Sprint(b.blk.Height) {
				t.Errorf("tx %s in block %d, node says %s", id, b.blk.Height, rec.height)
			}
			var typ string
			switch tx.UnsignedAtomicTx.(type) {
			case *catomic.UnsignedImportTx:
				typ = "ImportTx"
			case *catomic.UnsignedExportTx:
				typ = "ExportTx"
			}
			if typ != types[id] {
				t.Errorf("tx %s decoded as %s, workload says %s", id, typ, types[id])
			}
			// Before ApricotPhase5 a block carried one tx encoded alone: the
			// signed bytes of a tx are exactly that form.
			single, err := catomic.DecodeExtraData(rec.raw, false)
			if err != nil || len(single) != 1 || single[0].ID() != tx.ID() {
				t.Errorf("tx %s as pre-AP5 extra data: %v", id, err)
			}
			seen++
		}
	}
	if seen != 5 {
		t.Errorf("decoded %d txs", seen)
	}
}

func TestDecodeHostile(t *testing.T) {
	good := recordedCBlocks(t)[0].extra
	tests := []struct {
		name  string
		extra []byte
		batch bool
	}{
		{"empty list", []byte{0, 0, 0, 0, 0, 0}, true},
		{"bad version", append([]byte{0, 1}, good[2:]...), true},
		{"truncated", good[:len(good)-10], true},
		{"trailing bytes", append(append([]byte{}, good...), 0), true},
		{"unknown tx type", func() []byte {
			b := append([]byte{}, good...)
			b[2+4+3] = 42 // first tx's type ID, after version and list length
			return b
		}(), true},
		{"huge list length", []byte{0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0}, true},
		{"batch as single", good, false},
		{"garbage", []byte("not an atomic tx"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if txs, err := catomic.DecodeExtraData(tc.extra, tc.batch); err == nil {
				t.Errorf("decoded %d txs from %s", len(txs), tc.name)
			}
		})
	}
	if txs, err := catomic.Decode(nil); err != nil || txs != nil {
		t.Errorf("empty extra data: %v %v", txs, err)
	}
}

// applyPAtomic applies the atomic side of the recorded P blocks, as the
// P-chain indexer would (exports create UTXOs on X/C, imports spend them), so
// the X and C sides can be checked against the node's sourceChain answers.
func applyPAtomic(t testing.TB, db *store.DB, g *genesis.Genesis) {
	t.Helper()
	ctx := context.Background()
	chains, err := catomic.NewChainKeys(g)
	if err != nil {
		t.Fatal(err)
	}
	w := primary.Writer{HRP: g.HRP}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	n := 0
	seen := map[uint64]bool{}
	for _, e := range devnet.LoadRPC(t, devnet.P) {
		if e.Method != "platform.getBlockByHeight" || !strings.Contains(string(e.Params), `"hex"`) || e.Response.Result == nil {
			continue
		}
		var r struct{ Block string }
		devnet.Result(t, e, &r)
		blk, err := pblock.Parse(pblock.Codec, devnet.HexBytes(t, r.Block))
		if err != nil {
			t.Fatal(err)
		}
		if seen[blk.Height()] { // one line asks for height 1 again, array-wrapped
			continue
		}
		seen[blk.Height()] = true
		n++
		var ts int64
		if bb, ok := blk.(pblock.BanffBlock); ok {
			ts = bb.Timestamp().Unix()
		}
		for _, ptx := range blk.Txs() {
			txID := ptx.ID()
			var assets []ids.ID
			var addrs []string
			switch u := ptx.Unsigned.(type) {
			case *ptxs.ExportTx:
				dest, _ := chains.Key(u.DestinationChain)
				for i, out := range u.ExportedOutputs {
					utxo := &avax.UTXO{UTXOID: avax.UTXOID{TxID: txID, OutputIndex: uint32(len(u.Outs) + i)}, Asset: out.Asset, Out: out.Out}
					b, err := ptxs.Codec.Marshal(ptxs.CodecVersion, utxo)
					if err != nil {
						t.Fatal(err)
					}
					typ, err := catomic.UTXOType(dest, out.Out)
					if err != nil {
						t.Fatal(err)
					}
					if err := w.PutUTXO(ctx, tx, utxo, b, primary.Created{CreatedChain: "P", ChainKey: dest, Height: blk.Height(), Time: ts, UTXOType: typ}); err != nil {
						t.Fatal(err)
					}
					f, err := primary.OutputFields(out.Out)
					if err != nil {
						t.Fatal(err)
					}
					owners, err := primary.Addresses(g.HRP, f.Owners)
					if err != nil {
						t.Fatal(err)
					}
					if err := catomic.LinkLateConsumer(ctx, tx, w, utxo.InputID(), out.AssetID(), owners); err != nil {
						t.Fatal(err)
					}
					assets, addrs = append(assets, out.AssetID()), append(addrs, owners...)
				}
			case *ptxs.ImportTx:
				for i, in := range u.ImportedInputs {
					owners, err := catomic.OwnersOf(ctx, tx, in.InputID())
					if err != nil {
						t.Fatal(err)
					}
					if err := w.SpendUTXO(ctx, tx, &in.UTXOID, primary.Spent{TxID: txID.String(), ChainKey: "P", Height: blk.Height(), Time: ts,
						InputIndex: len(u.Ins) + i, AssetID: in.AssetID().String(), Amount: in.In.Amount()}); err != nil {
						t.Fatal(err)
					}
					assets, addrs = append(assets, in.AssetID()), append(addrs, owners...)
				}
			}
			if err := w.LinkTx(ctx, tx, "P", txID.String(), ts, assets, addrs); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n != 42 {
		t.Fatalf("P blocks = %d, want 42", n)
	}
}

func applyC(t testing.TB, db *store.DB, a *catomic.Applier, blocks []cBlock) map[string][]catomic.BalanceChange {
	t.Helper()
	ctx := context.Background()
	out := map[string][]catomic.BalanceChange{}
	for _, b := range blocks {
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := a.ApplyBlock(ctx, tx, b.blk, b.extra)
		if err != nil {
			tx.Rollback()
			t.Fatalf("C block %d: %v", b.blk.Height, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		for _, c := range ch {
			out[c.TxID.String()] = append(out[c.TxID.String()], c)
		}
	}
	return out
}

// snapshot dumps the shared tables in a fixed order, to compare indexing orders.
func snapshot(t testing.TB, db *store.DB) string {
	t.Helper()
	var sb strings.Builder
	for _, q := range []string{
		`SELECT utxo_id, tx_id, output_index, created_chain, chain_key, asset_id, amount, fx_type, utxo_type, addresses,
			threshold, locktime, utxo_bytes, created_height, consumed_tx, consumed_chain, consumed_height, consumed_input_index
			FROM utxos ORDER BY utxo_id`,
		`SELECT address, chain_key, spent, amount, utxo_id FROM utxo_addresses ORDER BY address, chain_key, utxo_id`,
		`SELECT tx_id, chain_key, height, tx_index, block_id, timestamp, tx_type, memo, source_chain, destination_chain,
			credentials, tx_bytes FROM px_txs ORDER BY tx_id`,
		`SELECT asset_id, chain_key, timestamp, tx_id FROM px_tx_assets ORDER BY asset_id, chain_key, timestamp, tx_id`,
		`SELECT address, chain_key, timestamp, tx_id FROM px_tx_addresses ORDER BY address, chain_key, timestamp, tx_id`,
	} {
		rows, err := db.QueryContext(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				if b, ok := v.([]byte); ok {
					v = fmt.Sprintf("%x", b)
				}
				fmt.Fprintf(&sb, "%v|", v)
			}
			sb.WriteByte('\n')
		}
		rows.Close()
		sb.WriteString("--\n")
	}
	return sb.String()
}

func TestAtomicUTXOsAnyOrder(t *testing.T) {
	g := indextest.Genesis(t)
	xBlocks := indextest.XBlocks(t)
	cBlocks := recordedCBlocks(t)
	work := devnet.LoadWorkload[map[string]any](t)
	netw := devnet.LoadNetwork(t)
	keyOf := map[string]string{}
	for k, id := range netw.BlockchainIDs {
		keyOf[id] = k
	}

	orders := [][]string{{"X", "C", "P"}, {"C", "P", "X"}, {"P", "X", "C"}}
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			var first string
			for oi, order := range orders {
				db := storetest.Open(t, storetest.DSNFor(t, backend))
				ix, err := xchain.NewIndexer(g, nil)
				if err != nil {
					t.Fatal(err)
				}
				a, err := catomic.New(g, nil)
				if err != nil {
					t.Fatal(err)
				}
				var changes map[string][]catomic.BalanceChange
				for _, chain := range order {
					switch chain {
					case "X":
						indextest.Apply(t, db, ix, xBlocks, 1)
					case "C":
						changes = applyC(t, db, a, cBlocks)
					case "P":
						applyPAtomic(t, db, g)
					}
				}
				snap := snapshot(t, db)
				if oi == 0 {
					first = snap
					checkAgainstRecording(t, db, work, netw.AvaxAssetID, keyOf, changes)
				} else if snap != first {
					t.Errorf("order %v gives other rows than %v:\n%s", order, orders[0], firstDiff(first, snap))
				}
			}
		})
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return "- " + al[i] + "\n+ " + bl[i]
		}
	}
	return fmt.Sprintf("%d vs %d lines", len(al), len(bl))
}

func checkAgainstRecording(t *testing.T, db *store.DB, work []workloadTx, avaxID string,
	keyOf map[string]string, changes map[string][]catomic.BalanceChange) {
	ctx := context.Background()
	chainOfFile := map[string]string{devnet.X: "X", devnet.P: "P", devnet.CAvax: "C"}

	t.Run("sourceChain utxos", func(t *testing.T) {
		n, nonEmpty := 0, 0
		for file, chain := range chainOfFile {
			for _, e := range devnet.LoadRPC(t, file) {
				if !strings.HasSuffix(e.Method, ".getUTXOs") || e.Response.Result == nil {
					continue
				}
				var p struct {
					Addresses   []string
					SourceChain string
				}
				devnet.Params(t, e, &p)
				if p.SourceChain == "" {
					continue
				}
				var r struct{ UTXOs []string }
				devnet.Result(t, e, &r)
				want := map[string][]byte{}
				for _, h := range r.UTXOs {
					b := devnet.HexBytes(t, h)
					want[utxoIDOf(t, b)] = b
				}
				got := unspentUTXOs(t, db, chain, p.SourceChain, p.Addresses)
				if len(got) != len(want) {
					t.Errorf("%s %v from %s: %d UTXOs, node %d", e.Method, p.Addresses, p.SourceChain, len(got), len(want))
				}
				for id, b := range want {
					if !bytes.Equal(got[id], b) {
						t.Errorf("%s %v from %s: UTXO %s = %x, node %x", e.Method, p.Addresses, p.SourceChain, id, got[id], b)
					}
				}
				n++
				if len(want) > 0 {
					nonEmpty++
				}
			}
		}
		if n != 8 || nonEmpty != 1 {
			t.Errorf("compared %d sourceChain answers (%d non-empty), want 8 (1)", n, nonEmpty)
		}
	})

	t.Run("atomic txs", func(t *testing.T) {
		recorded := recordedAtomicTxs(t)
		for _, w := range work {
			if w.Chain != "C" || w.Extra["atomic"] != true {
				continue
			}
			var typ, chain, src, dst string
			var height int64
			var raw []byte
			if err := db.QueryRowContext(ctx, `SELECT tx_type, chain_key, height, source_chain, destination_chain, tx_bytes
				FROM px_txs WHERE tx_id = $1`, w.TxID).Scan(&typ, &chain, &height, &src, &dst, &raw); err != nil {
				t.Fatalf("tx %s: %v", w.TxID, err)
			}
			rec := recorded[w.TxID]
			if typ != w.Type || chain != "C" || fmt.Sprint(height) != rec.height || !bytes.Equal(raw, rec.raw) {
				t.Errorf("tx %s: %s on %s at %d, want %s on C at %s (bytes equal %v)", w.TxID, typ, chain, height, w.Type, rec.height, bytes.Equal(raw, rec.raw))
			}
			switch w.Type {
			case "ImportTx":
				source := w.Extra["sourceChain"].(string)
				if keyOf[src] != source {
					t.Errorf("import %s: source %s, want %s", w.TxID, src, source)
				}
				// Every spent UTXO is the source chain's export, created and consumed once.
				var n int
				if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM utxos WHERE consumed_tx = $1 AND consumed_chain = 'C'
					AND chain_key = 'C' AND created_chain = $2 AND fx_type = 'secp256k1fx.TransferOutput'`, w.TxID, source).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n != 1 {
					t.Errorf("import %s spends %d UTXOs exported by %s, want 1", w.TxID, n, source)
				}
				checkChanges(t, w, changes[w.TxID], false, avaxID)
			case "ExportTx":
				dest := w.Extra["destinationChain"].(string)
				if keyOf[dst] != dest {
					t.Errorf("export %s: destination %s, want %s", w.TxID, dst, dest)
				}
				var n int
				if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM utxos WHERE tx_id = $1 AND created_chain = 'C'
					AND chain_key = $2 AND consumed_chain = $2 AND consumed_tx <> ''`, w.TxID, dest).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n != 1 {
					t.Errorf("export %s: %d UTXOs created on C and imported by %s, want 1", w.TxID, n, dest)
				}
				checkChanges(t, w, changes[w.TxID], true, avaxID)
			}
			// Every bech32 address the workload names is linked to the tx on C.
			for _, addr := range w.Addresses {
				if strings.HasPrefix(addr, "0x") {
					continue
				}
				var n int
				if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM px_tx_addresses WHERE address = $1 AND chain_key = 'C' AND tx_id = $2`,
					addr[2:], w.TxID).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n != 1 {
					t.Errorf("tx %s not linked to %s", w.TxID, addr)
				}
			}
		}
	})

	t.Run("imports of C exports", func(t *testing.T) {
		// The C-side of the X imports: linked to the exported UTXOs' owners on X too.
		for _, w := range work {
			if w.Chain != "X" || w.Type != "ImportTx" || w.Extra["sourceChain"] != "C" {
				continue
			}
			var n int
			if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM utxos WHERE consumed_tx = $1 AND created_chain = 'C' AND fx_type <> ''`,
				w.TxID).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Errorf("X import %s spends %d C exports", w.TxID, n)
			}
		}
	})
}

// checkChanges verifies the EVM effects of an atomic tx: the workload's EVM
// address is credited (import) or debited (export) in AVAX, wei = nAVAX×10^9.
func checkChanges(t *testing.T, w workloadTx, ch []catomic.BalanceChange, export bool, avaxID string) {
	t.Helper()
	if len(ch) != 1 {
		t.Fatalf("tx %s: %d balance changes", w.TxID, len(ch))
	}
	c := ch[0]
	var evm string
	for _, a := range w.Addresses {
		if strings.HasPrefix(a, "0x") {
			evm = a
		}
	}
	want := new(big.Int).Mul(new(big.Int).SetUint64(c.Amount), big.NewInt(1_000_000_000))
	if export {
		want.Neg(want)
	}
	if c.Address != common.HexToAddress(evm) || c.Export != export || c.AssetID.String() != avaxID || c.Wei == nil || c.Wei.Cmp(want) != 0 || c.Amount == 0 {
		t.Errorf("tx %s: change %+v, want %s export=%v wei %s", w.TxID, c, evm, export, want)
	}
}

// unspentUTXOs: see the copy in internal/decode/xchain/indexer_test.go.
func unspentUTXOs(t testing.TB, db *store.DB, chainKey, createdChain string, addrs []string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, a := range addrs {
		rows, err := db.QueryContext(context.Background(), `SELECT u.utxo_id, u.utxo_bytes FROM utxo_addresses a
			JOIN utxos u ON u.utxo_id = a.utxo_id
			WHERE a.address = $1 AND a.chain_key = $2 AND a.spent = $3 AND u.created_chain = $4 AND u.consumed_tx = ''`,
			a[strings.IndexByte(a, '-')+1:], chainKey, false, createdChain)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			var b []byte
			if err := rows.Scan(&id, &b); err != nil {
				t.Fatal(err)
			}
			out[id] = b
		}
		rows.Close()
	}
	return out
}

func utxoIDOf(t testing.TB, b []byte) string {
	t.Helper()
	if len(b) < 38 {
		t.Fatalf("short utxo %x", b)
	}
	txID, err := ids.ToID(b[2:34])
	if err != nil {
		t.Fatal(err)
	}
	idx := uint32(b[34])<<24 | uint32(b[35])<<16 | uint32(b[36])<<8 | uint32(b[37])
	return txID.Prefix(uint64(idx)).String()
}

func TestUndecodableExtraDataStoredRaw(t *testing.T) {
	g := indextest.Genesis(t)
	good := recordedCBlocks(t)[0]
	extra := append([]byte{}, good.extra...)
	extra[2+4+3] = 42 // the first tx's type ID: no such atomic tx type
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, err := catomic.New(g, nil)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := a.ApplyBlock(ctx, tx, good.blk, extra)
		if err != nil || len(ch) != 0 {
			t.Fatalf("ApplyBlock: %v, %d changes", err, len(ch))
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		var typ, block string
		var raw []byte
		if err := db.QueryRowContext(ctx, `SELECT tx_type, block_id, tx_bytes FROM px_txs WHERE chain_key = 'C'`).Scan(&typ, &block, &raw); err != nil {
			t.Fatal(err)
		}
		if typ != "UNKNOWN" || block != good.blk.Hash || !bytes.Equal(raw, extra) {
			t.Errorf("stored %s in %s (%d bytes)", typ, block, len(raw))
		}
	})
}
