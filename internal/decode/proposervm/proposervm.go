// Package proposervm reads the proposervm wrapper of P- and X-chain blocks:
// the block as consensus accepted it (avalanchego's index API serves these),
// around the inner block the chain's VM parses (platform.getBlockByHeight and
// avm.getBlockByHeight serve those). The wrapper carries what the data
// service's proposerDetails show: its own ID and parent, the proposer's node
// ID, the P-chain height it was built against, and its timestamp.
package proposervm

import (
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/vms/proposervm/block"
)

// Details is a wrapper's header. Option wrappers (the commit/abort children
// of a proposal block) have no proposer, P-chain height or timestamp of their
// own: those fields are zero.
type Details struct {
	ID           ids.ID
	ParentID     ids.ID
	NodeID       ids.NodeID // ids.EmptyNodeID when unsigned (anyone may build after the proposer window)
	PChainHeight uint64
	Timestamp    int64 // unix seconds
	Option       bool
}

// ErrNotWrapper is raw that neither is the inner block nor wraps it.
var ErrNotWrapper = errors.New("neither the block nor its proposervm wrapper")

// Unwrap returns the inner block of raw. raw is either the inner block itself
// (its sha256 is innerID: no details) or a proposervm wrapper whose inner
// block hashes to innerID. Comparing IDs keeps the two apart without guessing
// from the bytes. An empty innerID means raw is the inner block.
func Unwrap(raw []byte, innerID string) ([]byte, *Details, error) {
	if innerID == "" || ids.ID(hashing.ComputeHash256Array(raw)).String() == innerID {
		return raw, nil, nil
	}
	inner, d, err := Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("proposervm: block %s: %w (%w)", innerID, ErrNotWrapper, err)
	}
	if got := ids.ID(hashing.ComputeHash256Array(inner)).String(); got != innerID {
		return nil, nil, fmt.Errorf("proposervm: wrapper %s holds block %s, not %s: %w", d.ID, got, innerID, ErrNotWrapper)
	}
	return inner, d, nil
}

// Parse reads a proposervm wrapper (without checking its signature: the node
// accepted it) and returns its inner block and header.
func Parse(raw []byte) ([]byte, *Details, error) {
	b, err := block.ParseWithoutVerification(raw)
	if err != nil {
		return nil, nil, err
	}
	d := &Details{ID: b.ID(), ParentID: b.ParentID(), Option: true}
	if sb, ok := b.(block.SignedBlock); ok {
		d.Option = false
		d.NodeID = sb.Proposer()
		d.PChainHeight = sb.PChainHeight()
		d.Timestamp = sb.Timestamp().Unix()
	}
	return b.Block(), d, nil
}

// Row is Details as px_blocks stores them: empty strings and zeros for a
// block without a wrapper, and no node ID for an unsigned or option wrapper.
func (d *Details) Row() (id, parentID, nodeID string, pChainHeight, timestamp int64) {
	if d == nil {
		return "", "", "", 0, 0
	}
	if d.NodeID != ids.EmptyNodeID {
		nodeID = d.NodeID.String()
	}
	return d.ID.String(), d.ParentID.String(), nodeID, int64(d.PChainHeight), d.Timestamp
}
