package metrics_test

import (
	"context"
	"fmt"
	"math/rand"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"

	"github.com/permafrost-dev/permafrost/internal/api"
	rollup "github.com/permafrost-dev/permafrost/internal/metrics"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// Benchmarks of the Metrics API v2 staking, L1 fee, ICM and
// validators:getAddresses routes (issue #21 part B) with two concurrent
// clients, through the whole handler stack, on data generated straight into
// the rollup and P-chain tables at a mainnet-like scale:
//
//	go test ./internal/api/metrics/ -run '^$' -bench 'V2PartB' -benchtime 2000x
//
// 5 years of daily staking rows for the primary network and 50 subnets; 50
// L1s of 20 validations with a fee row every day for 2 years (730,000 rows);
// 40 ICM pairs among 14 chains with hourly and daily counts for a year (and
// the per-source, per-destination and total keys); 2,000
// primary-network validator txs. Each reports p50-ms and p99-ms over both
// clients' requests.

const (
	v2bYears       = 5
	v2bSubnets     = 50
	v2bL1s         = 50
	v2bL1Size      = 20
	v2bFeeDays     = 730
	v2bICMPairs    = 40
	v2bICMHours    = 365 * 24
	v2bValidators  = 2000
	v2bTipUnixTime = 1795348137
)

func generateV2PartB(ctx context.Context, tx *store.Tx, rng *rand.Rand) error {
	tip := int64(v2bTipUnixTime)
	tipDay := rollup.Day.Floor(tip)
	first := tip - v2bYears*365*86400
	if _, err := tx.Exec(ctx, `INSERT INTO metrics_chains (chain_key, first_time, tip_time, tip_height, updated_at) VALUES
		('P',$1,$2,1000000,$3), ($4,$5,$6,80000000,$7)`, first, tip, tip, benchChain, first, tip, tip); err != nil {
		return err
	}
	// Staking: a row a day for the primary network and every subnet.
	subnets := []string{constants.PrimaryNetworkID.String()}
	for i := 0; i < v2bSubnets; i++ {
		subnets = append(subnets, ids.ID{byte(i + 1), 0xaa}.String())
	}
	var rows [][]any
	for _, s := range subnets {
		for d := rollup.Day.Floor(first); d <= tipDay; d += 86400 {
			rows = append(rows, []any{s, d, rng.Int63n(2000), fmt.Sprint(rng.Int63()), int64(0), "0", rng.Int63n(50000), fmt.Sprint(rng.Int63())})
		}
	}
	if err := insertRows(ctx, tx, "metrics_staking_daily", []string{"subnet_id", "bucket", "validators", "validator_weight",
		"l1_validators", "l1_weight", "delegators", "delegator_weight"}, rows); err != nil {
		return err
	}
	rows = rows[:0]
	for i, s := range subnets {
		conv := int64(-1)
		if i > 0 {
			conv = int64(i)
		}
		rows = append(rows, []any{s, s, int64(i), first, int64(1), int64(0), "[]", int64(i), conv, tip - v2bFeeDays*86400})
	}
	if err := insertRows(ctx, tx, "p_subnets", []string{"subnet_id", "created_tx_id", "created_height", "created_time", "owner_threshold",
		"owner_locktime", "owner_addresses", "owner_height", "converted_height", "converted_time"}, rows); err != nil {
		return err
	}
	// L1 fees: every validation pays every day.
	var l1s, fees, subnetFees [][]any
	totals := map[int64]int64{}
	for l := 0; l < v2bL1s; l++ {
		subnet := subnets[1+l%v2bSubnets]
		perDay := map[int64]int64{}
		for v := 0; v < v2bL1Size; v++ {
			id := ids.ID{byte(l), byte(v), 0xf1}.String()
			node := ids.NodeID{byte(l), byte(v), 0xf1}.String()
			l1s = append(l1s, []any{id, subnet, node, "", "00000000000000000100", "00000000000000000000", "00000000000000000001", "{}", "{}",
				tip - v2bFeeDays*86400, int64(l), id})
			for d := tipDay - (v2bFeeDays-1)*86400; d <= tipDay; d += 86400 {
				f := 86400 + rng.Int63n(86400)
				fees = append(fees, []any{id, d, subnet, node, f})
				perDay[d] += f
			}
		}
		for d, f := range perDay {
			subnetFees = append(subnetFees, []any{subnet, d, f, int64(v2bL1Size)})
			totals[d] += f
		}
	}
	for _, t := range []struct {
		table string
		cols  []string
		rows  [][]any
	}{
		{"p_l1_validators", []string{"validation_id", "subnet_id", "node_id", "public_key", "weight", "min_nonce", "end_accumulated_fee",
			"remaining_balance_owner", "deactivation_owner", "start_time", "created_height", "created_tx_id"}, l1s},
		{"metrics_l1_fees_daily", []string{"validation_id", "bucket", "subnet_id", "node_id", "fees"}, fees},
		{"metrics_l1_fees_subnet_daily", []string{"subnet_id", "bucket", "fees", "paying"}, subnetFees},
	} {
		if err := insertRows(ctx, tx, t.table, t.cols, t.rows); err != nil {
			return err
		}
	}
	rows = rows[:0]
	for d, f := range totals {
		rows = append(rows, []any{d, f, int64(v2bL1s * v2bL1Size)})
	}
	if err := insertRows(ctx, tx, "metrics_l1_fees_total_daily", []string{"bucket", "fees", "paying"}, rows); err != nil {
		return err
	}
	// ICM: 40 pairs among 14 chains, hourly for a year, with the rollup's
	// aggregate keys (per source, per destination, all).
	hourlyN, dailyN, pairN := map[[3]any]int64{}, map[[3]any]int64{}, map[[2]string]int64{}
	for p := 0; p < v2bICMPairs; p++ {
		src, dst := ids.ID{byte(p % 10), 0x1c}.String(), ids.ID{byte(10 + p/10), 0x1c}.String()
		for h := rollup.Hour.Floor(tip) - (v2bICMHours-1)*3600; h <= tip; h += 3600 {
			n := rng.Int63n(30)
			for _, k := range [][2]string{{src, dst}, {src, ""}, {"", dst}, {"", ""}} {
				hourlyN[[3]any{k[0], k[1], h}] += n
				dailyN[[3]any{k[0], k[1], rollup.Day.Floor(h)}] += n
				pairN[k] += n
			}
		}
	}
	for _, t := range []struct {
		table string
		n     map[[3]any]int64
	}{{"metrics_icm_hourly", hourlyN}, {"metrics_icm_daily", dailyN}} {
		rows = rows[:0]
		for k, n := range t.n {
			rows = append(rows, []any{k[0], k[1], k[2], n})
		}
		if err := insertRows(ctx, tx, t.table, []string{"src", "dst", "bucket", "messages"}, rows); err != nil {
			return err
		}
	}
	rows = rows[:0]
	for k, n := range pairN {
		rows = append(rows, []any{k[0], k[1], n})
	}
	if err := insertRows(ctx, tx, "metrics_icm_pairs", []string{"src", "dst", "messages"}, rows); err != nil {
		return err
	}
	// The running daily totals of every key, as migration 0131 computes
	// them for an index that has daily rows.
	if _, err := tx.Exec(ctx, `INSERT INTO metrics_icm_daily_totals (src, dst, bucket, messages)
		SELECT d.src, d.dst, d.bucket, SUM(d.messages) OVER (PARTITION BY d.src, d.dst ORDER BY d.bucket) FROM metrics_icm_daily d`); err != nil {
		return err
	}
	// Primary-network validator txs for validators:getAddresses.
	rows = rows[:0]
	for v := 0; v < v2bValidators; v++ {
		added := first + int64(v)*3600
		rows = append(rows, []any{ids.ID{byte(v), byte(v >> 8), 0x5a}.String(), "AddPermissionlessValidatorTx", "VALIDATOR", subnets[0],
			ids.NodeID{byte(v), byte(v >> 8)}.String(), "00000000002000000000", "00000000002000000000", added, added + 365*86400,
			`{"locktime":0,"threshold":1,"addresses":["avax1x5kg4j5qnh9dxuwsnpj7fjeyqfvqrmnmh58r9n"]}`, "0", "0", int64(0), int64(v), added, "0", "0"})
	}
	return insertRows(ctx, tx, "p_stakers", []string{"tx_id", "tx_type", "kind", "subnet_id", "node_id", "weight", "stake_amount",
		"start_time", "end_time", "validation_reward_owner", "potential_reward", "accrued_delegatee_reward", "priority", "added_height",
		"added_time", "reward_amount", "delegation_fee_amount"}, rows)
}

var v2bDBs sync.Map // backend -> *store.DB

func v2bDB(b *testing.B, backend string) *store.DB {
	b.Helper()
	if db, ok := v2bDBs.Load(backend); ok {
		return db.(*store.DB)
	}
	ctx := context.Background()
	dsn := storetest.DSNFor(b, backend)
	if backend == "sqlite" {
		// Outlives the first sub-benchmark's TempDir: the cases share it.
		dir, err := os.MkdirTemp("", "permafrost-bench-v2b-")
		if err != nil {
			b.Fatal(err)
		}
		storetest.RemoveAtExit(dir)
		dsn = "sqlite:" + filepath.Join(dir, "bench.db")
	}
	db, err := store.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := generateIn(ctx, db, generateV2PartB); err != nil {
		b.Fatal(err)
	}
	stmt := "ANALYZE"
	if db.Dialect() == store.Postgres {
		stmt = "VACUUM ANALYZE"
	}
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: generated the v2 data in %s", backend, time.Since(start).Round(time.Second))
	v2bDBs.Store(backend, db)
	return db
}

// BenchmarkV2PartB: two clients walk each listing at once (target: p99 < 25 ms).
func BenchmarkV2PartB(b *testing.B) {
	l1 := ids.ID{0, 0, 0xf1}.String()
	node := ids.NodeID{0, 0, 0xf1}.String()
	subnet := ids.ID{1, 0xaa}.String()
	cases := []struct {
		name, path string
		q          url.Values
	}{
		{"staking-page100", "/v2/networks/mainnet/metrics/validatorWeight", nil},
		{"staking-page2160", "/v2/networks/mainnet/metrics/delegatorCount", url.Values{"pageSize": {"2160"}}},
		{"fees-total-cumulative", "/v2/validators/metrics/totalCumulativeFeesDaily", nil},
		{"fees-subnet-daily", "/v2/subnet/" + subnet + "/metrics/perSubnetDailyFeesPaid", nil},
		{"fees-node-cumulative", "/v2/validator/" + node + "/metrics/perNodeCumulativeFeesPaid", nil},
		{"fees-validation-daily", "/v2/validation/" + l1 + "/metrics/validationFeesDaily", nil},
		{"icm-summary", "/v2/icm/summary", nil},
		{"icm-summary-by-pair", "/v2/icm/summary", url.Values{"groupBy": {"srcBlockchainId,destBlockchainId"}}},
		{"icm-series-day", "/v2/icm/timeseries", nil},
		{"icm-series-hour-2160", "/v2/icm/timeseries", url.Values{"timeInterval": {"hour"}, "pageSize": {"2160"}}},
		{"icm-series-by-src-week", "/v2/icm/timeseries", url.Values{"timeInterval": {"week"}, "groupBy": {"srcBlockchainId"}}},
		{"validators-getAddresses-1000", "/v2/subnets/" + constants.PrimaryNetworkID.String() + "/validators:getAddresses", nil},
	}
	for _, backend := range storetest.Backends {
		for _, c := range cases {
			b.Run(backend+"/"+c.name, func(b *testing.B) {
				mux := benchMux(v2bDB(b, backend))
				lat := twoClients(b, mux, c.path, c.q)
				lat.report(b)
			})
		}
	}
}

// twoClients runs b.N requests of a listing split over two concurrent clients.
func twoClients(b *testing.B, mux *api.Mux, path string, q url.Values) latencies {
	b.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var all latencies
	errs := make(chan error, 2)
	b.ResetTimer()
	for c := 0; c < 2; c++ {
		n := b.N / 2
		if c == 0 {
			n += b.N % 2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat, _, err := walk(mux, path, q, n)
			if err != nil {
				errs <- err
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return all
}
