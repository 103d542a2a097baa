package evm

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

func TestNamed(t *testing.T) {
	for _, c := range []struct {
		in       string
		vals     map[string]any
		out      string
		args     []any
		failWith string
	}{
		{"a = @x AND b = @y", map[string]any{"x": 1, "y": "s"}, "a = $1 AND b = $2", []any{1, "s"}, ""},
		// Numbered by first appearance, reused for repeats.
		{"CASE WHEN n <= @n THEN 1 END WHERE c = @c AND n <= @n LIMIT @l", map[string]any{"n": 5, "c": "C", "l": 11},
			"CASE WHEN n <= $1 THEN 1 END WHERE c = $2 AND n <= $1 LIMIT $3", []any{5, "C", 11}, ""},
		{"x IN (@c0, @c1)", map[string]any{"c0": "a", "c1": "b"}, "x IN ($1, $2)", []any{"a", "b"}, ""},
		{"no markers", nil, "no markers", nil, ""},
		{"a = @missing", map[string]any{}, "", nil, "missing"},
		{"a = @ b", map[string]any{}, "", nil, "without a name"},
	} {
		out, args, err := named(c.in, c.vals)
		if c.failWith != "" {
			if err == nil || !strings.Contains(err.Error(), c.failWith) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.failWith)
			}
			continue
		}
		if err != nil || out != c.out || !reflect.DeepEqual(args, c.args) {
			t.Errorf("%q: %q %v %v, want %q %v", c.in, out, args, err, c.out, c.args)
		}
	}
	vals := map[string]any{}
	if got := inHexList(vals, "c", []string{"0x01", "0x02", "0x03"}); got != "@c0, @c1, @c2" || len(vals) != 3 || vals["c2"] != store.Hex("0x03") {
		t.Errorf("inHexList: %q %v", got, vals)
	}
}

func TestParseNumbers(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "37": 37, "0x25": 37, "0X25": 37, "9223372036854775807": 1<<63 - 1} {
		if got, ok := parseUint63(in); !ok || got != want {
			t.Errorf("parseUint63(%q) = %d, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "-1", "+1", "1.0", "1e3", "0x", "0xg", "9223372036854775808", " 1", "١"} {
		if _, ok := parseUint63(in); ok {
			t.Errorf("parseUint63(%q) accepted", in)
		}
	}
	max := "115792089237316195423570985008687907853269984665640564039457584007913129639935" // 2^256-1
	for in, want := range map[string]string{"0": "0", "007": "7", max: max} {
		if got, ok := api.ParseTokenID(in); !ok || got != want {
			t.Errorf("api.ParseTokenID(%q) = %q, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "-1", "0x1", "1.5", "abc", max[:len(max)-1] + "6", strings.Repeat("1", 79)} {
		if _, ok := api.ParseTokenID(in); ok {
			t.Errorf("api.ParseTokenID(%q) accepted", in)
		}
	}
}

func TestBlockRange(t *testing.T) {
	const tip = 37
	for _, c := range []struct {
		q             string
		lo, hi        int64
		empty, failed bool
	}{
		{"", 0, 37, false, false},
		{"startBlock=5", 5, 37, false, false},
		{"endBlock=5", 0, 4, false, false},
		{"startBlock=5&endBlock=6", 5, 5, false, false},
		{"startBlock=5&endBlock=100", 5, 37, false, false},
		{"startBlock=40", 40, 37, true, false},
		{"endBlock=0", 0, -1, true, false},
		{"startBlock=5&endBlock=5", 0, -1, true, true},
		{"startBlock=x", 0, 37, false, true},
		{"endBlock=-1", 0, 37, false, true},
	} {
		v, _ := url.ParseQuery(c.q)
		r := httptest.NewRequest("GET", "/?"+v.Encode(), nil)
		p := api.NewParams(r)
		lo, hi, empty := blockRange(p, tip)
		if lo != c.lo || hi != c.hi || empty != c.empty || (p.Err() != nil) != c.failed {
			t.Errorf("%s: [%d, %d] empty=%v err=%v", c.q, lo, hi, empty, p.Err())
		}
	}
}

func TestTokenMetadata(t *testing.T) {
	doc := `{"name":"N","description":"D","image":"ipfs://i","animation_url":"a","external_url":"e","background_color":"fff",
		"attributes":[{"trait_type":"x","value":1}],"decimals":2,"properties":{"p":1}}`
	for _, c := range []struct {
		status, doc string
		erc1155     bool
		want        TokenMetadata
	}{
		{"unknown", "", false, TokenMetadata{IndexStatus: "UNINDEXED"}},
		{"", "", true, TokenMetadata{IndexStatus: "UNINDEXED"}},
		{"whatever", doc, false, TokenMetadata{IndexStatus: "UNINDEXED"}},
		{"unreachable_token_uri", "", false, TokenMetadata{IndexStatus: "UNREACHABLE_TOKEN_URI"}},
		{"INDEXED", "{", false, TokenMetadata{IndexStatus: "INVALID_METADATA_JSON"}},
		{"indexed", doc, false, TokenMetadata{IndexStatus: "INDEXED", Name: "N", Description: "D", ImageURI: "ipfs://i",
			AnimationURI: "a", ExternalURL: "e", Background: "fff", Attributes: `[{"trait_type":"x","value":1}]`}},
		{"INDEXED", doc, true, TokenMetadata{IndexStatus: "INDEXED", Name: "N", Description: "D", ImageURI: "ipfs://i",
			AnimationURI: "a", ExternalURL: "e", Background: "fff", Decimals: ptr(2), Properties: `{"p":1}`}},
	} {
		if got := tokenMetadata(c.status, c.doc, c.erc1155); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q %q: %+v, want %+v", c.status, c.doc, got, c.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestCallType(t *testing.T) {
	if callType("", false) != CallContractCreation || callType("0x1", true) != CallContractCall || callType("0x1", false) != CallNativeTransfer {
		t.Error("callType")
	}
	if knownMethods["0xa9059cbb"] != "transfer(address,uint256)" || knownMethods["0x095ea7b3"] != "approve(address,uint256)" {
		t.Errorf("selectors: %v", knownMethods)
	}
}

// Every listing query is index-driven on both backends: its plan is checked
// for every route, first pages and continued pages, with each filter.
func TestQueryPlans(t *testing.T) {
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			te := testenv.Devnet(t, backend)
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			type captured struct {
				q     string
				args  []any
				minEq int
			}
			var qs []captured
			minEq := 2
			h := &handlers{d: Deps{DB: te.DB, Network: te.Network, Pager: te.Pager, Log: log},
				trace: func(q string, args []any) { qs = append(qs, captured{q, args, minEq}) }}
			mux := api.NewMux(log)
			register(mux, h)
			get := func(path string) string {
				w := httptest.NewRecorder()
				mux.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
				if w.Code != 200 {
					t.Fatalf("%s: %d %s", path, w.Code, w.Body)
				}
				m := regexp.MustCompile(`"nextPageToken":"([^"]+)"`).FindStringSubmatch(w.Body.String())
				if m == nil {
					return ""
				}
				return m[1]
			}
			alice := "0x03623add7ec6f6426d6266ed2e5a4734c786e73e"
			dave := "0x97962fd085b56702d6117ccd744d38335e1fcfe3"
			erc20 := "0x0e728c6a2fc95a228d766532b430e905eb07b726"
			child := "0x5632091ff7615a69743a77d43c50a8ff922e334f"
			nft := "0xee64797abce5983bcd82072c120003dade869652"
			for _, p := range []string{
				"/v1/chains/88888/addresses/" + dave + "/balances:listErc20?pageSize=1",
				"/v1/chains/88888/addresses/" + dave + "/balances:listErc20?pageSize=1&blockNumber=36&contractAddresses=" + erc20 + "," + child,
				"/v1/chains/88888/addresses/" + dave + "/balances:listErc721?pageSize=1&contractAddress=" + nft,
				"/v1/chains/88888/addresses/" + alice + "/balances:listErc1155?pageSize=1&blockNumber=30",
				"/v1/chains/88888/addresses/" + alice + "/balances:listCollectibles?pageSize=1",
				"/v1/chains/88888/tokens/" + erc20 + "/transfers?pageSize=1&startBlock=3&endBlock=30",
				"/v1/chains/88888/addresses/" + alice + "/transactions:listNative?pageSize=1&startBlock=3",
				"/v1/chains/88888/nfts/collections/" + nft + "/tokens?pageSize=1",
				"/v1/chains/88888/addresses/" + alice + "/transactions?pageSize=1",
				"/v1/chains/88888/addresses/" + alice + "/transactions?pageSize=1&sortOrder=asc&startBlock=3&endBlock=30",
				"/v2/chains/88888/addresses/" + dave + "/transactions?pageSize=1",
				"/v1/chains/88888/addresses/" + dave + "/transactions:listErc20?pageSize=1",
				"/v1/chains/88888/addresses/" + alice + "/transactions:listErc721?pageSize=1&startBlock=3",
				"/v1/chains/88888/addresses/" + alice + "/transactions:listErc1155?pageSize=1",
				"/v1/chains/88888/contracts/" + alice + "/deployments?pageSize=1",
			} {
				if tok := get(p); tok != "" {
					get(p + "&pageToken=" + url.QueryEscape(tok))
				} else {
					t.Errorf("%s: one page only; the continued query is not checked", p)
				}
			}
			// A chain's latest blocks and transactions: one equality column
			// (the chain), read in key order.
			minEq = 1
			for _, p := range []string{
				"/v1/chains/88888/blocks?pageSize=1",
				"/v1/blocks?pageSize=1",
				"/v1/chains/88888/transactions?pageSize=1",
				"/v1/chains/88888/transactions?pageSize=1&status=failed",
				"/v1/chains/88888/transactions?pageSize=1&status=success",
				"/v1/transactions?pageSize=1",
				"/v1/transactions?pageSize=1&status=failed",
				"/v1/chains/88888/blocks/37/transactions?pageSize=1",
			} {
				if tok := get(p); tok != "" {
					get(p + "&pageToken=" + url.QueryEscape(tok))
				} else {
					t.Errorf("%s: one page only; the continued query is not checked", p)
				}
			}
			get("/v1/chains/88888/blocks/37")
			// By hash: a seek on (chain, hash), whatever the tip bound.
			minEq = 2
			for _, p := range []string{"/v1/chains/88888/blocks/0x52667364d54baae683512c595ec4929eedcb8d5ab806945657ecd0946e959f63",
				"/v1/chains/88888/transactions/0xb5e35593c72a90d79b79140775d0b29603d42d52a6373603f35a8430e820cc3d",
				"/v1/chains/88888/contracts/" + erc20 + "/transactions:getDeployment"} {
				get(p)
			}
			if len(qs) < 16 {
				t.Fatalf("%d queries traced", len(qs))
			}
			for _, q := range qs {
				plan := explain(t, te.DB, q.q, q.args)
				if testing.Verbose() {
					t.Logf("PLAN %s\n  %s", q.q, strings.Join(plan, "\n  "))
				}
				// A subquery's rows (a page chosen by index, then joined) are
				// read back by a scan of its co-routine: not a table read.
				coroutine := map[string]bool{}
				for _, line := range plan {
					if name, ok := strings.CutPrefix(strings.TrimSpace(line), "CO-ROUTINE "); ok {
						coroutine["SCAN "+name] = true
					}
				}
				for _, line := range plan {
					if coroutine[strings.TrimSpace(line)] {
						continue
					}
					if bad(backend, line, q.minEq) {
						t.Errorf("%s: %q is not an index seek on two equality columns:\n%s\nplan:\n  %s", backend, strings.TrimSpace(line), q.q, strings.Join(plan, "\n  "))
					}
				}
			}
		})
	}
}

// bad reports a plan line that reads a table without an index seek on at
// least two equality columns (the chain and an address, token or holder)
// or sorts (SQLite), or that no index serves (PostgreSQL).
func bad(backend, line string, minEq int) bool {
	line = strings.TrimSpace(line)
	if backend == "sqlite" {
		// A list of constant rows (and the scan of it that drives a join:
		// txsByKey's txkeys) is not a table read.
		constant := strings.HasPrefix(line, "SCAN CONSTANT") || strings.HasSuffix(line, "CONSTANT ROWS") || line == "SCAN txkeys"
		if strings.HasPrefix(line, "SCAN ") && !constant || strings.Contains(line, "TEMP B-TREE") {
			return true
		}
		if strings.HasPrefix(line, "SEARCH ") {
			i := strings.Index(line, "(")
			if i < 0 {
				return true
			}
			j := strings.Index(line[i:], ")")
			if j < 0 {
				return true
			}
			eq := 0
			for _, term := range strings.Split(line[i+1:i+j], " AND ") {
				if strings.HasSuffix(term, "=?") && !strings.ContainsAny(term, "<>") {
					eq++
				}
			}
			return eq < minEq
		}
		return false
	}
	// PostgreSQL plans by statistics, which a 38-block index does not
	// have: only the absence of usable indexes is checked here (a Seq Scan
	// while seq scans are disabled); latency at scale is the benchmark's.
	return strings.Contains(line, "Seq Scan on ")
}

func explain(t *testing.T, db *store.DB, q string, args []any) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := db.WriterDB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	prefix := "EXPLAIN QUERY PLAN "
	if db.Dialect() == store.Postgres {
		prefix = "EXPLAIN "
		if _, err := conn.ExecContext(ctx, "SET enable_seqscan = off"); err != nil {
			t.Fatal(err)
		}
		defer conn.ExecContext(ctx, "RESET enable_seqscan") //nolint:errcheck
	}
	rows, err := conn.QueryContext(ctx, prefix+q, args...)
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, q)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(vals[len(vals)-1]))
	}
	return out
}
