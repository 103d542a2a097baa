package primary_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"sort"
	"strings"
	"testing"
)

type assetTxOut struct {
	TxHash        string `json:"txHash"`
	ChainFormat   string `json:"chainFormat"`
	Timestamp     int64  `json:"timestamp"`
	TxType        string `json:"txType"`
	Memo          string `json:"memo"`
	BlockHeight   int64  `json:"blockHeight"`
	BlockHash     string `json:"blockHash"`
	ConsumedUtxos []struct {
		UtxoID          string `json:"utxoId"`
		CreationTxHash  string `json:"creationTxHash"`
		OutputIndex     string `json:"outputIndex"`
		ConsumingTxHash string `json:"consumingTxHash"`
		Credentials     []struct {
			Signature string `json:"signature"`
			PublicKey string `json:"publicKey"`
		} `json:"credentials"`
		Asset struct {
			AssetID string `json:"assetId"`
			Amount  string `json:"amount"`
		} `json:"asset"`
	} `json:"consumedUtxos"`
	EmittedUtxos []struct {
		UtxoID         string `json:"utxoId"`
		CreationTxHash string `json:"creationTxHash"`
		Asset          struct {
			AssetID string `json:"assetId"`
			Amount  string `json:"amount"`
		} `json:"asset"`
	} `json:"emittedUtxos"`
	AmountUnlocked []struct {
		AssetID string `json:"assetId"`
		Amount  string `json:"amount"`
	} `json:"amountUnlocked"`
	AmountCreated []struct {
		AssetID string `json:"assetId"`
		Amount  string `json:"amount"`
	} `json:"amountCreated"`
	SourceChain      string `json:"sourceChain"`
	DestinationChain string `json:"destinationChain"`
	AssetCreated     *struct {
		AssetID            string `json:"assetId"`
		Name               string `json:"name"`
		Symbol             string `json:"symbol"`
		Denomination       int    `json:"denomination"`
		Type               string `json:"type"`
		Cap                string `json:"cap"`
		CreatedAtTimestamp int64  `json:"createdAtTimestamp"`
	} `json:"assetCreated"`
}

func (e *env) allAssetTxs(t testing.TB, asset string, q url.Values, size int) []assetTxOut {
	t.Helper()
	var out []assetTxOut
	e.walk(t, "/v1/networks/testnet/blockchains/x-chain/assets/"+asset+"/transactions?"+q.Encode(), size, func(body []byte) {
		var p struct{ Transactions []assetTxOut }
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Transactions...)
	})
	return out
}

// Each asset's transactions are the X-chain txs of the workload (and the
// genesis AVAX tx) that touch it according to the node's avm.getTx, with
// the workload's types and memos and the node's blocks.
func TestAssetTransactions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		inputs, touches, outputs := e.xTxInputs(t)
		work := map[string]workloadTx{}
		for _, w := range loadWorkload(t) {
			if w.Chain == "X" {
				work[w.TxID] = w
			}
		}
		if len(work) != 20 {
			t.Fatalf("workload X txs: %d", len(work))
		}
		blocks := e.recordedBlocks(t, "X")
		blockOf := map[string]*recordedBlock{}
		for _, b := range blocks {
			for _, id := range b.TxIDs {
				blockOf[id] = b
			}
		}
		assets := []string{e.net.AvaxAssetID}
		for _, a := range e.net.CreatedAssets {
			assets = append(assets, a)
		}
		for _, asset := range assets {
			want := map[string]bool{}
			for id, as := range touches {
				if as[asset] && (work[id].TxID != "" || id == e.net.AvaxAssetID) {
					want[id] = true
				}
			}
			got := e.allAssetTxs(t, asset, url.Values{}, 3)
			if len(got) != len(want) || len(want) == 0 {
				t.Errorf("asset %s: %d txs, node %d", asset, len(got), len(want))
			}
			for i, g := range got {
				if !want[g.TxHash] {
					t.Errorf("asset %s: tx %s does not touch it", asset, g.TxHash)
					continue
				}
				if i > 0 && (got[i-1].Timestamp < g.Timestamp || (got[i-1].Timestamp == g.Timestamp && got[i-1].TxHash < g.TxHash)) {
					t.Errorf("asset %s: not newest first at %d", asset, i)
				}
				checkAssetTx(t, e, g, work[g.TxHash], blockOf[g.TxHash], inputs[g.TxHash], outputs[g.TxHash])
			}
		}

		// Filters: txTypes (comma list or repeated), time range inclusive.
		avax := e.net.AvaxAssetID
		all := e.allAssetTxs(t, avax, url.Values{}, 100)
		count := func(f func(assetTxOut) bool) int {
			n := 0
			for _, x := range all {
				if f(x) {
					n++
				}
			}
			return n
		}
		for _, q := range []url.Values{
			{"txTypes": {"BaseTx"}},
			{"txTypes": {"ImportTx,ExportTx"}},
			{"txTypes": {"ImportTx", "CreateAssetTx"}},
			{"txTypes": {"AddValidatorTx"}},
		} {
			types := map[string]bool{}
			for _, v := range q["txTypes"] {
				for _, s := range strings.Split(v, ",") {
					types[s] = true
				}
			}
			got := e.allAssetTxs(t, avax, q, 2)
			if n := count(func(x assetTxOut) bool { return types[x.TxType] }); len(got) != n {
				t.Errorf("%v: %d txs, want %d", q, len(got), n)
			}
			for _, g := range got {
				if !types[g.TxType] {
					t.Errorf("%v: got %s", q, g.TxType)
				}
			}
		}
		mid := all[len(all)/2].Timestamp
		for _, c := range []struct {
			q      url.Values
			lo, hi int64
		}{
			{url.Values{"startTimestamp": {fmt.Sprint(mid)}}, mid, 1 << 62},
			{url.Values{"endTimestamp": {fmt.Sprint(mid)}}, 0, mid},
			{url.Values{"startTimestamp": {fmt.Sprint(mid)}, "endTimestamp": {fmt.Sprint(mid)}}, mid, mid},
		} {
			got := e.allAssetTxs(t, avax, c.q, 2)
			if n := count(func(x assetTxOut) bool { return x.Timestamp >= c.lo && x.Timestamp <= c.hi }); len(got) != n || n == 0 {
				t.Errorf("%v: %d txs, want %d", c.q, len(got), n)
			}
		}
	})
}

func checkAssetTx(t *testing.T, e *env, g assetTxOut, w workloadTx, b *recordedBlock, ins []string, nOut int) {
	t.Helper()
	if g.ChainFormat != "linear" {
		t.Errorf("%s: chainFormat %s", g.TxHash, g.ChainFormat)
	}
	if g.TxHash == e.net.AvaxAssetID { // the genesis tx: in the genesis state
		if g.TxType != "CreateAssetTx" || g.BlockHeight != 0 || g.AssetCreated == nil || g.AssetCreated.Symbol != "AVAX" {
			t.Errorf("genesis AVAX tx: %+v", g)
		}
		return
	}
	if g.TxType != w.Type {
		t.Errorf("%s: type %s, workload %s", g.TxHash, g.TxType, w.Type)
	}
	memo := ""
	if m, ok := w.Extra["memo"].(string); ok && m != "" {
		memo = "0x" + hex.EncodeToString([]byte(m))
	}
	if g.Memo != memo {
		t.Errorf("%s: memo %q, workload %q", g.TxHash, g.Memo, memo)
	}
	if b == nil || g.BlockHeight != b.Height || g.BlockHash != b.ID || b.Time == nil || g.Timestamp != *b.Time {
		t.Errorf("%s: block %d %s at %d, node %+v", g.TxHash, g.BlockHeight, g.BlockHash, g.Timestamp, b)
	}
	// Consumed: exactly the node's inputs, each credited with this tx and a credential.
	var got []string
	for _, u := range g.ConsumedUtxos {
		got = append(got, u.CreationTxHash+":"+u.OutputIndex)
		if u.ConsumingTxHash != g.TxHash || len(u.Credentials) == 0 || u.Credentials[0].PublicKey == "" {
			t.Errorf("%s: consumed %s: consumer %s credentials %v", g.TxHash, u.UtxoID, u.ConsumingTxHash, u.Credentials)
		}
	}
	sort.Strings(got)
	want := append([]string(nil), ins...)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s: consumed %v, node inputs %v", g.TxHash, got, want)
	}
	if len(g.EmittedUtxos) != nOut {
		t.Errorf("%s: %d emitted, node's tx has %d outputs", g.TxHash, len(g.EmittedUtxos), nOut)
	}
	// amountUnlocked / amountCreated are the per-asset sums of the lists.
	sums := func(amts map[string]*big.Int, asset, amount string) {
		v, _ := new(big.Int).SetString(amount, 10)
		if amts[asset] == nil {
			amts[asset] = new(big.Int)
		}
		amts[asset].Add(amts[asset], v)
	}
	in, out := map[string]*big.Int{}, map[string]*big.Int{}
	for _, u := range g.ConsumedUtxos {
		sums(in, u.Asset.AssetID, u.Asset.Amount)
	}
	for _, u := range g.EmittedUtxos {
		sums(out, u.Asset.AssetID, u.Asset.Amount)
		if u.CreationTxHash != g.TxHash {
			t.Errorf("%s: emitted %s created by %s", g.TxHash, u.UtxoID, u.CreationTxHash)
		}
	}
	for _, c := range []struct {
		list []struct {
			AssetID string `json:"assetId"`
			Amount  string `json:"amount"`
		}
		sums map[string]*big.Int
		name string
	}{{g.AmountUnlocked, in, "amountUnlocked"}, {g.AmountCreated, out, "amountCreated"}} {
		if len(c.list) != len(c.sums) {
			t.Errorf("%s: %s %v, sums %v", g.TxHash, c.name, c.list, c.sums)
		}
		for _, a := range c.list {
			if c.sums[a.AssetID] == nil || c.sums[a.AssetID].String() != a.Amount {
				t.Errorf("%s: %s %s = %s", g.TxHash, c.name, a.AssetID, a.Amount)
			}
		}
	}
	switch w.Type {
	case "CreateAssetTx":
		a := g.AssetCreated
		if a == nil || a.AssetID != g.TxHash || a.Name != w.Extra["name"] || a.Symbol != w.Extra["symbol"] ||
			fmt.Sprint(a.Denomination) != fmt.Sprint(w.Extra["denomination"]) || a.CreatedAtTimestamp != g.Timestamp {
			t.Errorf("%s: assetCreated %+v, workload %v", g.TxHash, a, w.Extra)
		}
		wantType, wantCap := "secp256k1", "fixed"
		switch a.Symbol {
		case "DART":
			wantType, wantCap = "nft", "variable"
		case "DVC":
			wantCap = "variable"
		}
		if a.Type != wantType || a.Cap != wantCap {
			t.Errorf("%s: asset %s type %s cap %s", g.TxHash, a.Symbol, a.Type, a.Cap)
		}
	case "ImportTx":
		if g.SourceChain == "" || g.DestinationChain != "" {
			t.Errorf("%s: import from %q to %q", g.TxHash, g.SourceChain, g.DestinationChain)
		}
	case "ExportTx":
		if g.DestinationChain == "" || g.SourceChain != "" {
			t.Errorf("%s: export from %q to %q", g.TxHash, g.SourceChain, g.DestinationChain)
		}
	default:
		if g.AssetCreated != nil || g.SourceChain != "" || g.DestinationChain != "" {
			t.Errorf("%s: %+v", g.TxHash, g)
		}
	}
}
