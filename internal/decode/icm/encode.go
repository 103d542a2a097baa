package icm

import (
	"fmt"
	"math/big"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/libevm/common"
)

// The encoders below build a log exactly as TeleporterMessenger v1 emits it
// (indexed arguments as topics after the event signature, the others
// ABI-encoded as data), from the contract's ABI. They are the inverse of
// DecodeEvent, used to build logs for tests and tools; transaction and block
// fields of the returned Log are left for the caller.

func encodeLog(messenger common.Address, name string, topics []common.Hash, nonIndexed ...any) (Log, error) {
	a, err := loadABI()
	if err != nil {
		return Log{}, err
	}
	ev, ok := a.Events[name]
	if !ok {
		return Log{}, fmt.Errorf("icm: no event %s in the ABI", name)
	}
	data, err := ev.Inputs.NonIndexed().Pack(nonIndexed...)
	if err != nil {
		return Log{}, fmt.Errorf("icm: pack %s: %w", name, err)
	}
	return Log{Address: messenger, Topics: append([]common.Hash{ev.ID}, topics...), Data: data}, nil
}

func addressTopic(a common.Address) common.Hash { return common.BytesToHash(a[:]) }

// SendCrossChainMessageLog is the log of _sendTeleporterMessage on the chain
// source: the message ID is computed from (messenger, source, destination, nonce).
func SendCrossChainMessageLog(messenger common.Address, source ids.ID, m TeleporterMessage, fee TeleporterFeeInfo) (Log, error) {
	id, err := CalculateMessageID(messenger, source, m.DestinationBlockchainID, m.MessageNonce)
	if err != nil {
		return Log{}, err
	}
	return encodeLog(messenger, EventSendCrossChainMessage,
		[]common.Hash{id, m.DestinationBlockchainID}, m, fee)
}

// ReceiveCrossChainMessageLog is the log of receiveCrossChainMessage on the
// chain m.DestinationBlockchainID for a message sent from source.
func ReceiveCrossChainMessageLog(messenger common.Address, source ids.ID, deliverer, rewardRedeemer common.Address, m TeleporterMessage) (Log, error) {
	id, err := CalculateMessageID(messenger, source, m.DestinationBlockchainID, m.MessageNonce)
	if err != nil {
		return Log{}, err
	}
	return encodeLog(messenger, EventReceiveCrossChainMessage,
		[]common.Hash{id, common.Hash(source), addressTopic(deliverer)}, rewardRedeemer, m)
}

// MessageExecutedLog is emitted on the destination after a successful
// execution, at delivery or on retryMessageExecution.
func MessageExecutedLog(messenger common.Address, messageID common.Hash, source ids.ID) (Log, error) {
	return encodeLog(messenger, EventMessageExecuted, []common.Hash{messageID, common.Hash(source)})
}

// MessageExecutionFailedLog is emitted on the destination when the call to the
// destination address fails (or it has no code).
func MessageExecutionFailedLog(messenger common.Address, messageID common.Hash, source ids.ID, m TeleporterMessage) (Log, error) {
	return encodeLog(messenger, EventMessageExecutionFailed, []common.Hash{messageID, common.Hash(source)}, m)
}

// AddFeeAmountLog is emitted on the source chain; updated is the running
// total (the contract emits sentMessageInfo[id].feeInfo after adding).
func AddFeeAmountLog(messenger common.Address, messageID common.Hash, updated TeleporterFeeInfo) (Log, error) {
	return encodeLog(messenger, EventAddFeeAmount, []common.Hash{messageID}, updated)
}

// ReceiptReceivedLog is emitted on the source chain when a receipt for
// messageID comes back inside a message from destination.
func ReceiptReceivedLog(messenger common.Address, messageID common.Hash, destination ids.ID, relayer common.Address, fee TeleporterFeeInfo) (Log, error) {
	return encodeLog(messenger, EventReceiptReceived,
		[]common.Hash{messageID, common.Hash(destination), addressTopic(relayer)}, fee)
}

// RelayerRewardsRedeemedLog is emitted by redeemRelayerRewards.
func RelayerRewardsRedeemedLog(messenger common.Address, redeemer, asset common.Address, amount *big.Int) (Log, error) {
	return encodeLog(messenger, EventRelayerRewardsRedeemed,
		[]common.Hash{addressTopic(redeemer), addressTopic(asset)}, amount)
}
