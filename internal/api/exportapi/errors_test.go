package exportapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/export"
	"github.com/permafrost-dev/permafrost/internal/keys"
)

const (
	carolBech = "custom1w98xaclyc635teqmegl22hn756zrlu26x2u7mz"
	// The same 20 bytes under mainnet's prefix: a valid address of another network.
	carolMainnet = "avax1w98xaclyc635teqmegl22hn756zrlu264swyuh"
)

// TestCreateRejects covers every request error known at once: each is a
// 400 whose message names the problem, and no operation is created.
func TestCreateRejects(t *testing.T) {
	many := make([]string, export.MaxAddresses+1)
	for i := range many {
		many[i] = fmt.Sprintf("0x%040x", i+1)
	}
	evm := func(opts map[string]any, extra ...string) string {
		m := map[string]any{"type": "TRANSACTION_EXPORT_EVM", "options": opts}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	pn := func(typ string, opts map[string]any) string {
		b, _ := json.Marshal(map[string]any{"type": typ, "options": opts})
		return string(b)
	}
	okEVM := map[string]any{"addresses": []string{alice}, "includeChains": []string{"88888"}}
	cases := []struct {
		name, body, contentType string
		want                    []string // substrings of the message
	}{
		{"empty body", ``, "", []string{"JSON request body is required"}},
		{"not JSON", `{"type":`, "", []string{"truncated JSON"}},
		{"not an object", `[1]`, "", []string{"must be an object"}},
		{"two values", `{} {}`, "", []string{"exactly one JSON value"}},
		{"wrong content type", evm(okEVM), "text/plain", []string{"Content-Type must be application/json"}},
		{"unknown field", `{"type":"TRANSACTION_EXPORT_EVM","options":{"addresses":[],"includeChains":[],"chainId":"1"}}`, "", []string{"unknown field", "chainId"}},
		{"missing type", `{"options":{"addresses":["` + alice + `"],"includeChains":["88888"]}}`, "", []string{"type is required"}},
		{"unknown type", `{"type":"TRANSACTION_EXPORT_SOLANA","options":{}}`, "", []string{"type must be one of", "TRANSACTION_EXPORT_SOLANA"}},
		{"type not a string", `{"type":1,"options":{}}`, "", []string{"field type must be a string"}},
		{"missing options", `{"type":"TRANSACTION_EXPORT_EVM"}`, "", []string{"options is required"}},
		{"null options", `{"type":"TRANSACTION_EXPORT_PRIMARY_NETWORK","options":null}`, "", []string{"options is required"}},
		{"evm: no addresses", evm(map[string]any{"includeChains": []string{"88888"}}), "", []string{"options.addresses is required"}},
		{"evm: empty addresses", evm(map[string]any{"addresses": []string{}, "includeChains": []string{"88888"}}), "", []string{"options.addresses is required"}},
		{"evm: addresses not an array", `{"type":"TRANSACTION_EXPORT_EVM","options":{"addresses":"` + alice + `","includeChains":["88888"]}}`, "", []string{"options.addresses must be an array"}},
		{"evm: malformed address", evm(map[string]any{"addresses": []string{"0x1234"}, "includeChains": []string{"88888"}}), "", []string{"options.addresses", `"0x1234" is not an EVM address`}},
		{"evm: bech32 address", evm(map[string]any{"addresses": []string{carolBech}, "includeChains": []string{"88888"}}), "", []string{"is not an EVM address"}},
		{"evm: too many addresses", evm(map[string]any{"addresses": many, "includeChains": []string{"88888"}}), "", []string{"at most 100 addresses"}},
		{"evm: no chains", evm(map[string]any{"addresses": []string{alice}}), "", []string{"options.includeChains is required"}},
		{"evm: unknown chain", evm(map[string]any{"addresses": []string{alice}, "includeChains": []string{"43114"}}), "", []string{`chain "43114" is not indexed`}},
		{"evm: p-chain is not EVM", evm(map[string]any{"addresses": []string{alice}, "includeChains": []string{"p-chain"}}), "", []string{`chain "p-chain" is not indexed`}},
		{"evm: cChainEvmAddresses", evm(map[string]any{"addresses": []string{alice}, "includeChains": []string{"88888"}, "cChainEvmAddresses": []string{alice}}), "", []string{"cChainEvmAddresses is an option of primary-network exports"}},
		{"bad firstDate", evm(okEVM, "firstDate", "2023-13-01"), "", []string{"firstDate", `"2023-13-01" is not a date YYYY-MM-DD`}},
		{"bad lastDate format", evm(okEVM, "lastDate", "2023/05/01"), "", []string{"lastDate", "not a date"}},
		{"date with time", evm(okEVM, "firstDate", "2023-05-01T00:00:00Z"), "", []string{"firstDate", "not a date"}},
		{"date before 1970", evm(okEVM, "firstDate", "1969-12-31"), "", []string{"firstDate", "not a date"}},
		{"bad startDate", evm(okEVM, "startDate", "yesterday"), "", []string{"startDate", "not a date"}},
		{"first after last", evm(okEVM, "firstDate", "2024-02-02", "lastDate", "2024-02-01"), "", []string{"firstDate 2024-02-02 is after lastDate 2024-02-01"}},
		{"start after end (deprecated)", evm(okEVM, "startDate", "2024-02-02", "endDate", "2024-02-01"), "", []string{"is after lastDate"}},
		{"firstDate and startDate differ", evm(okEVM, "firstDate", "2024-01-01", "startDate", "2024-01-02"), "", []string{"firstDate and startDate (its deprecated alias) differ"}},
		{"lastDate and endDate differ", evm(okEVM, "lastDate", "2024-01-01", "endDate", "2024-01-02"), "", []string{"lastDate and endDate (its deprecated alias) differ"}},
		{"primary: no chains", pn("TRANSACTION_EXPORT_PRIMARY_NETWORK", map[string]any{"addresses": []string{carolBech}}), "", []string{"options.includeChains is required"}},
		{"primary: unknown chain", pn("TRANSACTION_EXPORT_PRIMARY_NETWORK", map[string]any{"includeChains": []string{"d-chain"}}), "", []string{`chain "d-chain" is not indexed`}},
		{"primary: mainnet blockchain id", pn("TRANSACTION_EXPORT_PRIMARY_NETWORK_SIMPLE", map[string]any{"includeChains": []string{"2oYMBNV4eNHyqk2fjjV5nVQLDbtmNJzq5s3qs3Lo6ftnC6FByM"}}), "", []string{"is not indexed"}},
		{"primary: EVM chain id", pn("TRANSACTION_EXPORT_PRIMARY_NETWORK", map[string]any{"includeChains": []string{"88888"}}), "", []string{`chain "88888" is not indexed`}},
		{"primary: malformed address", pn("TRANSACTION_EXPORT_PRIMARY_NETWORK", map[string]any{"includeChains": []string{"x-chain"}, "addresses": []string{"X-custom1nope"}}), "", []string{"options.addresses", "not a bech32 address"}},
		{"primary: other network's address", pn("TRANSACTION_EXPORT_PRIMARY_NETWORK", map[string]any{"includeChains": []string{"x-chain"}, "addresses": []string{"X-" + carolMainnet}}), "", []string{"an address of another network"}},
		{"primary: EVM address in addresses", pn("TRANSACTION_EXPORT_PRIMARY_NETWORK", map[string]any{"includeChains": []string{"x-chain"}, "addresses": []string{alice}}), "", []string{"not a bech32 address"}},
		{"primary: malformed cChainEvmAddresses", pn("TRANSACTION_EXPORT_PRIMARY_NETWORK", map[string]any{"includeChains": []string{"c-chain"}, "cChainEvmAddresses": []string{"0xzz"}}), "", []string{"options.cChainEvmAddresses", "not an EVM address"}},
		{"primary: cChainEvmAddresses without c-chain", pn("TRANSACTION_EXPORT_PRIMARY_NETWORK", map[string]any{"includeChains": []string{"x-chain"}, "cChainEvmAddresses": []string{carol}}), "", []string{"cChainEvmAddresses needs c-chain"}},
		{"staking: no p-chain", pn("TRANSACTION_EXPORT_PRIMARY_NETWORK_STAKING", map[string]any{"includeChains": []string{"x-chain"}}), "", []string{"must include p-chain"}},
		{"staking: cChainEvmAddresses", pn("TRANSACTION_EXPORT_PRIMARY_NETWORK_STAKING", map[string]any{"includeChains": []string{"p-chain"}, "cChainEvmAddresses": []string{carol}}), "", []string{"does not apply to staking"}},
		{"every problem at once", evm(map[string]any{"addresses": []string{"0x12"}, "includeChains": []string{"1"}}, "firstDate", "2024-1-1"),
			"", []string{"firstDate", "0x12", `chain "1"`}},
	}
	forEachBackend(t, export.Config{}, func(t *testing.T, e *env) {
		count := func() int {
			var n int
			if err := e.DB.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM export_jobs`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := count()
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				req, _ := http.NewRequest("POST", e.srv.URL+"/v1/operations/transactions:export", strings.NewReader(c.body))
				ct := c.contentType
				if ct == "" {
					ct = "application/json"
				}
				req.Header.Set("Content-Type", ct)
				req.Header.Set("x-data-api-key", e.key)
				resp, err := e.srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusBadRequest {
					t.Fatalf("status %d, want 400: %s", resp.StatusCode, body)
				}
				if err := apitest.CheckErrorBody(400, body); err != nil {
					t.Error(err)
				}
				if err := e.oapi.CheckResponse("POST", "/v1/operations/transactions:export", 400, body); err != nil {
					t.Error(err)
				}
				msg := apitest.ErrorMessage(body)
				for _, w := range c.want {
					if !strings.Contains(msg, w) {
						t.Errorf("message %q does not say %q", msg, w)
					}
				}
			})
		}
		if after := count(); after != before {
			t.Errorf("%d operations created by refused requests", after-before)
		}
	})
}

// TestAccess: keys, scopes, owners, unknown ids, and download URLs.
func TestAccess(t *testing.T) {
	forEachBackend(t, export.Config{}, func(t *testing.T, e *env) {
		body := `{"type":"TRANSACTION_EXPORT_EVM","options":{"addresses":["` + bob + `"],"includeChains":["88888"]}}`
		for _, c := range []struct {
			name, key string
			want      int
		}{{"no key", "", 401}, {"key without scope", e.noScope, 403}, {"unknown key", "pfk_0123456789abcdef_" + strings.Repeat("A", 43), 401}} {
			code, b, _ := e.do(t, "POST", "/v1/operations/transactions:export", c.key, []byte(body))
			if code != c.want {
				t.Errorf("create, %s: %d %s, want %d", c.name, code, b, c.want)
			}
			code, b, _ = e.do(t, "GET", "/v1/operations/aa22054a-cb7c-4a4e-9b83-59f2ede74138", c.key, nil)
			if code != c.want {
				t.Errorf("get, %s: %d %s, want %d", c.name, code, b, c.want)
			}
		}
		op := e.create(t, e.key, json.RawMessage(body))
		if op.OperationStatus != export.StatusRunning || op.OperationType != export.TypeEVM || op.CreatedAtTimestamp == 0 ||
			op.UpdatedAtTimestamp < op.CreatedAtTimestamp {
			t.Errorf("created %+v", op)
		}
		if op.Metadata != nil && op.Metadata.DownloadURL != "" {
			t.Errorf("a RUNNING operation has a download URL")
		}
		if code, b, _ := e.do(t, "GET", "/v1/operations/"+strings.ToUpper(op.OperationID), e.other, nil); code != 404 {
			t.Errorf("another key reads the operation: %d %s", code, b)
		}
		for _, id := range []string{"aa22054a-cb7c-4a4e-9b83-59f2ede74138", strings.Replace(op.OperationID, op.OperationID[:1], "f", 1)} {
			if id == op.OperationID {
				continue
			}
			if code, b, _ := e.do(t, "GET", "/v1/operations/"+id, e.key, nil); code != 404 {
				t.Errorf("unknown operation %s: %d %s", id, code, b)
			}
		}
		for _, id := range []string{"42", "not-a-uuid", "aa22054acb7c4a4e9b8359f2ede74138" + "xxxx"} {
			if code, b, _ := e.do(t, "GET", "/v1/operations/"+id, e.key, nil); code != 400 {
				t.Errorf("malformed operation id %s: %d %s", id, code, b)
			}
		}
		done := e.wait(t, e.key, op.OperationID)
		if done.OperationStatus != export.StatusCompleted || done.Metadata == nil || done.Metadata.DownloadURL == "" {
			t.Fatalf("operation %+v", done)
		}
		u, err := url.Parse(done.Metadata.DownloadURL)
		if err != nil || u.Scheme != "http" || u.Host != e.srv.Listener.Addr().String() || u.Path != "/v1/operations/"+op.OperationID+"/download" {
			t.Fatalf("download URL %q is not an absolute URL of this server", done.Metadata.DownloadURL)
		}
		if rows := download(t, done.Metadata.DownloadURL); len(rows) != 8 {
			t.Errorf("bob's export has %d lines, want header + 7", len(rows))
		}
		q := u.Query()
		tamper := func(k, v string) string {
			q2 := url.Values{}
			for kk, vv := range q {
				q2[kk] = vv
			}
			q2.Set(k, v)
			return u.Path + "?" + q2.Encode()
		}
		sig := q.Get("sig")
		other := e.create(t, e.key, json.RawMessage(body))
		for _, c := range []struct {
			name, path string
			want       int
		}{
			{"no signature", u.Path, 403},
			{"altered signature", tamper("sig", flip(sig)), 403},
			{"longer expiry", tamper("expires", "99999999999"), 403},
			{"expiry not a number", tamper("expires", "soon"), 403},
			{"another operation's path", strings.Replace(u.Path, op.OperationID, other.OperationID, 1) + "?" + q.Encode(), 403},
			{"malformed id", "/v1/operations/xyz/download?" + q.Encode(), 404},
		} {
			code, b, _ := e.do(t, "GET", c.path, "", nil)
			if code != c.want {
				t.Errorf("download, %s: %d %s, want %d", c.name, code, b, c.want)
			}
		}
		e.wait(t, e.key, other.OperationID)
	})
}

// flip changes the first character of s.
func flip(s string) string {
	c := byte('A')
	if s[0] == 'A' {
		c = 'B'
	}
	return string(c) + s[1:]
}

// TestTruncatedAndFailedOverHTTP: with a row cap, an export of the devnet's
// X-chain (its genesis day, then the workload's day) ends after the first
// day with WarnTruncatedExport and nextDate; continuing from nextDate (with
// the deprecated startDate) gives the rest. A request the workers cannot
// serve ends FAILED with ErrInvalidRequest. Both as the OpenAPI shapes them.
func TestTruncatedAndFailedOverHTTP(t *testing.T) {
	forEachBackend(t, export.Config{RowCap: 1}, func(t *testing.T, e *env) {
		req := map[string]any{"type": "TRANSACTION_EXPORT_PRIMARY_NETWORK", "firstDate": "2020-01-01", "lastDate": "2026-12-31",
			"options": map[string]any{"includeChains": []string{"x-chain"}}}
		op := e.wait(t, e.key, e.create(t, e.key, req).OperationID)
		if op.OperationStatus != export.StatusCompletedWithWarning || op.Metadata == nil ||
			op.Metadata.Code != export.CodeTruncated || op.Metadata.NextDate != "2026-11-22" || op.Metadata.DownloadURL == "" {
			t.Fatalf("truncated export: %+v %+v", op, op.Metadata)
		}
		first := byHeader(t, download(t, op.Metadata.DownloadURL), export.PrimaryHeader)
		delete(req, "firstDate")
		req["startDate"] = op.Metadata.NextDate
		op = e.wait(t, e.key, e.create(t, e.key, req).OperationID)
		if op.OperationStatus != export.StatusCompleted {
			t.Fatalf("continuation: %+v %+v", op, op.Metadata)
		}
		rest := byHeader(t, download(t, op.Metadata.DownloadURL), export.PrimaryHeader)
		if len(first) != 1 || first[0]["datetime_utc"][:10] != "2020-12-05" {
			t.Errorf("first file: %v", first)
		}
		seen := map[string]bool{}
		for _, r := range append(first, rest...) {
			if seen[r["tx_hash"]] || (len(seen) > 0 && r["datetime_utc"][:10] < "2026-11-22" && r["tx_hash"] != first[0]["tx_hash"]) {
				t.Errorf("row repeated or out of place: %v", r)
			}
			seen[r["tx_hash"]] = true
		}
		var n int
		if err := e.DB.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM px_txs WHERE chain_key = 'X'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if len(seen) != n {
			t.Errorf("the two files hold %d txs, the X-chain %d", len(seen), n)
		}

		bad, err := e.svc.Create(t.Context(), export.Spec{Type: export.TypeEVM, First: "2026-11-22", Last: "2026-11-22",
			Chains: []string{"31337"}, Addresses: []string{alice}}, keys.IDOf(e.key))
		if err != nil {
			t.Fatal(err)
		}
		op = e.wait(t, e.key, bad.OperationID)
		if op.OperationStatus != export.StatusFailed || op.Metadata == nil || op.Metadata.Code != export.CodeInvalidRequest ||
			op.Message == "" || op.Metadata.DownloadURL != "" {
			t.Errorf("unservable export: %+v %+v", op, op.Metadata)
		}
	})
}
