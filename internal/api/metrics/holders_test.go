package metrics_test

import (
	"bytes"
	"encoding/json"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

type contractSet struct {
	erc20, erc721, erc1155, factory string // as network.json writes them (checksummed)
}

func contracts(t *testing.T, dir string) contractSet {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "network.json"))
	if err != nil {
		t.Fatal(err)
	}
	var n struct {
		C map[string]string `json:"cChainContracts"`
	}
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	return contractSet{erc20: n.C["erc20"], erc721: n.C["erc721"], erc1155: n.C["erc1155"], factory: n.C["factory"]}
}

type holderEntry struct {
	Address string
	SortKey string
}

type holdersBody struct {
	NextPageToken     string
	Addresses         []holderEntry
	NftCollectionName *string
	NftSymbol         *string
	TotalHolders      int64
	TotalTokens       string
}

// decodeHolders reads a listHolders answer, checking the field names and
// that sortKey, totalHolders and totalTokens are JSON integers.
func decodeHolders(t *testing.T, body []byte) holdersBody {
	t.Helper()
	var raw map[string]any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		t.Fatalf("listHolders body %s: %v", body, err)
	}
	var out holdersBody
	for k, v := range raw {
		switch k {
		case "nextPageToken":
			out.NextPageToken, _ = v.(string)
		case "nftCollectionName", "nftSymbol":
			s, ok := v.(string)
			if !ok {
				t.Fatalf("%s is not a string: %s", k, body)
			}
			if k == "nftSymbol" {
				out.NftSymbol = &s
			} else {
				out.NftCollectionName = &s
			}
		case "totalHolders":
			n, ok := v.(json.Number)
			if !ok {
				t.Fatalf("totalHolders is not a number: %s", body)
			}
			out.TotalHolders, _ = n.Int64()
		case "totalTokens":
			n, ok := v.(json.Number)
			if !ok || strings.ContainsAny(n.String(), ".eE") {
				t.Fatalf("totalTokens is not an integer: %s", body)
			}
			out.TotalTokens = n.String()
		case "addresses":
			list, ok := v.([]any)
			if !ok {
				t.Fatalf("addresses is not an array: %s", body)
			}
			out.Addresses = []holderEntry{}
			for _, it := range list {
				m, _ := it.(map[string]any)
				a, _ := m["address"].(string)
				n, ok := m["sortKey"].(json.Number)
				if len(m) != 2 || a == "" || !ok || strings.ContainsAny(n.String(), ".eE") {
					t.Fatalf("holder entry %v: want {address, sortKey integer}", it)
				}
				out.Addresses = append(out.Addresses, holderEntry{a, n.String()})
			}
		default:
			t.Fatalf("unexpected field %q in %s", k, body)
		}
	}
	if out.Addresses == nil {
		t.Fatalf("no addresses array: %s", body)
	}
	return out
}

func (s *server) holders(t *testing.T, chain, contract string, q url.Values) holdersBody {
	t.Helper()
	code, body := s.get(t, "/v2/chains/"+url.PathEscape(chain)+"/contracts/"+url.PathEscape(contract)+"/nfts:listHolders?"+q.Encode())
	if code != http.StatusOK {
		t.Fatalf("listHolders %s %s?%s: %d %s", chain, contract, q.Encode(), code, body)
	}
	return decodeHolders(t, body)
}

// expectedHolders is the listing from the recorded eth_call answers:
// ERC-721 from ownerOf(id) of every id asked (the recorded balanceOf answers
// must agree), ERC-1155 from balanceOf(holder, id), summed over ids.
func expectedHolders(t *testing.T, dir string) (erc721, erc1155 []holderEntry, asked1155 map[string]bool) {
	t.Helper()
	cs := contracts(t, dir)
	nft, multi := strings.ToLower(cs.erc721), strings.ToLower(cs.erc1155)
	owned := map[string]*big.Int{}
	units := map[string]*big.Int{}
	balanceOf721 := map[string]*big.Int{}
	asked1155 = map[string]bool{}
	for _, c := range recordedCalls(t) {
		switch {
		case c.To == nft && strings.HasPrefix(c.Data, "0x6352211e") && c.Result != "": // ownerOf
			o := wordAddr(t, c.Result, 0)
			if owned[o] == nil {
				owned[o] = new(big.Int)
			}
			owned[o].Add(owned[o], big.NewInt(1))
		case c.To == nft && strings.HasPrefix(c.Data, "0x70a08231") && c.Result != "": // balanceOf(address)
			balanceOf721[wordAddr(t, "0x"+c.Data[10:], 0)] = wordInt(t, c.Result, 0)
		case c.To == multi && strings.HasPrefix(c.Data, "0x00fdd58e") && c.Result != "": // balanceOf(address,uint256)
			h := wordAddr(t, "0x"+c.Data[10:], 0)
			asked1155[h] = true
			if units[h] == nil {
				units[h] = new(big.Int)
			}
			units[h].Add(units[h], wordInt(t, c.Result, 0))
		}
	}
	if len(owned) == 0 || len(units) == 0 || len(balanceOf721) == 0 {
		t.Fatal("recording lacks the NFT calls")
	}
	for a, n := range balanceOf721 {
		o := owned[a]
		if o == nil {
			o = new(big.Int)
		}
		if o.Cmp(n) != 0 {
			t.Fatalf("recording: ownerOf gives %s %s tokens, balanceOf %s", a, o, n)
		}
	}
	list := func(m map[string]*big.Int) []holderEntry {
		var out []holderEntry
		for a, n := range m {
			if n.Sign() > 0 {
				out = append(out, holderEntry{a, n.String()})
			}
		}
		sort.Slice(out, func(i, j int) bool {
			a, _ := new(big.Int).SetString(out[i].SortKey, 10)
			b, _ := new(big.Int).SetString(out[j].SortKey, 10)
			if c := a.Cmp(b); c != 0 {
				return c > 0
			}
			return out[i].Address < out[j].Address
		})
		return out
	}
	return list(owned), list(units), asked1155
}

func sum(hs []holderEntry) string {
	s := new(big.Int)
	for _, h := range hs {
		v, _ := new(big.Int).SetString(h.SortKey, 10)
		s.Add(s, v)
	}
	return s.String()
}

// The holders of the recorded ERC-721 and ERC-1155 contracts, their order
// (sortKey descending, then address), totals, and pageSize-1 walks.
func TestListHoldersMatchesRecording(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := newServer(t, backend)
			cs := contracts(t, s.env.Dir)
			want721, want1155, asked := expectedHolders(t, s.env.Dir)
			names := map[string]string{}
			for _, c := range recordedCalls(t) {
				if strings.HasPrefix(c.Data, "0x06fdde03") && c.Result != "" {
					names[c.To] = abiString(t, c.Result)
				}
			}
			for _, c := range []struct {
				contract string
				want     []holderEntry
			}{{cs.erc721, want721}, {cs.erc1155, want1155}} {
				got := s.holders(t, "c-chain", c.contract, url.Values{})
				if c.contract == cs.erc1155 {
					for _, h := range got.Addresses {
						if !asked[h.Address] {
							t.Errorf("holder %s of the ERC-1155 contract was never asked in the recording", h.Address)
						}
					}
				}
				if !reflect.DeepEqual(got.Addresses, c.want) {
					t.Errorf("%s holders %v, want %v", c.contract, got.Addresses, c.want)
				}
				if got.TotalHolders != int64(len(c.want)) || got.TotalTokens != sum(c.want) || got.NextPageToken != "" {
					t.Errorf("%s totals %d holders %s tokens (token %q), want %d, %s", c.contract, got.TotalHolders, got.TotalTokens,
						got.NextPageToken, len(c.want), sum(c.want))
				}
				// Metadata is shown only when known, and then as the contract answers.
				if got.NftCollectionName != nil && *got.NftCollectionName != names[strings.ToLower(c.contract)] {
					t.Errorf("%s nftCollectionName %q, recorded name() %q", c.contract, *got.NftCollectionName, names[strings.ToLower(c.contract)])
				}

				// pageSize 1: one holder per page, a token while more remain.
				var walked []holderEntry
				q := url.Values{"pageSize": {"1"}}
				for i := 0; ; i++ {
					p := s.holders(t, "c-chain", c.contract, q)
					walked = append(walked, p.Addresses...)
					if len(p.Addresses) != 1 || p.TotalHolders != got.TotalHolders || p.TotalTokens != got.TotalTokens {
						t.Fatalf("page %d: %+v", i, p)
					}
					if (p.NextPageToken != "") != (i < len(c.want)-1) {
						t.Fatalf("page %d of %d: nextPageToken %q", i, len(c.want), p.NextPageToken)
					}
					if p.NextPageToken == "" {
						break
					}
					q.Set("pageToken", p.NextPageToken)
				}
				if !reflect.DeepEqual(walked, c.want) {
					t.Errorf("%s pageSize 1 walk %v, want %v", c.contract, walked, c.want)
				}
			}

			// The same answer by every chain name and address spelling.
			ref := s.holders(t, "c-chain", cs.erc1155, url.Values{})
			for _, v := range []struct{ chain, addr string }{
				{s.env.Network.Chain["C"].EVMChainID, strings.ToLower(cs.erc1155)},
				{s.env.Network.Chain["C"].BlockchainID, strings.ToUpper(cs.erc1155[2:])},
				{"C", "0X" + strings.ToUpper(cs.erc1155[2:])},
			} {
				if got := s.holders(t, v.chain, v.addr, url.Values{}); !reflect.DeepEqual(got, ref) {
					t.Errorf("%s %s: %+v, want %+v", v.chain, v.addr, got, ref)
				}
			}

			// An expired token restarts the listing.
			p1 := s.holders(t, "c-chain", cs.erc721, url.Values{"pageSize": {"2"}})
			s.clock.add(24 * time.Hour)
			p2 := s.holders(t, "c-chain", cs.erc721, url.Values{"pageSize": {"2"}, "pageToken": {p1.NextPageToken}})
			if !reflect.DeepEqual(p2.Addresses, p1.Addresses) {
				t.Errorf("expired token: %v, want the first page %v", p2.Addresses, p1.Addresses)
			}
			// A token of one contract on another: 400.
			code, body := s.get(t, "/v2/chains/c-chain/contracts/"+cs.erc1155+"/nfts:listHolders?pageToken="+p2.NextPageToken)
			checkError(t, code, body, http.StatusBadRequest, "pageToken was issued for another query: address")
		})
	}
}

func TestListHoldersBadInput(t *testing.T) {
	s := newServer(t, "sqlite")
	cs := contracts(t, s.env.Dir)
	path := func(chain, addr, q string) string {
		return "/v2/chains/" + chain + "/contracts/" + addr + "/nfts:listHolders" + q
	}
	cases := []struct {
		path   string
		status int
		want   string
	}{
		{path("c-chain", cs.erc20, ""), 400, "is not an NFT contract (ERC-721 or ERC-1155): it is an ERC-20 contract"},
		{path("c-chain", cs.factory, ""), 400, "no token standard was detected"},
		{path("c-chain", "0x000000000000000000000000000000000000dead", ""), 404, "is not known on chain 88888"},
		{path("c-chain", "0x123", ""), 400, "address"},
		{path("c-chain", "0x"+strings.Repeat("g", 40), ""), 400, "address"},
		{path("c-chain", strings.Repeat("a", 300), ""), 400, "address"},
		{path("43114", cs.erc721, ""), 404, "not indexed"},
		{path("p-chain", cs.erc721, ""), 404, "not indexed"},
		{path(s.env.Network.Chain["X"].BlockchainID, cs.erc721, ""), 404, "not indexed"},
		{path("c-chain", cs.erc721, "?pageSize=0"), 400, "pageSize"},
		{path("c-chain", cs.erc721, "?pageSize=5001"), 400, "pageSize"},
		{path("c-chain", cs.erc721, "?pageSize=ten"), 400, "pageSize"},
		{path("c-chain", cs.erc721, "?pageToken=nope"), 400, "pageToken"},
	}
	for _, c := range cases {
		code, body := s.get(t, c.path)
		checkError(t, code, body, c.status, c.want)
	}
	code, body := s.get(t, path("c-chain", "0x12", "?pageSize=0"))
	var e struct{ Message []string }
	if code != 400 || json.Unmarshal(body, &e) != nil || len(e.Message) != 2 {
		t.Errorf("two problems: %d %s", code, body)
	}
	for _, q := range []string{"?pageSize=1", "?pageSize=5000", ""} {
		if code, body := s.get(t, path("c-chain", cs.erc721, q)); code != 200 {
			t.Errorf("%s: %d %s", q, code, body)
		}
	}
}
