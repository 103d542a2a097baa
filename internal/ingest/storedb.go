package ingest

import (
	"context"
	"database/sql"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// storeDB is what reindexing needs of the store.
type storeDB interface {
	Begin(ctx context.Context) (*store.Tx, error)
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}
