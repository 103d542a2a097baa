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

// BlockAt is the newest block of chain with time <= ts (-1 when none).
func BlockAt(ctx context.Context, db *store.DB, chain string, ts int64) (int64, error) {
	var n sql.NullInt64
	err := db.QueryRowContext(ctx, `SELECT MAX(number) FROM evm_blocks WHERE chain_key = $1 AND timestamp <= $2`, chain, ts).Scan(&n)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("metrics: block at %d: %w", ts, err)
	}
	if !n.Valid {
		return -1, nil
	}
	return n.Int64, nil
}

// HeldAbove lists the holders of token (an ERC-20, or an ERC-721 counted in
// tokens; ercType says which) whose balance was >= threshold after some
// block in (startBlock, endBlock] or at startBlock (the range's opening
// balance), ordered by their balance after endBlock descending, then
// address. It reads the EVM indexer's balance history: one query, the
// token's holders (by the balances' token index) joined with their history
// up to endBlock.
func HeldAbove(ctx context.Context, db *store.DB, chain, token, ercType string, threshold *big.Int, startBlock, endBlock int64) ([]HeldBalance, error) {
	// CROSS JOIN: SQLite then drives from the token's holders (an index
	// range, in holder order) into each one's history (a primary-key range,
	// in block order), rather than scanning the chain's whole history, and
	// needs no sort; PostgreSQL plans it as a join.
	rows, err := db.QueryContext(ctx, `SELECT h.holder, h.block_number, h.balance
		FROM evm_token_balances b CROSS JOIN evm_token_balance_history h
		WHERE b.chain_key = $1 AND b.token = $2 AND b.erc_type = $3 AND b.token_id = ''
		AND h.chain_key = b.chain_key AND h.holder = b.holder AND h.erc_type = b.erc_type AND h.token = b.token
		AND h.token_id = b.token_id AND h.block_number <= $4
		ORDER BY b.holder, h.block_number`, chain, store.Hex(token), ercType, endBlock)
	if err != nil {
		return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
	}
	defer rows.Close()
	thr := threshold.String()
	// atLeast compares stored decimals without parsing them: a longer
	// number is larger, equal lengths compare as text; negative balances
	// (a token whose logs lie) hold nothing.
	atLeast := func(v string) bool {
		if strings.HasPrefix(v, "-") {
			return false
		}
		return len(v) > len(thr) || (len(v) == len(thr) && v >= thr)
	}
	var out []HeldBalance
	var cur, opening, latest string
	held := false
	finish := func() error {
		if cur == "" || !(held || (opening != "" && atLeast(opening))) {
			return nil
		}
		v, ok := new(big.Int).SetString(latest, 10)
		if !ok {
			return fmt.Errorf("metrics: stored balance of %s in %s is %q", cur, token, latest)
		}
		out = append(out, HeldBalance{Address: cur, Balance: v})
		return nil
	}
	var holder, bal string
	var block int64
	for rows.Next() {
		if err := rows.Scan(store.ScanHex(&holder), &block, &bal); err != nil {
			return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
		}
		if holder != cur {
			if err := finish(); err != nil {
				return nil, err
			}
			cur, opening, held = holder, "", false
		}
		latest = bal
		if block <= startBlock {
			opening = bal // the balance the range opens with, once the last such row is seen
		} else if !held && atLeast(bal) {
			held = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
	}
	if err := finish(); err != nil {
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
