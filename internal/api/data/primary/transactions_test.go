package primary_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/vms/components/avax"

	"github.com/permafrost-dev/permafrost/internal/decode/catomic"
)

type amountOut struct {
	AssetID string `json:"assetId"`
	Amount  string `json:"amount"`
}

type txUTXOOut struct {
	UtxoID   string    `json:"utxoId"`
	Amount   string    `json:"amount"` // P
	AssetID  string    `json:"assetId"`
	Asset    amountOut `json:"asset"` // X, C
	UtxoType string    `json:"utxoType"`
	Staked   bool      `json:"staked"`
}

func (u txUTXOOut) amount() string {
	if u.Amount != "" {
		return u.Amount
	}
	return u.Asset.Amount
}

type pTxOut struct {
	TxHash               string      `json:"txHash"`
	TxType               string      `json:"txType"`
	BlockTimestamp       int64       `json:"blockTimestamp"`
	BlockNumber          string      `json:"blockNumber"`
	BlockHash            string      `json:"blockHash"`
	ConsumedUtxos        []txUTXOOut `json:"consumedUtxos"`
	EmittedUtxos         []txUTXOOut `json:"emittedUtxos"`
	SourceChain          string      `json:"sourceChain"`
	DestinationChain     string      `json:"destinationChain"`
	Value                []amountOut `json:"value"`
	AmountBurned         []amountOut `json:"amountBurned"`
	AmountStaked         []amountOut `json:"amountStaked"`
	AmountL1             []amountOut `json:"amountL1ValidatorBalanceBurned"`
	StartTimestamp       *int64      `json:"startTimestamp"`
	EndTimestamp         *int64      `json:"endTimestamp"`
	DelegationFeePercent string      `json:"delegationFeePercent"`
	NodeID               string      `json:"nodeId"`
	SubnetID             string      `json:"subnetId"`
	Memo                 string      `json:"memo"`
	StakingTxHash        string      `json:"stakingTxHash"`
	RewardAddresses      []string    `json:"rewardAddresses"`
	Manager              *struct {
		BlockchainID    string `json:"blockchainId"`
		ContractAddress string `json:"contractAddress"`
	} `json:"l1ValidatorManagerDetails"`
	L1 []struct {
		ValidationID     string `json:"validationId"`
		NodeID           string `json:"nodeId"`
		Weight           uint64 `json:"weight"`
		RemainingBalance uint64 `json:"remainingBalance"`
		BalanceChange    *int64 `json:"balanceChange"`
	} `json:"l1ValidatorDetails"`
	Owner *struct {
		Threshold int64    `json:"threshold"`
		Addresses []string `json:"addresses"`
	} `json:"subnetOwnershipInfo"`
	BLS *struct {
		PublicKey         string `json:"publicKey"`
		ProofOfPossession string `json:"proofOfPossession"`
	} `json:"blsCredentials"`
	Chain *struct {
		ChainName string `json:"chainName"`
		VMID      string `json:"vmId"`
	} `json:"blockchainInfo"`
}

func sumOf(as []amountOut, asset string) uint64 {
	var s uint64
	for _, a := range as {
		if a.AssetID == asset {
			var v uint64
			fmt.Sscan(a.Amount, &v)
			s += v
		}
	}
	return s
}

func utxoIDOfInput(t testing.TB, txID string, index uint32) string {
	t.Helper()
	id, err := ids.FromString(txID)
	if err != nil {
		t.Fatal(err)
	}
	u := avax.UTXOID{TxID: id, OutputIndex: index}
	return u.InputID().String()
}

func sortedIDs(us []txUTXOOut) []string {
	out := []string{}
	for _, u := range us {
		out = append(out, u.UtxoID)
	}
	sort.Strings(out)
	return out
}

// pNodeTx is the part of platform.getTx (json) the comparison reads.
type pNodeTx struct {
	ID       string `json:"id"`
	Unsigned struct {
		Memo       string            `json:"memo"`
		Outputs    []json.RawMessage `json:"outputs"`
		Exported   []json.RawMessage `json:"exportedOutputs"`
		Stake      []json.RawMessage `json:"stake"`
		Inputs     []nodeInput       `json:"inputs"`
		Imported   []nodeInput       `json:"importedInputs"`
		Operations []struct {
			InputIDs []nodeInput `json:"inputIDs"`
		} `json:"operations"`
		SourceChain      string  `json:"sourceChain"`
		DestinationChain string  `json:"destinationChain"`
		SubnetID         string  `json:"subnetID"`
		NodeID           string  `json:"nodeID"`
		Shares           *int64  `json:"shares"`
		Balance          *uint64 `json:"balance"`
		ChainName        string  `json:"chainName"`
		VMID             string  `json:"vmID"`
		ChainID          string  `json:"chainID"`
		Address          string  `json:"address"`
		Validators       []struct {
			Balance uint64 `json:"balance"`
		} `json:"validators"`
		Validator *struct {
			NodeID string `json:"nodeID"`
			Start  int64  `json:"start"`
			End    int64  `json:"end"`
			Subnet string `json:"subnetID"`
		} `json:"validator"`
		Owner *struct {
			Threshold int64    `json:"threshold"`
			Addresses []string `json:"addresses"`
		} `json:"owner"`
		NewOwner *struct {
			Threshold int64    `json:"threshold"`
			Addresses []string `json:"addresses"`
		} `json:"newOwner"`
		Signer *struct {
			PublicKey string `json:"publicKey"`
			PoP       string `json:"proofOfPossession"`
		} `json:"signer"`
		TxID string `json:"txID"` // RewardValidatorTx
	} `json:"unsignedTx"`
}

type nodeInput struct {
	TxID        string `json:"txID"`
	OutputIndex uint32 `json:"outputIndex"`
	AssetID     string `json:"assetID"`
	Input       struct {
		Amount uint64 `json:"amount"`
		Input  *struct {
			Amount uint64 `json:"amount"`
		} `json:"input"` // stakeable.LockIn
	} `json:"input"`
}

func (in nodeInput) amount() uint64 {
	if in.Input.Input != nil {
		return in.Input.Input.Amount
	}
	return in.Input.Amount
}

func outAmount(t testing.TB, raw json.RawMessage) (string, uint64) {
	t.Helper()
	var o struct {
		AssetID string `json:"assetID"`
		Output  struct {
			Amount uint64 `json:"amount"`
			Output *struct {
				Amount uint64 `json:"amount"`
			} `json:"output"` // stakeable.LockOut
		} `json:"output"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatal(err)
	}
	if o.Output.Output != nil {
		return o.AssetID, o.Output.Output.Amount
	}
	return o.AssetID, o.Output.Amount
}

// pNodeTxs reads every platform.getTx (json) answer, by tx id.
func (e *env) pNodeTxs(t testing.TB) map[string]pNodeTx {
	t.Helper()
	return e.nodeTxs(t, "P", "platform.getTx")
}

// nodeTxs reads every json answer of a getTx method (platform.getTx,
// avm.getTx), by tx id.
func (e *env) nodeTxs(t testing.TB, endpoint, method string) map[string]pNodeTx {
	t.Helper()
	out := map[string]pNodeTx{}
	e.rec.each(endpoint, method, func(params, result json.RawMessage) {
		if !strings.Contains(string(params), `"json"`) {
			return
		}
		var r struct{ Tx pNodeTx }
		if err := json.Unmarshal(result, &r); err != nil {
			t.Fatal(err)
		}
		out[r.Tx.ID] = r.Tx
	})
	return out
}

// TestTxByHashP compares every P tx of the recorded blocks with the node's
// platform.getTx: UTXOs consumed and produced, amounts, fee and L1
// balances, and the facts of each kind.
func TestTxByHashP(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		avaxID := e.net.AvaxAssetID
		nodeTxs := e.pNodeTxs(t)
		blocks := e.recordedBlocks(t, "P")
		seen := 0
		for _, b := range blocks {
			for _, id := range b.TxIDs {
				w, ok := nodeTxs[id]
				if !ok {
					t.Errorf("no recorded getTx of %s", id)
					continue
				}
				seen++
				var g pTxOut
				e.ok(t, "/v1/networks/testnet/blockchains/p-chain/transactions/"+id, &g)
				u := w.Unsigned
				if g.TxHash != id || g.BlockHash != b.ID || g.BlockNumber != fmt.Sprint(b.Height) || (b.Time != nil && g.BlockTimestamp != *b.Time) {
					t.Errorf("%s: block %s/%s/%d, node %s/%d", id, g.BlockHash, g.BlockNumber, g.BlockTimestamp, b.ID, b.Height)
				}
				var wantIn []string
				var in uint64
				for _, x := range append(append([]nodeInput{}, u.Inputs...), u.Imported...) {
					wantIn = append(wantIn, utxoIDOfInput(t, x.TxID, x.OutputIndex))
					if x.AssetID == avaxID {
						in += x.amount()
					}
				}
				sort.Strings(wantIn)
				if got := sortedIDs(g.ConsumedUtxos); fmt.Sprint(got) != fmt.Sprint(append([]string{}, wantIn...)) && !(len(got) == 0 && len(wantIn) == 0) {
					t.Errorf("%s: consumed %v, node's inputs %v", id, got, wantIn)
				}
				var out, staked uint64
				nOut := 0
				for _, o := range append(append([]json.RawMessage{}, u.Outputs...), u.Exported...) {
					if a, v := outAmount(t, o); a == avaxID {
						out += v
					}
					nOut++
				}
				for _, o := range u.Stake {
					_, v := outAmount(t, o)
					staked += v
					nOut++
				}
				var l1 uint64
				if u.Balance != nil {
					l1 = *u.Balance
				}
				for _, v := range u.Validators {
					l1 += v.Balance
				}
				if u.TxID != "" {
					// RewardValidatorTx: emits the staker's rewards, nothing else.
					if g.TxType != "RewardValidatorTx" || g.StakingTxHash != u.TxID || len(g.ConsumedUtxos) != 0 {
						t.Errorf("%s: reward tx %+v", id, g)
					}
					paid, _ := e.rewardUTXOAmounts(t, u.TxID)
					if sumOf(g.Value, avaxID) != paid {
						t.Errorf("%s: value %v, node paid %d", id, g.Value, paid)
					}
					continue
				}
				if g.TxType == "DisableL1ValidatorTx" {
					// It also returns the validator's remaining balance to
					// its owner: one more UTXO, after the tx's outputs.
					if len(g.EmittedUtxos) != nOut+1 || sumOf(g.AmountBurned, avaxID) != in-out {
						t.Errorf("%s: %d emitted, burned %v; node's tx: %d outputs, fee %d", id, len(g.EmittedUtxos), g.AmountBurned, nOut, in-out)
					}
					continue
				}
				if len(g.EmittedUtxos) != nOut {
					t.Errorf("%s: %d emitted, node's tx has %d outputs", id, len(g.EmittedUtxos), nOut)
				}
				if sumOf(g.Value, avaxID) != out+staked || sumOf(g.AmountStaked, avaxID) != staked ||
					sumOf(g.AmountL1, avaxID) != l1 || sumOf(g.AmountBurned, avaxID) != in-out-staked-l1 {
					t.Errorf("%s (%s): value %v staked %v L1 %v burned %v; node: in %d out %d staked %d L1 %d",
						id, g.TxType, g.Value, g.AmountStaked, g.AmountL1, g.AmountBurned, in, out, staked, l1)
				}
				if mg, mw := strings.TrimPrefix(g.Memo, "0x"), strings.TrimPrefix(u.Memo, "0x"); mg != mw {
					t.Errorf("%s: memo %q, node %q", id, g.Memo, u.Memo)
				}
				if g.SourceChain != u.SourceChain || g.DestinationChain != u.DestinationChain {
					t.Errorf("%s: chains %s -> %s, node %s -> %s", id, g.SourceChain, g.DestinationChain, u.SourceChain, u.DestinationChain)
				}
				if v := u.Validator; v != nil {
					subnet := u.SubnetID
					if v.Subnet != "" {
						subnet = v.Subnet
					}
					if g.NodeID != v.NodeID || g.SubnetID != subnet || g.EndTimestamp == nil || *g.EndTimestamp != v.End {
						t.Errorf("%s: staker %s %s %v, node %+v %s", id, g.NodeID, g.SubnetID, g.EndTimestamp, *v, subnet)
					}
				}
				if u.Shares != nil && g.DelegationFeePercent != fmt.Sprintf("%d.%04d", *u.Shares/10000, *u.Shares%10000) {
					t.Errorf("%s: delegation fee %q, node shares %d", id, g.DelegationFeePercent, *u.Shares)
				}
				if u.Signer != nil && (g.BLS == nil || g.BLS.PublicKey != u.Signer.PublicKey || g.BLS.ProofOfPossession != u.Signer.PoP) {
					t.Errorf("%s: BLS %+v, node %+v", id, g.BLS, *u.Signer)
				}
				for _, o := range []*struct {
					Threshold int64    `json:"threshold"`
					Addresses []string `json:"addresses"`
				}{u.Owner, u.NewOwner} {
					if o != nil && (g.Owner == nil || g.Owner.Threshold != o.Threshold || fmt.Sprint(g.Owner.Addresses) != fmt.Sprint(stripP(o.Addresses))) {
						t.Errorf("%s: owner %+v, node %+v", id, g.Owner, *o)
					}
				}
				if u.ChainName != "" && (g.Chain == nil || g.Chain.ChainName != u.ChainName || g.Chain.VMID != u.VMID || g.SubnetID != u.SubnetID) {
					t.Errorf("%s: chain %+v, node %s %s", id, g.Chain, u.ChainName, u.VMID)
				}
				if u.ChainID != "" && (g.Manager == nil || g.Manager.BlockchainID != u.ChainID || !strings.EqualFold(g.Manager.ContractAddress, u.Address) ||
					len(g.L1) != len(u.Validators)) {
					t.Errorf("%s: conversion %+v %d validators, node %s %s %d", id, g.Manager, len(g.L1), u.ChainID, u.Address, len(u.Validators))
				}
				if u.Balance != nil && (len(g.L1) != 1 || g.L1[0].BalanceChange == nil || uint64(*g.L1[0].BalanceChange) != *u.Balance) {
					t.Errorf("%s: L1 validator details %+v, node adds balance %d", id, g.L1, *u.Balance)
				}
			}
		}
		if seen < 30 {
			t.Errorf("only %d P txs compared", seen)
		}
		// The genesis validators' txs are in no block: the state of block 0.
		for _, v := range e.currentValidators(t, "") {
			id := v["txID"].(string)
			var g pTxOut
			e.ok(t, "/v1/networks/testnet/blockchains/p-chain/transactions/"+id, &g)
			if g.BlockNumber != "0" || g.BlockHash != blocks[0].ID || g.NodeID != v["nodeID"] || sumOf(g.AmountStaked, avaxID) == 0 ||
				g.EndTimestamp == nil || fmt.Sprint(*g.EndTimestamp) != v["endTime"] {
				t.Errorf("genesis staker %s: %+v, node %v", id, g, v)
			}
		}
	})
}

// TestTxByHashX compares every X tx of the workload with avm.getTx (json).
func TestTxByHashX(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		nodeTxs := e.nodeTxs(t, "X", "avm.getTx")
		n := 0
		for _, w := range loadWorkload(t) {
			if w.Chain != "X" {
				continue
			}
			n++
			var g struct {
				TxHash        string      `json:"txHash"`
				TxType        string      `json:"txType"`
				ConsumedUtxos []txUTXOOut `json:"consumedUtxos"`
				BlockHeight   int64       `json:"blockHeight"`
			}
			e.ok(t, "/v1/networks/testnet/blockchains/x-chain/transactions/"+w.TxID, &g)
			u := nodeTxs[w.TxID].Unsigned
			var wantIn []string
			ins := append(append([]nodeInput{}, u.Inputs...), u.Imported...)
			for _, op := range u.Operations {
				ins = append(ins, op.InputIDs...)
			}
			for _, x := range ins {
				wantIn = append(wantIn, utxoIDOfInput(t, x.TxID, x.OutputIndex))
			}
			sort.Strings(wantIn)
			if g.TxHash != w.TxID || g.TxType != w.Type || (len(wantIn) > 0 && fmt.Sprint(sortedIDs(g.ConsumedUtxos)) != fmt.Sprint(wantIn)) {
				t.Errorf("%s: got %s %s consumed %v, node %s %v", w.TxID, g.TxHash, g.TxType, sortedIDs(g.ConsumedUtxos), w.Type, wantIn)
			}
			// A tx of one chain is not found on another.
			e.fails(t, "/v1/networks/testnet/blockchains/p-chain/transactions/"+w.TxID, 404, w.TxID)
		}
		if n != 20 {
			t.Errorf("%d X txs in the workload", n)
		}
	})
}

// TestTxByHashC compares every atomic tx of the C-chain with the node's
// avax.getAtomicTx (decoded with the atomic codec).
func TestTxByHashC(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		type cOut struct {
			TxHash           string      `json:"txHash"`
			TxType           string      `json:"txType"`
			BlockHeight      int64       `json:"blockHeight"`
			SourceChain      string      `json:"sourceChain"`
			DestinationChain string      `json:"destinationChain"`
			AmountUnlocked   []amountOut `json:"amountUnlocked"`
			AmountCreated    []amountOut `json:"amountCreated"`
			ConsumedUtxos    []txUTXOOut `json:"consumedUtxos"`
			EmittedUtxos     []txUTXOOut `json:"emittedUtxos"`
			EVMInputs        []struct {
				FromAddress string    `json:"fromAddress"`
				Asset       amountOut `json:"asset"`
				Credentials []any     `json:"credentials"`
			} `json:"evmInputs"`
			EVMOutputs []struct {
				ToAddress string    `json:"toAddress"`
				Asset     amountOut `json:"asset"`
			} `json:"evmOutputs"`
		}
		n := 0
		cID := e.Network.Chain["C"].BlockchainID
		e.rec.each("C", "avax.getAtomicTx", func(params, result json.RawMessage) {
			var r struct {
				Tx          string `json:"tx"`
				BlockHeight string `json:"blockHeight"`
			}
			if json.Unmarshal(result, &r) != nil || r.Tx == "" {
				return
			}
			raw, err := hex.DecodeString(strings.TrimPrefix(r.Tx, "0x"))
			if err != nil {
				t.Fatal(err)
			}
			txs, err := catomic.DecodeExtraData(raw[:len(raw)-4], false)
			if err != nil || len(txs) != 1 {
				// The hex encoding carries a 4-byte checksum.
				if txs, err = catomic.DecodeExtraData(raw, false); err != nil || len(txs) != 1 {
					t.Fatalf("decode atomic tx: %v", err)
				}
			}
			tx := txs[0]
			n++
			var g cOut
			e.ok(t, "/v1/networks/testnet/blockchains/c-chain/transactions/"+tx.ID().String(), &g)
			if fmt.Sprint(g.BlockHeight) != r.BlockHeight {
				t.Errorf("%s: height %d, node %s", tx.ID(), g.BlockHeight, r.BlockHeight)
			}
			switch u := tx.UnsignedAtomicTx.(type) {
			case *catomic.UnsignedImportTx:
				var want []string
				for _, in := range u.ImportedInputs {
					want = append(want, in.InputID().String())
				}
				sort.Strings(want)
				if g.TxType != "ImportTx" || g.SourceChain != u.SourceChain.String() || g.DestinationChain != cID ||
					fmt.Sprint(sortedIDs(g.ConsumedUtxos)) != fmt.Sprint(want) || len(g.EVMOutputs) != len(u.Outs) {
					t.Errorf("%s: import %+v", tx.ID(), g)
				}
				total := new(big.Int)
				for i, o := range u.Outs {
					total.Add(total, new(big.Int).SetUint64(o.Amount))
					if i < len(g.EVMOutputs) && (g.EVMOutputs[i].ToAddress != o.Address.Hex() || g.EVMOutputs[i].Asset.Amount != fmt.Sprint(o.Amount)) {
						t.Errorf("%s: output %d %+v, node %s %d", tx.ID(), i, g.EVMOutputs[i], o.Address.Hex(), o.Amount)
					}
				}
				if len(g.AmountCreated) != 1 || g.AmountCreated[0].Amount != total.String() {
					t.Errorf("%s: amountCreated %+v, node %s", tx.ID(), g.AmountCreated, total)
				}
			case *catomic.UnsignedExportTx:
				if g.TxType != "ExportTx" || g.DestinationChain != u.DestinationChain.String() || g.SourceChain != cID ||
					len(g.EmittedUtxos) != len(u.ExportedOutputs) || len(g.EVMInputs) != len(u.Ins) {
					t.Errorf("%s: export %+v", tx.ID(), g)
				}
				for i, in := range u.Ins {
					if i < len(g.EVMInputs) && (g.EVMInputs[i].FromAddress != in.Address.Hex() || g.EVMInputs[i].Asset.Amount != fmt.Sprint(in.Amount) ||
						len(g.EVMInputs[i].Credentials) == 0) {
						t.Errorf("%s: input %d %+v, node %s %d", tx.ID(), i, g.EVMInputs[i], in.Address.Hex(), in.Amount)
					}
				}
			}
		})
		if n == 0 {
			t.Fatal("no recorded atomic txs")
		}
	})
}

func TestTxByHashErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		base := "/v1/networks/testnet/blockchains/"
		unknown := "2JVSBoinj9C2J33VntvzYtVJNZdN2NKiwwKjcumHUWEb5DbBrm"
		e.fails(t, base+"p-chain/transactions/xyz", 400, "txHash")
		e.fails(t, base+"x-chain/transactions/0x1234", 400, "txHash")
		e.fails(t, base+"c-chain/transactions/"+unknown, 404, unknown)
		e.fails(t, base+"p-chain/transactions/"+unknown, 404, unknown)
		e.fails(t, "/v1/networks/mainnet/blockchains/p-chain/transactions/"+unknown, 404, "mainnet")
	})
}

// TestTxListings walks every chain's tx list and compares it with the
// recorded blocks' txs (P, X) and the recorded atomic txs (C).
func TestTxListings(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		list := func(chain string, q url.Values, size int) []pTxOut {
			return decodeAll[pTxOut](t, e.listAll(t, "/v1/networks/testnet/blockchains/"+chain+"/transactions", q, size, "transactions"))
		}
		for _, chain := range []string{"P", "X"} {
			want := map[string]bool{}
			for _, b := range e.recordedBlocks(t, chain) {
				for _, id := range b.TxIDs {
					want[id] = true
				}
			}
			alias := strings.ToLower(chain) + "-chain"
			got := list(alias, url.Values{}, 7)
			ids := map[string]bool{}
			for _, g := range got {
				if ids[g.TxHash] {
					t.Errorf("%s: %s listed twice", chain, g.TxHash)
				}
				ids[g.TxHash] = true
			}
			for id := range want {
				if !ids[id] {
					t.Errorf("%s: block tx %s not listed", chain, id)
				}
			}
			// Ascending is the same set, reversed order of (time, id).
			asc := list(alias, url.Values{"sortOrder": {"asc"}}, 13)
			if len(asc) != len(got) {
				t.Errorf("%s: %d asc, %d desc", chain, len(asc), len(got))
			}
		}
		// Filters: addresses, txTypes, time range.
		for _, w := range loadWorkload(t) {
			if w.Chain == "C" || len(w.Addresses) == 0 {
				continue
			}
			alias := strings.ToLower(w.Chain) + "-chain"
			found := false
			for _, g := range list(alias, url.Values{"addresses": {w.Addresses[0]}, "txTypes": {w.Type}}, 50) {
				found = found || g.TxHash == w.TxID
				if g.TxType != w.Type {
					t.Errorf("txTypes=%s gave %s", w.Type, g.TxType)
				}
			}
			if !found {
				t.Errorf("%s: not listed for its address %s", w.TxID, w.Addresses[0])
			}
		}
		all := list("p-chain", url.Values{}, 100)
		mid := all[len(all)/2].BlockTimestamp
		for _, g := range list("p-chain", url.Values{"startTimestamp": {fmt.Sprint(mid)}, "endTimestamp": {fmt.Sprint(mid + 10)}}, 3) {
			if g.BlockTimestamp < mid || g.BlockTimestamp > mid+10 {
				t.Errorf("time range gave %d", g.BlockTimestamp)
			}
		}
		// C: the atomic txs.
		var cAtomic int
		for _, w := range loadWorkload(t) {
			if w.Chain == "C" && (w.Type == "ImportTx" || w.Type == "ExportTx") {
				cAtomic++
			}
		}
		if n := len(list("c-chain", url.Values{}, 2)); n != cAtomic {
			t.Errorf("c-chain: %d atomic txs listed, workload has %d", n, cAtomic)
		}
		// L1 validation: every tx that touched it.
		for _, v := range list("p-chain", url.Values{"txTypes": {"RegisterL1ValidatorTx"}}, 10) {
			for _, d := range v.L1 {
				got := list("p-chain", url.Values{"l1ValidationId": {d.ValidationID}}, 10)
				if len(got) < 2 {
					t.Errorf("l1ValidationId=%s: %d txs (register + weight changes)", d.ValidationID, len(got))
				}
			}
		}
		// Staking: the current stakers' txs (the genesis validators and subnet A's).
		staking := list("p-chain", url.Values{}, 10)
		_ = staking
		st := decodeAll[pTxOut](t, e.listAll(t, "/v1/networks/testnet/blockchains/p-chain/transactions:listStaking", url.Values{}, 1, "transactions"))
		var wantStaking []string
		for _, v := range e.currentValidators(t, "") {
			wantStaking = append(wantStaking, v["txID"].(string))
		}
		for _, v := range e.currentValidators(t, e.net.Subnets["A"].SubnetID) {
			wantStaking = append(wantStaking, v["txID"].(string))
		}
		var gotStaking []string
		for _, g := range st {
			gotStaking = append(gotStaking, g.TxHash)
		}
		sort.Strings(wantStaking)
		sort.Strings(gotStaking)
		if fmt.Sprint(gotStaking) != fmt.Sprint(wantStaking) {
			t.Errorf("listStaking %v, node's current stakers %v", gotStaking, wantStaking)
		}
		// By address: every current validator under its reward owner.
		for _, v := range e.currentValidators(t, "") {
			owner := v["validationRewardOwner"].(map[string]any)["addresses"].([]any)[0].(string)
			found := false
			for _, g := range decodeAll[pTxOut](t, e.listAll(t, "/v1/networks/testnet/blockchains/p-chain/transactions:listStaking",
				url.Values{"addresses": {owner}}, 2, "transactions")) {
				found = found || g.TxHash == v["txID"]
			}
			if !found {
				t.Errorf("listStaking?addresses=%s misses %s", owner, v["txID"])
			}
		}
		for _, c := range []struct{ target, want string }{
			{"p-chain/transactions?txTypes=Nope", "txTypes"},
			{"p-chain/transactions?addresses=P-avax1xyz", "addresses"},
			{"p-chain/transactions?startTimestamp=10&endTimestamp=5", "startTimestamp"},
			{"p-chain/transactions?pageSize=101", "pageSize"},
			{"p-chain/transactions?sortOrder=x", "sortOrder"},
			{"p-chain/transactions?l1ValidationId=xyz", "l1ValidationId"},
			{"x-chain/transactions?l1ValidationId=" + "2JVSBoinj9C2J33VntvzYtVJNZdN2NKiwwKjcumHUWEb5DbBrm", "l1ValidationId"},
			{"x-chain/transactions:listStaking", "blockchainId"},
			{"p-chain/transactions?pageToken=abc", "pageToken"},
		} {
			e.fails(t, "/v1/networks/testnet/blockchains/"+c.target, 400, c.want)
		}
	})
}
