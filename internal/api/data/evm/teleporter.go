package evm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/decode/icm"
)

// Transaction directions of TeleporterMessageInfo (the document's
// TransactionDirectionType).
const (
	sourceTransaction      = "SOURCE_TRANSACTION"
	destinationTransaction = "DESTINATION_TRANSACTION"
)

// teleporterMessageInfo is the ICM message a transaction sent or received
// (GetTransactionResponse.teleporterMessageInfo), from the ICM index's events
// of that transaction; nil when it carries none.
//
// The schema holds one message: a transaction that sends or receives several
// gets its first by log index, a send or receive preferred to the other
// events (a fee addition is a source-side act, a retried execution a
// destination-side one). The other chain is named by its EVM chain id, as
// the EVM routes name chains, when the index knows the chain; else by its
// blockchain id (cb58), which is what the message itself carries.
func (h *handlers) teleporterMessageInfo(ctx context.Context, chainKey string, block int64, txHash string) (*TeleporterMessageInfo, error) {
	var id, event, src, dst, srcEVM, dstEVM string
	err := h.d.DB.QueryRowContext(ctx, `SELECT e.message_id, e.event, m.source_blockchain_id, m.destination_blockchain_id,
			COALESCE(cs.evm_chain_id, ''), COALESCE(cd.evm_chain_id, '')
		FROM icm_events e
		JOIN icm_messages m ON m.message_id = e.message_id
		LEFT JOIN chains cs ON cs.blockchain_id = m.source_blockchain_id
		LEFT JOIN chains cd ON cd.blockchain_id = m.destination_blockchain_id
		WHERE e.chain_key = $1 AND e.block_number = $2 AND e.tx_hash = $3 AND e.event IN ($4, $5, $6, $7, $8)
		ORDER BY CASE WHEN e.event IN ($4, $5) THEN 0 ELSE 1 END, e.log_index
		LIMIT 1`, chainKey, block, txHash,
		icm.EventSendCrossChainMessage, icm.EventReceiveCrossChainMessage,
		icm.EventAddFeeAmount, icm.EventMessageExecuted, icm.EventMessageExecutionFailed,
	).Scan(&id, &event, &src, &dst, &srcEVM, &dstEVM)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("teleporter message of tx %s: %w", txHash, err)
	}
	// The message id as the ICM routes serve it (hex without 0x).
	info := &TeleporterMessageInfo{TeleporterMessageID: strings.TrimPrefix(id, "0x")}
	switch event {
	case icm.EventSendCrossChainMessage, icm.EventAddFeeAmount:
		info.Direction, info.DestinationChainID = sourceTransaction, cmpOr(dstEVM, dst)
	default:
		info.Direction, info.SourceChainID = destinationTransaction, cmpOr(srcEVM, src)
	}
	return info, nil
}
