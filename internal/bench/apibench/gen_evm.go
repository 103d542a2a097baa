package apibench

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"math/rand"
	"sort"
	"strconv"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/libevm/common"
	"github.com/ava-labs/libevm/crypto"
	"github.com/klauspost/compress/s2"

	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/decode/evm"
	"github.com/permafrost-dev/permafrost/internal/decode/icm"
	"github.com/permafrost-dev/permafrost/internal/ingest"
)

// The EVM chain is internal/decode/evm's Generator (native, ERC-20 and
// ERC-721 traffic between Zipf-distributed accounts) applied by the real
// indexer, with two kinds of logs added to the last receipt of some blocks,
// so that every EVM and ICM route has data: ERC-1155 TransferSingle logs
// (mints and transfers that never overdraw) and TeleporterMessenger logs
// (messages sent from the C-chain to remote chains, and received from them),
// which reach the ICM indexer through the EVM indexer's LogSink as in serve.

// topicTransferSingle is TransferSingle(address,address,address,uint256,uint256).
var topicTransferSingle = crypto.Keccak256Hash([]byte("TransferSingle(address,address,address,uint256,uint256)"))

const (
	erc1155Count   = 4
	erc1155IDs     = 300
	icmApps        = 60
	icmRemoteCount = 3
)

// injector adds ERC-1155 and Teleporter logs to generated blocks.
type injector struct {
	rng      *rand.Rand
	accounts []common.Address
	pick     *rand.Zipf // account index, hot first
	pickID   *rand.Zipf
	erc1155  []common.Address
	balances map[[3]int]uint64 // (contract, id, account) -> balance

	messenger common.Address
	self      ids.ID // the C-chain's blockchain id
	remotes   []ids.ID
	apps      []common.Address
	pickApp   *rand.Zipf
	nonceOut  map[ids.ID]int64
	nonceIn   map[ids.ID]int64
	sent      []common.Hash // sent message ids (for fee additions)
	feeToken  common.Address
	relayer   common.Address
	messages  int64
	ids       []string // a sample of message ids
}

func newInjector(seed int64, alloc map[common.Address]*big.Int, self ids.ID) *injector {
	rng := rand.New(rand.NewSource(seed + 7))
	accts := make([]common.Address, 0, len(alloc))
	for a := range alloc {
		accts = append(accts, a)
	}
	sort.Slice(accts, func(i, j int) bool { return bytes.Compare(accts[i][:], accts[j][:]) < 0 })
	in := &injector{rng: rng, accounts: accts, balances: map[[3]int]uint64{},
		messenger: common.HexToAddress(icm.DefaultMessengerAddress), self: self,
		nonceOut: map[ids.ID]int64{}, nonceIn: map[ids.ID]int64{}}
	in.pick = rand.NewZipf(rng, 1.2, 1, uint64(len(accts)-1))
	in.pickID = rand.NewZipf(rng, 1.1, 1, erc1155IDs-1)
	for i := 0; i < erc1155Count; i++ {
		in.erc1155 = append(in.erc1155, common.BytesToAddress(crypto.Keccak256([]byte("erc1155-"+strconv.Itoa(i)))))
	}
	for i := 0; i < icmRemoteCount; i++ {
		in.remotes = append(in.remotes, ids.ID(crypto.Keccak256Hash([]byte("remote chain "+strconv.Itoa(i)))))
	}
	for i := 0; i < icmApps; i++ {
		in.apps = append(in.apps, common.BytesToAddress(crypto.Keccak256([]byte("icm app "+strconv.Itoa(i)))))
	}
	in.pickApp = rand.NewZipf(rng, 1.3, 1, icmApps-1)
	in.relayer = common.BytesToAddress(crypto.Keccak256([]byte("relayer")))
	return in
}

// extraLog is a log to append.
type extraLog struct {
	address common.Address
	topics  []common.Hash
	data    []byte
}

// logsFor returns the logs to add to block n (none for most blocks).
func (in *injector) logsFor() ([]extraLog, error) {
	var out []extraLog
	if in.rng.Intn(10) < 3 {
		out = append(out, in.erc1155Log())
	}
	r := in.rng.Intn(100)
	switch {
	case r < 20:
		l, err := in.send()
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	case r < 28:
		ls, err := in.receive()
		if err != nil {
			return nil, err
		}
		out = append(out, ls...)
	case r < 30 && len(in.sent) > 0:
		id := in.sent[len(in.sent)-1-in.rng.Intn(min(len(in.sent), 50))]
		l, err := icm.AddFeeAmountLog(in.messenger, id, icm.TeleporterFeeInfo{FeeTokenAddress: in.feeToken,
			Amount: big.NewInt(in.rng.Int63n(1e12) + 1e12)})
		if err != nil {
			return nil, err
		}
		out = append(out, extraLog{l.Address, l.Topics, l.Data})
	}
	return out, nil
}

func word(v uint64) []byte { return new(big.Int).SetUint64(v).FillBytes(make([]byte, 32)) }

// erc1155Log mints a token id to an account that has none, or moves part of
// a holding to another account.
func (in *injector) erc1155Log() extraLog {
	c := in.rng.Intn(erc1155Count)
	id := int(in.pickID.Uint64()) + 1
	a := int(in.pick.Uint64())
	b := int(in.pick.Uint64())
	key := [3]int{c, id, a}
	var from, to common.Address
	var amount uint64
	if bal := in.balances[key]; bal == 0 {
		amount = uint64(in.rng.Intn(100) + 1)
		in.balances[key] += amount
		to = in.accounts[a]
	} else {
		amount = uint64(in.rng.Int63n(int64(bal))) + 1
		in.balances[key] -= amount
		in.balances[[3]int{c, id, b}] += amount
		from, to = in.accounts[a], in.accounts[b]
	}
	op := in.accounts[a]
	return extraLog{address: in.erc1155[c],
		topics: []common.Hash{topicTransferSingle, common.BytesToHash(op[:]), common.BytesToHash(from[:]), common.BytesToHash(to[:])},
		data:   append(word(uint64(id)), word(amount)...)}
}

func (in *injector) message(nonce int64, from common.Address, dst ids.ID, to common.Address) icm.TeleporterMessage {
	payload := make([]byte, 64+in.rng.Intn(192))
	in.rng.Read(payload)
	return icm.TeleporterMessage{MessageNonce: big.NewInt(nonce), OriginSenderAddress: from, DestinationBlockchainID: dst,
		DestinationAddress: to, RequiredGasLimit: big.NewInt(100_000 + int64(in.rng.Intn(400_000))),
		AllowedRelayerAddresses: []common.Address{in.relayer}, Message: payload}
}

// send is a message from the C-chain to a remote chain (pending here: the
// remote chain is not indexed).
func (in *injector) send() (extraLog, error) {
	dst := in.remotes[in.rng.Intn(len(in.remotes))]
	in.nonceOut[dst]++
	m := in.message(in.nonceOut[dst], in.apps[in.pickApp.Uint64()], dst, in.apps[in.rng.Intn(icmApps)])
	l, err := icm.SendCrossChainMessageLog(in.messenger, in.self, m,
		icm.TeleporterFeeInfo{FeeTokenAddress: in.feeToken, Amount: big.NewInt(in.rng.Int63n(1e12))})
	if err != nil {
		return extraLog{}, err
	}
	id := l.Topics[1]
	in.sent = append(in.sent, id)
	if len(in.sent) > 1000 {
		in.sent = append(in.sent[:0], in.sent[500:]...)
	}
	in.note(id)
	return extraLog{l.Address, l.Topics, l.Data}, nil
}

// receive delivers (and executes) a message from a remote chain.
func (in *injector) receive() ([]extraLog, error) {
	src := in.remotes[in.rng.Intn(len(in.remotes))]
	in.nonceIn[src]++
	m := in.message(in.nonceIn[src], in.apps[in.rng.Intn(icmApps)], in.self, in.apps[in.pickApp.Uint64()])
	l1, err := icm.ReceiveCrossChainMessageLog(in.messenger, src, in.relayer, in.relayer, m)
	if err != nil {
		return nil, err
	}
	id := l1.Topics[1]
	l2, err := icm.MessageExecutedLog(in.messenger, id, src)
	if err != nil {
		return nil, err
	}
	in.note(id)
	return []extraLog{{l1.Address, l1.Topics, l1.Data}, {l2.Address, l2.Topics, l2.Data}}, nil
}

func (in *injector) note(id common.Hash) {
	in.messages++
	if len(in.ids) < 200 || in.rng.Intn(100) == 0 {
		if len(in.ids) >= 400 {
			in.ids[in.rng.Intn(len(in.ids))] = id.Hex()
			return
		}
		in.ids = append(in.ids, id.Hex())
	}
}

// appendLogs adds logs to the last receipt of a block body in the
// Generator's JSON layout ({"block":...,"receipts":[...]}; each receipt's
// "logs" array is followed by its "logsBloom"), numbering them after the
// block's existing logs.
func appendLogs(body []byte, logs []extraLog) ([]byte, error) {
	if len(logs) == 0 {
		return body, nil
	}
	start := bytes.LastIndex(body, []byte(`"logs":[`))
	if start < 0 {
		return nil, fmt.Errorf("append logs: block has no receipt")
	}
	end := bytes.Index(body[start:], []byte(`],"logsBloom":`))
	if end < 0 {
		return nil, fmt.Errorf("append logs: receipt logs not followed by logsBloom")
	}
	end += start
	// The receipt's own fields the log repeats.
	rcpt := body[bytes.LastIndex(body[:start], []byte(`{"blockHash":`)):]
	field := func(name string) []byte {
		i := bytes.Index(rcpt, []byte(`"`+name+`":`))
		if i < 0 {
			return []byte(`null`)
		}
		v := rcpt[i+len(name)+3:]
		return v[:bytes.IndexAny(v, ",}")]
	}
	blockHash, blockNumber, txHash, txIndex := field("blockHash"), field("blockNumber"), field("transactionHash"), field("transactionIndex")
	next := bytes.Count(body, []byte(`"logIndex":`))
	var b bytes.Buffer
	b.Grow(len(body) + len(logs)*600)
	b.Write(body[:end])
	for i, l := range logs {
		if end > start+len(`"logs":[`) || i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"address":"`)
		b.WriteString(l.address.Hex())
		b.WriteString(`","topics":[`)
		for k, t := range l.topics {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + t.Hex() + `"`)
		}
		b.WriteString(`],"data":"0x`)
		b.WriteString(fmt.Sprintf("%x", l.data))
		b.WriteString(`","blockNumber":`)
		b.Write(blockNumber)
		b.WriteString(`,"transactionHash":`)
		b.Write(txHash)
		b.WriteString(`,"transactionIndex":`)
		b.Write(txIndex)
		b.WriteString(`,"blockHash":`)
		b.Write(blockHash)
		b.WriteString(`,"logIndex":"0x` + strconv.FormatInt(int64(next+i), 16) + `","removed":false}`)
	}
	b.Write(body[end:])
	return b.Bytes(), nil
}

// firstContracts returns the contractAddress values of a block's receipts
// (block 1 deploys the Generator's tokens: 20 ERC-20s, then 5 ERC-721s).
func firstContracts(body []byte) []common.Address {
	var out []common.Address
	key := []byte(`"contractAddress":"`)
	for {
		i := bytes.Index(body, key)
		if i < 0 {
			return out
		}
		body = body[i+len(key):]
		out = append(out, common.HexToAddress(string(body[:42])))
	}
}

// generateEVM indexes the C-chain.
func (g *generator) generateEVM(ctx context.Context) error {
	// With call traces: internal transactions (a wrapper's payments) and
	// their value in native balances, as a node with debug-tracer gives.
	gen := evm.NewTracedGenerator(g.cfg.Seed, g.cfg.TxPerBlock)
	alloc := gen.Alloc()
	g.m.EVMWrapper = lowerHex(gen.Wrapper())
	cID := g.chainIDs["C"]
	icmIx, err := icm.NewIndexer(icm.Config{Logger: g.quiet})
	if err != nil {
		return err
	}
	ix, err := evm.NewIndexer(evm.Config{ChainKey: "C", GenesisAlloc: alloc, Logger: g.quiet,
		Logs: chains.ICMSink{Indexer: icmIx, Chain: icm.ChainInfo{Key: "C", BlockchainID: cID, EVMChainID: evmChainID}}})
	if err != nil {
		return err
	}
	in := newInjector(g.cfg.Seed, alloc, cID)
	total := g.cfg.EVMBlocks + 1
	start := time.Now()
	var last ingest.RawBlock
	var raw [][]any
	for h := 0; h < total; {
		tx, err := g.db.Begin(ctx)
		if err != nil {
			return err
		}
		for end := min(h+g.batch.evm, total); h < end; h++ {
			rb := gen.Next()
			if rb.Height == 1 {
				if cs := firstContracts(rb.Bytes); len(cs) > 0 {
					in.feeToken = cs[0]
				}
			}
			if rb.Height >= 2 {
				logs, err := in.logsFor()
				if err != nil {
					tx.Rollback()
					return err
				}
				if rb.Bytes, err = appendLogs(rb.Bytes, logs); err != nil {
					tx.Rollback()
					return fmt.Errorf("block %d: %w", rb.Height, err)
				}
			}
			if err := ix.Apply(ctx, tx, rb); err != nil {
				tx.Rollback()
				return err
			}
			// The raw block as the pipeline stores it (S2 when it pays):
			// a transaction's detail reads its input from it.
			body, enc := rb.Bytes, ingest.RawPlain
			if z := s2.Encode(nil, rb.Bytes); len(rb.Bytes) >= 2<<10 && len(z) < len(rb.Bytes) {
				body, enc = z, ingest.RawS2
			}
			raw = append(raw, []any{"C", int64(rb.Height), rb.Hash, rb.Timestamp, body, int64(enc)})
			last = rb
		}
		if err := tx.CopyFrom(ctx, "raw_blocks", []string{"chain_key", "height", "hash", "block_time", "body", "encoding"}, raw); err != nil {
			tx.Rollback()
			return fmt.Errorf("raw blocks: %w", err)
		}
		raw = raw[:0]
		if err := ingest.Flush(ctx, ix, tx); err != nil {
			tx.Rollback()
			return err
		}
		if err := putCheckpoint(ctx, tx, "C", int64(last.Height), last.Hash, last.Timestamp); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("commit evm batch: %w", err)
		}
		if h%10_000 < g.batch.evm {
			g.log.Info("evm blocks", "height", h, "of", total, "elapsed", time.Since(start).Round(time.Second))
		}
	}
	g.m.ICMMessages = in.messages
	g.m.ICMMessageIDs = in.ids
	g.m.ICMRemoteChain = in.remotes[0].String()
	for _, a := range in.apps[:10] {
		g.m.ICMAddresses = append(g.m.ICMAddresses, a.Hex())
	}
	g.m.ICMAddresses = append(g.m.ICMAddresses, in.apps[icmApps-1].Hex(), in.apps[icmApps-2].Hex())
	for _, c := range in.erc1155 {
		g.m.ERC1155 = append(g.m.ERC1155, lowerHex(c))
	}
	return nil
}

func lowerHex(a common.Address) string { return "0x" + fmt.Sprintf("%x", a[:]) }
