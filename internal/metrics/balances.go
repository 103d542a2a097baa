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

	"github.com/permafrost-dev/permafrost/internal/decode/evm"
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

// HeldQuery is HeldAbove's question: the holders of Token (an ERC-20, or an
// ERC-721 counted in tokens; ErcType says which) on Chain whose balance was
// >= Threshold after some block in (Start, End] or at Start (the range's
// opening balance; Start -1: from the chain's first block).
type HeldQuery struct {
	Chain, Token, ErcType string
	Threshold             *big.Int
	Start, End            int64
	// BucketBits is the size of evm_token_balance_buckets' buckets as the
	// chain's EVM indexer keeps them (evm.Config.HolderBucketBits); 0 is
	// evm.HolderBucketBits.
	BucketBits int
}

// HeldAbove pages q's holders, ordered by their balance after q.End
// descending, then address: up to n of them after the holder after (nil:
// from the first); more says whether others follow. resume is the previous
// page's walk (its next, kept in the page token; nil: none), next this
// page's.
//
// It reads the token's holders in one index range of evm_token_balances
// (named for SQLite, which would rather walk the chain's every balance),
// only those whose largest balance ever (max_balance, kept by the EVM
// indexer) reached the threshold: no one else can have held it in any range.
// A holder's balance after End is its current one when it has not changed
// since. For the others (every holder of a busy token, for an End in the
// past) the token's rows of evm_token_balance_buckets in End's bucket and
// the one before, one index range, give most of them exactly: End before
// the holder's first change in the bucket (the balance it entered with),
// after its last (the balance after it), or no change in End's bucket but
// some in the one before (the balance after that). The rest are bounded:
// by the largest balance held in End's bucket when End falls between
// changes, else by the largest ever (max_balance). Holders are then taken
// in order of that bound (or exact balance): once n+1 holders of the page
// are found, a holder whose bound is below the last of them cannot be on
// it, and the walk stops. A holder's bounded balance is read with one
// primary-key seek of its balance history, a chunk of holders a statement:
// reading every holder's so cost 2,000 seeks a page (20-40 ms on
// PostgreSQL) on the API benchmark's busiest tokens. A balance at or above
// the threshold, or a range holding the holder's whole history (its maximum
// is in it), decides. The others (their balance at the end is below the
// threshold) are decided last, in the page's order, and only while one can
// still enter the page: deciding one scans its history over the range
// (heldInRange).
func HeldAbove(ctx context.Context, db *store.DB, q HeldQuery, after *HeldBalance, resume *HeldResume, n int) (page []HeldBalance, next *HeldResume, more bool, err error) {
	if q.BucketBits == 0 {
		q.BucketBits = evm.HolderBucketBits
	}
	thr := q.Threshold.String()
	walk, err := readCandidates(ctx, db, q, thr)
	if err != nil {
		return nil, nil, false, err
	}
	if err := boundAtEnd(ctx, db, q, walk); err != nil {
		return nil, nil, false, err
	}
	// The walk compares the stored decimals as text (cmpDecimal): on a hot
	// token's 2,000 candidates, parsing each balance and maximum into a
	// big.Int was a third of the request's CPU. Only the page is parsed.
	var from *held
	if after != nil {
		from = &held{Addr: after.Address, Bal: after.Balance.String()}
	}
	best := &heldHeap{}
	var spilled []held // popped from best: after the page, kept for the next
	push := func(h held) {
		heap.Push(best, h)
		if best.Len() > n+1 {
			spilled = append(spilled, heap.Pop(best).(held))
		}
	}
	// beaten says whether a holder with balance b cannot enter the page:
	// n+1 holders found, the last of them ahead of it.
	beaten := func(b held) bool { return best.Len() > n && !b.before((*best)[0]) }
	var undecided []held
	w := resume.walked(q, n, after)
	if w != nil {
		for _, h := range w.Ahead {
			push(h)
		}
		undecided = append(undecided, w.Undecided...)
	}
	i := 0
	for i < len(walk) {
		if best.Len() > n && cmpDecimal(walk[i].bound, (*best)[0].Bal) < 0 {
			break // no later bound reaches the page's last balance
		}
		var chunk []*candidate
		var seek []string
		for ; i < len(walk) && len(chunk) < heldChunk; i++ {
			if c := walk[i]; !w.covers(c) {
				chunk = append(chunk, c)
				if !c.exact {
					seek = append(seek, c.addr)
				}
			}
		}
		atEnd, err := balancesAt(ctx, db, q.Chain, q.Token, q.ErcType, q.End, seek)
		if err != nil {
			return nil, nil, false, err
		}
		for _, c := range chunk {
			bal := c.bound
			if !c.exact {
				bal = atEnd[c.addr]
			}
			if bal == "" {
				continue // no balance yet after the range's end
			}
			h := held{Addr: c.addr, Bal: bal}
			if from != nil && !from.before(h) {
				continue // on an earlier page
			}
			if atLeast(bal, thr) || (q.Start < 0 && c.changed <= q.End) {
				push(h)
			} else {
				undecided = append(undecided, h)
			}
		}
	}
	slices.SortFunc(undecided, held.cmp)
	u := 0
	for u < len(undecided) && !beaten(undecided[u]) {
		// As many as could fill the page if all were held: each read is a
		// range scan, so none is read that the page may not need.
		size := min(max(n+1-best.Len(), 1), heldChunk)
		chunk := map[string]held{}
		for ; u < len(undecided) && len(chunk) < size && !beaten(undecided[u]); u++ {
			chunk[undecided[u].Addr] = undecided[u]
		}
		found, err := heldInRange(ctx, db, q.Chain, q.Token, q.ErcType, thr, q.Start, q.End, chunk)
		if err != nil {
			return nil, nil, false, err
		}
		for _, h := range found {
			push(h)
		}
	}
	found := make([]held, best.Len())
	for k := len(found) - 1; k >= 0; k-- {
		found[k] = heap.Pop(best).(held)
	}
	if w != nil && w.Floor != nil && (len(found) <= n || !found[n].before(*w.Floor)) {
		// The page reaches the holders the previous page left out: walk
		// again from the start.
		return HeldAbove(ctx, db, q, after, nil, n)
	}
	page = make([]HeldBalance, min(len(found), n))
	for k := range page {
		v, ok := new(big.Int).SetString(found[k].Bal, 10)
		if !ok {
			return nil, nil, false, fmt.Errorf("metrics: stored balance of %s in %s is %q", found[k].Addr, q.Token, found[k].Bal)
		}
		page[k] = HeldBalance{Address: found[k].Addr, Balance: v}
	}
	if len(found) <= n {
		return page, nil, false, nil
	}
	var floor *held
	if w != nil {
		floor = w.Floor
	}
	return page, nextWalk(walk, i, q, append(spilled, found[n]), undecided[u:], floor, n), true, nil
}

// HeldResume is where a page's walk stopped, kept in its page token: the
// next page goes on from there instead of reading the same balance
// histories again (on the benchmark's hottest token, a 100-holder page
// after the first read 1,600-1,900 histories). A balance after an indexed
// block never changes (accepted blocks are final), so what the walk learnt
// stays true. A candidate counts as walked when it came before the stop in
// the walk's order and has not changed since (its last change is not after
// the newest one the walk read): a maximum that grew, or a new candidate, is
// walked again. The holders after the page that the walk found are kept
// (Ahead: held; Undecided: below the threshold at the end, not yet
// decided), the first of them in the page's order (resumePages pages,
// maxResume holders); Floor is the first one left out. A page whose last
// holder would not come before Floor may miss one left out, and walks
// again from the start.
type HeldResume struct {
	Start     int64  `json:"s"` // the range it walked
	End       int64  `json:"e"`
	Size      int    `json:"n"` // the page size
	Bits      int    `json:"k"` // its bucket size (HeldQuery.BucketBits): a walk of another order is not resumed
	Changed   int64  `json:"c"` // the newest last change among the candidates it read
	Bound     string `json:"m"` // it walked the candidates before (Bound, Addr)
	Addr      string `json:"a"`
	All       bool   `json:"x,omitempty"` // or every one
	Ahead     []held `json:"h,omitempty"`
	Undecided []held `json:"u,omitempty"`
	Floor     *held  `json:"f,omitempty"`
}

// A page token keeps the holders of the next resumePages pages, at most
// maxResume (about 70 bytes each).
const (
	resumePages = 5
	maxResume   = 512
)

// resumed is a page's view of the previous page's walk.
type resumed struct {
	*HeldResume
	kept map[string]bool // Ahead's and Undecided's holders
}

// walked is r for the page after it with this range, size and bucket size,
// nil for any other (the walk starts over).
func (r *HeldResume) walked(q HeldQuery, n int, after *HeldBalance) *resumed {
	if r == nil || after == nil || r.Start != q.Start || r.End != q.End || r.Size != n || r.Bits != q.BucketBits {
		return nil
	}
	kept := make(map[string]bool, len(r.Ahead)+len(r.Undecided))
	for _, h := range r.Ahead {
		kept[h.Addr] = true
	}
	for _, h := range r.Undecided {
		kept[h.Addr] = true
	}
	return &resumed{r, kept}
}

// covers says whether the previous walk decided candidate c: it is kept, or
// it was walked and has not changed since (its bound, read from its own
// rows, is the same then).
func (w *resumed) covers(c *candidate) bool {
	if w == nil {
		return false
	}
	if w.kept[c.addr] {
		return true
	}
	if c.changed > w.Changed {
		return false
	}
	if w.All {
		return true
	}
	d := cmpDecimal(c.bound, w.Bound)
	return d > 0 || (d == 0 && c.addr < w.Addr)
}

// nextWalk is the state for the page after one whose walk covered
// cands[:stop], with the held holders after the page (ahead, any order),
// the undecided ones (in the page's order) and the previous state's floor;
// nil when every candidate's current balance was its balance at the end
// (nothing to save).
func nextWalk(cands []*candidate, stop int, q HeldQuery, ahead, undecided []held, floor *held, n int) *HeldResume {
	r := &HeldResume{Start: q.Start, End: q.End, Size: n, Bits: q.BucketBits, Changed: -1, Floor: floor}
	for _, c := range cands {
		r.Changed = max(r.Changed, c.changed)
	}
	if r.Changed <= q.End {
		return nil
	}
	if stop == len(cands) {
		r.All = true
	} else {
		r.Bound, r.Addr = cands[stop].bound, cands[stop].addr
	}
	// The first of both lists in the page's order, before the floor.
	slices.SortFunc(ahead, held.cmp)
	for {
		a, u := len(r.Ahead), len(r.Undecided)
		isAhead := a < len(ahead) && (u == len(undecided) || ahead[a].before(undecided[u]))
		var h held
		switch {
		case isAhead:
			h = ahead[a]
		case u < len(undecided):
			h = undecided[u]
		default:
			return r
		}
		if r.Floor != nil && !h.before(*r.Floor) {
			return r
		}
		if a+u == min(resumePages*(n+1), maxResume) {
			r.Floor = &h
			return r
		}
		if isAhead {
			r.Ahead = append(r.Ahead, h)
		} else {
			r.Undecided = append(r.Undecided, h)
		}
	}
}

// heldChunk is how many holders' balances at the range's end one statement
// reads.
const heldChunk = 128

// held is a holder and its balance at the range's end, a stored decimal.
type held struct {
	Addr string `json:"a"`
	Bal  string `json:"b"`
}

// cmp orders holders as the route does: balance descending, then address.
func (a held) cmp(b held) int {
	if c := cmpDecimal(b.Bal, a.Bal); c != 0 {
		return c
	}
	return strings.Compare(a.Addr, b.Addr)
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
	// After boundAtEnd: the largest its balance after the range's end can
	// be, or that balance when exact (known without a seek; "" for none).
	bound string
	exact bool
}

// readCandidates reads the holders of q's token whose largest balance ever
// reached thr.
func readCandidates(ctx context.Context, db *store.DB, q HeldQuery, thr string) ([]*candidate, error) {
	rows, err := db.QueryContext(ctx, candidatesQuery(ctx, db), q.Chain, store.Hex(q.Token), q.ErcType, len(thr), thr)
	if err != nil {
		return nil, fmt.Errorf("metrics: read holders of %s: %w", q.Token, err)
	}
	defer rows.Close()
	// Scanned in place, into blocks of candidateBlock: a candidate scanned
	// into a variable of its own escaped to the heap, one allocation a
	// holder, and one growing slice copied each (2,000 on a busy token) up
	// to three times.
	var out []*candidate
	var block []candidate
	for rows.Next() {
		if len(block) == cap(block) {
			block = make([]candidate, 0, candidateBlock)
		}
		block = append(block, candidate{})
		c := &block[len(block)-1]
		out = append(out, c)
		if err := rows.Scan(store.ScanHex(&c.addr), &c.changed, &c.balance, &c.max); err != nil {
			return nil, fmt.Errorf("metrics: read holders of %s: %w", q.Token, err)
		}
		if !isDecimal(c.max) || strings.HasPrefix(c.max, "-") || !isDecimal(c.balance) {
			return nil, fmt.Errorf("metrics: stored balance %q or largest balance %q of %s in %s is not a decimal", c.balance, c.max, c.addr, q.Token)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: read holders of %s: %w", q.Token, err)
	}
	return out, nil
}

// candidatesQuery is readCandidates' statement: the token's holders whose
// largest balance reached the threshold (chain, token, type, the
// threshold's length and digits), in one range of evm_token_balances_token,
// which on SQLite holds all it reads (0198). Stored decimals compare
// without parsing: a longer number is larger, equal lengths compare as text.
func candidatesQuery(ctx context.Context, db *store.DB) string {
	return `SELECT b.holder, b.block_number, b.balance, b.max_balance
		FROM evm_token_balances b` + db.IndexedBy(ctx, "evm_token_balances_token") + `
		WHERE b.chain_key = $1 AND b.token = $2 AND b.erc_type = $3 AND b.token_id = ''
		AND (LENGTH(b.max_balance) > $4 OR (LENGTH(b.max_balance) = $4 AND b.max_balance >= $5))`
}

// candidateBlock is how many candidates readCandidates allocates at once.
const candidateBlock = 256

// boundAtEnd sets each candidate's balance after q.End when it is known
// without a seek of its history, else its bound (see HeldAbove), and sorts
// them in the walk's order: by bound, largest first, then by address.
func boundAtEnd(ctx context.Context, db *store.DB, q HeldQuery, cands []*candidate) error {
	past := false
	for _, c := range cands {
		if c.changed <= q.End {
			c.bound, c.exact = c.balance, true
		} else {
			past = true
		}
	}
	if past && q.End >= 0 {
		b := q.End >> q.BucketBits
		inEnd, before, err := readSpans(ctx, db, q, b)
		if err != nil {
			return err
		}
		for _, c := range cands {
			if c.exact {
				continue
			}
			if s, ok := findSpan(inEnd, c.addr); ok {
				c.bound, c.exact = s.bal, s.exact
			} else if s, ok := findSpan(before, c.addr); ok {
				c.bound, c.exact = s.bal, true // no change in End's bucket
			}
		}
	}
	for _, c := range cands {
		if !c.exact && (c.bound == "" || cmpDecimal(c.max, c.bound) < 0) {
			c.bound = c.max
		}
	}
	slices.SortFunc(cands, func(a, b *candidate) int {
		if c := cmpDecimal(b.bound, a.bound); c != 0 {
			return c
		}
		return strings.Compare(a.addr, b.addr)
	})
	return nil
}

// spanAt is what a holder's row of evm_token_balance_buckets (migration
// 0190) says of its balance after a block of the row's bucket: exact (the
// balance it entered the bucket with, before the row's first change, or
// the one after its last) or bounded by the largest it held in the bucket
// (exact false).
type spanAt struct {
	holder string
	bal    string
	exact  bool
}

// findSpan is holder's entry of spans (sorted by holder).
func findSpan(spans []spanAt, holder string) (spanAt, bool) {
	i, ok := slices.BinarySearchFunc(spans, holder, func(s spanAt, h string) int { return strings.Compare(s.holder, h) })
	if !ok {
		return spanAt{}, false
	}
	return spans[i], true
}

// readSpans reads q's token's rows of evm_token_balance_buckets in End's
// bucket b and the one before (one index range) as what each says of the
// holder's balance after End: inEnd from b's rows, before the balance after
// each holder's last change in b-1. Both are in holder order (the primary
// key's, bytes; the hex strings sort alike): a page looks its 2,000
// candidates up by binary search, where a map of the 3,500 rows was a
// quarter of the request's allocations. Of a row's three balances only the
// one End needs is kept.
func readSpans(ctx context.Context, db *store.DB, q HeldQuery, b int64) (inEnd, before []spanAt, err error) {
	rows, err := db.QueryContext(ctx, `SELECT bucket, holder, first_block, last_block, entering, last_balance, hi
		FROM evm_token_balance_buckets WHERE chain_key = $1 AND token = $2 AND erc_type = $3 AND bucket >= $4 AND bucket <= $5
		ORDER BY bucket, holder`,
		q.Chain, store.Hex(q.Token), q.ErcType, b-1, b)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: read balance buckets of %s: %w", q.Token, err)
	}
	defer rows.Close()
	inEnd, before = make([]spanAt, 0, 256), make([]spanAt, 0, 256)
	var bucket, first, last int64
	var holder string // scanned outside the row: a row scanned into escaped, one allocation each
	var entering, lastBal, hi sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&bucket, store.ScanHex(&holder), &first, &last, &entering, &lastBal, &hi); err != nil {
			return nil, nil, fmt.Errorf("metrics: read balance buckets of %s: %w", q.Token, err)
		}
		s := spanAt{holder: holder}
		v, none := lastBal, false // none: "" (no balance) is a valid answer
		switch {
		case bucket != b || q.End >= last:
			s.exact = true
		case q.End < first:
			v, none, s.exact = entering, true, true
		default:
			v = hi
		}
		if s.bal = string(v); !(none && s.bal == "") && !isDecimal(s.bal) {
			return nil, nil, fmt.Errorf("metrics: stored balance %q of %s in %s (bucket %d) is not a decimal", s.bal, s.holder, q.Token, bucket)
		}
		if bucket == b {
			inEnd = append(inEnd, s)
		} else {
			before = append(before, s)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("metrics: read balance buckets of %s: %w", q.Token, err)
	}
	return inEnd, before, nil
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
func heldInRange(ctx context.Context, db *store.DB, chain, token, ercType, thr string, startBlock, endBlock int64, undecided map[string]held) ([]held, error) {
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
			out = append(out, undecided[holder])
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: read balance history of %s: %w", token, err)
	}
	return out, nil
}
