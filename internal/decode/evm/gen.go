package evm

import (
	"math/big"
	"math/rand"
	"strconv"

	"github.com/ava-labs/libevm/common"
	"github.com/ava-labs/libevm/core/types"

	"github.com/permafrost-dev/permafrost/internal/ingest"
)

// Generator produces a deterministic synthetic EVM chain in the shape coreth
// answers eth_getBlockByNumber(n, true) and eth_getBlockReceipts(n): block 0
// is an empty genesis, block 1 deploys the token contracts, and every later
// block carries txPerBlock dynamic-fee txs: native transfers, ERC-20
// transfers and mints, ERC-721 mints and transfers, between Zipf-distributed
// accounts (2,000) of Zipf-distributed tokens (20 ERC-20s). Token and native
// movements are consistent (nobody spends what they do not have), so the
// indexed balances are meaningful. Hashes, roots and signatures are random
// bytes, not real keccak hashes or signatures. Used by BenchmarkApply and
// usable as the data of a local JSON-RPC source.
type Generator struct {
	rng        *rand.Rand
	txPerBlock int
	height     uint64
	parent     common.Hash
	time       uint64
	spacing    uint64 // seconds between blocks

	accounts []common.Address
	nonces   []uint64
	erc20s   []common.Address
	erc721s  []common.Address
	deployer common.Address
	// ERC-20 holdings in units of 10^15 (index: token*len(accounts)+account).
	holdings []uint64
	// ERC-721 tokens minted so far: owner account index per (contract, id-1).
	nftOwner [][]int

	// Activity is skewed as on a real chain: a few hot accounts (routers,
	// exchanges) and tokens take most of the traffic.
	pickAccount *rand.Zipf
	pickERC20   *rand.Zipf
	word        big.Int

	// With traces (NewTracedGenerator): a WAVAX-like wrapper whose
	// withdrawals pay native value from inside its execution, and the
	// callTracer answer of every block. ledger is every account's native
	// balance as the generator moves it (its own bookkeeping, the expected
	// answer of tests); paidThirdParty are the accounts a contract paid
	// without their calling it.
	traced         bool
	wrapper        common.Address
	lookalike      common.Address // emits Deposit events no value backs
	wrapped        []uint64       // per account, in genUnit
	everWrapped    []bool
	ledger         map[common.Address]*big.Int
	paidThirdParty map[common.Address]bool
}

const (
	genAccounts = 2000
	genERC20s   = 20
	genERC721s  = 5
	genBaseFee  = 25_000_000_000 // 25 gwei
)

var (
	genMiner      = common.HexToAddress("0x0100000000000000000000000000000000000000")
	genUnit       = big.NewInt(1_000_000_000_000_000) // 10^15
	genAllocValue = new(big.Int).Mul(big.NewInt(1_000_000), new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil))
)

// NewGenerator returns a generator of blocks with txPerBlock txs each (after
// the deployment block), deterministic for seed.
func NewGenerator(seed int64, txPerBlock int) *Generator {
	if txPerBlock < 1 {
		txPerBlock = 1
	}
	g := &Generator{rng: rand.New(rand.NewSource(seed)), txPerBlock: txPerBlock, time: 1_700_000_000, spacing: 2}
	g.accounts = make([]common.Address, genAccounts)
	for i := range g.accounts {
		g.rng.Read(g.accounts[i][:])
	}
	g.nonces = make([]uint64, genAccounts+1)
	g.rng.Read(g.deployer[:])
	g.erc20s = make([]common.Address, genERC20s)
	g.erc721s = make([]common.Address, genERC721s)
	for i := range g.erc20s {
		g.rng.Read(g.erc20s[i][:])
	}
	for i := range g.erc721s {
		g.rng.Read(g.erc721s[i][:])
	}
	g.holdings = make([]uint64, genERC20s*genAccounts)
	g.pickAccount = rand.NewZipf(g.rng, 1.1, 1, genAccounts-1)
	g.pickERC20 = rand.NewZipf(g.rng, 1.5, 1, genERC20s-1)
	g.nftOwner = make([][]int, genERC721s)
	g.ledger = g.Alloc()
	return g
}

// SetSpacing sets the seconds between the next blocks (default 2): a wide
// spacing spans weeks and months in a few hundred blocks.
func (g *Generator) SetSpacing(seconds uint64) { g.spacing = seconds }

// NewTracedGenerator is NewGenerator's chain with internal value transfers
// and call traces: a quarter of the txs deposit into or withdraw from a
// wrapper contract (deployed in block 1), which pays withdrawals with a
// nested CALL to the caller, to a third party (withdrawTo), or fails its
// payment (a reverted frame inside a successful tx). Blocks carry "traces"
// (debug_traceBlockByNumber's callTracer answer).
func NewTracedGenerator(seed int64, txPerBlock int) *Generator {
	g := NewGenerator(seed, txPerBlock)
	g.traced = true
	g.rng.Read(g.wrapper[:])
	g.rng.Read(g.lookalike[:])
	g.wrapped = make([]uint64, genAccounts)
	g.everWrapped = make([]bool, genAccounts)
	g.paidThirdParty = map[common.Address]bool{}
	return g
}

// Ledger returns every account's native balance after the last generated
// block, as the generator moved the coins (alloc, values, fees to the
// coinbase, the wrapper's internal payments).
func (g *Generator) Ledger() map[common.Address]*big.Int {
	out := make(map[common.Address]*big.Int, len(g.ledger))
	for a, v := range g.ledger {
		out[a] = new(big.Int).Set(v)
	}
	return out
}

// PaidThirdParties are the accounts the wrapper paid without their calling
// it (withdrawTo): only traces show those payments.
func (g *Generator) PaidThirdParties() map[common.Address]bool {
	out := make(map[common.Address]bool, len(g.paidThirdParty))
	for a := range g.paidThirdParty {
		out[a] = true
	}
	return out
}

// Wrapped is every account's balance of the wrapper token after the last
// generated block (accounts that never held any are left out).
func (g *Generator) Wrapped() map[common.Address]*big.Int {
	out := map[common.Address]*big.Int{}
	for i, u := range g.wrapped {
		if u > 0 || g.everWrapped[i] {
			out[g.accounts[i]] = new(big.Int).Mul(new(big.Int).SetUint64(u), genUnit)
		}
	}
	return out
}

// Lookalike is the traced chain's contract whose Deposit events of the
// wrapper's signature no value backs.
func (g *Generator) Lookalike() common.Address { return g.lookalike }

// Wrapper is the traced chain's wrapper contract.
func (g *Generator) Wrapper() common.Address { return g.wrapper }

func (g *Generator) move(from, to common.Address, v *big.Int) {
	if v == nil || v.Sign() == 0 {
		return
	}
	f, ok := g.ledger[from]
	if !ok {
		f = new(big.Int)
		g.ledger[from] = f
	}
	f.Sub(f, v)
	t, ok := g.ledger[to]
	if !ok {
		t = new(big.Int)
		g.ledger[to] = t
	}
	t.Add(t, v)
}

// Alloc is the genesis allocation: every account and the deployer hold
// 10^6 native coins.
func (g *Generator) Alloc() map[common.Address]*big.Int {
	out := make(map[common.Address]*big.Int, len(g.accounts)+1)
	for _, a := range g.accounts {
		out[a] = new(big.Int).Set(genAllocValue)
	}
	out[g.deployer] = new(big.Int).Set(genAllocValue)
	return out
}

// GenerateBlocks returns blocks 0..n-1 of the chain of NewGenerator(seed, txPerBlock).
func GenerateBlocks(n, txPerBlock int, seed int64) []ingest.RawBlock {
	g := NewGenerator(seed, txPerBlock)
	out := make([]ingest.RawBlock, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, g.Next())
	}
	return out
}

// genTx is one tx being generated with its receipt.
type genTx struct {
	hash     common.Hash
	from     common.Address
	to       *common.Address
	value    *big.Int
	gas      uint64
	gasUsed  uint64
	nonce    uint64
	input    []byte
	contract *common.Address
	logs     []genLog
	calls    []genFrame // traced: the nested frames
}

// genFrame is a nested call frame of a traced tx.
type genFrame struct {
	typ      string
	from, to common.Address
	value    *big.Int
	gas      uint64
	gasUsed  uint64
	err      string
}

type genLog struct {
	address common.Address
	topics  []common.Hash
	data    []byte
}

// Next returns the next block.
func (g *Generator) Next() ingest.RawBlock {
	var txs []genTx
	switch g.height {
	case 0:
	case 1:
		for _, c := range append(append([]common.Address(nil), g.erc20s...), g.erc721s...) {
			c := c
			txs = append(txs, g.tx(len(g.accounts), nil, nil, 1_200_000, make([]byte, 3000), &c, nil))
		}
		if g.traced {
			w := g.wrapper
			txs = append(txs, g.tx(len(g.accounts), nil, nil, 700_000, make([]byte, 1500), &w, nil))
		}
	default:
		for i := 0; i < g.txPerBlock; i++ {
			if g.traced && g.rng.Intn(4) == 0 {
				txs = append(txs, g.wrapperTx())
				continue
			}
			txs = append(txs, g.randomTx())
		}
	}
	var hash common.Hash
	g.rng.Read(hash[:])
	if g.height > 0 {
		g.time += g.spacing
	}
	body := g.encode(hash, txs)
	rb := ingest.RawBlock{Height: g.height, Hash: hexString(hash[:]), Bytes: body, Timestamp: int64(g.time)}
	g.parent = hash
	g.height++
	return rb
}

func (g *Generator) tx(from int, to *common.Address, value *big.Int, gasUsed uint64, input []byte, contract *common.Address, logs []genLog) genTx {
	t := genTx{from: g.addrOf(from), to: to, value: value, gas: gasUsed + gasUsed/4, gasUsed: gasUsed,
		nonce: g.nonces[from], input: input, contract: contract, logs: logs}
	g.nonces[from]++
	g.rng.Read(t.hash[:])
	if t.value == nil {
		t.value = new(big.Int)
	}
	// Every generated tx succeeds: its value moves, its fee goes to the coinbase.
	if to != nil {
		g.move(t.from, *to, t.value)
	} else if contract != nil {
		g.move(t.from, *contract, t.value)
	}
	g.move(t.from, genMiner, new(big.Int).Mul(new(big.Int).SetUint64(gasUsed), big.NewInt(genPrice)))
	return t
}

// genPrice is the effective gas price of every generated tx (base fee + tip).
const genPrice = genBaseFee + genTip

const genTip = 1_000_000_000

// wrapperTx is a deposit into the wrapper (value at top level), or a
// withdrawal it pays from inside its execution: to the caller, to a third
// party, or not at all (the payment frame fails, the tx does not).
func (g *Generator) wrapperTx() genTx {
	from := int(g.pickAccount.Uint64())
	w := g.wrapper
	if g.rng.Intn(8) == 0 {
		// A look-alike: another contract's Deposit(caller, wad) event of
		// the wrapper's signature, in a call that moves no value.
		v := new(big.Int).Mul(big.NewInt(g.rng.Int63n(1_000_000)+1), genUnit)
		la := g.lookalike
		logs := []genLog{{address: la, topics: []common.Hash{topicDeposit, addrTopic(g.accounts[from])},
			data: v.FillBytes(make([]byte, 32))}}
		return g.tx(from, &la, nil, 30_000+uint64(g.rng.Intn(2000)), []byte{0xb6, 0xb5, 0x5f, 0x25}, nil, logs)
	}
	if g.wrapped[from] == 0 {
		units := uint64(g.rng.Int63n(1_000_000) + 1)
		g.wrapped[from] += units
		g.everWrapped[from] = true
		v := new(big.Int).Mul(new(big.Int).SetUint64(units), genUnit)
		logs := []genLog{{address: w, topics: []common.Hash{topicDeposit, addrTopic(g.accounts[from])},
			data: v.FillBytes(make([]byte, 32))}}
		return g.tx(from, &w, v, 45_000+uint64(g.rng.Intn(2000)), []byte{0xd0, 0xe3, 0x0d, 0xb0}, nil, logs)
	}
	units := uint64(g.rng.Int63n(int64(g.wrapped[from]))) + 1
	v := new(big.Int).Mul(new(big.Int).SetUint64(units), genUnit)
	dst := g.accounts[from]
	input := make([]byte, 36)
	copy(input, []byte{0x2e, 0x1a, 0x7d, 0x4d}) // withdraw(uint256)
	kind := g.rng.Intn(4)
	if kind == 1 {
		dst = g.accounts[int(g.pickAccount.Uint64())]
		input = make([]byte, 68)
		copy(input, []byte{0x20, 0x5c, 0x28, 0x78}) // withdrawTo(address,uint256)
	}
	// Withdrawal(caller, wad) as WETH9 emits it; also after a failed
	// payment, where no value backs it and the wrapped balance stays.
	logs := []genLog{{address: w, topics: []common.Hash{topicWithdrawal, addrTopic(g.accounts[from])},
		data: v.FillBytes(make([]byte, 32))}}
	t := g.tx(from, &w, nil, 40_000+uint64(g.rng.Intn(5000)), input, nil, logs)
	f := genFrame{typ: "CALL", from: w, to: dst, value: v, gas: 2300, gasUsed: 0}
	if kind == 3 {
		f.err = "execution reverted" // the wrapper ignores the failed payment
	} else {
		g.wrapped[from] -= units
		g.move(w, dst, v)
		if dst != g.accounts[from] {
			g.paidThirdParty[dst] = true
		}
	}
	t.calls = []genFrame{f}
	return t
}

func (g *Generator) addrOf(i int) common.Address {
	if i == len(g.accounts) {
		return g.deployer
	}
	return g.accounts[i]
}

func addrTopic(a common.Address) common.Hash { return common.BytesToHash(a[:]) }

func (g *Generator) randomTx() genTx {
	from := int(g.pickAccount.Uint64())
	to := int(g.pickAccount.Uint64())
	switch r := g.rng.Intn(10); {
	case r < 3: // native transfer
		dst := g.accounts[to]
		v := new(big.Int).Mul(big.NewInt(g.rng.Int63n(1_000_000)+1), genUnit)
		return g.tx(from, &dst, v, 21000, nil, nil, nil)
	case r < 8: // ERC-20 transfer, or mint when the sender holds none
		tok := int(g.pickERC20.Uint64())
		contract := g.erc20s[tok]
		h := &g.holdings[tok*len(g.accounts)+from]
		input := make([]byte, 68)
		copy(input, []byte{0xa9, 0x05, 0x9c, 0xbb})
		var amount uint64
		var src common.Address
		if *h == 0 {
			amount = uint64(g.rng.Int63n(1_000_000_000) + 1)
			*h += amount
			to = from
			input[0], input[1], input[2], input[3] = 0x40, 0xc1, 0x0f, 0x19 // mint(address,uint256)
		} else {
			amount = uint64(g.rng.Int63n(int64(*h))) + 1
			*h -= amount
			g.holdings[tok*len(g.accounts)+to] += amount
			src = g.accounts[from]
		}
		word := g.word.Mul(g.word.SetUint64(amount), genUnit).FillBytes(make([]byte, 32))
		copy(input[36:], word)
		logs := []genLog{{address: contract, topics: []common.Hash{topicTransfer, addrTopic(src), addrTopic(g.accounts[to])}, data: word}}
		return g.tx(from, &contract, nil, 51000+uint64(g.rng.Intn(5000)), input, nil, logs)
	default: // ERC-721 mint, or transfer of an existing token by its owner
		c := g.rng.Intn(len(g.erc721s))
		contract := g.erc721s[c]
		owners := g.nftOwner[c]
		var id int
		var src common.Address
		gas := uint64(120000)
		if len(owners) == 0 || g.rng.Intn(3) == 0 {
			owners = append(owners, to)
			g.nftOwner[c] = owners
			id = len(owners)
		} else {
			id = g.rng.Intn(len(owners)) + 1
			from = owners[id-1]
			src = g.accounts[from]
			owners[id-1] = to
			gas = 60000
		}
		var idWord common.Hash
		big.NewInt(int64(id)).FillBytes(idWord[:])
		input := make([]byte, 100)
		copy(input, []byte{0x23, 0xb8, 0x72, 0xdd}) // transferFrom
		logs := []genLog{{address: contract, topics: []common.Hash{topicTransfer, addrTopic(src), addrTopic(g.accounts[to]), idWord}}}
		return g.tx(from, &contract, nil, gas+uint64(g.rng.Intn(5000)), input, nil, logs)
	}
}

// encode renders {"block":...,"receipts":[...]} as coreth does.
func (g *Generator) encode(hash common.Hash, txs []genTx) []byte {
	const tip = genTip
	price := uint64(genPrice)
	b := make([]byte, 0, 2048+len(txs)*3000)
	var blockBloom types.Bloom
	var gasUsed uint64
	for i := range txs {
		gasUsed += txs[i].gasUsed
	}
	var root [32]byte
	b = append(b, `{"block":{"baseFeePerGas":`...)
	b = appendQty(b, genBaseFee)
	b = append(b, `,"blobGasUsed":"0x0","blockExtraData":"0x","blockGasCost":"0x0","difficulty":"0x1","excessBlobGas":"0x0","extDataGasUsed":"0x0","extDataHash":"0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421","extraData":"0x00000000000000000000000000000000000000000000000000000000000000","gasLimit":"0xe4e1c0","gasUsed":`...)
	b = appendQty(b, gasUsed)
	b = append(b, `,"hash":`...)
	b = appendHexStr(b, hash[:])
	for i := range txs {
		for _, l := range txs[i].logs {
			blockBloom.Add(l.address[:])
			for _, t := range l.topics {
				blockBloom.Add(t[:])
			}
		}
	}
	b = append(b, `,"logsBloom":`...)
	b = appendHexStr(b, blockBloom[:])
	b = append(b, `,"miner":`...)
	b = appendHexStr(b, genMiner[:])
	b = append(b, `,"mixHash":"0x0000000000000000000000000000000000000000000000000000000000000000","nonce":"0x0000000000000000","number":`...)
	b = appendQty(b, g.height)
	b = append(b, `,"parentBeaconBlockRoot":"0x0000000000000000000000000000000000000000000000000000000000000000","parentHash":`...)
	b = appendHexStr(b, g.parent[:])
	g.rng.Read(root[:])
	b = append(b, `,"receiptsRoot":`...)
	b = appendHexStr(b, root[:])
	b = append(b, `,"sha3Uncles":"0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347","size":`...)
	b = appendQty(b, uint64(600+len(txs)*180))
	g.rng.Read(root[:])
	b = append(b, `,"stateRoot":`...)
	b = appendHexStr(b, root[:])
	b = append(b, `,"timestamp":`...)
	b = appendQty(b, g.time)
	b = append(b, `,"timestampMilliseconds":`...)
	b = appendQty(b, g.time*1000)
	b = append(b, `,"totalDifficulty":`...)
	b = appendQty(b, g.height)
	b = append(b, `,"transactions":[`...)
	for i := range txs {
		t := &txs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"blockHash":`...)
		b = appendHexStr(b, hash[:])
		b = append(b, `,"blockNumber":`...)
		b = appendQty(b, g.height)
		b = append(b, `,"from":`...)
		b = appendHexStr(b, t.from[:])
		b = append(b, `,"gas":`...)
		b = appendQty(b, t.gas)
		b = append(b, `,"gasPrice":`...)
		b = appendQty(b, price)
		b = append(b, `,"maxFeePerGas":`...)
		b = appendQty(b, 2*genBaseFee+tip)
		b = append(b, `,"maxPriorityFeePerGas":`...)
		b = appendQty(b, tip)
		b = append(b, `,"hash":`...)
		b = appendHexStr(b, t.hash[:])
		b = append(b, `,"input":`...)
		b = appendHexStr(b, t.input)
		b = append(b, `,"nonce":`...)
		b = appendQty(b, t.nonce)
		b = append(b, `,"to":`...)
		if t.to == nil {
			b = append(b, `null`...)
		} else {
			b = appendHexStr(b, t.to[:])
		}
		b = append(b, `,"transactionIndex":`...)
		b = appendQty(b, uint64(i))
		b = append(b, `,"value":`...)
		b = appendBigQty(b, t.value)
		b = append(b, `,"type":"0x2","accessList":[],"chainId":"0xa868","v":"0x1","r":`...)
		g.rng.Read(root[:])
		b = appendHexStr(b, root[:])
		g.rng.Read(root[:])
		b = append(b, `,"s":`...)
		b = appendHexStr(b, root[:])
		b = append(b, `,"yParity":"0x1"}`...)
	}
	b = append(b, `],"transactionsRoot":`...)
	g.rng.Read(root[:])
	b = appendHexStr(b, root[:])
	b = append(b, `,"uncles":[]},"receipts":[`...)
	var cumulative uint64
	logIndex := uint64(0)
	for i := range txs {
		t := &txs[i]
		cumulative += t.gasUsed
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"blockHash":`...)
		b = appendHexStr(b, hash[:])
		b = append(b, `,"blockNumber":`...)
		b = appendQty(b, g.height)
		b = append(b, `,"contractAddress":`...)
		if t.contract == nil {
			b = append(b, `null`...)
		} else {
			b = appendHexStr(b, t.contract[:])
		}
		b = append(b, `,"cumulativeGasUsed":`...)
		b = appendQty(b, cumulative)
		b = append(b, `,"effectiveGasPrice":`...)
		b = appendQty(b, price)
		b = append(b, `,"from":`...)
		b = appendHexStr(b, t.from[:])
		b = append(b, `,"gasUsed":`...)
		b = appendQty(b, t.gasUsed)
		b = append(b, `,"logs":[`...)
		var bloom types.Bloom
		for j, l := range t.logs {
			if j > 0 {
				b = append(b, ',')
			}
			bloom.Add(l.address[:])
			b = append(b, `{"address":`...)
			b = appendHexStr(b, l.address[:])
			b = append(b, `,"topics":[`...)
			for k, tp := range l.topics {
				bloom.Add(tp[:])
				if k > 0 {
					b = append(b, ',')
				}
				b = appendHexStr(b, tp[:])
			}
			b = append(b, `],"data":`...)
			b = appendHexStr(b, l.data)
			b = append(b, `,"blockNumber":`...)
			b = appendQty(b, g.height)
			b = append(b, `,"transactionHash":`...)
			b = appendHexStr(b, t.hash[:])
			b = append(b, `,"transactionIndex":`...)
			b = appendQty(b, uint64(i))
			b = append(b, `,"blockHash":`...)
			b = appendHexStr(b, hash[:])
			b = append(b, `,"logIndex":`...)
			b = appendQty(b, logIndex)
			b = append(b, `,"removed":false}`...)
			logIndex++
		}
		b = append(b, `],"logsBloom":`...)
		b = appendHexStr(b, bloom[:])
		b = append(b, `,"status":"0x1","to":`...)
		if t.to == nil {
			b = append(b, `null`...)
		} else {
			b = appendHexStr(b, t.to[:])
		}
		b = append(b, `,"transactionHash":`...)
		b = appendHexStr(b, t.hash[:])
		b = append(b, `,"transactionIndex":`...)
		b = appendQty(b, uint64(i))
		b = append(b, `,"type":"0x2"}`...)
	}
	b = append(b, ']')
	if g.traced {
		b = g.encodeTraces(b, txs)
	}
	return append(b, '}')
}

// encodeTraces appends ,"traces":[...]: the callTracer answer of the block.
func (g *Generator) encodeTraces(b []byte, txs []genTx) []byte {
	b = append(b, `,"traces":[`...)
	for i := range txs {
		t := &txs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"txHash":`...)
		b = appendHexStr(b, t.hash[:])
		b = append(b, `,"result":{"from":`...)
		b = appendHexStr(b, t.from[:])
		b = append(b, `,"gas":`...)
		b = appendQty(b, t.gas)
		b = append(b, `,"gasUsed":`...)
		b = appendQty(b, t.gasUsed)
		b = append(b, `,"to":`...)
		typ := "CALL"
		if t.to != nil {
			b = appendHexStr(b, t.to[:])
		} else {
			typ = "CREATE"
			b = appendHexStr(b, t.contract[:])
		}
		b = append(b, `,"input":`...)
		b = appendHexStr(b, t.input)
		if len(t.calls) > 0 {
			b = append(b, `,"calls":[`...)
			for j, f := range t.calls {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"from":`...)
				b = appendHexStr(b, f.from[:])
				b = append(b, `,"gas":`...)
				b = appendQty(b, f.gas)
				b = append(b, `,"gasUsed":`...)
				b = appendQty(b, f.gasUsed)
				b = append(b, `,"to":`...)
				b = appendHexStr(b, f.to[:])
				b = append(b, `,"input":"0x","value":`...)
				b = appendBigQty(b, f.value)
				if f.err != "" {
					b = append(b, `,"error":"`...)
					b = append(b, f.err...)
					b = append(b, '"')
				}
				b = append(b, `,"type":"`...)
				b = append(b, f.typ...)
				b = append(b, `"}`...)
			}
			b = append(b, ']')
		}
		b = append(b, `,"value":`...)
		b = appendBigQty(b, t.value)
		b = append(b, `,"type":"`...)
		b = append(b, typ...)
		b = append(b, `"}}`...)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

func appendHexStr(b, v []byte) []byte {
	b = append(b, '"', '0', 'x')
	for _, c := range v {
		b = append(b, hexDigits[c>>4], hexDigits[c&15])
	}
	return append(b, '"')
}

func appendQty(b []byte, v uint64) []byte {
	b = append(b, '"', '0', 'x')
	b = strconv.AppendUint(b, v, 16)
	return append(b, '"')
}

func appendBigQty(b []byte, v *big.Int) []byte {
	b = append(b, '"', '0', 'x')
	b = v.Append(b, 16)
	return append(b, '"')
}
