package evm_test

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"sort"
	"strings"
	"testing"
)

const recordedTip = 37

type nativeBalance struct {
	Name     string      `json:"name"`
	Symbol   string      `json:"symbol"`
	Decimals json.Number `json:"decimals"`
	ChainID  string      `json:"chainId"`
	Balance  string      `json:"balance"`
}

// Native balances equal the node's eth_getBalance answers at 0x0, 0x12 and
// the tip, for every recorded address, through every chainId form.
func TestNativeBalance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		type q struct {
			addr  string
			block int64
			want  string
		}
		var qs []q
		e.rec.each("eth_getBalance", func(ps []json.RawMessage, res json.RawMessage) {
			var addr, blk, bal string
			_ = json.Unmarshal(ps[0], &addr)
			_ = json.Unmarshal(ps[1], &blk)
			_ = json.Unmarshal(res, &bal)
			qs = append(qs, q{addr, hexBig(t, blk).Int64(), hexDec(t, bal)})
		})
		if len(qs) < 60 {
			t.Fatalf("only %d recorded eth_getBalance answers", len(qs))
		}
		chainIDs := []string{"88888", e.net.BlockchainIDs["C"], "c-chain", "C-Chain"}
		for i, c := range qs {
			chain := chainIDs[i%len(chainIDs)]
			addr := c.addr
			if i%2 == 0 {
				addr = strings.ToLower(addr)
			}
			paths := []string{fmt.Sprintf("/v1/chains/%s/addresses/%s/balances:getNative?blockNumber=%d", chain, addr, c.block),
				fmt.Sprintf("/v1/chains/%s/addresses/%s/balances:getNative?blockNumber=0x%x&currency=eur", chain, addr, c.block)}
			if c.block == recordedTip {
				paths = append(paths, fmt.Sprintf("/v1/chains/%s/addresses/%s/balances:getNative", chain, addr))
			}
			for _, p := range paths {
				var got struct {
					NativeTokenBalance nativeBalance `json:"nativeTokenBalance"`
				}
				e.ok(t, p, &got)
				nb := got.NativeTokenBalance
				if nb.Balance != c.want {
					t.Errorf("%s: balance %s, eth_getBalance says %s", p, nb.Balance, c.want)
				}
				if nb.Name != "AVAX" || nb.Symbol != "AVAX" || nb.Decimals != "18" || nb.ChainID != "88888" {
					t.Errorf("%s: token %+v", p, nb)
				}
			}
		}
	})
}

func TestNativeBalanceErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		alice := "0x03623AdD7ec6F6426D6266ED2E5a4734C786E73E"
		for _, c := range []struct {
			path string
			code int
			want []string
		}{
			{"/v1/chains/99999/addresses/" + alice + "/balances:getNative", 404, []string{"99999"}},
			{"/v1/chains/p-chain/addresses/" + alice + "/balances:getNative", 404, []string{"p-chain"}},
			{"/v1/chains/" + e.net.BlockchainIDs["X"] + "/addresses/" + alice + "/balances:getNative", 404, []string{e.net.BlockchainIDs["X"]}},
			{"/v1/chains/88888/addresses/03623AdD7ec6F6426D6266ED2E5a4734C786E73E/balances:getNative", 400, []string{"address"}},
			{"/v1/chains/88888/addresses/0x03623AdD7ec6F6426D6266ED2E5a4734C786E7/balances:getNative", 400, []string{"address"}},
			{"/v1/chains/88888/addresses/0x03623AdD7ec6F6426D6266ED2E5a4734C786E73E00/balances:getNative", 400, []string{"address"}},
			{"/v1/chains/88888/addresses/0xZZ623AdD7ec6F6426D6266ED2E5a4734C786E73E/balances:getNative", 400, []string{"address"}},
			{"/v1/chains/88888/addresses/" + alice + "/balances:getNative?blockNumber=-1", 400, []string{"blockNumber"}},
			{"/v1/chains/88888/addresses/" + alice + "/balances:getNative?blockNumber=abc", 400, []string{"blockNumber"}},
			{"/v1/chains/88888/addresses/" + alice + "/balances:getNative?blockNumber=38", 400, []string{"blockNumber", "37"}},
			{"/v1/chains/88888/addresses/" + alice + "/balances:getNative?blockNumber=99999999999999999999999", 400, []string{"blockNumber"}},
			{"/v1/chains/88888/addresses/" + alice + "/balances:getNative?currency=btc", 400, []string{"currency"}},
			// Every problem at once.
			{"/v1/chains/88888/addresses/0x12/balances:getNative?blockNumber=x&currency=btc", 400, []string{"address", "blockNumber", "currency"}},
		} {
			e.fails(t, c.path, c.code, c.want...)
		}
	})
}

type erc20Balance struct {
	Address         string      `json:"address"`
	Name            string      `json:"name"`
	Symbol          string      `json:"symbol"`
	Decimals        json.Number `json:"decimals"`
	ErcType         string      `json:"ercType"`
	ChainID         string      `json:"chainId"`
	Balance         string      `json:"balance"`
	TokenReputation *string     `json:"tokenReputation"`
}

type erc20List struct {
	NextPageToken      string         `json:"nextPageToken"`
	NativeTokenBalance nativeBalance  `json:"nativeTokenBalance"`
	Erc20TokenBalances []erc20Balance `json:"erc20TokenBalances"`
}

// holders are the EVM addresses of the recorded balanceOf calls.
func holders(e *env, t *testing.T) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range e.rec.ethCalls(t) {
		if strings.HasPrefix(c.Data, "0x70a08231") {
			h := "0x" + c.Data[34:74]
			if !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	sort.Strings(out)
	return out
}

// ERC-20 balances at the tip equal the recorded balanceOf answers of both
// ERC-20 contracts (the deployed one and the factory-created one); at past
// blocks, the balances the recorded logs add up to.
func TestErc20Balances(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		erc20s := map[string]bool{e.net.CChainContracts["erc20"]: true, e.net.CChainContracts["factoryChild"]: true}
		want := map[string]map[string]string{} // holder -> token -> balance (non-zero)
		calls := 0
		for _, c := range e.rec.ethCalls(t) {
			if !erc20s[c.To] || !strings.HasPrefix(c.Data, "0x70a08231") || c.Reverted {
				continue
			}
			calls++
			h := "0x" + c.Data[34:74]
			if want[h] == nil {
				want[h] = map[string]string{}
			}
			if v := hexDec(t, c.Result); v != "0" {
				want[h][c.To] = v
			}
		}
		if calls != 10 {
			t.Fatalf("%d recorded ERC-20 balanceOf answers, want 10", calls)
		}
		for h, w := range want {
			var got erc20List
			e.ok(t, "/v1/chains/88888/addresses/"+h+"/balances:listErc20?pageSize=500", &got)
			gm := map[string]string{}
			for _, b := range got.Erc20TokenBalances {
				gm[b.Address] = b.Balance
				if b.ErcType != "ERC-20" || b.ChainID != "88888" || b.TokenReputation != nil {
					t.Errorf("%s: %+v", h, b)
				}
			}
			if fmtMap(gm) != fmtMap(w) {
				t.Errorf("%s: ERC-20 balances %s, balanceOf says %s", h, fmtMap(gm), fmtMap(w))
			}
			if got.NextPageToken != "" {
				t.Errorf("%s: nextPageToken on a complete page", h)
			}
		}

		// History: every block, against the recorded logs' running sums.
		xs := e.rec.logTransfers(t)
		for n := int64(0); n <= recordedTip; n++ {
			exp := tokenBalancesAt(xs, "ERC-20", n)
			for _, h := range holders(e, t) {
				var got erc20List
				e.ok(t, fmt.Sprintf("/v1/chains/c-chain/addresses/%s/balances:listErc20?blockNumber=%d&pageSize=3", h, n), &got)
				gm := map[string]string{}
				for _, b := range got.Erc20TokenBalances {
					gm[b.Address] = b.Balance
				}
				w := map[string]string{}
				for k, v := range exp[h] {
					w[k] = v.String()
				}
				if fmtMap(gm) != fmtMap(w) {
					t.Errorf("%s at %d: %s, logs say %s", h, n, fmtMap(gm), fmtMap(w))
				}
			}
		}
	})
}

// The native balance in list answers is the one at the listed block.
func TestListsCarryNativeBalance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		type key struct {
			addr  string
			block int64
		}
		want := map[key]string{}
		e.rec.each("eth_getBalance", func(ps []json.RawMessage, res json.RawMessage) {
			var addr, blk, bal string
			_ = json.Unmarshal(ps[0], &addr)
			_ = json.Unmarshal(ps[1], &blk)
			_ = json.Unmarshal(res, &bal)
			want[key{strings.ToLower(addr), hexBig(t, blk).Int64()}] = hexDec(t, bal)
		})
		for k, w := range want {
			for _, route := range []string{"listErc20", "listErc1155"} {
				var got erc20List // nativeTokenBalance is all that is read
				e.ok(t, fmt.Sprintf("/v1/chains/88888/addresses/%s/balances:%s?blockNumber=%d", k.addr, route, k.block), &got)
				if got.NativeTokenBalance.Balance != w || got.NativeTokenBalance.Symbol != "AVAX" {
					t.Errorf("%s %s at %d: native %+v, eth_getBalance %s", route, k.addr, k.block, got.NativeTokenBalance, w)
				}
			}
			if k.block == recordedTip {
				var got erc20List
				e.ok(t, "/v1/chains/88888/addresses/"+k.addr+"/balances:listErc721", &got)
				if got.NativeTokenBalance.Balance != w {
					t.Errorf("listErc721 %s: native %s, eth_getBalance %s", k.addr, got.NativeTokenBalance.Balance, w)
				}
			}
		}
	})
}

func TestErc20Filters(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		dave := "0x97962fd085b56702d6117ccd744d38335e1fcfe3" // holds both ERC-20s at the tip
		erc20, child := e.net.CChainContracts["erc20"], e.net.CChainContracts["factoryChild"]
		list := func(q string) []string {
			var got erc20List
			e.ok(t, "/v1/chains/88888/addresses/"+dave+"/balances:listErc20?"+q, &got)
			var out []string
			for _, b := range got.Erc20TokenBalances {
				out = append(out, b.Address)
			}
			sort.Strings(out)
			return out
		}
		all := []string{erc20, child}
		sort.Strings(all)
		for q, want := range map[string][]string{
			"":                           all,
			"filterSpamTokens=false":     all,
			"filterSpamTokens=true":      all,
			"contractAddresses=" + erc20: {erc20},
			"contractAddresses=0x" + strings.ToUpper(child[2:]):            {child},
			"contractAddresses=" + erc20 + "," + child:                     all,
			"contractAddresses=" + erc20 + ",%20" + erc20:                  {erc20},
			"contractAddresses=" + erc20 + "&contractAddresses=" + child:   all,
			"contractAddresses=0x0000000000000000000000000000000000000001": {},
			"contractAddresses=" + child + "&blockNumber=34":               {}, // created at 34, reaches dave at 35
			"contractAddresses=" + child + "&blockNumber=35":               {child},
		} {
			got := list(q)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%s: %v, want %v", q, got, want)
			}
		}
		many := make([]string, 101)
		for i := range many {
			many[i] = fmt.Sprintf("0x%040x", i+1)
		}
		base := "/v1/chains/88888/addresses/" + dave + "/balances:listErc20?"
		for q, want := range map[string][]string{
			"filterSpamTokens=maybe":                       {"filterSpamTokens"},
			"contractAddresses=" + strings.Join(many, ","): {"contractAddresses", "100"},
			"contractAddresses=0x1234":                     {"contractAddresses"},
			"contractAddresses=" + erc20[2:]:               {"contractAddresses"},
			"pageSize=0":                                   {"pageSize"},
			"pageSize=501":                                 {"pageSize", "500"},
			"pageSize=ten":                                 {"pageSize"},
			"blockNumber=1000":                             {"blockNumber"},
			"currency=xyz":                                 {"currency"},
			"pageToken=abc":                                {"pageToken"},
			"pageSize=0&filterSpamTokens=1&contractAddresses=0x12": {"pageSize", "filterSpamTokens", "contractAddresses"},
		} {
			e.fails(t, base+q, 400, want...)
		}
		e.fails(t, "/v1/chains/43114/addresses/"+dave+"/balances:listErc20", 404, "43114")
		e.fails(t, "/v1/chains/88888/addresses/dave/balances:listErc20", 400, "address")
	})
}

type nftItem struct {
	Address      string `json:"address"`
	Name         string `json:"name"`
	Symbol       string `json:"symbol"`
	ErcType      string `json:"ercType"`
	TokenID      string `json:"tokenId"`
	TokenURI     string `json:"tokenUri"`
	OwnerAddress string `json:"ownerAddress"`
	ChainID      string `json:"chainId"`
	Balance      string `json:"balance"`
	Metadata     struct {
		IndexStatus string `json:"indexStatus"`
	} `json:"metadata"`
}

type nftList struct {
	NextPageToken        string    `json:"nextPageToken"`
	Erc721TokenBalances  []nftItem `json:"erc721TokenBalances"`
	Erc1155TokenBalances []nftItem `json:"erc1155TokenBalances"`
	CollectibleBalances  []nftItem `json:"collectibleBalances"`
	Tokens               []nftItem `json:"tokens"`
}

// erc721Owners reads the recorded ownerOf(1..5): token id -> owner.
func erc721Owners(e *env, t *testing.T) map[string]string {
	out := map[string]string{}
	nft := e.net.CChainContracts["erc721"]
	for _, c := range e.rec.ethCalls(t) {
		if c.To == nft && strings.HasPrefix(c.Data, "0x6352211e") && !c.Reverted {
			out[hexDec(t, "0x"+c.Data[10:])] = "0x" + c.Result[26:]
		}
	}
	if len(out) != 4 {
		t.Fatalf("recorded ownerOf answers: %v", out)
	}
	return out
}

// erc1155Balances reads the recorded balanceOf(holder, id): holder -> "token/id" -> balance (non-zero).
func erc1155Balances(e *env, t *testing.T) map[string]map[string]string {
	out := map[string]map[string]string{}
	multi := e.net.CChainContracts["erc1155"]
	n := 0
	for _, c := range e.rec.ethCalls(t) {
		if c.To != multi || !strings.HasPrefix(c.Data, "0x00fdd58e") || c.Reverted {
			continue
		}
		n++
		h := "0x" + c.Data[34:74]
		id := hexDec(t, "0x"+c.Data[74:138])
		if out[h] == nil {
			out[h] = map[string]string{}
		}
		if v := hexDec(t, c.Result); v != "0" {
			out[h][multi+"/"+id] = v
		}
	}
	if n != 25 {
		t.Fatalf("%d recorded ERC-1155 balanceOf answers, want 25", n)
	}
	return out
}

// ERC-721 balances equal the recorded ownerOf answers, and their count the
// recorded balanceOf.
func TestErc721Balances(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		nft := e.net.CChainContracts["erc721"]
		owners := erc721Owners(e, t)
		want := map[string][]string{}
		for id, o := range owners {
			want[o] = append(want[o], id)
		}
		counts := map[string]int64{}
		for _, c := range e.rec.ethCalls(t) {
			if c.To == nft && strings.HasPrefix(c.Data, "0x70a08231") {
				counts["0x"+c.Data[34:74]] = hexBig(t, c.Result).Int64()
			}
		}
		for _, h := range holders(e, t) {
			for _, q := range []string{"", "?contractAddress=" + nft, "?contractAddress=" + strings.ToUpper(nft[:1]) + "X" + strings.ToUpper(nft[2:]), "?pageSize=1"} {
				var ids []string
				path := "/v1/chains/88888/addresses/" + h + "/balances:listErc721" + q
				for _, it := range listAll(t, e, path, func(l nftList) []nftItem { return l.Erc721TokenBalances }) {
					ids = append(ids, it.TokenID)
					if it.Address != nft || it.ErcType != "ERC-721" || it.OwnerAddress != h || it.ChainID != "88888" ||
						it.Metadata.IndexStatus != "UNINDEXED" {
						t.Errorf("%s: %+v", path, it)
					}
				}
				w := append([]string(nil), want[h]...)
				sort.Strings(w)
				if strings.Join(ids, ",") != strings.Join(w, ",") {
					t.Errorf("%s: tokens %v, ownerOf says %v", path, ids, w)
				}
				if int64(len(ids)) != counts[h] {
					t.Errorf("%s: %d tokens, balanceOf says %d", path, len(ids), counts[h])
				}
			}
			var none nftList
			e.ok(t, "/v1/chains/88888/addresses/"+h+"/balances:listErc721?contractAddress="+e.net.CChainContracts["erc20"], &none)
			if len(none.Erc721TokenBalances) != 0 {
				t.Errorf("%s: ERC-721 balances in an ERC-20 contract: %+v", h, none.Erc721TokenBalances)
			}
		}
		e.fails(t, "/v1/chains/88888/addresses/"+nft+"/balances:listErc721?contractAddress=0x1", 400, "contractAddress")
		e.fails(t, "/v1/chains/88888/addresses/"+nft+"/balances:listErc721?pageSize=501", 400, "pageSize")
	})
}

// ERC-1155 balances equal the recorded balanceOf answers (5 holders × ids
// 1..5) and the recorded balanceOfBatch; past blocks, the logs' sums.
func TestErc1155Balances(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		multi := e.net.CChainContracts["erc1155"]
		want := erc1155Balances(e, t)
		checkBatch(t, e, want)
		for h, w := range want {
			for _, q := range []string{"", "?contractAddress=" + multi, "?blockNumber=37", "?pageSize=2"} {
				path := "/v1/chains/88888/addresses/" + h + "/balances:listErc1155" + q
				got := map[string]string{}
				for _, it := range listAll(t, e, path, func(l nftList) []nftItem { return l.Erc1155TokenBalances }) {
					got[it.Address+"/"+it.TokenID] = it.Balance
					if it.ErcType != "ERC-1155" || it.ChainID != "88888" || it.Metadata.IndexStatus != "UNINDEXED" {
						t.Errorf("%s: %+v", path, it)
					}
				}
				if fmtMap(got) != fmtMap(w) {
					t.Errorf("%s: %s, balanceOf says %s", path, fmtMap(got), fmtMap(w))
				}
			}
		}
		xs := e.rec.logTransfers(t)
		for n := int64(0); n <= recordedTip; n++ {
			exp := tokenBalancesAt(xs, "ERC-1155", n)
			for _, h := range holders(e, t) {
				path := fmt.Sprintf("/v1/chains/88888/addresses/%s/balances:listErc1155?blockNumber=%d&pageSize=1", h, n)
				got := map[string]string{}
				for _, it := range listAll(t, e, path, func(l nftList) []nftItem { return l.Erc1155TokenBalances }) {
					got[it.Address+"/"+it.TokenID] = it.Balance
				}
				w := map[string]string{}
				for k, v := range exp[h] {
					w[k] = v.String()
				}
				if fmtMap(got) != fmtMap(w) {
					t.Errorf("%s: %s, logs say %s", path, fmtMap(got), fmtMap(w))
				}
			}
		}
	})
}

// checkBatch holds the recorded balanceOfBatch answer against balanceOf's.
func checkBatch(t *testing.T, e *env, want map[string]map[string]string) {
	multi := e.net.CChainContracts["erc1155"]
	for _, c := range e.rec.ethCalls(t) {
		if c.To != multi || !strings.HasPrefix(c.Data, "0x4e1273f4") {
			continue
		}
		d := c.Data[10:]
		w := func(s string, i int) *big.Int { return hexBig(t, "0x"+s[64*i:64*i+64]) }
		aOff, iOff := int(w(d, 0).Int64()/32), int(w(d, 1).Int64()/32)
		n := int(w(d, aOff).Int64())
		r := strings.TrimPrefix(c.Result, "0x")
		rOff := int(w(r, 0).Int64() / 32)
		if int(w(r, rOff).Int64()) != n || n == 0 {
			t.Fatalf("balanceOfBatch: %d results for %d queries", w(r, rOff).Int64(), n)
		}
		for i := 0; i < n; i++ {
			h := "0x" + d[64*(aOff+1+i)+24:64*(aOff+2+i)]
			id := w(d, iOff+1+i).String()
			v := w(r, rOff+1+i).String()
			if got := want[h][multi+"/"+id]; got != v && !(got == "" && v == "0") {
				t.Errorf("balanceOfBatch %s/%s = %s, balanceOf %q", h, id, v, got)
			}
		}
		return
	}
	t.Fatal("no recorded balanceOfBatch")
}

// Collectibles are the ERC-721 and ERC-1155 holdings together.
func TestCollectibles(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		nft := e.net.CChainContracts["erc721"]
		owners := erc721Owners(e, t)
		multi := erc1155Balances(e, t)
		for _, h := range holders(e, t) {
			want := map[string]string{}
			for id, o := range owners {
				if o == h {
					want["ERC-721 "+nft+"/"+id] = "1"
				}
			}
			for k, v := range multi[h] {
				want["ERC-1155 "+k] = v
			}
			for _, q := range []string{"", "?pageSize=1", "?pageSize=2", "?contractAddress=" + nft} {
				path := "/v1/chains/88888/addresses/" + h + "/balances:listCollectibles" + q
				got := map[string]string{}
				var order []string
				for _, it := range listAll(t, e, path, func(l nftList) []nftItem { return l.CollectibleBalances }) {
					b := it.Balance
					if it.ErcType == "ERC-721" {
						b = "1"
						if it.OwnerAddress != h {
							t.Errorf("%s: %+v", path, it)
						}
					}
					k := it.ErcType + " " + it.Address + "/" + it.TokenID
					if _, dup := got[k]; dup {
						t.Errorf("%s: %s twice", path, k)
					}
					got[k] = b
					order = append(order, it.Address+"/"+it.TokenID)
				}
				w := want
				if strings.Contains(q, "contractAddress") {
					w = map[string]string{}
					for k, v := range want {
						if strings.HasPrefix(k, "ERC-721 ") {
							w[k] = v
						}
					}
				}
				if fmtMap(got) != fmtMap(w) {
					t.Errorf("%s: %s, want %s", path, fmtMap(got), fmtMap(w))
				}
				if !sort.StringsAreSorted(order) {
					t.Errorf("%s: not in (contract, token id) order: %v", path, order)
				}
			}
		}
	})
}

// listAll follows nextPageToken to the end, returning every item.
func listAll(t *testing.T, e *env, path string, items func(nftList) []nftItem) []nftItem {
	t.Helper()
	var out []nftItem
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	p := path
	for i := 0; i < 100; i++ {
		var l nftList
		e.ok(t, p, &l)
		out = append(out, items(l)...)
		if l.NextPageToken == "" {
			return out
		}
		if len(items(l)) == 0 {
			t.Fatalf("%s: an empty page with a nextPageToken", p)
		}
		p = path + sep + "pageToken=" + url.QueryEscape(l.NextPageToken)
	}
	t.Fatalf("%s: too many pages", path)
	return nil
}
