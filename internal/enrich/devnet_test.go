package enrich

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/libevm/common/hexutil"

	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

// devnet is the shared devnet-a index of one backend with its replay node.
// Tests of this package may change the enrichment's columns and tables in
// it: reset puts them back as ingestion left them.
type devnet struct {
	*testenv.Env
	backend   string
	rpc       *source.EVM
	contracts map[string]string // network.json cChainContracts, 0x-lowercase
	calls     []recordedCall
}

// recordedCall is one eth_call of the recording.
type recordedCall struct {
	To, Data string
	Result   []byte
	Reverted bool
}

var (
	originalsMu sync.Mutex
	originals   = map[string][]contractRow{} // backend -> evm_contracts as ingested
)

type contractRow struct{ addr, txHash, deployer, deployerContract, ercType string }

func testLog() *slog.Logger {
	if os.Getenv("ENRICH_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func newDevnet(t *testing.T, backend string) *devnet {
	t.Helper()
	te := testenv.Devnet(t, backend)
	rpc, err := source.NewEVM(t.Context(), te.NodeURL+source.PathCRPC, source.EVMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rpc.Close)
	d := &devnet{Env: te, backend: backend, rpc: rpc, contracts: map[string]string{}}
	raw, err := os.ReadFile(filepath.Join(te.Dir, "network.json"))
	if err != nil {
		t.Fatal(err)
	}
	var n struct {
		CChainContracts map[string]string `json:"cChainContracts"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		t.Fatal(err)
	}
	for k, v := range n.CChainContracts {
		d.contracts[k] = strings.ToLower(v)
	}
	d.calls = loadCalls(t, te.Dir)
	originalsMu.Lock()
	if _, ok := originals[backend]; !ok {
		rows, err := te.DB.QueryContext(t.Context(), `SELECT address, tx_hash, deployer_address, deployer_contract_address, erc_type
			FROM evm_contracts WHERE chain_key = 'C'`)
		if err != nil {
			t.Fatal(err)
		}
		var list []contractRow
		for rows.Next() {
			var r contractRow
			if err := rows.Scan(&r.addr, &r.txHash, &r.deployer, &r.deployerContract, &r.ercType); err != nil {
				t.Fatal(err)
			}
			list = append(list, r)
		}
		rows.Close()
		originals[backend] = list
	}
	originalsMu.Unlock()
	d.reset(t)
	return d
}

// reset clears every enrichment result from the shared index.
func (d *devnet) reset(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	for _, q := range []string{
		`DELETE FROM enrich_nft_jobs`, `DELETE FROM enrich_token_meta`, `DELETE FROM enrich_contract_trace`,
		`DELETE FROM enrich_token_reputation`, `DELETE FROM enrich_price_history`,
		`UPDATE evm_nft_tokens SET token_uri = NULL, metadata = NULL, metadata_status = 'unknown', metadata_updated_at = 0`,
		`UPDATE evm_contracts SET name = NULL, symbol = NULL, decimals = NULL, metadata_status = 'unknown', metadata_updated_at = 0`,
	} {
		if _, err := d.DB.ExecContext(ctx, q); err != nil {
			t.Fatalf("reset: %s: %v", q, err)
		}
	}
	originalsMu.Lock()
	defer originalsMu.Unlock()
	for _, r := range originals[d.backend] {
		if _, err := d.DB.ExecContext(ctx, `UPDATE evm_contracts SET tx_hash = $1, deployer_address = $2,
			deployer_contract_address = $3, erc_type = $4 WHERE chain_key = 'C' AND address = $5`,
			r.txHash, r.deployer, r.deployerContract, r.ercType, r.addr); err != nil {
			t.Fatal(err)
		}
	}
}

func loadCalls(t *testing.T, dir string) []recordedCall {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "rpc", "ext_bc_C_rpc.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []recordedCall
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ex struct {
			Method   string            `json:"method"`
			Params   []json.RawMessage `json:"params"`
			Response struct {
				Result *hexutil.Bytes   `json:"result"`
				Error  *json.RawMessage `json:"error"`
			} `json:"response"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ex); err != nil || ex.Method != "eth_call" {
			continue
		}
		var p struct{ To, Data string }
		if err := json.Unmarshal(ex.Params[0], &p); err != nil {
			t.Fatal(err)
		}
		c := recordedCall{To: strings.ToLower(p.To), Data: strings.ToLower(p.Data), Reverted: ex.Response.Error != nil}
		if ex.Response.Result != nil {
			c.Result = *ex.Response.Result
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// answer is the recorded answer of a call (ok false: not recorded).
func (d *devnet) answer(to, data string) (recordedCall, bool) {
	for _, c := range d.calls {
		if c.To == to && c.Data == data {
			return c, true
		}
	}
	return recordedCall{}, false
}

func (d *devnet) chain() Chain { return Chain{Key: "C", EVMChainID: "88888", RPC: d.rpc} }

func forEachDevnet(t *testing.T, body func(t *testing.T, d *devnet)) {
	for _, b := range storetest.Backends {
		t.Run(b, func(t *testing.T) { body(t, newDevnet(t, b)) })
	}
}

// newService builds (not starts) a service on db.
func newService(t *testing.T, db *store.DB, cfg Config, opts ...Option) *Service {
	t.Helper()
	s, err := New(t.Context(), db, cfg, testLog(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// start runs s until the test ends.
func start(t *testing.T, s *Service) {
	t.Helper()
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func count(t *testing.T, db *store.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(t.Context(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}
