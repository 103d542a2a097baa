package export

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"strconv"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// EVMHeader is the header of TRANSACTION_EXPORT_EVM files. One row per
// native transaction (row_type NATIVE) and per ERC-20/721/1155 transfer
// (row_type ERC-20, ERC-721, ERC-1155; a TransferBatch gives one row per id)
// that involves one of the addresses — as sender, recipient or created
// contract of the transaction, or as from or to of the transfer — in a block
// of the date range. Rows are ordered by day, then by chain in request
// order, then by block, transaction index, and log/batch index (a
// transaction's native row precedes its transfers).
//
//	chain_id          EVM chain id
//	block_number      decimal
//	block_hash        0x-hex
//	block_timestamp   unix seconds
//	datetime_utc      RFC 3339, UTC
//	tx_hash           0x-hex
//	tx_index          position of the transaction in the block
//	row_type          NATIVE, ERC-20, ERC-721 or ERC-1155
//	log_index         transfers: the log's index in the block; NATIVE: empty
//	batch_index       transfers: position in a TransferBatch (else 0); NATIVE: empty
//	from_address      0x-lowercase
//	to_address        0x-lowercase; empty for a contract creation
//	value             decimal, smallest unit: wei (NATIVE), token units (ERC-20, ERC-1155), 1 (ERC-721)
//	token_address     transfers: the token contract
//	token_symbol      transfers: the token's symbol when known
//	token_decimals    transfers: the token's decimals when known
//	token_id          ERC-721 / ERC-1155 token id (decimal)
//	fee_wei           NATIVE: gas used × effective gas price, paid by the sender; transfers: empty
//	gas_used          NATIVE: gas used
//	gas_price_wei     NATIVE: effective gas price
//	status            success or failed (the transaction's receipt status)
//	method_id         0x + the first 4 input bytes of the transaction (empty when shorter)
//	contract_address  NATIVE: the contract the transaction created
var EVMHeader = []string{"chain_id", "block_number", "block_hash", "block_timestamp", "datetime_utc", "tx_hash",
	"tx_index", "row_type", "log_index", "batch_index", "from_address", "to_address", "value", "token_address",
	"token_symbol", "token_decimals", "token_id", "fee_wei", "gas_used", "gas_price_wei", "status", "method_id",
	"contract_address"}

// evmSource is the rows of one EVM chain.
type evmSource struct {
	db      *store.DB
	chain   string // chain key
	chainID string // EVM chain id as written
	tip     int64  // last block exported: the indexed tip when the run began
	query   string
	args    []any // $4.. (the addresses twice)
	rec     []string
	tokens  map[string][2]string
	fee     big.Int
	gp      big.Int
}

func newEVMSource(ctx context.Context, db *store.DB, chainKey, chainID string, tip int64, addrs []string) *evmSource {
	n := len(addrs)
	// Placeholders are numbered in order of appearance (SQLite binds them so).
	in1 := placeholders(4, n)
	in2 := placeholders(4+n, n)
	in3 := placeholders(4+2*n, n)
	in4 := placeholders(4+3*n, n)
	args := make([]any, 0, 4*n)
	for range 4 {
		for _, a := range addrs {
			args = append(args, store.Hex(a))
		}
	}
	// One ordered stream: the native transactions linked to an address
	// (evm_address_txs: sender, recipient, created contract), the transfers
	// from one, and the transfers to one not from one. Each branch walks an
	// address index, then joins the transaction by primary key (CROSS JOIN
	// keeps SQLite from scanning the day's transactions instead). A
	// transaction linked to two of the addresses appears twice, adjacent;
	// day() drops the repeat.
	transfers := func(index, cond string) string {
		// SQLite would rather walk the day's transfers in key order than an
		// address index and sort; on a busy chain that reads every transfer
		// of the day.
		hint := db.IndexedBy(ctx, index)
		return `SELECT 1, x.block_number, x.tx_index, x.log_index, x.batch_index, x.tx_hash, t.block_hash, x.block_time,
			x.from_addr, x.to_addr, x.value, x.erc_type, x.token, x.token_id, 0, '', t.status, t.method_id, ''
		FROM evm_transfers x` + hint + ` CROSS JOIN evm_txs t
		WHERE x.chain_key = $1 AND x.block_number >= $2 AND x.block_number <= $3 AND ` + cond + `
			AND t.chain_key = x.chain_key AND t.block_number = x.block_number AND t.tx_index = x.tx_index`
	}
	q := `SELECT 0, t.block_number, t.tx_index, -1, 0, t.hash, t.block_hash, t.block_time, t.from_addr, t.to_addr,
			t.value, '', '', '', t.gas_used, t.gas_price, t.status, t.method_id, t.contract_address
		FROM evm_address_txs a CROSS JOIN evm_txs t
		WHERE a.chain_key = $1 AND a.block_number >= $2 AND a.block_number <= $3 AND a.address IN (` + in1 + `)
			AND t.chain_key = a.chain_key AND t.block_number = a.block_number AND t.tx_index = a.tx_index
	UNION ALL ` + transfers("evm_transfers_from", `x.from_addr IN (`+in2+`)`) + `
	UNION ALL ` + transfers("evm_transfers_to", `x.to_addr IN (`+in3+`) AND x.from_addr NOT IN (`+in4+`)`) + `
	ORDER BY 2, 3, 4, 5`
	return &evmSource{db: db, chain: chainKey, chainID: chainID, tip: tip, query: q, args: args,
		rec: make([]string, len(EVMHeader))}
}

func (s *evmSource) next(ctx context.Context, from int64) (int64, bool, error) {
	var t int64
	err := s.db.QueryRowContext(ctx, `SELECT timestamp FROM evm_blocks WHERE chain_key = $1 AND timestamp >= $2
		AND number <= $3 ORDER BY timestamp, number LIMIT 1`, s.chain, from, s.tip).Scan(&t)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("export: next block of %s: %w", s.chain, err)
	}
	return t, true, nil
}

// blocks returns the first and last block of [lo, hi) up to the tip.
func (s *evmSource) blocks(ctx context.Context, lo, hi int64) (int64, int64, bool, error) {
	var first, last int64
	err := s.db.QueryRowContext(ctx, `SELECT number FROM evm_blocks WHERE chain_key = $1 AND timestamp >= $2
		AND timestamp < $3 AND number <= $4 ORDER BY timestamp, number LIMIT 1`, s.chain, lo, hi, s.tip).Scan(&first)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, nil
	}
	if err == nil {
		err = s.db.QueryRowContext(ctx, `SELECT number FROM evm_blocks WHERE chain_key = $1 AND timestamp >= $2
			AND timestamp < $3 AND number <= $4 ORDER BY timestamp DESC, number DESC LIMIT 1`, s.chain, lo, hi, s.tip).Scan(&last)
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("export: blocks of %s: %w", s.chain, err)
	}
	return first, last, true, nil
}

func (s *evmSource) day(ctx context.Context, lo, hi int64, emit func([]string) error) error {
	first, last, ok, err := s.blocks(ctx, lo, hi)
	if err != nil || !ok {
		return err
	}
	args := append([]any{s.chain, first, last}, s.args...)
	rows, err := s.db.QueryContext(ctx, s.query, args...)
	if err != nil {
		return fmt.Errorf("export: read %s rows: %w", s.chain, err)
	}
	defer rows.Close()
	var (
		kind, block, txIndex, logIndex, batch, blockTime, gasUsed, status int64
		prevKind, prevBlock, prevTx                                       int64 = -1, -1, -1
		hash, blockHash, from, to, value, ercType, token, tokenID         string
		gasPrice, method, contract                                        string
	)
	for rows.Next() {
		if err := rows.Scan(&kind, &block, &txIndex, &logIndex, &batch, store.ScanHex(&hash), store.ScanHex(&blockHash),
			&blockTime, store.ScanHex(&from), store.ScanHex(&to), &value, &ercType, store.ScanHex(&token), &tokenID,
			&gasUsed, &gasPrice, &status, &method, store.ScanHex(&contract)); err != nil {
			return fmt.Errorf("export: read %s rows: %w", s.chain, err)
		}
		if kind == 0 && prevKind == 0 && block == prevBlock && txIndex == prevTx {
			continue // the same transaction through a second address
		}
		prevKind, prevBlock, prevTx = kind, block, txIndex
		r := s.rec
		r[0], r[1], r[2], r[3], r[4] = s.chainID, strconv.FormatInt(block, 10), blockHash,
			strconv.FormatInt(blockTime, 10), datetime(blockTime)
		r[5], r[6] = hash, strconv.FormatInt(txIndex, 10)
		r[10], r[11], r[12] = from, to, value
		r[20], r[21] = txStatus(status), method
		if kind == 0 {
			r[7], r[8], r[9] = "NATIVE", "", ""
			r[13], r[14], r[15], r[16] = "", "", "", ""
			r[17], r[18], r[19] = s.feeOf(gasUsed, gasPrice), strconv.FormatInt(gasUsed, 10), gasPrice
			r[22] = contract
		} else {
			meta, err := s.token(ctx, token)
			if err != nil {
				return err
			}
			r[7], r[8], r[9] = ercType, strconv.FormatInt(logIndex, 10), strconv.FormatInt(batch, 10)
			r[13], r[14], r[15], r[16] = token, meta[0], meta[1], tokenID
			r[17], r[18], r[19], r[22] = "", "", "", ""
		}
		if err := emit(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export: read %s rows: %w", s.chain, err)
	}
	return nil
}

// token returns a token's symbol (sanitized) and decimals as the index
// knows them, remembered for the run (bounded): a few tokens make most rows.
func (s *evmSource) token(ctx context.Context, addr string) ([2]string, error) {
	if v, ok := s.tokens[addr]; ok {
		return v, nil
	}
	var sym sql.NullString
	var dec sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT symbol, decimals FROM evm_contracts WHERE chain_key = $1 AND address = $2`,
		s.chain, addr).Scan(&sym, &dec)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return [2]string{}, fmt.Errorf("export: token %s: %w", addr, err)
	}
	v := [2]string{sanitizeText(sym.String), ""}
	if dec.Valid {
		v[1] = strconv.FormatInt(dec.Int64, 10)
	}
	if s.tokens == nil || len(s.tokens) >= 10000 {
		s.tokens = map[string][2]string{}
	}
	s.tokens[addr] = v
	return v, nil
}

func (s *evmSource) feeOf(gasUsed int64, gasPrice string) string {
	if _, ok := s.gp.SetString(gasPrice, 10); !ok {
		return ""
	}
	s.fee.SetInt64(gasUsed)
	return s.fee.Mul(&s.fee, &s.gp).String()
}

func txStatus(s int64) string {
	if s == 1 {
		return "success"
	}
	return "failed"
}

// sanitizeText keeps free text (token symbols, names: chosen by whoever
// deployed the token) from being read as a formula by spreadsheets.
func sanitizeText(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}
