package evm

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
)

// HolderBucketBits sizes the buckets of evm_token_balance_buckets (migration
// 0190): block_number >> HolderBucketBits, 4,096 blocks (about two hours of
// a two-second chain). The Metrics API's token holders over time
// (internal/metrics HeldAbove) reads a token's rows of two buckets to learn
// most holders' balances after a past block without a seek of each one's
// history. Larger buckets leave fewer holders unknown but bound the others
// more loosely: measured on the five-times API dataset, 4,096 left 13% of a
// page of 100's holders to seek where every holder was sought before.
const HolderBucketBits = 12

// holderSpan is a token key's changes in one bucket of blocks, as its
// evm_token_balance_buckets row holds them: the first and last change's
// blocks, the balance before the first (entering) and after the last, and
// the largest one held (hi, non-negative: an upper bound).
type holderSpan struct {
	bucket, first, last int64
	entering, lastBal   string
	hi                  string
}

// spanRow is a span closed within the batch (the key changed again in a
// later bucket), waiting for the flush.
type spanRow struct {
	k tokenKey
	s holderSpan
}

// nonNegative is a stored decimal as a bound of what was held: a negative
// balance (a token whose logs lie) holds nothing; "" (no balance) stays.
func nonNegative(dec string) string {
	if strings.HasPrefix(dec, "-") {
		return "0"
	}
	return dec
}

// greaterDecimal says whether non-negative decimal a is larger than b (the
// empty string is below every one).
func greaterDecimal(a, b string) bool {
	return len(a) > len(b) || (len(a) == len(b) && a > b)
}

// spanAfter is key k's span after its change to dec at block num of bucket
// b: d's span continued in the same bucket, or a new one (d's closed and
// queued on closed). entering is k's balance before the change when d is
// not k's batch entry yet (dirty false; "" when k had none); a span
// continued or closed in the batch knows it.
func spanAfter(d dirtyBalance, dirty bool, entering, dec string, b, num int64, k tokenKey, closed *[]spanRow) holderSpan {
	s := d.span
	switch {
	case !dirty:
		s = holderSpan{bucket: b, first: num, entering: entering, hi: nonNegative(entering)}
	case s.bucket != b:
		*closed = append(*closed, spanRow{k, s})
		s = holderSpan{bucket: b, first: num, entering: s.lastBal, hi: nonNegative(s.lastBal)}
	}
	s.last, s.lastBal = num, dec
	if v := nonNegative(dec); greaterDecimal(v, s.hi) {
		s.hi = v
	}
	return s
}

// queueSpans adds the batch's spans (closed ones and those of the dirty
// token keys) to the bucket rows in key order (token first, as the table).
func (w *writer) queueSpans() {
	rows := w.closedSpans
	for k, d := range w.dirtyT {
		if k.id == "" {
			rows = append(rows, spanRow{k, d.span})
		}
	}
	slices.SortFunc(rows, func(a, b spanRow) int {
		return cmp.Or(bytes.Compare(a.k.token[:], b.k.token[:]), cmp.Compare(a.k.typ.String(), b.k.typ.String()),
			cmp.Compare(a.s.bucket, b.s.bucket), bytes.Compare(a.k.holder[:], b.k.holder[:]))
	})
	for _, r := range rows {
		w.spans.args = append(w.spans.args, r.k.token[:], r.k.typ.String(), r.s.bucket, r.k.holder[:],
			r.s.first, r.s.entering, r.s.last, r.s.lastBal, r.s.hi)
	}
	// rows may share closedSpans' array past its length: both cleared, so
	// neither keeps the batch's balances.
	clear(rows)
	clear(w.closedSpans)
	w.closedSpans = w.closedSpans[:0]
}
