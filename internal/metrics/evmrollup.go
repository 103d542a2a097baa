package metrics

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// Roles of an address in metrics_evm_seen.
const (
	roleActive   = 1 // from or to of a tx or a token transfer
	roleSender   = 2 // from of a tx or a token transfer
	roleDeployer = 3 // creator of a contract
)

// kindEver is metrics_evm_seen's "ever" kind (bucket 0): an address's first
// appearance in a role, which increments the cumulative counts.
const kindEver = 0

// evmKinds are the interval kinds every EVM block is added to; an Interval's
// value is its kind.
var evmKinds = [...]Interval{Hour, Day, Week, Month}

// evmTables are the EVM metrics rollups.
var evmTables = []string{"metrics_evm_buckets", "metrics_evm_seen", "metrics_evm_last"}

// EVMBucket is one row of metrics_evm_buckets: an interval's totals.
type EVMBucket struct {
	Bucket          int64
	Txs, GasUsed    int64
	Fees, PriceSum  big.Int // wei
	MaxPrice        big.Int // wei
	MaxTPS, MaxGPS  float64
	Contracts       int64
	Active, Senders int64
	Deployers       int64
	LastMs          int64
	CumTxs          int64
	CumAddresses    int64
	CumContracts    int64
	CumDeployers    int64
}

// add folds o's sums and maxima into b: everything but the distinct counts
// (which do not add up across intervals) and the cumulative totals.
func (b *EVMBucket) add(o *EVMBucket) {
	b.Txs += o.Txs
	b.GasUsed += o.GasUsed
	b.Fees.Add(&b.Fees, &o.Fees)
	b.PriceSum.Add(&b.PriceSum, &o.PriceSum)
	if o.MaxPrice.Cmp(&b.MaxPrice) > 0 {
		b.MaxPrice.Set(&o.MaxPrice)
	}
	b.MaxTPS, b.MaxGPS = max(b.MaxTPS, o.MaxTPS), max(b.MaxGPS, o.MaxGPS)
	b.Contracts += o.Contracts
	b.LastMs = max(b.LastMs, o.LastMs)
}

type bucketKey struct {
	kind   Interval
	bucket int64
}

// evmRollup collects the EVM metrics of the blocks applied since the last
// flush and writes them once per batch. Blocks are read back in one range per
// table from the rows the EVM indexer wrote (evm_blocks, evm_txs,
// evm_transfers, evm_internal_txs), so the metrics count what the index shows.
type evmRollup struct {
	any     bool  // a block was applied since the last flush
	lo, hi  int64 // the heights applied since the last flush
	buckets map[bucketKey]*EVMBucket
	sets    map[seenKey]map[string]struct{} // (role, kind, bucket) -> addresses
	ever    map[int]map[string]int64        // role -> address -> time of its first block in the batch
	last    map[int]map[string]int64        // role -> address -> time of its newest block in the batch
	// known outlives the batch (reset keeps it): the addresses earlier
	// batches stored in the newest buckets, which flush does not probe.
	known seenCache
	// at holds, per role, the sets of the time see was last given (setsAt).
	at [roleDeployer + 1]setsAtTime
}

// setsAtTime is a role's address sets of the buckets holding ms.
type setsAtTime struct {
	ok   bool
	ms   int64
	sets [len(evmKinds)]map[string]struct{}
}

type seenKey struct {
	role int
	bucketKey
}

func (e *evmRollup) note(height int64) {
	if !e.any {
		e.any, e.lo, e.hi = true, height, height
		return
	}
	e.lo, e.hi = min(e.lo, height), max(e.hi, height)
}

func (e *evmRollup) reset() {
	e.any = false
	clear(e.buckets)
	clear(e.sets)
	e.at = [len(e.at)]setsAtTime{}
	clear(e.ever)
	clear(e.last)
}

const (
	selEVMBlocks = `SELECT number, timestamp, timestamp_ms, tx_count, gas_used FROM evm_blocks
		WHERE chain_key = $1 AND number >= $2 AND number <= $3 ORDER BY number`
	selEVMTxs = `SELECT block_number, from_addr, to_addr, gas_used, gas_price, status, contract_address FROM evm_txs
		WHERE chain_key = $1 AND block_number >= $2 AND block_number <= $3`
	selEVMTransfers = `SELECT block_number, from_addr, to_addr FROM evm_transfers
		WHERE chain_key = $1 AND block_number >= $2 AND block_number <= $3`
	// A top-level creation is the tx itself (evm_txs.contract_address); nested
	// ones are the traced frames. Reverted frames created nothing.
	selEVMCreates = `SELECT block_number, from_addr FROM evm_internal_txs
		WHERE chain_key = $1 AND block_number >= $2 AND block_number <= $3
		AND call_type IN ('CREATE', 'CREATE2', 'CREATE3') AND reverted = 0`
)

// blockTime is a block's time in milliseconds: timestampMilliseconds when the
// chain has it, else the seconds.
func blockTime(sec, ms int64) int64 {
	if ms > 0 {
		return ms
	}
	return sec * 1000
}

// Rate is n per second over the time from the previous block (prevMs) to this
// one (ms): the per-block rate of maxTps and maxGps. A block in the same
// millisecond (or second, without millisecond times) as its predecessor
// counts that unit as its duration.
func Rate(n, prevMs, ms int64, millis bool) float64 {
	unit := int64(1000)
	if millis {
		unit = 1
	}
	return float64(n) * 1000 / float64(max(ms-prevMs, unit))
}

var zeroAddr = string(make([]byte, 20))

// party reports whether a (binary) address is a counted party: not empty (a
// creation's recipient) and not the zero address (the mint source and burn
// sink of token transfers).
func party(a []byte) bool { return len(a) > 0 && string(a) != zeroAddr }

// blockInfo is what the rollup needs of one block.
type blockInfo struct {
	ms, prevMs int64
	millis     bool
	first      bool // no previous block is indexed
}

// collect reads the batch's blocks and adds them to the pending buckets.
func (e *evmRollup) collect(ctx context.Context, tx *store.Tx, chain string) error {
	if e.buckets == nil {
		e.buckets = map[bucketKey]*EVMBucket{}
		e.sets = map[seenKey]map[string]struct{}{}
		e.ever = map[int]map[string]int64{}
		e.last = map[int]map[string]int64{}
	}
	blocks := map[int64]*blockInfo{}
	rows, err := tx.Query(ctx, selEVMBlocks, chain, e.lo-1, e.hi)
	if err != nil {
		return fmt.Errorf("read blocks: %w", err)
	}
	var prev *blockInfo
	type blockRow struct {
		number, sec, ms, txs, gas int64
	}
	var list []blockRow
	for rows.Next() {
		var r blockRow
		if err := rows.Scan(&r.number, &r.sec, &r.ms, &r.txs, &r.gas); err != nil {
			rows.Close()
			return fmt.Errorf("read blocks: %w", err)
		}
		list = append(list, r)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return fmt.Errorf("read blocks: %w", err)
	}
	for _, r := range list {
		bi := &blockInfo{ms: blockTime(r.sec, r.ms), millis: r.ms > 0, first: prev == nil}
		if prev != nil {
			bi.prevMs = prev.ms
			bi.millis = bi.millis && prev.millis
		}
		prev = bi
		if r.number < e.lo {
			continue // the batch's predecessor: only its time is needed
		}
		blocks[r.number] = bi
		for _, k := range evmKinds {
			b := e.bucket(k, bi.ms)
			b.Txs += r.txs
			b.GasUsed += r.gas
			b.LastMs = max(b.LastMs, bi.ms)
			if !bi.first {
				b.MaxTPS = max(b.MaxTPS, Rate(r.txs, bi.prevMs, bi.ms, bi.millis))
				b.MaxGPS = max(b.MaxGPS, Rate(r.gas, bi.prevMs, bi.ms, bi.millis))
			}
		}
	}
	if len(blocks) != int(e.hi-e.lo+1) {
		return fmt.Errorf("blocks %d..%d: %d block rows", e.lo, e.hi, len(blocks))
	}
	if err := e.collectTxs(ctx, tx, chain, blocks); err != nil {
		return err
	}
	if err := e.collectParties(ctx, tx, chain, blocks, selEVMTransfers, true); err != nil {
		return fmt.Errorf("read transfers: %w", err)
	}
	if err := e.collectParties(ctx, tx, chain, blocks, selEVMCreates, false); err != nil {
		return fmt.Errorf("read internal creations: %w", err)
	}
	return nil
}

// bucket returns the pending bucket of kind k holding time ms.
func (e *evmRollup) bucket(k Interval, ms int64) *EVMBucket {
	key := bucketKey{k, k.Floor(floorDiv(ms, 1000))}
	b, ok := e.buckets[key]
	if !ok {
		b = &EVMBucket{Bucket: key.bucket}
		e.buckets[key] = b
	}
	return b
}

// see notes address a in role for every interval kind holding ms, and as
// ever seen (roles active and deployer). The address is copied once for all
// the maps, and the sets of a role's newest time are kept at hand (a block's
// parties share its time): per call, a copy per map and a lookup of each
// set (3.5% of the ingest writer's samples; BenchmarkEVMRollupSee 33-47 ->
// 14-16 µs a block: docs/benchmarks.md "Fifteenth session").
func (e *evmRollup) see(role int, a []byte, ms int64) {
	k := string(a)
	for _, s := range e.setsAt(role, ms) {
		s[k] = struct{}{}
	}
	last, ok := e.last[role]
	if !ok {
		last = map[string]int64{}
		e.last[role] = last
	}
	last[k] = max(last[k], ms)
	if role == roleSender {
		return
	}
	ev, ok := e.ever[role]
	if !ok {
		ev = map[string]int64{}
		e.ever[role] = ev
	}
	if t, ok := ev[k]; !ok || ms < t {
		ev[k] = ms
	}
}

// setsAt returns the address sets of role in each interval kind's bucket
// holding ms, created if new.
func (e *evmRollup) setsAt(role int, ms int64) *[len(evmKinds)]map[string]struct{} {
	c := &e.at[role]
	if c.ok && c.ms == ms {
		return &c.sets
	}
	for i, k := range evmKinds {
		key := seenKey{role, bucketKey{k, k.Floor(floorDiv(ms, 1000))}}
		s, ok := e.sets[key]
		if !ok {
			s = map[string]struct{}{}
			e.sets[key] = s
		}
		c.sets[i] = s
	}
	c.ok, c.ms = true, ms
	return &c.sets
}

func (e *evmRollup) collectTxs(ctx context.Context, tx *store.Tx, chain string, blocks map[int64]*blockInfo) error {
	rows, err := tx.Query(ctx, selEVMTxs, chain, e.lo, e.hi)
	if err != nil {
		return fmt.Errorf("read txs: %w", err)
	}
	defer rows.Close()
	var (
		number, gas, status int64
		from, to, created   []byte
		price               string
		p                   big.Int
		fee                 big.Int
	)
	for rows.Next() {
		if err := rows.Scan(&number, &from, &to, &gas, &price, &status, &created); err != nil {
			return fmt.Errorf("read txs: %w", err)
		}
		bi := blocks[number]
		if bi == nil {
			return fmt.Errorf("read txs: tx of block %d outside the batch", number)
		}
		if _, ok := p.SetString(price, 10); !ok {
			return fmt.Errorf("read txs: block %d: gas price %q", number, price)
		}
		fee.Mul(&p, fee.SetInt64(gas))
		for _, k := range evmKinds {
			b := e.bucket(k, bi.ms)
			b.PriceSum.Add(&b.PriceSum, &p)
			b.Fees.Add(&b.Fees, &fee)
			if p.Cmp(&b.MaxPrice) > 0 {
				b.MaxPrice.Set(&p)
			}
			if status == 1 && len(created) > 0 {
				b.Contracts++
			}
		}
		if party(from) {
			e.see(roleActive, from, bi.ms)
			e.see(roleSender, from, bi.ms)
		}
		if party(to) {
			e.see(roleActive, to, bi.ms)
		}
		if status == 1 && len(created) > 0 && party(from) {
			e.see(roleDeployer, from, bi.ms)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read txs: %w", err)
	}
	return nil
}

// collectParties reads (block, from[, to]) rows: token transfers (transfer:
// from and to are active, from is a sender) or nested contract creations
// (from is a deployer, the frame is a contract).
func (e *evmRollup) collectParties(ctx context.Context, tx *store.Tx, chain string, blocks map[int64]*blockInfo, q string, transfer bool) error {
	rows, err := tx.Query(ctx, q, chain, e.lo, e.hi)
	if err != nil {
		return err
	}
	defer rows.Close()
	var number int64
	var from, to []byte
	for rows.Next() {
		dest := []any{&number, &from}
		if transfer {
			dest = append(dest, &to)
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		bi := blocks[number]
		if bi == nil {
			return fmt.Errorf("row of block %d outside the batch", number)
		}
		if !transfer {
			for _, k := range evmKinds {
				e.bucket(k, bi.ms).Contracts++
			}
			if party(from) {
				e.see(roleDeployer, from, bi.ms)
			}
			continue
		}
		if party(from) {
			e.see(roleActive, from, bi.ms)
			e.see(roleSender, from, bi.ms)
		}
		if party(to) {
			e.see(roleActive, to, bi.ms)
		}
	}
	return rows.Err()
}

// seenPerStatement bounds the rows of one metrics_evm_seen insert.
const seenPerStatement = 200

// PostgreSQL forms of insertSeen and writeLast: one fixed statement for any
// number of addresses, passed as arrays (prepared once per transaction). The
// VALUES lists' texts differ with their row count, and each new text was
// parsed and planned again (issue #22).
const (
	insSeenPG = `INSERT INTO metrics_evm_seen (chain_key, role, kind, bucket, address)
		SELECT $1, $2, $3, $4, u.address FROM unnest($5::bytea[]) AS u(address)
		ON CONFLICT (chain_key, role, kind, bucket, address) DO NOTHING RETURNING address`
	upLastPG = `INSERT INTO metrics_evm_last (chain_key, role, address, last_ms)
		SELECT $1, $2, u.address, u.last_ms FROM unnest($3::bytea[], $4::bigint[]) AS u(address, last_ms)
		ON CONFLICT (chain_key, role, address) DO UPDATE SET last_ms = CASE
		WHEN excluded.last_ms > metrics_evm_last.last_ms THEN excluded.last_ms ELSE metrics_evm_last.last_ms END`
)

// insertSeen inserts the addresses of one (role, kind, bucket) and returns
// those that were not there yet.
func insertSeen(ctx context.Context, tx *store.Tx, chain string, key seenKey, addrs []string) ([]string, error) {
	var fresh []string
	if len(addrs) == 0 {
		return nil, nil
	}
	if tx.Dialect() == store.Postgres {
		raw := make([][]byte, len(addrs))
		for i, a := range addrs {
			raw[i] = []byte(a)
		}
		return scanSeen(tx.Query(ctx, insSeenPG, chain, key.role, int(key.kind), key.bucket, raw))
	}
	for i := 0; i < len(addrs); i += seenPerStatement {
		chunk := addrs[i:min(i+seenPerStatement, len(addrs))]
		var b strings.Builder
		b.WriteString(`INSERT INTO metrics_evm_seen (chain_key, role, kind, bucket, address) VALUES `)
		args := make([]any, 0, 4+len(chunk))
		args = append(args, chain, key.role, int(key.kind), key.bucket)
		for j, a := range chunk {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "($1, $2, $3, $4, $%d)", 5+j)
			args = append(args, []byte(a))
		}
		b.WriteString(` ON CONFLICT (chain_key, role, kind, bucket, address) DO NOTHING RETURNING address`)
		got, err := scanSeen(tx.Query(ctx, b.String(), args...))
		if err != nil {
			return nil, err
		}
		fresh = append(fresh, got...)
	}
	return fresh, nil
}

// scanSeen reads the addresses an insert into metrics_evm_seen returned.
func scanSeen(rows *sql.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, fmt.Errorf("write seen addresses: %w", err)
	}
	defer rows.Close()
	var fresh []string
	for rows.Next() {
		var a []byte
		if err := rows.Scan(&a); err != nil {
			return nil, fmt.Errorf("write seen addresses: %w", err)
		}
		fresh = append(fresh, string(a))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("write seen addresses: %w", err)
	}
	return fresh, nil
}

const (
	evmBucketColumns = `bucket, tx_count, gas_used, fees_paid, gas_price_sum, max_gas_price, max_tps, max_gps, contracts,
		active_addresses, active_senders, deployers, last_ms, cum_txs, cum_addresses, cum_contracts, cum_deployers`
	selLatestBucket = `SELECT ` + evmBucketColumns + ` FROM metrics_evm_buckets
		WHERE chain_key = $1 AND kind = $2 ORDER BY bucket DESC LIMIT 1`
	upEVMBucket = `INSERT INTO metrics_evm_buckets (chain_key, kind, ` + evmBucketColumns + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
		ON CONFLICT (chain_key, kind, bucket) DO UPDATE SET tx_count = excluded.tx_count, gas_used = excluded.gas_used,
		fees_paid = excluded.fees_paid, gas_price_sum = excluded.gas_price_sum, max_gas_price = excluded.max_gas_price,
		max_tps = excluded.max_tps, max_gps = excluded.max_gps, contracts = excluded.contracts,
		active_addresses = excluded.active_addresses, active_senders = excluded.active_senders, deployers = excluded.deployers,
		last_ms = excluded.last_ms, cum_txs = excluded.cum_txs, cum_addresses = excluded.cum_addresses,
		cum_contracts = excluded.cum_contracts, cum_deployers = excluded.cum_deployers`
)

// ScanEVMBucket scans a row of evmBucketColumns.
func ScanEVMBucket(s interface{ Scan(...any) error }) (EVMBucket, error) {
	var b EVMBucket
	var fees, sum, maxPrice string
	err := s.Scan(&b.Bucket, &b.Txs, &b.GasUsed, &fees, &sum, &maxPrice, &b.MaxTPS, &b.MaxGPS, &b.Contracts,
		&b.Active, &b.Senders, &b.Deployers, &b.LastMs, &b.CumTxs, &b.CumAddresses, &b.CumContracts, &b.CumDeployers)
	if err != nil {
		return b, err
	}
	for _, f := range []struct {
		dst *big.Int
		s   string
	}{{&b.Fees, fees}, {&b.PriceSum, sum}, {&b.MaxPrice, maxPrice}} {
		if _, ok := f.dst.SetString(f.s, 10); !ok {
			return b, fmt.Errorf("bucket %d: stored amount %q", b.Bucket, f.s)
		}
	}
	return b, nil
}

// flush writes the pending buckets: the new distinct addresses first (their
// counts are what the inserts report new), then each touched bucket merged
// into its row, carrying the cumulative totals from the kind's previous row.
func (e *evmRollup) flush(ctx context.Context, tx *store.Tx, chain string) (err error) {
	if !e.any {
		return nil
	}
	e.known.begin(e.lo)
	defer func() {
		if err != nil {
			e.known.forget() // the transaction will be rolled back
		} else {
			e.known.end(e.hi)
		}
	}()
	if err := e.collect(ctx, tx, chain); err != nil {
		return err
	}
	for _, key := range slices.SortedFunc(maps.Keys(e.sets), func(a, b seenKey) int {
		if a.role != b.role {
			return a.role - b.role
		}
		if a.kind != b.kind {
			return int(a.kind - b.kind)
		}
		return int(a.bucket - b.bucket)
	}) {
		addrs := e.known.unknown(key, slices.Sorted(maps.Keys(e.sets[key])))
		fresh, err := insertSeen(ctx, tx, chain, key, addrs)
		if err != nil {
			return err
		}
		e.known.add(key, addrs)
		b := e.buckets[key.bucketKey]
		if b == nil {
			return fmt.Errorf("addresses of interval %d without a block", key.bucket)
		}
		switch key.role {
		case roleActive:
			b.Active += int64(len(fresh))
		case roleSender:
			b.Senders += int64(len(fresh))
		case roleDeployer:
			b.Deployers += int64(len(fresh))
		}
	}
	// Addresses never seen before increment the cumulative counts of the
	// intervals of their first block.
	newAddrs, newDeployers := map[bucketKey]int64{}, map[bucketKey]int64{}
	for role, into := range map[int]map[bucketKey]int64{roleActive: newAddrs, roleDeployer: newDeployers} {
		ev := e.ever[role]
		if len(ev) == 0 {
			continue
		}
		key := seenKey{role, bucketKey{kindEver, 0}}
		addrs := e.known.unknown(key, slices.Sorted(maps.Keys(ev)))
		fresh, err := insertSeen(ctx, tx, chain, key, addrs)
		if err != nil {
			return err
		}
		e.known.add(key, addrs)
		for _, a := range fresh {
			for _, k := range evmKinds {
				into[bucketKey{k, k.Floor(floorDiv(ev[a], 1000))}]++
			}
		}
	}
	for _, k := range evmKinds {
		if err := e.writeKind(ctx, tx, chain, k, newAddrs, newDeployers); err != nil {
			return err
		}
	}
	for _, role := range []int{roleActive, roleSender, roleDeployer} {
		if err := writeLast(ctx, tx, chain, role, e.last[role]); err != nil {
			return err
		}
	}
	return nil
}

// writeLast moves the addresses' newest times in role forward.
func writeLast(ctx context.Context, tx *store.Tx, chain string, role int, last map[string]int64) error {
	addrs := slices.Sorted(maps.Keys(last))
	if len(addrs) == 0 {
		return nil
	}
	if tx.Dialect() == store.Postgres {
		raw, ms := make([][]byte, len(addrs)), make([]int64, len(addrs))
		for i, a := range addrs {
			raw[i], ms[i] = []byte(a), last[a]
		}
		if _, err := tx.Exec(ctx, upLastPG, chain, role, raw, ms); err != nil {
			return fmt.Errorf("write newest times: %w", err)
		}
		return nil
	}
	for i := 0; i < len(addrs); i += seenPerStatement {
		chunk := addrs[i:min(i+seenPerStatement, len(addrs))]
		var b strings.Builder
		b.WriteString(`INSERT INTO metrics_evm_last (chain_key, role, address, last_ms) VALUES `)
		args := make([]any, 0, 2+2*len(chunk))
		args = append(args, chain, role)
		for j, a := range chunk {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "($1, $2, $%d, $%d)", 3+2*j, 4+2*j)
			args = append(args, []byte(a), last[a])
		}
		b.WriteString(` ON CONFLICT (chain_key, role, address) DO UPDATE SET last_ms = CASE
			WHEN excluded.last_ms > metrics_evm_last.last_ms THEN excluded.last_ms ELSE metrics_evm_last.last_ms END`)
		if _, err := tx.Exec(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("write newest times: %w", err)
		}
	}
	return nil
}

// writeKind merges the pending buckets of kind k into their rows, in time
// order from the kind's newest stored row.
func (e *evmRollup) writeKind(ctx context.Context, tx *store.Tx, chain string, k Interval, newAddrs, newDeployers map[bucketKey]int64) error {
	var starts []int64
	for key := range e.buckets {
		if key.kind == k {
			starts = append(starts, key.bucket)
		}
	}
	slices.Sort(starts)
	last, err := ScanEVMBucket(tx.QueryRow(ctx, selLatestBucket, chain, int(k)))
	stored := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read %s rollup: %w", k, err)
	}
	// The totals through the newest stored interval, carried into the next.
	prevBucket := last.Bucket
	cum := [4]int64{last.CumTxs, last.CumAddresses, last.CumContracts, last.CumDeployers}
	for _, s := range starts {
		key := bucketKey{k, s}
		row := e.buckets[key]
		switch {
		case stored && s == prevBucket:
			p := row
			row = &last
			row.add(p)
			// The batch's counts are of addresses new to the interval.
			row.Active += p.Active
			row.Senders += p.Senders
			row.Deployers += p.Deployers
			cum[0] += p.Txs
			cum[2] += p.Contracts
		case stored && s < prevBucket:
			return fmt.Errorf("%s rollup: a block in interval %d after one in interval %d: block times went backwards", k, s, prevBucket)
		default:
			cum[0] += row.Txs
			cum[2] += row.Contracts
		}
		cum[1] += newAddrs[key]
		cum[3] += newDeployers[key]
		row.CumTxs, row.CumAddresses, row.CumContracts, row.CumDeployers = cum[0], cum[1], cum[2], cum[3]
		if _, err := tx.Exec(ctx, upEVMBucket, chain, int(k), row.Bucket, row.Txs, row.GasUsed, row.Fees.String(),
			row.PriceSum.String(), row.MaxPrice.String(), row.MaxTPS, row.MaxGPS, row.Contracts, row.Active, row.Senders,
			row.Deployers, row.LastMs, row.CumTxs, row.CumAddresses, row.CumContracts, row.CumDeployers); err != nil {
			return fmt.Errorf("write %s rollup: %w", k, err)
		}
		prevBucket, stored = s, true
	}
	return nil
}
