package devnet

import (
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/vms/platformvm/block"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
)

// Block is a recorded block as the ingest driver hands it to an indexer; it
// converts to ingest.RawBlock (same fields), which this package cannot
// import.
type Block struct {
	Height    uint64
	Hash      string
	Bytes     []byte
	Timestamp int64
}

// xTip is the X-chain's recorded tip height.
const xTip = 19

// XBlocks returns X-chain blocks 0..19 in height order: the bytes of the
// avm.getBlockByHeight answer in hex, with ID and time from the answer in
// json (recorded right after it).
func XBlocks(t testing.TB) []Block {
	t.Helper()
	hexByHeight := map[int64][]byte{}
	var out []Block
	for _, e := range LoadRPC(t, X).Method("avm.getBlockByHeight") {
		if e.Response.Result == nil {
			continue
		}
		var p struct {
			Encoding string      `json:"encoding"`
			Height   json.Number `json:"height"`
		}
		Params(t, e, &p)
		h, _ := p.Height.Int64()
		switch p.Encoding {
		case "hex":
			var r struct{ Block string }
			Result(t, e, &r)
			hexByHeight[h] = HexBytes(t, r.Block)
		case "json":
			var r struct {
				Block struct {
					ID   string      `json:"id"`
					Time json.Number `json:"time"`
				}
			}
			Result(t, e, &r)
			ts, _ := r.Block.Time.Int64()
			raw, ok := hexByHeight[h]
			if !ok {
				t.Fatalf("devnet: json block %d before its hex", h)
			}
			out = append(out, Block{Height: uint64(h), Hash: r.Block.ID, Bytes: raw, Timestamp: ts})
		}
	}
	if len(out) != xTip+1 {
		t.Fatalf("devnet: recorded X blocks = %d, want %d", len(out), xTip+1)
	}
	for i, b := range out {
		if b.Height != uint64(i) {
			t.Fatalf("devnet: X block %d at position %d", b.Height, i)
		}
	}
	return out
}

// PBlocks parses every platform.getBlockByHeight answer in hex of calls
// (the P-chain's), by height.
func PBlocks(t testing.TB, calls Calls) map[uint64]block.Block {
	t.Helper()
	out := make(map[uint64]block.Block)
	for _, x := range calls.Method("platform.getBlockByHeight") {
		if x.Response.Result == nil {
			continue
		}
		var p struct{ Encoding string }
		if err := json.Unmarshal(x.Params, &p); err != nil || p.Encoding != "hex" {
			continue // the array-wrapped call, and the json encoding
		}
		var r struct{ Block string }
		Result(t, x, &r)
		blk, err := block.Parse(block.Codec, HexBytes(t, r.Block))
		if err != nil {
			t.Fatalf("devnet: P block: %v", err)
		}
		out[blk.Height()] = blk
	}
	return out
}

// PTxs parses every platform.getTx answer in hex of calls, by tx ID (checked
// to be the hash of the bytes).
func PTxs(t testing.TB, calls Calls) map[ids.ID]*txs.Tx {
	t.Helper()
	out := make(map[ids.ID]*txs.Tx)
	for _, x := range calls.Method("platform.getTx") {
		if x.Response.Result == nil {
			continue
		}
		var p struct{ TxID, Encoding string }
		if err := json.Unmarshal(x.Params, &p); err != nil || p.Encoding != "hex" {
			continue
		}
		var r struct{ Tx string }
		Result(t, x, &r)
		tx, err := txs.Parse(txs.Codec, HexBytes(t, r.Tx))
		if err != nil {
			t.Fatalf("devnet: tx %s: %v", p.TxID, err)
		}
		if tx.ID().String() != p.TxID {
			t.Fatalf("devnet: recorded tx %s hashes to %s", p.TxID, tx.ID())
		}
		out[tx.ID()] = tx
	}
	return out
}

// Validator is one entry of a platform.getValidatorsAt answer.
type Validator struct {
	NodeID    ids.NodeID
	PublicKey *bls.PublicKey // nil without a key
	PKHex     string         // 0x-hex compressed, "" without a key
	Weight    uint64
}

// ValidatorSet is one recorded platform.getValidatorsAt call and its answer.
type ValidatorSet struct {
	SubnetID ids.ID // the primary network's when the call named none
	Height   string // decimal, or "proposed"
	Set      map[ids.NodeID]Validator
}

// ValidatorsAt returns every platform.getValidatorsAt answer of calls.
func ValidatorsAt(t testing.TB, calls Calls) []ValidatorSet {
	t.Helper()
	var out []ValidatorSet
	for _, x := range calls.Method("platform.getValidatorsAt") {
		if x.Response.Result == nil {
			continue
		}
		var p struct {
			Height   json.RawMessage `json:"height"`
			SubnetID string          `json:"subnetID"`
		}
		Params(t, x, &p)
		c := ValidatorSet{SubnetID: constants.PrimaryNetworkID, Height: strings.Trim(string(p.Height), `"`),
			Set: map[ids.NodeID]Validator{}}
		if p.SubnetID != "" {
			id, err := ids.FromString(p.SubnetID)
			if err != nil {
				t.Fatalf("devnet: getValidatorsAt subnet: %v", err)
			}
			c.SubnetID = id
		}
		var r map[string]struct {
			PublicKey string `json:"publicKey"`
			Weight    string `json:"weight"`
		}
		Result(t, x, &r)
		for id, v := range r {
			rv := Validator{PKHex: v.PublicKey}
			var err error
			if rv.NodeID, err = ids.NodeIDFromString(id); err != nil {
				t.Fatalf("devnet: getValidatorsAt: %v", err)
			}
			if v.PublicKey != "" {
				b, err := hex.DecodeString(strings.TrimPrefix(v.PublicKey, "0x"))
				if err != nil {
					t.Fatalf("devnet: getValidatorsAt key of %s: %v", id, err)
				}
				if rv.PublicKey, err = bls.PublicKeyFromCompressedBytes(b); err != nil {
					t.Fatalf("devnet: getValidatorsAt key of %s: %v", id, err)
				}
			}
			if rv.Weight, err = strconv.ParseUint(v.Weight, 10, 64); err != nil {
				t.Fatalf("devnet: getValidatorsAt weight of %s: %v", id, err)
			}
			c.Set[rv.NodeID] = rv
		}
		out = append(out, c)
	}
	return out
}

// ValidatorsOf returns the recorded platform.getValidatorsAt answer for
// subnetID (cb58) at height; it fails t when there is none.
func ValidatorsOf(t testing.TB, calls Calls, subnetID string, height uint64) map[ids.NodeID]Validator {
	t.Helper()
	for _, c := range ValidatorsAt(t, calls) {
		if c.SubnetID.String() == subnetID && c.Height == strconv.FormatUint(height, 10) {
			return c.Set
		}
	}
	t.Fatalf("devnet: no getValidatorsAt answer for %s at %d", subnetID, height)
	return nil
}
