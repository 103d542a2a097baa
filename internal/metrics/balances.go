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
	// Per holder of the token (an index range): its balance after endBlock
	// and after startBlock (primary-key seeks of its history), and whether
	// some balance of the range reached the threshold, compared as stored
	// decimals (a longer number is larger; equal lengths compare as text;
	// a negative balance, from a token whose logs lie, holds nothing), which
	// stops at the first such row. Placeholders are numbered in order of
	// first use, as the store requires.
	const hist = `FROM evm_token_balance_history h WHERE h.chain_key = b.chain_key AND h.holder = b.holder
		AND h.erc_type = b.erc_type AND h.token = b.token AND h.token_id = b.token_id`
	thr := threshold.String()
	rows, err := db.QueryContext(ctx, `SELECT b.holder,
		(SELECT h.balance `+hist+` AND h.block_number <= $1 ORDER BY h.block_number DESC LIMIT 1),
		(SELECT h.balance `+hist+` AND h.block_number <= $2 ORDER BY h.block_number DESC LIMIT 1),
		EXISTS (SELECT 1 `+hist+` AND h.block_number > $2 AND h.block_number <= $1 AND h.balance NOT LIKE '-%'
			AND (LENGTH(h.balance) > $3 OR (LENGTH(h.balance) = $3 AND h.balance >= $4)))
		FROM evm_token_balances b
		WHERE b.chain_key = $5 AND b.token = $6 AND b.erc_type = $7 AND b.token_id = ''`,
		endBlock, startBlock, len(thr), thr, chain, store.Hex(token), ercType)
	if err != nil {
		return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
	}
	defer rows.Close()
	atLeast := func(v string) bool {
		return !strings.HasPrefix(v, "-") && (len(v) > len(thr) || (len(v) == len(thr) && v >= thr))
	}
	var out []HeldBalance
	for rows.Next() {
		var holder string
		var latest, opening sql.NullString
		var held bool
		if err := rows.Scan(store.ScanHex(&holder), &latest, &opening, &held); err != nil {
			return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
		}
		if !latest.Valid || !(held || (opening.Valid && atLeast(opening.String))) {
			continue
		}
		v, ok := new(big.Int).SetString(latest.String, 10)
		if !ok {
			return nil, fmt.Errorf("metrics: stored balance of %s in %s is %q", holder, token, latest.String)
		}
		out = append(out, HeldBalance{Address: holder, Balance: v})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
	}
	sort.Slice(out, func(i, j int) bool {
		if c := out[i].Balance.Cmp(out[j].Balance); c != 0 {
			return c > 0
		}
		return out[i].Address < out[j].Address
	})
	return out, nil
}
