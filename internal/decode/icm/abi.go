// Package icm indexes ICM (Teleporter) messages: it decodes the events of the
// TeleporterMessenger v1 contract found in EVM logs, keeps one record per
// message ID joined across chains (whatever order the chains are indexed in),
// and reads those records back for the API.
package icm

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"math/big"
	"sync"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/libevm/accounts/abi"
	"github.com/ava-labs/libevm/common"
	"github.com/ava-labs/libevm/crypto"
)

// DefaultMessengerAddress is the canonical TeleporterMessenger v1 deployment
// (Nick's method: the same address on every chain).
const DefaultMessengerAddress = "0x253b2784c75e510dD0fF1da844684a1aC0aa5fcf"

// The events of ITeleporterMessenger v1 (ava-labs/teleporter, later
// icm-contracts, contracts/teleporter/ITeleporterMessenger.sol).
const (
	EventBlockchainIDInitialized  = "BlockchainIDInitialized"
	EventSendCrossChainMessage    = "SendCrossChainMessage"
	EventAddFeeAmount             = "AddFeeAmount"
	EventMessageExecutionFailed   = "MessageExecutionFailed"
	EventMessageExecuted          = "MessageExecuted"
	EventReceiveCrossChainMessage = "ReceiveCrossChainMessage"
	EventReceiptReceived          = "ReceiptReceived"
	EventRelayerRewardsRedeemed   = "RelayerRewardsRedeemed"
)

//go:embed teleporter_messenger_v1.abi.json
var abiJSON []byte

// loadABI parses the embedded ABI once; it is immutable afterwards.
var loadABI = sync.OnceValues(func() (*abi.ABI, error) {
	a, err := abi.JSON(bytes.NewReader(abiJSON))
	if err != nil {
		return nil, fmt.Errorf("icm: parse TeleporterMessenger ABI: %w", err)
	}
	return &a, nil
})

// ABI returns the TeleporterMessenger v1 ABI (events and calculateMessageID).
func ABI() (*abi.ABI, error) { return loadABI() }

// TeleporterMessageReceipt is the contract's struct of the same name. Field
// order and names follow the ABI tuple (the abi package copies by position).
type TeleporterMessageReceipt struct {
	ReceivedMessageNonce *big.Int
	RelayerRewardAddress common.Address
}

// TeleporterMessage is the message struct carried by send, receive and
// failed-execution events.
type TeleporterMessage struct {
	MessageNonce            *big.Int
	OriginSenderAddress     common.Address
	DestinationBlockchainID [32]byte
	DestinationAddress      common.Address
	RequiredGasLimit        *big.Int
	AllowedRelayerAddresses []common.Address
	Receipts                []TeleporterMessageReceipt
	Message                 []byte
}

// TeleporterFeeInfo is the fee token and amount of a message.
type TeleporterFeeInfo struct {
	FeeTokenAddress common.Address
	Amount          *big.Int
}

// Event is one decoded TeleporterMessenger log. Which fields are set depends on Name.
type Event struct {
	Name      string
	MessageID common.Hash
	// OtherChainID is the indexed blockchain ID of the other side: the
	// destination for SendCrossChainMessage and ReceiptReceived, the source for
	// ReceiveCrossChainMessage, MessageExecuted and MessageExecutionFailed.
	OtherChainID   ids.ID
	Message        *TeleporterMessage // Send, Receive, ExecutionFailed
	Fee            *TeleporterFeeInfo // Send, AddFeeAmount (running total), ReceiptReceived
	Deliverer      common.Address     // Receive
	RewardRedeemer common.Address     // Receive
	Relayer        common.Address     // ReceiptReceived: relayerRewardAddress
	Redeemer       common.Address     // RelayerRewardsRedeemed
	Asset          common.Address     // RelayerRewardsRedeemed
	Amount         *big.Int           // RelayerRewardsRedeemed
}

// ErrNotTeleporter marks a log whose first topic is no TeleporterMessenger event.
var ErrNotTeleporter = errors.New("not a TeleporterMessenger event")

// DecodeEvent decodes one log of a TeleporterMessenger contract. Malformed
// logs are errors, never panics: the abi package is guarded with recover
// because log data is input we do not control.
func DecodeEvent(topics []common.Hash, data []byte) (ev *Event, err error) {
	a, err := loadABI()
	if err != nil {
		return nil, err
	}
	if len(topics) == 0 {
		return nil, ErrNotTeleporter
	}
	desc, lerr := a.EventByID(topics[0])
	if lerr != nil {
		return nil, ErrNotTeleporter
	}
	want := 1
	for _, in := range desc.Inputs {
		if in.Indexed {
			want++
		}
	}
	if len(topics) != want {
		return nil, fmt.Errorf("%s: %d topics, want %d", desc.Name, len(topics), want)
	}
	defer func() {
		if r := recover(); r != nil {
			ev, err = nil, fmt.Errorf("%s: malformed data: %v", desc.Name, r)
		}
	}()
	args := desc.Inputs.NonIndexed()
	values, err := args.Unpack(data)
	if err != nil {
		return nil, fmt.Errorf("%s: unpack data: %w", desc.Name, err)
	}
	ev = &Event{Name: desc.Name}
	t := topics[1:]
	switch desc.Name {
	case EventSendCrossChainMessage:
		var d struct {
			Message TeleporterMessage
			FeeInfo TeleporterFeeInfo
		}
		err = args.Copy(&d, values)
		ev.MessageID, ev.OtherChainID = t[0], ids.ID(t[1])
		ev.Message, ev.Fee = &d.Message, &d.FeeInfo
	case EventAddFeeAmount:
		var d struct{ UpdatedFeeInfo TeleporterFeeInfo }
		err = args.Copy(&d, values)
		ev.MessageID, ev.Fee = t[0], &d.UpdatedFeeInfo
	case EventMessageExecutionFailed:
		var d struct{ Message TeleporterMessage }
		err = args.Copy(&d, values)
		ev.MessageID, ev.OtherChainID, ev.Message = t[0], ids.ID(t[1]), &d.Message
	case EventMessageExecuted:
		ev.MessageID, ev.OtherChainID = t[0], ids.ID(t[1])
	case EventReceiveCrossChainMessage:
		var d struct {
			RewardRedeemer common.Address
			Message        TeleporterMessage
		}
		err = args.Copy(&d, values)
		ev.MessageID, ev.OtherChainID, ev.Deliverer = t[0], ids.ID(t[1]), topicAddress(t[2])
		ev.RewardRedeemer, ev.Message = d.RewardRedeemer, &d.Message
	case EventReceiptReceived:
		var d struct{ FeeInfo TeleporterFeeInfo }
		err = args.Copy(&d, values)
		ev.MessageID, ev.OtherChainID, ev.Relayer = t[0], ids.ID(t[1]), topicAddress(t[2])
		ev.Fee = &d.FeeInfo
	case EventRelayerRewardsRedeemed:
		var d struct{ Amount *big.Int }
		err = args.Copy(&d, values)
		ev.Redeemer, ev.Asset, ev.Amount = topicAddress(t[0]), topicAddress(t[1]), d.Amount
	case EventBlockchainIDInitialized:
		// Carries only the emitting chain's own ID; nothing to index.
	default:
		return nil, ErrNotTeleporter
	}
	if err != nil {
		return nil, fmt.Errorf("%s: copy data: %w", desc.Name, err)
	}
	return ev, nil
}

func topicAddress(h common.Hash) common.Address { return common.BytesToAddress(h[12:]) }

// CalculateMessageID is TeleporterMessenger v1's calculateMessageID:
// keccak256(abi.encode(address(this), sourceBlockchainID, destinationBlockchainID, nonce)).
// The contract's own address is part of the hash, so the ID also names the
// messenger instance (the same on every chain for the canonical deployment).
func CalculateMessageID(messenger common.Address, source, destination ids.ID, nonce *big.Int) (common.Hash, error) {
	if nonce == nil || nonce.Sign() < 0 || nonce.BitLen() > 256 {
		return common.Hash{}, fmt.Errorf("icm: message nonce %v is not a uint256", nonce)
	}
	// abi.encode of static types is four 32-byte words.
	buf := make([]byte, 128)
	copy(buf[12:32], messenger[:])
	copy(buf[32:64], source[:])
	copy(buf[64:96], destination[:])
	nonce.FillBytes(buf[96:128])
	return crypto.Keccak256Hash(buf), nil
}
