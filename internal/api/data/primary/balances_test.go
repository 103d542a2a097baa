package primary_test

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/testing/balancesums"
)

type aggOut struct {
	AssetID           string `json:"assetId"`
	Amount            string `json:"amount"`
	UtxoCount         int64  `json:"utxoCount"`
	SharedWithChainID string `json:"sharedWithChainId"`
}

func total(as []aggOut, asset string) string {
	s := new(big.Int)
	for _, a := range as {
		if a.AssetID == asset {
			v, _ := new(big.Int).SetString(a.Amount, 10)
			s.Add(s, v)
		}
	}
	return s.String()
}

// victor is the workload's never-used key (no activity, no balance).
func victor(t testing.TB) string {
	t.Helper()
	for _, k := range devnet.LoadKeys(t).Keys {
		if k.Name == "victor" {
			return k.PAddress
		}
	}
	t.Fatal("no victor key")
	return ""
}

// post serves a POST with a JSON body (an error's ErrorBody checked).
func (e *env) post(t testing.TB, target, body string) (int, []byte) {
	t.Helper()
	w := httptest.NewRecorder()
	r := httptest.NewRequest("POST", target, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	e.mux.ServeHTTP(w, r)
	if w.Code >= 400 {
		if err := apitest.CheckErrorBody(w.Code, w.Body.Bytes()); err != nil {
			t.Errorf("POST %s: %v", target, err)
		}
	}
	return w.Code, w.Body.Bytes()
}

// TestBalancesP compares the P-chain balances of every workload address
// with platform.getBalance and platform.getStake.
func TestBalancesP(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		avaxID := e.net.AvaxAssetID
		type pBal struct {
			Balances struct {
				UnlockedUnstaked, UnlockedStaked, LockedPlatform, LockedStakeable, LockedStaked, PendingStaked []aggOut
				AtomicMemoryUnlocked, AtomicMemoryLocked                                                       []aggOut
			} `json:"balances"`
		}
		stake := map[string]string{}
		e.rec.each("P", "platform.getStake", func(params, result json.RawMessage) {
			var p struct{ Addresses []string }
			var r struct{ Staked string }
			if json.Unmarshal(params, &p) == nil && json.Unmarshal(result, &r) == nil {
				stake[strings.Join(p.Addresses, ",")] = r.Staked
			}
		})
		n := 0
		e.rec.each("P", "platform.getBalance", func(params, result json.RawMessage) {
			var p struct{ Addresses []string }
			var w struct {
				Unlocked, LockedStakeable, LockedNotStakeable string
				UTXOIDs                                       []json.RawMessage `json:"utxoIDs"`
			}
			if err := json.Unmarshal(params, &p); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(result, &w); err != nil {
				t.Fatal(err)
			}
			n++
			var g pBal
			e.ok(t, "/v1/networks/testnet/blockchains/p-chain/balances?addresses="+url.QueryEscape(strings.Join(p.Addresses, ",")), &g)
			b := g.Balances
			if total(b.UnlockedUnstaked, avaxID) != w.Unlocked || total(b.LockedStakeable, avaxID) != w.LockedStakeable ||
				total(b.LockedPlatform, avaxID) != w.LockedNotStakeable {
				t.Errorf("%v: unlocked %s stakeable %s platform %s; node %+v", p.Addresses, total(b.UnlockedUnstaked, avaxID),
					total(b.LockedStakeable, avaxID), total(b.LockedPlatform, avaxID), w)
			}
			var count int64
			for _, l := range [][]aggOut{b.UnlockedUnstaked, b.LockedStakeable, b.LockedPlatform} {
				for _, a := range l {
					count += a.UtxoCount
				}
			}
			if count != int64(len(w.UTXOIDs)) {
				t.Errorf("%v: %d UTXOs counted, node lists %d", p.Addresses, count, len(w.UTXOIDs))
			}
			if s, ok := stake[strings.Join(p.Addresses, ",")]; ok {
				staked := new(big.Int)
				for _, l := range [][]aggOut{b.UnlockedStaked, b.LockedStaked, b.PendingStaked} {
					v, _ := new(big.Int).SetString(total(l, avaxID), 10)
					staked.Add(staked, v)
				}
				if staked.String() != s {
					t.Errorf("%v: staked %s, node %s", p.Addresses, staked, s)
				}
			}
		})
		if n < 16 {
			t.Errorf("only %d getBalance answers compared", n)
		}
		// Historical: at the genesis time every funded key had its genesis
		// allocation: 20,000,000 AVAX unlocked and 2,000,000 stakeable-locked.
		start := genesisStartTime(t)
		for _, w := range loadWorkload(t) {
			if w.Seq != 1 {
				continue
			}
			addr := "P-" + strings.TrimPrefix(w.Addresses[0], "X-")
			var g pBal
			e.ok(t, fmt.Sprintf("/v1/networks/testnet/blockchains/p-chain/balances?addresses=%s&blockTimestamp=%d", addr, start), &g)
			if total(g.Balances.UnlockedUnstaked, avaxID) != "20000000000000000" || total(g.Balances.LockedStakeable, avaxID) != "2000000000000000" {
				t.Errorf("%s at genesis: %+v", addr, g.Balances)
			}
		}
	})
}

// TestBalancesX compares X-chain balances with avm.getAllBalances, and the
// atomic memory of X and C with the node's getUTXOs(sourceChain).
func TestBalancesX(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		type xBal struct {
			Balances struct {
				Locked, Unlocked, AtomicMemoryUnlocked, AtomicMemoryLocked []aggOut
			} `json:"balances"`
		}
		n := 0
		e.rec.each("X", "avm.getAllBalances", func(params, result json.RawMessage) {
			var p struct{ Address string }
			var w struct {
				Balances []struct{ Asset, Balance string }
			}
			if json.Unmarshal(params, &p) != nil || json.Unmarshal(result, &w) != nil {
				t.Fatal("bad recorded getAllBalances")
			}
			n++
			var g xBal
			e.ok(t, "/v1/networks/testnet/blockchains/x-chain/balances?addresses="+p.Address, &g)
			// The node counts unlocked UTXOs only.
			all := g.Balances.Unlocked
			got := map[string]string{}
			for _, a := range all {
				got[a.AssetID] = total(all, a.AssetID)
			}
			for _, b := range w.Balances {
				asset := b.Asset
				if asset == "AVAX" {
					asset = e.net.AvaxAssetID
				}
				if got[asset] != b.Balance {
					t.Errorf("%s: %s balance %s, node %s", p.Address, asset, got[asset], b.Balance)
				}
				delete(got, asset)
			}
			if len(got) != 0 {
				t.Errorf("%s: balances the node does not have: %v", p.Address, got)
			}
		})
		if n < 15 {
			t.Errorf("only %d getAllBalances compared", n)
		}
		// Atomic memory: what the node's getUTXOs with a sourceChain answers.
		for _, c := range []struct{ chain, endpoint, method string }{{"x-chain", "X", "avm.getUTXOs"}, {"c-chain", "C", "avax.getUTXOs"}} {
			checked := 0
			e.rec.each(c.endpoint, c.method, func(params, result json.RawMessage) {
				var p struct {
					Addresses   []string
					SourceChain string
				}
				var r struct{ Utxos []string }
				if json.Unmarshal(params, &p) != nil || p.SourceChain == "" || json.Unmarshal(result, &r) != nil {
					return
				}
				want := new(big.Int)
				for _, u := range decodeUTXOs(t, c.endpoint, "custom", r.Utxos) {
					want.Add(want, new(big.Int).SetUint64(u.Amount))
				}
				var g xBal
				e.ok(t, "/v1/networks/testnet/blockchains/"+c.chain+"/balances?addresses="+strings.Join(p.Addresses, ","), &g)
				var fromSource []aggOut
				src := e.Network.Chain[p.SourceChain].BlockchainID
				for _, a := range append(g.Balances.AtomicMemoryUnlocked, g.Balances.AtomicMemoryLocked...) {
					if a.SharedWithChainID == src {
						fromSource = append(fromSource, a)
					}
				}
				if total(fromSource, e.net.AvaxAssetID) != want.String() {
					t.Errorf("%s %v from %s: atomic memory %+v, node %s", c.chain, p.Addresses, p.SourceChain, fromSource, want)
				}
				checked++
			})
			if checked == 0 {
				t.Errorf("%s: no recorded getUTXOs with sourceChain", c.chain)
			}
		}
		for _, c := range []struct{ target, want string }{
			{"p-chain/balances", "addresses"},
			{"x-chain/balances?addresses=X-avax1xyz", "addresses"},
			{"c-chain/balances?addresses=custom1abc&blockTimestamp=x", "addresses"},
			{"p-chain/balances?addresses=" + victor(t) + "&blockTimestamp=-1", "blockTimestamp"},
			{"q-chain/balances?addresses=" + victor(t), "q-chain"},
		} {
			code, body := e.get(t, "/v1/networks/testnet/blockchains/"+c.target)
			if code != 400 && !(strings.HasPrefix(c.target, "q-chain") && code == 404) {
				t.Errorf("%s: %d %s", c.target, code, body)
			}
			if !strings.Contains(string(body), c.want) {
				t.Errorf("%s: %s does not name %s", c.target, body, c.want)
			}
		}
	})
}

// TestLastActivity: every workload address's last activity is no earlier
// than its last workload tx on that chain and is the newest tx the
// address's transaction listing shows; GET and POST agree.
func TestLastActivity(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		latest := map[string]time.Time{} // chain|address -> time of its last workload tx
		for _, w := range loadWorkload(t) {
			at, err := time.Parse(time.RFC3339, w.Time)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range w.Addresses {
				if w.Chain == "C" || !strings.HasPrefix(a, w.Chain+"-") {
					continue
				}
				k := w.Chain + "|" + a
				if at.After(latest[k]) {
					latest[k] = at
				}
			}
		}
		type act struct {
			Timestamp   int64  `json:"timestamp"`
			BlockNumber string `json:"blockNumber"`
			TxHash      string `json:"txHash"`
			UtxoID      string `json:"utxoId"`
			IsConsumed  bool   `json:"isConsumed"`
			ChainName   string `json:"chainName"`
		}
		for k, at := range latest {
			chain, addr, _ := strings.Cut(k, "|")
			alias := strings.ToLower(chain) + "-chain"
			var g act
			e.ok(t, "/v1/networks/testnet/blockchains/"+alias+"/lastActivityTimestampByAddresses?addresses="+addr, &g)
			// The workload logs the time it saw acceptance; the block is
			// no more than a few seconds older.
			if g.Timestamp < at.Unix()-10 || g.ChainName != alias {
				t.Errorf("%s: last activity %+v, workload tx at %d", k, g, at.Unix())
			}
			var txs []pTxOut
			e.ok(t, "/v1/networks/testnet/blockchains/"+alias+"/transactions?pageSize=1&addresses="+addr, &struct {
				Transactions *[]pTxOut `json:"transactions"`
			}{&txs})
			if len(txs) != 1 || txs[0].TxHash != g.TxHash {
				t.Errorf("%s: last activity tx %s, newest listed %+v", k, g.TxHash, txs)
			}
			code, body := e.post(t, "/v1/networks/testnet/blockchains/"+alias+"/lastActivityTimestampByAddresses", `{"addresses":"`+addr+`"}`)
			e.spec.ValidateResponse(t, "POST", "/v1/networks/testnet/blockchains/"+alias+"/lastActivityTimestampByAddresses", code, body)
			var p act
			apitest.DecodeOK(t, "POST lastActivity", code, body, &p)
			if p != g {
				t.Errorf("%s: POST %+v, GET %+v", k, p, g)
			}
		}
		if len(latest) < 10 {
			t.Errorf("only %d addresses", len(latest))
		}
		e.fails(t, "/v1/networks/testnet/blockchains/p-chain/lastActivityTimestampByAddresses", 400, "addresses")
		e.fails(t, "/v1/networks/testnet/blockchains/p-chain/lastActivityTimestampByAddresses?addresses="+victor(t), 404, "no activity")
		code, body := e.post(t, "/v1/networks/testnet/blockchains/p-chain/lastActivityTimestampByAddresses", `{"addresses":5}`)
		apitest.WantError(t, "POST bad body", code, body, 400, "addresses")
	})
}

// TestUTXOsPost: the POST variant answers what the GET answers, page by page.
func TestUTXOsPost(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		for _, w := range loadWorkload(t) {
			if w.Chain == "C" || len(w.Addresses) == 0 || w.Seq%3 != 0 {
				continue
			}
			alias := strings.ToLower(w.Chain) + "-chain"
			addrs := strings.Join(w.Addresses, ",")
			get := e.allUTXOs(t, "/v1/networks/testnet/blockchains/"+alias+"/utxos?addresses="+url.QueryEscape(addrs)+"&includeSpent=true", 3)
			var post []utxoOut
			path := "/v1/networks/testnet/blockchains/" + alias + "/utxos"
			q := url.Values{"pageSize": {"3"}, "includeSpent": {"true"}}
			for i := 0; ; i++ {
				code, body := e.post(t, path+"?"+q.Encode(), `{"addresses":"`+addrs+`"}`)
				var page struct {
					NextPageToken string    `json:"nextPageToken"`
					Utxos         []utxoOut `json:"utxos"`
				}
				if len(body) > 0 && !strings.Contains(string(body), `"utxos":[]`) {
					e.spec.ValidateResponse(t, "POST", path, code, body)
				}
				apitest.DecodeOK(t, "POST utxos", code, body, &page)
				post = append(post, page.Utxos...)
				if page.NextPageToken == "" || i > 1000 {
					break
				}
				q.Set("pageToken", page.NextPageToken)
			}
			pj, _ := json.Marshal(post)
			gj, _ := json.Marshal(get)
			if string(pj) != string(gj) {
				t.Errorf("%s: POST %d UTXOs, GET %d", w.TxID, len(post), len(get))
			}
		}
		code, body := e.post(t, "/v1/networks/testnet/blockchains/x-chain/utxos?pageSize=1025", `{"addresses":"`+victor(t)+`"}`)
		apitest.WantError(t, "POST pageSize", code, body, 400, "pageSize")
		code, body = e.post(t, "/v1/networks/testnet/blockchains/x-chain/utxos", `{}`)
		apitest.WantError(t, "POST no addresses", code, body, 400, "addresses")
	})
}

// TestPlainUTXOFlag: the writer's plain flag (what balances read summed)
// is the rule 0042_plain_utxo_balances.sql, 0110 (returned stakes) and 0185
// (locked stakes that started by their block) fill older databases with,
// on every UTXO of the devnet.
func TestPlainUTXOFlag(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		var n, plain, bad int
		if err := e.DB.QueryRowContext(t.Context(), `SELECT COUNT(*),
			COALESCE(SUM(CASE WHEN ua.plain THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN ua.plain <> (u.fx_type = 'secp256k1fx.TransferOutput' AND u.threshold = 1 AND u.locktime = 0
				AND (u.utxo_type <> 'STAKE' AND u.staked = FALSE OR u.utxo_type = 'STAKE' AND u.stake_locked = FALSE
					OR u.utxo_type = 'STAKE' AND u.stake_locked = TRUE AND u.stake_start <= u.created_time AND u.consumed_height < 0)
				AND u.created_chain = u.chain_key AND u.addresses NOT LIKE '%,%')
				THEN 1 ELSE 0 END), 0)
			FROM utxo_addresses ua JOIN utxos u ON u.utxo_id = ua.utxo_id`).Scan(&n, &plain, &bad); err != nil {
			t.Fatal(err)
		}
		if bad != 0 || plain == 0 || plain == n {
			t.Errorf("%d address rows, %d plain, %d differ from the migration's rule", n, plain, bad)
		}
		var returned int
		if err := e.DB.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM utxo_addresses ua JOIN utxos u ON u.utxo_id = ua.utxo_id
			WHERE ua.plain = TRUE AND u.utxo_type = 'STAKE'`).Scan(&returned); err != nil {
			t.Fatal(err)
		}
		if returned == 0 {
			t.Error("no returned stake is plain: the devnet's rewarded stakers gave theirs back")
		}
	})
}

// TestBalanceRows: the balance rows the writer keeps while blocks are
// indexed equal the sums of the flagged unspent UTXOs of each address, as
// 0110 and 0185 compute them for an older database, on every address of
// the devnet: plain ones (PutUTXO adds, SpendUTXO subtracts, UnlockStake
// moves a returned stake in) and locked stakes (LockStake adds,
// UnlockStake takes away).
func TestBalanceRows(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		for table, locked := range balancesums.Tables {
			r, err := balancesums.Check(t.Context(), e.DB, table)
			if err != nil {
				t.Fatal(err)
			}
			// The workload spends, and its rewarded delegator's stake left
			// utxo_stake_balances: rows summed to zero in both. The
			// devnet's stakers left at its tip stake stakeable.LockOut
			// outputs, which are not summed (their bucket depends on the
			// time): the generated chains (apibench) have summed ones.
			if !r.OK() || (r.Sums == 0) != locked || r.Zero == 0 {
				t.Errorf("%s: %+v", table, r)
			}
		}
	})
}
