package evm

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/devnet/indextest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// collectSink records what the indexer hands to a LogSink.
type collectSink struct{ got []string }

func (s *collectSink) ApplyLogs(ctx context.Context, tx *store.Tx, number uint64, hash common.Hash, time int64, logs []Log) error {
	for _, l := range logs {
		topics := make([]string, len(l.Topics))
		for i, tp := range l.Topics {
			topics[i] = tp.Hex()
		}
		s.got = append(s.got, strings.Join([]string{strconv.FormatUint(number, 10), strconv.FormatUint(l.LogIndex, 10),
			strings.ToLower(l.Address.Hex()), l.TxHash.Hex(), strings.Join(topics, ","), common.Bytes2Hex(l.Data)}, "|"))
	}
	return nil
}

func (s *collectSink) DerivedTables() []string { return nil }

// The LogSink (ICM's entry point) sees every recorded log, once, with its
// block, position, transaction, topics and data.
func TestLogSinkGetsEveryLog(t *testing.T) {
	rec := loadRecording(t)
	blocks := rec.rawBlocks(t)
	var want []string
	for _, l := range recordedLogs(t, rec) {
		n, _ := strconv.ParseUint(strings.TrimPrefix(l.BlockNumber, "0x"), 16, 64)
		i, _ := strconv.ParseUint(strings.TrimPrefix(l.LogIndex, "0x"), 16, 64)
		want = append(want, strings.Join([]string{strconv.FormatUint(n, 10), strconv.FormatUint(i, 10),
			strings.ToLower(l.Address), l.TransactionHash, strings.Join(l.Topics, ","), strings.TrimPrefix(l.Data, "0x")}, "|"))
	}
	db := storetest.Open(t, storetest.SQLiteDSN(t))
	sink := &collectSink{}
	cfg := cChainConfig(t)
	cfg.Logs = sink
	ix, err := NewIndexer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	indextest.Apply(t, db, ix, blocks, 10)
	if len(sink.got) != len(want) {
		t.Fatalf("sink got %d logs, recording has %d", len(sink.got), len(want))
	}
	for i := range want {
		if sink.got[i] != want[i] {
			t.Errorf("log %d:\n got %s\nwant %s", i, sink.got[i], want[i])
		}
	}
}
