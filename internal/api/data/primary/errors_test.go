package primary_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/utils/formatting/address"
)

// Every bad input is a 400 (or 404 for what does not exist here) whose
// ErrorBody names the parameter and says why.
func TestBadInput(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		alice := "custom1js9jhzvc6j53vp53h8cutnrv4lt4292t58me5h"
		mainnetAddr, err := address.FormatBech32("avax", make([]byte, 20))
		if err != nil {
			t.Fatal(err)
		}
		badChecksum := alice[:len(alice)-1] + "x"
		alpha := e.net.Stakers["alpha"].NodeID
		avax := e.net.AvaxAssetID
		blocks := "/v1/networks/testnet/blockchains/p-chain/blocks"
		utxos := "/v1/networks/testnet/blockchains/x-chain/utxos?addresses=" + alice
		putxos := "/v1/networks/testnet/blockchains/p-chain/utxos?addresses=" + alice
		assetTxs := "/v1/networks/testnet/blockchains/x-chain/assets/" + avax + "/transactions"
		rewards := "/v1/networks/testnet/rewards?nodeIds=" + alpha
		validators := "/v1/networks/testnet/validators/" + alpha
		lists := []string{blocks, utxos, assetTxs, rewards, validators}
		with := func(base, q string) string {
			if strings.Contains(base, "?") {
				return base + "&" + q
			}
			return base + "?" + q
		}
		type c struct {
			target string
			code   int
			want   []string
		}
		cases := []c{
			// network and chain
			{"/v1/networks/devnet/blockchains/p-chain/blocks", 400, []string{"network", "devnet"}},
			{"/v1/networks/mainnet/blockchains/p-chain/blocks", 404, []string{"mainnet", "not indexed"}},
			{"/v1/networks/mainnet/rewards?nodeIds=" + alpha, 404, []string{"mainnet"}},
			{"/v1/networks/mainnet/validators/" + alpha, 404, []string{"mainnet"}},
			{"/v1/networks/testnet/blockchains/q-chain/blocks", 400, []string{"blockchainId", "q-chain"}},
			{"/v1/networks/testnet/blockchains/q-chain/utxos?addresses=" + alice, 400, []string{"blockchainId", "q-chain"}},
			{"/v1/networks/testnet/blockchains/" + e.net.Subnets["A"].SubnetID + "/utxos?addresses=" + alice, 404, []string{"blockchain"}},
			{"/v1/networks/testnet/blockchains/c-chain/blocks", 400, []string{"blockchainId", "C-chain"}},
			{"/v1/networks/testnet/blockchains/p-chain/assets/" + avax + "/transactions", 400, []string{"blockchainId", "X-chain"}},
			{"/v1/networks/testnet/blockchains/c-chain/assets/" + avax + "/transactions", 400, []string{"blockchainId"}},
			// asset transactions
			{"/v1/networks/testnet/blockchains/x-chain/assets/notanid/transactions", 400, []string{"assetId"}},
			{"/v1/networks/testnet/blockchains/x-chain/assets/" + e.net.BlockchainIDs["X"] + "/transactions", 404, []string{"assetId", "not an asset"}},
			{with(assetTxs, "txTypes=Bogus"), 400, []string{"txTypes", "Bogus"}},
			{with(assetTxs, "txTypes=BaseTx,basetx"), 400, []string{"txTypes", "basetx"}},
			// UTXOs
			{"/v1/networks/testnet/blockchains/x-chain/utxos", 400, []string{"addresses", "required"}},
			{"/v1/networks/testnet/blockchains/x-chain/utxos?addresses=foo", 400, []string{"addresses", "foo"}},
			{"/v1/networks/testnet/blockchains/x-chain/utxos?addresses=" + mainnetAddr, 400, []string{"addresses", "another network"}},
			{"/v1/networks/testnet/blockchains/x-chain/utxos?addresses=" + badChecksum, 400, []string{"addresses"}},
			{"/v1/networks/testnet/blockchains/x-chain/utxos?addresses=Z-" + alice, 400, []string{"addresses", "prefix"}},
			{"/v1/networks/testnet/blockchains/x-chain/utxos?addresses=" + strings.Repeat(alice+",", 101), 400, []string{"addresses", "at most"}},
			{with(putxos, "assetId="+avax), 400, []string{"assetId", "X-chain"}},
			{with(utxos, "assetId=xyz"), 400, []string{"assetId"}},
			{with(utxos, "minUtxoAmount=-1"), 400, []string{"minUtxoAmount"}},
			{with(utxos, "minUtxoAmount=abc"), 400, []string{"minUtxoAmount"}},
			{with(utxos, "minUtxoAmount=1e999"), 400, []string{"minUtxoAmount"}},
			{with(utxos, "includeSpent=yes"), 400, []string{"includeSpent"}},
			{with(utxos, "sortBy=size"), 400, []string{"sortBy", "timestamp, amount"}},
			{with(utxos, "sortOrder=up"), 400, []string{"sortOrder", "asc, desc"}},
			// rewards
			{"/v1/networks/testnet/rewards", 400, []string{"addresses", "nodeIds"}},
			{"/v1/networks/testnet/rewards?addresses=,&nodeIds=", 400, []string{"addresses", "nodeIds"}},
			{"/v1/networks/testnet/blockchains/x-chain/utxos?addresses=,,", 400, []string{"addresses", "required"}},
			{"/v1/networks/testnet/rewards?nodeIds=node1", 400, []string{"nodeIds", "node1"}},
			{"/v1/networks/testnet/rewards?addresses=" + mainnetAddr, 400, []string{"addresses"}},
			{with(rewards, "currency=btc"), 400, []string{"currency", "btc"}},
			// validators
			{"/v1/networks/testnet/validators/NodeID-xyz", 400, []string{"nodeId"}},
			{"/v1/networks/testnet/validators/" + e.net.AvaxAssetID, 400, []string{"nodeId"}},
			{"/v1/networks/testnet/validators/NodeID-111111111111111111116DBWJs", 404, []string{"nodeId"}},
			{with(validators, "validationStatus=gone"), 400, []string{"validationStatus", "completed, active, pending, removed"}},
			// several problems at once: all of them
			{with(utxos, "pageSize=0&sortBy=x&includeSpent=2"), 400, []string{"pageSize", "sortBy", "includeSpent"}},
		}
		for _, l := range lists {
			for _, v := range []string{"0", "101", "-1", "abc", "1.5", "99999999999999999999"} {
				cases = append(cases, c{with(l, "pageSize="+v), 400, []string{"pageSize"}})
			}
			for _, v := range []string{"garbage", "a.b", strings.Repeat("A", 3000)} {
				cases = append(cases, c{with(l, "pageToken="+v), 400, []string{"pageToken"}})
			}
		}
		// The network-wide listings take up to 10000 a page.
		for _, l := range []string{"/v1/networks/testnet/blockchains", "/v1/networks/testnet/subnets"} {
			for _, v := range []string{"0", "10001", "-1", "abc"} {
				cases = append(cases, c{with(l, "pageSize="+v), 400, []string{"pageSize"}})
			}
			cases = append(cases, c{with(l, "pageToken=garbage"), 400, []string{"pageToken"}},
				c{with(l, "sortOrder=newest"), 400, []string{"sortOrder"}})
		}
		for _, l := range []string{blocks, assetTxs} {
			for _, p := range []string{"startTimestamp=-1", "endTimestamp=-5", "startTimestamp=x", "endTimestamp=1.5", "startTimestamp=10&endTimestamp=5"} {
				name := strings.SplitN(p, "=", 2)[0]
				cases = append(cases, c{with(l, p), 400, []string{name}})
			}
		}
		for _, tc := range cases {
			e.fails(t, tc.target, tc.code, tc.want...)
		}
	})
}

// A page token continues only the query that made it: same endpoint, same
// filters (the page size may change); tampered tokens are refused.
func TestPageTokensBound(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		alice := "X-custom1js9jhzvc6j53vp53h8cutnrv4lt4292t58me5h"
		type list struct{ first, other string }
		for _, l := range []list{
			{"/v1/networks/testnet/blockchains/p-chain/blocks?pageSize=2", "/v1/networks/testnet/blockchains/p-chain/blocks?pageSize=2&endTimestamp=99999999999"},
			{"/v1/networks/testnet/blockchains/p-chain/blocks?pageSize=2", "/v1/networks/testnet/blockchains/x-chain/blocks?pageSize=2"},
			{"/v1/networks/testnet/blockchains/x-chain/utxos?pageSize=1&addresses=" + alice, "/v1/networks/testnet/blockchains/x-chain/utxos?pageSize=1&sortBy=amount&addresses=" + alice},
			{"/v1/networks/testnet/blockchains/x-chain/utxos?pageSize=1&addresses=" + alice, "/v1/networks/testnet/blockchains/x-chain/utxos?pageSize=1&addresses=X-custom1w98xaclyc635teqmegl22hn756zrlu26x2u7mz"},
			{"/v1/networks/testnet/blockchains/x-chain/assets/" + e.net.AvaxAssetID + "/transactions?pageSize=1", "/v1/networks/testnet/blockchains/x-chain/assets/" + e.net.CreatedAssets["nft_DART"] + "/transactions?pageSize=1"},
			{"/v1/networks/testnet/rewards?pageSize=1&nodeIds=" + e.net.Stakers["alpha"].NodeID, "/v1/networks/testnet/rewards?pageSize=1&sortOrder=asc&nodeIds=" + e.net.Stakers["alpha"].NodeID},
			{"/v1/networks/testnet/validators/NodeID-PhPSRYpAVkb24819fsf9xQw66dPn13tu8?pageSize=1", "/v1/networks/testnet/validators/NodeID-G7oukoeZdnw9yNpwJBgso24HiJntdGXZP?pageSize=1"},
			{"/v1/networks/testnet/blockchains?pageSize=1", "/v1/networks/testnet/blockchains?pageSize=1&sortOrder=desc"},
			{"/v1/networks/testnet/subnets?pageSize=1", "/v1/networks/testnet/blockchains?pageSize=1"},
			// another endpoint
			{"/v1/networks/testnet/blockchains/p-chain/blocks?pageSize=2", "/v1/networks/testnet/validators/NodeID-PhPSRYpAVkb24819fsf9xQw66dPn13tu8?pageSize=1"},
		} {
			var p struct{ NextPageToken string }
			_, body := e.get(t, l.first)
			if err := json.Unmarshal(body, &p); err != nil || p.NextPageToken == "" {
				t.Fatalf("%s: no next page: %s", l.first, body)
			}
			tok := url.QueryEscape(p.NextPageToken)
			// The same query continues, with another page size too.
			if code, b := e.get(t, l.first+"&pageToken="+tok); code != 200 {
				t.Errorf("%s: own token refused: %s", l.first, b)
			}
			if code, b := e.get(t, strings.Replace(l.first, "pageSize=", "pageSize=3&x=", 1)+"&pageToken="+tok); code != 400 {
				t.Errorf("%s: token with an extra parameter: %d %s", l.first, code, b)
			}
			e.fails(t, l.other+"&pageToken="+tok, 400, "pageToken")
			tampered := p.NextPageToken[:len(p.NextPageToken)-3] + "AAA"
			e.fails(t, l.first+"&pageToken="+url.QueryEscape(tampered), 400, "pageToken")
		}
	})
}
