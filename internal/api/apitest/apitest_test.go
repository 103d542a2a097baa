package apitest

import (
	"strings"
	"testing"
)

// The validator must accept conforming bodies and reject each kind of
// deviation, so the handler tests that rely on it can fail.
func TestCheckResponse(t *testing.T) {
	s := Load(t)
	const utxo = `{"addresses":["custom1abc"],"asset":{"assetId":"a","name":"Avalanche","symbol":"AVAX","denomination":9,"type":"secp256k1","amount":"1"},"consumedOnChainId":"x","createdOnChainId":"x","utxoId":"u","amount":"1","assetId":"a","blockNumber":"1","blockTimestamp":1,"outputIndex":0,"txHash":"t","utxoType":"%s"%s}`
	pUTXOs := func(typ, extra string) string {
		return `{"utxos":[` + strings.Replace(strings.Replace(utxo, "%s", typ, 1), "%s", extra, 1) + `],"chainInfo":{"chainName":"p-chain","network":"testnet"}}`
	}
	active := `{"validators":[{"txHash":"t","nodeId":"n","subnetId":"s","amountStaked":"1","startTimestamp":1,"endTimestamp":2,"validationStatus":"active","stakePercentage":1.5,"delegatorCount":0,"uptimePerformance":100,"potentialRewards":{"validationRewardAmount":"1","delegationRewardAmount":"0"},"validatorHealth":{"reachabilityPercent":100,"benchedPChainRequestsPercent":0,"benchedXChainRequestsPercent":0,"benchedCChainRequestsPercent":0},"geolocation":%s}]}`
	cases := []struct {
		name, path string
		status     int
		body       string
		ok         bool
		want       string
	}{
		{"p utxo", "/v1/networks/testnet/blockchains/p-chain/utxos", 200, pUTXOs("TRANSFER", ""), true, ""},
		{"p utxo bad enum", "/v1/networks/testnet/blockchains/p-chain/utxos", 200, pUTXOs("transfer", ""), false, "utxoType"},
		{"p utxo unknown field", "/v1/networks/testnet/blockchains/p-chain/utxos", 200, pUTXOs("STAKE", `,"stakd":true`), false, "stakd"},
		{"p utxo wrong type", "/v1/networks/testnet/blockchains/p-chain/utxos", 200, pUTXOs("STAKE", `,"staked":"yes"`), false, "staked"},
		{"empty utxos is ambiguous", "/v1/networks/testnet/blockchains/p-chain/utxos", 200, `{"utxos":[],"chainInfo":{"chainName":"p-chain","network":"testnet"}}`, false, "oneOf"},
		{"active, no geolocation", "/v1/networks/testnet/validators/NodeID-x", 200, strings.Replace(active, "%s", "null", 1), true, ""},
		{"active, bad geolocation", "/v1/networks/testnet/validators/NodeID-x", 200, strings.Replace(active, "%s", `{"city":"x"}`, 1), false, "geolocation"},
		{"active missing required", "/v1/networks/testnet/validators/NodeID-x", 200, `{"validators":[{"txHash":"t","nodeId":"n","subnetId":"s","amountStaked":"1","startTimestamp":1,"endTimestamp":2,"validationStatus":"active"}]}`, false, "stakePercentage"},
		{"pending", "/v1/networks/testnet/validators/NodeID-x", 200, `{"validators":[{"txHash":"t","nodeId":"n","subnetId":"s","amountStaked":"1","startTimestamp":1,"endTimestamp":2,"validationStatus":"pending"}]}`, true, ""},
		{"bad status", "/v1/networks/testnet/validators/NodeID-x", 200, `{"validators":[{"txHash":"t","nodeId":"n","subnetId":"s","amountStaked":"1","startTimestamp":1,"endTimestamp":2,"validationStatus":"gone"}]}`, false, ""},
		{"error body", "/v1/networks/testnet/rewards", 400, `{"message":"x","statusCode":400,"error":"Bad Request"}`, true, ""},
		{"error body without message", "/v1/networks/testnet/rewards", 400, `{"statusCode":400,"error":"Bad Request"}`, false, "message"},
		{"undeclared status", "/v1/networks/testnet/rewards", 418, `{}`, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := s.CheckResponse("GET", tc.path+"?x=1", tc.status, []byte(tc.body))
			if tc.ok && err != nil {
				t.Fatalf("want valid: %v", err)
			}
			if !tc.ok {
				if err == nil {
					t.Fatal("want invalid, got valid")
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error does not name %q: %v", tc.want, err)
				}
			}
		})
	}
	if err := s.CheckSchema("ListPChainUtxosResponse", []byte(`{"utxos":[],"chainInfo":{"chainName":"p-chain","network":"testnet"}}`)); err != nil {
		t.Errorf("empty P list against its branch: %v", err)
	}
	if err := s.CheckSchema("ListUtxosResponse", []byte(`{"utxos":[],"chainInfo":{"chainName":"q-chain","network":"testnet"}}`)); err == nil {
		t.Error("bad chainName accepted")
	}
}

func TestCheckErrorBody(t *testing.T) {
	cases := []struct {
		status int
		body   string
		ok     bool
	}{
		{400, `{"message":"pageSize must be between 1 and 100","statusCode":400,"error":"Bad Request"}`, true},
		{429, `{"message":["a","b"],"statusCode":429,"error":"Too Many Requests"}`, true},
		{404, `{"message":"x","statusCode":400,"error":"Not Found"}`, false},
		{404, `{"message":"x","statusCode":404,"error":"Not found"}`, false},
		{404, `{"message":1,"statusCode":404,"error":"Not Found"}`, false},
		{404, `{"message":"x","statusCode":404,"error":"Not Found","extra":1}`, false},
	}
	for _, tc := range cases {
		if err := CheckErrorBody(tc.status, []byte(tc.body)); (err == nil) != tc.ok {
			t.Errorf("%d %s: %v", tc.status, tc.body, err)
		}
	}
}
