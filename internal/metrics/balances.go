package metrics

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"sort"

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
	rows, err := db.QueryContext(ctx, `SELECT h.holder, h.block_number, h.balance
		FROM evm_token_balances b JOIN evm_token_balance_history h
		ON h.chain_key = b.chain_key AND h.holder = b.holder AND h.erc_type = b.erc_type AND h.token = b.token AND h.token_id = b.token_id
		WHERE b.chain_key = $1 AND b.token = $2 AND b.erc_type = $3 AND b.token_id = '' AND h.block_number <= $4
		ORDER BY h.holder, h.block_number DESC`, chain, store.Hex(token), ercType, endBlock)
	if err != nil {
		return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
	}
	defer rows.Close()
	var out []HeldBalance
	var (
		cur     string
		latest  *big.Int
		held    bool
		opening bool // cur's balance at startBlock is already seen: older rows do not matter
	)
	finish := func() {
		if cur != "" && held {
			out = append(out, HeldBalance{Address: cur, Balance: latest})
		}
	}
	for rows.Next() {
		var holder, bal string
		var block int64
		if err := rows.Scan(store.ScanHex(&holder), &block, &bal); err != nil {
			return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
		}
		if holder != cur {
			finish()
			cur, latest, held, opening = holder, nil, false, false
		}
		if opening {
			continue
		}
		v, ok := new(big.Int).SetString(bal, 10)
		if !ok {
			return nil, fmt.Errorf("metrics: stored balance of %s in %s is %q", holder, token, bal)
		}
		if latest == nil {
			latest = v
		}
		if v.Cmp(threshold) >= 0 {
			held = true
		}
		opening = block <= startBlock
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
	}
	finish()
	sort.Slice(out, func(i, j int) bool {
		if c := out[i].Balance.Cmp(out[j].Balance); c != 0 {
			return c > 0
		}
		return out[i].Address < out[j].Address
	})
	return out, nil
}
