package metrics

import (
	"cmp"
	"container/heap"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"slices"
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

// HeldAbove pages the holders of token (an ERC-20, or an ERC-721 counted in
// tokens; ercType says which) whose balance was >= threshold after some
// block in (startBlock, endBlock] or at startBlock (the range's opening
// balance), ordered by their balance after endBlock descending, then
// address: up to n of them after the holder after (nil: from the first);
// more says whether others follow.
//
// It reads the token's holders in one index range of evm_token_balances
// (named for SQLite, which would rather walk the chain's every balance),
// only those whose largest balance ever (max_balance, kept by the EVM
// indexer) reached the threshold: no one else can have held it in any range.
// They are then taken in order of that maximum, which bounds their balance
// at any time: once n+1 holders of the page are found, a holder whose
// maximum is below the last of them cannot be on it, and the walk stops. A
// holder's balance after endBlock is its current one when it has not changed
// since (no history read), else one primary-key seek of its balance history,
// a chunk of holders a statement. Such a balance at or above the threshold,
// or a range holding the holder's whole history (its maximum is in it),
// decides. The others (their balance at the end is below the threshold)
// are decided last, in the page's order, and only while one can still enter
// the page: deciding one scans its history over the range (heldInRange),
// thousands of rows for a busy holder, so on the hottest tokens deciding
// every one of them cost hundreds of milliseconds a page.
func HeldAbove(ctx context.Context, db *store.DB, chain, token, ercType string, threshold *big.Int, startBlock, endBlock int64, after *HeldBalance, n int) (page []HeldBalance, more bool, err error) {
	thr := threshold.String()
	cands, err := readCandidates(ctx, db, chain, token, ercType, thr)
	if err != nil {
		return nil, false, err
	}
	// The walk compares the stored decimals as text (cmpDecimal): on a hot
	// token's 2,000 candidates, parsing each balance and maximum into a
	// big.Int was a third of the request's CPU. Only the page is parsed.
	var from *held
	if after != nil {
		from = &held{addr: after.Address, bal: after.Balance.String()}
	}
	best := &heldHeap{}
	push := func(h held) {
		heap.Push(best, h)
		if best.Len() > n+1 {
			heap.Pop(best)
		}
	}
	// beaten says whether a holder with balance b cannot enter the page:
	// n+1 holders found, the last of them ahead of it.
	beaten := func(b held) bool { return best.Len() > n && !b.before((*best)[0]) }
	var undecided []held
	for i := 0; i < len(cands); {
		if best.Len() > n && cmpDecimal(cands[i].max, (*best)[0].bal) < 0 {
			break // no later maximum reaches the page's last balance
		}
		chunk := cands[i:min(i+heldChunk, len(cands))]
		i += len(chunk)
		var seek []string
		for _, c := range chunk {
			if c.changed > endBlock {
				seek = append(seek, c.addr)
			}
		}
		slices.Sort(seek)
		atEnd, err := balancesAt(ctx, db, chain, token, ercType, endBlock, seek)
		if err != nil {
			return nil, false, err
		}
		for _, c := range chunk {
			bal := c.balance
			if c.changed > endBlock {
				var ok bool
				if bal, ok = atEnd[c.addr]; !ok {
					continue // no balance yet after endBlock
				}
			}
			h := held{addr: c.addr, bal: bal}
			if from != nil && !from.before(h) {
				continue // on an earlier page
			}
			if atLeast(bal, thr) || (startBlock < 0 && c.changed <= endBlock) {
				push(h)
			} else {
				undecided = append(undecided, h)
			}
		}
	}
	slices.SortFunc(undecided, held.cmp)
	for i := 0; i < len(undecided) && !beaten(undecided[i]); {
		// As many as could fill the page if all were held: each read is a
		// range scan, so none is read that the page may not need.
		size := min(max(n+1-best.Len(), 1), heldChunk)
		chunk := map[string]string{}
		for ; i < len(undecided) && len(chunk) < size && !beaten(undecided[i]); i++ {
			chunk[undecided[i].addr] = undecided[i].bal
		}
		found, err := heldInRange(ctx, db, chain, token, ercType, thr, startBlock, endBlock, chunk)
		if err != nil {
			return nil, false, err
		}
		for _, h := range found {
			push(h)
		}
	}
	page = make([]HeldBalance, best.Len())
	for k := len(page) - 1; k >= 0; k-- {
		h := heap.Pop(best).(held)
		v, ok := new(big.Int).SetString(h.bal, 10)
		if !ok {
			return nil, false, fmt.Errorf("metrics: stored balance of %s in %s is %q", h.addr, token, h.bal)
		}
		page[k] = HeldBalance{Address: h.addr, Balance: v}
	}
	if len(page) > n {
		return page[:n], true, nil
	}
	return page, false, nil
}

// heldChunk is how many holders' balances at the range's end one statement
// reads.
const heldChunk = 128

// held is a holder and its balance at the range's end, a stored decimal.
type held struct {
	addr, bal string
}

// cmp orders holders as the route does: balance descending, then address.
func (a held) cmp(b held) int {
	if c := cmpDecimal(b.bal, a.bal); c != 0 {
		return c
	}
	return strings.Compare(a.addr, b.addr)
}

// before says whether a comes before b in the route's order.
func (a held) before(b held) bool { return a.cmp(b) < 0 }

// heldHeap holds the page's holders found so far, the last in the route's
// order on top (container/heap).
type heldHeap []held

func (h heldHeap) Len() int           { return len(h) }
func (h heldHeap) Less(i, j int) bool { return h[j].before(h[i]) }
func (h heldHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *heldHeap) Push(x any)        { *h = append(*h, x.(held)) }
func (h *heldHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// candidate is a holder whose largest balance reached the threshold.
type candidate struct {
	addr    string
	changed int64  // block of its last change
	balance string // decimal
	max     string // decimal, non-negative
}

// readCandidates reads the holders of token whose largest balance ever
// reached thr, largest first (then by address).
func readCandidates(ctx context.Context, db *store.DB, chain, token, ercType, thr string) ([]candidate, error) {
	// Stored decimals compare without parsing: a longer number is larger,
	// equal lengths compare as text.
	rows, err := db.QueryContext(ctx, `SELECT b.holder, b.block_number, b.balance, b.max_balance
		FROM evm_token_balances b`+db.IndexedBy(ctx, "evm_token_balances_token")+`
		WHERE b.chain_key = $1 AND b.token = $2 AND b.erc_type = $3 AND b.token_id = ''
		AND (LENGTH(b.max_balance) > $4 OR (LENGTH(b.max_balance) = $4 AND b.max_balance >= $5))`,
		chain, store.Hex(token), ercType, len(thr), thr)
	if err != nil {
		return nil, fmt.Errorf("metrics: read holders of %s: %w", token, err)
	}
	defer rows.Close()
	var out []candidate
	for rows.Next() {
		var c candidate
		if err := rows.Scan(store.ScanHex(&c.addr), &c.changed, &c.balance, &c.max); err != nil {
			return nil, fmt.Errorf("metrics: read holders of %s: %w", token, err)
		}
		if !isDecimal(c.max) || strings.HasPrefix(c.max, "-") || !isDecimal(c.balance) {
			return nil, fmt.Errorf("metrics: stored balance %q or largest balance %q of %s in %s is not a decimal", c.balance, c.max, c.addr, token)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: read holders of %s: %w", token, err)
	}
	slices.SortFunc(out, func(a, b candidate) int {
		if c := cmpDecimal(b.max, a.max); c != 0 {
			return c
		}
		return strings.Compare(a.addr, b.addr)
	})
	return out, nil
}

// balancesAt reads the balances of holders after block end: one
// primary-key seek of each one's history, absent when it had none yet.
func balancesAt(ctx context.Context, db *store.DB, chain, token, ercType string, end int64, holders []string) (map[string]string, error) {
	out := map[string]string{}
	if len(holders) == 0 {
		return out, nil
	}
	q, args, err := balancesAtQuery(db.Dialect(), chain, token, ercType, end, holders)
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
	}
	defer rows.Close()
	for rows.Next() {
		var holder string
		var bal sql.NullString
		if err := rows.Scan(store.ScanHex(&holder), &bal); err != nil {
			return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
		}
		if !bal.Valid {
			continue
		}
		if !isDecimal(bal.String) {
			return nil, fmt.Errorf("metrics: stored balance of %s in %s is %q", holder, token, bal.String)
		}
		out[holder] = bal.String
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
	}
	return out, nil
}

// selBalancesAtPG seeks each holder's history of the array $5 (one fixed
// statement): PostgreSQL's generic plan of the IN-list form (SQLite's,
// below), used from a statement's sixth run on, took 40 µs a holder against
// 20 µs for the custom plans before it; the LATERAL probes, one descent of
// the history's primary key each, do not depend on the plan's estimates.
const selBalancesAtPG = `SELECT k.holder, h.balance FROM unnest($5::bytea[]) AS k(holder),
	LATERAL (SELECT h.balance FROM evm_token_balance_history h WHERE h.chain_key = $2 AND h.holder = k.holder
		AND h.erc_type = $4 AND h.token = $3 AND h.token_id = '' AND h.block_number <= $1
		ORDER BY h.block_number DESC LIMIT 1) AS h`

// balancesAtQuery is balancesAt's statement and arguments per backend.
func balancesAtQuery(d store.Dialect, chain, token, ercType string, end int64, holders []string) (string, []any, error) {
	if d == store.Postgres {
		keys := make([][]byte, len(holders))
		for i, h := range holders {
			var err error
			if keys[i], err = store.HexBytes(h); err != nil {
				return "", nil, fmt.Errorf("metrics: holder %q: %w", h, err)
			}
		}
		return selBalancesAtPG, []any{end, chain, store.Hex(token), ercType, keys}, nil
	}
	// The holders as rows of their own (SQLite numbers the placeholders in
	// the order of their first use): read from evm_token_balances, as an IN
	// list over its key, each cost a primary-key lookup before the seek.
	args := []any{chain, ercType, store.Hex(token), end}
	in := holderList(holders, &args)
	return `SELECT k.column1, (SELECT h.balance FROM evm_token_balance_history h WHERE h.chain_key = $1 AND h.holder = k.column1
			AND h.erc_type = $2 AND h.token = $3 AND h.token_id = '' AND h.block_number <= $4
			ORDER BY h.block_number DESC LIMIT 1)
		FROM (VALUES (` + strings.ReplaceAll(in, ", ", "), (") + `)) AS k`, args, nil
}

// holderList appends holders to args as placeholders and returns the list
// ("$5, $6, ...").
func holderList(holders []string, args *[]any) string {
	var b strings.Builder
	for i, h := range holders {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ph(len(*args) + 1))
		*args = append(*args, store.Hex(h))
	}
	return b.String()
}

// atLeast says whether a stored decimal balance reaches a threshold's
// decimal; a negative balance (a token whose logs lie) holds nothing.
func atLeast(v, thr string) bool { return cmpDecimal(v, thr) >= 0 }

// cmpDecimal compares two decimal integers as stored (big.Int.String: an
// optional '-', no leading zeros) without parsing them: between two of one
// sign a longer magnitude is larger, equal lengths compare as text.
func cmpDecimal(a, b string) int {
	an, bn := strings.HasPrefix(a, "-"), strings.HasPrefix(b, "-")
	switch {
	case an && !bn:
		return -1
	case bn && !an:
		return 1
	case an:
		return cmpDecimal(b[1:], a[1:])
	}
	if c := cmp.Compare(len(a), len(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// isDecimal says whether s is a decimal integer as cmpDecimal compares it.
func isDecimal(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// holderHistory is the balance history of the evm_token_balances row b.
const holderHistory = `FROM evm_token_balance_history h WHERE h.chain_key = b.chain_key AND h.holder = b.holder
		AND h.erc_type = b.erc_type AND h.token = b.token AND h.token_id = b.token_id`

// heldInRange is the holders of undecided (with their balance
// after endBlock) whose opening balance (after startBlock) or a balance
// after a block of (startBlock, endBlock] reached thr: their rows by primary
// key, each a seek and an EXISTS that stops at the first such block.
func heldInRange(ctx context.Context, db *store.DB, chain, token, ercType, thr string, startBlock, endBlock int64, undecided map[string]string) ([]held, error) {
	if len(undecided) == 0 {
		return nil, nil
	}
	var out []held
	holders := make([]string, 0, len(undecided))
	for h := range undecided {
		holders = append(holders, h)
	}
	sort.Strings(holders)
	args := []any{startBlock, endBlock, len(thr), thr, chain, store.Hex(token), ercType}
	in := holderList(holders, &args)
	rows, err := db.QueryContext(ctx, `SELECT b.holder,
		(SELECT h.balance `+holderHistory+` AND h.block_number <= $1 ORDER BY h.block_number DESC LIMIT 1),
		EXISTS (SELECT 1 `+holderHistory+` AND h.block_number > $1 AND h.block_number <= $2 AND h.balance NOT LIKE '-%'
			AND (LENGTH(h.balance) > $3 OR (LENGTH(h.balance) = $3 AND h.balance >= $4)))
		FROM evm_token_balances b
		WHERE b.chain_key = $5 AND b.token = $6 AND b.erc_type = $7 AND b.token_id = '' AND b.holder IN (`+in+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
	}
	defer rows.Close()
	for rows.Next() {
		var holder string
		var opening sql.NullString
		var reached bool
		if err := rows.Scan(store.ScanHex(&holder), &opening, &reached); err != nil {
			return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
		}
		if reached || (opening.Valid && atLeast(opening.String, thr)) {
			out = append(out, held{addr: holder, bal: undecided[holder]})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
	}
	return out, nil
}
