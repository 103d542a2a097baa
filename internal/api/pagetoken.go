package api

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// Pager makes and checks the data service's page tokens: a keyset cursor,
// bound to the route and the query's filters, signed with HMAC so a token
// cannot be forged or moved to another query. Stateless, so any replica
// continues any listing (the key is shared through the database).
type Pager struct{ key []byte }

// NewPager returns a Pager signing with key.
func NewPager(key []byte) *Pager { return &Pager{key: key} }

// LoadPager reads the shared signing key from the store, creating it once.
func LoadPager(ctx context.Context, db *store.DB) (*Pager, error) {
	var v string
	err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'page_token_key'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, fmt.Errorf("page token key: %w", err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('page_token_key', $1) ON CONFLICT (key) DO NOTHING`, hex.EncodeToString(k)); err != nil {
			return nil, fmt.Errorf("page token key: %w", err)
		}
		err = db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'page_token_key'`).Scan(&v)
	}
	if err != nil {
		return nil, fmt.Errorf("page token key: %w", err)
	}
	k, err := hex.DecodeString(v)
	if err != nil {
		return nil, fmt.Errorf("page token key: %w", err)
	}
	return NewPager(k), nil
}

type tokenPayload struct {
	Route   string          `json:"r"`
	Filters string          `json:"f"`
	Cursor  json.RawMessage `json:"c"`
}

// FilterKey canonicalises a query's filters: every parameter except the page
// token and page size, sorted. A token only continues the query that made it.
func FilterKey(q url.Values, extra ...string) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		if k != "pageToken" && k != "pageSize" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		vs := append([]string(nil), q[k]...)
		sort.Strings(vs)
		b.WriteString(k + "=" + strings.Join(vs, ",") + "&")
	}
	for _, e := range extra {
		b.WriteString(e + "|")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// Encode makes a token for cursor on route with filter key f.
func (p *Pager) Encode(route, f string, cursor any) string {
	c, _ := json.Marshal(cursor)
	body, _ := json.Marshal(tokenPayload{Route: route, Filters: f, Cursor: c})
	mac := hmac.New(sha256.New, p.key)
	mac.Write(body)
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:16])
}

// Decode checks token and fills cursor. Any problem is a 400 naming pageToken.
func (p *Pager) Decode(token, route, f string, cursor any) error {
	if len(token) > 2048 {
		return BadRequest("pageToken is too long")
	}
	bodyPart, sigPart, ok := strings.Cut(token, ".")
	if !ok {
		return BadRequest("pageToken is malformed")
	}
	body, err1 := base64.RawURLEncoding.DecodeString(bodyPart)
	sig, err2 := base64.RawURLEncoding.DecodeString(sigPart)
	if err1 != nil || err2 != nil {
		return BadRequest("pageToken is malformed")
	}
	mac := hmac.New(sha256.New, p.key)
	mac.Write(body)
	if !hmac.Equal(sig, mac.Sum(nil)[:16]) {
		return BadRequest("pageToken is invalid (not issued by this service)")
	}
	var tp tokenPayload
	if err := json.Unmarshal(body, &tp); err != nil {
		return BadRequest("pageToken is malformed")
	}
	if tp.Route != route {
		return BadRequest("pageToken belongs to another endpoint")
	}
	if tp.Filters != f {
		return BadRequest("pageToken was issued for a query with other parameters")
	}
	if err := json.Unmarshal(tp.Cursor, cursor); err != nil {
		return BadRequest("pageToken is malformed")
	}
	return nil
}

// ServerTokens are the metrics service's page tokens: UUIDs whose cursor is
// kept in the database for 24 hours. An expired or unknown token restarts the
// listing; a token used on another route is a 400.
type ServerTokens struct {
	db  *store.DB
	now func() time.Time
	TTL time.Duration
}

// NewServerTokens stores tokens in db; now is the clock (tests inject one).
func NewServerTokens(db *store.DB, now func() time.Time) *ServerTokens {
	if now == nil {
		now = time.Now
	}
	return &ServerTokens{db: db, now: now, TTL: 24 * time.Hour}
}

// Save stores cursor for route and returns its token.
func (s *ServerTokens) Save(ctx context.Context, route string, cursor any) (string, error) {
	c, err := json.Marshal(cursor)
	if err != nil {
		return "", err
	}
	tok := uuid.NewString()
	now := s.now().Unix()
	if _, err := s.db.ExecContext(ctx, `INSERT INTO page_tokens (token, route, payload, created_at) VALUES ($1,$2,$3,$4)`,
		tok, route, string(c), now); err != nil {
		return "", fmt.Errorf("save page token: %w", err)
	}
	// Expired tokens are garbage; drop them now and then, cheaply.
	if now%16 == 0 {
		_, _ = s.db.ExecContext(ctx, `DELETE FROM page_tokens WHERE created_at < $1`, now-int64(s.TTL.Seconds()))
	}
	return tok, nil
}

// Load fills cursor from token. found is false for an empty, unknown or
// expired token (restart from the first page).
func (s *ServerTokens) Load(ctx context.Context, token, route string, cursor any) (found bool, err error) {
	if token == "" {
		return false, nil
	}
	if _, perr := uuid.Parse(token); perr != nil {
		return false, BadRequest("pageToken must be a UUID")
	}
	var r, payload string
	var created int64
	err = s.db.QueryRowContext(ctx, `SELECT route, payload, created_at FROM page_tokens WHERE token = $1`, token).Scan(&r, &payload, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("load page token: %w", err)
	}
	if r != route {
		return false, BadRequest("pageToken belongs to another endpoint")
	}
	if s.now().Unix()-created >= int64(s.TTL.Seconds()) {
		return false, nil
	}
	if err := json.Unmarshal([]byte(payload), cursor); err != nil {
		return false, fmt.Errorf("page token payload: %w", err)
	}
	return true, nil
}
