package metrics

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
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
