package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func TestPagerRoundTripAndTamper(t *testing.T) {
	p := NewPager([]byte("k"))
	q := url.Values{"addresses": {"a,b"}, "pageSize": {"5"}}
	f := FilterKey(q)
	tok := p.Encode("utxos", f, []any{"x", 3})
	var c []any
	if err := p.Decode(tok, "utxos", f, &c); err != nil || len(c) != 2 {
		t.Fatalf("decode: %v %v", c, err)
	}
	q2 := url.Values{"addresses": {"a,c"}, "pageSize": {"5"}}
	cases := map[string]struct{ tok, route, f string }{
		"other filters": {tok, "utxos", FilterKey(q2)},
		"other route":   {tok, "blocks", f},
		"tampered":      {tok[:len(tok)-2] + "AA", "utxos", f},
		"garbage":       {"%%%", "utxos", f},
		"no dot":        {"abc", "utxos", f},
		"other key":     {NewPager([]byte("other")).Encode("utxos", f, 1), "utxos", f},
	}
	for name, tc := range cases {
		var e *Error
		if err := p.Decode(tc.tok, tc.route, tc.f, &c); !errors.As(err, &e) || e.Status != 400 {
			t.Errorf("%s: got %v", name, err)
		}
	}
	// pageSize changes do not invalidate a token.
	if FilterKey(url.Values{"addresses": {"a,b"}, "pageSize": {"7"}}) != f {
		t.Error("pageSize must not be part of the filter key")
	}
}

func TestParams(t *testing.T) {
	r := httptest.NewRequest("GET", "/x?pageSize=0&flag=maybe&sortOrder=up&n=abc&list=a,,b", nil)
	p := NewParams(r)
	p.PageSize(10, 1, 100)
	p.Bool("flag", true)
	p.Enum("sortOrder", "asc", "asc", "desc")
	p.OptInt("n", 0)
	if l := p.List("list"); len(l) != 2 {
		t.Errorf("list = %v", l)
	}
	var e *Error
	if err := p.Err(); !errors.As(err, &e) || len(e.Messages) != 4 {
		t.Fatalf("err = %v", err)
	}
}

func TestMuxErrorsAndPanics(t *testing.T) {
	m := NewMux(slog.New(slog.NewTextHandler(&strings.Builder{}, nil)))
	m.Handle("GET /ok", MessageString, func(r *http.Request) (any, error) { return map[string]int{"a": 1}, nil })
	m.Handle("GET /bad", MessageArray, func(r *http.Request) (any, error) { return nil, BadRequest("x is wrong", "y is wrong") })
	m.Handle("GET /boom", MessageString, func(r *http.Request) (any, error) { panic("boom") })
	m.Handle("GET /internal", MessageString, func(r *http.Request) (any, error) { return nil, errors.New("db down: secret") })
	cases := []struct {
		path   string
		status int
		body   string
	}{
		{"/ok", 200, `{"a":1}`},
		{"/bad", 400, `{"error":"Bad Request","message":["x is wrong","y is wrong"],"statusCode":400}`},
		{"/nope", 404, `{"error":"Not Found","message":"no route for GET /nope","statusCode":404}`},
	}
	for _, c := range cases {
		w := httptest.NewRecorder()
		m.ServeHTTP(w, httptest.NewRequest("GET", c.path, nil))
		if w.Code != c.status || strings.TrimSpace(w.Body.String()) != c.body {
			t.Errorf("%s: %d %s", c.path, w.Code, w.Body.String())
		}
	}
	for _, path := range []string{"/boom", "/internal"} {
		w := httptest.NewRecorder()
		m.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		var body map[string]any
		json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != 500 || !strings.Contains(body["message"].(string), w.Header().Get("X-Request-Id")) || strings.Contains(w.Body.String(), "secret") {
			t.Errorf("%s: %d %s", path, w.Code, w.Body.String())
		}
	}
}

func TestServerTokens(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Unix(1_800_000_000, 0)
		st := NewServerTokens(db, func() time.Time { return now })
		tok, err := st.Save(ctx, "avg_tps", map[string]int{"ts": 5})
		if err != nil {
			t.Fatal(err)
		}
		var c map[string]int
		if ok, err := st.Load(ctx, tok, "avg_tps", &c); !ok || err != nil || c["ts"] != 5 {
			t.Fatalf("load: %v %v %v", ok, err, c)
		}
		if _, err := st.Load(ctx, tok, "holders", &c); err == nil {
			t.Error("other route: want 400")
		}
		if _, err := st.Load(ctx, "not-a-uuid", "avg_tps", &c); err == nil {
			t.Error("malformed: want 400")
		}
		now = now.Add(24 * time.Hour)
		if ok, err := st.Load(ctx, tok, "avg_tps", &c); ok || err != nil {
			t.Errorf("expired: %v %v", ok, err)
		}
		p1, err := LoadPager(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		p2, _ := LoadPager(ctx, db)
		var x int
		if err := p2.Decode(p1.Encode("r", "f", 1), "r", "f", &x); err != nil {
			t.Errorf("replicas must share the key: %v", err)
		}
	})
}
