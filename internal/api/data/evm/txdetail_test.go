package evm_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/devnet"
)

// recordedTx is what the node answered of one tx beyond NativeTransaction.
type recordedTx struct {
	tx                          nativeTx
	input, maxFee, maxPrio, typ string
	created                     string // contractAddress of a successful creation
}

// recordedTxDetails indexes recordedTxs by hash with the inputs and fee
// caps of eth_getTransactionByHash and the receipts' contractAddress.
func recordedTxDetails(t *testing.T, e *env) map[string]recordedTx {
	t.Helper()
	txs, _ := recordedTxs(t, e)
	out := map[string]recordedTx{}
	for _, x := range txs {
		out[x.TxHash] = recordedTx{tx: x}
	}
	e.rec.each("eth_getTransactionByHash", func(_ []json.RawMessage, res json.RawMessage) {
		var tx struct {
			Hash, Input, MaxFeePerGas, MaxPriorityFeePerGas, Type string
			To                                                    *string
		}
		if err := json.Unmarshal(res, &tx); err != nil {
			t.Fatal(err)
		}
		r := out[tx.Hash]
		r.input, r.typ = strings.ToLower(tx.Input), tx.Type
		if tx.MaxFeePerGas != "" {
			r.maxFee, r.maxPrio = hexDec(t, tx.MaxFeePerGas), hexDec(t, tx.MaxPriorityFeePerGas)
		}
		if tx.To == nil && r.tx.TxStatus == "1" {
			r.created = r.tx.To.Address
		}
		out[tx.Hash] = r
	})
	return out
}

type transferDetail struct {
	From         addrInfo        `json:"from"`
	To           addrInfo        `json:"to"`
	LogIndex     json.Number     `json:"logIndex"`
	Value        *string         `json:"value"`
	Erc20Token   json.RawMessage `json:"erc20Token"`
	Erc721Token  json.RawMessage `json:"erc721Token"`
	Erc1155Token json.RawMessage `json:"erc1155Token"`
}

// key renders a transfer inside a transaction as logTransfer.detailKey does.
func (x transferDetail) key(t *testing.T) string {
	raw := x.Erc20Token
	if raw == nil {
		raw = x.Erc721Token
	}
	if raw == nil {
		raw = x.Erc1155Token
	}
	var tok struct{ Address, TokenID, ErcType string }
	if err := json.Unmarshal(raw, &tok); err != nil {
		t.Fatalf("transfer without token: %+v", x)
	}
	v := "1"
	if x.Value != nil {
		v = *x.Value
	}
	return fmt.Sprintf("%s %s log %s %s->%s id=%s v=%s", tok.ErcType, tok.Address, x.LogIndex, x.From.Address, x.To.Address, tok.TokenID, v)
}

func (x logTransfer) detailKey() string {
	return fmt.Sprintf("%s %s log %d %s->%s id=%s v=%s", x.Type, x.Token, x.LogIndex, x.From, x.To, x.ID, x.Value)
}

type txDetail struct {
	NativeTransaction struct {
		nativeTx
		Input                string `json:"input"`
		BaseFeePerGas        string `json:"baseFeePerGas"`
		MaxFeePerGas         string `json:"maxFeePerGas"`
		MaxPriorityFeePerGas string `json:"maxPriorityFeePerGas"`
	} `json:"nativeTransaction"`
	NetworkTokenDetails struct {
		NetworkToken struct{ Name, Symbol string } `json:"networkToken"`
	} `json:"networkTokenDetails"`
	Erc20Transfers   []transferDetail `json:"erc20Transfers"`
	Erc721Transfers  []transferDetail `json:"erc721Transfers"`
	Erc1155Transfers []transferDetail `json:"erc1155Transfers"`
}

func (d txDetail) transferKeys(t *testing.T) []string {
	var out []string
	for _, l := range [][]transferDetail{d.Erc20Transfers, d.Erc721Transfers, d.Erc1155Transfers} {
		for _, x := range l {
			out = append(out, x.key(t))
		}
	}
	sort.Strings(out)
	return out
}

// transfersByTx groups the recorded logs' transfers by tx hash.
func transfersByTx(xs []logTransfer) map[string][]logTransfer {
	out := map[string][]logTransfer{}
	for _, x := range xs {
		out[x.TxHash] = append(out[x.TxHash], x)
	}
	return out
}

// Every recorded EVM tx, asked by hash, equals the node's answers: the
// transaction (eth_getTransactionByHash), its receipt (status, gas used,
// effective price, created contract), its block's base fee, and the token
// transfers its logs state.
func TestTransactionDetail(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		recs := recordedTxDetails(t, e)
		xfers := transfersByTx(e.rec.logTransfers(t))
		baseFee := map[string]string{}
		for _, b := range recordedBlocks(t, e) {
			baseFee[b.BlockNumber] = b.BaseFee
		}
		withTransfers := 0
		for hash, r := range recs {
			for _, h := range []string{hash, strings.ToUpper(hash[2:])} {
				if !strings.HasPrefix(h, "0x") {
					h = "0x" + h
				}
				var d txDetail
				e.ok(t, "/v1/chains/88888/transactions/"+h, &d)
				n := d.NativeTransaction
				if n.key() != r.tx.key() {
					t.Errorf("%s:\ngot      %s\nrecorded %s", h, n.key(), r.tx.key())
				}
				if n.Input != r.input || n.MaxFeePerGas != r.maxFee || n.MaxPriorityFeePerGas != r.maxPrio || n.BaseFeePerGas != baseFee[n.BlockNumber] {
					t.Errorf("%s: input %.20s… maxFee %q prio %q baseFee %q; recorded %.20s… %q %q %q", h, n.Input, n.MaxFeePerGas,
						n.MaxPriorityFeePerGas, n.BaseFeePerGas, r.input, r.maxFee, r.maxPrio, baseFee[n.BlockNumber])
				}
				if d.NetworkTokenDetails.NetworkToken.Symbol != "AVAX" {
					t.Errorf("%s: network token %+v", h, d.NetworkTokenDetails)
				}
				var want []string
				for _, x := range xfers[hash] {
					want = append(want, x.detailKey())
				}
				sort.Strings(want)
				if got := d.transferKeys(t); strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s transfers:\ngot\n  %s\nrecorded\n  %s", h, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
				}
				if len(want) > 0 {
					withTransfers++
				}
			}
		}
		if withTransfers == 0 {
			t.Fatal("no recorded tx with transfers")
		}
		for _, c := range []struct {
			path string
			code int
			want []string
		}{
			{"/v1/chains/88888/transactions/0x1234", 400, []string{"txHash"}},
			{"/v1/chains/88888/transactions/" + strings.Repeat("ab", 32), 400, []string{"txHash"}},
			{"/v1/chains/88888/transactions/0x" + strings.Repeat("zz", 32), 400, []string{"txHash"}},
			{"/v1/chains/88888/transactions/0x" + strings.Repeat("ab", 32), 404, []string{"not indexed"}},
			{"/v1/chains/x-chain/transactions/0x" + strings.Repeat("ab", 32), 404, []string{"x-chain"}},
		} {
			e.fails(t, c.path, c.code, c.want...)
		}
	})
}

// The latest transactions are every recorded tx newest first, filtered by
// the receipt's status; across chains the same (devnet-a indexes one EVM
// chain).
func TestLatestTransactions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		txs, _ := recordedTxs(t, e)
		sort.Slice(txs, func(i, j int) bool {
			bi, bj := num(txs[i].BlockNumber), num(txs[j].BlockNumber)
			if bi != bj {
				return bi > bj
			}
			return txs[i].BlockIndex > txs[j].BlockIndex
		})
		for _, status := range []string{"", "failed", "success"} {
			var want []string
			for _, x := range txs {
				if status == "" || (status == "failed") == (x.TxStatus == "0") {
					want = append(want, x.key())
				}
			}
			if status == "failed" && len(want) == 0 {
				t.Fatal("no failed tx recorded")
			}
			for _, base := range []string{"/v1/chains/88888/transactions", "/v1/transactions", "/v1/transactions?network=fuji"} {
				for _, size := range []string{"", "1", "3", "100"} {
					path := base
					if status != "" {
						path = withQuery(path, "status", status)
					}
					if size != "" {
						path = withQuery(path, "pageSize", size)
					}
					var got []string
					for _, x := range allPages(t, e, path, func(l nativeTxList) ([]nativeTx, string) { return l.Transactions, l.NextPageToken }) {
						got = append(got, x.key())
					}
					if strings.Join(got, "\n") != strings.Join(want, "\n") {
						t.Errorf("%s:\ngot\n  %s\nrecorded\n  %s", path, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
					}
				}
			}
		}
		sameAs(t, e, "/v1/chains/allTransactions", "/v1/transactions", "?pageSize=4", "?status=failed&pageSize=1")
		var other nativeTxList
		e.ok(t, "/v1/transactions?network=mainnet", &other)
		if len(other.Transactions) != 0 {
			t.Errorf("mainnet: %d transactions", len(other.Transactions))
		}
		for _, p := range []string{"/v1/chains/88888/transactions?status=reverted", "/v1/transactions?status=0",
			"/v1/transactions?pageSize=101", "/v1/chains/88888/transactions?pageSize=0", "/v1/transactions?pageToken=x.y"} {
			e.fails(t, p, 400, strings.SplitN(strings.SplitN(p, "?", 2)[1], "=", 2)[0])
		}
	})
}

type historyItem struct {
	NativeTransaction nativeTx         `json:"nativeTransaction"`
	Erc20Transfers    []transferDetail `json:"erc20Transfers"`
	Erc721Transfers   []transferDetail `json:"erc721Transfers"`
	Erc1155Transfers  []transferDetail `json:"erc1155Transfers"`
}

type historyList struct {
	NextPageToken string        `json:"nextPageToken"`
	Transactions  []historyItem `json:"transactions"`
}

// activeAddresses are the recorded addresses with EVM activity: the
// senders, recipients and created contracts of the recorded txs, and the
// parties of the recorded transfers.
func activeAddresses(t *testing.T, e *env) (involved map[string]map[string]bool, xs []logTransfer) {
	recs := recordedTxDetails(t, e)
	involved = map[string]map[string]bool{}
	add := func(a, hash string) {
		if involved[a] == nil {
			involved[a] = map[string]bool{}
		}
		involved[a][hash] = true
	}
	for hash, r := range recs {
		add(r.tx.From.Address, hash)
		if r.tx.Method.CallType != "CONTRACT_CREATION" || r.created != "" {
			add(r.tx.To.Address, hash)
		}
	}
	xs = e.rec.logTransfers(t)
	for _, x := range xs {
		add(x.From, x.TxHash)
		add(x.To, x.TxHash)
	}
	return involved, xs
}

// Every address's history (v1 and v2) is the set of recorded txs where it
// is the sender, the recipient, the created contract, or a party to a token
// transfer, in either order, with the transfers it took part in.
func TestAddressHistory(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		recs := recordedTxDetails(t, e)
		involved, xs := activeAddresses(t, e)
		byTx := transfersByTx(xs)
		if len(involved) < 10 {
			t.Fatalf("%d active addresses", len(involved))
		}
		for a, hashes := range involved {
			var want []recordedTx
			for h := range hashes {
				want = append(want, recs[h])
			}
			for _, c := range []struct {
				q      string
				lo, hi int64
				asc    bool
			}{
				{"", 0, 1 << 40, false},
				{"?pageSize=1", 0, 1 << 40, false},
				{"?sortOrder=asc&pageSize=2", 0, 1 << 40, true},
				{"?startBlock=20&pageSize=3", 20, 1 << 40, false},
				{"?endBlock=30&startBlock=10&sortOrder=asc", 10, 30, true},
			} {
				var ws []string
				sel := append([]recordedTx(nil), want...)
				sort.Slice(sel, func(i, j int) bool {
					bi, bj := num(sel[i].tx.BlockNumber), num(sel[j].tx.BlockNumber)
					if bi != bj {
						return (bi < bj) == c.asc
					}
					return (sel[i].tx.BlockIndex < sel[j].tx.BlockIndex) == c.asc
				})
				for _, r := range sel {
					if b := num(r.tx.BlockNumber); b < c.lo || b >= c.hi {
						continue
					}
					var ks []string
					for _, x := range byTx[r.tx.TxHash] {
						if x.From == a || x.To == a {
							ks = append(ks, x.detailKey())
						}
					}
					sort.Strings(ks)
					ws = append(ws, r.tx.key()+"\n    "+strings.Join(ks, "\n    "))
				}
				for _, v := range []string{"/v1", "/v2"} {
					path := v + "/chains/88888/addresses/" + a + "/transactions" + c.q
					var gs []string
					for _, it := range allPages(t, e, path, func(l historyList) ([]historyItem, string) { return l.Transactions, l.NextPageToken }) {
						d := txDetail{Erc20Transfers: it.Erc20Transfers, Erc721Transfers: it.Erc721Transfers, Erc1155Transfers: it.Erc1155Transfers}
						gs = append(gs, it.NativeTransaction.key()+"\n    "+strings.Join(d.transferKeys(t), "\n    "))
						if v == "/v2" {
							for _, x := range it.Erc20Transfers {
								if !strings.Contains(string(x.Erc20Token), `"tokenReputation":null`) {
									t.Errorf("%s: v2 ERC-20 token without tokenReputation: %s", path, x.Erc20Token)
								}
							}
						}
					}
					if strings.Join(gs, "\n") != strings.Join(ws, "\n") {
						t.Errorf("%s:\ngot\n  %s\nrecorded\n  %s", path, strings.Join(gs, "\n  "), strings.Join(ws, "\n  "))
					}
				}
			}
		}
		a := "0x03623add7ec6f6426d6266ed2e5a4734c786e73e"
		for _, p := range []string{"/v1/chains/88888/addresses/" + a + "/transactions?sortOrder=up",
			"/v2/chains/88888/addresses/" + a + "/transactions?filterSpamTokens=maybe",
			"/v1/chains/88888/addresses/" + a + "/transactions?startBlock=5&endBlock=5",
			"/v1/chains/88888/addresses/" + a + "/transactions?pageSize=101",
			"/v2/chains/88888/addresses/0xabc/transactions",
		} {
			e.fails(t, p, 400)
		}
		// A v1 token is not a v2 token.
		var l historyList
		e.ok(t, "/v1/chains/88888/addresses/"+a+"/transactions?pageSize=1", &l)
		e.fails(t, "/v2/chains/88888/addresses/"+a+"/transactions?pageSize=1&pageToken="+l.NextPageToken, 400, "pageToken")
	})
}

// Each address's ERC-20, ERC-721 and ERC-1155 transfers are the recorded
// logs' transfers of that standard it sent or received, newest first.
func TestErcTransactionListings(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		involved, xs := activeAddresses(t, e)
		sort.Slice(xs, func(i, j int) bool {
			a, b := xs[i], xs[j]
			if a.Block != b.Block {
				return a.Block > b.Block
			}
			if a.LogIndex != b.LogIndex {
				return a.LogIndex > b.LogIndex
			}
			return a.Batch > b.Batch
		})
		seen := map[string]int{}
		for a := range involved {
			for typ, op := range map[string]string{"ERC-20": "listErc20", "ERC-721": "listErc721", "ERC-1155": "listErc1155"} {
				for _, c := range []struct {
					q      string
					lo, hi int64
				}{{"", 0, 1 << 40}, {"?pageSize=1", 0, 1 << 40}, {"?startBlock=25&endBlock=33&pageSize=2", 25, 33}} {
					var want []string
					for _, x := range xs {
						if x.Type == typ && (x.From == a || x.To == a) && x.Block >= c.lo && x.Block < c.hi {
							want = append(want, x.key())
						}
					}
					seen[typ] += len(want)
					path := "/v1/chains/88888/addresses/" + a + "/transactions:" + op + c.q
					var got []string
					for _, x := range allPages(t, e, path, func(l struct {
						NextPageToken string         `json:"nextPageToken"`
						Transactions  []transferItem `json:"transactions"`
					}) ([]transferItem, string) {
						return l.Transactions, l.NextPageToken
					}) {
						got = append(got, x.key())
					}
					if strings.Join(got, "\n") != strings.Join(want, "\n") {
						t.Errorf("%s:\ngot\n  %s\nrecorded\n  %s", path, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
					}
				}
			}
		}
		if seen["ERC-20"] == 0 || seen["ERC-721"] == 0 || seen["ERC-1155"] == 0 {
			t.Fatalf("recorded transfers by standard: %v", seen)
		}
		a := "0x03623add7ec6f6426d6266ed2e5a4734c786e73e"
		e.fails(t, "/v1/chains/88888/addresses/"+a+"/transactions:listErc20?startBlock=x", 400, "startBlock")
		e.fails(t, "/v1/chains/88888/addresses/0x12/transactions:listErc721", 400, "address")
		e.fails(t, "/v1/chains/1/addresses/"+a+"/transactions:listErc1155", 404)
	})
}

// An address's deployments are the contracts its recorded creation txs
// created, newest first; each contract's deployment transaction is the one
// its metadata names.
func TestDeployments(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		recs := recordedTxDetails(t, e)
		byDeployer := map[string][]recordedTx{}
		for _, r := range recs {
			if r.created != "" {
				byDeployer[r.tx.From.Address] = append(byDeployer[r.tx.From.Address], r)
			}
		}
		if len(byDeployer) == 0 {
			t.Fatal("no recorded creation")
		}
		for a, rs := range byDeployer {
			sort.Slice(rs, func(i, j int) bool {
				if bi, bj := num(rs[i].tx.BlockNumber), num(rs[j].tx.BlockNumber); bi != bj {
					return bi > bj
				}
				return rs[i].created > rs[j].created
			})
			var want []string
			for _, r := range rs {
				want = append(want, r.created+" "+r.tx.TxHash+" "+a)
			}
			for _, q := range []string{"", "?pageSize=1"} {
				path := "/v1/chains/88888/contracts/" + a + "/deployments" + q
				var got []string
				for _, c := range allPages(t, e, path, func(l struct {
					NextPageToken string `json:"nextPageToken"`
					Contracts     []struct {
						Address           string `json:"address"`
						DeploymentDetails struct{ TxHash, DeployerAddress string }
					} `json:"contracts"`
				}) ([]struct {
					Address           string `json:"address"`
					DeploymentDetails struct{ TxHash, DeployerAddress string }
				}, string) {
					return l.Contracts, l.NextPageToken
				}) {
					got = append(got, c.Address+" "+c.DeploymentDetails.TxHash+" "+c.DeploymentDetails.DeployerAddress)
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s:\ngot\n  %s\nrecorded\n  %s", path, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
				}
			}
			for _, r := range rs {
				var d txDetail
				e.ok(t, "/v1/chains/88888/contracts/"+r.created+"/transactions:getDeployment", &d)
				if d.NativeTransaction.key() != r.tx.key() || d.NativeTransaction.Input != r.input {
					t.Errorf("deployment of %s:\ngot      %s\nrecorded %s", r.created, d.NativeTransaction.key(), r.tx.key())
				}
			}
		}
		// Every other known contract: its deployment is the one its metadata
		// names, or a 404 when the index does not know it.
		for name, c := range e.net.CChainContracts {
			var m struct{ DeploymentDetails *struct{ TxHash string } }
			e.ok(t, "/v1/chains/88888/addresses/"+c, &m)
			path := "/v1/chains/88888/contracts/" + c + "/transactions:getDeployment"
			if m.DeploymentDetails == nil {
				e.fails(t, path, 404, c)
				continue
			}
			var d txDetail
			e.ok(t, path, &d)
			if d.NativeTransaction.TxHash != m.DeploymentDetails.TxHash {
				t.Errorf("%s: deployment %s, metadata says %s", name, d.NativeTransaction.TxHash, m.DeploymentDetails.TxHash)
			}
		}
		nobody := "0x" + strings.Repeat("0", 39) + "1"
		var none struct{ Contracts []any }
		e.ok(t, "/v1/chains/88888/contracts/"+nobody+"/deployments", &none)
		if len(none.Contracts) != 0 {
			t.Errorf("deployments of %s: %v", nobody, none.Contracts)
		}
		e.fails(t, "/v1/chains/88888/contracts/"+nobody+"/transactions:getDeployment", 404, nobody)
		e.fails(t, "/v1/chains/88888/contracts/0xzz/transactions:getDeployment", 400, "address")
		e.fails(t, "/v1/chains/88888/contracts/"+nobody+"/transactions:getDeployment?currency=xyz", 400, "currency")
		e.fails(t, "/v1/chains/88888/contracts/"+nobody+"/deployments?pageSize=0", 400, "pageSize")
	})
}

// An address's chains: the devnet's C-chain for every address with
// recorded activity or a recorded non-zero balance, none for the key the
// workload never used.
func TestAddressChains(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		involved, _ := activeAddresses(t, e)
		active := map[string]bool{}
		for a := range involved {
			active[a] = true
		}
		e.rec.each("eth_getBalance", func(ps []json.RawMessage, res json.RawMessage) {
			var a, bal string
			_ = json.Unmarshal(ps[0], &a)
			_ = json.Unmarshal(res, &bal)
			if hexBig(t, bal).Sign() != 0 {
				active[strings.ToLower(a)] = true
			}
		})
		keys := devnet.LoadKeys(t)
		var victor string
		for _, k := range keys.Keys {
			if k.Name == "victor" {
				victor = strings.ToLower(k.EVMAddress)
			}
		}
		if victor == "" || active[victor] {
			t.Fatalf("victor %q active %v", victor, active[victor])
		}
		active[victor] = false
		for a, want := range active {
			var l struct {
				IndexedChains []struct {
					ChainID string `json:"chainId"`
				} `json:"indexedChains"`
				UnindexedChains []string `json:"unindexedChains"`
			}
			e.ok(t, "/v1/address/"+a+"/chains", &l)
			got := len(l.IndexedChains) == 1 && l.IndexedChains[0].ChainID == "88888"
			if got != want || (!want && len(l.IndexedChains) != 0) || l.UnindexedChains == nil {
				t.Errorf("%s: %+v, want active=%v", a, l, want)
			}
			// The deprecated getAddressChains path (not in the published
			// document; the SDK still calls it) answers the same.
			_, cur := e.do(t, "/v1/address/"+a+"/chains")
			if code, old := apitest.ServeUnvalidated(t, e.mux, "GET", "/v1/chains/address/"+a); code != 200 || string(old) != string(cur) {
				t.Errorf("/v1/chains/address/%s: %d %s, want %s", a, code, old, cur)
			}
		}
		e.fails(t, "/v1/address/X-custom1abc/chains", 400, "address")
		if code, body := apitest.ServeUnvalidated(t, e.mux, "GET", "/v1/chains/address/X-custom1abc"); code != 400 || !strings.Contains(string(body), "address") {
			t.Errorf("deprecated path, bad address: %d %s", code, body)
		}
	})
}
