package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/permafrost-dev/permafrost/internal/config"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// ChainStatus is one row of `permafrost status`.
type ChainStatus struct {
	Chain         string  `json:"chain"`
	BlockchainID  string  `json:"blockchainId"`
	IndexedHeight int64   `json:"indexedHeight"`
	NodeHeight    int64   `json:"nodeHeight"`
	Lag           int64   `json:"lag"`
	BlocksPerSec  float64 `json:"blocksPerSecond"`
	LastBlockTime int64   `json:"lastBlockTimestamp"`
	UpdatedAt     int64   `json:"updatedAt"`
}

// ReadStatus reads every registered chain's progress from the store. The node
// height is the tip the ingester last saw.
func ReadStatus(ctx context.Context, db *store.DB) ([]ChainStatus, error) {
	rows, err := db.QueryContext(ctx, `SELECT c.chain_key, c.blockchain_id, COALESCE(k.height, -1), COALESCE(k.node_height, 0),
		COALESCE(k.rate, 0), COALESCE(k.block_time, 0), COALESCE(k.updated_at, 0)
		FROM chains c LEFT JOIN checkpoints k ON k.chain_key = c.chain_key ORDER BY c.chain_key`)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	defer rows.Close()
	var out []ChainStatus
	for rows.Next() {
		var s ChainStatus
		if err := rows.Scan(&s.Chain, &s.BlockchainID, &s.IndexedHeight, &s.NodeHeight, &s.BlocksPerSec, &s.LastBlockTime, &s.UpdatedAt); err != nil {
			return nil, fmt.Errorf("status: %w", err)
		}
		s.Lag = max(s.NodeHeight-s.IndexedHeight, 0)
		out = append(out, s)
	}
	return out, rows.Err()
}

func status(ctx context.Context, cfg *config.Config, asJSON bool, w io.Writer) error {
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	st, err := ReadStatus(ctx, db)
	if err != nil {
		return err
	}
	if asJSON {
		if st == nil {
			st = []ChainStatus{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHAIN\tBLOCKCHAIN ID\tINDEXED\tNODE TIP\tLAG\tBLOCKS/S\tUPDATED")
	for _, s := range st {
		updated := "never"
		if s.UpdatedAt > 0 {
			updated = time.Unix(s.UpdatedAt, 0).UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.1f\t%s\n", s.Chain, s.BlockchainID, s.IndexedHeight, s.NodeHeight, s.Lag, s.BlocksPerSec, updated)
	}
	return tw.Flush()
}
