package evm_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/api/apitest"
)

// Hostile path and query values on the block, transaction, history and
// deployment routes: always a 400 or a 404 with an error body, never a 5xx.
func TestHostileInputs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		a := "0x03623add7ec6f6426d6266ed2e5a4734c786e73e"
		values := []string{"", "0x", "0X", "-1", "1e3", "0x-1", "%00", "%ff%fe", "' OR 1=1 --", strings.Repeat("9", 400),
			"0x" + strings.Repeat("f", 64), "0x" + strings.Repeat("f", 40), "0x" + strings.Repeat("g", 64), "NaN", "null", "[]"}
		templates := []string{
			"/v1/chains/88888/blocks/{v}", "/v1/chains/88888/blocks/{v}/transactions",
			"/v1/chains/88888/transactions/{v}", "/v1/chains/{v}/transactions", "/v1/chains/{v}/blocks",
			"/v1/chains/88888/addresses/{v}/transactions", "/v2/chains/88888/addresses/{v}/transactions",
			"/v1/chains/88888/addresses/{v}/transactions:listErc20", "/v1/chains/88888/contracts/{v}/deployments",
			"/v1/chains/88888/contracts/{v}/transactions:getDeployment", "/v1/address/{v}/chains",
		}
		queries := []string{"pageSize", "pageToken", "startBlock", "endBlock", "sortOrder", "status", "network", "filterSpamTokens", "currency"}
		for _, v := range values {
			ev := url.PathEscape(v)
			for _, tmpl := range templates {
				if ev == "" {
					continue // an empty segment: the router's redirect to the cleaned path
				}
				check(t, e, strings.ReplaceAll(tmpl, "{v}", ev))
			}
			for _, q := range queries {
				for _, base := range []string{"/v1/chains/88888/blocks/1/transactions", "/v1/transactions", "/v1/blocks",
					"/v2/chains/88888/addresses/" + a + "/transactions", "/v1/chains/88888/transactions",
					"/v1/chains/88888/addresses/" + a + "/transactions:listErc1155"} {
					check(t, e, base+"?"+q+"="+url.QueryEscape(v))
				}
			}
		}
	})
}

func check(t *testing.T, e *env, path string) {
	t.Helper()
	code, body := apitest.ServeUnvalidated(t, e.mux, "GET", path)
	if code >= 500 || code == 0 {
		t.Errorf("%s: %d %s", path, code, body)
		return
	}
	if code != 200 && code != 400 && code != 404 {
		t.Errorf("%s: %d %s", path, code, body)
	}
	if code == 200 {
		e.do(t, path) // validated against the document
	}
}
