package evm_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/devnet"
)

// Contract metadata: ercType as the contracts answer supportsInterface and
// decimals(); deployment by the workload's creation txs and their senders;
// accounts are 404s.
func TestContractMetadata(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		// Expected ercType from the recorded calls.
		iface := map[string]map[string]bool{}
		hasDecimals := map[string]bool{}
		for _, c := range e.rec.ethCalls(t) {
			if strings.HasPrefix(c.Data, "0x01ffc9a7") && !c.Reverted {
				if iface[c.To] == nil {
					iface[c.To] = map[string]bool{}
				}
				iface[c.To][c.Data[10:18]] = hexBig(t, c.Result).Sign() != 0
			}
			if c.Data == "0x313ce567" && !c.Reverted {
				hasDecimals[c.To] = true
			}
		}
		wantType := func(a string) string {
			switch {
			case iface[a]["80ac58cd"]:
				return "ERC-721"
			case iface[a]["d9b67a26"]:
				return "ERC-1155"
			case hasDecimals[a]:
				return "ERC-20"
			}
			return "UNKNOWN"
		}
		// Creations: contract -> (tx, sender).
		senders := map[string]string{}
		e.rec.each("eth_getTransactionByHash", func(_ []json.RawMessage, res json.RawMessage) {
			var tx struct{ Hash, From string }
			_ = json.Unmarshal(res, &tx)
			senders[tx.Hash] = strings.ToLower(tx.From)
		})
		created := map[string]string{}
		for _, w := range devnet.LoadWorkload[struct {
			ContractAddress string `json:"contractAddress"`
		}](t) {
			if w.Type == "ContractCreation" {
				created[strings.ToLower(w.Extra.ContractAddress)] = w.TxID
			}
		}
		if len(created) != 4 {
			t.Fatalf("%d workload creations", len(created))
		}
		types := map[string]int{}
		for name, a := range e.net.CChainContracts {
			var got map[string]any
			e.ok(t, "/v1/chains/88888/addresses/"+strings.ToUpper(a[:1])+"x"+a[2:], &got)
			types[got["ercType"].(string)]++
			if got["ercType"] != wantType(a) || got["address"] != a {
				t.Errorf("%s (%s): %v, want ercType %s", name, a, got, wantType(a))
			}
			dd, has := got["deploymentDetails"].(map[string]any)
			if tx, ok := created[a]; ok {
				if !has || dd["txHash"] != tx || dd["deployerAddress"] != senders[tx] {
					t.Errorf("%s: deploymentDetails %v, want tx %s by %s", name, dd, tx, senders[tx])
				}
			} else if has {
				// Created inside the factory: the deploying tx needs traces.
				t.Errorf("%s: deploymentDetails %v for a contract created internally", name, dd)
			}
			if links, ok := got["resourceLinks"].([]any); !ok || len(links) != 0 {
				t.Errorf("%s: resourceLinks %v", name, got["resourceLinks"])
			}
			if tags, ok := got["tags"].([]any); !ok || len(tags) != 0 {
				t.Errorf("%s: tags %v", name, got["tags"])
			}
			if got["ercType"] == "ERC-20" {
				if _, ok := got["decimals"]; !ok {
					t.Errorf("%s: ERC-20 without decimals", name)
				}
			}
		}
		if types["ERC-20"] != 2 || types["ERC-721"] != 1 || types["ERC-1155"] != 1 || types["UNKNOWN"] != 1 {
			t.Errorf("ercTypes: %v", types)
		}
		for _, a := range []string{"0x03623add7ec6f6426d6266ed2e5a4734c786e73e", "0x0000000000000000000000000000000000000001"} {
			e.fails(t, "/v1/chains/88888/addresses/"+a, 404, a, "not a contract")
		}
		e.fails(t, "/v1/chains/88888/addresses/0x03623add7ec6f6426d6266ed2e5a4734c786e73", 400, "address")
		e.fails(t, "/v1/chains/nope/addresses/0x03623add7ec6f6426d6266ed2e5a4734c786e73e", 404, "nope")
	})
}

// The chain listing and one chain by each id form.
func TestChains(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		var l struct {
			Chains []map[string]any `json:"chains"`
		}
		for _, q := range []string{"", "?network=testnet", "?network=fuji", "?feature=nftIndexing", "?network=testnet&feature=nftIndexing"} {
			e.ok(t, "/v1/chains"+q, &l)
			if len(l.Chains) != 1 {
				t.Fatalf("/v1/chains%s: %v", q, l.Chains)
			}
			c := l.Chains[0]
			tok, _ := c["networkToken"].(map[string]any)
			if c["chainId"] != "88888" || c["platformChainId"] != e.net.BlockchainIDs["C"] || c["vmName"] != "EVM" ||
				c["status"] != "OK" || c["isTestnet"] != true || tok["symbol"] != "AVAX" || tok["decimals"] != json.Number("18") ||
				c["subnetId"] != "11111111111111111111111111111111LpoYY" || c["vmId"] == "" {
				t.Errorf("/v1/chains%s: %v", q, c)
			}
		}
		for _, q := range []string{"?network=mainnet", "?feature=webhooks"} {
			e.ok(t, "/v1/chains"+q, &l)
			if len(l.Chains) != 0 {
				t.Errorf("/v1/chains%s: %v", q, l.Chains)
			}
		}
		for _, id := range []string{"88888", "c-chain", e.net.BlockchainIDs["C"]} {
			var c map[string]any
			e.ok(t, "/v1/chains/"+id, &c)
			if c["chainId"] != "88888" || c["chainName"] == "" {
				t.Errorf("/v1/chains/%s: %v", id, c)
			}
		}
		e.fails(t, "/v1/chains?network=devnet", 400, "network")
		e.fails(t, "/v1/chains?feature=all", 400, "feature")
		e.fails(t, "/v1/chains/43114", 404, "43114")
		e.fails(t, "/v1/chains/"+e.net.BlockchainIDs["P"], 404, e.net.BlockchainIDs["P"])
	})
}
