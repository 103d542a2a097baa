package icm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/libevm/accounts/abi"
	"github.com/ava-labs/libevm/common"
	"github.com/ava-labs/libevm/crypto"

	"github.com/permafrost-dev/permafrost/internal/decode/icm"
	"github.com/permafrost-dev/permafrost/internal/decode/icm/icmtest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// The embedded ABI must give the event IDs of the Solidity declarations of
// ITeleporterMessenger v1, written out here by hand as canonical signatures,
// with the same indexed arguments.
func TestABIMatchesSolidity(t *testing.T) {
	const msg = "(uint256,address,bytes32,address,uint256,address[],(uint256,address)[],bytes)"
	const fee = "(address,uint256)"
	cases := []struct {
		name, sig string
		indexed   []string
	}{
		{icm.EventBlockchainIDInitialized, "BlockchainIDInitialized(bytes32)", []string{"blockchainID"}},
		{icm.EventSendCrossChainMessage, "SendCrossChainMessage(bytes32,bytes32," + msg + "," + fee + ")", []string{"messageID", "destinationBlockchainID"}},
		{icm.EventAddFeeAmount, "AddFeeAmount(bytes32," + fee + ")", []string{"messageID"}},
		{icm.EventMessageExecutionFailed, "MessageExecutionFailed(bytes32,bytes32," + msg + ")", []string{"messageID", "sourceBlockchainID"}},
		{icm.EventMessageExecuted, "MessageExecuted(bytes32,bytes32)", []string{"messageID", "sourceBlockchainID"}},
		{icm.EventReceiveCrossChainMessage, "ReceiveCrossChainMessage(bytes32,bytes32,address,address," + msg + ")", []string{"messageID", "sourceBlockchainID", "deliverer"}},
		{icm.EventReceiptReceived, "ReceiptReceived(bytes32,bytes32,address," + fee + ")", []string{"messageID", "destinationBlockchainID", "relayerRewardAddress"}},
		{icm.EventRelayerRewardsRedeemed, "RelayerRewardsRedeemed(address,address,uint256)", []string{"redeemer", "asset"}},
	}
	a, err := icm.ABI()
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Events) != len(cases) {
		t.Errorf("ABI has %d events, want %d", len(a.Events), len(cases))
	}
	for _, c := range cases {
		ev, ok := a.Events[c.name]
		if !ok {
			t.Errorf("%s missing", c.name)
			continue
		}
		if want := crypto.Keccak256Hash([]byte(c.sig)); ev.ID != want {
			t.Errorf("%s: id %s, want keccak(%s) = %s", c.name, ev.ID, c.sig, want)
		}
		var got []string
		for _, in := range ev.Inputs {
			if in.Indexed {
				got = append(got, in.Name)
			}
		}
		if !reflect.DeepEqual(got, c.indexed) {
			t.Errorf("%s: indexed %v, want %v", c.name, got, c.indexed)
		}
	}
}

// calculateMessageID is keccak256(abi.encode(address(this), source, destination, nonce)):
// the hand-rolled encoding must agree with the abi package's.
func TestCalculateMessageID(t *testing.T) {
	ty := func(s string) abi.Type {
		v, err := abi.NewType(s, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	args := abi.Arguments{{Type: ty("address")}, {Type: ty("bytes32")}, {Type: ty("bytes32")}, {Type: ty("uint256")}}
	messenger := common.HexToAddress(icm.DefaultMessengerAddress)
	src, dst := ids.ID{1, 2, 3}, ids.ID{0xff, 9}
	for _, n := range []*big.Int{big.NewInt(1), big.NewInt(42), new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))} {
		packed, err := args.Pack(messenger, [32]byte(src), [32]byte(dst), n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := icm.CalculateMessageID(messenger, src, dst, n)
		if err != nil || got != crypto.Keccak256Hash(packed) {
			t.Errorf("nonce %s: %s %v, want %s", n, got, err, crypto.Keccak256Hash(packed))
		}
	}
	// The messenger address is part of the ID.
	a, _ := icm.CalculateMessageID(messenger, src, dst, big.NewInt(1))
	b, _ := icm.CalculateMessageID(common.Address{1}, src, dst, big.NewInt(1))
	if a == b {
		t.Error("message ID must depend on the messenger address")
	}
	for _, bad := range []*big.Int{nil, big.NewInt(-1), new(big.Int).Lsh(big.NewInt(1), 256)} {
		if _, err := icm.CalculateMessageID(messenger, src, dst, bad); err == nil {
			t.Errorf("nonce %v: want error", bad)
		}
	}
}

func word(data []byte, i int) []byte { return data[32*i : 32*i+32] }

// A SendCrossChainMessage log round-trips, and its data is laid out as
// abi.encode lays out (TeleporterMessage, TeleporterFeeInfo): an offset to the
// dynamic message tuple, then the static fee tuple inline.
func TestSendLogLayoutAndRoundTrip(t *testing.T) {
	messenger := common.HexToAddress(icm.DefaultMessengerAddress)
	src, dst := ids.ID{7}, ids.ID{8}
	m := icm.TeleporterMessage{
		MessageNonce: big.NewInt(5), OriginSenderAddress: common.Address{0xaa}, DestinationBlockchainID: dst,
		DestinationAddress: common.Address{0xbb}, RequiredGasLimit: big.NewInt(100000),
		AllowedRelayerAddresses: []common.Address{{0xcc}, {0xdd}},
		Receipts:                []icm.TeleporterMessageReceipt{{ReceivedMessageNonce: big.NewInt(3), RelayerRewardAddress: common.Address{0xee}}},
		Message:                 []byte("payload"),
	}
	fee := icm.TeleporterFeeInfo{FeeTokenAddress: common.Address{0x11}, Amount: big.NewInt(1234)}
	l, err := icm.SendCrossChainMessageLog(messenger, src, m, fee)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := icm.CalculateMessageID(messenger, src, dst, big.NewInt(5))
	if len(l.Topics) != 3 || l.Topics[1] != id || l.Topics[2] != common.Hash(dst) || l.Address != messenger {
		t.Fatalf("topics %v", l.Topics)
	}
	u := func(i int) uint64 { return new(big.Int).SetBytes(word(l.Data, i)).Uint64() }
	if u(0) != 0x60 || !bytes.Equal(word(l.Data, 1)[12:], fee.FeeTokenAddress[:]) || u(2) != 1234 {
		t.Fatalf("head: %x", l.Data[:96])
	}
	// Message tuple head at 0x60: 5 static fields then 3 offsets (relative to the tuple).
	if u(3) != 5 || !bytes.Equal(word(l.Data, 4)[12:], m.OriginSenderAddress[:]) || !bytes.Equal(word(l.Data, 5), dst[:]) ||
		u(7) != 100000 || u(8) != 8*32 {
		t.Fatalf("message head: %x", l.Data[96:96+8*32])
	}
	ev, err := icm.DecodeEvent(l.Topics, l.Data)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Name != icm.EventSendCrossChainMessage || ev.MessageID != id || ev.OtherChainID != dst ||
		!reflect.DeepEqual(*ev.Message, m) || !reflect.DeepEqual(*ev.Fee, fee) {
		t.Fatalf("decoded %+v %+v %+v", ev, ev.Message, ev.Fee)
	}
}

func TestDecodeHostile(t *testing.T) {
	s, err := icmtest.New()
	if err != nil {
		t.Fatal(err)
	}
	send := s.StepsA[0].Logs[0]
	recv := s.StepsB[0].Logs[1]
	huge := append([]byte(nil), send.Data...)
	copy(huge[0:32], common.LeftPadBytes([]byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 32)) // offset far out
	cases := map[string]struct {
		topics []common.Hash
		data   []byte
		notTP  bool
	}{
		"no topics":           {nil, send.Data, true},
		"unknown event":       {[]common.Hash{{1}, {2}}, send.Data, true},
		"too few topics":      {send.Topics[:2], send.Data, false},
		"too many topics":     {append(append([]common.Hash(nil), send.Topics...), common.Hash{}), send.Data, false},
		"truncated data":      {send.Topics, send.Data[:100], false},
		"empty data":          {send.Topics, nil, false},
		"offset out of range": {send.Topics, huge, false},
		"receive, short":      {recv.Topics, recv.Data[:31], false},
	}
	for name, c := range cases {
		ev, err := icm.DecodeEvent(c.topics, c.data)
		if err == nil || errors.Is(err, icm.ErrNotTeleporter) != c.notTP {
			t.Errorf("%s: %+v %v", name, ev, err)
		}
	}
}

// snapshot lists every message with every field.
func snapshot(t *testing.T, db *store.DB) string {
	t.Helper()
	recs, next, err := icm.List(context.Background(), db, icm.Query{Limit: 100})
	if err != nil || next != nil {
		t.Fatalf("list: %v %v", err, next)
	}
	b, _ := json.MarshalIndent(recs, "", " ")
	return string(b)
}

func clear(t *testing.T, db *store.DB, ix *icm.Indexer) {
	for _, tb := range ix.DerivedTables() {
		if _, err := db.ExecContext(context.Background(), "DELETE FROM "+tb); err != nil {
			t.Fatal(err)
		}
	}
}

func str(s string) *string { return &s }
func num(n int) *int       { return &n }

// expected builds the final record of every message of the scenario.
func expected(s *icmtest.Scenario) map[common.Hash]icm.Record {
	tx := func(l string) common.Hash { return s.Tx[l].Hash }
	src := func(c icm.ChainInfo, l string) *icm.SourceTx {
		x := s.Tx[l]
		return &icm.SourceTx{ChainKey: c.Key, BlockNumber: int64(x.Block), TxHash: x.Hash, TxFrom: x.From, Time: x.Time, GasUsed: int64(x.GasUsed)}
	}
	dst := func(c icm.ChainInfo, l string) *icm.DestinationTx {
		x := s.Tx[l]
		return &icm.DestinationTx{ChainKey: c.Key, BlockNumber: int64(x.Block), TxHash: x.Hash, Time: x.Time, GasUsed: int64(x.GasUsed),
			Deliverer: s.Relayer, RewardRedeemer: s.Reward}
	}
	base := func(id common.Hash, srcID, dstID ids.ID, srcEVM, dstEVM string) icm.Record {
		m := s.Msg[id]
		r := icm.Record{MessageID: id, Contract: s.Messenger, SourceBlockchainID: srcID, DestinationBlockchainID: dstID,
			SourceEVMChainID: srcEVM, DestinationEVMChainID: dstEVM, SourceChainIndexed: srcEVM != "",
			Nonce: m.MessageNonce.String(), From: m.OriginSenderAddress, To: m.DestinationAddress,
			RequiredGasLimit: m.RequiredGasLimit.String(), AllowedRelayers: m.AllowedRelayerAddresses,
			Receipts: []icm.Receipt{}, Data: m.Message}
		for _, rc := range m.Receipts {
			r.Receipts = append(r.Receipts, icm.Receipt{ReceivedMessageNonce: rc.ReceivedMessageNonce.String(), RelayerRewardAddress: rc.RelayerRewardAddress})
		}
		return r
	}
	tokenFee := func(amount string, adds int) *icm.Fee {
		return &icm.Fee{Token: s.FeeToken, Amount: amount, Additions: adds, Name: str("Fee Token"), Symbol: str("FEE"), Decimals: num(6)}
	}
	A, B := s.A, s.B
	out := map[common.Hash]icm.Record{}

	r := base(s.M1, A.BlockchainID, B.BlockchainID, A.EVMChainID, B.EVMChainID)
	r.Source, r.Destination, r.Fee = src(A, "a1"), dst(B, "b1"), tokenFee("200", 2)
	r.ReceiptDelivered, r.ReceiptTxHash, r.ReceiptTime, r.ReceiptRelayer = true, tx("a5"), 1100, s.Reward
	r.Executed, r.ExecutedTxHash, r.ExecutedTime, r.SortTime = true, tx("b1"), 1005, 1000
	out[s.M1] = r

	r = base(s.M2, A.BlockchainID, B.BlockchainID, A.EVMChainID, B.EVMChainID)
	r.Source, r.Fee, r.SortTime = src(A, "a3"), &icm.Fee{Amount: "0"}, 1020
	out[s.M2] = r

	r = base(s.M3, B.BlockchainID, A.BlockchainID, B.EVMChainID, A.EVMChainID)
	r.Source, r.Destination, r.Fee = src(B, "b4"), dst(A, "a5"), &icm.Fee{Amount: "0"}
	r.Executed, r.ExecutedTxHash, r.ExecutedTime, r.SortTime = true, tx("a5"), 1100, 1050
	out[s.M3] = r

	r = base(s.M4, s.Z, B.BlockchainID, "", B.EVMChainID)
	r.Destination = dst(B, "b3")
	r.Executed, r.ExecutedTxHash, r.ExecutedTime, r.SortTime = true, tx("b3"), 1040, 1040
	out[s.M4] = r

	r = base(s.M5, A.BlockchainID, B.BlockchainID, A.EVMChainID, B.EVMChainID)
	r.Source, r.Destination, r.Fee = src(A, "a3b"), dst(B, "b2"), tokenFee("5", 0)
	r.Executed, r.ExecutedTxHash, r.ExecutedTime = true, tx("b5"), 1060
	r.ExecutionFailures, r.FailedTxHash, r.SortTime = 1, tx("b2"), 1020
	out[s.M5] = r
	return out
}

func checkRecord(t *testing.T, db *store.DB, want icm.Record, status string) {
	t.Helper()
	got, err := icm.Get(context.Background(), db, want.MessageID)
	if err != nil {
		t.Fatalf("get %s: %v", want.MessageID, err)
	}
	if !reflect.DeepEqual(*got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("message %s:\ngot  %s\nwant %s", want.MessageID, g, w)
	}
	if got.Status() != status {
		t.Errorf("message %s: status %s, want %s", want.MessageID, got.Status(), status)
	}
}

func checkFinal(t *testing.T, db *store.DB, s *icmtest.Scenario) {
	t.Helper()
	exp := expected(s)
	status := map[common.Hash]string{s.M1: icm.StatusDelivered, s.M2: icm.StatusPending, s.M3: icm.StatusDelivered,
		s.M4: icm.StatusDeliveredSourceNotIndexed, s.M5: icm.StatusDelivered}
	for id, r := range exp {
		checkRecord(t, db, r, status[id])
	}
	var n int
	var amount, redeemer string
	if err := db.QueryRowContext(context.Background(), `SELECT COUNT(*), MAX(amount), MAX(redeemer) FROM icm_reward_redemptions`).Scan(&n, &amount, &redeemer); err != nil ||
		n != 1 || amount != "200" || redeemer != strings.ToLower(s.Reward.Hex()) {
		t.Errorf("redemptions: %d %s %s %v", n, amount, redeemer, err)
	}
}

func newIndexer(t *testing.T) *icm.Indexer {
	ix, err := icm.NewIndexer(icm.Config{Logger: slog.New(slog.NewTextHandler(&strings.Builder{}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// Every order of indexing gives the same records: destination chain first
// (with the source chain registered only later), source chain first, and
// both interleaved by time; replaying blocks changes nothing.
func TestIndexerOrders(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s, err := icmtest.New()
		if err != nil {
			t.Fatal(err)
		}
		ix := newIndexer(t)

		// B (destination of M1, M2, M4, M5) is indexed; A is not yet.
		if err := icmtest.RegisterChain(ctx, db, s.B); err != nil {
			t.Fatal(err)
		}
		if err := icmtest.Apply(ctx, db, ix, s.StepsB); err != nil {
			t.Fatal(err)
		}
		exp := expected(s)
		for _, id := range []common.Hash{s.M1, s.M5} {
			r := exp[id]
			r.Source, r.Fee, r.ReceiptDelivered, r.ReceiptTxHash, r.ReceiptTime, r.ReceiptRelayer = nil, nil, false, common.Hash{}, 0, common.Address{}
			r.SourceEVMChainID, r.SourceChainIndexed, r.SortTime = "", false, r.Destination.Time
			checkRecord(t, db, r, icm.StatusDeliveredSourceNotIndexed)
		}
		r := exp[s.M3] // sent by B to A: pending while A is not indexed
		r.Destination, r.Executed, r.ExecutedTxHash, r.ExecutedTime, r.DestinationEVMChainID = nil, false, common.Hash{}, 0, ""
		checkRecord(t, db, r, icm.StatusPending)
		checkRecord(t, db, exp[s.M4], icm.StatusDeliveredSourceNotIndexed)
		if _, err := icm.Get(ctx, db, s.M2); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("M2 before A: %v", err)
		}

		// A is added to the index later and caught up.
		if err := icmtest.RegisterChain(ctx, db, s.A); err != nil {
			t.Fatal(err)
		}
		if err := s.RegisterFeeToken(ctx, db); err != nil {
			t.Fatal(err)
		}
		if err := icmtest.Apply(ctx, db, ix, s.StepsA); err != nil {
			t.Fatal(err)
		}
		checkFinal(t, db, s)
		want := snapshot(t, db)

		for name, steps := range map[string][]icmtest.Step{"source first": s.SourceFirst(), "by time": s.ByTime()} {
			clear(t, db, ix)
			if err := icmtest.Apply(ctx, db, ix, steps); err != nil {
				t.Fatal(err)
			}
			checkFinal(t, db, s)
			if got := snapshot(t, db); got != want {
				t.Errorf("%s: records differ from destination-first:\n%s\nwant\n%s", name, got, want)
			}
		}
		// Replaying every block (a crash before the checkpoint moved) is harmless.
		if err := icmtest.Apply(ctx, db, ix, s.DestinationFirst()); err != nil {
			t.Fatal(err)
		}
		if got := snapshot(t, db); got != want {
			t.Errorf("replay changed records:\n%s", got)
		}
	})
}

func ids2(recs []icm.Record) []common.Hash {
	out := make([]common.Hash, len(recs))
	for i, r := range recs {
		out[i] = r.MessageID
	}
	return out
}

// newestFirst orders ids by (sort time, id) descending, as the API lists.
func newestFirst(s *icmtest.Scenario, idsIn ...common.Hash) []common.Hash {
	exp := expected(s)
	out := append([]common.Hash(nil), idsIn...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			a, b := exp[out[i]], exp[out[j]]
			if b.SortTime > a.SortTime || (b.SortTime == a.SortTime && bytes.Compare(b.MessageID[:], a.MessageID[:]) > 0) {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestList(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s, err := icmtest.New()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []icm.ChainInfo{s.A, s.B} {
			if err := icmtest.RegisterChain(ctx, db, c); err != nil {
				t.Fatal(err)
			}
		}
		if err := icmtest.Apply(ctx, db, newIndexer(t), s.ByTime()); err != nil {
			t.Fatal(err)
		}
		all := newestFirst(s, s.M1, s.M2, s.M3, s.M4, s.M5)
		cases := map[string]struct {
			q    icm.Query
			want []common.Hash
		}{
			"all":                {icm.Query{}, all},
			"sender address":     {icm.Query{Address: &s.Sender}, newestFirst(s, s.M1, s.M2, s.M3, s.M5)},
			"app B address":      {icm.Query{Address: &s.AppB}, newestFirst(s, s.M1, s.M2, s.M3, s.M4)},
			"relayer is neither": {icm.Query{Address: &s.Relayer}, nil},
			"source A":           {icm.Query{SourceBlockchainID: &s.A.BlockchainID}, newestFirst(s, s.M1, s.M2, s.M5)},
			"source Z":           {icm.Query{SourceBlockchainID: &s.Z}, []common.Hash{s.M4}},
			"destination A":      {icm.Query{DestinationBlockchainID: &s.A.BlockchainID}, []common.Hash{s.M3}},
			"either A":           {icm.Query{AnyBlockchainID: &s.A.BlockchainID}, newestFirst(s, s.M1, s.M2, s.M3, s.M5)},
			"from sender to B2":  {icm.Query{From: &s.Sender, To: &s.AppB2}, []common.Hash{s.M5}},
			"address and source": {icm.Query{Address: &s.AppB, SourceBlockchainID: &s.B.BlockchainID}, []common.Hash{s.M3}},
		}
		for name, c := range cases {
			for _, size := range []int{1, 2, 100} {
				var got []common.Hash
				q := c.q
				q.Limit = size
				for page := 0; page < 10; page++ {
					recs, next, err := icm.List(ctx, db, q)
					if err != nil {
						t.Fatal(err)
					}
					if len(recs) > size {
						t.Fatalf("%s: page of %d > %d", name, len(recs), size)
					}
					got = append(got, ids2(recs)...)
					if next == nil {
						break
					}
					q.After = next
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("%s (page size %d): %v, want %v", name, size, got, c.want)
				}
			}
		}
		// Sender-side ordering follows the source time; M2 and M5 share one.
		if exp := expected(s); exp[s.M2].SortTime != exp[s.M5].SortTime {
			t.Fatal("scenario should exercise the id tie-break")
		}
	})
}

// Logs of other contracts and malformed or inconsistent messenger logs are
// skipped without failing the block; denied contracts are not read; events
// that carry no message count only from a contract that proved itself a
// messenger on that chain.
func TestIndexerSkips(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s, err := icmtest.New()
		if err != nil {
			t.Fatal(err)
		}
		var logBuf strings.Builder
		deniedAddr := common.Address{0x43}
		ix, err := icm.NewIndexer(icm.Config{
			Deny:   []common.Address{deniedAddr},
			Logger: slog.New(slog.NewTextHandler(&logBuf, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		send := s.StepsA[0].Logs[0]
		// The same send from another contract: its ID is not that contract's.
		other := send
		other.Address = common.Address{0x42}
		truncated := send
		truncated.Data = send.Data[:64]
		// A send whose ID is not calculateMessageID of its content.
		forged := send
		forged.Topics = append([]common.Hash(nil), send.Topics...)
		forged.Topics[1] = common.Hash{0xde, 0xad}
		denied := send
		denied.Address = deniedAddr
		// MessageExecuted of M1 from a contract that never proved itself a
		// messenger (it could mark any message executed).
		var lookalike icm.Log
		for _, st := range s.StepsB {
			for _, l := range st.Logs {
				if ev, err := icm.DecodeEvent(l.Topics, l.Data); err == nil && ev.Name == icm.EventMessageExecuted {
					lookalike = l
				}
			}
		}
		if lookalike.Topics == nil {
			t.Fatal("scenario has no MessageExecuted")
		}
		lookalike.Address = common.Address{0x44}
		// A send claimed by chain B while the message says it was sent from A
		// would have a different ID: applying A's log as B must be rejected.
		apply := func(c icm.ChainInfo, logs ...icm.Log) {
			t.Helper()
			tx, err := db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := ix.ApplyLogs(ctx, tx, c, icm.BlockInfo{Number: 1, Time: 5}, logs); err != nil {
				tx.Rollback()
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		apply(s.A, other, truncated, forged, denied)
		apply(s.B, send, lookalike)
		var n int
		if err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM icm_events) + (SELECT COUNT(*) FROM icm_messages)
			+ (SELECT COUNT(*) FROM icm_messengers)`).Scan(&n); err != nil || n != 0 {
			t.Errorf("rows written: %d %v", n, err)
		}
		if c := strings.Count(logBuf.String(), "skipping messenger log"); c != 4 {
			t.Errorf("warnings: %d\n%s", c, logBuf.String())
		}
		if ix.Wants(deniedAddr, send.Topics) || !ix.Wants(s.Messenger, send.Topics) || !ix.Wants(other.Address, send.Topics) ||
			ix.Wants(s.Messenger, []common.Hash{{1}}) || ix.Wants(s.Messenger, nil) {
			t.Error("Wants")
		}
		allowOnly, err := icm.NewIndexer(icm.Config{Allow: []common.Address{s.Messenger}})
		if err != nil {
			t.Fatal(err)
		}
		if !allowOnly.Wants(s.Messenger, send.Topics) || allowOnly.Wants(other.Address, send.Topics) {
			t.Error("Wants with an allow list")
		}
	})
}

// Two chains' ingest transactions touching one message at the same time: the
// second waits for the first and rebuilds the message with both sides (on
// PostgreSQL through the message lock, on SQLite through the single writer).
func TestConcurrentSides(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s, err := icmtest.New()
		if err != nil {
			t.Fatal(err)
		}
		ix := newIndexer(t)
		for _, c := range []icm.ChainInfo{s.A, s.B} {
			if err := icmtest.RegisterChain(ctx, db, c); err != nil {
				t.Fatal(err)
			}
		}
		sendM1, recvM1 := s.StepsA[0], s.StepsB[0]
		txA, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.ApplyLogs(ctx, txA, sendM1.Chain, sendM1.Block, sendM1.Logs); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			txB, err := db.Begin(ctx)
			if err != nil {
				done <- err
				return
			}
			if err := ix.ApplyLogs(ctx, txB, recvM1.Chain, recvM1.Block, recvM1.Logs); err != nil {
				txB.Rollback()
				done <- err
				return
			}
			done <- txB.Commit()
		}()
		time.Sleep(300 * time.Millisecond) // let B reach the lock (or the writer)
		if err := txA.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		r, err := icm.Get(ctx, db, s.M1)
		if err != nil || r.Status() != icm.StatusDelivered || r.Source == nil || r.Destination == nil || !r.Executed {
			t.Fatalf("M1 after concurrent sides: %+v %v", r, err)
		}
	})
}
