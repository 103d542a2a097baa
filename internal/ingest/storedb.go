package ingest

import (
	"context"
	"database/sql"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// StoreDB is what reindexing needs of the store (*store.DB).
type StoreDB interface {
	Begin(ctx context.Context) (*store.Tx, error)
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}
