package evm_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
)

type addrInfo struct {
	Address string `json:"address"`
}

type transferItem struct {
	BlockNumber    string      `json:"blockNumber"`
	BlockTimestamp json.Number `json:"blockTimestamp"`
	BlockHash      string      `json:"blockHash"`
	TxHash         string      `json:"txHash"`
	From           addrInfo    `json:"from"`
	To             addrInfo    `json:"to"`
	LogIndex       json.Number `json:"logIndex"`
	Value          *string     `json:"value"`
	Erc20Token     *nftItem    `json:"erc20Token"`
	Erc721Token    *nftItem    `json:"erc721Token"`
	Erc1155Token   *nftItem    `json:"erc1155Token"`
}

func transferPage(l transferList) ([]transferItem, string) { return l.Transfers, l.NextPageToken }

type transferList struct {
	NextPageToken string         `json:"nextPageToken"`
	Transfers     []transferItem `json:"transfers"`
}

// key renders a transfer as the recorded logs state it.
func (x transferItem) key() string {
	typ, id, value := "", "", ""
	if x.Value != nil {
		value = *x.Value
	}
	switch {
	case x.Erc20Token != nil:
		typ = "ERC-20"
	case x.Erc721Token != nil:
		typ, id, value = "ERC-721", x.Erc721Token.TokenID, "1"
	case x.Erc1155Token != nil:
		typ, id = "ERC-1155", x.Erc1155Token.TokenID
	}
	return fmt.Sprintf("%s %s %s %s log %s %s->%s id=%s v=%s", typ, x.BlockNumber, x.BlockHash, x.TxHash, x.LogIndex,
		x.From.Address, x.To.Address, id, value)
}

func (x logTransfer) key() string {
	return fmt.Sprintf("%s %d %s %s log %d %s->%s id=%s v=%s", x.Type, x.Block, x.BlockHash, x.TxHash, x.LogIndex,
		x.From, x.To, x.ID, x.Value)
}

// expectTransfers is the recorded logs' transfers of token in [lo, hi),
// newest first.
func expectTransfers(xs []logTransfer, token string, lo, hi int64) []string {
	var sel []logTransfer
	for _, x := range xs {
		if x.Token == token && x.Block >= lo && x.Block < hi {
			sel = append(sel, x)
		}
	}
	sort.Slice(sel, func(i, j int) bool {
		a, b := sel[i], sel[j]
		if a.Block != b.Block {
			return a.Block > b.Block
		}
		if a.LogIndex != b.LogIndex {
			return a.LogIndex > b.LogIndex
		}
		return a.Batch > b.Batch
	})
	out := make([]string, len(sel))
	for i, x := range sel {
		out[i] = x.key()
	}
	return out
}

// Transfers of each token equal the recorded eth_getLogs transfers, newest
// first, for every block range form.
func TestTransfers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		xs := e.rec.logTransfers(t)
		times := blockTimes(t, e)
		for name, token := range e.net.CChainContracts {
			for _, c := range []struct {
				q      string
				lo, hi int64
			}{
				{"", 0, 1 << 40},
				{"?pageSize=100", 0, 1 << 40},
				{"?pageSize=1", 0, 1 << 40},
				{"?startBlock=20", 20, 1 << 40},
				{"?endBlock=20", 0, 20},
				{"?startBlock=18&endBlock=30&pageSize=2", 18, 30},
				{"?startBlock=31&endBlock=32", 31, 32},
				{"?startBlock=37&endBlock=100000", 37, 100000},
				{"?startBlock=1000", 1000, 1 << 40},
				{"?endBlock=0", 0, 0},
			} {
				path := "/v1/chains/88888/tokens/" + strings.ToUpper(token[:1]) + "x" + token[2:] + "/transfers" + c.q
				got := allPages(t, e, path, transferPage)
				var keys []string
				for _, x := range got {
					keys = append(keys, x.key())
					if ts := times[x.BlockNumber]; x.BlockTimestamp.String() != ts {
						t.Errorf("%s: blockTimestamp %s, block %s has %s", path, x.BlockTimestamp, x.BlockNumber, ts)
					}
					for _, tok := range []*nftItem{x.Erc20Token, x.Erc721Token, x.Erc1155Token} {
						if tok != nil && tok.Address != token {
							t.Errorf("%s: token %s", path, tok.Address)
						}
					}
					if x.Erc721Token != nil && (x.Erc721Token.Metadata.IndexStatus != "UNINDEXED" || x.Value != nil) {
						t.Errorf("%s: %+v", path, x)
					}
				}
				want := expectTransfers(xs, token, c.lo, c.hi)
				if strings.Join(keys, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s (%s):\ngot\n  %s\nthe logs say\n  %s", path, name, strings.Join(keys, "\n  "), strings.Join(want, "\n  "))
				}
			}
		}
		// Every transfer in the logs is listed under its token.
		n := 0
		for _, token := range e.net.CChainContracts {
			n += len(expectTransfers(xs, token, 0, 1<<40))
		}
		if n != len(xs) {
			t.Errorf("%d transfers by known contracts, %d in the logs", n, len(xs))
		}
		// A contract with no transfers, and an account.
		for _, a := range []string{e.net.CChainContracts["factory"], "0x03623add7ec6f6426d6266ed2e5a4734c786e73e"} {
			if got := allPages(t, e, "/v1/chains/88888/tokens/"+a+"/transfers", transferPage); len(got) != 0 {
				t.Errorf("%s: %d transfers", a, len(got))
			}
		}
	})
}

// blockTimes reads the recorded block timestamps: decimal number -> decimal time.
func blockTimes(t *testing.T, e *env) map[string]string {
	out := map[string]string{}
	e.rec.each("eth_getBlockByNumber", func(ps []json.RawMessage, res json.RawMessage) {
		var b struct{ Number, Timestamp string }
		if json.Unmarshal(res, &b) == nil && b.Number != "" {
			out[hexDec(t, b.Number)] = hexDec(t, b.Timestamp)
		}
	})
	return out
}

func TestTransfersErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		token := e.net.CChainContracts["erc20"]
		base := "/v1/chains/88888/tokens/" + token + "/transfers?"
		for q, want := range map[string][]string{
			"startBlock=-1":                   {"startBlock"},
			"startBlock=1.5":                  {"startBlock"},
			"endBlock=abc":                    {"endBlock"},
			"startBlock=10&endBlock=10":       {"startBlock", "endBlock"},
			"startBlock=11&endBlock=10":       {"startBlock", "endBlock"},
			"pageSize=0":                      {"pageSize"},
			"pageSize=101":                    {"pageSize", "100"},
			"pageSize=-5":                     {"pageSize"},
			"pageToken=x.y":                   {"pageToken"},
			"pageSize=0&endBlock=z":           {"pageSize", "endBlock"},
			"startBlock=99999999999999999999": {"startBlock"},
		} {
			e.fails(t, base+q, 400, want...)
		}
		e.fails(t, "/v1/chains/88888/tokens/0xnothex/transfers", 400, "address")
		e.fails(t, "/v1/chains/1/tokens/"+token+"/transfers", 404, "1")
	})
}
