package evm

import (
	"bytes"
	"context"
	"math/big"
	"math/rand"
	"strings"
	"testing"

	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/devnet/indextest"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// recordedBody returns the indexer input of recorded block n.
func recordedBody(t testing.TB, n int) ingest.RawBlock {
	t.Helper()
	return loadRecording(t).rawBlocks(t)[n]
}

func TestParseRejectsMalformed(t *testing.T) {
	good := string(recordedBody(t, 34).Bytes) // factory create: 5 logs
	replace := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	replaceLast := func(old, new string) string {
		i := strings.LastIndex(good, old)
		if i < 0 {
			t.Fatalf("fixture lacks %q", old)
		}
		return good[:i] + new + good[i+len(old):]
	}
	cases := []struct {
		name, body, want string
	}{
		{"empty", ``, "unexpected end"},
		{"not an object", `[]`, "want object"},
		{"truncated", good[:len(good)/2], "unexpected end"},
		{"trailing data", good + `{}`, "trailing data"},
		{"null block", `{"block":null,"receipts":[]}`, "block is null"},
		{"no receipts", `{"block":` + good[9:strings.Index(good, `,"receipts":`)] + `}`, "missing receipts"},
		{"receipts mismatch", replace(`,"receipts":[{`, `,"receipts":[{},{`), "receipt 1 without a transaction"},
		{"tx hashes only", replace(`"transactions":[{`, `"transactions":["0x01",{`), "full transactions"},
		{"receipt of another tx", replaceLast(`"transactionHash":"0x37b1`, `"transactionHash":"0x47b1`), "is for tx"},
		{"five topics", replace(`"topics":[`, `"topics":["0x0000000000000000000000000000000000000000000000000000000000000000",`+
			`"0x0000000000000000000000000000000000000000000000000000000000000000","0x0000000000000000000000000000000000000000000000000000000000000000",`), "more than 4 topics"},
		{"bad quantity", replace(`"gasUsed":"0xa840e"`, `"gasUsed":"0xzz"`), "not hex"},
		{"quantity over 63 bits", replaceLast(`"nonce":"0x`, `"nonce":"0xfffffffffffffff`), "exceeds 63 bits"},
		{"value over 256 bits", replace(`"value":"0x0"`, `"value":"0x1`+strings.Repeat("0", 64)+`"`), "exceeds 256 bits"},
		{"short address", replace(`"from":"0xc469642a7739a3fac497947568f0c529eaaf65bb"`, `"from":"0xc469"`), "hex digits"},
		{"number as JSON number", replace(`"number":"0x22"`, `"number":34`), "want string"},
		{"status 2", replace(`"status":"0x1"`, `"status":"0x2"`), "status 2"},
		{"odd log data", replace(`"data":"0x"`, `"data":"0x0"`), "not 0x-hex bytes"},
		{"missing tx hash", replace(`"hash":"0x37b1`, `"hashX":"0x37b1`), "missing hash"},
		{"unterminated string", `{"block":{"hash":"0x12`, "unexpected end"},
		{"control char", "{\"block\":{\"hash\":\"\x01\"}}", "control character"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b block
			err := b.parse([]byte(c.body))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
	var b block
	if err := b.parse([]byte(good)); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	// Key order does not matter: receipts may come first.
	cut := strings.Index(good, `,"receipts":`)
	reordered := `{"receipts":` + good[cut+len(`,"receipts":`):len(good)-1] + `,"block":` + good[len(`{"block":`):cut] + `}`
	var r block
	if err := r.parse([]byte(reordered)); err != nil || len(r.txs) != 1 || len(r.txs[0].logs) != 5 || r.hash != b.hash {
		t.Errorf("reordered document: %v", err)
	}
}

// TestParseSurvivesMutations feeds thousands of corrupted recorded blocks to
// the parser and the transfer decoder: errors are fine, panics are not.
func TestParseSurvivesMutations(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	var seeds [][]byte
	for _, n := range []int{1, 28, 34, 36, 37} {
		seeds = append(seeds, recordedBody(t, n).Bytes)
	}
	alphabet := []byte(`{}[]",:0x1fFn\ `)
	var b block
	var xfers []transfer
	for i := 0; i < 5000; i++ {
		src := seeds[i%len(seeds)]
		m := append([]byte(nil), src...)
		for k := 0; k <= rng.Intn(4); k++ {
			p := rng.Intn(len(m))
			switch rng.Intn(4) {
			case 0:
				m[p] = alphabet[rng.Intn(len(alphabet))]
			case 1:
				m = m[:p]
			case 2:
				m = append(m[:p], m[min(len(m), p+rng.Intn(40)):]...)
			default:
				m = append(m[:p], append([]byte{alphabet[rng.Intn(len(alphabet))]}, m[p:]...)...)
			}
			if len(m) == 0 {
				break
			}
		}
		if err := b.parse(m); err == nil {
			for j := range b.txs {
				for k := range b.txs[j].logs {
					xfers = decodeTransfers(&b.txs[j].logs[k], xfers[:0])
				}
			}
		}
	}
}

func TestDecodeTransfersShapes(t *testing.T) {
	addrTopic := func(b byte) common.Hash { var h common.Hash; h[31] = b; return h }
	word := func(v uint64) []byte { return common.BigToHash(new(big.Int).SetUint64(v)).Bytes() }
	cat := func(ws ...[]byte) []byte { return bytes.Join(ws, nil) }
	dirty := addrTopic(1)
	dirty[0] = 1
	batch := func(ids, vals []uint64) []byte {
		out := cat(word(64), word(uint64(64+32+32*len(ids))), word(uint64(len(ids))))
		for _, v := range ids {
			out = append(out, word(v)...)
		}
		out = append(out, word(uint64(len(vals)))...)
		for _, v := range vals {
			out = append(out, word(v)...)
		}
		return out
	}
	cases := []struct {
		name   string
		topics []common.Hash
		data   []byte
		want   []ercType
	}{
		{"erc20", []common.Hash{topicTransfer, addrTopic(1), addrTopic(2)}, word(5), []ercType{erc20}},
		{"erc20 short data", []common.Hash{topicTransfer, addrTopic(1), addrTopic(2)}, word(5)[:31], nil},
		{"erc721", []common.Hash{topicTransfer, addrTopic(1), addrTopic(2), addrTopic(9)}, nil, []ercType{erc721}},
		{"erc721 with data", []common.Hash{topicTransfer, addrTopic(1), addrTopic(2), addrTopic(9)}, word(1), nil},
		{"non-address topic", []common.Hash{topicTransfer, dirty, addrTopic(2)}, word(5), nil},
		{"no topics", nil, word(5), nil},
		{"single", []common.Hash{topicTransferSingle, addrTopic(3), addrTopic(1), addrTopic(2)}, cat(word(7), word(8)), []ercType{erc1155}},
		{"single short", []common.Hash{topicTransferSingle, addrTopic(3), addrTopic(1), addrTopic(2)}, word(7), nil},
		{"batch", []common.Hash{topicTransferBatch, addrTopic(3), addrTopic(1), addrTopic(2)}, batch([]uint64{1, 2, 3}, []uint64{4, 5, 6}),
			[]ercType{erc1155, erc1155, erc1155}},
		{"batch length mismatch", []common.Hash{topicTransferBatch, addrTopic(3), addrTopic(1), addrTopic(2)}, batch([]uint64{1, 2}, []uint64{4}), nil},
		{"batch offset out of range", []common.Hash{topicTransferBatch, addrTopic(3), addrTopic(1), addrTopic(2)}, cat(word(1<<40), word(64), word(0)), nil},
		{"batch huge length", []common.Hash{topicTransferBatch, addrTopic(3), addrTopic(1), addrTopic(2)}, cat(word(64), word(96), word(1<<60), word(0)), nil},
		{"batch unaligned offset", []common.Hash{topicTransferBatch, addrTopic(3), addrTopic(1), addrTopic(2)}, cat(word(65), word(96), word(0), word(0)), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := logEntry{data: c.data, ntopics: len(c.topics)}
			copy(l.topics[:], c.topics)
			got := decodeTransfers(&l, nil)
			if len(got) != len(c.want) {
				t.Fatalf("got %d transfers, want %d", len(got), len(c.want))
			}
			for i := range got {
				if got[i].typ != c.want[i] || got[i].batch != i && got[i].typ == erc1155 {
					t.Errorf("transfer %d = %+v", i, got[i])
				}
			}
		})
	}
}

func TestApplyRejectsWrongBlock(t *testing.T) {
	blocks := loadRecording(t).rawBlocks(t)
	db := storetest.Open(t, storetest.SQLiteDSN(t))
	cfg := cChainConfig(t)
	ctx := context.Background()
	cases := []struct {
		name string
		cfg  func(c Config) Config
		blk  func(b ingest.RawBlock) ingest.RawBlock
		want string
	}{
		{"height", nil, func(b ingest.RawBlock) ingest.RawBlock { b.Height = 6; return b }, "body is block 5"},
		{"hash", nil, func(b ingest.RawBlock) ingest.RawBlock { b.Hash = "0x" + strings.Repeat("ab", 32); return b }, "body hash"},
		{"chain id", func(c Config) Config { c.ChainID = big.NewInt(43114); return c }, nil, "chain id 88888, want 43114"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cc := cfg
			if c.cfg != nil {
				cc = c.cfg(cc)
			}
			ix, err := NewIndexer(cc)
			if err != nil {
				t.Fatal(err)
			}
			b := blocks[5]
			if c.blk != nil {
				b = c.blk(b)
			}
			tx, err := db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			err = ix.Apply(ctx, tx, b)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
	for _, bad := range []Config{{}, {ChainKey: "C", ChainID: big.NewInt(0)},
		{ChainKey: "C", GenesisAlloc: map[common.Address]*big.Int{{}: big.NewInt(-1)}}} {
		if _, err := NewIndexer(bad); err == nil {
			t.Errorf("NewIndexer(%+v): want error", bad)
		}
	}
}

// TestRollbackAndReplay applies blocks, rolls part of them back, and applies
// them again, as the ingest driver does after a failed commit: the indexer's
// caches must not keep the rolled-back state.
func TestRollbackAndReplay(t *testing.T) {
	rec := loadRecording(t)
	blocks := rec.rawBlocks(t)
	work := loadWorkload(t)
	net := loadNetwork(t)
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ix, err := NewIndexer(cChainConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		indextest.Apply(t, db, ix, blocks[:20], 20)
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks[20:30] {
			if err := ix.Apply(ctx, tx, b); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		indextest.Apply(t, db, ix, blocks[20:], 7)
		checkRecordedChain(t, db, rec, work, net, atomicTouched(work))
	})
}

func TestAllocFromGenesis(t *testing.T) {
	cfg := cChainConfig(t)
	alice := common.HexToAddress("0x03623add7ec6f6426d6266ed2e5a4734c786e73e")
	if want, _ := new(big.Int).SetString("1000000000000000000000000000000", 10); cfg.GenesisAlloc[alice].Cmp(want) != 0 {
		t.Errorf("alice alloc = %s, want 10^30", cfg.GenesisAlloc[alice])
	}
	if cfg.ChainID.Int64() != 88888 || len(cfg.GenesisAlloc) != 4 {
		t.Errorf("chain id %s, %d allocs", cfg.ChainID, len(cfg.GenesisAlloc))
	}
}
