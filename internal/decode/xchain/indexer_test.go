package xchain

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/formatting/address"

	"github.com/permafrost-dev/permafrost/internal/decode/catomic"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/devnet/indextest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// unspentUTXOs returns the unspent UTXOs (id -> codec bytes) spendable on
// chainKey by any of addrs and created on createdChain: the node's
// getUTXOs without sourceChain (createdChain == chainKey) or with it.
func unspentUTXOs(t testing.TB, db *store.DB, chainKey, createdChain string, addrs []string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, a := range addrs {
		rows, err := db.QueryContext(context.Background(), `SELECT u.utxo_id, u.utxo_bytes FROM utxo_addresses a
			JOIN utxos u ON u.utxo_id = a.utxo_id
			WHERE a.address = $1 AND a.chain_key = $2 AND a.spent = $3 AND u.created_chain = $4 AND u.consumed_tx = ''`,
			stripChain(a), chainKey, false, createdChain)
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

func stripChain(a string) string {
	if i := strings.IndexByte(a, '-'); i >= 0 {
		return a[i+1:]
	}
	return a
}

func TestIndexRecordedXChain(t *testing.T) {
	g := indextest.Genesis(t)
	blocks := indextest.XBlocks(t)
	rpc := devnet.LoadRPC(t, devnet.X)
	work := devnet.LoadWorkload[map[string]any](t)
	netw := devnet.LoadNetwork(t)

	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ix, err := NewIndexer(g, nil)
		if err != nil {
			t.Fatal(err)
		}
		indextest.Apply(t, db, ix, blocks, 1)

		t.Run("blocks", func(t *testing.T) {
			for _, e := range rpc {
				if e.Method != "avm.getBlockByHeight" || !strings.Contains(string(e.Params), `"json"`) {
					continue
				}
				var r struct {
					Block struct {
						ID       string      `json:"id"`
						ParentID string      `json:"parentID"`
						Height   json.Number `json:"height"`
						Time     json.Number `json:"time"`
						Txs      []struct {
							ID string `json:"id"`
						} `json:"txs"`
					}
				}
				devnet.Result(t, e, &r)
				var id, parent, txIDs string
				var ts int64
				var n int
				if err := db.QueryRowContext(ctx, `SELECT block_id, parent_id, timestamp, tx_count, tx_ids FROM px_blocks
					WHERE chain_key = 'X' AND height = $1`, mustInt(t, r.Block.Height)).Scan(&id, &parent, &ts, &n, &txIDs); err != nil {
					t.Fatalf("block %s: %v", r.Block.Height, err)
				}
				want := make([]string, 0, len(r.Block.Txs))
				for _, tx := range r.Block.Txs {
					want = append(want, tx.ID)
				}
				wantJSON, _ := json.Marshal(want)
				if id != r.Block.ID || parent != r.Block.ParentID || ts != mustInt(t, r.Block.Time) || n != len(want) || txIDs != string(wantJSON) {
					t.Errorf("block %s = %s %s %d %d %s, want %s %s %s %d %s", r.Block.Height, id, parent, ts, n, txIDs,
						r.Block.ID, r.Block.ParentID, r.Block.Time, len(want), wantJSON)
				}
			}
		})

		t.Run("tx types", func(t *testing.T) {
			seen := 0
			for _, w := range work {
				if w.Chain != "X" {
					continue
				}
				seen++
				var typ, chain, src, dst, memo string
				if err := db.QueryRowContext(ctx, `SELECT tx_type, chain_key, source_chain, destination_chain, memo FROM px_txs WHERE tx_id = $1`,
					w.TxID).Scan(&typ, &chain, &src, &dst, &memo); err != nil {
					t.Fatalf("tx %s (%d): %v", w.TxID, w.Seq, err)
				}
				if typ != w.Type || chain != "X" {
					t.Errorf("tx %d %s: type %s on %s, want %s on X", w.Seq, w.TxID, typ, chain, w.Type)
				}
				if s, ok := w.Extra["sourceChain"].(string); ok && src != netw.BlockchainIDs[s] {
					t.Errorf("tx %d: source chain %s, want %s", w.Seq, src, netw.BlockchainIDs[s])
				}
				if s, ok := w.Extra["destinationChain"].(string); ok && dst != netw.BlockchainIDs[s] {
					t.Errorf("tx %d: destination chain %s, want %s", w.Seq, dst, netw.BlockchainIDs[s])
				}
				if m, ok := w.Extra["memo"].(string); ok && memo != "0x"+hex.EncodeToString([]byte(m)) {
					t.Errorf("tx %d: memo %s, want hex of %q", w.Seq, memo, m)
				}
			}
			var count int
			if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM px_txs WHERE chain_key = 'X'`).Scan(&count); err != nil {
				t.Fatal(err)
			}
			if seen != 20 || count != seen+1 { // + the genesis AVAX CreateAssetTx
				t.Errorf("workload X txs %d, indexed %d", seen, count)
			}
			var typ string
			var height int64
			if err := db.QueryRowContext(ctx, `SELECT tx_type, height FROM px_txs WHERE tx_id = $1`, netw.AvaxAssetID).Scan(&typ, &height); err != nil {
				t.Fatal(err)
			}
			if typ != TypeCreateAsset || height != -1 {
				t.Errorf("genesis AVAX tx: %s at %d", typ, height)
			}
		})

		t.Run("tx bytes", func(t *testing.T) {
			n := 0
			for _, e := range rpc {
				if e.Method != "avm.getTx" || !strings.Contains(string(e.Params), `"hex"`) || e.Response.Result == nil {
					continue
				}
				var p struct{ TxID string }
				var r struct{ Tx string }
				devnet.Params(t, e, &p)
				devnet.Result(t, e, &r)
				var got []byte
				if err := db.QueryRowContext(ctx, `SELECT tx_bytes FROM px_txs WHERE tx_id = $1`, p.TxID).Scan(&got); err != nil {
					t.Fatalf("tx %s: %v", p.TxID, err)
				}
				if !bytes.Equal(got, devnet.HexBytes(t, r.Tx)) {
					t.Errorf("tx %s bytes differ from avm.getTx", p.TxID)
				}
				n++
			}
			if n != 21 {
				t.Errorf("compared %d txs, want 21", n)
			}
		})

		t.Run("utxos", func(t *testing.T) {
			n := 0
			for _, e := range rpc {
				if e.Method != "avm.getUTXOs" {
					continue
				}
				var p struct {
					Addresses   []string
					Limit       int
					SourceChain string
					StartIndex  *struct{ Address, UTXO string }
				}
				devnet.Params(t, e, &p)
				if p.SourceChain != "" || p.StartIndex != nil || p.Limit != 1024 {
					continue // sourceChain needs the P exports: tested in catomic; pages below
				}
				var r struct{ UTXOs []string }
				devnet.Result(t, e, &r)
				got := unspentUTXOs(t, db, "X", "X", p.Addresses)
				want := map[string][]byte{}
				for _, h := range r.UTXOs {
					b := devnet.HexBytes(t, h)
					want[utxoIDOf(t, b)] = b
				}
				compareUTXOs(t, p.Addresses, got, want)
				n++
			}
			if n != 17 {
				t.Errorf("compared %d getUTXOs answers, want 17", n)
			}
		})

		t.Run("utxo pages", func(t *testing.T) {
			var pages [][]string
			var addr string
			for _, e := range rpc {
				if e.Method != "avm.getUTXOs" {
					continue
				}
				var p struct {
					Addresses []string
					Limit     int
				}
				devnet.Params(t, e, &p)
				if p.Limit != 3 {
					continue
				}
				addr = p.Addresses[0]
				var r struct{ UTXOs []string }
				devnet.Result(t, e, &r)
				var page []string
				for _, h := range r.UTXOs {
					page = append(page, utxoIDOf(t, devnet.HexBytes(t, h)))
				}
				pages = append(pages, page)
			}
			if len(pages) != 2 {
				t.Fatalf("pages = %d", len(pages))
			}
			all := unspentUTXOs(t, db, "X", "X", []string{addr})
			nodeOrder := append(append([]string{}, pages[0]...), pages[1]...)
			if len(nodeOrder) != len(all) {
				t.Fatalf("pages hold %d UTXOs, index %d", len(nodeOrder), len(all))
			}
			// The node's per-address index is a linked list with the newest
			// UTXO at its head: pages run newest block first.
			last := int64(1 << 62)
			for _, id := range nodeOrder {
				if _, ok := all[id]; !ok {
					t.Fatalf("paged UTXO %s not indexed as unspent", id)
				}
				var h int64
				if err := db.QueryRowContext(ctx, `SELECT created_height FROM utxos WHERE utxo_id = $1`, id).Scan(&h); err != nil {
					t.Fatal(err)
				}
				if h > last {
					t.Errorf("node page order %v is not newest first (height %d after %d)", nodeOrder, h, last)
				}
				last = h
			}
		})

		t.Run("balances", func(t *testing.T) {
			now := uint64(netw.RecordedAt.Unix())
			n := 0
			for _, e := range rpc {
				switch e.Method {
				case "avm.getBalance":
					var p struct{ Address, AssetID string }
					var r struct {
						Balance json.Number
						UTXOIDs []struct {
							TxID        string      `json:"txID"`
							OutputIndex json.Number `json:"outputIndex"`
						} `json:"utxoIDs"`
					}
					devnet.Params(t, e, &p)
					devnet.Result(t, e, &r)
					asset := p.AssetID
					if asset == "AVAX" {
						asset = netw.AvaxAssetID
					}
					bal, utxos := balances(t, db, p.Address, now)
					var want []string
					for _, u := range r.UTXOIDs {
						want = append(want, u.TxID+":"+u.OutputIndex.String())
					}
					sort.Strings(want)
					got := utxos[asset]
					sort.Strings(got)
					if strconv.FormatUint(bal[asset], 10) != r.Balance.String() || strings.Join(got, ",") != strings.Join(want, ",") {
						t.Errorf("getBalance %s %s = %d %v, node %s %v", p.Address, p.AssetID, bal[asset], got, r.Balance, want)
					}
					n++
				case "avm.getAllBalances":
					var p struct{ Address string }
					var r struct {
						Balances []struct {
							Asset   string
							Balance json.Number
						}
					}
					devnet.Params(t, e, &p)
					devnet.Result(t, e, &r)
					bal, _ := balances(t, db, p.Address, now)
					want := map[string]string{}
					for _, b := range r.Balances {
						a := b.Asset
						if a == "AVAX" {
							a = netw.AvaxAssetID
						}
						want[a] = b.Balance.String()
					}
					got := map[string]string{}
					for a, v := range bal {
						if v > 0 {
							got[a] = strconv.FormatUint(v, 10)
						}
					}
					if !equalMaps(got, want) {
						t.Errorf("getAllBalances %s = %v, node %v", p.Address, got, want)
					}
					n++
				}
			}
			if n != 32 {
				t.Errorf("compared %d balance answers, want 32", n)
			}
		})

		t.Run("assets", func(t *testing.T) {
			wantKind := map[string][2]string{
				netw.AvaxAssetID:                      {AssetFungible, CapFixed},
				netw.CreatedAssets["fixedCap_DFC"]:    {AssetFungible, CapFixed},
				netw.CreatedAssets["variableCap_DVC"]: {AssetFungible, CapVariable},
				netw.CreatedAssets["nft_DART"]:        {AssetNFT, CapVariable},
			}
			n := 0
			for _, e := range rpc {
				if e.Method != "avm.getAssetDescription" || e.Response.Result == nil {
					continue
				}
				var r struct {
					AssetID, Name, Symbol string
					Denomination          json.Number
				}
				devnet.Result(t, e, &r)
				var name, symbol, typ, capacity, created string
				var denom int64
				if err := db.QueryRowContext(ctx, `SELECT name, symbol, denomination, asset_type, cap, created_tx FROM assets
					WHERE asset_id = $1`, r.AssetID).Scan(&name, &symbol, &denom, &typ, &capacity, &created); err != nil {
					t.Fatalf("asset %s: %v", r.AssetID, err)
				}
				if name != r.Name || symbol != r.Symbol || denom != mustInt(t, r.Denomination) || created != r.AssetID {
					t.Errorf("asset %s = %s %s %d, node %s %s %s", r.AssetID, name, symbol, denom, r.Name, r.Symbol, r.Denomination)
				}
				if k := wantKind[r.AssetID]; k != [2]string{typ, capacity} {
					t.Errorf("asset %s (%s) is %s/%s, want %v", r.AssetID, r.Symbol, typ, capacity, k)
				}
				n++
			}
			if n != 5 {
				t.Errorf("compared %d assets, want 5", n)
			}
		})

		t.Run("credentials", func(t *testing.T) {
			// Every credential signing a spent UTXO recovers to one of its owners.
			rows, err := db.QueryContext(ctx, `SELECT u.utxo_id, u.addresses, u.consumed_input_index, t.credentials
				FROM utxos u JOIN px_txs t ON t.tx_id = u.consumed_tx WHERE u.consumed_chain = 'X' AND u.created_chain = 'X'`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			n := 0
			for rows.Next() {
				var utxoID, addrs, creds string
				var idx int
				if err := rows.Scan(&utxoID, &addrs, &idx, &creds); err != nil {
					t.Fatal(err)
				}
				var owners []string
				var cs [][]catomic.Credential
				if err := json.Unmarshal([]byte(addrs), &owners); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal([]byte(creds), &cs); err != nil {
					t.Fatal(err)
				}
				if idx < 0 || idx >= len(cs) || len(cs[idx]) == 0 {
					t.Fatalf("utxo %s: credential %d of %d", utxoID, idx, len(cs))
				}
				for _, c := range cs[idx] {
					if sig, err := base64.StdEncoding.DecodeString(c.Signature); err != nil || len(sig) != secp256k1.SignatureLen {
						t.Errorf("utxo %s: signature %q", utxoID, c.Signature)
					}
					pkBytes, err := base64.StdEncoding.DecodeString(c.PublicKey)
					if err != nil {
						t.Fatal(err)
					}
					pk, err := secp256k1.ToPublicKey(pkBytes)
					if err != nil {
						t.Fatalf("utxo %s: public key: %v", utxoID, err)
					}
					a, _ := address.FormatBech32(g.HRP, pk.Address().Bytes())
					if !contains(owners, a) {
						t.Errorf("utxo %s: signer %s not among owners %v", utxoID, a, owners)
					}
				}
				n++
			}
			if n < 20 {
				t.Errorf("checked %d spends", n)
			}
		})

		t.Run("utxo types", func(t *testing.T) {
			rows, err := db.QueryContext(ctx, `SELECT chain_key, fx_type, utxo_type, COUNT(*) FROM utxos WHERE created_chain = 'X'
				GROUP BY chain_key, fx_type, utxo_type ORDER BY chain_key, fx_type, utxo_type`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var got []string
			for rows.Next() {
				var c, fx, ut string
				var n int
				if err := rows.Scan(&c, &fx, &ut, &n); err != nil {
					t.Fatal(err)
				}
				got = append(got, c+" "+fx+" "+ut)
			}
			want := []string{
				"C secp256k1fx.TransferOutput transfer",
				"P secp256k1fx.TransferOutput TRANSFER",
				"X nftfx.MintOutput mint",
				"X nftfx.TransferOutput nft",
				"X secp256k1fx.MintOutput mint",
				"X secp256k1fx.TransferOutput transfer",
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("utxo kinds:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})

		t.Run("links", func(t *testing.T) {
			// Every X address the workload names for a tx, and its asset, are linked to it.
			for _, w := range work {
				if w.Chain != "X" {
					continue
				}
				for _, a := range w.Addresses {
					var n int
					if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM px_tx_addresses WHERE address = $1 AND chain_key = 'X' AND tx_id = $2`,
						stripChain(a), w.TxID).Scan(&n); err != nil {
						t.Fatal(err)
					}
					// Imports' senders live on the source chain; their X owners are the recipients.
					if n != 1 && !(w.Type == "ImportTx" && !strings.HasPrefix(a, "X-")) {
						t.Errorf("tx %d %s not linked to %s", w.Seq, w.TxID, a)
					}
				}
				if asset, ok := w.Extra["assetID"].(string); ok {
					var n int
					if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM px_tx_assets WHERE asset_id = $1 AND tx_id = $2`,
						asset, w.TxID).Scan(&n); err != nil {
						t.Fatal(err)
					}
					if n != 1 {
						t.Errorf("tx %d not linked to asset %s", w.Seq, asset)
					}
				}
			}
		})
	})
}

// balances computes avm.getBalance's answer (includePartial false): unspent
// X secp256k1fx.TransferOutputs with the address as sole owner, unlocked.
func balances(t testing.TB, db *store.DB, addr string, now uint64) (map[string]uint64, map[string][]string) {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT u.asset_id, u.amount, u.addresses, u.locktime, u.tx_id, u.output_index
		FROM utxo_addresses a JOIN utxos u ON u.utxo_id = a.utxo_id
		WHERE a.address = $1 AND a.chain_key = 'X' AND a.spent = $2 AND u.created_chain = 'X' AND u.fx_type = 'secp256k1fx.TransferOutput'`,
		stripChain(addr), false)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	bal := map[string]uint64{}
	utxos := map[string][]string{}
	for rows.Next() {
		var asset, amount, addrs, txID string
		var locktime, idx int64
		if err := rows.Scan(&asset, &amount, &addrs, &locktime, &txID, &idx); err != nil {
			t.Fatal(err)
		}
		var owners []string
		if err := json.Unmarshal([]byte(addrs), &owners); err != nil {
			t.Fatal(err)
		}
		if len(owners) != 1 || uint64(locktime) > now {
			continue
		}
		v, err := strconv.ParseUint(amount, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		bal[asset] += v
		utxos[asset] = append(utxos[asset], txID+":"+strconv.FormatInt(idx, 10))
	}
	return bal, utxos
}

func compareUTXOs(t testing.TB, addrs []string, got, want map[string][]byte) {
	t.Helper()
	for id, b := range want {
		g, ok := got[id]
		if !ok {
			t.Errorf("%v: missing UTXO %s", addrs, id)
			continue
		}
		if !bytes.Equal(g, b) {
			t.Errorf("%v: UTXO %s bytes %x, node %x", addrs, id, g, b)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("%v: extra UTXO %s", addrs, id)
		}
	}
}

// utxoIDOf computes the UTXO ID (sha256-derived: txID prefixed with index) of
// codec bytes of avax.UTXO: version(2) txID(32) index(4) ...
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

func mustInt(t testing.TB, n json.Number) int64 {
	t.Helper()
	v, err := n.Int64()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
