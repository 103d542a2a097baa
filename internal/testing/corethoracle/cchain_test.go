package corethoracle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/graft/coreth/plugin/evm/vmtest"
	"github.com/ava-labs/avalanchego/upgrade/upgradetest"
	"github.com/ava-labs/avalanchego/utils/units"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/libevm/common"
	"github.com/ava-labs/libevm/core/types"

	corethevm "github.com/ava-labs/avalanchego/graft/coreth/plugin/evm"
	corethatomic "github.com/ava-labs/avalanchego/graft/coreth/plugin/evm/atomic"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/api/data/primary"
	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/decode/catomic"
	"github.com/permafrost-dev/permafrost/internal/decode/evm"
	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testing/corethoracle"

	evmdata "github.com/permafrost-dev/permafrost/internal/api/data/evm"
)

// TestMain configures libevm for the C-chain once (coreth's types and rules)
// and stops the test PostgreSQL cluster at the end.
func TestMain(m *testing.M) {
	corethevm.RegisterAllLibEVMExtras()
	storetest.Main(m)
}

// TestCChainHistoricalFormats has coreth build, verify and accept C-chain
// blocks under three historical rule sets, each with its own block and tx
// formats, and indexes them through the real EVM source, pipeline, EVM
// indexer and atomic-tx indexer, on both backends; then every block, tx,
// balance and atomic tx the data service serves is compared with the VM.
func TestCChainHistoricalFormats(t *testing.T) {
	if testing.Short() {
		t.Skip("runs coreth")
	}
	for _, tc := range []struct {
		name string
		fork upgradetest.Fork
		// gasPrice of the legacy txs (gwei): the launch minimum was 470; from
		// Apricot Phase 3 the base fee applies and Phase 4 adds a block gas
		// cost paid from tips, so these txs tip well above it.
		gasPrice int64
		dynamic  bool // EIP-1559 txs exist (Apricot Phase 3 on)
		batched  bool // several atomic txs per block (Apricot Phase 5 on)
	}{
		{name: "launch: no base fee, legacy txs, one atomic tx per block", fork: upgradetest.NoUpgrades, gasPrice: 470},
		{name: "Apricot Phase 4: base fee, block gas cost, one atomic tx per block", fork: upgradetest.ApricotPhase4, gasPrice: 50_000, dynamic: true},
		{name: "Apricot Phase 5: atomic txs batched in ExtData", fork: upgradetest.ApricotPhase5, gasPrice: 50_000, dynamic: true, batched: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := corethoracle.New(t, tc.fork)
			// Atomic txs pay their fee at this base fee: 1,000 times the initial
			// one, so what they burn beyond it covers the block gas cost.
			var baseFee *big.Int
			if tc.dynamic {
				baseFee = new(big.Int).Mul(vmtest.InitialBaseFee, big.NewInt(1000))
			}
			k0, k1, k2 := vmtest.TestKeys[0], vmtest.TestKeys[1], vmtest.TestKeys[2]
			var atomicTxs []*corethatomic.Tx
			importOf := func(k int, seed string) *corethatomic.Tx {
				t.Helper()
				u, err := o.ExportedToC(vmtest.TestKeys[k], 100*units.Avax, seed)
				if err != nil {
					t.Fatal(err)
				}
				tx, err := o.Import(vmtest.TestKeys[k], []*avax.UTXO{u}, baseFee)
				if err != nil {
					t.Fatal(err)
				}
				atomicTxs = append(atomicTxs, tx)
				return tx
			}
			build := func(name string, eth []*types.Transaction, atx ...*corethatomic.Tx) {
				t.Helper()
				if _, err := o.Build(eth, atx...); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			chainID := o.VM.Ethereum().BlockChain().Config().ChainID
			signer := types.LatestSignerForChainID(chainID)
			nonce := map[common.Address]uint64{}
			legacy := func(from int, to *common.Address, value *big.Int, gas uint64, data []byte) *types.Transaction {
				t.Helper()
				k := vmtest.TestKeys[from]
				addr := k.EthAddress()
				tx, err := types.SignNewTx(k.ToECDSA(), signer, &types.LegacyTx{Nonce: nonce[addr], To: to, Value: value, Gas: gas,
					GasPrice: big.NewInt(tc.gasPrice * 1e9), Data: data})
				if err != nil {
					t.Fatal(err)
				}
				nonce[addr]++
				return tx
			}

			// An import first: before Apricot Phase 5 a block holds one.
			if tc.batched {
				build("two imports in one block", nil, importOf(0, "a"), importOf(1, "b"))
			} else {
				build("import", nil, importOf(0, "a"))
				build("second import", nil, importOf(1, "b"))
			}
			to := k2.EthAddress()
			build("legacy transfers", []*types.Transaction{
				legacy(0, &to, big.NewInt(1e18), 21_000, nil),
				legacy(1, &to, big.NewInt(2e18), 21_000, nil),
			})
			// A contract whose runtime returns 42.
			build("contract creation", []*types.Transaction{legacy(0, nil, big.NewInt(0), 200_000,
				common.FromHex("0x600a600c600039600a6000f3602a60005260206000f3"))})
			if tc.dynamic {
				addr := k1.EthAddress()
				tx, err := types.SignNewTx(k1.ToECDSA(), signer, &types.DynamicFeeTx{ChainID: chainID, Nonce: nonce[addr], To: &to,
					Value: big.NewInt(3e18), Gas: 21_000, GasFeeCap: big.NewInt(tc.gasPrice * 1e9), GasTipCap: big.NewInt(tc.gasPrice * 1e9 / 2)})
				if err != nil {
					t.Fatal(err)
				}
				nonce[addr]++
				build("EIP-1559 transfer", []*types.Transaction{tx})
			}
			exp, err := o.Export(k0, 10*units.Avax, baseFee)
			if err != nil {
				t.Fatal(err)
			}
			atomicTxs = append(atomicTxs, exp)
			build("export", nil, exp)

			for _, backend := range storetest.Backends {
				t.Run(backend, func(t *testing.T) {
					p := index(t, backend, o)
					compareChain(t, o, p, atomicTxs, []common.Address{k0.EthAddress(), k1.EthAddress(), k2.EthAddress()})
				})
			}
		})
	}
}

// indexed is one backend's Permafrost index of the oracle's C-chain with the
// data service mounted.
type indexed struct {
	mux     *api.Mux
	chainID string
}

// index ingests the oracle's C-chain through the real EVM source, pipeline
// and indexers (EVM and atomic), as the chain set builds them.
func index(t *testing.T, backend string, o *corethoracle.Oracle) *indexed {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("CORETHORACLE_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := storetest.Open(t, storetest.DSNFor(t, backend))
	g, err := genesis.Load(corethoracle.NetworkID, o.Network.Path)
	if err != nil {
		t.Fatal(err)
	}
	g.Upgrades = o.Upgrades // the fork's schedule (a node's --upgrade-file)
	cfg, err := evm.CChainConfig(g)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = log
	a, err := catomic.New(g, log)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Atomic = chains.NewAtomicApplier(a)
	ix, err := evm.NewIndexer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	src, err := source.NewEVM(ctx, o.URL+source.PathCRPC, source.EVMOptions{Retry: source.Retry{MaxAttempts: 2}})
	if err != nil {
		t.Fatal(err)
	}
	chain := ingest.Chain{Key: "C", Kind: "EVM", BlockchainID: o.Ctx.ChainID.String(), EVMChainID: cfg.ChainID.String(),
		NetworkID: corethoracle.NetworkID, Name: "C-Chain", Source: &chains.EVMSource{EVM: src, Decoder: ix}, Indexer: ix, BatchSize: 3,
		FetchSize: src.ParallelHeights()}
	if err := ingest.New(db, []ingest.Chain{chain}, ingest.Options{UntilTip: true, Poll: 10 * time.Millisecond}, log).Run(ctx); err != nil {
		t.Fatalf("ingest: %v", err)
	}
	network, err := api.LoadNetwork(ctx, db, "testnet")
	if err != nil {
		t.Fatal(err)
	}
	mux := api.NewMux(log)
	pager := api.NewPager([]byte("corethoracle"))
	evmdata.Register(mux, evmdata.Deps{DB: db, Network: network, Pager: pager, Log: log})
	primary.Register(mux, primary.Deps{DB: db, Network: network, Pager: pager, Log: log, AVAXAssetID: g.AvaxAssetID.String()})
	return &indexed{mux: mux, chainID: cfg.ChainID.String()}
}

func (p *indexed) get(t *testing.T, target string, out any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	p.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			t.Fatalf("%s: %v", target, err)
		}
	} else {
		t.Logf("%s: %d %s", target, rec.Code, rec.Body.String())
	}
	return rec.Code
}

// compareChain compares, for every block the VM accepted: the block
// (hash, parent, time, gas, base fee, tx count) and each of its txs
// (hash, type, status, from, to, value, nonce, gas used and price, from
// the VM's receipts); the native balances of addrs with the VM's state;
// and each atomic tx (found at the VM's height, with its type).
func compareChain(t *testing.T, o *corethoracle.Oracle, p *indexed, atomicTxs []*corethatomic.Tx, addrs []common.Address) {
	t.Helper()
	bc := o.VM.Ethereum().BlockChain()
	signer := types.LatestSignerForChainID(bc.Config().ChainID)
	tip := bc.LastAcceptedBlock().NumberU64()
	eq := func(what, got, want string) {
		t.Helper()
		if !strings.EqualFold(got, want) {
			t.Errorf("%s = %q, coreth %q", what, got, want)
		}
	}
	for h := uint64(0); h <= tip; h++ {
		b := bc.GetBlockByNumber(h)
		var got evmdata.EvmBlock
		if code := p.get(t, fmt.Sprintf("/v1/chains/%s/blocks/%d", p.chainID, h), &got); code != http.StatusOK {
			t.Errorf("block %d: status %d", h, code)
			continue
		}
		where := fmt.Sprintf("block %d", h)
		eq(where+" hash", got.BlockHash, b.Hash().Hex())
		eq(where+" parent", got.ParentHash, b.ParentHash().Hex())
		eq(where+" time", strconv.FormatInt(got.BlockTimestamp, 10), strconv.FormatUint(b.Time(), 10))
		eq(where+" gasUsed", got.GasUsed, strconv.FormatUint(b.GasUsed(), 10))
		eq(where+" gasLimit", got.GasLimit, strconv.FormatUint(b.GasLimit(), 10))
		eq(where+" txCount", strconv.FormatInt(got.TxCount, 10), strconv.Itoa(len(b.Transactions())))
		wantBase := "0"
		if b.BaseFee() != nil {
			wantBase = b.BaseFee().String()
		}
		eq(where+" baseFee", got.BaseFee, wantBase)
		receipts := bc.GetReceiptsByHash(b.Hash())
		for i, tx := range b.Transactions() {
			r := receipts[i]
			var full struct {
				NativeTransaction evmdata.FullNativeTransactionDetails `json:"nativeTransaction"`
			}
			if code := p.get(t, fmt.Sprintf("/v1/chains/%s/transactions/%s", p.chainID, tx.Hash().Hex()), &full); code != http.StatusOK {
				t.Errorf("tx %s: status %d", tx.Hash().Hex(), code)
				continue
			}
			n := full.NativeTransaction
			w := "tx " + tx.Hash().Hex()
			from, err := types.Sender(signer, tx)
			if err != nil {
				t.Fatal(err)
			}
			eq(w+" block", n.BlockNumber, strconv.FormatUint(h, 10))
			eq(w+" index", strconv.FormatInt(n.BlockIndex, 10), strconv.Itoa(i))
			eq(w+" type", strconv.FormatInt(n.TxType, 10), strconv.Itoa(int(tx.Type())))
			eq(w+" status", n.TxStatus, strconv.FormatUint(r.Status, 10))
			eq(w+" from", n.From.Address, from.Hex())
			wantTo := r.ContractAddress.Hex()
			if tx.To() != nil {
				wantTo = tx.To().Hex()
			}
			eq(w+" to", n.To.Address, wantTo)
			eq(w+" value", n.Value, tx.Value().String())
			eq(w+" nonce", n.Nonce, strconv.FormatUint(tx.Nonce(), 10))
			eq(w+" gasUsed", n.GasUsed, strconv.FormatUint(r.GasUsed, 10))
			eq(w+" gasPrice", n.GasPrice, r.EffectiveGasPrice.String())
		}
	}
	state, err := bc.State()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		var got struct {
			NativeTokenBalance struct {
				Balance string `json:"balance"`
			} `json:"nativeTokenBalance"`
		}
		if code := p.get(t, fmt.Sprintf("/v1/chains/%s/addresses/%s/balances:getNative", p.chainID, a.Hex()), &got); code != http.StatusOK {
			t.Errorf("balance of %s: status %d", a.Hex(), code)
			continue
		}
		eq("balance of "+a.Hex(), got.NativeTokenBalance.Balance, state.GetBalance(a).String())
	}
	for _, atx := range atomicTxs {
		_, height, err := o.VM.AtomicTxRepository.GetByTxID(atx.ID())
		if err != nil {
			t.Fatalf("coreth has no atomic tx %s: %v", atx.ID(), err)
		}
		var got struct {
			TxHash      string `json:"txHash"`
			BlockHeight int64  `json:"blockHeight"`
			TxType      string `json:"txType"`
		}
		if code := p.get(t, "/v1/networks/testnet/blockchains/c-chain/transactions/"+atx.ID().String(), &got); code != http.StatusOK {
			t.Errorf("atomic tx %s: status %d", atx.ID(), code)
			continue
		}
		wantType := "ImportTx"
		if _, ok := atx.UnsignedAtomicTx.(*corethatomic.UnsignedExportTx); ok {
			wantType = "ExportTx"
		}
		eq("atomic tx "+atx.ID().String()+" height", strconv.FormatInt(got.BlockHeight, 10), strconv.FormatUint(height, 10))
		eq("atomic tx "+atx.ID().String()+" type", got.TxType, wantType)
	}
}
