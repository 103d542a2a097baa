package webhooks

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Registry reads and writes webhook registrations and signing secrets.
type Registry struct {
	db  *store.DB
	now func() time.Time
}

// NewRegistry returns the registry on db (now defaults to time.Now).
func NewRegistry(db *store.DB, now func() time.Time) *Registry {
	if now == nil {
		now = time.Now
	}
	return &Registry{db: db, now: now}
}

const columns = `id, owner, event_type, url, chain_id, network, name, description, status, metadata,
	include_internal_txs, include_logs, created_at, updated_at, failures, inactive_reason, chain_key, start_height`

func scan(s interface{ Scan(...any) error }) (*Webhook, error) {
	var w Webhook
	var md string
	if err := s.Scan(&w.ID, &w.Owner, &w.EventType, &w.URL, &w.ChainID, &w.Network, &w.Name, &w.Description,
		&w.Status, &md, &w.IncludeInternalTxs, &w.IncludeLogs, &w.CreatedAt, &w.UpdatedAt, &w.Failures, &w.InactiveReason, &w.ChainKey, &w.StartHeight); err != nil {
		return nil, err
	}
	w.Metadata = []byte(md)
	return &w, nil
}

// Create stores a validated webhook for owner, and gives owner a signing
// secret if it has none yet (deliveries are always signed).
func (r *Registry) Create(ctx context.Context, owner string, w *Webhook) error {
	now := r.now().UnixMilli()
	w.ID, w.Owner, w.CreatedAt, w.UpdatedAt = uuid.NewString(), owner, now, now
	tx, err := r.db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("webhooks: create: %w", err)
	}
	defer tx.Rollback()
	var n int64
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM webhooks WHERE owner = $1`, owner).Scan(&n); err != nil {
		return fmt.Errorf("webhooks: count: %w", err)
	}
	if n >= MaxWebhooksPerOwner {
		return api.BadRequest(fmt.Sprintf("this API key has %d webhooks, the most one key may create", MaxWebhooksPerOwner))
	}
	// Events start after the block the chain is indexed to now (-1: none
	// yet). The checkpoint row is locked (PostgreSQL; SQLite's writer is
	// already exclusive) so no block commits between this read and the
	// webhook's commit: the next block's emitter sees the webhook.
	w.StartHeight = -1
	q := `SELECT height FROM checkpoints WHERE chain_key = $1`
	if tx.Dialect() == store.Postgres {
		q += ` FOR UPDATE`
	}
	if err := tx.QueryRow(ctx, q, w.ChainKey).Scan(&w.StartHeight); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("webhooks: read checkpoint of %s: %w", w.ChainKey, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO webhooks (`+columns+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18)`,
		w.ID, w.Owner, w.EventType, w.URL, w.ChainID, w.Network, w.Name, w.Description, w.Status, string(w.Metadata),
		w.IncludeInternalTxs, w.IncludeLogs, w.CreatedAt, w.UpdatedAt, 0, "", w.ChainKey, w.StartHeight); err != nil {
		return fmt.Errorf("webhooks: create: %w", err)
	}
	if err := insertKeys(ctx, tx, w.ID, w.Keys); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_secrets (owner, secret, created_at) VALUES ($1,$2,$3)
		ON CONFLICT (owner) DO NOTHING`, owner, newSecret(), now); err != nil {
		return fmt.Errorf("webhooks: create secret: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("webhooks: create: %w", err)
	}
	return nil
}

// insertKeys adds keys to webhook id, many rows per statement (a webhook
// watches up to MaxKeysPerWebhook addresses: one statement each was most of
// registering one).
func insertKeys(ctx context.Context, tx *store.Tx, id string, keys []string) error {
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), 500)]
		keys = keys[len(chunk):]
		values := make([]string, len(chunk))
		args := make([]any, 0, 1+len(chunk))
		args = append(args, id)
		for i, k := range chunk {
			values[i] = fmt.Sprintf("($1, $%d)", i+2)
			args = append(args, k)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_keys (webhook_id, key) VALUES `+strings.Join(values, ", ")+`
			ON CONFLICT (webhook_id, key) DO NOTHING`, args...); err != nil {
			return fmt.Errorf("webhooks: add keys: %w", err)
		}
	}
	return nil
}

// Get returns owner's webhook id with its keys; ErrNotFound when it does
// not exist or is another key's.
func (r *Registry) Get(ctx context.Context, owner, id string) (*Webhook, error) {
	w, err := r.get(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	if w.Keys, err = r.keys(ctx, w.ID, "", -1); err != nil {
		return nil, err
	}
	return w, nil
}

func (r *Registry) get(ctx context.Context, owner, id string) (*Webhook, error) {
	w, err := scan(r.db.QueryRowContext(ctx, `SELECT `+columns+` FROM webhooks WHERE id = $1 AND owner = $2`, id, owner))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("webhooks: read %s: %w", id, err)
	}
	return w, nil
}

// keys lists a webhook's keys in order, after the key after ("" from the
// start), at most limit (negative: all).
func (r *Registry) keys(ctx context.Context, id, after string, limit int) ([]string, error) {
	q := `SELECT key FROM webhook_keys WHERE webhook_id = $1 AND key > $2 ORDER BY key`
	args := []any{id, after}
	if limit >= 0 {
		q += ` LIMIT $3`
		args = append(args, limit)
	}
	rows, err := r.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("webhooks: keys of %s: %w", id, err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("webhooks: keys of %s: %w", id, err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("webhooks: keys of %s: %w", id, err)
	}
	return out, nil
}

// Cursor is the keyset position of a webhooks listing: newest first.
type Cursor struct {
	CreatedAt int64  `json:"t"`
	ID        string `json:"i"`
}

// List returns up to limit+1 of owner's webhooks (status "" for all) after
// the cursor (nil from the start), newest first, keys loaded.
func (r *Registry) List(ctx context.Context, owner, status string, after *Cursor, limit int) ([]*Webhook, error) {
	q := `SELECT ` + columns + ` FROM webhooks WHERE owner = $1 AND ($2 = '' OR status = $2)`
	args := []any{owner, status}
	if after != nil {
		q += ` AND (created_at < $3 OR (created_at = $3 AND id < $4))`
		args = append(args, after.CreatedAt, after.ID)
	}
	q += fmt.Sprintf(` ORDER BY created_at DESC, id DESC LIMIT %d`, limit+1)
	rows, err := r.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("webhooks: list: %w", err)
	}
	var out []*Webhook
	for rows.Next() {
		w, err := scan(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("webhooks: list: %w", err)
		}
		out = append(out, w)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("webhooks: list: %w", err)
	}
	for _, w := range out {
		if w.Keys, err = r.keys(ctx, w.ID, "", -1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Update applies a validated PATCH. Setting the status to active clears the
// failure count of an automatically deactivated webhook.
func (r *Registry) Update(ctx context.Context, owner, id string, req *UpdateRequest) (*Webhook, error) {
	w, err := r.get(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	if req.Name != nil {
		w.Name = *req.Name
	}
	if req.Description != nil {
		w.Description = *req.Description
	}
	if req.URL != nil {
		w.URL = *req.URL
	}
	if req.IncludeInternalTxs != nil {
		w.IncludeInternalTxs = *req.IncludeInternalTxs
	}
	if req.IncludeLogs != nil {
		w.IncludeLogs = *req.IncludeLogs
	}
	if req.Status != nil && *req.Status != w.Status {
		w.Status, w.Failures, w.InactiveReason = *req.Status, 0, ""
		if w.Status == StatusInactive {
			w.InactiveReason = "deactivated by its owner"
		}
	}
	w.UpdatedAt = r.now().UnixMilli()
	if _, err := r.db.ExecContext(ctx, `UPDATE webhooks SET name = $1, description = $2, url = $3, status = $4,
		include_internal_txs = $5, include_logs = $6, updated_at = $7, failures = $8, inactive_reason = $9
		WHERE id = $10 AND owner = $11`, w.Name, w.Description, w.URL, w.Status, w.IncludeInternalTxs, w.IncludeLogs,
		w.UpdatedAt, w.Failures, w.InactiveReason, w.ID, owner); err != nil {
		return nil, fmt.Errorf("webhooks: update %s: %w", id, err)
	}
	return r.Get(ctx, owner, id)
}

// Deactivate sets owner's webhook id inactive (DELETE /v1/webhooks/{id}):
// it stops receiving events; its registration and keys are kept.
func (r *Registry) Deactivate(ctx context.Context, owner, id string) (*Webhook, error) {
	inactive := StatusInactive
	return r.Update(ctx, owner, id, &UpdateRequest{Status: &inactive})
}

// AddKeys adds EVM addresses to an address_activity webhook, within
// MaxKeysPerWebhook.
func (r *Registry) AddKeys(ctx context.Context, owner, id string, keys []string) (*Webhook, error) {
	return r.changeKeys(ctx, owner, id, keys, true)
}

// RemoveKeys removes EVM addresses from an address_activity webhook
// (addresses it does not watch are ignored).
func (r *Registry) RemoveKeys(ctx context.Context, owner, id string, keys []string) (*Webhook, error) {
	return r.changeKeys(ctx, owner, id, keys, false)
}

func (r *Registry) changeKeys(ctx context.Context, owner, id string, keys []string, add bool) (*Webhook, error) {
	w, err := r.get(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	if w.EventType != EventAddressActivity {
		return nil, api.BadRequest(fmt.Sprintf("addresses can be changed on address_activity webhooks only (this one is %s)", w.EventType))
	}
	tx, err := r.db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("webhooks: change addresses: %w", err)
	}
	defer tx.Rollback()
	if add {
		if err := insertKeys(ctx, tx, id, keys); err != nil {
			return nil, err
		}
		var n int64
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM webhook_keys WHERE webhook_id = $1`, id).Scan(&n); err != nil {
			return nil, fmt.Errorf("webhooks: count addresses: %w", err)
		}
		if n > MaxKeysPerWebhook {
			return nil, api.BadRequest(fmt.Sprintf("a webhook watches at most %d addresses; this change would make it %d", MaxKeysPerWebhook, n))
		}
	} else {
		for _, k := range keys {
			if _, err := tx.Exec(ctx, `DELETE FROM webhook_keys WHERE webhook_id = $1 AND key = $2`, id, k); err != nil {
				return nil, fmt.Errorf("webhooks: remove address: %w", err)
			}
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE webhooks SET updated_at = $1 WHERE id = $2`, r.now().UnixMilli(), id); err != nil {
		return nil, fmt.Errorf("webhooks: change addresses: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("webhooks: change addresses: %w", err)
	}
	return r.Get(ctx, owner, id)
}

// Addresses returns up to limit+1 addresses of owner's EVM webhook id after
// the address after, and how many it watches.
func (r *Registry) Addresses(ctx context.Context, owner, id, after string, limit int) ([]string, int64, error) {
	w, err := r.get(ctx, owner, id)
	if err != nil {
		return nil, 0, err
	}
	if w.EventType != EventAddressActivity {
		return nil, 0, api.BadRequest(fmt.Sprintf("addresses are listed for address_activity webhooks only (this one is %s)", w.EventType))
	}
	var total int64
	if err := r.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_keys WHERE webhook_id = $1`, id).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("webhooks: count addresses: %w", err)
	}
	keys, err := r.keys(ctx, id, after, limit+1)
	return keys, total, err
}

// RotateSecret gives owner a new signing secret; deliveries from now on are
// signed with it.
func (r *Registry) RotateSecret(ctx context.Context, owner string) (string, error) {
	s := newSecret()
	if _, err := r.db.ExecContext(ctx, `INSERT INTO webhook_secrets (owner, secret, created_at) VALUES ($1,$2,$3)
		ON CONFLICT (owner) DO UPDATE SET secret = excluded.secret, created_at = excluded.created_at`,
		owner, s, r.now().UnixMilli()); err != nil {
		return "", fmt.Errorf("webhooks: rotate secret: %w", err)
	}
	return s, nil
}

// Secret returns owner's signing secret; ErrNotFound when none was made.
func (r *Registry) Secret(ctx context.Context, owner string) (string, error) {
	var s string
	err := r.db.QueryRowContext(ctx, `SELECT secret FROM webhook_secrets WHERE owner = $1`, owner).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("webhooks: read secret: %w", err)
	}
	return s, nil
}

// newSecret is 32 random bytes in hex (the hosted service's secrets have
// this form).
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
