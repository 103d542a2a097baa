package primary_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/testenv"
)

// recordedBlock is a block as the node answered getBlockByHeight (json,
// plus the size of the hex answer).
type recordedBlock struct {
	Height   int64
	ID       string
	ParentID string
	Time     *int64
	TxIDs    []string
	Size     int
	Type     string
}

// recordedBlocks reads the recorded getBlockByHeight answers of a chain.
func (e *env) recordedBlocks(t testing.TB, chain string) map[int64]*recordedBlock {
	t.Helper()
	method := map[string]string{"P": "platform.getBlockByHeight", "X": "avm.getBlockByHeight"}[chain]
	out := map[int64]*recordedBlock{}
	get := func(h int64) *recordedBlock {
		if out[h] == nil {
			out[h] = &recordedBlock{Height: h}
		}
		return out[h]
	}
	e.rec.each(chain, method, func(params, result json.RawMessage) {
		var p struct {
			Height   int64  `json:"height"`
			Encoding string `json:"encoding"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return // the one array-wrapped call
		}
		switch p.Encoding {
		case "hex":
			var r struct{ Block string }
			if err := json.Unmarshal(result, &r); err != nil {
				t.Fatal(err)
			}
			b, err := hex.DecodeString(strings.TrimPrefix(r.Block, "0x"))
			if err != nil {
				t.Fatal(err)
			}
			get(p.Height).Size = len(b) - 4 // without the checksum
		case "json":
			var r struct {
				Block struct {
					ID       string `json:"id"`
					ParentID string `json:"parentID"`
					Height   int64  `json:"height"`
					Time     *int64 `json:"time"`
					Txs      []struct {
						ID string `json:"id"`
					} `json:"txs"`
					Tx *struct {
						ID string `json:"id"`
					} `json:"tx"`
				} `json:"block"`
			}
			if err := json.Unmarshal(result, &r); err != nil {
				t.Fatal(err)
			}
			b := get(p.Height)
			b.ID, b.ParentID, b.Time = r.Block.ID, r.Block.ParentID, r.Block.Time
			b.TxIDs = []string{}
			for _, x := range r.Block.Txs {
				b.TxIDs = append(b.TxIDs, x.ID)
			}
			if r.Block.Tx != nil {
				b.TxIDs = append(b.TxIDs, r.Block.Tx.ID)
			}
		}
	})
	if chain == "P" {
		for _, b := range e.net.PBlocks {
			get(int64(b.Height)).Type = b.BlockType
		}
		// The genesis block's JSON has no time: it is the genesis startTime.
		if out[0] != nil && out[0].Time == nil {
			st := genesisStartTime(t)
			out[0].Time = &st
		}
	}
	return out
}

func genesisStartTime(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.DevnetDir(t), "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		StartTime int64 `json:"startTime"`
	}
	if err := json.Unmarshal(b, &g); err != nil || g.StartTime == 0 {
		t.Fatalf("genesis startTime: %v", err)
	}
	return g.StartTime
}

type blockOut struct {
	BlockNumber             string   `json:"blockNumber"`
	BlockHash               string   `json:"blockHash"`
	ParentHash              string   `json:"parentHash"`
	BlockTimestamp          int64    `json:"blockTimestamp"`
	BlockType               string   `json:"blockType"`
	TxCount                 int      `json:"txCount"`
	Transactions            []string `json:"transactions"`
	BlockSizeBytes          int      `json:"blockSizeBytes"`
	CurrentSupply           string   `json:"currentSupply"`
	L1ValidatorsAccruedFees *int64   `json:"l1ValidatorsAccruedFees"`
	ActiveL1Validators      *int64   `json:"activeL1Validators"`
}

type blocksPage struct {
	NextPageToken *string    `json:"nextPageToken"`
	Blocks        []blockOut `json:"blocks"`
	ChainInfo     struct {
		ChainName string `json:"chainName"`
		Network   string `json:"network"`
	} `json:"chainInfo"`
}

// allBlocks walks every page of target with page size size.
func (e *env) allBlocks(t testing.TB, target string, size int) []blockOut {
	t.Helper()
	var out []blockOut
	e.walk(t, target, size, func(body []byte) {
		var p blocksPage
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Blocks...)
	})
	return out
}

func TestBlocks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		for _, c := range []struct{ chain, alias string }{{"P", "p-chain"}, {"X", "x-chain"}} {
			t.Run(c.chain, func(t *testing.T) {
				rec := e.recordedBlocks(t, c.chain)
				// By alias and by cb58 id: the same answer.
				for _, id := range []string{c.alias, e.net.BlockchainIDs[c.chain]} {
					got := e.allBlocks(t, "/v1/networks/testnet/blockchains/"+id+"/blocks", 7)
					if len(got) != len(rec) {
						t.Fatalf("%s: %d blocks, the node has %d", id, len(got), len(rec))
					}
					for i, b := range got {
						want := rec[int64(len(rec)-1-i)] // newest first
						checkBlock(t, c.chain, b, want)
					}
				}
				var first blocksPage
				e.ok(t, "/v1/networks/fuji/blockchains/"+c.alias+"/blocks", &first)
				if len(first.Blocks) != 10 || first.NextPageToken == nil {
					t.Errorf("default page: %d blocks, next %v", len(first.Blocks), first.NextPageToken)
				}
				if first.ChainInfo.ChainName != c.alias || first.ChainInfo.Network != "fuji" {
					t.Errorf("chainInfo %+v", first.ChainInfo)
				}
				// Time filters are inclusive on both ends.
				times := []int64{}
				for h := int64(1); h < int64(len(rec)); h++ {
					times = append(times, *rec[h].Time)
				}
				lo, hi := times[len(times)/4], times[3*len(times)/4]
				for _, f := range []struct {
					q      string
					lo, hi int64
				}{
					{fmt.Sprintf("startTimestamp=%d", lo), lo, 1 << 62},
					{fmt.Sprintf("endTimestamp=%d", hi), 0, hi},
					{fmt.Sprintf("startTimestamp=%d&endTimestamp=%d", lo, hi), lo, hi},
					{fmt.Sprintf("startTimestamp=%d&endTimestamp=%d", lo, lo), lo, lo},
				} {
					got := e.allBlocks(t, "/v1/networks/testnet/blockchains/"+c.alias+"/blocks?"+f.q, 3)
					want := 0
					for _, b := range rec {
						if b.Time != nil && *b.Time >= f.lo && *b.Time <= f.hi {
							want++
						}
					}
					if len(got) != want || want == 0 {
						t.Errorf("%s: %d blocks, want %d", f.q, len(got), want)
					}
					for _, b := range got {
						if b.BlockTimestamp < f.lo || b.BlockTimestamp > f.hi {
							t.Errorf("%s: block %s at %d", f.q, b.BlockNumber, b.BlockTimestamp)
						}
					}
				}
			})
		}
	})
}

func checkBlock(t *testing.T, chain string, b blockOut, want *recordedBlock) {
	t.Helper()
	if b.BlockNumber != fmt.Sprint(want.Height) || b.BlockHash != want.ID || b.ParentHash != want.ParentID {
		t.Errorf("block %s: %s/%s, node %d %s/%s", b.BlockNumber, b.BlockHash, b.ParentHash, want.Height, want.ID, want.ParentID)
	}
	if want.Time != nil && b.BlockTimestamp != *want.Time {
		t.Errorf("block %s: time %d, node %d", b.BlockNumber, b.BlockTimestamp, *want.Time)
	}
	if fmt.Sprint(b.Transactions) != fmt.Sprint(want.TxIDs) || b.TxCount != len(want.TxIDs) {
		t.Errorf("block %s: txs %d %v, node %v", b.BlockNumber, b.TxCount, b.Transactions, want.TxIDs)
	}
	if b.BlockSizeBytes != want.Size {
		t.Errorf("block %s: size %d, node %d", b.BlockNumber, b.BlockSizeBytes, want.Size)
	}
	if chain == "P" {
		if b.BlockType != want.Type {
			t.Errorf("block %s: type %s, node %s", b.BlockNumber, b.BlockType, want.Type)
		}
		if b.CurrentSupply == "" || b.L1ValidatorsAccruedFees == nil || b.ActiveL1Validators == nil {
			t.Errorf("block %s: P-chain state missing: %+v", b.BlockNumber, b)
		}
	} else if b.BlockType != "StandardBlock" || b.CurrentSupply != "" || b.ActiveL1Validators != nil {
		t.Errorf("block %s: X-chain block %+v", b.BlockNumber, b)
	}
}

// The P-chain's state fields agree with the node's answers at the tip.
func TestBlocksPChainState(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		var supply string
		e.rec.each("P", "platform.getCurrentSupply", func(params, result json.RawMessage) {
			if string(params) == "{}" {
				var r struct{ Supply string }
				_ = json.Unmarshal(result, &r)
				supply = r.Supply
			}
		})
		var page blocksPage
		e.ok(t, "/v1/networks/testnet/blockchains/p-chain/blocks?pageSize=1", &page)
		if len(page.Blocks) != 1 || page.Blocks[0].CurrentSupply != supply || supply == "" {
			t.Errorf("tip supply %+v, node %q", page.Blocks, supply)
		}
		var l1 int
		e.rec.each("P", "platform.getCurrentValidators", func(params, result json.RawMessage) {
			if strings.Contains(string(params), `"subnetID":"`+e.net.Subnets["B"].SubnetID+`"}`) && !strings.Contains(string(params), "nodeIDs") {
				var r struct{ Validators []json.RawMessage }
				_ = json.Unmarshal(result, &r)
				l1 = len(r.Validators)
			}
		})
		if got := page.Blocks[0].ActiveL1Validators; got == nil || int(*got) != l1 || l1 == 0 {
			t.Errorf("activeL1Validators %v, node lists %d L1 validators", got, l1)
		}
	})
}
