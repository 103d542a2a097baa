package metrics

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// icmWrite is one scripted change of the ICM index at a block: a message
// (re)written with its pair and time, or dropped.
type icmWrite struct {
	id, src, dst string
	time         int64
	drop         bool
}

// icmScriptIndexer writes what the EVM and ICM indexers write for scripted
// blocks (evm_blocks; an icm_events row per touched message; the message's
// icm_messages row, or its removal), so what devnet-d lacks reaches the ICM
// rollup through the real store: a year of history, counts moved to much
// older days (the other side of a message indexed later) and removed.
type icmScriptIndexer struct {
	blocks map[uint64][]icmWrite
}

func (s *icmScriptIndexer) DerivedTables() []string {
	return []string{"evm_blocks", "icm_events", "icm_messages"}
}

func (s *icmScriptIndexer) Apply(ctx context.Context, tx *store.Tx, b ingest.RawBlock) error {
	if _, err := tx.Exec(ctx, `INSERT INTO evm_blocks (chain_key, number, hash, parent_hash, timestamp, tx_count, gas_used,
		gas_limit, miner, size_bytes, state_root, extra_data) VALUES ('C',$1,$2,$3,$4,0,0,0,$3,0,$3,'0x')`,
		int64(b.Height), store.Hex(b.Hash), []byte{}, b.Timestamp); err != nil {
		return err
	}
	for i, w := range s.blocks[b.Height] {
		if _, err := tx.Exec(ctx, `INSERT INTO icm_events (chain_key, block_number, log_index, message_id, event, chain_blockchain_id,
			contract_address, block_time, tx_index, tx_hash, tx_from, tx_gas_used, topics, data)
			VALUES ('C',$1,$2,$3,'SendCrossChainMessage','','',$4,0,'','',0,'',$5)`,
			int64(b.Height), i, w.id, b.Timestamp, []byte{}); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM icm_messages WHERE message_id = $1`, w.id); err != nil || w.drop {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO icm_messages (message_id, contract_address, source_blockchain_id,
			destination_blockchain_id, message_nonce, origin_sender, destination_address, required_gas_limit, allowed_relayers,
			receipts, payload, sort_time, has_source, src_chain_key, src_block, src_tx_hash, src_tx_from, src_time, src_gas_used,
			fee_token, fee_amount, fee_additions, receipt_delivered, receipt_tx_hash, receipt_time, receipt_relayer,
			has_destination, dst_chain_key, dst_block, dst_tx_hash, dst_time, dst_gas_used, deliverer, reward_redeemer,
			executed, executed_tx_hash, executed_time, execution_failures, failed_tx_hash)
			VALUES ($1,'',$2,$3,'0','','','0','[]','[]',$4,$5,true,'C',0,'','',$5,0,'','0',0,false,'',0,'',
			false,'',0,'',0,0,'','',false,'',0,0,'')`, w.id, w.src, w.dst, []byte{}, w.time); err != nil {
			return err
		}
	}
	return nil
}

// icmScript is a seeded history of about 14 months: messages among three
// sources and two destinations at each block's time, older messages moved up
// to 200 days back and some dropped, returned with the block times.
func icmScript(rng *rand.Rand, blocks int) (map[uint64][]icmWrite, []int64) {
	const base = int64(1_700_000_000)
	script, times := map[uint64][]icmWrite{}, []int64{}
	var live []icmWrite
	for h := 1; h <= blocks; h++ {
		t := base + int64(h)*7*86400 + rng.Int63n(86400)
		times = append(times, t)
		var ws []icmWrite
		for i := rng.Intn(4); i > 0; i-- {
			w := icmWrite{id: fmt.Sprintf("m%d-%d", h, i), src: fmt.Sprintf("s%d", rng.Intn(3)), dst: fmt.Sprintf("d%d", rng.Intn(2)),
				time: t - rng.Int63n(3*86400)}
			live = append(live, w)
			ws = append(ws, w)
		}
		if len(live) > 0 && rng.Intn(2) == 0 {
			i := rng.Intn(len(live))
			live[i].time -= rng.Int63n(200 * 86400)
			ws = append(ws, live[i])
		}
		if len(live) > 0 && rng.Intn(5) == 0 {
			i := rng.Intn(len(live))
			ws = append(ws, icmWrite{id: live[i].id, drop: true})
			live = append(live[:i], live[i+1:]...)
		}
		script[uint64(h)] = ws
	}
	return script, times
}

// TestICMSummaryWindowsScripted indexes a scripted year of ICM messages in
// batches of 1 to 4 blocks and after every batch compares the summary's
// windows (ICMWindowSums, at every level and filter) with the messages of
// icm_messages counted one by one, and the running daily totals with the
// daily counts summed from scratch, on both backends.
func TestICMSummaryWindowsScripted(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		rng := rand.New(rand.NewSource(21))
		const blocks = 64
		script, times := icmScript(rng, blocks)
		ix := WithRollup("C", KindEVM, &icmScriptIndexer{blocks: script})
		for h := 1; h <= blocks; {
			batch := map[uint64]int64{}
			for n := 1 + rng.Intn(4); n > 0 && h <= blocks; n, h = n-1, h+1 {
				batch[uint64(h)] = times[h-1]
			}
			applyBatch(t, db, ix, batch)
			checkICMTotals(t, db, h-1)
			checkICMWindows(t, db, times[h-2], rng)
		}
	})
}

// checkICMTotals compares the running totals with the daily counts summed
// from scratch (rows where a total changed; a day without a row has the
// total of the row before it).
func checkICMTotals(t *testing.T, db *store.DB, height int) {
	t.Helper()
	read := func(q string) map[[3]string]int64 {
		rows, err := db.QueryContext(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[[3]string]int64{}
		for rows.Next() {
			var k [3]string
			var n int64
			if err := rows.Scan(&k[0], &k[1], &k[2], &n); err != nil {
				t.Fatal(err)
			}
			out[k] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := read(`SELECT src, dst, bucket, messages FROM metrics_icm_daily_totals`)
	want := read(`SELECT src, dst, bucket, SUM(messages) OVER (PARTITION BY src, dst ORDER BY bucket) FROM metrics_icm_daily`)
	for k, n := range got {
		if w, ok := want[k]; !ok || w != n {
			t.Errorf("after block %d: total %v = %d, want %d (daily row %v)", height, k, n, w, ok)
		}
	}
	for k, w := range want {
		// A day whose count never changed needs no total row, unless it
		// has messages.
		if _, ok := got[k]; !ok && w != 0 {
			var day int64
			if err := db.QueryRowContext(context.Background(), `SELECT messages FROM metrics_icm_daily WHERE src = $1 AND dst = $2 AND bucket = $3`,
				k[0], k[1], k[2]).Scan(&day); err != nil || day != 0 {
				t.Errorf("after block %d: no total row for %v (day's count %d, %v)", height, k, day, err)
			}
		}
	}
}

// checkICMWindows compares ICMWindowSums at every level and filter, for the
// summary's windows ending at tip and for random ones, with icm_messages
// counted one by one.
func checkICMWindows(t *testing.T, db *store.DB, tip int64, rng *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	type msg struct {
		src, dst string
		time     int64
	}
	rows, err := db.QueryContext(ctx, `SELECT source_blockchain_id, destination_blockchain_id, sort_time FROM icm_messages`)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []msg
	for rows.Next() {
		var m msg
		if err := rows.Scan(&m.src, &m.dst, &m.time); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	rows.Close()
	hour, day := Hour.Floor(tip), Day.Floor(tip)
	hourFroms := []int64{hour - 23*3600, hour}
	dayFroms := []int64{day - 364*86400, day - 89*86400, day - 29*86400, day - 6*86400}
	dayFroms = append(dayFroms, day-rng.Int63n(400)*86400)
	levels := []ICMLevel{{}, {BySrc: true}, {ByDst: true}, {BySrc: true, ByDst: true}, {BySrc: true, Src: "s1"},
		{ByDst: true, Dst: "d0"}, {BySrc: true, ByDst: true, Src: "s2"}, {Key: &ICMPair{Src: "s0", Dst: "d1"}}}
	for _, l := range levels {
		want := map[[2]string][]int64{}
		wantH := map[[2]string][]int64{}
		for _, m := range msgs {
			k := [2]string{m.src, m.dst}
			if l.Key != nil {
				if k != [2]string{l.Key.Src, l.Key.Dst} {
					continue
				}
			} else {
				if (l.Src != "" && m.src != l.Src) || (l.Dst != "" && m.dst != l.Dst) {
					continue
				}
				if !l.BySrc {
					k[0] = ""
				}
				if !l.ByDst {
					k[1] = ""
				}
			}
			if want[k] == nil {
				want[k], wantH[k] = make([]int64, len(dayFroms)), make([]int64, len(hourFroms))
			}
			for i, from := range dayFroms {
				if m.time >= from && m.time < day+86400 {
					want[k][i]++
				}
			}
			for i, from := range hourFroms {
				if m.time >= from && m.time < hour+3600 {
					wantH[k][i]++
				}
			}
		}
		hours, days, err := ICMWindowSums(ctx, db, l, hourFroms, hour+3600, dayFroms, day+86400)
		if err != nil {
			t.Fatal(err)
		}
		// Keys whose messages all moved away or were dropped answer zeros.
		for _, m := range []map[[2]string][]int64{hours, days} {
			for k, v := range m {
				if want[k] == nil && !reflect.DeepEqual(v, make([]int64, len(v))) {
					t.Errorf("tip %d, level %+v: %v = %v, want zeros", tip, l, k, v)
				}
			}
		}
		for k, w := range want {
			// A key without hourly rows in the windows has no hourly sums.
			h := hours[k]
			if h == nil {
				h = make([]int64, len(hourFroms))
			}
			if !reflect.DeepEqual(days[k], w) || !reflect.DeepEqual(h, wantH[k]) {
				t.Errorf("tip %d, level %+v, %v: days %v hours %v, want %v %v", tip, l, k, days[k], h, w, wantH[k])
			}
		}
	}
}
