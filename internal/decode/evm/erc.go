package evm

import (
	"math/big"

	"github.com/ava-labs/libevm/common"
)

// Event signatures (keccak256 of the canonical event signature).
var (
	// Transfer(address,address,uint256): ERC-20 (3 topics) and ERC-721 (4 topics).
	topicTransfer = common.HexToHash("0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef")
	// TransferSingle(address,address,address,uint256,uint256)
	topicTransferSingle = common.HexToHash("0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62")
	// TransferBatch(address,address,address,uint256[],uint256[])
	topicTransferBatch = common.HexToHash("0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb")
)

// ercType is the token standard a transfer log's shape says.
type ercType uint8

const (
	ercNone ercType = iota
	erc20
	erc721
	erc1155
)

func (e ercType) String() string {
	switch e {
	case erc20:
		return "ERC-20"
	case erc721:
		return "ERC-721"
	case erc1155:
		return "ERC-1155"
	}
	return ""
}

// transfer is one decoded token movement. For ERC-721 value is 1 and id the
// token id; for ERC-20 id is empty.
type transfer struct {
	typ         ercType
	batch       int
	operator    common.Address
	hasOperator bool
	from, to    common.Address
	id          []byte // 32-byte big-endian word (nil for ERC-20)
	value       []byte // 32-byte big-endian word (nil for ERC-721: value 1)
}

// decodeTransfers appends the transfers a log encodes to dst. Logs that use a
// transfer signature but not the standard shape (wrong topic count, data
// length, non-address topics, malformed ABI) are not transfers.
func decodeTransfers(l *logEntry, dst []transfer) []transfer {
	if l.ntopics == 0 {
		return dst
	}
	switch l.topics[0] {
	case topicTransfer:
		switch {
		case l.ntopics == 3 && len(l.data) == 32:
			from, ok1 := topicAddress(&l.topics[1])
			to, ok2 := topicAddress(&l.topics[2])
			if ok1 && ok2 {
				dst = append(dst, transfer{typ: erc20, from: from, to: to, value: l.data[:32]})
			}
		case l.ntopics == 4 && len(l.data) == 0:
			from, ok1 := topicAddress(&l.topics[1])
			to, ok2 := topicAddress(&l.topics[2])
			if ok1 && ok2 {
				dst = append(dst, transfer{typ: erc721, from: from, to: to, id: l.topics[3][:]})
			}
		}
	case topicTransferSingle:
		if l.ntopics != 4 || len(l.data) != 64 {
			return dst
		}
		op, ok0 := topicAddress(&l.topics[1])
		from, ok1 := topicAddress(&l.topics[2])
		to, ok2 := topicAddress(&l.topics[3])
		if ok0 && ok1 && ok2 {
			dst = append(dst, transfer{typ: erc1155, operator: op, hasOperator: true, from: from, to: to,
				id: l.data[:32], value: l.data[32:64]})
		}
	case topicTransferBatch:
		if l.ntopics != 4 {
			return dst
		}
		op, ok0 := topicAddress(&l.topics[1])
		from, ok1 := topicAddress(&l.topics[2])
		to, ok2 := topicAddress(&l.topics[3])
		if !ok0 || !ok1 || !ok2 {
			return dst
		}
		ids, ok3 := abiWords(l.data, 0)
		vals, ok4 := abiWords(l.data, 32)
		if !ok3 || !ok4 || len(ids) != len(vals) {
			return dst
		}
		for i := 0; i < len(ids)/32; i++ {
			dst = append(dst, transfer{typ: erc1155, batch: i, operator: op, hasOperator: true, from: from, to: to,
				id: ids[i*32 : i*32+32], value: vals[i*32 : i*32+32]})
		}
	}
	return dst
}

// topicAddress reads an indexed address: 12 zero bytes then 20 address bytes.
func topicAddress(h *common.Hash) (common.Address, bool) {
	for _, b := range h[:12] {
		if b != 0 {
			return common.Address{}, false
		}
	}
	return common.BytesToAddress(h[12:]), true
}

// abiWords reads the dynamic uint256[] whose offset is the word at head in
// data, returning its elements as consecutive 32-byte words.
func abiWords(data []byte, head int) ([]byte, bool) {
	off, ok := abiUint(data, head)
	if !ok || off%32 != 0 {
		return nil, false
	}
	n, ok := abiUint(data, off)
	if !ok {
		return nil, false
	}
	start := off + 32
	if n > (len(data)-start)/32 {
		return nil, false
	}
	return data[start : start+n*32], true
}

// abiUint reads the word at pos as an offset or length that must index into data.
func abiUint(data []byte, p int) (int, bool) {
	if p < 0 || p+32 > len(data) {
		return 0, false
	}
	w := data[p : p+32]
	for _, b := range w[:24] {
		if b != 0 {
			return 0, false
		}
	}
	var v uint64
	for _, b := range w[24:] {
		v = v<<8 | uint64(b)
	}
	if v > uint64(len(data)) {
		return 0, false
	}
	return int(v), true
}

// wordDecimal renders a 32-byte big-endian word in base 10 using tmp.
func wordDecimal(w []byte, tmp *big.Int) string {
	hi := false
	for _, b := range w[:24] {
		if b != 0 {
			hi = true
			break
		}
	}
	if !hi {
		var v uint64
		for _, b := range w[24:] {
			v = v<<8 | uint64(b)
		}
		return uintDecimal(v)
	}
	return tmp.SetBytes(w).String()
}
