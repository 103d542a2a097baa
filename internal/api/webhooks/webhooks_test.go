package webhooks_test

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/webhooks"
)

const hookURL = "https://hooks.example.com/avalanche"

// requests of each event type on devnet-a's workload addresses and validators.
func (e *env) requests() map[string]map[string]any {
	return map[string]map[string]any{
		webhooks.EventAddressActivity: {
			"eventType": "address_activity", "url": hookURL, "chainId": e.f.EVMChainID, "name": "evm",
			"metadata":           map[string]any{"addresses": []string{e.f.CAddr, strings.ToUpper(e.f.CAddr[:2]) + e.f.CAddr[2:]}},
			"includeInternalTxs": true, "includeLogs": true,
		},
		webhooks.EventPrimaryAddressActivity: {
			"eventType": "primary_network_address_activity", "url": hookURL, "network": "fuji", "chainId": "p-chain",
			"description": "P-chain balance",
			"metadata": map[string]any{"keyType": "addresses", "keys": []string{e.f.PAddr},
				"subEvents":              map[string]any{"addressActivitySubEvents": []string{"balance_change", "balance_threshold", "reward_distribution"}},
				"balanceThresholdFilter": map[string]any{"balanceType": "unlockedUnstaked", "balanceThreshold": "1000000000"}},
		},
		webhooks.EventValidatorActivity: {
			"eventType": "validator_activity", "url": hookURL, "network": "fuji",
			"metadata": map[string]any{"keyType": "nodeId", "keys": []string{e.f.NodeID},
				"subEvents": map[string]any{"validatorActivitySubEvents": []string{"validator_stake", "delegator_stake", "reward_distribution"}}},
		},
	}
}

// TestLifecycle creates a webhook of each event type and walks every route
// over it: read, list (paged, filtered), update, addresses, deactivate,
// shared secret. Every body is checked against the published document.
func TestLifecycle(t *testing.T) {
	forEachBackend(t, webhooks.URLPolicy{}, func(t *testing.T, e *env) {
		created := map[string]hook{}
		for _, typ := range []string{webhooks.EventAddressActivity, webhooks.EventPrimaryAddressActivity, webhooks.EventValidatorActivity} {
			var h hook
			e.ok(t, http.StatusCreated, "POST", "/v1/webhooks", e.key, e.requests()[typ], &h)
			if h.EventType != typ || h.Status != "active" || h.URL != hookURL || h.CreatedAt <= 0 || len(h.ID) != 36 {
				t.Errorf("%s: created %+v", typ, h)
			}
			created[typ] = h
			var got hook
			e.ok(t, http.StatusOK, "GET", "/v1/webhooks/"+h.ID, e.key, nil, &got)
			if !reflect.DeepEqual(got, h) {
				t.Errorf("%s: GET %+v, created %+v", typ, got, h)
			}
		}
		evm, pn, val := created[webhooks.EventAddressActivity], created[webhooks.EventPrimaryAddressActivity], created[webhooks.EventValidatorActivity]
		// Normalised keys: the EVM address once, lower case (it was given twice,
		// in two cases); the P-chain address without its chain prefix.
		if a := evm.Metadata["addresses"]; fmt.Sprint(a) != fmt.Sprint([]any{strings.ToLower(e.f.CAddr)}) {
			t.Errorf("evm addresses %v", a)
		}
		if evm.ChainID != e.f.EVMChainID || evm.IncludeLogs == nil || !*evm.IncludeLogs || !*evm.IncludeInternalTxs {
			t.Errorf("evm webhook %+v", evm)
		}
		if k := pn.Metadata["keys"]; fmt.Sprint(k) != fmt.Sprint([]any{strings.TrimPrefix(e.f.PAddr, "P-")}) || pn.ChainID != e.f.PBlockchain {
			t.Errorf("primary webhook %+v", pn)
		}
		if pn.IncludeLogs != nil || val.IncludeInternalTxs != nil {
			t.Errorf("include* on a primary-network webhook: %+v %+v", pn, val)
		}
		if k := val.Metadata["keys"]; fmt.Sprint(k) != fmt.Sprint([]any{e.f.NodeID}) || val.Description != "" || val.Name != "" {
			t.Errorf("validator webhook %+v", val)
		}

		// Listing: newest first; pages of one; the other key sees none.
		var ids []string
		for page, tok := 0, ""; ; page++ {
			var l struct {
				NextPageToken string `json:"nextPageToken"`
				Webhooks      []hook `json:"webhooks"`
			}
			e.ok(t, 200, "GET", "/v1/webhooks?pageSize=1&pageToken="+url.QueryEscape(tok), e.key, nil, &l)
			for _, h := range l.Webhooks {
				ids = append(ids, h.ID)
			}
			if tok = l.NextPageToken; tok == "" || page > 5 {
				break
			}
			// The token continues this key's listing only.
			code, body := e.do(t, "GET", "/v1/webhooks?pageSize=1&pageToken="+url.QueryEscape(tok), e.other, nil)
			apitest.WantError(t, "other key's page token", code, body, 400, "pageToken")
		}
		// Newest first; webhooks created in the same millisecond by id, descending.
		order := []hook{evm, pn, val}
		slices.SortFunc(order, func(a, b hook) int {
			if a.CreatedAt != b.CreatedAt {
				return int(b.CreatedAt - a.CreatedAt)
			}
			return strings.Compare(b.ID, a.ID)
		})
		if want := []string{order[0].ID, order[1].ID, order[2].ID}; !slices.Equal(ids, want) {
			t.Errorf("listing %v, want %v", ids, want)
		}
		var l struct{ Webhooks []hook }
		e.ok(t, 200, "GET", "/v1/webhooks", e.other, nil, &l)
		if len(l.Webhooks) != 0 {
			t.Errorf("other key lists %d webhooks", len(l.Webhooks))
		}

		// Update, then deactivate; status filters follow.
		var up hook
		e.ok(t, 200, "PATCH", "/v1/webhooks/"+evm.ID, e.key, map[string]any{"name": "renamed", "url": hookURL + "/v2", "includeLogs": false}, &up)
		if up.Name != "renamed" || up.URL != hookURL+"/v2" || *up.IncludeLogs || !*up.IncludeInternalTxs || up.Status != "active" {
			t.Errorf("updated %+v", up)
		}
		e.ok(t, 200, "DELETE", "/v1/webhooks/"+pn.ID, e.key, nil, &up)
		if up.Status != "inactive" {
			t.Errorf("deactivated %+v", up)
		}
		e.ok(t, 200, "GET", "/v1/webhooks?status=inactive", e.key, nil, &l)
		if len(l.Webhooks) != 1 || l.Webhooks[0].ID != pn.ID {
			t.Errorf("inactive listing %+v", l.Webhooks)
		}
		e.ok(t, 200, "GET", "/v1/webhooks?status=active", e.key, nil, &l)
		if len(l.Webhooks) != 2 {
			t.Errorf("active listing %+v", l.Webhooks)
		}
		e.ok(t, 200, "PATCH", "/v1/webhooks/"+pn.ID, e.key, map[string]any{"status": "active"}, &up)
		if up.Status != "active" {
			t.Errorf("reactivated %+v", up)
		}

		// Addresses of the EVM webhook: add 24 (one already watched), page
		// through 25 in order, remove 20.
		var more []string
		for i := range 24 {
			more = append(more, fmt.Sprintf("0x%040x", i+1))
		}
		e.ok(t, 200, "PATCH", "/v1/webhooks/"+evm.ID+"/addresses", e.key, map[string]any{"addresses": append(more, e.f.CAddr)}, &up)
		if n := len(up.Metadata["addresses"].([]any)); n != 25 {
			t.Errorf("after adding: %d addresses", n)
		}
		want := sortedCopy(append(more, strings.ToLower(e.f.CAddr)))
		var got []string
		for page, tok := 0, ""; page < 10; page++ {
			var a struct {
				NextPageToken  string   `json:"nextPageToken"`
				Addresses      []string `json:"addresses"`
				TotalAddresses int      `json:"totalAddresses"`
			}
			e.ok(t, 200, "GET", "/v1/webhooks/"+evm.ID+"/addresses?pageSize=10&pageToken="+url.QueryEscape(tok), e.key, nil, &a)
			if a.TotalAddresses != 25 {
				t.Errorf("totalAddresses %d", a.TotalAddresses)
			}
			got = append(got, a.Addresses...)
			if tok = a.NextPageToken; tok == "" {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("addresses %v, want %v", got, want)
		}
		e.ok(t, 200, "DELETE", "/v1/webhooks/"+evm.ID+"/addresses", e.key, map[string]any{"addresses": more[:20]}, &up)
		if n := len(up.Metadata["addresses"].([]any)); n != 5 {
			t.Errorf("after removing: %d addresses", n)
		}

		// Shared secret: made with the first webhook, rotated on demand, per key.
		var s1, s2, s3 struct{ Secret string }
		e.ok(t, 200, "GET", "/v1/webhooks:getSharedSecret", e.key, nil, &s1)
		e.ok(t, 201, "POST", "/v1/webhooks:generateOrRotateSharedSecret", e.key, nil, &s2)
		e.ok(t, 200, "GET", "/v1/webhooks:getSharedSecret", e.key, nil, &s3)
		hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
		if !hex64.MatchString(s1.Secret) || !hex64.MatchString(s2.Secret) || s1.Secret == s2.Secret || s3.Secret != s2.Secret {
			t.Errorf("secrets %q %q %q", s1.Secret, s2.Secret, s3.Secret)
		}
		code, body := e.do(t, "GET", "/v1/webhooks:getSharedSecret", e.other, nil)
		apitest.WantError(t, "secret of a key without one", code, body, 404)
	})
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// TestAccess: no key is a 401, a key without the webhooks scope a 403,
// another key's webhook a 404 on every route, as is an unknown id.
func TestAccess(t *testing.T) {
	forEachBackend(t, webhooks.URLPolicy{}, func(t *testing.T, e *env) {
		var h hook
		e.ok(t, 201, "POST", "/v1/webhooks", e.key, e.requests()[webhooks.EventAddressActivity], &h)
		unknown := "f33de69c-d13b-4691-908f-870d6e2e6b04"
		addrs := map[string]any{"addresses": []string{e.f.CAddr}}
		routes := []struct {
			method, path string
			body         any
		}{
			{"GET", "/v1/webhooks/%s", nil},
			{"PATCH", "/v1/webhooks/%s", map[string]any{"name": "x"}},
			{"DELETE", "/v1/webhooks/%s", nil},
			{"GET", "/v1/webhooks/%s/addresses", nil},
			{"PATCH", "/v1/webhooks/%s/addresses", addrs},
			{"DELETE", "/v1/webhooks/%s/addresses", addrs},
		}
		for _, r := range routes {
			for _, c := range []struct {
				name, key, id string
				want          int
			}{
				{"no key", "", h.ID, 401},
				{"key without the scope", e.noScope, h.ID, 403},
				{"another key's webhook", e.other, h.ID, 404},
				{"unknown id", e.key, unknown, 404},
				{"malformed id", e.key, "not-a-uuid", 400},
			} {
				code, body := e.do(t, r.method, fmt.Sprintf(r.path, c.id), c.key, r.body)
				apitest.WantError(t, r.method+" "+r.path+" "+c.name, code, body, c.want)
			}
		}
		for _, r := range []struct{ method, path string }{
			{"GET", "/v1/webhooks"}, {"POST", "/v1/webhooks"},
			{"GET", "/v1/webhooks:getSharedSecret"}, {"POST", "/v1/webhooks:generateOrRotateSharedSecret"},
		} {
			code, body := e.do(t, r.method, r.path, "", nil)
			apitest.WantError(t, r.path+" without a key", code, body, 401)
			code, body = e.do(t, r.method, r.path, e.noScope, nil)
			apitest.WantError(t, r.path+" without the scope", code, body, 403)
		}
		// Nothing the other key tried changed the webhook.
		var got hook
		e.ok(t, 200, "GET", "/v1/webhooks/"+h.ID, e.key, nil, &got)
		if got.Status != "active" || got.Name != "evm" || len(got.Metadata["addresses"].([]any)) != 1 {
			t.Errorf("webhook changed by others: %+v", got)
		}
	})
}

// TestRejects: every malformed request is a 400 whose message names the
// problem, and creates nothing.
func TestRejects(t *testing.T) {
	forEachBackend(t, webhooks.URLPolicy{}, func(t *testing.T, e *env) {
		reqs := e.requests()
		with := func(typ string, kv ...any) map[string]any {
			m := map[string]any{}
			for k, v := range reqs[typ] {
				m[k] = v
			}
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i+1] == nil {
					delete(m, kv[i].(string))
				} else {
					m[kv[i].(string)] = kv[i+1]
				}
			}
			return m
		}
		md := func(typ string, kv ...any) map[string]any {
			m := map[string]any{}
			for k, v := range reqs[typ]["metadata"].(map[string]any) {
				m[k] = v
			}
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i+1] == nil {
					delete(m, kv[i].(string))
				} else {
					m[kv[i].(string)] = kv[i+1]
				}
			}
			return m
		}
		const evm, pn, val = webhooks.EventAddressActivity, webhooks.EventPrimaryAddressActivity, webhooks.EventValidatorActivity
		many := make([]string, webhooks.MaxKeysPerRequest+1)
		for i := range many {
			many[i] = fmt.Sprintf("0x%040x", i+1)
		}
		cases := []struct {
			name string
			body any
			want []string
		}{
			{"empty body", "", []string{"JSON request body is required"}},
			{"not JSON", `{"eventType":`, []string{"JSON"}},
			{"unknown field", with(evm, "secret", "x"), []string{"unknown field", "secret"}},
			{"no event type", with(evm, "eventType", nil), []string{"eventType is required"}},
			{"unknown event type", with(evm, "eventType", "block_activity"), []string{"eventType must be one of", "block_activity"}},
			{"no url", with(evm, "url", nil), []string{"url is required"}},
			{"malformed url", with(evm, "url", "http://[::1"), []string{"url", "not a valid URL"}},
			{"ftp url", with(evm, "url", "ftp://hooks.example.com/x"), []string{"http or https"}},
			{"relative url", with(evm, "url", "/hooks"), []string{"http or https"}},
			{"url without host", with(evm, "url", "https:///x"), []string{"has no host"}},
			{"url with credentials", with(evm, "url", "https://u:p@hooks.example.com/"), []string{"credentials"}},
			{"loopback url", with(evm, "url", "http://127.0.0.1:9/hook"), []string{"loopback", "--webhook-allow-loopback"}},
			{"localhost url", with(evm, "url", "http://localhost/hook"), []string{"loopback"}},
			{"ipv6 loopback url", with(evm, "url", "http://[::1]/hook"), []string{"loopback"}},
			{"private url", with(evm, "url", "http://10.1.2.3/hook"), []string{"private", "--webhook-allow-private"}},
			{"metadata service url", with(evm, "url", "http://169.254.169.254/latest"), []string{"metadata-service"}},
			{"long name", with(evm, "name", strings.Repeat("n", webhooks.MaxNameLength+1)), []string{"name is longer"}},
			{"evm: no chain", with(evm, "chainId", nil), []string{"chainId is required"}},
			{"evm: unknown chain", with(evm, "chainId", "43114"), []string{"chainId", "43114", "not an EVM chain indexed"}},
			{"evm: network given", with(evm, "network", "fuji"), []string{"network is not a field of address_activity"}},
			{"evm: no metadata", with(evm, "metadata", nil), []string{"metadata is required"}},
			{"evm: no addresses", with(evm, "metadata", md(evm, "addresses", nil)), []string{"metadata.addresses is required"}},
			{"evm: empty addresses", with(evm, "metadata", md(evm, "addresses", []string{})), []string{"at least one address"}},
			{"evm: malformed address", with(evm, "metadata", md(evm, "addresses", []string{"0x1234"})), []string{"metadata.addresses", `"0x1234" is not an EVM address`}},
			{"evm: bech32 address", with(evm, "metadata", md(evm, "addresses", []string{e.f.PAddr})), []string{"is not an EVM address"}},
			{"evm: too many addresses", with(evm, "metadata", md(evm, "addresses", many)), []string{"at most 1000 per request"}},
			{"evm: bad event signature", with(evm, "metadata", md(evm, "eventSignatures", []string{"0x12"})), []string{"metadata.eventSignatures", "not a hash"}},
			{"evm: metadata unknown field", with(evm, "metadata", md(evm, "keys", []string{"x"})), []string{"metadata", "unknown field", "keys"}},
			{"evm: includeLogs not a bool", with(evm, "includeLogs", "yes"), []string{"includeLogs"}},
			{"pn: no network", with(pn, "network", nil), []string{"network is required"}},
			{"pn: unknown network", with(pn, "network", "devnet"), []string{"network must be mainnet or fuji"}},
			{"pn: another network", with(pn, "network", "mainnet"), []string{"network mainnet is not the network this server indexes"}},
			{"pn: no chain", with(pn, "chainId", nil), []string{"chainId is required"}},
			{"pn: EVM chain", with(pn, "chainId", e.f.EVMChainID), []string{"not a primary-network chain"}},
			{"pn: includeLogs", with(pn, "includeLogs", true), []string{"includeLogs is a field of address_activity webhooks only"}},
			{"pn: bad key type", with(pn, "metadata", md(pn, "keyType", "nodeId")), []string{"metadata.keyType must be addresses"}},
			{"pn: EVM address key", with(pn, "metadata", md(pn, "keys", []string{e.f.CAddr})), []string{"metadata.keys", "not a bech32 address"}},
			{"pn: mainnet address", with(pn, "metadata", md(pn, "keys", []string{"avax1w98xaclyc635teqmegl22hn756zrlu264swyuh"})), []string{"address of another network"}},
			{"pn: unknown sub-event", with(pn, "metadata", md(pn, "subEvents", map[string]any{"addressActivitySubEvents": []string{"balance_change", "utxo_spent"}})), []string{`"utxo_spent" is not one of`}},
			{"pn: no sub-events", with(pn, "metadata", md(pn, "subEvents", nil)), []string{"addressActivitySubEvents is required"}},
			{"pn: threshold without filter", with(pn, "metadata", md(pn, "balanceThresholdFilter", nil)), []string{"balanceThresholdFilter is required"}},
			{"pn: bad balance type", with(pn, "metadata", md(pn, "balanceThresholdFilter", map[string]any{"balanceType": "all", "balanceThreshold": "1"})), []string{"balanceType must be one of"}},
			{"pn: bad threshold", with(pn, "metadata", md(pn, "balanceThresholdFilter", map[string]any{"balanceType": "locked", "balanceThreshold": "-1"})), []string{"balanceThreshold must be a whole number"}},
			{"val: chainId given", with(val, "chainId", "p-chain"), []string{"chainId is not a field of validator_activity"}},
			{"val: two keys", with(val, "metadata", md(val, "keys", []string{e.f.NodeID, e.f.NodeID})), []string{"exactly one nodeId"}},
			{"val: malformed node id", with(val, "metadata", md(val, "keys", []string{"NodeID-xyz"})), []string{"not a node id"}},
			{"val: bad key type", with(val, "metadata", md(val, "keyType", "address")), []string{"metadata.keyType must be nodeId or subnetId"}},
			{"val: unknown sub-event", with(val, "metadata", md(val, "subEvents", map[string]any{"validatorActivitySubEvents": []string{"validator_slashed"}})), []string{`"validator_slashed" is not one of`}},
			{"val: empty sub-events", with(val, "metadata", md(val, "subEvents", map[string]any{"validatorActivitySubEvents": []string{}})), []string{"must name at least one"}},
			{"val: bad fee threshold", with(val, "metadata", md(val, "l1ValidatorFeeBalanceThreshold", "1.5")), []string{"l1ValidatorFeeBalanceThreshold"}},
		}
		for _, c := range cases {
			code, body := e.do(t, "POST", "/v1/webhooks", e.key, c.body)
			apitest.WantError(t, c.name, code, body, 400)
			msg := apitest.ErrorMessage(body)
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%s: message %q lacks %q", c.name, msg, w)
				}
			}
		}
		var l struct{ Webhooks []hook }
		e.ok(t, 200, "GET", "/v1/webhooks", e.key, nil, &l)
		if len(l.Webhooks) != 0 {
			t.Errorf("rejected requests created %d webhooks", len(l.Webhooks))
		}

		// Changes of an existing webhook.
		var h, v hook
		e.ok(t, 201, "POST", "/v1/webhooks", e.key, reqs[evm], &h)
		e.ok(t, 201, "POST", "/v1/webhooks", e.key, reqs[val], &v)
		for _, c := range []struct {
			name, method, path string
			body               any
			want               string
		}{
			{"bad status", "PATCH", "/v1/webhooks/" + h.ID, map[string]any{"status": "paused"}, "status must be active or inactive"},
			{"loopback url", "PATCH", "/v1/webhooks/" + h.ID, map[string]any{"url": "http://127.0.0.1/"}, "loopback"},
			{"unknown field", "PATCH", "/v1/webhooks/" + h.ID, map[string]any{"eventType": "validator_activity"}, "unknown field"},
			{"include* on a validator webhook", "PATCH", "/v1/webhooks/" + v.ID, map[string]any{"includeLogs": true}, "address_activity webhooks only"},
			{"addresses of a validator webhook", "PATCH", "/v1/webhooks/" + v.ID + "/addresses", map[string]any{"addresses": []string{e.f.CAddr}}, "address_activity webhooks only"},
			{"list addresses of a validator webhook", "GET", "/v1/webhooks/" + v.ID + "/addresses", nil, "address_activity webhooks only"},
			{"no addresses", "PATCH", "/v1/webhooks/" + h.ID + "/addresses", map[string]any{}, "addresses is required"},
			{"malformed address", "DELETE", "/v1/webhooks/" + h.ID + "/addresses", map[string]any{"addresses": []string{"0xzz"}}, "not an EVM address"},
			{"too many addresses", "PATCH", "/v1/webhooks/" + h.ID + "/addresses", map[string]any{"addresses": many}, "at most 1000 per request"},
			{"bad page size", "GET", "/v1/webhooks?pageSize=101", nil, "pageSize"},
			{"bad status filter", "GET", "/v1/webhooks?status=paused", nil, "status"},
			{"forged page token", "GET", "/v1/webhooks?pageToken=abc.def", nil, "pageToken"},
			{"addresses page size", "GET", "/v1/webhooks/" + h.ID + "/addresses?pageSize=0", nil, "pageSize"},
		} {
			code, body := e.do(t, c.method, c.path, e.key, c.body)
			apitest.WantError(t, c.name, code, body, 400)
			if msg := apitest.ErrorMessage(body); !strings.Contains(msg, c.want) {
				t.Errorf("%s: message %q lacks %q", c.name, msg, c.want)
			}
		}
	})
}

// TestLoopbackAllowed: the operator's switches let webhook URLs name
// loopback and private addresses; cloud metadata addresses stay refused
// without --webhook-allow-private.
func TestLoopbackAllowed(t *testing.T) {
	forEachBackend(t, webhooks.URLPolicy{AllowLoopback: true}, func(t *testing.T, e *env) {
		req := e.requests()[webhooks.EventAddressActivity]
		for _, c := range []struct {
			url  string
			want int
		}{{"http://127.0.0.1:8080/hook", 201}, {"http://localhost/hook", 201}, {"http://10.0.0.1/hook", 400}, {"http://169.254.169.254/", 400}} {
			req["url"] = c.url
			code, body := e.do(t, "POST", "/v1/webhooks", e.key, req)
			if code != c.want {
				t.Errorf("%s: %d, want %d: %s", c.url, code, c.want, body)
			}
		}
	})
}
