package metrics

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// zeroAddress is the mint source and burn sink: never a holder (the EVM
// indexer does not track its balance either).
const zeroAddress = "0x0000000000000000000000000000000000000000"

// pairsPerStatement bounds the keys of one OR-list statement: each pair is
// one or two OR terms, and an OR chain is an expression tree as deep as it is
// long (both backends plan "(full key) OR (full key) ..." as one index seek
// per term).
const pairsPerStatement = 100

const selNFTTransfers = `SELECT token, from_addr, to_addr FROM evm_transfers
	WHERE chain_key = $1 AND block_number >= $2 AND block_number <= $3 AND erc_type IN ('ERC-721', 'ERC-1155')`

type pair struct{ token, holder string }

// holderWriter recomputes, after each batch of EVM blocks, the token count of
// every (contract, holder) pair the blocks' NFT transfers touched, from the EVM
// indexer's current balances (evm_token_balances: ERC-721 counts per holder,
// ERC-1155 balances per id), and keeps metrics_nft_holders and the
// per-contract totals in step. A handful of statements per batch, whatever
// the number of transfers.
type holderWriter struct {
	mu      sync.Mutex
	pairs   []pair
	index   map[pair]int
	units   []*big.Int
	old     []string // previous units_key per pair, "" when not a holder
	queries map[string]string
}

// touchRange notes the (contract, holder) pairs of the NFT transfers of
// blocks lo..hi, for the next flush.
func (w *holderWriter) touchRange(ctx context.Context, tx *store.Tx, chain string, lo, hi int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.index == nil {
		w.index = map[pair]int{}
		w.queries = map[string]string{}
	}
	return w.touched(ctx, tx, chain, lo, hi)
}

// discard forgets the pairs noted since the last flush.
func (w *holderWriter) discard() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.index)
	w.pairs = w.pairs[:0]
}

// flush recomputes the noted pairs from the current balances and writes
// what changed, once per pair however many blocks touched it.
func (w *holderWriter) flush(ctx context.Context, tx *store.Tx, chain string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	defer func() {
		clear(w.index)
		w.pairs = w.pairs[:0]
	}()
	if len(w.pairs) == 0 {
		return nil
	}
	sort.Slice(w.pairs, func(i, j int) bool {
		if w.pairs[i].token != w.pairs[j].token {
			return w.pairs[i].token < w.pairs[j].token
		}
		return w.pairs[i].holder < w.pairs[j].holder
	})
	for i, p := range w.pairs {
		w.index[p] = i
	}
	w.units = w.units[:0]
	w.old = w.old[:0]
	for range w.pairs {
		w.units = append(w.units, new(big.Int))
		w.old = append(w.old, "")
	}
	for i := 0; i < len(w.pairs); i += pairsPerStatement {
		chunk := w.pairs[i:min(i+pairsPerStatement, len(w.pairs))]
		if err := w.readBalances(ctx, tx, chain, chunk); err != nil {
			return err
		}
		if err := w.readOld(ctx, tx, chain, chunk); err != nil {
			return err
		}
	}
	return w.write(ctx, tx, chain)
}

// touched collects the distinct (contract, holder) pairs of the blocks' NFT transfers.
func (w *holderWriter) touched(ctx context.Context, tx *store.Tx, chain string, lo, hi int64) error {
	rows, err := tx.Query(ctx, selNFTTransfers, chain, lo, hi)
	if err != nil {
		return fmt.Errorf("read transfers: %w", err)
	}
	defer rows.Close()
	var token, from, to string
	for rows.Next() {
		if err := rows.Scan(store.ScanHex(&token), store.ScanHex(&from), store.ScanHex(&to)); err != nil {
			return fmt.Errorf("read transfers: %w", err)
		}
		for _, h := range [2]string{from, to} {
			p := pair{token, h}
			if h == zeroAddress || h == "" {
				continue
			}
			if _, ok := w.index[p]; !ok {
				w.index[p] = len(w.pairs)
				w.pairs = append(w.pairs, p)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read transfers: %w", err)
	}
	return nil
}

// orQuery returns (and caches) "prefix term OR term ... suffix" for n items,
// where term(p) writes one item using parameters from $p and returns the next
// free parameter number. Parameter $1 is the chain key.
func (w *holderWriter) orQuery(name string, n int, prefix, sep, suffix string, term func(b *strings.Builder, p int) int) string {
	key := name + "/" + strconv.Itoa(n)
	if q, ok := w.queries[key]; ok {
		return q
	}
	var b strings.Builder
	b.WriteString(prefix)
	p := 2
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(sep)
		}
		p = term(&b, p)
	}
	b.WriteString(suffix)
	q := b.String()
	w.queries[key] = q
	return q
}

func ph(p int) string { return "$" + strconv.Itoa(p) }

// selHolderBalancesPG reads the ERC-721 and ERC-1155 balances of the pairs
// passed as two arrays: one index probe per pair. PostgreSQL's generic plan
// of the OR chain (SQLite's form, below) walked the token index with the
// terms as a filter, and so did a plain join of the arrays while the table
// has no statistics (44-51 ms per 100 pairs at 5,000 blocks, growing with
// the table: issue #22). The LATERAL subquery with OFFSET 0 cannot be
// flattened, so the arrays drive the probes whatever the estimates.
const selHolderBalancesPG = `SELECT b.holder, b.token, b.balance
	FROM unnest($2::bytea[], $3::bytea[]) AS k(holder, token), LATERAL (SELECT holder, token, balance FROM evm_token_balances
	WHERE chain_key = $1 AND holder = k.holder AND erc_type IN ('ERC-721', 'ERC-1155') AND token = k.token OFFSET 0) AS b`

// readBalances sums the positive ERC-721 and ERC-1155 balances of each pair.
func (w *holderWriter) readBalances(ctx context.Context, tx *store.Tx, chain string, chunk []pair) error {
	var q string
	var args []any
	if tx.Dialect() == store.Postgres {
		holders, tokens := make([][]byte, len(chunk)), make([][]byte, len(chunk))
		for i, p := range chunk {
			var err error
			if holders[i], err = store.HexBytes(p.holder); err != nil {
				return fmt.Errorf("read balances: holder: %w", err)
			}
			if tokens[i], err = store.HexBytes(p.token); err != nil {
				return fmt.Errorf("read balances: token: %w", err)
			}
		}
		q, args = selHolderBalancesPG, []any{chain, holders, tokens}
	} else {
		q = w.orQuery("bal", len(chunk), `SELECT holder, token, balance FROM evm_token_balances WHERE `, " OR ", "",
			func(b *strings.Builder, p int) int {
				h, t := ph(p), ph(p+1)
				fmt.Fprintf(b, "(chain_key = $1 AND holder = %s AND erc_type = 'ERC-721' AND token = %s) OR ", h, t)
				fmt.Fprintf(b, "(chain_key = $1 AND holder = %s AND erc_type = 'ERC-1155' AND token = %s)", h, t)
				return p + 2
			})
		args = make([]any, 0, 1+2*len(chunk))
		args = append(args, chain)
		for _, p := range chunk {
			args = append(args, store.Hex(p.holder), store.Hex(p.token))
		}
	}
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("read balances: %w", err)
	}
	defer rows.Close()
	var p pair
	var bal string
	v := new(big.Int)
	for rows.Next() {
		if err := rows.Scan(store.ScanHex(&p.holder), store.ScanHex(&p.token), &bal); err != nil {
			return fmt.Errorf("read balances: %w", err)
		}
		i, ok := w.index[p]
		if !ok {
			continue
		}
		if _, ok := v.SetString(bal, 10); !ok {
			return fmt.Errorf("stored balance of %s in %s is %q", p.holder, p.token, bal)
		}
		// A negative balance means the token's logs lie; it holds nothing.
		if v.Sign() > 0 {
			w.units[i].Add(w.units[i], v)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read balances: %w", err)
	}
	return nil
}

func pairTerm(b *strings.Builder, p int) int {
	fmt.Fprintf(b, "(chain_key = $1 AND token = %s AND holder = %s)", ph(p), ph(p+1))
	return p + 2
}

func (w *holderWriter) pairArgs(chain string, chunk []pair) []any {
	args := make([]any, 0, 1+2*len(chunk))
	args = append(args, chain)
	for _, p := range chunk {
		args = append(args, p.token, p.holder)
	}
	return args
}

// selOldHoldersPG reads the pairs' current rows, the pairs passed as two
// arrays: one primary-key probe per pair, as selHolderBalancesPG (the OR
// chain's generic plan may walk the table with the terms as a filter).
const selOldHoldersPG = `SELECT h.token, h.holder, h.units_key
	FROM unnest($2::text[], $3::text[]) AS k(token, holder), LATERAL (SELECT token, holder, units_key FROM metrics_nft_holders
	WHERE chain_key = $1 AND token = k.token AND holder = k.holder OFFSET 0) AS h`

// readOld reads the pairs' current rows.
func (w *holderWriter) readOld(ctx context.Context, tx *store.Tx, chain string, chunk []pair) error {
	var q string
	var args []any
	if tx.Dialect() == store.Postgres {
		tokens, holders := make([]string, len(chunk)), make([]string, len(chunk))
		for i, p := range chunk {
			tokens[i], holders[i] = p.token, p.holder
		}
		q, args = selOldHoldersPG, []any{chain, tokens, holders}
	} else {
		q, args = w.orQuery("old", len(chunk), `SELECT token, holder, units_key FROM metrics_nft_holders WHERE `, " OR ", "", pairTerm), w.pairArgs(chain, chunk)
	}
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("read holders: %w", err)
	}
	defer rows.Close()
	var p pair
	var k string
	for rows.Next() {
		if err := rows.Scan(&p.token, &p.holder, &k); err != nil {
			return fmt.Errorf("read holders: %w", err)
		}
		if i, ok := w.index[p]; ok {
			w.old[i] = k
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read holders: %w", err)
	}
	return nil
}

type collectionDelta struct {
	holders int64
	units   big.Int
}

// write applies the changed pairs and the per-contract totals.
func (w *holderWriter) write(ctx context.Context, tx *store.Tx, chain string) error {
	var upTokens, upHolders, upKeys []string // the pairs to upsert and their units_key
	var deletes []pair
	deltas := map[string]*collectionDelta{}
	var tokens []string
	oldUnits := new(big.Int)
	for i, p := range w.pairs {
		newKey := ""
		if w.units[i].Sign() > 0 {
			k, err := UnitsKey(w.units[i])
			if err != nil {
				return fmt.Errorf("%s in %s: %w", p.holder, p.token, err)
			}
			newKey = k
		}
		if newKey == w.old[i] {
			continue
		}
		d, ok := deltas[p.token]
		if !ok {
			d = &collectionDelta{}
			deltas[p.token] = d
			tokens = append(tokens, p.token)
		}
		oldUnits.SetInt64(0)
		if w.old[i] != "" {
			digits, err := ParseUnitsKey(w.old[i])
			if err != nil {
				return fmt.Errorf("%s in %s: %w", p.holder, p.token, err)
			}
			oldUnits.SetString(digits, 10)
			d.holders--
		}
		d.units.Sub(&d.units, oldUnits)
		if newKey == "" {
			deletes = append(deletes, p)
			continue
		}
		d.holders++
		d.units.Add(&d.units, w.units[i])
		upTokens, upHolders, upKeys = append(upTokens, p.token), append(upHolders, p.holder), append(upKeys, newKey)
	}
	for i := 0; i < len(deletes); i += pairsPerStatement {
		chunk := deletes[i:min(i+pairsPerStatement, len(deletes))]
		q := w.orQuery("del", len(chunk), `DELETE FROM metrics_nft_holders WHERE `, " OR ", "", pairTerm)
		if _, err := tx.Exec(ctx, q, w.pairArgs(chain, chunk)...); err != nil {
			return fmt.Errorf("delete holders: %w", err)
		}
	}
	switch {
	case len(upTokens) == 0:
	case tx.Dialect() == store.Postgres:
		if _, err := tx.Exec(ctx, upHoldersPG, chain, upTokens, upHolders, upKeys); err != nil {
			return fmt.Errorf("write holders: %w", err)
		}
	default:
		for i := 0; i < len(upTokens); i += pairsPerStatement {
			n := min(pairsPerStatement, len(upTokens)-i)
			q := w.orQuery("ins", n, `INSERT INTO metrics_nft_holders (chain_key, token, holder, units_key) VALUES `, ",",
				` ON CONFLICT (chain_key, token, holder) DO UPDATE SET units_key = excluded.units_key`,
				func(b *strings.Builder, p int) int {
					fmt.Fprintf(b, "($1, %s, %s, %s)", ph(p), ph(p+1), ph(p+2))
					return p + 3
				})
			args := make([]any, 0, 1+3*n)
			args = append(args, chain)
			for j := i; j < i+n; j++ {
				args = append(args, upTokens[j], upHolders[j], upKeys[j])
			}
			if _, err := tx.Exec(ctx, q, args...); err != nil {
				return fmt.Errorf("write holders: %w", err)
			}
		}
	}
	if len(tokens) == 0 {
		return nil
	}
	return w.writeCollections(ctx, tx, chain, tokens, deltas)
}

// upHoldersPG writes the batch's changed pairs in one statement, passed as
// arrays (prepared once per transaction): the VALUES lists of 100 rows took
// ~10 statements a batch, and the last one's text differed with its row
// count, so it was parsed and planned again each batch (issue #22).
const upHoldersPG = `INSERT INTO metrics_nft_holders (chain_key, token, holder, units_key)
	SELECT $1, u.token, u.holder, u.units_key FROM unnest($2::text[], $3::text[], $4::text[]) AS u(token, holder, units_key)
	ON CONFLICT (chain_key, token, holder) DO UPDATE SET units_key = excluded.units_key`

// writeCollections adds the deltas to the per-contract totals.
func (w *holderWriter) writeCollections(ctx context.Context, tx *store.Tx, chain string, tokens []string, deltas map[string]*collectionDelta) error {
	type total struct {
		holders int64
		units   *big.Int
	}
	totals := make(map[string]*total, len(tokens))
	for _, t := range tokens {
		totals[t] = &total{units: new(big.Int)}
	}
	for i := 0; i < len(tokens); i += pairsPerStatement {
		chunk := tokens[i:min(i+pairsPerStatement, len(tokens))]
		q := w.orQuery("col", len(chunk), `SELECT token, holders, units FROM metrics_nft_collections WHERE `, " OR ", "",
			func(b *strings.Builder, p int) int {
				fmt.Fprintf(b, "(chain_key = $1 AND token = %s)", ph(p))
				return p + 1
			})
		args := []any{chain}
		for _, t := range chunk {
			args = append(args, t)
		}
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("read collections: %w", err)
		}
		var token, units string
		var holders int64
		for rows.Next() {
			if err := rows.Scan(&token, &holders, &units); err != nil {
				rows.Close()
				return fmt.Errorf("read collections: %w", err)
			}
			t, ok := totals[token]
			if !ok {
				continue
			}
			if _, ok := t.units.SetString(units, 10); !ok {
				rows.Close()
				return fmt.Errorf("stored units of collection %s are %q", token, units)
			}
			t.holders = holders
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("read collections: %w", err)
		}
	}
	args := []any{chain}
	for _, t := range tokens {
		tot, d := totals[t], deltas[t]
		tot.holders += d.holders
		tot.units.Add(tot.units, &d.units)
		if tot.holders < 0 || tot.units.Sign() < 0 {
			return fmt.Errorf("collection %s: totals went negative (%d holders, %s units): rollup out of step", t, tot.holders, tot.units)
		}
		args = append(args, t, tot.holders, tot.units.String())
	}
	for i := 1; i < len(args); i += 3 * pairsPerStatement {
		chunk := args[i:min(i+3*pairsPerStatement, len(args))]
		q := w.orQuery("colw", len(chunk)/3, `INSERT INTO metrics_nft_collections (chain_key, token, holders, units) VALUES `, ",",
			` ON CONFLICT (chain_key, token) DO UPDATE SET holders = excluded.holders, units = excluded.units`,
			func(b *strings.Builder, p int) int {
				fmt.Fprintf(b, "($1, %s, %s, %s)", ph(p), ph(p+1), ph(p+2))
				return p + 3
			})
		if _, err := tx.Exec(ctx, q, append([]any{chain}, chunk...)...); err != nil {
			return fmt.Errorf("write collections: %w", err)
		}
	}
	return nil
}
