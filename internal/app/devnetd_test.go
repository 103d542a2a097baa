package app

import (
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/replay"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// icmFixture is testdata/devnet-d/icm.json: the L1 and the seven real
// Teleporter messages between it and the C-chain, as the recorder logged them.
type icmFixture struct {
	L1 struct {
		BlockchainID        string `json:"blockchainID"`
		EVMChainID          int    `json:"evmChainID"`
		TeleporterMessenger string `json:"teleporterMessenger"`
		Relayer             string `json:"relayer"`
	} `json:"l1"`
	Messages []struct {
		N                       int    `json:"n"`
		Direction               string `json:"direction"`
		SourceBlockchainID      string `json:"sourceBlockchainID"`
		DestinationBlockchainID string `json:"destinationBlockchainID"`
		MessageID               string `json:"messageID"`
		MessageNonce            string `json:"messageNonce"`
		OriginSenderAddress     string `json:"originSenderAddress"`
		DestinationAddress      string `json:"destinationAddress"`
		FeeTokenAddress         string `json:"feeTokenAddress"`
		FeeAmount               string `json:"feeAmount"`
		Receipts                []struct {
			ReceivedMessageNonce string `json:"receivedMessageNonce"`
			RelayerRewardAddress string `json:"relayerRewardAddress"`
		} `json:"receipts"`
		MessagePayload       string `json:"messagePayload"`
		SendTxHash           string `json:"sendTxHash"`
		ReceiveTxHash        string `json:"receiveTxHash"`
		RelayerRewardAddress string `json:"relayerRewardAddress"`
		Execution            string `json:"execution"`
	} `json:"messages"`
}

// servedMessage is the served IcmMessage fields the test compares.
type servedMessage struct {
	MessageID               string `json:"messageId"`
	IcmContractAddress      string `json:"icmContractAddress"`
	SourceBlockchainID      string `json:"sourceBlockchainId"`
	DestinationBlockchainID string `json:"destinationBlockchainId"`
	SourceEvmChainID        string `json:"sourceEvmChainId"`
	DestinationEvmChainID   string `json:"destinationEvmChainId"`
	MessageNonce            string `json:"messageNonce"`
	From                    string `json:"from"`
	To                      string `json:"to"`
	Data                    string `json:"data"`
	MessageExecuted         bool   `json:"messageExecuted"`
	Receipts                []struct {
		ReceivedMessageNonce string `json:"receivedMessageNonce"`
		RelayerRewardAddress string `json:"relayerRewardAddress"`
	} `json:"receipts"`
	ReceiptDelivered bool `json:"receiptDelivered"`
	RewardDetails    *struct {
		Address string `json:"address"`
		Value   string `json:"value"`
	} `json:"rewardDetails"`
	SourceTransaction *struct {
		TxHash    string `json:"txHash"`
		Timestamp int64  `json:"timestamp"`
	} `json:"sourceTransaction"`
	DestinationTransaction *struct {
		TxHash           string `json:"txHash"`
		RewardRedeemer   string `json:"rewardRedeemer"`
		DelivererAddress string `json:"delivererAddress"`
	} `json:"destinationTransaction"`
	Status string `json:"status"`
}

func getJSON(t *testing.T, url string, out any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("GET %s: %v: %.300s", url, err, b)
		}
	}
	return resp.StatusCode
}

// TestDevnetD serves devnet-d, a real network with a subnet-evm L1 and seven
// real Teleporter messages between it and the C-chain: the L1 is found from
// the P-chain's CreateChainTx and indexed from its own genesis, and every
// message is served as its recorded txs imply, whichever chain's side came
// first, on both backends.
func TestDevnetD(t *testing.T) {
	if testing.Short() {
		t.Skip("serves and ingests a recording")
	}
	dir := filepath.Join(devnet.Root(t), "testdata", "devnet-d")
	rec, err := replay.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var fx icmFixture
	b, err := os.ReadFile(filepath.Join(dir, "icm.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Messages) != 7 {
		t.Fatalf("%d messages in icm.json", len(fx.Messages))
	}
	l1 := fmt.Sprint(fx.L1.EVMChainID)
	nodeURL := serveOnLoopback(t, replay.NewHandler(rec))
	tips := map[string]int64{"P": 67, "X": 57, "C": 136, l1: 12}

	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := startServe(t, backend, nodeURL, "devnet-d")
			waitFor(t, "every chain, the L1 included, at its recorded tip", func() bool {
				for chain, tip := range tips {
					if chainStatus(t, s.db, chain).IndexedHeight != tip {
						return false
					}
				}
				return true
			})
			if st := chainStatus(t, s.db, l1); st.BlockchainID != fx.L1.BlockchainID {
				t.Errorf("L1 registered as %+v", st)
			}

			// Which messages had their receipt carried back: a message of
			// the other direction lists its nonce.
			delivered := map[string]bool{}
			for _, m := range fx.Messages {
				for _, r := range m.Receipts {
					delivered[otherDirection(m.Direction)+"/"+r.ReceivedMessageNonce] = true
				}
			}
			evmID := map[string]string{fx.L1.BlockchainID: l1}
			for _, m := range fx.Messages {
				if m.SourceBlockchainID != fx.L1.BlockchainID {
					evmID[m.SourceBlockchainID] = "66666"
				}
			}
			sent := map[string]int64{} // message ID -> its source tx's time
			for _, m := range fx.Messages {
				var got servedMessage
				if code := getJSON(t, s.base+"/v1/icm/messages/"+m.MessageID, &got); code != 200 {
					t.Errorf("message %d: status %d", m.N, code)
					continue
				}
				want := servedMessage{
					MessageID: strings.TrimPrefix(m.MessageID, "0x"), IcmContractAddress: fx.L1.TeleporterMessenger,
					SourceBlockchainID: m.SourceBlockchainID, DestinationBlockchainID: m.DestinationBlockchainID,
					SourceEvmChainID: evmID[m.SourceBlockchainID], DestinationEvmChainID: evmID[m.DestinationBlockchainID],
					MessageNonce: m.MessageNonce, From: m.OriginSenderAddress, To: m.DestinationAddress, Data: m.MessagePayload,
					MessageExecuted: m.Execution == "executed", ReceiptDelivered: delivered[m.Direction+"/"+m.MessageNonce],
					Status: "delivered",
				}
				if got.MessageID != want.MessageID || !strings.EqualFold(got.IcmContractAddress, want.IcmContractAddress) ||
					got.SourceBlockchainID != want.SourceBlockchainID || got.DestinationBlockchainID != want.DestinationBlockchainID ||
					got.SourceEvmChainID != want.SourceEvmChainID || got.DestinationEvmChainID != want.DestinationEvmChainID ||
					got.MessageNonce != want.MessageNonce || !strings.EqualFold(got.From, want.From) || !strings.EqualFold(got.To, want.To) ||
					got.Data != want.Data || got.MessageExecuted != want.MessageExecuted || got.ReceiptDelivered != want.ReceiptDelivered ||
					got.Status != want.Status {
					t.Errorf("message %d:\n got %+v\nwant %+v", m.N, got, want)
				}
				if len(got.Receipts) != len(m.Receipts) {
					t.Errorf("message %d: %d receipts, want %d", m.N, len(got.Receipts), len(m.Receipts))
				} else {
					for i, r := range m.Receipts {
						if got.Receipts[i].ReceivedMessageNonce != r.ReceivedMessageNonce || !strings.EqualFold(got.Receipts[i].RelayerRewardAddress, r.RelayerRewardAddress) {
							t.Errorf("message %d receipt %d: %+v, want %+v", m.N, i, got.Receipts[i], r)
						}
					}
				}
				if fee, _ := new(big.Int).SetString(m.FeeAmount, 10); fee != nil && fee.Sign() > 0 {
					if got.RewardDetails == nil || !strings.EqualFold(got.RewardDetails.Address, m.FeeTokenAddress) || got.RewardDetails.Value != m.FeeAmount {
						t.Errorf("message %d: reward %+v, want %s of %s", m.N, got.RewardDetails, m.FeeAmount, m.FeeTokenAddress)
					}
				} else if got.RewardDetails != nil && got.RewardDetails.Value != "0" {
					t.Errorf("message %d: reward %+v, want none", m.N, got.RewardDetails)
				}
				if got.SourceTransaction == nil || got.SourceTransaction.TxHash != m.SendTxHash {
					t.Errorf("message %d: source tx %+v, want %s", m.N, got.SourceTransaction, m.SendTxHash)
				} else {
					sent[got.MessageID] = got.SourceTransaction.Timestamp
				}
				if d := got.DestinationTransaction; d == nil || d.TxHash != m.ReceiveTxHash ||
					!strings.EqualFold(d.RewardRedeemer, m.RelayerRewardAddress) || !strings.EqualFold(d.DelivererAddress, fx.L1.Relayer) {
					t.Errorf("message %d: destination tx %+v, want %s by %s", m.N, d, m.ReceiveTxHash, fx.L1.Relayer)
				}
				// The older Teleporter route serves the same message.
				var old servedMessage
				if code := getJSON(t, s.base+"/v1/teleporter/messages/"+m.MessageID, &old); code != 200 || old.MessageID != got.MessageID || old.Status != got.Status {
					t.Errorf("message %d on /v1/teleporter: %d %+v", m.N, code, old)
				}
				// Its send and receive transactions name it
				// (teleporterMessageInfo), with the other chain's EVM
				// chain id.
				for _, side := range []struct{ chain, tx, dir, src, dst string }{
					{evmID[m.SourceBlockchainID], m.SendTxHash, "SOURCE_TRANSACTION", "", evmID[m.DestinationBlockchainID]},
					{evmID[m.DestinationBlockchainID], m.ReceiveTxHash, "DESTINATION_TRANSACTION", evmID[m.SourceBlockchainID], ""},
				} {
					var tx struct {
						Info *struct {
							ID                 string `json:"teleporterMessageId"`
							Direction          string `json:"direction"`
							SourceChainID      string `json:"sourceChainId"`
							DestinationChainID string `json:"destinationChainId"`
						} `json:"teleporterMessageInfo"`
					}
					code := getJSON(t, s.base+"/v1/chains/"+side.chain+"/transactions/"+side.tx, &tx)
					if i := tx.Info; code != 200 || i == nil || i.ID != strings.TrimPrefix(m.MessageID, "0x") || i.Direction != side.dir ||
						i.SourceChainID != side.src || i.DestinationChainID != side.dst {
						t.Errorf("message %d: tx %s on %s: %d %+v, want %s %s src %q dst %q", m.N, side.tx, side.chain, code, tx.Info,
							m.MessageID, side.dir, side.src, side.dst)
					}
				}
			}

			// Listings: newest first, paged without repeats, filtered by
			// chain (cb58 or EVM chain id) and by address.
			list := func(query string) []string {
				var ids []string
				seen := map[string]bool{}
				url := s.base + "/v1/icm/messages?pageSize=2" + query
				for next := url; next != ""; {
					var page struct {
						Messages []struct {
							MessageID string `json:"messageId"`
						} `json:"messages"`
						NextPageToken string `json:"nextPageToken"`
					}
					if code := getJSON(t, next, &page); code != 200 {
						t.Fatalf("GET %s: %d", next, code)
					}
					for _, m := range page.Messages {
						if seen[m.MessageID] {
							t.Fatalf("%s: %s repeated", query, m.MessageID)
						}
						seen[m.MessageID] = true
						ids = append(ids, m.MessageID)
					}
					next = ""
					if page.NextPageToken != "" {
						next = url + "&pageToken=" + page.NextPageToken
					}
				}
				return ids
			}
			want := func(pred func(n int) bool) []string {
				var out []string
				for _, m := range fx.Messages {
					if pred(m.N) {
						out = append(out, strings.TrimPrefix(m.MessageID, "0x"))
					}
				}
				return out
			}
			fromL1 := func(n int) bool { return fx.Messages[n-1].SourceBlockchainID == fx.L1.BlockchainID }
			for query, exp := range map[string][]string{
				"": want(func(int) bool { return true }),
				"&sourceBlockchainId=" + fx.L1.BlockchainID: want(fromL1),
				"&destinationBlockchainId=" + l1:            want(func(n int) bool { return !fromL1(n) }),
				"&blockchainId=" + l1:                       want(func(int) bool { return true }),
				"&to=" + fx.Messages[2].DestinationAddress:  want(func(n int) bool { return n == 3 }),
			} {
				got := list(query)
				if !equalStrings(got, exp) {
					t.Errorf("list%s: %v, want %v", query, got, exp)
				}
				for i := 1; i < len(got); i++ {
					if sent[got[i]] > sent[got[i-1]] {
						t.Errorf("list%s: not newest first: %v", query, got)
					}
				}
			}
			var byAddr struct {
				Messages []struct{} `json:"messages"`
			}
			if code := getJSON(t, s.base+"/v1/teleporter/addresses/"+fx.Messages[0].OriginSenderAddress+"/messages?pageSize=100", &byAddr); code != 200 || len(byAddr.Messages) != 7 {
				t.Errorf("by sender: %d, %d messages", code, len(byAddr.Messages))
			}

			// The L1's native balances at its tip are the node's.
			balances := 0
			for _, e := range rec.Exchanges {
				if !strings.Contains(e.Endpoint, fx.L1.BlockchainID) || e.Method != "eth_getBalance" {
					continue
				}
				var p []string
				var r struct {
					Result string `json:"result"`
				}
				if json.Unmarshal(e.Params, &p) != nil || json.Unmarshal(e.Response, &r) != nil || len(p) != 2 {
					t.Fatalf("recorded eth_getBalance %s", e.Params)
				}
				balances++
				node, _ := new(big.Int).SetString(strings.TrimPrefix(r.Result, "0x"), 16)
				var got struct {
					NativeTokenBalance struct {
						Balance string `json:"balance"`
					} `json:"nativeTokenBalance"`
				}
				if code := getJSON(t, s.base+"/v1/chains/"+l1+"/addresses/"+p[0]+"/balances:getNative", &got); code != 200 || got.NativeTokenBalance.Balance != node.String() {
					t.Errorf("L1 balance of %s: %d %q, node says %s", p[0], code, got.NativeTokenBalance.Balance, node)
				}
			}
			if balances != 3 {
				t.Errorf("compared %d recorded L1 balances, want 3", balances)
			}

			// The L1's blocks and transactions are the node's
			// (eth_getBlockByNumber, eth_getTransactionByHash + receipt).
			l1Blocks, l1Txs := 0, 0
			for _, e := range rec.Exchanges {
				if !strings.Contains(e.Endpoint, fx.L1.BlockchainID) {
					continue
				}
				switch e.Method {
				case "eth_getBlockByNumber":
					var r struct {
						Result *struct {
							Number       string            `json:"number"`
							Hash         string            `json:"hash"`
							ParentHash   string            `json:"parentHash"`
							GasUsed      string            `json:"gasUsed"`
							Transactions []json.RawMessage `json:"transactions"`
						} `json:"result"`
					}
					if json.Unmarshal(e.Response, &r) != nil || r.Result == nil {
						continue
					}
					l1Blocks++
					b := r.Result
					n, _ := new(big.Int).SetString(strings.TrimPrefix(b.Number, "0x"), 16)
					gas, _ := new(big.Int).SetString(strings.TrimPrefix(b.GasUsed, "0x"), 16)
					var got struct {
						BlockNumber string `json:"blockNumber"`
						BlockHash   string `json:"blockHash"`
						ParentHash  string `json:"parentHash"`
						TxCount     int    `json:"txCount"`
						GasUsed     string `json:"gasUsed"`
					}
					code := getJSON(t, s.base+"/v1/chains/"+l1+"/blocks/"+b.Hash, &got)
					if code != 200 || got.BlockNumber != n.String() || got.BlockHash != b.Hash || got.ParentHash != b.ParentHash ||
						got.TxCount != len(b.Transactions) || got.GasUsed != gas.String() {
						t.Errorf("L1 block %s: %d %+v, node says %s %s parent %s, %d txs, gas %s", b.Number, code, got, n, b.Hash, b.ParentHash, len(b.Transactions), gas)
					}
				case "eth_getTransactionByHash":
					var r struct {
						Result *struct {
							Hash  string `json:"hash"`
							From  string `json:"from"`
							To    string `json:"to"`
							Value string `json:"value"`
							Nonce string `json:"nonce"`
						} `json:"result"`
					}
					if json.Unmarshal(e.Response, &r) != nil || r.Result == nil {
						continue
					}
					l1Txs++
					x := r.Result
					value, _ := new(big.Int).SetString(strings.TrimPrefix(x.Value, "0x"), 16)
					nonce, _ := new(big.Int).SetString(strings.TrimPrefix(x.Nonce, "0x"), 16)
					var got struct {
						NativeTransaction struct {
							TxHash string `json:"txHash"`
							Value  string `json:"value"`
							Nonce  string `json:"nonce"`
							From   struct {
								Address string `json:"address"`
							} `json:"from"`
							To struct {
								Address string `json:"address"`
							} `json:"to"`
						} `json:"nativeTransaction"`
					}
					code := getJSON(t, s.base+"/v1/chains/"+l1+"/transactions/"+x.Hash, &got)
					g := got.NativeTransaction
					if code != 200 || g.TxHash != x.Hash || !strings.EqualFold(g.From.Address, x.From) || (x.To != "" && !strings.EqualFold(g.To.Address, x.To)) ||
						g.Value != value.String() || g.Nonce != nonce.String() {
						t.Errorf("L1 tx %s: %d %+v, node says from %s to %s value %s nonce %s", x.Hash, code, g, x.From, x.To, value, nonce)
					}
				}
			}
			if l1Blocks < 12 || l1Txs < 12 {
				t.Errorf("compared %d L1 blocks and %d L1 txs", l1Blocks, l1Txs)
			}

			// The L1 validators on the P-chain (weights, fee balances left,
			// owners) are the node's platform.getL1Validator answers.
			validators := 0
			for _, e := range rec.Exchanges {
				if e.Endpoint != "/ext/bc/P" || e.Method != "platform.getL1Validator" {
					continue
				}
				var r struct {
					Result *struct {
						NodeID       string `json:"nodeID"`
						Weight       string `json:"weight"`
						ValidationID string `json:"validationID"`
						Balance      string `json:"balance"`
						SubnetID     string `json:"subnetID"`
					} `json:"result"`
				}
				if err := json.Unmarshal(e.Response, &r); err != nil {
					t.Fatal(err)
				}
				if r.Result == nil {
					continue // removed: not listed, as the node says
				}
				validators++
				var got struct {
					Validators []struct {
						ValidationID     string `json:"validationId"`
						NodeID           string `json:"nodeId"`
						SubnetID         string `json:"subnetId"`
						Weight           uint64 `json:"weight"`
						RemainingBalance uint64 `json:"remainingBalance"`
					} `json:"validators"`
				}
				v := r.Result
				code := getJSON(t, s.base+"/v1/networks/testnet/l1Validators?l1ValidationId="+v.ValidationID, &got)
				if code != 200 || len(got.Validators) != 1 || got.Validators[0].NodeID != v.NodeID || got.Validators[0].SubnetID != v.SubnetID ||
					fmt.Sprint(got.Validators[0].Weight) != v.Weight || fmt.Sprint(got.Validators[0].RemainingBalance) != v.Balance {
					t.Errorf("L1 validator %s: %d %+v, node says %+v", v.ValidationID, code, got.Validators, *v)
				}
			}
			if validators < 3 {
				t.Errorf("compared %d recorded L1 validators", validators)
			}
		})
	}
}

func otherDirection(d string) string {
	if d == "C->L1" {
		return "L1->C"
	}
	return "C->L1"
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
