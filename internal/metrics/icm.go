package metrics

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// icmRollup counts ICM messages per (source, destination) blockchain pair and
// hour, day and all time. Beside each pair it keeps three aggregate keys, an
// empty id standing for every blockchain on that side: per source, per
// destination, and in all, so every query reads one key range per group it
// answers. A message counts once, at its time in the ICM index
// (icm_messages.sort_time: its send when the source chain is indexed, else its
// receipt), whatever the messenger contract. Each EVM chain's batch re-reads
// the messages its blocks' ICM events touched and moves a message's count when
// its pair or time changed (its other side was indexed later) or removes it
// when the index dropped it, so the counts never depend on which chain was
// indexed first.
type icmRollup struct {
	lo, hi int64 // block range of the batch
	blocks int
}

type icmPlace struct {
	src, dst string
	time     int64
}

type icmBucket struct {
	src, dst string
	bucket   int64
}

func (k icmBucket) compare(o icmBucket) int {
	return cmp.Or(cmp.Compare(k.src, o.src), cmp.Compare(k.dst, o.dst), cmp.Compare(k.bucket, o.bucket))
}

const (
	selICMTouched = `SELECT DISTINCT message_id FROM icm_events WHERE chain_key = $1 AND block_number >= $2 AND block_number <= $3`
	selICMMessage = `SELECT source_blockchain_id, destination_blockchain_id, sort_time FROM icm_messages WHERE message_id = $1`
	selICMCounted = `SELECT src, dst, msg_time FROM metrics_icm_messages WHERE message_id = $1`
	upICMCounted  = `INSERT INTO metrics_icm_messages (message_id, src, dst, msg_time) VALUES ($1,$2,$3,$4)
		ON CONFLICT (message_id) DO UPDATE SET src = excluded.src, dst = excluded.dst, msg_time = excluded.msg_time`
	delICMCounted = `DELETE FROM metrics_icm_messages WHERE message_id = $1`
	upICMHourly   = `INSERT INTO metrics_icm_hourly (src, dst, bucket, messages) VALUES ($1,$2,$3,$4)
		ON CONFLICT (src, dst, bucket) DO UPDATE SET messages = metrics_icm_hourly.messages + excluded.messages`
	upICMDaily = `INSERT INTO metrics_icm_daily (src, dst, bucket, messages) VALUES ($1,$2,$3,$4)
		ON CONFLICT (src, dst, bucket) DO UPDATE SET messages = metrics_icm_daily.messages + excluded.messages`
	upICMPair = `INSERT INTO metrics_icm_pairs (src, dst, messages) VALUES ($1,$2,$3)
		ON CONFLICT (src, dst) DO UPDATE SET messages = metrics_icm_pairs.messages + excluded.messages`
	lockICMTotals = `INSERT INTO metrics_icm_totals_lock (id) VALUES (1) ON CONFLICT (id) DO UPDATE SET id = excluded.id`
	// A day's total row starts as the total before it.
	insICMTotal = `INSERT INTO metrics_icm_daily_totals (src, dst, bucket, messages) VALUES ($1, $2, $3,
		COALESCE((SELECT t.messages FROM metrics_icm_daily_totals t WHERE t.src = $1 AND t.dst = $2 AND t.bucket < $3
		ORDER BY t.bucket DESC LIMIT 1), 0)) ON CONFLICT (src, dst, bucket) DO NOTHING`
	updICMTotals = `UPDATE metrics_icm_daily_totals SET messages = messages + $1 WHERE src = $2 AND dst = $3 AND bucket >= $4 AND bucket < $5`
)

func (r *icmRollup) add(height int64) {
	if r.blocks == 0 {
		r.lo, r.hi = height, height
	}
	r.lo, r.hi = min(r.lo, height), max(r.hi, height)
	r.blocks++
}

// flush recounts the messages the batch's blocks of chain touched; it runs
// after the ICM indexer wrote them (in the same transaction).
func (r *icmRollup) flush(ctx context.Context, tx *store.Tx, chain string) error {
	defer r.discard()
	if r.blocks == 0 {
		return nil
	}
	ids, err := queryStrings(ctx, tx, selICMTouched, chain, r.lo, r.hi)
	if err != nil {
		return fmt.Errorf("icm messages of blocks %d..%d: %w", r.lo, r.hi, err)
	}
	hourly, daily := map[icmBucket]int64{}, map[icmBucket]int64{}
	pairs := map[icmBucket]int64{} // bucket 0
	move := func(p icmPlace, n int64) {
		for _, k := range [][2]string{{p.src, p.dst}, {p.src, ""}, {"", p.dst}, {"", ""}} {
			hourly[icmBucket{k[0], k[1], Hour.Floor(p.time)}] += n
			daily[icmBucket{k[0], k[1], Day.Floor(p.time)}] += n
			pairs[icmBucket{k[0], k[1], 0}] += n
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		if id == "" {
			continue
		}
		now, exists, err := icmPlaceOf(ctx, tx, selICMMessage, id)
		if err != nil {
			return err
		}
		was, counted, err := icmPlaceOf(ctx, tx, selICMCounted, id)
		if err != nil {
			return err
		}
		if exists == counted && now == was {
			continue
		}
		if counted {
			move(was, -1)
		}
		if exists {
			move(now, 1)
			_, err = tx.Exec(ctx, upICMCounted, id, now.src, now.dst, now.time)
		} else {
			_, err = tx.Exec(ctx, delICMCounted, id)
		}
		if err != nil {
			return fmt.Errorf("icm message %s: %w", id, err)
		}
	}
	for _, t := range []struct {
		q      string
		counts map[icmBucket]int64
	}{{upICMHourly, hourly}, {upICMDaily, daily}} {
		for _, k := range slices.SortedFunc(maps.Keys(t.counts), icmBucket.compare) {
			if n := t.counts[k]; n != 0 {
				if _, err := tx.Exec(ctx, t.q, k.src, k.dst, k.bucket, n); err != nil {
					return fmt.Errorf("icm counts %s -> %s: %w", k.src, k.dst, err)
				}
			}
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(pairs), icmBucket.compare) {
		if n := pairs[k]; n != 0 {
			if _, err := tx.Exec(ctx, upICMPair, k.src, k.dst, n); err != nil {
				return fmt.Errorf("icm counts %s -> %s: %w", k.src, k.dst, err)
			}
		}
	}
	return flushICMTotals(ctx, tx, daily)
}

// flushICMTotals applies the batch's daily count changes to the running
// totals (metrics_icm_daily_totals): per key, a total row for every changed
// day (the total before it, at first), then each changed day's delta added to
// its row and every later one, in one range update per run of rows between
// changed days. A batch at the tip changes the last row or two; a count moved
// to an older day (its other side indexed later) updates the rows since.
// Taken after the daily upserts, the lock is the last one the transaction
// waits for, so two chains' batches cannot deadlock on it.
func flushICMTotals(ctx context.Context, tx *store.Tx, daily map[icmBucket]int64) error {
	var changed []icmBucket
	for _, k := range slices.SortedFunc(maps.Keys(daily), icmBucket.compare) {
		if daily[k] != 0 {
			changed = append(changed, k)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, lockICMTotals); err != nil {
		return fmt.Errorf("icm totals: lock: %w", err)
	}
	for _, k := range changed {
		if _, err := tx.Exec(ctx, insICMTotal, k.src, k.dst, k.bucket); err != nil {
			return fmt.Errorf("icm totals %s -> %s: %w", k.src, k.dst, err)
		}
	}
	run := int64(0)
	for i, k := range changed {
		run += daily[k]
		end := int64(math.MaxInt64)
		if i+1 < len(changed) && changed[i+1].src == k.src && changed[i+1].dst == k.dst {
			end = changed[i+1].bucket
		}
		if run != 0 {
			if _, err := tx.Exec(ctx, updICMTotals, run, k.src, k.dst, k.bucket, end); err != nil {
				return fmt.Errorf("icm totals %s -> %s: %w", k.src, k.dst, err)
			}
		}
		if end == math.MaxInt64 {
			run = 0 // the key's last changed day
		}
	}
	return nil
}

func icmPlaceOf(ctx context.Context, tx *store.Tx, q, id string) (icmPlace, bool, error) {
	var p icmPlace
	err := tx.QueryRow(ctx, q, id).Scan(&p.src, &p.dst, &p.time)
	if errors.Is(err, sql.ErrNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, fmt.Errorf("icm message %s: %w", id, err)
	}
	return p, true, nil
}

func (r *icmRollup) discard() { r.blocks = 0 }
