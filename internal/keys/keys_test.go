package keys

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func TestCreateLookupRevoke(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Unix(1_700_000_000, 0) // before the second key, made with the real clock
		pt, err := create(ctx, db, "ci bot", "pro", []string{" exports", "reindex", "exports", ""}, 48*time.Hour, now)
		if err != nil {
			t.Fatal(err)
		}
		if !LooksLikeKey(pt) || len(pt) != KeyLen {
			t.Fatalf("key %q has the wrong shape", pt)
		}
		// Only the hash is stored: the plaintext must appear nowhere in the row.
		var hash, scopes string
		if err := db.QueryRowContext(ctx, `SELECT key_hash, scopes FROM api_keys WHERE id = $1`, IDOf(pt)).Scan(&hash, &scopes); err != nil {
			t.Fatal(err)
		}
		if hash != Hash(pt) || strings.Contains(hash, pt[len(prefix)+idHexLen+1:]) || scopes != "exports,reindex" {
			t.Fatalf("stored hash %q scopes %q", hash, scopes)
		}
		k, err := Lookup(ctx, db, pt)
		if err != nil {
			t.Fatal(err)
		}
		if k.ID != IDOf(pt) || k.Name != "ci bot" || k.Tier != "pro" || !k.HasScope("exports") || !k.HasScope("reindex") || k.HasScope("admin") {
			t.Fatalf("lookup: %+v", k)
		}
		if k.ExpiresAt == nil || !k.ExpiresAt.Equal(now.Add(48*time.Hour)) || !k.CreatedAt.Equal(now) {
			t.Fatalf("times: %+v", k)
		}
		if err := k.Valid(now.Add(47 * time.Hour)); err != nil {
			t.Errorf("valid before expiry: %v", err)
		}
		if err := k.Valid(now.Add(48 * time.Hour)); !errors.Is(err, ErrExpired) {
			t.Errorf("at expiry: %v", err)
		}
		// A key of the right shape that was never issued, and junk.
		other := pt[:len(pt)-1] + map[bool]string{true: "B", false: "A"}[pt[len(pt)-1] == 'A']
		for _, s := range []string{other, "", "pfk_", strings.Repeat("x", 5000)} {
			if _, err := Lookup(ctx, db, s); !errors.Is(err, ErrNotFound) {
				t.Errorf("lookup %q: %v", s, err)
			}
		}
		if err := revoke(ctx, db, k.ID, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := revoke(ctx, db, k.ID, now.Add(2*time.Hour)); err != nil {
			t.Fatalf("revoke twice: %v", err)
		}
		k, _ = Lookup(ctx, db, pt)
		if !errors.Is(k.Valid(now), ErrRevoked) || !k.RevokedAt.Equal(now.Add(time.Hour)) {
			t.Errorf("revoked: %+v", k)
		}
		if err := Revoke(ctx, db, "0123456789abcdef"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("revoke unknown: %v", err)
		}
		never, err := Create(ctx, db, "forever", "free", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		k2, _ := Lookup(ctx, db, never)
		if k2.ExpiresAt != nil || len(k2.Scopes) != 0 || k2.Valid(now.Add(100*365*24*time.Hour)) != nil {
			t.Errorf("never-expiring key: %+v", k2)
		}
		list, err := List(ctx, db)
		if err != nil || len(list) != 2 || list[0].ID != k.ID || list[1].ID != k2.ID {
			t.Errorf("list: %+v %v", list, err)
		}
	})
}

func TestCreateRejects(t *testing.T) {
	db := storetest.Open(t, storetest.SQLiteDSN(t))
	ctx := context.Background()
	cases := []struct {
		name, tier string
		scopes     []string
		exp        time.Duration
	}{
		{"", "free", nil, 0},
		{"a\tb", "free", nil, 0},
		{strings.Repeat("n", 101), "free", nil, 0},
		{"ok", "", nil, 0},
		{"ok", "Pro", nil, 0},
		{"ok", "free", []string{"ex ports"}, 0},
		{"ok", "free", []string{"a,b"}, 0},
		{"ok", "free", nil, -time.Second},
	}
	for _, c := range cases {
		if _, err := Create(ctx, db, c.name, c.tier, c.scopes, c.exp); err == nil {
			t.Errorf("%+v: want error", c)
		}
	}
	if ks, _ := List(ctx, db); len(ks) != 0 {
		t.Errorf("rejected keys were stored: %+v", ks)
	}
}

func TestCommand(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		var out bytes.Buffer
		if err := Command(ctx, db, []string{"create", "--name", "exporter", "--tier", "pro", "--scopes", "exports,admin", "--expires", "30d", "--json"}, testTiers, &out); err != nil {
			t.Fatal(err)
		}
		var created struct {
			ID        string     `json:"id"`
			Key       string     `json:"key"`
			Scopes    []string   `json:"scopes"`
			ExpiresAt *time.Time `json:"expiresAt"`
		}
		if err := json.Unmarshal(out.Bytes(), &created); err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		if IDOf(created.Key) != created.ID || len(created.Scopes) != 2 || created.ExpiresAt == nil ||
			created.ExpiresAt.Sub(time.Now()) < 29*24*time.Hour || created.ExpiresAt.Sub(time.Now()) > 31*24*time.Hour {
			t.Fatalf("created: %+v", created)
		}
		out.Reset()
		if err := Command(ctx, db, []string{"create", "--name", "reader", "--tier", "free"}, testTiers, &out); err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^key: +pfk_`).MatchString(out.String()) || !regexp.MustCompile(`(?m)^expires: +never$`).MatchString(out.String()) {
			t.Errorf("create text:\n%s", out.String())
		}
		out.Reset()
		if err := Command(ctx, db, []string{"revoke", created.ID}, testTiers, &out); err != nil || out.String() != "revoked "+created.ID+"\n" {
			t.Fatalf("revoke: %v %q", err, out.String())
		}
		out.Reset()
		if err := Command(ctx, db, []string{"list"}, testTiers, &out); err != nil {
			t.Fatal(err)
		}
		// Keys made in the same second list in id order: find each by id.
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") {
			t.Fatalf("list:\n%s", out.String())
		}
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, created.ID) != strings.HasSuffix(l, "revoked") ||
				strings.HasPrefix(l, created.ID) == strings.Contains(l, " - ") {
				t.Errorf("list line %q", l)
			}
		}
		out.Reset()
		if err := Command(ctx, db, []string{"list", "--json"}, testTiers, &out); err != nil {
			t.Fatal(err)
		}
		var listed []struct {
			ID, Status string
		}
		if err := json.Unmarshal(out.Bytes(), &listed); err != nil || len(listed) != 2 {
			t.Fatalf("list json: %v %s", err, out.String())
		}
		for _, l := range listed {
			if (l.ID == created.ID) != (l.Status == "revoked") || (l.Status != "revoked" && l.Status != "active") {
				t.Errorf("list json: %+v", listed)
			}
		}
		for _, args := range [][]string{
			nil, {"frobnicate"}, {"create", "--tier", "pro"}, {"create", "--name", "x"},
			{"create", "--name", "x", "--tier", "platinum"}, // a tier the server has no budget for
			{"create", "--name", "x", "--tier", "pro", "--expires", "soon"}, {"create", "--bogus"},
			{"revoke"}, {"revoke", "a", "b"}, {"list", "extra"},
		} {
			if err := Command(ctx, db, args, testTiers, &out); !errors.Is(err, ErrUsage) {
				t.Errorf("%q: want usage error, got %v", args, err)
			}
		}
		if err := Command(ctx, db, []string{"revoke", "ffffffffffffffff"}, testTiers, &out); err == nil || !strings.Contains(err.Error(), "no key with id") {
			t.Errorf("revoke unknown: %v", err)
		}
	})
}

var testTiers = []string{"free", "base", "growth", "pro"}

// Unknown scopes are refused when a key is created, with the known ones named.
func TestUnknownScope(t *testing.T) {
	db := storetest.Open(t, storetest.SQLiteDSN(t))
	var out bytes.Buffer
	err := Command(context.Background(), db, []string{"create", "--name", "x", "--tier", "pro", "--scopes", "exports,exprots"}, testTiers, &out)
	if err == nil || !strings.Contains(err.Error(), `unknown scope "exprots"`) || !strings.Contains(err.Error(), "exports, reindex, admin") {
		t.Fatalf("err %v", err)
	}
}

func TestParseExpiry(t *testing.T) {
	cases := map[string]time.Duration{
		"": 0, "720h": 720 * time.Hour, "30d": 30 * 24 * time.Hour, "90m": 90 * time.Minute, "1d": 24 * time.Hour,
	}
	for in, want := range cases {
		if got, err := ParseExpiry(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, in := range []string{"0", "0d", "-1h", "-3d", "d", "1.5d", "36501d", "1000000h", "9223372036854775807d", "1y", "h"} {
		if _, err := ParseExpiry(in); err == nil {
			t.Errorf("%q: want error", in)
		}
	}
}

func FuzzParseExpiry(f *testing.F) {
	for _, s := range []string{"", "720h", "30d", "-1d", "1e9h", "99999999999999999999d", "0x10d", "1h30m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseExpiry(s)
		if err == nil && s != "" && (d <= 0 || d > 36500*24*time.Hour) {
			t.Fatalf("%q accepted as %v", s, d)
		}
	})
}

func FuzzLooksLikeKey(f *testing.F) {
	f.Add("pfk_0123456789abcdef_" + strings.Repeat("A", 43))
	f.Add("pfk_0123456789abcdeF_" + strings.Repeat("A", 43))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		if LooksLikeKey(s) {
			if len(s) != KeyLen || IDOf(s) == "" || !strings.HasPrefix(s, "pfk_"+IDOf(s)+"_") {
				t.Fatalf("%q accepted with id %q", s, IDOf(s))
			}
		} else if IDOf(s) != "" {
			t.Fatalf("%q rejected but has id %q", s, IDOf(s))
		}
	})
}
