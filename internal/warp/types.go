package warp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
)

var (
	// ErrNotFound means the index does not know the thing asked for. From
	// AggregateForTx it means the tx is unknown (HTTP 404). Implementations of
	// ValidatorSets and L1Txs return it (possibly wrapped) for unknown subnets,
	// chains, txs and validations.
	ErrNotFound = errors.New("not found")

	// ErrNotPChainTx may be returned by L1Txs.PChainTx when the id names a
	// known transaction of another primary-network chain (X-chain). It makes
	// AggregateForTx answer 400 instead of 404.
	ErrNotPChainTx = errors.New("not a platform-chain transaction")

	// ErrUnknownHeight is returned by ValidatorSets.ValidatorSet for a P-chain
	// height above the indexed tip (HTTP 400).
	ErrUnknownHeight = errors.New("P-chain height not indexed")
)

// Validator is one validator of a subnet at a P-chain height, as the P-chain
// reports it (platform.getValidatorsAt).
type Validator struct {
	NodeID ids.NodeID
	// PublicKey is the validator's BLS key. Nil when the validator has none
	// (or is an inactive L1 validator, which avalanchego reports under the empty
	// node id without a key): its weight counts toward the total weight but it
	// cannot sign.
	PublicKey *bls.PublicKey
	Weight    uint64
}

// ValidatorSets is what the aggregator needs from the P-chain index.
type ValidatorSets interface {
	// ProposedHeight is the P-chain height whose validator set signs when the
	// request gives no height (platform.getProposedHeight).
	ProposedHeight(ctx context.Context) (uint64, error)
	// ValidatorSet returns the validators of subnetID at P-chain height
	// pHeight, in any order. It returns ErrNotFound when the subnet does not
	// exist at that height and ErrUnknownHeight when the height is above the
	// indexed tip. The primary network is constants.PrimaryNetworkID.
	ValidatorSet(ctx context.Context, subnetID ids.ID, pHeight uint64) ([]Validator, error)
	// SubnetOfChain returns the subnet that validates blockchain chainID
	// (constants.PrimaryNetworkID for the X- and C-chains), or ErrNotFound.
	// The aggregator answers the P-chain (ids.Empty) itself.
	SubnetOfChain(ctx context.Context, chainID ids.ID) (ids.ID, error)
}

// L1Txs is what the aggregator needs from the P-chain tx index to build the
// P-chain's L1 messages (ACP-77) and their justifications.
type L1Txs interface {
	// PChainTx returns the accepted, signed P-chain tx txID (as parsed by
	// txs.Parse(txs.Codec, bytes)), ErrNotFound when the index does not know
	// it, or ErrNotPChainTx when it is a tx of another primary-network chain.
	PChainTx(ctx context.Context, txID ids.ID) (*txs.Tx, error)
	// ValidationTx returns the id of the accepted tx that created the L1
	// validation validationID: the ConvertSubnetToL1Tx of an initial validator
	// (validationID = subnetID.Append(index)) or the RegisterL1ValidatorTx
	// (validationID = hash of its RegisterL1ValidatorMessage payload). It
	// returns ErrNotFound if there is none.
	ValidationTx(ctx context.Context, validationID ids.ID) (ids.ID, error)
	// ConversionTx returns the id of the ConvertSubnetToL1Tx of subnetID, or
	// ErrNotFound if the subnet was not converted to an L1.
	ConversionTx(ctx context.Context, subnetID ids.ID) (ids.ID, error)
}

// Peer is a node to connect to: a bootstrap peer or an entry of info.peers.
type Peer struct {
	NodeID ids.NodeID
	Addr   netip.AddrPort
}

// PeerLister lists known peers with their public IPs, typically the
// configured avalanchego node's info.peers (plus the node itself from
// info.getNodeID / info.getNodeIP). It helps the first connections; later the
// avalanchego peer-list gossip keeps validator IPs current.
type PeerLister interface {
	Peers(ctx context.Context) ([]Peer, error)
}

// RequestError is an invalid request (HTTP 400). Msg is safe to show to the
// client.
type RequestError struct {
	Msg string
}

func (e *RequestError) Error() string { return e.Msg }

func badRequest(format string, args ...any) error {
	return &RequestError{Msg: fmt.Sprintf(format, args...)}
}

// QuorumError means the validators that signed do not carry the required
// weight (HTTP 503 Service Unavailable, see the package doc).
type QuorumError struct {
	SubnetID     ids.ID
	PChainHeight uint64
	// QuorumPercentage is the required percentage of Total.
	QuorumPercentage uint64
	// Signed is the weight of the validators whose valid signatures were
	// collected, Needed the smallest weight that meets the quorum, Total the
	// weight of the whole validator set.
	Signed, Needed, Total uint64
}

func (e *QuorumError) Error() string {
	if e.Total == 0 {
		return fmt.Sprintf("subnet %s has no validator weight at P-chain height %d", e.SubnetID, e.PChainHeight)
	}
	return fmt.Sprintf(
		"not enough signatures: validators with weight %d signed, %d of total weight %d needed (quorum %d%%) for subnet %s at P-chain height %d",
		e.Signed, e.Needed, e.Total, e.QuorumPercentage, e.SubnetID, e.PChainHeight,
	)
}
