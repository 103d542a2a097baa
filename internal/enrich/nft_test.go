package enrich

import (
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ava-labs/libevm/accounts/abi"
)

const devCID = "bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi"

// fetchedToken is a devnet NFT whose recorded URI points at a host: the
// recorded http://127.0.0.1:8080 host (reached through ConnectTo) or IPFS
// (through the gateway stand-in).
type fetchedToken struct {
	contract, id, path string
	gateway            bool
	doc                string // what the host serves in mode good
}

var fetchedTokens = []fetchedToken{
	{"erc721", "2", "/nft/2.json", false, `{"name":"Devnet Collectible #2","description":"served over http","image":"ipfs://` + devCID +
		`/2.png","animation_url":"https://devnet.example.org/2.mp4","external_url":"https://devnet.example.org/2","background_color":"112233","attributes":[{"trait_type":"color","value":"blue"},{"trait_type":"level","value":3}]}`},
	{"erc721", "3", "/ipfs/" + devCID + "/3.json", true, `{"name":"Devnet Collectible #3","description":"served over ipfs","image":"ipfs://` + devCID + `/3.png","attributes":[]}`},
	{"erc1155", "2", "/ipfs/" + devCID + "/multi/2.json", true, `{"name":"Devnet Silver","description":"ERC-1155 id 2 over ipfs","decimals":2,"properties":{"rarity":"common"}}`},
	{"erc1155", "3", "/multi/3.json", false, `{"name":"Devnet Bronze","image":"https://devnet.example.org/3.png","decimals":0}`},
}

// fastRetry is DefaultRetry with the caps the scenarios count on and
// millisecond backoffs.
func fastRetry() map[string]RetryPolicy {
	out := map[string]RetryPolicy{}
	for st, p := range DefaultRetry() {
		p.Base, p.Cap = 5*time.Millisecond, 20*time.Millisecond
		p.Max = 3
		if st == StatusInvalidJSON {
			p.Max = 2
		}
		out[st] = p
	}
	return out
}

func nftConfig(host, gw *metaServer) NFTConfig {
	return NFTConfig{Workers: 4, PerHost: 2, Poll: 10 * time.Millisecond, Batch: 8, Lease: 3 * time.Second,
		Timeout: 300 * time.Millisecond, MaxBytes: serverMaxBytes, MaxRedirects: 3, IPFSGateway: "http://" + gw.addr(),
		AllowLoopback: true, ConnectTo: map[string]string{"127.0.0.1:8080": host.addr()}, Retry: fastRetry()}
}

type nftRowT struct {
	uri, doc  sql.NullString
	status    string
	updatedAt int64
}

func readNFT(t *testing.T, d *devnet, token, id string) nftRowT {
	t.Helper()
	var r nftRowT
	if err := d.DB.QueryRowContext(t.Context(), `SELECT token_uri, metadata, metadata_status, metadata_updated_at FROM evm_nft_tokens
		WHERE chain_key = 'C' AND token = $1 AND token_id = $2`, token, id).Scan(&r.uri, &r.doc, &r.status, &r.updatedAt); err != nil {
		t.Fatalf("%s/%s: %v", token, id, err)
	}
	return r
}

// recordedURI is the token URI the recording's tokenURI/uri call answered.
func (d *devnet) recordedURI(t *testing.T, contract, id string) string {
	t.Helper()
	sel := selTokenURI
	if contract == "erc1155" {
		sel = selURI
	}
	w, _ := uintWord(id)
	c, ok := d.answer(d.contracts[contract], callData(sel, w))
	if !ok || c.Reverted {
		t.Fatalf("no recorded URI for %s %s", contract, id)
	}
	strT, _ := abi.NewType("string", "", nil)
	v, err := abi.Arguments{{Type: strT}}.Unpack(c.Result)
	if err != nil {
		t.Fatal(err)
	}
	return v[0].(string)
}

// sameFields compares the stored document with the source document on
// the fields the API serves.
func sameFields(t *testing.T, what, stored, source string, erc1155 bool) {
	t.Helper()
	var got, want map[string]any
	if err := json.Unmarshal([]byte(stored), &got); err != nil {
		t.Fatalf("%s: stored %q: %v", what, stored, err)
	}
	if err := json.Unmarshal([]byte(source), &want); err != nil {
		t.Fatalf("%s: source: %v", what, err)
	}
	keys := []string{"name", "description", "image", "animation_url", "external_url", "background_color", "attributes"}
	if erc1155 {
		keys = append(keys, "decimals", "properties")
	}
	for _, k := range keys {
		g, _ := json.Marshal(got[k])
		w, _ := json.Marshal(want[k])
		if string(g) != string(w) {
			t.Errorf("%s: %s = %s, want %s", what, k, g, w)
		}
	}
}

// Every devnet NFT against hosts answering well, slowly, hugely, wrongly,
// by redirecting to private or metadata-service addresses, and by 429:
// each ends in its status after the per-status number of attempts; the
// data: URIs and the empty ERC-1155 URIs end the same in every scenario.
func TestNFTScenarios(t *testing.T) {
	scenarios := []struct {
		mode, status string
		hits         int
		errHas       string
	}{
		{modeGood, StatusIndexed, 1, ""},
		{modeRedirectGood, StatusIndexed, 1, ""},
		{modeThrottleOnce, StatusIndexed, 2, ""},
		{modeSlow, StatusUnreachable, 3, "timeout"},
		{modeError, StatusUnreachable, 3, "500"},
		{modeHuge, StatusTooLarge, 1, "exceeds"},
		{modeHugeStream, StatusTooLarge, 1, "exceeds"},
		{modeMalformed, StatusInvalidJSON, 2, "not JSON"},
		{modeNotMetadata, StatusInvalidMeta, 1, "not an object"},
		{modeRedirectPriv, StatusUnreachable, 1, "private address"},
		{modeRedirectMeta, StatusUnreachable, 1, "metadata-service address"},
		{modeThrottled, StatusThrottled, 3, "429"},
	}
	forEachDevnet(t, func(t *testing.T, d *devnet) {
		host, gw := newMetaServer(t), newMetaServer(t)
		total := count(t, d.DB, `SELECT COUNT(*) FROM evm_nft_tokens WHERE chain_key = 'C'`)
		if total != 9 {
			t.Fatalf("%d NFTs indexed, want 9 (ERC-721 1-4, ERC-1155 1-5)", total)
		}
		for _, sc := range scenarios {
			t.Run(sc.mode, func(t *testing.T) {
				d.reset(t)
				host.resetHits()
				gw.resetHits()
				for _, ft := range fetchedTokens {
					srv := host
					if ft.gateway {
						srv = gw
					}
					srv.set(ft.path, sc.mode, ft.doc)
				}
				s := newService(t, d.DB, Config{Chains: []Chain{d.chain()}, Tokens: TokenConfig{Disabled: true},
					Trace: TraceConfig{Disabled: true}, NFT: nftConfig(host, gw)})
				start(t, s)
				waitFor(t, 20*time.Second, "every NFT job done", func() bool {
					return count(t, d.DB, `SELECT COUNT(*) FROM enrich_nft_jobs WHERE chain_key = 'C' AND state = 'done'`) == total
				})
				s.Close()
				for _, ft := range fetchedTokens {
					srv := host
					if ft.gateway {
						srv = gw
					}
					what := ft.contract + "/" + ft.id
					r := readNFT(t, d, d.contracts[ft.contract], ft.id)
					if r.status != sc.status {
						var lastErr string
						_ = d.DB.QueryRowContext(t.Context(), `SELECT last_error FROM enrich_nft_jobs WHERE token = $1 AND token_id = $2`,
							d.contracts[ft.contract], ft.id).Scan(&lastErr)
						t.Errorf("%s: status %s, want %s (%s)", what, r.status, sc.status, lastErr)
						continue
					}
					if got := srv.hitsOf(ft.path); got != sc.hits {
						t.Errorf("%s: %d requests, want %d", what, got, sc.hits)
					}
					if r.uri.String != d.recordedURI(t, ft.contract, ft.id) || r.updatedAt == 0 {
						t.Errorf("%s: token_uri %q updated %d", what, r.uri.String, r.updatedAt)
					}
					if sc.status == StatusIndexed {
						sameFields(t, what, r.doc.String, ft.doc, ft.contract == "erc1155")
					} else if r.doc.Valid {
						t.Errorf("%s: %s with a document %s", what, r.status, r.doc.String)
					}
					var lastErr string
					var attempts int
					if err := d.DB.QueryRowContext(t.Context(), `SELECT last_error, attempts FROM enrich_nft_jobs WHERE chain_key = 'C' AND token = $1 AND token_id = $2`,
						d.contracts[ft.contract], ft.id).Scan(&lastErr, &attempts); err != nil {
						t.Fatal(err)
					}
					if !strings.Contains(strings.ToLower(lastErr), strings.ToLower(sc.errHas)) &&
						!(sc.mode == modeSlow && strings.Contains(lastErr, "deadline exceeded")) {
						t.Errorf("%s: last error %q does not say %q", what, lastErr, sc.errHas)
					}
					if sc.status != StatusIndexed && attempts != sc.hits {
						t.Errorf("%s: %d attempts recorded, want %d", what, attempts, sc.hits)
					}
				}
				// Independent of the hosts: data: URIs and empty URIs.
				for _, x := range []struct{ contract, id string }{{"erc721", "1"}, {"erc721", "4"}, {"erc1155", "1"}} {
					r := readNFT(t, d, d.contracts[x.contract], x.id)
					uri := d.recordedURI(t, x.contract, x.id)
					payload, err := base64.StdEncoding.DecodeString(uri[strings.Index(uri, ",")+1:])
					if err != nil {
						t.Fatal(err)
					}
					if r.status != StatusIndexed || r.uri.String != uri {
						t.Errorf("%s/%s (data: URI): %s %q", x.contract, x.id, r.status, r.uri.String)
						continue
					}
					sameFields(t, x.contract+"/"+x.id, r.doc.String, string(payload), x.contract == "erc1155")
				}
				for _, id := range []string{"4", "5"} {
					if r := readNFT(t, d, d.contracts["erc1155"], id); r.status != StatusInvalidURI || r.uri.String != "" {
						t.Errorf("erc1155/%s (empty uri): %s %q", id, r.status, r.uri.String)
					}
				}
			})
		}
	})
}

// Without AllowLoopback, a host name that resolves to a loopback address
// is refused when dialed (after DNS resolution), as is a loopback literal:
// no request reaches the server, and the refusal is final.
func TestFetchRefusesResolvedAddresses(t *testing.T) {
	host := newMetaServer(t)
	host.set("/x.json", modeGood, `{"name":"x"}`)
	cfg := Config{NFT: NFTConfig{Timeout: time.Second}}.WithDefaults().NFT
	policy := addrPolicy{}
	f := &fetcher{client: newSafeClient(policy, cfg), policy: policy, gateway: "http://gw.invalid", maxBytes: 1 << 20,
		ua: "test", hosts: newHostLimiter(2), timeout: cfg.Timeout}
	port := host.addr()[strings.LastIndex(host.addr(), ":")+1:]
	for _, u := range []string{"http://localhost:" + port + "/x.json", "http://127.0.0.1:" + port + "/x.json", "http://[::1]:" + port + "/x.json"} {
		o := f.fetch(t.Context(), u, ercTypeERC721)
		if o.status != StatusUnreachable || !o.final || !errors.Is(o.err, ErrBlockedAddress) {
			t.Errorf("%s: %s final %v err %v", u, o.status, o.final, o.err)
		}
	}
	if n := host.hitsOf("/x.json"); n != 0 {
		t.Errorf("%d requests reached the loopback server", n)
	}
	// The same fetch with loopback allowed succeeds.
	policy.allowLoopback = true
	f.client, f.policy = newSafeClient(policy, cfg), policy
	if o := f.fetch(t.Context(), "http://localhost:"+port+"/x.json", ercTypeERC721); o.status != StatusIndexed {
		t.Errorf("allowed loopback: %s %v", o.status, o.err)
	}
}

// A reindex request refetches at once, at most once per interval per
// token; unknown tokens are ErrNotFound. A token already INDEXED whose
// refetch fails keeps its metadata until the retries end.
func TestReindexNFT(t *testing.T) {
	forEachDevnet(t, func(t *testing.T, d *devnet) {
		host, gw := newMetaServer(t), newMetaServer(t)
		for _, ft := range fetchedTokens {
			srv := host
			if ft.gateway {
				srv = gw
			}
			srv.set(ft.path, modeGood, ft.doc)
		}
		var offset atomic.Int64 // the clock runs, and jumps forward when the test says
		clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		s := newService(t, d.DB, Config{Chains: []Chain{d.chain()}, Tokens: TokenConfig{Disabled: true},
			Trace: TraceConfig{Disabled: true}, NFT: nftConfig(host, gw)}, WithClock(clock))
		start(t, s)
		nft := d.contracts["erc721"]
		waitFor(t, 20*time.Second, "token 2 indexed", func() bool { return readNFT(t, d, nft, "2").status == StatusIndexed })
		first := readNFT(t, d, nft, "2")

		newDoc := `{"name":"Devnet Collectible #2 (revealed)","description":"after reindex"}`
		host.set("/nft/2.json", modeGood, newDoc)
		offset.Add(int64(2 * time.Second))
		if err := s.ReindexNFT(t.Context(), "C", nft, "2"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the new document", func() bool {
			r := readNFT(t, d, nft, "2")
			return r.status == StatusIndexed && strings.Contains(r.doc.String, "revealed")
		})
		if r := readNFT(t, d, nft, "2"); r.updatedAt <= first.updatedAt {
			t.Errorf("metadata_updated_at %d, was %d", r.updatedAt, first.updatedAt)
		}
		var soon *TooSoonError
		if err := s.ReindexNFT(t.Context(), "C", nft, "2"); !errors.As(err, &soon) || soon.RetryAfter <= 59*time.Minute {
			t.Fatalf("second reindex within the hour: %v", err)
		}
		// Another token is not limited by this one.
		if err := s.ReindexNFT(t.Context(), "C", nft, "3"); err != nil {
			t.Errorf("token 3: %v", err)
		}
		for _, id := range []string{"5", "99"} {
			if err := s.ReindexNFT(t.Context(), "C", nft, id); !errors.Is(err, ErrNotFound) {
				t.Errorf("token %s: %v", id, err)
			}
		}
		if err := s.ReindexNFT(t.Context(), "X", nft, "2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("chain X: %v", err)
		}

		// An hour later: accepted; the host now fails, the indexed
		// metadata stays while retrying, then the failure shows.
		host.set("/nft/2.json", modeHang, "")
		offset.Add(int64(time.Hour))
		if err := s.ReindexNFT(t.Context(), "C", nft, "2"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the refetch to reach the host", func() bool { return host.inflight.Load() > 0 })
		if r := readNFT(t, d, nft, "2"); r.status != StatusIndexed || !strings.Contains(r.doc.String, "revealed") {
			t.Errorf("while refetching: %s %s", r.status, r.doc.String)
		}
		host.set("/nft/2.json", modeError, "")
		host.unblock()
		waitFor(t, 10*time.Second, "the refetch to fail", func() bool {
			return count(t, d.DB, `SELECT COUNT(*) FROM enrich_nft_jobs WHERE token = $1 AND token_id = '2' AND state = 'done'`, nft) == 1
		})
		if r := readNFT(t, d, nft, "2"); r.status != StatusUnreachable || r.doc.Valid {
			t.Errorf("after the failed refetch: %s %s", r.status, r.doc.String)
		}
	})
}
