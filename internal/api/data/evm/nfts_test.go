package evm_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

// A collection's tokens: ERC-721 owners equal ownerOf, ERC-1155 ids are those
// the logs minted; ids in numeric order; one token by id; 404 for the
// nonexistent token 5 (ownerOf reverts for it).
func TestNFTTokens(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		nft, multi := e.net.CChainContracts["erc721"], e.net.CChainContracts["erc1155"]
		owners := erc721Owners(e, t)
		for _, q := range []string{"", "?pageSize=1", "?pageSize=3", "?pageSize=100"} {
			path := "/v1/chains/88888/nfts/collections/" + nft + "/tokens" + q
			var ids []string
			for _, it := range listAll(t, e, path, func(l nftList) []nftItem { return l.Tokens }) {
				ids = append(ids, it.TokenID)
				if it.OwnerAddress != owners[it.TokenID] || it.ErcType != "ERC-721" || it.Address != nft ||
					it.Metadata.IndexStatus != "UNINDEXED" || it.ChainID != "" {
					t.Errorf("%s: %+v (ownerOf %s)", path, it, owners[it.TokenID])
				}
			}
			if strings.Join(ids, ",") != "1,2,3,4" {
				t.Errorf("%s: ids %v", path, ids)
			}
		}
		minted := map[string]bool{}
		for _, x := range e.rec.logTransfers(t) {
			if x.Token == multi {
				minted[x.ID] = true
			}
		}
		var want []string
		for id := range minted {
			want = append(want, id)
		}
		sort.Strings(want)
		path := "/v1/chains/88888/nfts/collections/" + multi + "/tokens?pageSize=2"
		var ids []string
		for _, it := range listAll(t, e, path, func(l nftList) []nftItem { return l.Tokens }) {
			ids = append(ids, it.TokenID)
			if it.ErcType != "ERC-1155" || it.OwnerAddress != "" {
				t.Errorf("%s: %+v", path, it)
			}
		}
		if strings.Join(ids, ",") != strings.Join(want, ",") {
			t.Errorf("%s: ids %v, logs %v", path, ids, want)
		}

		for id, owner := range owners {
			var got map[string]any
			e.ok(t, "/v1/chains/c-chain/nfts/collections/"+strings.ToUpper(nft[:1])+"x"+nft[2:]+"/tokens/"+id, &got)
			if got["ownerAddress"] != owner || got["tokenId"] != id || got["ercType"] != "ERC-721" {
				t.Errorf("token %s: %v", id, got)
			}
			md, _ := got["metadata"].(map[string]any)
			if md["indexStatus"] != "UNINDEXED" {
				t.Errorf("token %s metadata %v", id, md)
			}
			e.ok(t, "/v1/chains/88888/nfts/collections/"+nft+"/tokens/000"+id, &got) // leading zeros: the same id
			if got["tokenId"] != id {
				t.Errorf("000%s: %v", id, got)
			}
		}
		var one map[string]any
		e.ok(t, "/v1/chains/88888/nfts/collections/"+multi+"/tokens/4", &one)
		if one["ercType"] != "ERC-1155" || one["tokenId"] != "4" {
			t.Errorf("ERC-1155 token 4: %v", one)
		}
		b, _ := json.Marshal(one)
		if strings.Contains(string(b), "ownerAddress") || strings.Contains(string(b), "chainId") {
			t.Errorf("ERC-1155 token: %s", b)
		}

		e.fails(t, "/v1/chains/88888/nfts/collections/"+nft+"/tokens/5", 404, "5")
		e.fails(t, "/v1/chains/88888/nfts/collections/"+nft+"/tokens/abc", 400, "tokenId")
		e.fails(t, "/v1/chains/88888/nfts/collections/"+nft+"/tokens/-1", 400, "tokenId")
		e.fails(t, "/v1/chains/88888/nfts/collections/"+nft+"/tokens/"+strings.Repeat("9", 79), 400, "tokenId")
		e.fails(t, "/v1/chains/88888/nfts/collections/"+nft+"/tokens/"+
			"115792089237316195423570985008687907853269984665640564039457584007913129639936", 400, "tokenId") // 2^256
		e.fails(t, "/v1/chains/88888/nfts/collections/0xabc/tokens/1", 400, "address")
		e.fails(t, "/v1/chains/88888/nfts/collections/0xabc/tokens", 400, "address")
		e.fails(t, "/v1/chains/88888/nfts/collections/"+nft+"/tokens?pageSize=101", 400, "pageSize")
		e.fails(t, "/v1/chains/1234/nfts/collections/"+nft+"/tokens", 404, "1234")
		var empty nftList
		e.ok(t, "/v1/chains/88888/nfts/collections/"+e.net.CChainContracts["erc20"]+"/tokens", &empty)
		if len(empty.Tokens) != 0 || empty.NextPageToken != "" {
			t.Errorf("ERC-20 collection: %+v", empty)
		}
	})
}
