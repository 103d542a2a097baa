// Package icmtest builds Teleporter traffic between two indexed EVM chains
// (and one chain that is not indexed) as TeleporterMessenger v1 would emit
// it, for the ICM indexer and API tests. Every log is encoded with the
// contract's ABI by the icm encoders; message IDs are calculateMessageID.
package icmtest

import (
	"context"
	"fmt"
	"math/big"
	"sort"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/libevm/common"
	"github.com/ava-labs/libevm/crypto"

	"github.com/permafrost-dev/permafrost/internal/decode/icm"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Step is one block of one chain with its logs.
type Step struct {
	Chain icm.ChainInfo
	Block icm.BlockInfo
	Logs  []icm.Log
}

// Tx is what the scenario knows of a transaction.
type Tx struct {
	Hash    common.Hash
	From    common.Address
	GasUsed uint64
	Block   uint64
	Time    int64
}

// Scenario is the traffic:
//
//	M1 A→B  delivered and executed; two fee additions (100 → 150 → 200);
//	        its receipt comes back to A inside M3 (ReceiptReceived).
//	M2 A→B  pending (never received), no fee.
//	M3 B→A  delivered, carries the receipt of M1.
//	M4 Z→B  received from the chain Z, which is not indexed.
//	M5 A→B  delivered, execution fails, retried successfully later.
//	A also has a RelayerRewardsRedeemed and B a BlockchainIDInitialized.
type Scenario struct {
	Messenger common.Address
	A, B      icm.ChainInfo
	Z         ids.ID
	StepsA    []Step
	StepsB    []Step

	M1, M2, M3, M4, M5 common.Hash
	Msg                map[common.Hash]icm.TeleporterMessage

	FeeToken common.Address // an ERC-20 on A
	Sender   common.Address // app on A: sends M1, M2, M5, receives M3
	AppB     common.Address // app on B: receives M1, M2, M4, sends M3
	AppB2    common.Address // receives M5 (first call fails)
	SenderZ  common.Address // app on Z
	Relayer  common.Address // delivers everything
	Reward   common.Address // relayer reward address

	// Transactions by label: a1 (send M1) ... see New.
	Tx map[string]Tx
}

func h(label string) common.Hash { return crypto.Keccak256Hash([]byte(label)) }

func addr(label string) common.Address { return common.BytesToAddress(h(label).Bytes()) }

// New builds the scenario; the messenger is the canonical address.
func New() (*Scenario, error) {
	s := &Scenario{
		Messenger: common.HexToAddress(icm.DefaultMessengerAddress),
		A:         icm.ChainInfo{Key: "C", BlockchainID: ids.ID(h("chain A")), EVMChainID: "88888"},
		B:         icm.ChainInfo{Key: "99999", BlockchainID: ids.ID(h("chain B")), EVMChainID: "99999"},
		Z:         ids.ID(h("chain Z")),
		Msg:       map[common.Hash]icm.TeleporterMessage{},
		FeeToken:  addr("fee token"),
		Sender:    addr("sender on A"),
		AppB:      addr("app on B"),
		AppB2:     addr("second app on B"),
		SenderZ:   addr("sender on Z"),
		Relayer:   addr("relayer"),
		Reward:    addr("relayer reward"),
		Tx:        map[string]Tx{},
	}
	b := &builder{s: s}
	msg := func(nonce int64, from common.Address, dst ids.ID, to common.Address, payload string, receipts ...icm.TeleporterMessageReceipt) icm.TeleporterMessage {
		return icm.TeleporterMessage{
			MessageNonce: big.NewInt(nonce), OriginSenderAddress: from, DestinationBlockchainID: dst,
			DestinationAddress: to, RequiredGasLimit: big.NewInt(200_000 + nonce),
			AllowedRelayerAddresses: []common.Address{s.Relayer},
			Receipts:                receipts, Message: []byte(payload),
		}
	}
	fee := func(token common.Address, amount int64) icm.TeleporterFeeInfo {
		return icm.TeleporterFeeInfo{FeeTokenAddress: token, Amount: big.NewInt(amount)}
	}
	var err error
	id := func(src ids.ID, m icm.TeleporterMessage) common.Hash {
		v, e := icm.CalculateMessageID(s.Messenger, src, m.DestinationBlockchainID, m.MessageNonce)
		if e != nil && err == nil {
			err = e
		}
		s.Msg[v] = m
		return v
	}
	m1 := msg(1, s.Sender, s.B.BlockchainID, s.AppB, "hello B")
	m2 := msg(2, s.Sender, s.B.BlockchainID, s.AppB, "never delivered")
	m5 := msg(3, s.Sender, s.B.BlockchainID, s.AppB2, "needs more gas")
	m3 := msg(1, s.AppB, s.A.BlockchainID, s.Sender, "reply to A",
		icm.TeleporterMessageReceipt{ReceivedMessageNonce: big.NewInt(1), RelayerRewardAddress: s.Reward})
	m4 := msg(7, s.SenderZ, s.B.BlockchainID, s.AppB, "from Z")
	s.M1, s.M2, s.M3, s.M5 = id(s.A.BlockchainID, m1), id(s.A.BlockchainID, m2), id(s.B.BlockchainID, m3), id(s.A.BlockchainID, m5)
	s.M4 = id(s.Z, m4)
	if err != nil {
		return nil, err
	}
	m := s.Messenger
	// Chain A.
	b.block(&s.StepsA, s.A, 10, 1000,
		b.tx("a1", s.Sender, 120_000).log(icm.SendCrossChainMessageLog(m, s.A.BlockchainID, m1, fee(s.FeeToken, 100))))
	b.block(&s.StepsA, s.A, 11, 1010,
		b.tx("a2", s.Sender, 60_000).log(icm.AddFeeAmountLog(m, s.M1, fee(s.FeeToken, 150))))
	b.block(&s.StepsA, s.A, 12, 1020,
		b.tx("a3", s.Sender, 110_000).log(icm.SendCrossChainMessageLog(m, s.A.BlockchainID, m2, fee(common.Address{}, 0))),
		b.tx("a3b", s.Sender, 115_000).log(icm.SendCrossChainMessageLog(m, s.A.BlockchainID, m5, fee(s.FeeToken, 5))))
	b.block(&s.StepsA, s.A, 13, 1030,
		b.tx("a4", s.Sender, 61_000).log(icm.AddFeeAmountLog(m, s.M1, fee(s.FeeToken, 200))))
	// The contract marks receipts before emitting ReceiveCrossChainMessage.
	b.block(&s.StepsA, s.A, 14, 1100,
		b.tx("a5", s.Relayer, 300_000).
			log(icm.ReceiptReceivedLog(m, s.M1, s.B.BlockchainID, s.Reward, fee(s.FeeToken, 200))).
			log(icm.ReceiveCrossChainMessageLog(m, s.B.BlockchainID, s.Relayer, s.Reward, m3)).
			log(icm.MessageExecutedLog(m, s.M3, s.B.BlockchainID)))
	b.block(&s.StepsA, s.A, 15, 1200,
		b.tx("a6", s.Reward, 50_000).log(icm.RelayerRewardsRedeemedLog(m, s.Reward, s.FeeToken, big.NewInt(200))))
	// Chain B.
	b.block(&s.StepsB, s.B, 20, 1005,
		b.tx("b0", s.Relayer, 30_000).log(blockchainIDInitialized(m, s.B.BlockchainID)),
		b.tx("b1", s.Relayer, 250_000).
			log(icm.ReceiveCrossChainMessageLog(m, s.A.BlockchainID, s.Relayer, s.Reward, m1)).
			log(icm.MessageExecutedLog(m, s.M1, s.A.BlockchainID)))
	b.block(&s.StepsB, s.B, 21, 1025,
		b.tx("b2", s.Relayer, 260_000).
			log(icm.ReceiveCrossChainMessageLog(m, s.A.BlockchainID, s.Relayer, s.Reward, m5)).
			log(icm.MessageExecutionFailedLog(m, s.M5, s.A.BlockchainID, m5)))
	b.block(&s.StepsB, s.B, 22, 1040,
		b.tx("b3", s.Relayer, 240_000).
			log(icm.ReceiveCrossChainMessageLog(m, s.Z, s.Relayer, s.Reward, m4)).
			log(icm.MessageExecutedLog(m, s.M4, s.Z)))
	b.block(&s.StepsB, s.B, 23, 1050,
		b.tx("b4", s.AppB, 130_000).log(icm.SendCrossChainMessageLog(m, s.B.BlockchainID, m3, fee(common.Address{}, 0))))
	b.block(&s.StepsB, s.B, 24, 1060,
		b.tx("b5", s.AppB2, 400_000).log(icm.MessageExecutedLog(m, s.M5, s.A.BlockchainID)))
	if b.err != nil {
		return nil, b.err
	}
	return s, nil
}

// blockchainIDInitialized encodes the one event the icm encoders do not offer.
func blockchainIDInitialized(m common.Address, id ids.ID) (icm.Log, error) {
	a, err := icm.ABI()
	if err != nil {
		return icm.Log{}, err
	}
	return icm.Log{Address: m, Topics: []common.Hash{a.Events[icm.EventBlockchainIDInitialized].ID, common.Hash(id)}, Data: []byte{}}, nil
}

type builder struct {
	s   *Scenario
	err error
}

type txLogs struct {
	b     *builder
	label string
	tx    Tx
	logs  []icm.Log
}

func (b *builder) tx(label string, from common.Address, gas uint64) *txLogs {
	return &txLogs{b: b, label: label, tx: Tx{Hash: h("tx " + label), From: from, GasUsed: gas}}
}

func (t *txLogs) log(l icm.Log, err error) *txLogs {
	if err != nil && t.b.err == nil {
		t.b.err = err
	}
	t.logs = append(t.logs, l)
	return t
}

func (b *builder) block(steps *[]Step, c icm.ChainInfo, number uint64, time int64, txs ...*txLogs) {
	st := Step{Chain: c, Block: icm.BlockInfo{Number: number, Hash: h(fmt.Sprintf("block %s %d", c.Key, number)), Time: time}}
	li := uint64(0)
	for i, t := range txs {
		for _, l := range t.logs {
			l.LogIndex, l.TxHash, l.TxIndex, l.TxFrom, l.TxGasUsed = li, t.tx.Hash, uint64(i), t.tx.From, t.tx.GasUsed
			st.Logs = append(st.Logs, l)
			li++
		}
		t.tx.Block, t.tx.Time = number, time
		if _, dup := b.s.Tx[t.label]; dup && b.err == nil {
			b.err = fmt.Errorf("duplicate tx %s", t.label)
		}
		b.s.Tx[t.label] = t.tx
	}
	*steps = append(*steps, st)
}

// SourceFirst is A's blocks then B's.
func (s *Scenario) SourceFirst() []Step { return append(append([]Step(nil), s.StepsA...), s.StepsB...) }

// DestinationFirst is B's blocks then A's.
func (s *Scenario) DestinationFirst() []Step {
	return append(append([]Step(nil), s.StepsB...), s.StepsA...)
}

// ByTime interleaves both chains by block time, as live indexing would.
func (s *Scenario) ByTime() []Step {
	out := s.SourceFirst()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Block.Time < out[j].Block.Time })
	return out
}

// RegisterChain records c in the chains table, as the lead's ingest does for
// every indexed chain.
func RegisterChain(ctx context.Context, db *store.DB, c icm.ChainInfo) error {
	_, err := db.ExecContext(ctx, `INSERT INTO chains (chain_key, kind, blockchain_id, evm_chain_id, network_id, name)
		VALUES ($1, 'EVM', $2, $3, 88888, $4)`, c.Key, c.BlockchainID.String(), c.EVMChainID, "chain "+c.Key)
	if err != nil {
		return fmt.Errorf("register chain %s: %w", c.Key, err)
	}
	return nil
}

// RegisterFeeToken records the fee token's metadata as the EVM indexer would.
func (s *Scenario) RegisterFeeToken(ctx context.Context, db *store.DB) error {
	_, err := db.ExecContext(ctx, `INSERT INTO evm_contracts (chain_key, address, creation_kind, tx_hash, block_number,
		block_time, deployer_address, erc_type, name, symbol, decimals, metadata_status)
		VALUES ($1, $2, 'tx', $3, 1, 900, $4, 'ERC-20', 'Fee Token', 'FEE', 6, 'ok')`,
		s.A.Key, lowerHex(s.FeeToken), h("token deploy").Hex(), lowerHex(s.Sender))
	if err != nil {
		return fmt.Errorf("register fee token: %w", err)
	}
	return nil
}

func lowerHex(a common.Address) string { return "0x" + common.Bytes2Hex(a[:]) }

// Apply applies steps in order, one store transaction per block.
func Apply(ctx context.Context, db *store.DB, ix *icm.Indexer, steps []Step) error {
	for _, st := range steps {
		tx, err := db.Begin(ctx)
		if err != nil {
			return err
		}
		if err := ix.ApplyLogs(ctx, tx, st.Chain, st.Block, st.Logs); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}
