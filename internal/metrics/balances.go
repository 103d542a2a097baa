package metrics

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// HeldBalance is an address that held at least a threshold of a token at
// some time of a range, with its balance at the range's end.
type HeldBalance struct {
	Address string
	Balance *big.Int // at the end of the range
}

// BlockAt is the newest block of chain with time <= ts (-1 when none): the
// last entry of the time index up to ts, one seek (block times never
// decrease along the chain; MAX(number) read every earlier block's entry).
func BlockAt(ctx context.Context, db *store.DB, chain string, ts int64) (int64, error) {
	var n int64
	err := db.QueryRowContext(ctx, `SELECT number FROM evm_blocks WHERE chain_key = $1 AND timestamp <= $2
		ORDER BY timestamp DESC, number DESC LIMIT 1`, chain, ts).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return -1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("metrics: block at %d: %w", ts, err)
	}
	return n, nil
}

// HeldAbove lists the holders of token (an ERC-20, or an ERC-721 counted in
// tokens; ercType says which) whose balance was >= threshold after some
// block in (startBlock, endBlock] or at startBlock (the range's opening
// balance), ordered by their balance after endBlock descending, then
// address.
//
// It reads the token's holders in one index range of evm_token_balances
// (named for SQLite, which would rather walk the chain's every balance),
// only those whose largest balance ever (max_balance, kept by the EVM
// indexer) reached the threshold: no one else can have held it in any range.
// A holder's balance after endBlock is its current one when it has not
// changed since (no history read), else one primary-key seek of its
// balance history. Such a balance at or above the threshold, or a range
// holding the holder's whole history (its maximum is in it), decides; only
// the remaining holders' opening balance and range are read (heldInRange).
func HeldAbove(ctx context.Context, db *store.DB, chain, token, ercType string, threshold *big.Int, startBlock, endBlock int64) ([]HeldBalance, error) {
	thr := threshold.String()
	// Stored decimals compare without parsing: a longer number is larger,
	// equal lengths compare as text; a negative balance (a token whose logs
	// lie) holds nothing. Placeholders are numbered in order of first use,
	// as the store requires.
	rows, err := db.QueryContext(ctx, `SELECT b.holder, b.block_number, CASE WHEN b.block_number <= $1 THEN b.balance
		ELSE (SELECT h.balance `+holderHistory+` AND h.block_number <= $1 ORDER BY h.block_number DESC LIMIT 1) END
		FROM evm_token_balances b`+db.IndexedBy("evm_token_balances_token")+`
		WHERE b.chain_key = $2 AND b.token = $3 AND b.erc_type = $4 AND b.token_id = ''
		AND (LENGTH(b.max_balance) > $5 OR (LENGTH(b.max_balance) = $5 AND b.max_balance >= $6))`,
		endBlock, chain, store.Hex(token), ercType, len(thr), thr)
	if err != nil {
		return nil, fmt.Errorf("metrics: read holders of %s: %w", token, err)
	}
	defer rows.Close()
	var out []HeldBalance
	undecided := map[string]*big.Int{} // holder -> balance after endBlock
	for rows.Next() {
		var holder string
		var changed int64
		var latest sql.NullString
		if err := rows.Scan(store.ScanHex(&holder), &changed, &latest); err != nil {
			return nil, fmt.Errorf("metrics: read holders of %s: %w", token, err)
		}
		if !latest.Valid {
			continue // no balance yet after endBlock
		}
		v, ok := new(big.Int).SetString(latest.String, 10)
		if !ok {
			return nil, fmt.Errorf("metrics: stored balance of %s in %s is %q", holder, token, latest.String)
		}
		if atLeast(latest.String, thr) || (startBlock < 0 && changed <= endBlock) {
			out = append(out, HeldBalance{Address: holder, Balance: v})
			continue
		}
		undecided[holder] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: read holders of %s: %w", token, err)
	}
	if out, err = heldInRange(ctx, db, chain, token, ercType, thr, startBlock, endBlock, undecided, out); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if c := out[i].Balance.Cmp(out[j].Balance); c != 0 {
			return c > 0
		}
		return out[i].Address < out[j].Address
	})
	return out, nil
}

// atLeast compares a stored decimal balance with a threshold's decimal
// without parsing: a longer number is larger, equal lengths compare as text;
// a negative balance (a token whose logs lie) holds nothing.
func atLeast(v, thr string) bool {
	return !strings.HasPrefix(v, "-") && (len(v) > len(thr) || (len(v) == len(thr) && v >= thr))
}

// holderHistory is the balance history of the evm_token_balances row b.
const holderHistory = `FROM evm_token_balance_history h WHERE h.chain_key = b.chain_key AND h.holder = b.holder
		AND h.erc_type = b.erc_type AND h.token = b.token AND h.token_id = b.token_id`

// heldInRange appends to out the holders of undecided (with their balance
// after endBlock) whose opening balance (after startBlock) or a balance
// after a block of (startBlock, endBlock] reached thr: their rows by primary
// key, a few hundred a statement, each a seek and an EXISTS that stops at
// the first such block.
func heldInRange(ctx context.Context, db *store.DB, chain, token, ercType, thr string, startBlock, endBlock int64, undecided map[string]*big.Int, out []HeldBalance) ([]HeldBalance, error) {
	holders := make([]string, 0, len(undecided))
	for h := range undecided {
		holders = append(holders, h)
	}
	sort.Strings(holders)
	const perStatement = 500
	for len(holders) > 0 {
		chunk := holders[:min(perStatement, len(holders))]
		holders = holders[len(chunk):]
		args := []any{startBlock, endBlock, len(thr), thr, chain, store.Hex(token), ercType}
		var in strings.Builder
		for i, h := range chunk {
			if i > 0 {
				in.WriteString(", ")
			}
			in.WriteString(ph(len(args) + 1))
			args = append(args, store.Hex(h))
		}
		rows, err := db.QueryContext(ctx, `SELECT b.holder,
			(SELECT h.balance `+holderHistory+` AND h.block_number <= $1 ORDER BY h.block_number DESC LIMIT 1),
			EXISTS (SELECT 1 `+holderHistory+` AND h.block_number > $1 AND h.block_number <= $2 AND h.balance NOT LIKE '-%'
				AND (LENGTH(h.balance) > $3 OR (LENGTH(h.balance) = $3 AND h.balance >= $4)))
			FROM evm_token_balances b
			WHERE b.chain_key = $5 AND b.token = $6 AND b.erc_type = $7 AND b.token_id = '' AND b.holder IN (`+in.String()+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
		}
		for rows.Next() {
			var holder string
			var opening sql.NullString
			var held bool
			if err := rows.Scan(store.ScanHex(&holder), &opening, &held); err != nil {
				rows.Close()
				return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
			}
			if held || (opening.Valid && atLeast(opening.String, thr)) {
				out = append(out, HeldBalance{Address: holder, Balance: undecided[holder]})
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
		}
	}
	return out, nil
}
