package export

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// metaKey names the download-URL signing key in the meta table. It is its
// own key (not the page-token key): a leak of one does not forge the other.
const metaKey = "export_url_key"

// signer makes and checks download URL signatures: HMAC-SHA256 over the
// operation id and the expiry. Stateless, so any replica serves any URL.
type signer struct{ key []byte }

// loadSigner reads the shared key from the store, creating it once (the
// first replica's INSERT wins; the others read it back).
func loadSigner(ctx context.Context, db *store.DB) (*signer, error) {
	read := func() (string, error) {
		var v string
		err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = $1`, metaKey).Scan(&v)
		return v, err
	}
	v, err := read()
	if errors.Is(err, sql.ErrNoRows) {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, fmt.Errorf("export: url key: %w", err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`,
			metaKey, hex.EncodeToString(k)); err != nil {
			return nil, fmt.Errorf("export: url key: %w", err)
		}
		v, err = read()
	}
	if err != nil {
		return nil, fmt.Errorf("export: url key: %w", err)
	}
	k, err := hex.DecodeString(v)
	if err != nil || len(k) < 16 {
		return nil, fmt.Errorf("export: url key in meta is malformed")
	}
	return &signer{key: k}, nil
}

func (s *signer) mac(id string, expires int64) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("permafrost export download\x00" + id + "\x00" + strconv.FormatInt(expires, 10)))
	return m.Sum(nil)
}

// sign returns the signature of a download of id valid until expires (unix s).
func (s *signer) sign(id string, expires int64) string {
	return base64.RawURLEncoding.EncodeToString(s.mac(id, expires))
}

// verify checks sig in constant time.
func (s *signer) verify(id string, expires int64, sig string) bool {
	if len(sig) > 64 {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return false
	}
	return hmac.Equal(b, s.mac(id, expires))
}
