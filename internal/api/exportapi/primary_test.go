package exportapi_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/formatting/address"

	"github.com/permafrost-dev/permafrost/internal/decode/catomic"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/export"
)

// recTx is a transaction as the node answered platform.getTx / avm.getTx
// (JSON encoding): what it consumed and created per asset, and what it
// created for each owner address (with chain prefix, as the node writes it).
type recTx struct {
	chain              string
	unlocked, created  map[string]*big.Int
	createdFor         map[string]map[string]*big.Int // address -> asset -> amount
	simple             bool                           // only inputs/outputs/stake: comparable with UTXO sums
	evmIns, evmOuts    map[string]*big.Int            // C-chain atomic txs
	evmInFor, evmOutFr map[string]map[string]*big.Int
}

func addAmt(m map[string]*big.Int, asset string, v *big.Int) {
	if m[asset] == nil {
		m[asset] = new(big.Int)
	}
	m[asset].Add(m[asset], v)
}

// deep finds the amount and addresses of a (possibly stakeable-locked) input or output.
func deep(v any) (*big.Int, []string) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil
	}
	if inner, ok := m["output"]; ok {
		return deep(inner)
	}
	if inner, ok := m["input"]; ok {
		return deep(inner)
	}
	var amt *big.Int
	if n, ok := m["amount"].(json.Number); ok {
		amt, _ = new(big.Int).SetString(n.String(), 10)
	}
	var addrs []string
	if as, ok := m["addresses"].([]any); ok {
		for _, a := range as {
			addrs = append(addrs, a.(string))
		}
	}
	return amt, addrs
}

func loadRecordedTxs(t testing.TB) map[string]*recTx {
	t.Helper()
	out := map[string]*recTx{}
	for _, f := range []struct{ file, chain, method string }{
		{devnet.P, "P", "platform.getTx"}, {devnet.X, "X", "avm.getTx"},
	} {
		eachRecorded(t, f.file, func(method string, params, result json.RawMessage) {
			var p struct{ Encoding, TxID string }
			_ = json.Unmarshal(params, &p)
			if method != f.method || p.Encoding != "json" {
				return
			}
			dec := json.NewDecoder(strings.NewReader(string(result)))
			dec.UseNumber()
			var r struct {
				Tx struct {
					UnsignedTx map[string]any
				}
			}
			if err := dec.Decode(&r); err != nil {
				t.Fatal(err)
			}
			u := r.Tx.UnsignedTx
			x := &recTx{chain: f.chain, unlocked: map[string]*big.Int{}, created: map[string]*big.Int{},
				createdFor: map[string]map[string]*big.Int{}, simple: true}
			for _, k := range []string{"initialStates", "operations", "txID"} {
				if _, ok := u[k]; ok {
					x.simple = false
				}
			}
			if len(u) == 0 {
				x.simple = false
			}
			for _, k := range []string{"inputs", "importedInputs"} {
				list, _ := u[k].([]any)
				for _, it := range list {
					m := it.(map[string]any)
					amt, _ := deep(m["input"])
					if amt != nil {
						addAmt(x.unlocked, m["assetID"].(string), amt)
					}
				}
			}
			for _, k := range []string{"outputs", "exportedOutputs", "stake"} {
				list, _ := u[k].([]any)
				for _, it := range list {
					m := it.(map[string]any)
					amt, addrs := deep(m["output"])
					if amt == nil {
						continue
					}
					asset := m["assetID"].(string)
					addAmt(x.created, asset, amt)
					for _, a := range addrs {
						if x.createdFor[a] == nil {
							x.createdFor[a] = map[string]*big.Int{}
						}
						addAmt(x.createdFor[a], asset, amt)
					}
				}
			}
			out[p.TxID] = x
		})
	}
	// C-chain atomic txs: the node's bytes (avax.getAtomicTx).
	eachRecorded(t, devnet.CAvax, func(method string, params, result json.RawMessage) {
		var p struct{ Encoding, TxID string }
		_ = json.Unmarshal(params, &p)
		if method != "avax.getAtomicTx" || p.Encoding != "hex" {
			return
		}
		var r struct{ Tx string }
		if err := json.Unmarshal(result, &r); err != nil || r.Tx == "" {
			return
		}
		raw, err := hex.DecodeString(strings.TrimPrefix(r.Tx, "0x"))
		if err != nil {
			t.Fatal(err)
		}
		raw = raw[:len(raw)-4] // checksum
		txs, err := catomic.DecodeExtraData(raw, false)
		if err != nil || len(txs) != 1 {
			t.Fatalf("atomic tx %s: %v", p.TxID, err)
		}
		x := &recTx{chain: "C", evmIns: map[string]*big.Int{}, evmOuts: map[string]*big.Int{},
			evmInFor: map[string]map[string]*big.Int{}, evmOutFr: map[string]map[string]*big.Int{}}
		add := func(all map[string]*big.Int, per map[string]map[string]*big.Int, addr, asset string, amt uint64) {
			v := new(big.Int).SetUint64(amt)
			addAmt(all, asset, v)
			addr = strings.ToLower(addr)
			if per[addr] == nil {
				per[addr] = map[string]*big.Int{}
			}
			addAmt(per[addr], asset, v)
		}
		switch u := txs[0].UnsignedAtomicTx.(type) {
		case *catomic.UnsignedImportTx:
			for _, o := range u.Outs {
				add(x.evmOuts, x.evmOutFr, o.Address.Hex(), o.AssetID.String(), o.Amount)
			}
		case *catomic.UnsignedExportTx:
			for _, in := range u.Ins {
				add(x.evmIns, x.evmInFor, in.Address.Hex(), in.AssetID.String(), in.Amount)
			}
		}
		out[p.TxID] = x
	})
	return out
}

func eachRecorded(t testing.TB, file string, f func(method string, params, result json.RawMessage)) {
	t.Helper()
	for _, x := range devnet.LoadRPC(t, file) {
		if len(x.Response.Result) > 0 {
			f(x.Method, x.Params, x.Response.Result)
		}
	}
}

// workloadTxs are the logged workload txs naming any of addrs (any case).
func workloadTxs(t testing.TB, addrs ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, w := range devnet.LoadWorkload[json.RawMessage](t) {
		if strings.HasPrefix(w.TxID, "0x") {
			continue // EVM txs are not primary-network txs
		}
		for _, a := range w.Addresses {
			for _, want := range addrs {
				if strings.EqualFold(a, want) {
					out[w.TxID] = w.Chain
				}
			}
		}
	}
	return out
}

// parseAmounts reads "assetId:amount;..." lists.
func parseAmounts(t testing.TB, s string) map[string]*big.Int {
	t.Helper()
	out := map[string]*big.Int{}
	if s == "" {
		return out
	}
	for _, it := range strings.Split(s, ";") {
		a, v, ok := strings.Cut(it, ":")
		n, ok2 := new(big.Int).SetString(v, 10)
		if !ok || !ok2 {
			t.Fatalf("bad amount list %q", s)
		}
		out[a] = n
	}
	return out
}

func sameAmounts(a, b map[string]*big.Int) bool {
	nz := func(m map[string]*big.Int) map[string]string {
		o := map[string]string{}
		for k, v := range m {
			if v != nil && v.Sign() != 0 {
				o[k] = v.String()
			}
		}
		return o
	}
	x, y := nz(a), nz(b)
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		if y[k] != v {
			return false
		}
	}
	return true
}

func fmtAmounts(m map[string]*big.Int) string {
	var s []string
	for k, v := range m {
		s = append(s, k+":"+v.String())
	}
	sort.Strings(s)
	return strings.Join(s, ";")
}

// TestPrimaryExport exports carol's primary-network history (her bech32
// address on P and X, her EVM address for C-chain atomic txs) and checks
// it against the recorded node answers and the workload log, then the
// SIMPLE form against the full one, and an export without addresses.
func TestPrimaryExport(t *testing.T) {
	recorded := loadRecordedTxs(t)
	carolEVM := carol
	forEachBackend(t, export.Config{}, func(t *testing.T, e *env) {
		ctx := context.Background()
		req := map[string]any{"type": "TRANSACTION_EXPORT_PRIMARY_NETWORK", "firstDate": "2020-01-01", "lastDate": "2026-12-31",
			"options": map[string]any{"addresses": []string{"X-" + carolBech, "P-" + carolBech},
				"cChainEvmAddresses": []string{strings.ToUpper(carolEVM[2:])}, "includeChains": []string{"p-chain", "x-chain", "c-chain"}}}
		_, recs := e.complete(t, req)
		rows := byHeader(t, recs, export.PrimaryHeader)
		if len(rows) < 10 {
			t.Fatalf("only %d rows", len(rows))
		}
		got := map[string]map[string]string{}
		order := map[string]int{"p-chain": 0, "x-chain": 1, "c-chain": 2}
		for i, r := range rows {
			if got[r["tx_hash"]] != nil {
				t.Errorf("tx %s twice", r["tx_hash"])
			}
			got[r["tx_hash"]] = r
			if i > 0 {
				p := rows[i-1]
				pd, d := p["datetime_utc"][:10], r["datetime_utc"][:10]
				pt, _ := strconv.ParseInt(p["block_timestamp"], 10, 64)
				ct, _ := strconv.ParseInt(r["block_timestamp"], 10, 64)
				if d < pd || (d == pd && (order[r["chain"]] < order[p["chain"]] || (r["chain"] == p["chain"] && ct < pt))) {
					t.Errorf("row %d (%s %s) out of order after %s %s", i+1, r["chain"], r["datetime_utc"], p["chain"], p["datetime_utc"])
				}
			}
		}
		// Every logged workload tx naming carol is there, on its chain.
		for id, chain := range workloadTxs(t, "X-"+carolBech, "P-"+carolBech, carolEVM) {
			r := got[id]
			if r == nil {
				t.Errorf("workload tx %s (%s) naming carol is missing", id, chain)
				continue
			}
			if r["chain"] != strings.ToLower(chain)+"-chain" {
				t.Errorf("tx %s: chain %s, want %s", id, r["chain"], chain)
			}
		}
		checked := 0
		for id, r := range got {
			// Fields against the index.
			var chain, typ, block, memo, src, dst string
			var height, ts int64
			if err := e.DB.QueryRowContext(ctx, `SELECT chain_key, tx_type, block_id, memo, source_chain, destination_chain,
				height, timestamp FROM px_txs WHERE tx_id = $1`, id).Scan(&chain, &typ, &block, &memo, &src, &dst, &height, &ts); err != nil {
				t.Fatalf("tx %s: %v", id, err)
			}
			want := map[string]string{"chain": strings.ToLower(chain) + "-chain", "blockchain_id": e.Network.Chain[chain].BlockchainID,
				"tx_type": typ, "memo": memo, "source_chain": src, "destination_chain": dst,
				"block_timestamp": strconv.FormatInt(ts, 10), "datetime_utc": time.Unix(ts, 0).UTC().Format(time.RFC3339)}
			if height >= 0 {
				want["block_height"], want["block_hash"] = strconv.FormatInt(height, 10), block
			}
			for k, v := range want {
				if r[k] != v {
					t.Errorf("tx %s: %s %q, want %q", id, k, r[k], v)
				}
			}
			// Amounts against the node's answers.
			x := recorded[id]
			switch {
			case x == nil:
			case x.chain == "C":
				checked++
				unl, cre := parseAmounts(t, r["amount_unlocked"]), parseAmounts(t, r["amount_created"])
				for a, v := range x.evmIns {
					if unl[a] == nil || unl[a].Cmp(v) != 0 {
						t.Errorf("C tx %s: unlocked %s, node's EVM inputs %s", id, r["amount_unlocked"], fmtAmounts(x.evmIns))
					}
				}
				for a, v := range x.evmOuts {
					if cre[a] == nil || cre[a].Cmp(v) != 0 {
						t.Errorf("C tx %s: created %s, node's EVM outputs %s", id, r["amount_created"], fmtAmounts(x.evmOuts))
					}
				}
				if len(x.evmInFor[carolEVM]) > 0 && !sameAmounts(parseAmounts(t, r["amount_sent"]), x.evmInFor[carolEVM]) &&
					len(x.evmIns) > 0 {
					t.Errorf("C tx %s: sent %s, carol's EVM inputs %s", id, r["amount_sent"], fmtAmounts(x.evmInFor[carolEVM]))
				}
				if x.evmOutFr[carolEVM] != nil && !sameAmounts(parseAmounts(t, r["amount_received"]), x.evmOutFr[carolEVM]) {
					t.Errorf("C tx %s: received %s, carol's EVM outputs %s", id, r["amount_received"], fmtAmounts(x.evmOutFr[carolEVM]))
				}
			case x.simple:
				checked++
				if !sameAmounts(parseAmounts(t, r["amount_unlocked"]), x.unlocked) {
					t.Errorf("tx %s (%s): unlocked %s, node says %s", id, typ, r["amount_unlocked"], fmtAmounts(x.unlocked))
				}
				if !sameAmounts(parseAmounts(t, r["amount_created"]), x.created) {
					t.Errorf("tx %s (%s): created %s, node says %s", id, typ, r["amount_created"], fmtAmounts(x.created))
				}
				if mine := x.createdFor[chain+"-"+carolBech]; !sameAmounts(parseAmounts(t, r["amount_received"]), mine) {
					t.Errorf("tx %s (%s): received %s, node's outputs to carol %s", id, typ, r["amount_received"], fmtAmounts(mine))
				}
			}
			// Sent: the consumed UTXOs carol owned, from the index.
			sent := map[string]*big.Int{}
			us, err := e.DB.QueryContext(ctx, `SELECT asset_id, amount, addresses FROM utxos WHERE consumed_tx = $1`, id)
			if err != nil {
				t.Fatal(err)
			}
			for us.Next() {
				var a, amt, owners string
				if err := us.Scan(&a, &amt, &owners); err != nil {
					t.Fatal(err)
				}
				if strings.Contains(owners, `"`+carolBech+`"`) {
					v, _ := new(big.Int).SetString(amt, 10)
					addAmt(sent, a, v)
				}
			}
			us.Close()
			if x := recorded[id]; x != nil && x.chain == "C" {
				for a, v := range x.evmInFor[carolEVM] {
					addAmt(sent, a, v)
				}
			}
			if !sameAmounts(parseAmounts(t, r["amount_sent"]), sent) {
				t.Errorf("tx %s: sent %s, carol's consumed UTXOs %s", id, r["amount_sent"], fmtAmounts(sent))
			}
		}
		if checked < 10 {
			t.Errorf("only %d rows compared with the node's answers", checked)
		}

		// SIMPLE: the same txs, one row per asset carol sent or received.
		req["type"] = "TRANSACTION_EXPORT_PRIMARY_NETWORK_SIMPLE"
		_, srecs := e.complete(t, req)
		simple := byHeader(t, srecs, export.SimpleHeader)
		var want []string
		for _, r := range rows {
			s, rc := parseAmounts(t, r["amount_sent"]), parseAmounts(t, r["amount_received"])
			assets := map[string]bool{}
			for a := range s {
				assets[a] = true
			}
			for a := range rc {
				assets[a] = true
			}
			if len(assets) == 0 {
				want = append(want, strings.Join([]string{r["chain"], r["tx_hash"], r["tx_type"], r["block_timestamp"], "", "0", "0"}, "|"))
			}
			var keys []string
			for a := range assets {
				keys = append(keys, a)
			}
			sort.Strings(keys)
			for _, a := range keys {
				want = append(want, strings.Join([]string{r["chain"], r["tx_hash"], r["tx_type"], r["block_timestamp"], a,
					bigStr(s[a]), bigStr(rc[a])}, "|"))
			}
		}
		var gotSimple []string
		for _, r := range simple {
			sent, recv := r["amount_sent"], r["amount_received"]
			if r["asset_id"] == "" {
				sent, recv = "0", "0"
			}
			gotSimple = append(gotSimple, strings.Join([]string{r["chain"], r["tx_hash"], r["tx_type"], r["block_timestamp"],
				r["asset_id"], sent, recv}, "|"))
			if r["asset_id"] == e.avaxID(t) && (r["asset_symbol"] != "AVAX" || r["asset_denomination"] != "9") {
				t.Errorf("AVAX row %v", r)
			}
		}
		if strings.Join(gotSimple, "\n") != strings.Join(want, "\n") {
			t.Errorf("SIMPLE rows differ from the full export's:\n got %v\nwant %v", gotSimple, want)
		}

		// No addresses: every X-chain tx, amounts by the node's answers.
		_, xrecs := e.complete(t, map[string]any{"type": "TRANSACTION_EXPORT_PRIMARY_NETWORK", "lastDate": "2026-12-31",
			"options": map[string]any{"includeChains": []string{e.Network.Chain["X"].BlockchainID}}})
		all := byHeader(t, xrecs, export.PrimaryHeader)
		var n int
		if err := e.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM px_txs WHERE chain_key = 'X'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if len(all) != n || n < 20 {
			t.Errorf("%d X rows, the index has %d txs", len(all), n)
		}
		for _, r := range all {
			if r["amount_sent"] != "" || r["amount_received"] != "" {
				t.Errorf("sent/received without addresses: %v", r)
			}
			if x := recorded[r["tx_hash"]]; x != nil && x.simple && !sameAmounts(parseAmounts(t, r["amount_created"]), x.created) {
				t.Errorf("tx %s: created %s, node says %s", r["tx_hash"], r["amount_created"], fmtAmounts(x.created))
			}
		}
	})
}

func bigStr(v *big.Int) string {
	if v == nil {
		return "0"
	}
	return v.String()
}

func (e *env) avaxID(t testing.TB) string {
	var id string
	if err := e.DB.QueryRowContext(context.Background(), `SELECT asset_id FROM assets WHERE symbol = 'AVAX'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// rewardUTXO is a recorded platform.getRewardUTXOs UTXO, parsed from its
// codec bytes: codec version, tx id, output index, asset id, type id 7
// (secp256k1fx.TransferOutput), amount, locktime, threshold, addresses.
type rewardUTXO struct {
	id, asset, amount string
	owners            []string
}

func recordedRewards(t testing.TB) map[string][]rewardUTXO {
	t.Helper()
	out := map[string][]rewardUTXO{}
	eachRecorded(t, devnet.P, func(method string, params, result json.RawMessage) {
		if method != "platform.getRewardUTXOs" {
			return
		}
		var p struct{ TxID string }
		var r struct{ UTXOs []string }
		_ = json.Unmarshal(params, &p)
		if err := json.Unmarshal(result, &r); err != nil {
			t.Fatal(err)
		}
		var list []rewardUTXO
		for _, h := range r.UTXOs {
			b, err := hex.DecodeString(strings.TrimPrefix(h, "0x"))
			if err != nil || len(b) < 2+32+4+32+4+8+8+4+4 {
				t.Fatalf("reward utxo %q", h)
			}
			txID, _ := ids.ToID(b[2:34])
			idx := binary.BigEndian.Uint32(b[34:38])
			asset, _ := ids.ToID(b[38:70])
			if typ := binary.BigEndian.Uint32(b[70:74]); typ != 7 {
				t.Fatalf("reward utxo of type %d", typ)
			}
			u := rewardUTXO{id: txID.Prefix(uint64(idx)).String(), asset: asset.String(),
				amount: strconv.FormatUint(binary.BigEndian.Uint64(b[74:82]), 10)}
			n := binary.BigEndian.Uint32(b[94:98])
			for i := range n {
				a, err := address.FormatBech32("custom", b[98+20*i:118+20*i])
				if err != nil {
					t.Fatal(err)
				}
				u.owners = append(u.owners, a)
			}
			list = append(list, u)
		}
		out[p.TxID] = list
	})
	return out
}

// TestStakingExport: the staking txs and rewards of the devnet, all of them
// and erin's (the reward owner of validator alpha), against the recorded
// reward UTXOs and the workload log.
func TestStakingExport(t *testing.T) {
	rewards := recordedRewards(t)
	forEachBackend(t, export.Config{}, func(t *testing.T, e *env) {
		_, recs := e.complete(t, map[string]any{"type": "TRANSACTION_EXPORT_PRIMARY_NETWORK_STAKING", "firstDate": "2026-11-22",
			"lastDate": "2026-11-22", "options": map[string]any{"includeChains": []string{"p-chain", "x-chain"}}})
		rows := byHeader(t, recs, export.StakingHeader)
		stakes := map[string]map[string]string{}
		gotRewards := map[string][]map[string]string{}
		for i, r := range rows {
			if i > 0 && r["block_timestamp"] < rows[i-1]["block_timestamp"] {
				t.Errorf("row %d out of time order", i+1)
			}
			switch r["record_type"] {
			case "STAKE":
				stakes[r["tx_hash"]] = r
			case "REWARD":
				gotRewards[r["staker_tx_hash"]] = append(gotRewards[r["staker_tx_hash"]], r)
			default:
				t.Errorf("record_type %q", r["record_type"])
			}
		}
		// The four workload stakers and the two genesis validators.
		wl := 0
		for _, w := range devnet.LoadWorkload[json.RawMessage](t) {
			if w.Type == "AddPermissionlessValidatorTx" || w.Type == "AddPermissionlessDelegatorTx" {
				wl++
				r := stakes[w.TxID]
				if r == nil || r["tx_type"] != w.Type || r["staker_tx_hash"] != w.TxID {
					t.Errorf("staker tx %s: row %v", w.TxID, r)
				}
			}
		}
		if wl != 4 || len(stakes) != 6 {
			t.Errorf("%d STAKE rows (%d in the workload), want the 4 workload stakers and 2 genesis validators", len(stakes), wl)
		}
		for id, r := range stakes {
			var amount, node, start, end string
			if err := e.DB.QueryRowContext(context.Background(), `SELECT stake_amount, node_id, start_time, end_time
				FROM p_stakers WHERE tx_id = $1`, id).Scan(&amount, &node, &start, &end); err != nil {
				t.Fatal(err)
			}
			v, _ := new(big.Int).SetString(amount, 10)
			if r["amount"] != v.String() || r["node_id"] != node || r["start_time"] != start || r["end_time"] != end ||
				r["asset_id"] != e.avaxID(t) {
				t.Errorf("STAKE %s: %v (index: %s %s %s %s)", id, r, v, node, start, end)
			}
		}
		// Rewards: exactly the node's reward UTXOs.
		nRewards := 0
		for staker, list := range rewards {
			got := gotRewards[staker]
			if len(got) != len(list) {
				t.Errorf("staker %s: %d REWARD rows, node paid %d", staker, len(got), len(list))
				continue
			}
			for _, u := range list {
				found := false
				for _, r := range got {
					if r["utxo_id"] == u.id {
						found = true
						nRewards++
						if r["amount"] != u.amount || r["asset_id"] != u.asset || r["addresses"] != strings.Join(u.owners, " ") ||
							r["tx_type"] != "RewardValidatorTx" || r["reward_type"] == "" {
							t.Errorf("REWARD %s: %v, node: %+v", u.id, r, u)
						}
					}
				}
				if !found {
					t.Errorf("reward UTXO %s of %s missing", u.id, staker)
				}
			}
		}
		if nRewards != 3 {
			t.Errorf("%d reward rows matched, the recording has 3 reward UTXOs", nRewards)
		}

		// Erin's: alpha's validation reward, and the staking txs naming her.
		erin := "custom1tnggzfl7s9lj6gujaap7tdhkm48cklkrpmne5a"
		_, recs = e.complete(t, map[string]any{"type": "TRANSACTION_EXPORT_PRIMARY_NETWORK_STAKING",
			"options": map[string]any{"includeChains": []string{"p-chain"}, "addresses": []string{"P-" + erin}}})
		mine := byHeader(t, recs, export.StakingHeader)
		var kinds []string
		for _, r := range mine {
			kinds = append(kinds, r["record_type"]+":"+r["reward_type"])
			if r["record_type"] == "REWARD" && !strings.Contains(r["addresses"], erin) {
				t.Errorf("erin's export has someone else's reward: %v", r)
			}
		}
		if strings.Join(kinds, ",") != "STAKE:,REWARD:VALIDATOR" {
			t.Errorf("erin's staking rows %v, want alpha's stake then its validation reward", kinds)
		}
	})
}
