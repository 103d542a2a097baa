package icm

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// Message statuses.
const (
	StatusPending                   = "pending"
	StatusDelivered                 = "delivered"
	StatusDeliveredSourceNotIndexed = "delivered_source_not_indexed"
	ERC20                           = "ERC-20"
)

// Record is one ICM message as the index knows it.
type Record struct {
	MessageID               common.Hash
	Contract                common.Address
	SourceBlockchainID      ids.ID
	DestinationBlockchainID ids.ID
	// EVM chain ids come from the chains table at read time: "" while that
	// chain is not indexed here.
	SourceEVMChainID      string
	DestinationEVMChainID string
	SourceChainIndexed    bool

	Nonce            string // decimal uint256
	From             common.Address
	To               common.Address
	RequiredGasLimit string
	AllowedRelayers  []common.Address
	Receipts         []Receipt
	Data             []byte

	Source      *SourceTx      // nil until the send is indexed
	Destination *DestinationTx // nil until the delivery is indexed
	Fee         *Fee           // nil without source-side events

	ReceiptDelivered bool
	ReceiptTxHash    common.Hash
	ReceiptTime      int64
	ReceiptRelayer   common.Address

	Executed          bool
	ExecutedTxHash    common.Hash // the delivery tx, or the successful retry
	ExecutedTime      int64
	ExecutionFailures int
	FailedTxHash      common.Hash

	SortTime int64
}

// Receipt is an entry of the message's receipts (deliveries it acknowledges).
type Receipt struct {
	ReceivedMessageNonce string
	RelayerRewardAddress common.Address
}

// SourceTx is the transaction that sent the message.
type SourceTx struct {
	ChainKey    string
	BlockNumber int64
	TxHash      common.Hash
	TxFrom      common.Address
	Time        int64
	GasUsed     int64
}

// DestinationTx is the transaction that delivered it.
type DestinationTx struct {
	ChainKey       string
	BlockNumber    int64
	TxHash         common.Hash
	Time           int64
	GasUsed        int64
	Deliverer      common.Address
	RewardRedeemer common.Address
}

// Fee is the relayer reward: the fee token and the current amount, with the
// token's metadata when the EVM indexer has it (nil fields otherwise).
type Fee struct {
	Token     common.Address
	Amount    string // decimal, smallest unit
	Additions int
	Name      *string
	Symbol    *string
	Decimals  *int
}

// Status derives the message status from what is indexed.
func (r *Record) Status() string {
	switch {
	case r.Source != nil && r.Destination != nil:
		return StatusDelivered
	case r.Source != nil:
		return StatusPending
	default:
		return StatusDeliveredSourceNotIndexed
	}
}

// Cursor is a keyset position in the newest-first order.
type Cursor struct {
	Time int64  `json:"t"`
	ID   string `json:"id"`
}

// Query filters a listing; nil fields do not filter.
type Query struct {
	SourceBlockchainID      *ids.ID
	DestinationBlockchainID *ids.ID
	AnyBlockchainID         *ids.ID // source or destination
	From                    *common.Address
	To                      *common.Address
	Address                 *common.Address // sender or destination address
	After                   *Cursor         // continue after this position
	Limit                   int
}

const selectCols = `m.message_id, m.contract_address, m.source_blockchain_id, m.destination_blockchain_id,
	COALESCE(cs.evm_chain_id, ''), COALESCE(cd.evm_chain_id, ''), cs.chain_key IS NOT NULL,
	m.message_nonce, m.origin_sender, m.destination_address, m.required_gas_limit, m.allowed_relayers, m.receipts,
	m.payload, m.sort_time,
	m.has_source, m.src_chain_key, m.src_block, m.src_tx_hash, m.src_tx_from, m.src_time, m.src_gas_used,
	m.fee_token, m.fee_amount, m.fee_additions, fc.name, fc.symbol, fc.decimals,
	m.receipt_delivered, m.receipt_tx_hash, m.receipt_time, m.receipt_relayer,
	m.has_destination, m.dst_chain_key, m.dst_block, m.dst_tx_hash, m.dst_time, m.dst_gas_used, m.deliverer, m.reward_redeemer,
	m.executed, m.executed_tx_hash, m.executed_time, m.execution_failures, m.failed_tx_hash`

// The fee token's metadata is the EVM indexer's (evm_contracts on the source chain).
const joins = ` LEFT JOIN chains cs ON cs.blockchain_id = m.source_blockchain_id
	LEFT JOIN chains cd ON cd.blockchain_id = m.destination_blockchain_id
	LEFT JOIN evm_contracts fc ON fc.chain_key = m.src_chain_key AND fc.address = m.fee_token`

// Get reads one message; store.ErrNotFound when the index has none.
func Get(ctx context.Context, db *store.DB, id common.Hash) (*Record, error) {
	rows, err := db.QueryContext(ctx, `SELECT `+selectCols+` FROM icm_messages m`+joins+` WHERE m.message_id = $1`, hashHex(id))
	if err != nil {
		return nil, fmt.Errorf("icm: get message: %w", err)
	}
	recs, err := scanRecords(rows)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, store.ErrNotFound
	}
	return &recs[0], nil
}

// List reads messages newest first (by source time, else destination time,
// then message ID). next is set when more messages follow.
func List(ctx context.Context, db *store.DB, q Query) (recs []Record, next *Cursor, err error) {
	if q.Limit <= 0 {
		return nil, nil, errors.New("icm: list: limit must be positive")
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	from := ` FROM icm_messages m`
	order := ` ORDER BY m.sort_time DESC, m.message_id DESC`
	timeCol, idCol := "m.sort_time", "m.message_id"
	if q.Address != nil {
		from = ` FROM icm_address_messages a JOIN icm_messages m ON m.message_id = a.message_id`
		where = append(where, "a.address = "+arg(lower(*q.Address)))
		order = ` ORDER BY a.sort_time DESC, a.message_id DESC`
		timeCol, idCol = "a.sort_time", "a.message_id"
	}
	if q.SourceBlockchainID != nil {
		where = append(where, "m.source_blockchain_id = "+arg(q.SourceBlockchainID.String()))
	}
	if q.DestinationBlockchainID != nil {
		where = append(where, "m.destination_blockchain_id = "+arg(q.DestinationBlockchainID.String()))
	}
	if q.AnyBlockchainID != nil {
		p := arg(q.AnyBlockchainID.String())
		where = append(where, "(m.source_blockchain_id = "+p+" OR m.destination_blockchain_id = "+p+")")
	}
	if q.From != nil {
		where = append(where, "m.origin_sender = "+arg(lower(*q.From)))
	}
	if q.To != nil {
		where = append(where, "m.destination_address = "+arg(lower(*q.To)))
	}
	if q.After != nil {
		t, id := arg(q.After.Time), arg(q.After.ID)
		where = append(where, "("+timeCol+" < "+t+" OR ("+timeCol+" = "+t+" AND "+idCol+" < "+id+"))")
	}
	query := `SELECT ` + selectCols + from + joins
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += order + " LIMIT " + arg(q.Limit+1)
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("icm: list messages: %w", err)
	}
	recs, err = scanRecords(rows)
	if err != nil {
		return nil, nil, err
	}
	if len(recs) > q.Limit {
		recs = recs[:q.Limit]
		last := recs[len(recs)-1]
		next = &Cursor{Time: last.SortTime, ID: hashHex(last.MessageID)}
	}
	return recs, next, nil
}

func scanRecords(rows *sql.Rows) ([]Record, error) {
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var (
			r                                         Record
			mid, contract, srcID, dstID               string
			from, to, relayersJSON, receiptsJSON      string
			hasSrc, hasDst, receiptDone, executed     bool
			src                                       SourceTx
			dst                                       DestinationTx
			srcTx, srcFrom, dstTx, deliverer, redeem  string
			feeToken, feeAmount                       string
			feeAdds                                   int
			name, symbol                              sql.NullString
			decimals                                  sql.NullInt64
			receiptTx, receiptRelayer, execTx, failTx string
		)
		if err := rows.Scan(&mid, &contract, &srcID, &dstID, &r.SourceEVMChainID, &r.DestinationEVMChainID, &r.SourceChainIndexed,
			&r.Nonce, &from, &to, &r.RequiredGasLimit, &relayersJSON, &receiptsJSON, &r.Data, &r.SortTime,
			&hasSrc, &src.ChainKey, &src.BlockNumber, &srcTx, &srcFrom, &src.Time, &src.GasUsed,
			&feeToken, &feeAmount, &feeAdds, &name, &symbol, &decimals,
			&receiptDone, &receiptTx, &r.ReceiptTime, &receiptRelayer,
			&hasDst, &dst.ChainKey, &dst.BlockNumber, &dstTx, &dst.Time, &dst.GasUsed, &deliverer, &redeem,
			&executed, &execTx, &r.ExecutedTime, &r.ExecutionFailures, &failTx); err != nil {
			return nil, fmt.Errorf("icm: read message: %w", err)
		}
		var err error
		r.MessageID = common.HexToHash(mid)
		r.Contract = common.HexToAddress(contract)
		if r.SourceBlockchainID, err = ids.FromString(srcID); err != nil {
			return nil, fmt.Errorf("icm: message %s: source blockchain id: %w", mid, err)
		}
		if r.DestinationBlockchainID, err = ids.FromString(dstID); err != nil {
			return nil, fmt.Errorf("icm: message %s: destination blockchain id: %w", mid, err)
		}
		r.From, r.To = common.HexToAddress(from), common.HexToAddress(to)
		var relayers []string
		if err := json.Unmarshal([]byte(relayersJSON), &relayers); err != nil {
			return nil, fmt.Errorf("icm: message %s: allowed relayers: %w", mid, err)
		}
		r.AllowedRelayers = make([]common.Address, len(relayers))
		for i, a := range relayers {
			r.AllowedRelayers[i] = common.HexToAddress(a)
		}
		var receipts []storedReceipt
		if err := json.Unmarshal([]byte(receiptsJSON), &receipts); err != nil {
			return nil, fmt.Errorf("icm: message %s: receipts: %w", mid, err)
		}
		r.Receipts = make([]Receipt, len(receipts))
		for i, rc := range receipts {
			r.Receipts[i] = Receipt{ReceivedMessageNonce: rc.Nonce, RelayerRewardAddress: common.HexToAddress(rc.Relayer)}
		}
		if hasSrc {
			src.TxHash, src.TxFrom = common.HexToHash(srcTx), common.HexToAddress(srcFrom)
			r.Source = &src
		}
		if hasDst {
			dst.TxHash, dst.Deliverer, dst.RewardRedeemer = common.HexToHash(dstTx), common.HexToAddress(deliverer), common.HexToAddress(redeem)
			r.Destination = &dst
		}
		if feeToken != "" {
			f := &Fee{Token: common.HexToAddress(feeToken), Amount: feeAmount, Additions: feeAdds}
			if name.Valid {
				f.Name = &name.String
			}
			if symbol.Valid {
				f.Symbol = &symbol.String
			}
			if decimals.Valid {
				d := int(decimals.Int64)
				f.Decimals = &d
			}
			r.Fee = f
		}
		r.ReceiptDelivered = receiptDone
		if receiptDone {
			r.ReceiptTxHash, r.ReceiptRelayer = common.HexToHash(receiptTx), common.HexToAddress(receiptRelayer)
		}
		r.Executed = executed
		if executed {
			r.ExecutedTxHash = common.HexToHash(execTx)
		}
		if failTx != "" {
			r.FailedTxHash = common.HexToHash(failTx)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("icm: read messages: %w", err)
	}
	return out, nil
}
