package enrich

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// NFT metadata statuses: the published NftTokenMetadataStatus set.
const (
	StatusUnknown        = "UNKNOWN"                    // the node did not answer tokenURI/uri (retried), or an internal failure
	StatusMissingToken   = "MISSING_TOKEN"              // tokenURI/uri reverted: the token does not exist (any more)
	StatusInvalidURI     = "INVALID_TOKEN_URI"          // empty, undecodable or malformed URI
	StatusInvalidScheme  = "INVALID_TOKEN_URI_SCHEME"   // a scheme other than data:, http(s):, ipfs:
	StatusUnreachable    = "UNREACHABLE_TOKEN_URI"      // connection, timeout, HTTP error status, refused address
	StatusThrottled      = "THROTTLED_TOKEN_URI"        // HTTP 429
	StatusTooLarge       = "METADATA_CONTENT_TOO_LARGE" // above NFTConfig.MaxBytes
	StatusInvalidMeta    = "INVALID_METADATA"           // JSON, but not a metadata object
	StatusInvalidJSON    = "INVALID_METADATA_JSON"      // not JSON
	StatusIndexed        = "INDEXED"
	StatusUnindexed      = "UNINDEXED" // not fetched yet
	ercTypeERC20         = "ERC-20"
	ercTypeERC721        = "ERC-721"
	ercTypeERC1155       = "ERC-1155"
	maxStoredTokenURIRaw = 64 << 10
)

var knownStatus = map[string]bool{
	StatusUnknown: true, StatusMissingToken: true, StatusInvalidURI: true, StatusInvalidScheme: true,
	StatusUnreachable: true, StatusThrottled: true, StatusTooLarge: true, StatusInvalidMeta: true,
	StatusInvalidJSON: true, StatusIndexed: true, StatusUnindexed: true,
}

// outcome is the result of one attempt at a token's metadata.
type outcome struct {
	status     string
	uri        string // the token URI as read (ERC-1155 {id} substituted); "" when unknown
	doc        string // normalised metadata JSON, INDEXED only
	final      bool   // no retry whatever the status's policy
	retryAfter time.Duration
	busy       bool  // no attempt made: the host had no free slot in time
	err        error // why, for the log and last_error
}

func fail(status string, final bool, format string, args ...any) outcome {
	return outcome{status: status, final: final, err: fmt.Errorf(format, args...)}
}

// fetcher resolves token URIs to metadata documents.
type fetcher struct {
	client   *http.Client
	policy   addrPolicy
	gateway  string // no trailing slash
	maxBytes int64
	ua       string
	hosts    *hostLimiter
	timeout  time.Duration
}

// expandURI applies ERC-1155's {id} substitution: the id as 64 lowercase
// hex digits, no 0x.
func expandURI(uri, ercType, tokenID string) string {
	if ercType != ercTypeERC1155 || !strings.Contains(uri, "{id}") {
		return uri
	}
	w, ok := uintWord(tokenID)
	if !ok {
		return uri
	}
	return strings.ReplaceAll(uri, "{id}", hex.EncodeToString(w))
}

// target is where a token URI's content comes from.
type target struct {
	data   []byte // a data: URI's content
	isData bool
	url    string // http(s) URL to fetch
}

// resolve maps a token URI to its content source; a non-zero outcome
// status means the URI itself is unusable.
func (f *fetcher) resolve(uri string) (target, outcome) {
	u := strings.TrimSpace(uri)
	if u == "" {
		return target{}, fail(StatusInvalidURI, true, "empty token URI")
	}
	colon := strings.IndexByte(u, ':')
	if colon <= 0 {
		return target{}, fail(StatusInvalidURI, true, "token URI %q has no scheme", clip(u))
	}
	scheme := strings.ToLower(u[:colon])
	for _, c := range scheme {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return target{}, fail(StatusInvalidURI, true, "token URI %q has no scheme", clip(u))
		}
	}
	switch scheme {
	case "data":
		data, o := f.decodeDataURI(u[colon+1:])
		if o.status != "" {
			return target{}, o
		}
		return target{data: data, isData: true}, outcome{}
	case "http", "https":
		pu, err := url.Parse(u)
		if err != nil || pu.Host == "" || pu.User != nil {
			return target{}, fail(StatusInvalidURI, true, "token URI %q is not a valid URL", clip(u))
		}
		return target{url: pu.String()}, outcome{}
	case "ipfs":
		rest := strings.TrimLeft(u[colon+1:], "/")
		// ipfs://ipfs/CID/... is a common mistake for ipfs://CID/...
		if strings.HasPrefix(strings.ToLower(rest), "ipfs/") {
			rest = rest[5:]
		}
		cid, path, _ := strings.Cut(rest, "/")
		if !validCID(cid) {
			return target{}, fail(StatusInvalidURI, true, "token URI %q has no valid IPFS CID", clip(u))
		}
		if f.gateway == NoIPFSGateway {
			return target{}, fail(StatusInvalidScheme, true, "token URI %q: ipfs:// is not fetched here (no IPFS gateway configured: --ipfs-gateway)", clip(u))
		}
		clean, ok := cleanIPFSPath(path)
		if !ok {
			return target{}, fail(StatusInvalidURI, true, "token URI %q has a path that leaves its IPFS CID", clip(u))
		}
		full := f.gateway + "/ipfs/" + cid + clean
		if _, err := url.Parse(full); err != nil {
			return target{}, fail(StatusInvalidURI, true, "token URI %q: %v", clip(u), err)
		}
		return target{url: full}, outcome{}
	}
	return target{}, fail(StatusInvalidScheme, true, "token URI scheme %q is not data, http(s) or ipfs", clip(scheme))
}

// cleanIPFSPath normalises the path after an IPFS CID for the gateway:
// each segment is percent-decoded, empty and "." segments are dropped, and
// the rest are escaped again, so no "..", encoded dot or encoded slash
// reaches the gateway (which would resolve them against its own root, not
// the CID's). A ".." or a segment with a backslash or NUL refuses the URI:
// it names nothing inside the CID. Returns "" or "/seg/seg".
func cleanIPFSPath(p string) (string, bool) {
	// A query or fragment is no part of an IPFS path.
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	var b strings.Builder
	for _, seg := range strings.Split(p, "/") {
		dec, err := url.PathUnescape(seg)
		if err != nil {
			return "", false
		}
		switch {
		case dec == "" || dec == ".":
			continue
		case dec == ".." || strings.ContainsAny(dec, "/\\\x00"):
			return "", false
		}
		b.WriteByte('/')
		b.WriteString(url.PathEscape(dec))
	}
	return b.String(), true
}

// validCID accepts the characters of CIDv0 (base58btc) and CIDv1
// (multibase: base32, base36, base58, base64url) strings.
func validCID(s string) bool {
	if len(s) < 8 || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// decodeDataURI decodes the part of a data: URI after "data:":
// [mediatype][;base64],payload (RFC 2397).
func (f *fetcher) decodeDataURI(rest string) ([]byte, outcome) {
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, fail(StatusInvalidURI, true, "data: URI without a comma")
	}
	b64 := false
	for _, p := range strings.Split(meta, ";") {
		if strings.EqualFold(strings.TrimSpace(p), "base64") {
			b64 = true
		}
	}
	if b64 {
		// Encoded size bounds the decoded size: refuse before decoding.
		if int64(len(payload))/4*3 > f.maxBytes+3 {
			return nil, fail(StatusTooLarge, true, "data: URI content of about %d bytes exceeds %d", len(payload)/4*3, f.maxBytes)
		}
		clean := strings.Map(func(r rune) rune {
			if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
				return -1
			}
			return r
		}, payload)
		if un, err := url.PathUnescape(clean); err == nil {
			clean = un
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(clean); err == nil {
				return b, outcome{}
			}
		}
		return nil, fail(StatusInvalidURI, true, "data: URI base64 payload does not decode")
	}
	if int64(len(payload)) > 3*f.maxBytes {
		return nil, fail(StatusTooLarge, true, "data: URI content exceeds %d bytes", f.maxBytes)
	}
	b := []byte(payload)
	if un, err := url.PathUnescape(payload); err == nil {
		b = []byte(un)
	}
	if int64(len(b)) > f.maxBytes {
		return nil, fail(StatusTooLarge, true, "data: URI content of %d bytes exceeds %d", len(b), f.maxBytes)
	}
	return b, outcome{}
}

// fetch reads the metadata document at uri (ERC-1155 {id} already
// substituted) and classifies the result.
func (f *fetcher) fetch(ctx context.Context, uri, ercType string) outcome {
	t, o := f.resolve(uri)
	if o.status != "" {
		o.uri = uri
		return o
	}
	body := t.data
	if !t.isData {
		var o outcome
		body, o = f.get(ctx, t.url)
		if o.status != "" || o.busy {
			o.uri = uri
			return o
		}
	}
	if int64(len(body)) > f.maxBytes {
		return outcome{status: StatusTooLarge, final: true, uri: uri, err: fmt.Errorf("content of %d bytes exceeds %d", len(body), f.maxBytes)}
	}
	doc, o := parseMetadata(body, ercType)
	o.uri = uri
	if o.status != "" {
		// A data: URI answers the same every time: nothing to retry.
		o.final = o.final || t.isData
		return o
	}
	return outcome{status: StatusIndexed, uri: uri, doc: doc}
}

// errHostBusy is returned when no connection slot of the host freed up in
// time; the job is given back without counting an attempt.
var errHostBusy = errors.New("host busy")

// get fetches an http(s) URL within the size and time limits.
func (f *fetcher) get(ctx context.Context, rawURL string) ([]byte, outcome) {
	pu, err := url.Parse(rawURL)
	if err != nil {
		return nil, fail(StatusInvalidURI, true, "%v", err)
	}
	if err := f.policy.checkHostLiteral(pu.Hostname()); err != nil {
		return nil, outcome{status: StatusUnreachable, final: true, err: err}
	}
	release, err := f.hosts.acquire(ctx, strings.ToLower(pu.Host), f.timeout)
	if err != nil {
		return nil, outcome{busy: true, err: err}
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fail(StatusInvalidURI, true, "%v", err)
	}
	req.Header.Set("Accept", "application/json, */*;q=0.5")
	req.Header.Set("User-Agent", f.ua)
	resp, err := f.client.Do(req)
	if err != nil {
		if errors.Is(err, ErrBlockedAddress) {
			return nil, outcome{status: StatusUnreachable, final: true, err: err}
		}
		return nil, outcome{status: StatusUnreachable, err: err}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return nil, outcome{status: StatusThrottled, retryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now()),
			err: fmt.Errorf("GET %s: %s", clip(rawURL), resp.Status)}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		o := outcome{status: StatusUnreachable, err: fmt.Errorf("GET %s: %s", clip(rawURL), resp.Status)}
		if resp.StatusCode == http.StatusServiceUnavailable {
			o.retryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
		return nil, o
	}
	if resp.ContentLength > f.maxBytes {
		return nil, fail(StatusTooLarge, true, "GET %s: content length %d exceeds %d", clip(rawURL), resp.ContentLength, f.maxBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
	if int64(len(body)) > f.maxBytes {
		return nil, fail(StatusTooLarge, true, "GET %s: content exceeds %d bytes", clip(rawURL), f.maxBytes)
	}
	if err != nil {
		// A body cut by the deadline or the peer: the host is too slow or
		// unreliable, not the document invalid.
		return nil, outcome{status: StatusUnreachable, err: fmt.Errorf("GET %s: reading body: %w", clip(rawURL), err)}
	}
	return body, outcome{}
}

// retryAfter reads a Retry-After header (seconds or an HTTP date).
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0
		}
		if s > 7*24*3600 {
			s = 7 * 24 * 3600
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// metadataDoc is the normalised document stored in evm_nft_tokens.metadata
// (the shape the data handlers read): the ERC-721/1155 metadata JSON
// schema's fields, with attributes and properties as raw JSON.
type metadataDoc struct {
	Name            string          `json:"name,omitempty"`
	Symbol          string          `json:"symbol,omitempty"`
	Description     string          `json:"description,omitempty"`
	Image           string          `json:"image,omitempty"`
	AnimationURL    string          `json:"animation_url,omitempty"`
	ExternalURL     string          `json:"external_url,omitempty"`
	BackgroundColor string          `json:"background_color,omitempty"`
	Attributes      json.RawMessage `json:"attributes,omitempty"`
	Decimals        *int            `json:"decimals,omitempty"`
	Properties      json.RawMessage `json:"properties,omitempty"`
}

// parseMetadata checks and normalises a metadata document. Not JSON:
// INVALID_METADATA_JSON. JSON that is not a metadata object (not an object,
// no known field, a field of the wrong type): INVALID_METADATA.
func parseMetadata(body []byte, ercType string) (string, outcome) {
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")) // UTF-8 BOM
	if !utf8.Valid(body) {
		return "", fail(StatusInvalidJSON, false, "metadata is not UTF-8 text")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fail(StatusInvalidJSON, false, "metadata is not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", fail(StatusInvalidJSON, false, "metadata has data after its JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return "", fail(StatusInvalidMeta, true, "metadata is JSON but not an object")
	}
	var d metadataDoc
	known := 0
	var problems []string
	text := func(dst *string, keys ...string) {
		for _, k := range keys {
			x, has := obj[k]
			if !has || x == nil {
				continue
			}
			known++
			switch t := x.(type) {
			case string:
				if *dst == "" {
					*dst = t
				}
			case json.Number: // e.g. "name": 1234
				if *dst == "" {
					*dst = t.String()
				}
			default:
				problems = append(problems, fmt.Sprintf("%s is a %s, not a string", k, jsonKind(x)))
			}
		}
	}
	text(&d.Name, "name")
	text(&d.Symbol, "symbol")
	text(&d.Description, "description")
	text(&d.Image, "image", "image_url")
	text(&d.AnimationURL, "animation_url")
	text(&d.ExternalURL, "external_url")
	text(&d.BackgroundColor, "background_color")
	if x, has := obj["attributes"]; has && x != nil {
		known++
		switch x.(type) {
		case []any, map[string]any:
			d.Attributes = compactJSON(x)
		default:
			problems = append(problems, "attributes is a "+jsonKind(x)+", not an array")
		}
	}
	if x, has := obj["properties"]; has && x != nil {
		known++
		if _, ok := x.(map[string]any); ok {
			d.Properties = compactJSON(x)
		} else {
			problems = append(problems, "properties is a "+jsonKind(x)+", not an object")
		}
	}
	if x, has := obj["decimals"]; has && x != nil {
		known++
		n, ok := x.(json.Number)
		var dv *big.Int
		if ok {
			dv, ok = new(big.Int).SetString(n.String(), 10)
		}
		if !ok || dv.Sign() < 0 || dv.Cmp(big.NewInt(255)) > 0 {
			problems = append(problems, "decimals is not an integer 0..255")
		} else if ercType == ercTypeERC1155 {
			i := int(dv.Int64())
			d.Decimals = &i
		}
	}
	if len(problems) > 0 {
		return "", fail(StatusInvalidMeta, true, "metadata: %s", strings.Join(problems, "; "))
	}
	if known == 0 {
		return "", fail(StatusInvalidMeta, true, "metadata object has none of the metadata fields")
	}
	b, err := json.Marshal(d)
	if err != nil {
		return "", fail(StatusInvalidMeta, true, "metadata: %v", err)
	}
	return string(b), outcome{}
}

// compactJSON re-encodes a decoded value compactly (numbers keep their
// text; no HTML escaping).
func compactJSON(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// clip bounds attacker-chosen text in errors and logs.
func clip(s string) string { return clipN(s, 120) }

// clipN bounds s to n bytes (recorded errors keep more than messages).
func clipN(s string, n int) string {
	if len(s) > n {
		return s[:n-3] + "..."
	}
	return s
}
