// Package apitest validates HTTP responses of the data service against the
// published OpenAPI 3.1 document (internal/api/apidoc/published/data-api.openapi.json)
// with github.com/getkin/kin-openapi, using its JSON Schema 2020-12
// validator (santhosh-tekuri/jsonschema). Handler tests of every data-service
// package share it:
//
//	spec := apitest.Load(t)
//	code, body := apitest.Serve(t, spec, mux, "GET", "/v1/networks/testnet/blocks?pageSize=5")
//
// The published document is used as is, except for three in-memory changes,
// each needed for a 3.1 validator to read it as its authors meant:
//
//  1. Schema "examples" written as an object (BlockchainInfo.genesisData,
//     Blockchain.genesisData) become a one-item array: JSON Schema 2020-12
//     requires an array, and kin-openapi refuses to load the document otherwise.
//  2. The OpenAPI 3.0 keyword "nullable: true", which 3.1 no longer has, is
//     rewritten as its 3.1 equivalent: the type gains "null" or, for a
//     schema without a type (allOf of a $ref), anyOf [null, the schema]. In
//     3.1 the keyword is ignored, which would make e.g. ActiveValidatorDetails
//     .geolocation ("if available") impossible to leave empty.
//  3. Strict field names (spec section 2: names are exact): every object
//     schema with "properties" and no "additionalProperties" gets
//     "unevaluatedProperties: false", so an undeclared or misspelt field is
//     an error. Composition (allOf/oneOf) is unaffected: unevaluatedProperties
//     sees the properties its own subschemas declare.
//
// A known ambiguity of the document: getUtxosByAddresses answers oneOf
// ListPChainUtxosResponse / ListUtxosResponse, and a response with an empty
// "utxos" array matches both, so no empty list can pass that oneOf. Callers
// validate such a body against the chain's branch with CheckSchema.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/permafrost-dev/permafrost/internal/devnet"
)

// DocPath is the document's path relative to the module root.
const DocPath = "internal/api/apidoc/published/data-api.openapi.json"

// Spec is the loaded document, ready to validate responses.
type Spec struct {
	doc    *openapi3.T
	router routers.Router
}

// MetricsDocPath is the Metrics API document's path relative to the module
// root (the v2 metrics routes' contract).
const MetricsDocPath = "internal/api/apidoc/published/metrics-api.2026-02.openapi.json"

type loadedDoc struct {
	once sync.Once
	spec *Spec
	err  error
}

var docs = map[string]*loadedDoc{DocPath: {}, MetricsDocPath: {}}

// Load returns the document of the module holding the test (loaded once
// per test binary); a load failure fails t.
func Load(t testing.TB) *Spec {
	t.Helper()
	return load(t, DocPath)
}

// LoadMetrics returns the Metrics API document, as Load.
func LoadMetrics(t testing.TB) *Spec {
	t.Helper()
	return load(t, MetricsDocPath)
}

func load(t testing.TB, path string) *Spec {
	t.Helper()
	d := docs[path]
	d.once.Do(func() {
		root, err := devnet.FindRoot()
		if err != nil {
			d.err = err
			return
		}
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			d.err = err
			return
		}
		d.spec, d.err = Parse(b)
	})
	if d.err != nil {
		t.Fatalf("apitest: %s: %v", path, d.err)
	}
	return d.spec
}

// Parse prepares a document (see the package comment for the changes).
func Parse(raw []byte) (*Spec, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("parse openapi: %w", err)
	}
	normalize(m)
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(b)
	if err != nil {
		return nil, fmt.Errorf("load openapi: %w", err)
	}
	// Match requests by path alone, whatever host the test uses.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi router: %w", err)
	}
	return &Spec{doc: doc, router: router}, nil
}

// CheckResponse validates a response to method target (path and query) with
// status and body against the operation's declared response. Every mismatch
// is in the returned error.
func (s *Spec) CheckResponse(method, target string, status int, body []byte) error {
	req := httptest.NewRequest(method, target, nil)
	route, params, err := s.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("no operation for %s %s: %w", method, target, err)
	}
	opts := &openapi3filter.Options{
		MultiError:              true,
		IncludeResponseStatus:   true,
		SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.EnableJSONSchema2020()},
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts},
		Status:                 status,
		Header:                 http.Header{"Content-Type": {"application/json"}},
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s -> %d does not match %s: %w", method, target, status, route.Operation.OperationID, err)
	}
	return nil
}

// CheckSchema validates body against components/schemas/name.
func (s *Spec) CheckSchema(name string, body []byte) error {
	ref := s.doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("no schema %q", name)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	if err := ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("body does not match %s: %w", name, err)
	}
	return nil
}

// ValidateResponse is CheckResponse failing t.
func (s *Spec) ValidateResponse(t testing.TB, method, target string, status int, body []byte) {
	t.Helper()
	if err := s.CheckResponse(method, target, status, body); err != nil {
		t.Errorf("%v\nbody: %s", err, clip(body))
	}
}

// Serve sends method target to h and returns the status and body, after
// checking the body: against the operation's schema for that status, and,
// for an error, that it is an ErrorBody whose statusCode is the status and
// whose error is the reason phrase (spec section 7).
func Serve(t testing.TB, s *Spec, h http.Handler, method, target string) (int, []byte) {
	t.Helper()
	code, body := ServeUnvalidated(t, h, method, target)
	s.ValidateResponse(t, method, target, code, body)
	return code, body
}

// ServeUnvalidated serves one request and checks an error answer's
// ErrorBody, leaving the schema check to the caller (for handlers whose
// bodies need adjusting before the published document can judge them).
func ServeUnvalidated(t testing.TB, h http.Handler, method, target string) (int, []byte) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
	body := w.Body.Bytes()
	if w.Code >= 400 {
		if err := CheckErrorBody(w.Code, body); err != nil {
			t.Errorf("%s %s: %v", method, target, err)
		}
	}
	return w.Code, body
}

// Send sends method url to a running server with c, the body as JSON when
// it is not nil and the key in header keyHeader when key is not "", checks
// an error answer's ErrorBody as ServeUnvalidated does, and returns the
// status, body and headers (the schema check is the caller's).
func Send(t testing.TB, c *http.Client, method, url string, body []byte, keyHeader, key string) (int, []byte, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set(keyHeader, key)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode >= 400 {
		if err := CheckErrorBody(resp.StatusCode, b); err != nil {
			t.Errorf("%s %s: %v", method, url, err)
		}
	}
	return resp.StatusCode, b, resp.Header
}

// CheckErrorBody checks an ErrorBody: message (string or array of strings),
// statusCode equal to status, error the reason phrase.
func CheckErrorBody(status int, body []byte) error {
	var eb struct {
		Message    json.RawMessage `json:"message"`
		StatusCode int             `json:"statusCode"`
		Error      string          `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&eb); err != nil {
		return fmt.Errorf("not an ErrorBody: %v: %s", err, clip(body))
	}
	var str string
	var arr []string
	if json.Unmarshal(eb.Message, &str) != nil && json.Unmarshal(eb.Message, &arr) != nil {
		return fmt.Errorf("ErrorBody.message is neither a string nor strings: %s", clip(body))
	}
	if eb.StatusCode != status {
		return fmt.Errorf("ErrorBody.statusCode %d, HTTP status %d", eb.StatusCode, status)
	}
	if eb.Error != http.StatusText(status) {
		return fmt.Errorf("ErrorBody.error %q, want %q", eb.Error, http.StatusText(status))
	}
	return nil
}

// ErrorMessage returns an ErrorBody's message (joined when an array).
func ErrorMessage(body []byte) string {
	var eb struct {
		Message json.RawMessage `json:"message"`
	}
	_ = json.Unmarshal(body, &eb)
	var str string
	if json.Unmarshal(eb.Message, &str) == nil {
		return str
	}
	var arr []string
	_ = json.Unmarshal(eb.Message, &arr)
	return strings.Join(arr, "; ")
}

// DecodeOK requires a 200 answer to target and decodes body into out
// (numbers as json.Number).
func DecodeOK(t testing.TB, target string, code int, body []byte, out any) {
	t.Helper()
	if code != http.StatusOK {
		t.Fatalf("%s: %d %s", target, code, body)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("%s: %v", target, err)
	}
}

// WantError requires the answer to target to have status want and an
// ErrorBody message naming every one of names.
func WantError(t testing.TB, target string, code int, body []byte, want int, names ...string) {
	t.Helper()
	if code != want {
		t.Errorf("%s: status %d (%s), want %d", target, code, body, want)
		return
	}
	msg := ErrorMessage(body)
	for _, n := range names {
		if !strings.Contains(msg, n) {
			t.Errorf("%s: message %q does not name %q", target, msg, n)
		}
	}
}

func clip(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}

// normalize applies the package comment's changes to every schema of the
// document: components, and schemas inline in paths.
func normalize(doc map[string]any) {
	if comps, ok := doc["components"].(map[string]any); ok {
		if schemas, ok := comps["schemas"].(map[string]any); ok {
			for _, s := range schemas {
				schema(s)
			}
		}
	}
	inline(doc["paths"])
}

// inline finds "schema" members (parameters, media types) below v.
func inline(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if k == "schema" {
				schema(c)
				continue
			}
			inline(c)
		}
	case []any:
		for _, c := range x {
			inline(c)
		}
	}
}

// schema normalises one schema object and its subschemas.
func schema(v any) {
	s, ok := v.(map[string]any)
	if !ok {
		return
	}
	if ex, ok := s["examples"].(map[string]any); ok {
		s["examples"] = []any{ex}
	}
	for _, k := range []string{"items", "not", "additionalProperties", "contains", "if", "then", "else"} {
		schema(s[k])
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
		if list, ok := s[k].([]any); ok {
			for _, c := range list {
				schema(c)
			}
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, c := range props {
			schema(c)
		}
		if _, has := s["additionalProperties"]; !has {
			if _, has := s["unevaluatedProperties"]; !has {
				s["unevaluatedProperties"] = false
			}
		}
	}
	if n, ok := s["nullable"].(bool); ok {
		delete(s, "nullable")
		if n {
			nullable(s)
		}
	}
}

// nullable makes s also accept null, the 3.1 way.
func nullable(s map[string]any) {
	switch t := s["type"].(type) {
	case string:
		s["type"] = []any{t, "null"}
		if enum, ok := s["enum"].([]any); ok {
			s["enum"] = append(enum, nil)
		}
		return
	case []any:
		for _, x := range t {
			if x == "null" {
				return
			}
		}
		s["type"] = append(t, "null")
		return
	}
	rest := map[string]any{}
	for k, v := range s {
		if k != "description" && k != "title" {
			rest[k] = v
			delete(s, k)
		}
	}
	s["anyOf"] = []any{map[string]any{"type": "null"}, rest}
}
