package xchain

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/codec"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/utils/wrappers"
	"github.com/ava-labs/avalanchego/vms/avm/block"
	"github.com/ava-labs/avalanchego/vms/avm/fxs"
	"github.com/ava-labs/avalanchego/vms/avm/txs"
	"github.com/ava-labs/avalanchego/vms/nftfx"
	"github.com/ava-labs/avalanchego/vms/propertyfx"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
)

// newParser builds the AVM block parser the way the node does (vms/avm/vm.go):
// the fxs in the primary network's X-chain order, so type IDs match.
func newParser() (block.Parser, error) {
	p, err := block.NewParser([]fxs.Fx{&secp256k1fx.Fx{}, &nftfx.Fx{}, &propertyfx.Fx{}})
	if err != nil {
		return nil, fmt.Errorf("xchain: build parser: %w", err)
	}
	return p, nil
}

// Block is a decoded X-chain block.
type Block struct {
	ID       ids.ID
	ParentID ids.ID
	Height   uint64
	Time     uint64
	Size     int
	Txs      []Tx
}

// Tx is one tx of a block: decoded, or (Tx nil) raw bytes that did not decode.
type Tx struct {
	ID  ids.ID
	Tx  *txs.Tx
	Raw []byte // signed bytes; for an undecodable tx, the rest of the block from it on
	Err error  // why it did not decode
}

// headerLen is codec version (2) + type ID (4) + parent (32) + height (8) +
// time (8) + merkle root (32) + tx count (4).
const headerLen = 2 + 4 + 32 + 8 + 8 + 32 + 4

// DecodeBlock parses X-chain block bytes (no hex checksum). When a tx inside
// does not decode (e.g. a tx type newer than this build), the block header and
// the txs before it are still returned, and the rest of the block is one Tx
// with Err set: txs in a block have no length prefix, so the bytes after an
// undecodable tx cannot be split. Its ID is sha256 of those bytes with the
// codec version, which is the real tx ID when it is the block's last tx.
func DecodeBlock(p block.Parser, raw []byte) (*Block, error) {
	blk, err := parseBlock(p, raw)
	if err == nil {
		out := &Block{ID: blk.ID(), ParentID: blk.Parent(), Height: blk.Height(), Time: uint64(blk.Timestamp().Unix()), Size: len(raw)}
		for _, t := range blk.Txs() {
			out.Txs = append(out.Txs, Tx{ID: t.ID(), Tx: t, Raw: t.Bytes()})
		}
		return out, nil
	}
	out, ferr := decodeTxByTx(p, raw)
	if ferr != nil {
		return nil, fmt.Errorf("xchain: decode block: %w (header: %v)", err, ferr)
	}
	return out, nil
}

func parseBlock(p block.Parser, raw []byte) (blk block.Block, err error) {
	defer func() {
		if r := recover(); r != nil {
			blk, err = nil, fmt.Errorf("parser panicked: %v", r)
		}
	}()
	return p.ParseBlock(raw)
}

func decodeTxByTx(p block.Parser, raw []byte) (*Block, error) {
	if len(raw) < headerLen {
		return nil, errors.New("shorter than a block header")
	}
	// The header must be a StandardBlock's: compare with an empty one's prefix.
	var empty block.Block = &block.StandardBlock{}
	want, err := p.Codec().Marshal(block.CodecVersion, &empty)
	if err != nil {
		return nil, fmt.Errorf("marshal empty block: %w", err)
	}
	if !bytes.Equal(raw[:6], want[:6]) {
		return nil, fmt.Errorf("not a StandardBlock (prefix %x)", raw[:6])
	}
	c, ok := p.CodecRegistry().(codec.Codec)
	if !ok {
		return nil, fmt.Errorf("codec registry is %T", p.CodecRegistry())
	}
	pk := &wrappers.Packer{Bytes: raw, Offset: 6}
	out := &Block{ID: hashing.ComputeHash256Array(raw), Size: len(raw)}
	copy(out.ParentID[:], pk.UnpackFixedBytes(ids.IDLen))
	out.Height = pk.UnpackLong()
	out.Time = pk.UnpackLong()
	pk.UnpackFixedBytes(ids.IDLen) // merkle root, always empty
	n := pk.UnpackInt()
	if pk.Err != nil {
		return nil, fmt.Errorf("header: %w", pk.Err)
	}
	for i := uint32(0); i < n && pk.Offset < len(raw); i++ {
		start := pk.Offset
		t := &txs.Tx{}
		if err := unmarshalFrom(c, pk, t); err != nil {
			rest := withVersion(raw[start:])
			out.Txs = append(out.Txs, Tx{ID: hashing.ComputeHash256Array(rest), Raw: rest, Err: err})
			return out, nil
		}
		signed := withVersion(raw[start:pk.Offset])
		unsignedLen, err := p.Codec().Size(txs.CodecVersion, &t.Unsigned)
		if err == nil && unsignedLen > len(signed) {
			err = fmt.Errorf("unsigned size %d above signed size %d", unsignedLen, len(signed))
		}
		if err != nil {
			out.Txs = append(out.Txs, Tx{ID: hashing.ComputeHash256Array(signed), Raw: signed, Err: fmt.Errorf("size of unsigned tx: %w", err)})
			continue
		}
		t.SetBytes(signed[:unsignedLen], signed)
		out.Txs = append(out.Txs, Tx{ID: t.ID(), Tx: t, Raw: signed})
	}
	return out, nil
}

func unmarshalFrom(c codec.Codec, pk *wrappers.Packer, t *txs.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("codec panicked: %v", r)
		}
	}()
	if err := c.UnmarshalFrom(pk, t); err != nil {
		return err
	}
	return pk.Err
}

// withVersion prefixes tx bytes cut from a block with the codec version, as
// the tx's own bytes (and so its ID) carry it.
func withVersion(b []byte) []byte {
	out := make([]byte, 0, 2+len(b))
	out = append(out, byte(txs.CodecVersion>>8), byte(txs.CodecVersion))
	return append(out, b...)
}
