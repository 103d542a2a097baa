package primary_test

import (
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/decode/catomic"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

// avax parses a decimal AVAX string of the supply answer into wei.
func avaxWei(t testing.TB, s string) *big.Int {
	t.Helper()
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 18 {
		t.Fatalf("%q: more than 18 decimals", s)
	}
	v, ok := new(big.Int).SetString(whole+frac+strings.Repeat("0", 18-len(frac)), 10)
	if !ok {
		t.Fatalf("%q is not a decimal", s)
	}
	return v
}

func nAVAX(n uint64) *big.Int { return new(big.Int).Mul(new(big.Int).SetUint64(n), big.NewInt(1e9)) }

// recordedSupply is what the node's answers in devnet-a say the supply
// endpoint's figures are, each recomputed from the recording alone.
type recordedSupply struct {
	genesis, rewards, staked, pFees, xBurned, cBurned, l1Deposits *big.Int
}

func (e *env) recordedSupply(t *testing.T) recordedSupply {
	t.Helper()
	avaxID := e.net.AvaxAssetID
	r := recordedSupply{}

	// The genesis's initial supply: every allocation (avalanchego's
	// genesis.Config.InitialSupply).
	var g struct {
		Allocations []struct {
			InitialAmount  uint64 `json:"initialAmount"`
			UnlockSchedule []struct {
				Amount uint64 `json:"amount"`
			} `json:"unlockSchedule"`
		} `json:"allocations"`
	}
	raw, err := os.ReadFile(filepath.Join(testenv.DevnetDir(t), "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	var genesis uint64
	for _, a := range g.Allocations {
		genesis += a.InitialAmount
		for _, u := range a.UnlockSchedule {
			genesis += u.Amount
		}
	}
	r.genesis = nAVAX(genesis)

	// Rewards paid: getCurrentSupply counts the potential reward of every
	// current staker (and the delegation fees a validator accrued) on top of
	// what was paid, so paid = supply - genesis - those.
	var supply struct {
		Supply uint64 `json:"supply,string"`
	}
	e.rec.each("P", "platform.getCurrentSupply", func(params, result json.RawMessage) {
		if string(params) == "{}" {
			if err := json.Unmarshal(result, &supply); err != nil {
				t.Fatal(err)
			}
		}
	})
	if supply.Supply == 0 {
		t.Fatal("no recorded platform.getCurrentSupply")
	}
	pending, staked := uint64(0), uint64(0)
	for _, v := range e.currentValidators(t, "") {
		num := func(m map[string]any, k string) uint64 {
			var n uint64
			if s, ok := m[k].(string); ok {
				if err := json.Unmarshal([]byte(s), &n); err != nil {
					t.Fatalf("%s %q: %v", k, s, err)
				}
			}
			return n
		}
		pending += num(v, "potentialReward") + num(v, "accruedDelegateeReward")
		staked += num(v, "weight")
		ds, _ := v["delegators"].([]any)
		for _, d := range ds {
			pending += num(d.(map[string]any), "potentialReward")
		}
	}
	r.rewards = nAVAX(supply.Supply - genesis - pending)
	r.staked = nAVAX(staked) // validators' weights hold their delegators' stake

	// P fees (AVAX in - out - staked - L1 balances) and L1 deposits of every
	// tx of the recorded blocks.
	nodeTxs := e.pNodeTxs(t)
	var pFees, l1 uint64
	for _, b := range e.recordedBlocks(t, "P") {
		for _, id := range b.TxIDs {
			u := nodeTxs[id].Unsigned
			in, out := avaxInOut(t, nodeTxs[id], avaxID)
			var dep uint64
			if u.Balance != nil {
				dep = *u.Balance
			}
			for _, v := range u.Validators {
				dep += v.Balance
			}
			if in >= out+dep {
				pFees += in - out - dep
			}
			l1 += dep
		}
	}
	r.pFees, r.l1Deposits = nAVAX(pFees), nAVAX(l1)

	// X fees: AVAX in - out of every tx the node answered (genesis assets
	// are in no block and were not asked).
	var xFees uint64
	for _, tx := range e.nodeTxs(t, "X", "avm.getTx") {
		in, out := avaxInOut(t, tx, avaxID)
		xFees += in - out
	}
	r.xBurned = nAVAX(xFees)

	// C: every receipt's gasUsed × effectiveGasPrice (the blackhole gets
	// the whole fee), plus each atomic tx's AVAX in - out.
	cBurned := new(big.Int)
	seen := map[string]bool{}
	for _, c := range devnet.LoadRPC(t, devnet.CRPC) {
		if c.Method != "eth_getBlockReceipts" || c.Response.Error != nil {
			continue
		}
		var rs []struct {
			TransactionHash   string `json:"transactionHash"`
			GasUsed           string `json:"gasUsed"`
			EffectiveGasPrice string `json:"effectiveGasPrice"`
		}
		if err := json.Unmarshal(c.Response.Result, &rs); err != nil {
			t.Fatal(err)
		}
		for _, x := range rs {
			if seen[x.TransactionHash] {
				continue
			}
			seen[x.TransactionHash] = true
			gas, _ := new(big.Int).SetString(strings.TrimPrefix(x.GasUsed, "0x"), 16)
			price, _ := new(big.Int).SetString(strings.TrimPrefix(x.EffectiveGasPrice, "0x"), 16)
			cBurned.Add(cBurned, gas.Mul(gas, price))
		}
	}
	atomic := map[string]uint64{}
	e.rec.each("C", "avax.getAtomicTx", func(params, result json.RawMessage) {
		var a struct {
			Tx          string `json:"tx"`
			BlockHeight string `json:"blockHeight"`
		}
		if json.Unmarshal(result, &a) != nil || a.Tx == "" || a.BlockHeight == "" {
			return
		}
		b, err := hex.DecodeString(strings.TrimPrefix(a.Tx, "0x"))
		if err != nil {
			t.Fatal(err)
		}
		txs, err := catomic.DecodeExtraData(b[:len(b)-4], false) // the hex encoding's checksum
		if err != nil || len(txs) != 1 {
			t.Fatalf("decode atomic tx: %v", err)
		}
		var in, out uint64
		switch u := txs[0].UnsignedAtomicTx.(type) {
		case *catomic.UnsignedImportTx:
			for _, i := range u.ImportedInputs {
				if i.AssetID().String() == avaxID {
					in += i.In.Amount()
				}
			}
			for _, o := range u.Outs {
				if o.AssetID.String() == avaxID {
					out += o.Amount
				}
			}
		case *catomic.UnsignedExportTx:
			for _, i := range u.Ins {
				if i.AssetID.String() == avaxID {
					in += i.Amount
				}
			}
			for _, o := range u.ExportedOutputs {
				if o.AssetID().String() == avaxID {
					out += o.Out.Amount()
				}
			}
		}
		atomic[txs[0].ID().String()] = in - out
	})
	if len(atomic) == 0 {
		t.Fatal("no recorded atomic tx of the C-chain")
	}
	for _, f := range atomic {
		cBurned.Add(cBurned, nAVAX(f))
	}
	r.cBurned = cBurned
	return r
}

// avaxInOut is the AVAX a node's tx consumes (inputs, imported inputs) and
// produces (outputs, exported outputs, stake).
func avaxInOut(t testing.TB, tx pNodeTx, avaxID string) (in, out uint64) {
	t.Helper()
	u := tx.Unsigned
	for _, x := range append(append([]nodeInput{}, u.Inputs...), u.Imported...) {
		if x.AssetID == avaxID {
			in += x.amount()
		}
	}
	for _, o := range append(append(append([]json.RawMessage{}, u.Outputs...), u.Exported...), u.Stake...) {
		if a, v := outAmount(t, o); a == avaxID {
			out += v
		}
	}
	return in, out
}

// TestAvaxSupply compares GET /v1/avax/supply with the figures the
// recorded node answers give: the genesis's initial supply, rewards paid
// (getCurrentSupply less the current stakers' potential rewards), stake of
// the current validators, fees of every recorded P, X and C-atomic tx and
// the C-chain receipts' fees; and the document's arithmetic between them.
func TestAvaxSupply(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		want := e.recordedSupply(t)
		var got struct {
			CirculatingSupply, TotalSupply, TotalPBurned, TotalCBurned, TotalXBurned string
			TotalStaked, TotalLocked, TotalRewards, LastUpdated, GenesisUnlock       string
			L1ValidatorFees                                                          string
		}
		e.ok(t, "/v1/avax/supply", &got)
		l1Fees := avaxWei(t, got.L1ValidatorFees)
		pFees := new(big.Int).Sub(avaxWei(t, got.TotalPBurned), l1Fees)
		for _, c := range []struct {
			name      string
			got, want *big.Int
		}{
			{"genesisUnlock", avaxWei(t, got.GenesisUnlock), want.genesis},
			{"totalRewards", avaxWei(t, got.TotalRewards), want.rewards},
			{"totalStaked", avaxWei(t, got.TotalStaked), want.staked},
			{"totalPBurned - l1ValidatorFees", pFees, want.pFees},
			{"totalXBurned", avaxWei(t, got.TotalXBurned), want.xBurned},
			{"totalCBurned", avaxWei(t, got.TotalCBurned), want.cBurned},
		} {
			if c.got.Cmp(c.want) != 0 {
				t.Errorf("%s: %s wei, the node's answers give %s", c.name, c.got, c.want)
			}
		}
		if want.xBurned.Sign() == 0 || want.cBurned.Sign() == 0 || want.pFees.Sign() == 0 || want.rewards.Sign() == 0 {
			t.Errorf("the recording should exercise every total: %+v", want)
		}
		// L1 validator fees: some of what went into L1 balances, never more.
		if l1Fees.Sign() <= 0 || l1Fees.Cmp(want.l1Deposits) > 0 {
			t.Errorf("l1ValidatorFees %s wei, deposits %s", l1Fees, want.l1Deposits)
		}
		total := new(big.Int).Add(want.genesis, want.rewards)
		for _, b := range []string{got.TotalPBurned, got.TotalXBurned, got.TotalCBurned} {
			total.Sub(total, avaxWei(t, b))
		}
		if avaxWei(t, got.TotalSupply).Cmp(total) != 0 || got.CirculatingSupply != got.TotalSupply {
			t.Errorf("totalSupply %s, circulating %s; genesis + rewards - burned = %s wei", got.TotalSupply, got.CirculatingSupply, total)
		}
		// The funded keys' stakeable-locked genesis AVAX (locked a week
		// after genesis; the workload took minutes).
		if avaxWei(t, got.TotalLocked).Sign() <= 0 {
			t.Errorf("totalLocked %s", got.TotalLocked)
		}
		if _, err := time.Parse(time.RFC3339, got.LastUpdated); err != nil {
			t.Errorf("lastUpdated %q: %v", got.LastUpdated, err)
		}
	})
}
