// Package keys manages the data service's API keys: creation (the plaintext
// is shown once), listing, revocation, and lookup by the SHA-256 of a
// presented key. Keys carry a rate-limit tier and scopes (exports, reindex,
// admin, webhooks, or * for all); budgets per tier live in the server configuration.
//
// A key looks like pfk_<16 hex id>_<43 base64url chars>: the id part is the
// key's public id (what `list` shows and `revoke` takes), the rest is 256
// random bits. Keys are high-entropy, so an unsalted SHA-256 is a sound
// verifier and lets a lookup be one indexed equality query.
package keys

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/permafrost-dev/permafrost/internal/store"
)

const (
	prefix    = "pfk_"
	idHexLen  = 16
	secretLen = 43 // base64url (no padding) of 32 bytes
	// KeyLen is the length of every key this package issues.
	KeyLen = len(prefix) + idHexLen + 1 + secretLen

	// Scopes a route can require.
	ScopeExports = "exports" // POST /v1/operations/transactions:export and reading its operations
	ScopeReindex = "reindex" // reindex routes (e.g. NFT token metadata :reindex)
	ScopeAdmin   = "admin"   // administrative routes
	// ScopeWebhooks: /v1/webhooks and the shared secret (a key sees its own webhooks only).
	ScopeWebhooks = "webhooks"
	// ScopeAll grants every scope.
	ScopeAll = "*"
)

var (
	// ErrNotFound: no key with that id or hash.
	ErrNotFound = fmt.Errorf("keys: %w", store.ErrNotFound)
	// ErrRevoked and ErrExpired explain why a known key is not valid.
	ErrRevoked = errors.New("keys: key revoked")
	ErrExpired = errors.New("keys: key expired")
)

// Key is one API key as stored (never the plaintext).
type Key struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Tier      string     `json:"tier"`
	Scopes    []string   `json:"scopes"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

// Valid reports why k cannot be used at now (nil when it can).
func (k *Key) Valid(now time.Time) error {
	if k.RevokedAt != nil {
		return ErrRevoked
	}
	if k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) {
		return ErrExpired
	}
	return nil
}

// Status is active, revoked or expired at now.
func (k *Key) Status(now time.Time) string {
	switch k.Valid(now) {
	case ErrRevoked:
		return "revoked"
	case ErrExpired:
		return "expired"
	}
	return "active"
}

// HasScope reports whether k grants scope (ScopeAll grants all).
func (k *Key) HasScope(scope string) bool {
	for _, s := range k.Scopes {
		if s == scope || s == ScopeAll {
			return true
		}
	}
	return false
}

// Hash is the stored verifier of a plaintext key: hex SHA-256.
func Hash(plaintext string) string {
	sum := sha256.Sum256([]byte(plaintext))
	return hex.EncodeToString(sum[:])
}

// LooksLikeKey reports whether s has the shape of a key this package issues,
// so junk is refused without a database lookup.
func LooksLikeKey(s string) bool {
	if len(s) != KeyLen || !strings.HasPrefix(s, prefix) || s[len(prefix)+idHexLen] != '_' {
		return false
	}
	for _, c := range []byte(s[len(prefix) : len(prefix)+idHexLen]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	for _, c := range []byte(s[len(prefix)+idHexLen+1:]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// IDOf returns the public id embedded in a key ("" if s is not a key).
func IDOf(s string) string {
	if !LooksLikeKey(s) {
		return ""
	}
	return s[len(prefix) : len(prefix)+idHexLen]
}

// ValidateName, ValidateTier and ValidateScope check operator input.
func ValidateName(name string) error {
	if name == "" || len(name) > 100 || !utf8.ValidString(name) {
		return errors.New("name must be 1 to 100 bytes of UTF-8")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return errors.New("name must not contain control characters")
		}
	}
	return nil
}

func ValidateTier(tier string) error {
	if !token(tier, 32) {
		return fmt.Errorf("tier %q must be 1 to 32 characters of a-z, 0-9, _ and -", tier)
	}
	return nil
}

// Scopes are the scopes a key can carry, besides ScopeAll.
var Scopes = []string{ScopeExports, ScopeReindex, ScopeAdmin, ScopeWebhooks}

// ValidateScope accepts ScopeAll and the scopes routes require (Scopes).
func ValidateScope(scope string) error {
	if scope == ScopeAll || slices.Contains(Scopes, scope) {
		return nil
	}
	return fmt.Errorf("unknown scope %q: want one of %s, or *", truncated(scope), strings.Join(Scopes, ", "))
}

func truncated(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func token(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Create stores a new key and returns its plaintext, which is not kept:
// show it to the operator once. expiry 0 means the key never expires.
func Create(ctx context.Context, db *store.DB, name, tier string, scopes []string, expiry time.Duration) (string, error) {
	return create(ctx, db, name, tier, scopes, expiry, time.Now())
}

// CheckTier refuses a tier the server has no budget for (tiers: the
// configured tier names).
func CheckTier(tier string, tiers []string) error {
	if !slices.Contains(tiers, tier) {
		sorted := slices.Clone(tiers)
		slices.Sort(sorted)
		return fmt.Errorf("unknown tier %q: the server has budgets for %s (add one with --tier NAME=CU_PER_MINUTE)", truncated(tier), strings.Join(sorted, ", "))
	}
	return nil
}

func create(ctx context.Context, db *store.DB, name, tier string, scopes []string, expiry time.Duration, now time.Time) (string, error) {
	if err := ValidateName(name); err != nil {
		return "", fmt.Errorf("keys: %w", err)
	}
	if err := ValidateTier(tier); err != nil {
		return "", fmt.Errorf("keys: %w", err)
	}
	scopes = normScopes(scopes)
	for _, s := range scopes {
		if err := ValidateScope(s); err != nil {
			return "", fmt.Errorf("keys: %w", err)
		}
	}
	if expiry < 0 {
		return "", errors.New("keys: expiry must not be negative")
	}
	raw := make([]byte, 8+32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("keys: random: %w", err)
	}
	id := hex.EncodeToString(raw[:8])
	plaintext := prefix + id + "_" + base64.RawURLEncoding.EncodeToString(raw[8:])
	var expires any
	if expiry > 0 {
		expires = now.Add(expiry).Unix()
	}
	err := changeKeys(ctx, db, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, key_hash, name, tier, scopes, created_at, expires_at, revoked_at)
		VALUES ($1,$2,$3,$4,$5,$6,$7,NULL)`, id, Hash(plaintext), name, tier, strings.Join(scopes, ","), now.Unix(), expires)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("keys: create: %w", err)
	}
	return plaintext, nil
}

// changeKeys runs change and increments api_keys_version in one
// transaction: API processes watch the version to drop cached lookups (a
// revoked key, or a cached miss of a key just created).
func changeKeys(ctx context.Context, db *store.DB, change func(tx *sql.Tx) error) error {
	tx, err := db.WriterDB().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: a no-op
	if err := change(tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE api_keys_version SET version = version + 1 WHERE id = 1`); err != nil {
		return err
	}
	return tx.Commit()
}

// Version is the api_keys_version counter: it changes whenever a key is
// created or revoked.
func Version(ctx context.Context, db *store.DB) (int64, error) {
	var v int64
	if err := db.QueryRowContext(ctx, `SELECT version FROM api_keys_version WHERE id = 1`).Scan(&v); err != nil {
		return 0, fmt.Errorf("keys: version: %w", err)
	}
	return v, nil
}

// normScopes trims, drops empties and duplicates, keeping order.
func normScopes(in []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, s := range in {
		s = strings.TrimSpace(s)
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

const columns = `id, name, tier, scopes, created_at, expires_at, revoked_at`

func scan(row interface{ Scan(...any) error }) (Key, error) {
	var k Key
	var scopes string
	var created int64
	var expires, revoked sql.NullInt64
	if err := row.Scan(&k.ID, &k.Name, &k.Tier, &scopes, &created, &expires, &revoked); err != nil {
		return Key{}, err
	}
	k.Scopes = normScopes(strings.Split(scopes, ","))
	k.CreatedAt = time.Unix(created, 0).UTC()
	if expires.Valid {
		t := time.Unix(expires.Int64, 0).UTC()
		k.ExpiresAt = &t
	}
	if revoked.Valid {
		t := time.Unix(revoked.Int64, 0).UTC()
		k.RevokedAt = &t
	}
	return k, nil
}

// List returns every key, oldest first.
func List(ctx context.Context, db *store.DB) ([]Key, error) {
	rows, err := db.QueryContext(ctx, `SELECT `+columns+` FROM api_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("keys: list: %w", err)
	}
	defer rows.Close()
	out := []Key{}
	for rows.Next() {
		k, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("keys: list: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("keys: list: %w", err)
	}
	return out, nil
}

// Get returns the key with the public id.
func Get(ctx context.Context, db *store.DB, id string) (Key, error) {
	k, err := scan(db.QueryRowContext(ctx, `SELECT `+columns+` FROM api_keys WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, ErrNotFound
	}
	if err != nil {
		return Key{}, fmt.Errorf("keys: get %s: %w", id, err)
	}
	return k, nil
}

// Revoke marks the key with the public id revoked (idempotent; the first
// revocation time is kept). An unknown id is ErrNotFound.
func Revoke(ctx context.Context, db *store.DB, id string) error {
	return revoke(ctx, db, id, time.Now())
}

func revoke(ctx context.Context, db *store.DB, id string, now time.Time) error {
	err := changeKeys(ctx, db, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2`, now.Unix(), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return ErrNotFound
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("keys: revoke %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("keys: revoke %s: %w", id, err)
	}
	return nil
}

// Lookup finds the key whose plaintext is presented, whatever its validity
// (check Key.Valid). A string that is not a key, or an unknown key, is
// ErrNotFound; other errors mean the store did not answer.
func Lookup(ctx context.Context, db *store.DB, plaintext string) (Key, error) {
	if !LooksLikeKey(plaintext) {
		return Key{}, ErrNotFound
	}
	k, err := scan(db.QueryRowContext(ctx, `SELECT `+columns+` FROM api_keys WHERE key_hash = $1`, Hash(plaintext)))
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, ErrNotFound
	}
	if err != nil {
		return Key{}, fmt.Errorf("keys: lookup: %w", err)
	}
	return k, nil
}
