package primary_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/codec"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/vms/avm/block"
	"github.com/ava-labs/avalanchego/vms/avm/fxs"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/nftfx"
	"github.com/ava-labs/avalanchego/vms/platformvm/stakeable"
	ptxs "github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/propertyfx"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
)

// nodeUTXO is a UTXO the node answered, decoded with the node's own codec.
type nodeUTXO struct {
	ID, TxID, AssetID string
	OutputIndex       uint32
	Amount            uint64
	Addresses         []string
	Threshold         uint32
	Locktime          uint64
	Stakeable         *uint64
	Bytes             string // 0x-hex without checksum
}

func xCodec(t testing.TB) codec.Manager {
	t.Helper()
	p, err := block.NewParser([]fxs.Fx{&secp256k1fx.Fx{}, &nftfx.Fx{}, &propertyfx.Fx{}})
	if err != nil {
		t.Fatal(err)
	}
	return p.Codec()
}

// decodeUTXOs decodes hex UTXOs (with checksum) of chain P or X.
func decodeUTXOs(t testing.TB, chain, hrp string, hexes []string) []nodeUTXO {
	t.Helper()
	c := ptxs.Codec
	if chain != "P" {
		c = xCodec(t)
	}
	var out []nodeUTXO
	for _, h := range hexes {
		b, err := hex.DecodeString(strings.TrimPrefix(h, "0x"))
		if err != nil || len(b) < 4 {
			t.Fatalf("utxo hex %q: %v", h, err)
		}
		b = b[:len(b)-4]
		var u avax.UTXO
		if _, err := c.Unmarshal(b, &u); err != nil {
			t.Fatalf("decode utxo: %v", err)
		}
		n := nodeUTXO{ID: u.InputID().String(), TxID: u.TxID.String(), AssetID: u.AssetID().String(), OutputIndex: u.OutputIndex,
			Bytes: "0x" + hex.EncodeToString(b)}
		out2 := u.Out
		if lo, ok := out2.(*stakeable.LockOut); ok {
			l := lo.Locktime
			n.Stakeable = &l
			out2 = lo.TransferableOut
		}
		var owners *secp256k1fx.OutputOwners
		switch o := out2.(type) {
		case *secp256k1fx.TransferOutput:
			n.Amount, owners = o.Amt, &o.OutputOwners
		case *secp256k1fx.MintOutput:
			owners = &o.OutputOwners
		case *nftfx.MintOutput:
			owners = &o.OutputOwners
		case *nftfx.TransferOutput:
			owners = &o.OutputOwners
		default:
			t.Fatalf("utxo %s: output %T", n.ID, u.Out)
		}
		n.Threshold, n.Locktime = owners.Threshold, owners.Locktime
		for _, a := range owners.Addrs {
			s, err := address.FormatBech32(hrp, a.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			n.Addresses = append(n.Addresses, s)
		}
		sort.Strings(n.Addresses)
		out = append(out, n)
	}
	return out
}

// recordedUTXOs returns the node's UTXOs of every recorded whole-set
// getUTXOs call (limit 1024, no start index) by address and source chain.
func (e *env) recordedUTXOs(t testing.TB, chain string) map[string][]nodeUTXO {
	t.Helper()
	method := map[string]string{"P": "platform.getUTXOs", "X": "avm.getUTXOs"}[chain]
	out := map[string][]nodeUTXO{}
	e.rec.each(chain, method, func(params, result json.RawMessage) {
		var p struct {
			Addresses   []string        `json:"addresses"`
			Limit       int             `json:"limit"`
			StartIndex  json.RawMessage `json:"startIndex"`
			SourceChain string          `json:"sourceChain"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Addresses) != 1 || p.StartIndex != nil || (p.Limit != 1024 && p.Limit != 0) {
			return
		}
		var r struct {
			UTXOs []string `json:"utxos"`
		}
		if err := json.Unmarshal(result, &r); err != nil {
			t.Fatal(err)
		}
		k := p.Addresses[0] + "|" + p.SourceChain
		out[k] = append(out[k], decodeUTXOs(t, chain, e.net.HRP, r.UTXOs)...)
	})
	if len(out) < 16 {
		t.Fatalf("only %d recorded getUTXOs answers on %s", len(out), chain)
	}
	return out
}

type utxoOut struct {
	Addresses []string `json:"addresses"`
	Asset     struct {
		AssetID      string `json:"assetId"`
		Name         string `json:"name"`
		Symbol       string `json:"symbol"`
		Denomination int    `json:"denomination"`
		Type         string `json:"type"`
		Amount       string `json:"amount"`
	} `json:"asset"`
	UtxoID            string      `json:"utxoId"`
	UtxoBytes         string      `json:"utxoBytes"`
	ConsumedOnChainID string      `json:"consumedOnChainId"`
	CreatedOnChainID  string      `json:"createdOnChainId"`
	ConsumingTxHash   string      `json:"consumingTxHash"`
	OutputIndex       json.Number `json:"outputIndex"`
	Threshold         int64       `json:"threshold"`
	UtxoType          string      `json:"utxoType"`
	// X
	CreationTxHash string `json:"creationTxHash"`
	Locktime       int64  `json:"locktime"`
	Timestamp      int64  `json:"timestamp"`
	// P
	TxHash             string `json:"txHash"`
	Amount             string `json:"amount"`
	AssetID            string `json:"assetId"`
	BlockTimestamp     int64  `json:"blockTimestamp"`
	PlatformLocktime   int64  `json:"platformLocktime"`
	StakeableLocktime  *int64 `json:"stakeableLocktime"`
	Staked             bool   `json:"staked"`
	RewardType         string `json:"rewardType"`
	UtxoStartTimestamp *int64 `json:"utxoStartTimestamp"`
}

// time is the creation time in either shape.
func (u utxoOut) time() int64 { return max(u.Timestamp, u.BlockTimestamp) }

func (u utxoOut) amount() string { return u.Asset.Amount }

type utxosPage struct {
	NextPageToken *string   `json:"nextPageToken"`
	Utxos         []utxoOut `json:"utxos"`
}

func (e *env) allUTXOs(t testing.TB, target string, size int) []utxoOut {
	t.Helper()
	var out []utxoOut
	e.walk(t, target, size, func(body []byte) {
		var p utxosPage
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Utxos...)
	})
	return out
}

func utxosURL(chain string, q url.Values) string {
	return "/v1/networks/testnet/blockchains/" + chain + "/utxos?" + q.Encode()
}

// Every address's unspent UTXOs are the node's (getUTXOs), field by field,
// plus on P the stake the node holds apart (getStake), and on X the atomic
// UTXOs exported to X and not yet imported (getUTXOs with sourceChain).
func TestUTXOsMatchNode(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		for _, chain := range []string{"P", "X"} {
			t.Run(chain, func(t *testing.T) {
				rec := e.recordedUTXOs(t, chain)
				byAddr := map[string][]nodeUTXO{}
				for k, us := range rec {
					addr, _, _ := strings.Cut(k, "|")
					byAddr[addr] = append(byAddr[addr], us...)
				}
				alias := strings.ToLower(chain) + "-chain"
				checked := 0
				for addr, want := range byAddr {
					// Both with the chain prefix and without it.
					bare := strings.TrimPrefix(addr, chain+"-")
					for _, a := range []string{addr, bare} {
						got := e.allUTXOs(t, utxosURL(alias, url.Values{"addresses": {a}}), 4)
						var unlocked []utxoOut
						for _, u := range got {
							if chain == "P" && u.Staked {
								if u.UtxoType != "STAKE" || u.UtxoStartTimestamp == nil {
									t.Errorf("%s: staked utxo %s: %+v", addr, u.UtxoID, u)
								}
								continue // the node lists locked stake in getStake
							}
							unlocked = append(unlocked, u)
						}
						compareUTXOs(t, e, chain, addr, unlocked, want)
						checked += len(want)
					}
				}
				if checked == 0 {
					t.Fatal("no UTXO compared")
				}
			})
		}
	})
}

func compareUTXOs(t *testing.T, e *env, chain, addr string, got []utxoOut, want []nodeUTXO) {
	t.Helper()
	g := map[string]utxoOut{}
	for _, u := range got {
		if _, dup := g[u.UtxoID]; dup {
			t.Errorf("%s: utxo %s listed twice", addr, u.UtxoID)
		}
		g[u.UtxoID] = u
	}
	if len(g) != len(want) {
		var ids []string
		for _, w := range want {
			ids = append(ids, w.ID)
		}
		t.Errorf("%s: %d utxos %v, node %d %v", addr, len(g), keys(g), len(want), ids)
	}
	for _, w := range want {
		u, ok := g[w.ID]
		if !ok {
			t.Errorf("%s: node's utxo %s missing", addr, w.ID)
			continue
		}
		txID := u.CreationTxHash
		if chain == "P" {
			txID = u.TxHash
			if u.Amount != fmt.Sprint(w.Amount) || u.AssetID != w.AssetID || u.PlatformLocktime != int64(w.Locktime) {
				t.Errorf("%s: %s: P fields %+v, node %+v", addr, w.ID, u, w)
			}
			if (w.Stakeable == nil) != (u.StakeableLocktime == nil) || (w.Stakeable != nil && int64(*w.Stakeable) != *u.StakeableLocktime) {
				t.Errorf("%s: %s: stakeableLocktime %v, node %v", addr, w.ID, u.StakeableLocktime, w.Stakeable)
			}
			if u.UtxoType != "TRANSFER" && u.UtxoType != "STAKE" {
				t.Errorf("%s: %s: utxoType %q", addr, w.ID, u.UtxoType)
			}
		} else {
			if u.Locktime != int64(w.Locktime) {
				t.Errorf("%s: %s: locktime %d, node %d", addr, w.ID, u.Locktime, w.Locktime)
			}
			// X and C use their own lower-case vocabulary, whichever chain
			// created the UTXO (exports from P included).
			switch u.UtxoType {
			case "transfer", "mint", "nft", "property":
			default:
				t.Errorf("%s: %s (created on %s): utxoType %q", addr, w.ID, u.CreatedOnChainID, u.UtxoType)
			}
		}
		if txID != w.TxID || u.OutputIndex.String() != fmt.Sprint(w.OutputIndex) || u.Asset.AssetID != w.AssetID ||
			u.Asset.Amount != fmt.Sprint(w.Amount) || u.Threshold != int64(w.Threshold) || u.UtxoBytes != w.Bytes ||
			strings.Join(u.Addresses, ",") != strings.Join(w.Addresses, ",") || u.ConsumingTxHash != "" {
			t.Errorf("%s: %s:\n got %+v\nnode %+v", addr, w.ID, u, w)
		}
		if u.ConsumedOnChainID != e.net.BlockchainIDs[chain] {
			t.Errorf("%s: %s: consumedOnChainId %s, spendable on %s", addr, w.ID, u.ConsumedOnChainID, chain)
		}
		if u.Asset.AssetID == e.net.AvaxAssetID && (u.Asset.Symbol != "AVAX" || u.Asset.Denomination != 9 || u.Asset.Type != "secp256k1") {
			t.Errorf("%s: %s: asset %+v", addr, w.ID, u.Asset)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// xTxInputs reads the recorded avm.getTx (json) answers: for each tx, the
// UTXOs it consumes ("txID:index") and the assets it touches.
func (e *env) xTxInputs(t testing.TB) (inputs map[string][]string, assets map[string]map[string]bool, outputs map[string]int) {
	t.Helper()
	inputs, assets, outputs = map[string][]string{}, map[string]map[string]bool{}, map[string]int{}
	type in struct {
		TxID        string `json:"txID"`
		OutputIndex int    `json:"outputIndex"`
		AssetID     string `json:"assetID"`
	}
	type out struct {
		AssetID string `json:"assetID"`
	}
	e.rec.each("X", "avm.getTx", func(params, result json.RawMessage) {
		if !strings.Contains(string(params), `"json"`) {
			return
		}
		var r struct {
			Tx struct {
				ID       string `json:"id"`
				Unsigned struct {
					Inputs         []in  `json:"inputs"`
					ImportedInputs []in  `json:"importedInputs"`
					Outputs        []out `json:"outputs"`
					ExportedOuts   []out `json:"exportedOutputs"`
					InitialStates  []struct {
						Outputs []json.RawMessage `json:"outputs"`
					} `json:"initialStates"`
					Operations []struct {
						AssetID  string `json:"assetID"`
						InputIDs []in   `json:"inputIDs"`
						Op       struct {
							Output  json.RawMessage   `json:"output"`
							Outputs []json.RawMessage `json:"outputs"`
							Mint    json.RawMessage   `json:"mintOutput"`
							Xfer    json.RawMessage   `json:"transferOutput"`
						} `json:"operation"`
					} `json:"operations"`
					Name string `json:"name"`
				} `json:"unsignedTx"`
			} `json:"tx"`
		}
		if err := json.Unmarshal(result, &r); err != nil {
			t.Fatal(err)
		}
		id := r.Tx.ID
		a := map[string]bool{}
		n := 0
		for _, i := range append(r.Tx.Unsigned.Inputs, r.Tx.Unsigned.ImportedInputs...) {
			inputs[id] = append(inputs[id], fmt.Sprintf("%s:%d", i.TxID, i.OutputIndex))
			a[i.AssetID] = true
		}
		for _, o := range append(r.Tx.Unsigned.Outputs, r.Tx.Unsigned.ExportedOuts...) {
			a[o.AssetID] = true
			n++
		}
		for _, op := range r.Tx.Unsigned.Operations {
			a[op.AssetID] = true
			for _, i := range op.InputIDs {
				inputs[id] = append(inputs[id], fmt.Sprintf("%s:%d", i.TxID, i.OutputIndex))
			}
			n += len(op.Op.Outputs)
			for _, o := range []json.RawMessage{op.Op.Output, op.Op.Mint, op.Op.Xfer} {
				if len(o) > 0 && string(o) != "null" {
					n++
				}
			}
		}
		if r.Tx.Unsigned.Name != "" {
			a[id] = true // CreateAssetTx creates the asset with its own id
			for _, s := range r.Tx.Unsigned.InitialStates {
				n += len(s.Outputs)
			}
		}
		assets[id], outputs[id] = a, n
	})
	if len(assets) < 20 {
		t.Fatalf("recorded avm.getTx answers: %d", len(assets))
	}
	return inputs, assets, outputs
}

func TestUTXOFilters(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		alice := "X-custom1js9jhzvc6j53vp53h8cutnrv4lt4292t58me5h"
		unspent := e.allUTXOs(t, utxosURL("x-chain", url.Values{"addresses": {alice}}), 100)
		all := e.allUTXOs(t, utxosURL("x-chain", url.Values{"addresses": {alice}, "includeSpent": {"true"}}), 3)
		if len(all) <= len(unspent) || len(unspent) < 3 {
			t.Fatalf("includeSpent: %d, unspent %d", len(all), len(unspent))
		}
		// Spent ones name the tx that consumed them, and the node's tx says so.
		inputs, _, _ := e.xTxInputs(t)
		isUnspent := map[string]bool{}
		for _, u := range unspent {
			isUnspent[u.UtxoID] = true
		}
		spent := 0
		for _, u := range all {
			if isUnspent[u.UtxoID] {
				if u.ConsumingTxHash != "" {
					t.Errorf("unspent %s consumed by %s", u.UtxoID, u.ConsumingTxHash)
				}
				continue
			}
			spent++
			ref := u.CreationTxHash + ":" + u.OutputIndex.String()
			found := false
			for _, i := range inputs[u.ConsumingTxHash] {
				found = found || i == ref
			}
			if !found {
				t.Errorf("spent %s (%s): consumer %q does not spend it per the node", u.UtxoID, ref, u.ConsumingTxHash)
			}
		}
		if spent == 0 {
			t.Error("no spent UTXO listed with includeSpent")
		}
		// Orders: by timestamp (default) and by amount, both directions, ties by id.
		for _, c := range []struct {
			q   url.Values
			key func(u utxoOut) string
			asc bool
		}{
			{url.Values{}, func(u utxoOut) string { return fmt.Sprintf("%020d|%s", u.time(), u.UtxoID) }, true},
			{url.Values{"sortOrder": {"desc"}}, func(u utxoOut) string { return fmt.Sprintf("%020d|%s", u.time(), u.UtxoID) }, false},
			{url.Values{"sortBy": {"amount"}}, func(u utxoOut) string { return pad20(u.amount()) + "|" + u.UtxoID }, true},
			{url.Values{"sortBy": {"amount"}, "sortOrder": {"desc"}}, func(u utxoOut) string { return pad20(u.amount()) + "|" + u.UtxoID }, false},
			{url.Values{"sortBy": {"timestamp"}, "sortOrder": {"asc"}}, func(u utxoOut) string { return fmt.Sprintf("%020d|%s", u.time(), u.UtxoID) }, true},
		} {
			for _, spentToo := range []string{"false", "true"} {
				q := url.Values{"addresses": {alice}, "includeSpent": {spentToo}}
				for k, v := range c.q {
					q[k] = v
				}
				got := e.allUTXOs(t, utxosURL("x-chain", q), 2)
				want := len(unspent)
				if spentToo == "true" {
					want = len(all)
				}
				if len(got) != want {
					t.Errorf("%v: %d utxos, want %d", q, len(got), want)
				}
				for i := 1; i < len(got); i++ {
					a, b := c.key(got[i-1]), c.key(got[i])
					if (c.asc && a >= b) || (!c.asc && a <= b) {
						t.Errorf("%v: out of order at %d: %s then %s", q, i, a, b)
					}
				}
			}
		}
		// minUtxoAmount is inclusive; a fraction rounds up.
		amts := map[string]int{}
		for _, u := range unspent {
			amts[u.amount()]++
		}
		for amt := range amts {
			for _, m := range []string{amt, amt + ".0", amt + ".5"} {
				got := e.allUTXOs(t, utxosURL("x-chain", url.Values{"addresses": {alice}, "minUtxoAmount": {m}}), 10)
				want := 0
				for _, u := range unspent {
					if cmpDec(u.amount(), amt) > 0 || (cmpDec(u.amount(), amt) == 0 && !strings.HasSuffix(m, ".5")) {
						want++
					}
				}
				if len(got) != want {
					t.Errorf("minUtxoAmount=%s: %d utxos, want %d", m, len(got), want)
				}
			}
		}
		// A number in exponent form is the same number.
		for amt := range amts {
			if len(amt) < 4 || !strings.HasSuffix(amt, "000") {
				continue
			}
			exp := strings.TrimSuffix(amt, "000") + "e3"
			a := e.allUTXOs(t, utxosURL("x-chain", url.Values{"addresses": {alice}, "minUtxoAmount": {exp}}), 10)
			b := e.allUTXOs(t, utxosURL("x-chain", url.Values{"addresses": {alice}, "minUtxoAmount": {amt}}), 10)
			if len(a) != len(b) || len(a) == 0 {
				t.Errorf("minUtxoAmount=%s: %d utxos, =%s: %d", exp, len(a), amt, len(b))
			}
		}
		// assetId keeps one asset.
		for asset := range map[string]bool{e.net.AvaxAssetID: true, e.net.CreatedAssets["variableCap_DVC"]: true, e.net.CreatedAssets["nft_DART"]: true} {
			got := e.allUTXOs(t, utxosURL("x-chain", url.Values{"addresses": {alice}, "assetId": {asset}}), 5)
			want := 0
			for _, u := range unspent {
				if u.Asset.AssetID == asset {
					want++
				}
			}
			if len(got) != want {
				t.Errorf("assetId %s: %d utxos, want %d", asset, len(got), want)
			}
			for _, u := range got {
				if u.Asset.AssetID != asset {
					t.Errorf("assetId %s: got %s", asset, u.Asset.AssetID)
				}
			}
		}
		// assetId with includeSpent and the amount order (each their own
		// index, 0015): the address's listing of that asset, in order.
		for asset := range map[string]bool{e.net.AvaxAssetID: true, e.net.CreatedAssets["variableCap_DVC"]: true} {
			for _, c := range []struct {
				q   url.Values
				key func(u utxoOut) string
			}{
				{url.Values{"includeSpent": {"true"}}, func(u utxoOut) string { return fmt.Sprintf("%020d|%s", u.time(), u.UtxoID) }},
				{url.Values{"includeSpent": {"true"}, "sortBy": {"amount"}, "sortOrder": {"desc"}}, func(u utxoOut) string { return pad20(u.amount()) + "|" + u.UtxoID }},
				{url.Values{"sortBy": {"amount"}}, func(u utxoOut) string { return pad20(u.amount()) + "|" + u.UtxoID }},
			} {
				q := url.Values{"addresses": {alice}, "assetId": {asset}}
				for k, v := range c.q {
					q[k] = v
				}
				var want []string
				from := unspent
				if c.q.Get("includeSpent") == "true" {
					from = all
				}
				for _, u := range from {
					if u.Asset.AssetID == asset {
						want = append(want, c.key(u))
					}
				}
				sort.Strings(want)
				if c.q.Get("sortOrder") == "desc" {
					slices.Reverse(want)
				}
				var got []string
				for _, u := range e.allUTXOs(t, utxosURL("x-chain", q), 2) {
					got = append(got, c.key(u))
				}
				if len(want) == 0 || !slices.Equal(got, want) {
					t.Errorf("%v:\n got %v\nwant %v", q, got, want)
				}
			}
		}
		// Several addresses: the union, each UTXO once (a 2-of-2 output of
		// carol and dave belongs to both).
		carol, dave := "X-custom1w98xaclyc635teqmegl22hn756zrlu26x2u7mz", "custom1s38hv6retq3p0tfqthhglkgc84gjzxv6zf7fzv"
		both := e.allUTXOs(t, utxosURL("x-chain", url.Values{"addresses": {carol + "," + dave}, "includeSpent": {"true"}}), 3)
		union := map[string]bool{}
		shared := 0
		for _, a := range []string{carol, dave} {
			for _, u := range e.allUTXOs(t, utxosURL("x-chain", url.Values{"addresses": {a}, "includeSpent": {"true"}}), 50) {
				if union[u.UtxoID] {
					shared++
				}
				union[u.UtxoID] = true
			}
		}
		seen := map[string]bool{}
		for _, u := range both {
			if seen[u.UtxoID] || !union[u.UtxoID] {
				t.Errorf("two addresses: %s repeated or foreign", u.UtxoID)
			}
			seen[u.UtxoID] = true
		}
		if len(seen) != len(union) || shared == 0 {
			t.Errorf("two addresses: %d utxos, union %d, shared %d", len(seen), len(union), shared)
		}
		// ... and with assetId: the union's UTXOs of that asset.
		for _, u := range both {
			if u.Asset.AssetID != e.net.AvaxAssetID {
				delete(seen, u.UtxoID)
			}
		}
		bothAVAX := e.allUTXOs(t, utxosURL("x-chain", url.Values{"addresses": {carol + "," + dave}, "includeSpent": {"true"},
			"assetId": {e.net.AvaxAssetID}}), 2)
		for _, u := range bothAVAX {
			if !seen[u.UtxoID] {
				t.Errorf("two addresses, AVAX: %s repeated, foreign or of another asset", u.UtxoID)
			}
			delete(seen, u.UtxoID)
		}
		if len(seen) != 0 || len(bothAVAX) == 0 {
			t.Errorf("two addresses, AVAX: %d listed, %d missing", len(bothAVAX), len(seen))
		}
		// The node's two-address answer is the same set (unspent).
		var nodeTwo []nodeUTXO
		e.rec.each("X", "avm.getUTXOs", func(params, result json.RawMessage) {
			if strings.Contains(string(params), carol) && strings.Contains(string(params), dave) {
				var r struct{ UTXOs []string }
				_ = json.Unmarshal(result, &r)
				nodeTwo = decodeUTXOs(t, "X", e.net.HRP, r.UTXOs)
			}
		})
		twoUnspent := e.allUTXOs(t, utxosURL("x-chain", url.Values{"addresses": {carol + "," + dave}}), 7)
		compareUTXOs(t, e, "X", "carol+dave", twoUnspent, nodeTwo)
	})
}

// The C-chain lists the atomic UTXOs exported to it and not yet imported:
// the node's avax.getUTXOs from each source chain.
func TestUTXOsCChain(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		want := map[string][]nodeUTXO{}
		e.rec.each("C", "avax.getUTXOs", func(params, result json.RawMessage) {
			var p struct {
				Addresses   []string `json:"addresses"`
				SourceChain string   `json:"sourceChain"`
			}
			var r struct{ UTXOs []string }
			if json.Unmarshal(params, &p) != nil || json.Unmarshal(result, &r) != nil || len(p.Addresses) != 1 {
				t.Fatalf("avax.getUTXOs %s", params)
			}
			want[p.Addresses[0]] = append(want[p.Addresses[0]], decodeUTXOs(t, p.SourceChain, e.net.HRP, r.UTXOs)...)
		})
		if len(want) != 3 {
			t.Fatalf("recorded avax.getUTXOs for %d addresses", len(want))
		}
		for addr, w := range want {
			got := e.allUTXOs(t, utxosURL("c-chain", url.Values{"addresses": {addr}}), 2)
			for _, u := range got {
				if u.UtxoType != "transfer" {
					t.Errorf("%s: C utxo %s type %q", addr, u.UtxoID, u.UtxoType)
				}
			}
			compareUTXOs(t, e, "C", addr, got, w)
			// Imported ones are listed with includeSpent, consumed on C.
			for _, u := range e.allUTXOs(t, utxosURL("c-chain", url.Values{"addresses": {addr}, "includeSpent": {"true"}}), 2) {
				if u.ConsumedOnChainID != e.net.BlockchainIDs["C"] || u.CreatedOnChainID == e.net.BlockchainIDs["C"] {
					t.Errorf("%s: C utxo %s: created on %s, consumed on %s", addr, u.UtxoID, u.CreatedOnChainID, u.ConsumedOnChainID)
				}
			}
		}
	})
}

func pad20(s string) string { return strings.Repeat("0", max(0, 20-len(s))) + s }

// cmpDec compares two non-negative decimal integers.
func cmpDec(a, b string) int { return strings.Compare(pad20(a), pad20(b)) }
