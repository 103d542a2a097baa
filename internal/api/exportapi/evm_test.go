package exportapi_test

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/export"
)

const (
	alice = "0x03623add7ec6f6426d6266ed2e5a4734c786e73e"
	carol = "0xcd315311aaea7571750fd94311410035d1c5a951"
	bob   = "0xc469642a7739a3fac497947568f0c529eaaf65bb"
)

func tokenSymbols(t *testing.T, e *env) map[string][2]string {
	t.Helper()
	rows, err := e.DB.QueryContext(context.Background(), `SELECT address, symbol, decimals FROM evm_contracts WHERE chain_key = 'C'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][2]string{}
	for rows.Next() {
		var a string
		var s sql.NullString
		var d sql.NullInt64
		if err := rows.Scan(&a, &s, &d); err != nil {
			t.Fatal(err)
		}
		v := [2]string{s.String, ""}
		if d.Valid {
			v[1] = fmt.Sprint(d.Int64)
		}
		out[a] = v
	}
	return out
}

// TestEVMExport runs EVM exports end to end (create, poll, download over
// HTTP) and compares every row with the node's recorded blocks and receipts.
func TestEVMExport(t *testing.T) {
	rec := loadCRecording(t)
	day := func(s string) int64 { d, _ := time.Parse(time.DateOnly, s); return d.Unix() }
	forEachBackend(t, export.Config{}, func(t *testing.T, e *env) {
		symbols := tokenSymbols(t, e)
		cases := []struct {
			name        string
			addrs       []string // as sent (mixed case on purpose)
			chains      []string
			first, last string
			dates       string // "first" (firstDate/lastDate) or "start" (deprecated names)
		}{
			{"alice all time", []string{strings.ToUpper(alice[2:])}, []string{"88888"}, "2020-01-01", "2026-12-31", "first"},
			{"carol by blockchain id", []string{carol}, []string{e.Network.Chain["C"].BlockchainID}, "2026-11-22", "2026-11-22", "first"},
			{"alice and carol (shared txs once)", []string{alice, carol, alice}, []string{"c-chain", "88888"}, "2026-11-22", "2026-11-23", "start"},
			{"bob deprecated dates", []string{bob}, []string{"88888"}, "2026-11-01", "2026-11-30", "start"},
			{"no activity in range", []string{alice}, []string{"88888"}, "2026-11-23", "2026-12-01", "first"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				req := map[string]any{"type": "TRANSACTION_EXPORT_EVM",
					"options": map[string]any{"addresses": c.addrs, "includeChains": c.chains}}
				if c.dates == "first" {
					req["firstDate"], req["lastDate"] = c.first, c.last
				} else {
					req["startDate"], req["endDate"] = c.first, c.last
				}
				op, recs := e.complete(t, req)
				if op.OperationType != export.TypeEVM || op.Metadata.Code != "" || op.Metadata.NextDate != "" {
					t.Errorf("operation %+v %+v", op, op.Metadata)
				}
				got := byHeader(t, recs, export.EVMHeader)
				var lower []string
				for _, a := range c.addrs {
					lower = append(lower, strings.ToLower("0x"+strings.TrimPrefix(strings.ToLower(a), "0x")))
				}
				want := rec.expectedEVM(t, "88888", lower, day(c.first), day(c.last)+86400, symbols)
				t.Logf("%d rows", len(got))
				if c.name != "no activity in range" && len(want) == 0 {
					t.Fatal("the recording has no rows for this case: the test would prove nothing")
				}
				if len(got) != len(want) {
					t.Errorf("%d rows, want %d", len(got), len(want))
				}
				for i := range min(len(got), len(want)) {
					if !reflect.DeepEqual(got[i], want[i]) {
						t.Errorf("row %d:\n got %v\nwant %v", i+1, got[i], want[i])
					}
				}
				if c.name == "alice all time" {
					// The recording exercises every row type through alice.
					seen := map[string]bool{}
					for _, r := range got {
						seen[r["row_type"]] = true
					}
					for _, typ := range []string{"NATIVE", "ERC-20", "ERC-721", "ERC-1155"} {
						if !seen[typ] {
							t.Errorf("no %s row for alice", typ)
						}
					}
				}
				if c.name == "no activity in range" && len(got) != 0 {
					t.Errorf("rows outside the range: %v", got)
				}
			})
		}
	})
}
