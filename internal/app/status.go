package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
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
	// State is "not started" (no block indexed), "stalled" (the ingester's
	// batches fail: Error says why, since StalledSince), or "indexing".
	State        string `json:"state"`
	Error        string `json:"error,omitempty"`
	StalledSince int64  `json:"stalledSince,omitempty"`
	// Notice: ingesting in a lesser way, e.g. without proposer details.
	Notice string `json:"notice,omitempty"`
	// DeferredIndexes are the indexes a bulk catch-up dropped and has not
	// built yet (the database's, the same on every row; docs/operations.md).
	DeferredIndexes []string `json:"deferredIndexes,omitempty"`
}

// ReadStatus reads every registered chain's progress from the store. The node
// height is the tip the ingester last saw (asked again while it is stalled).
func ReadStatus(ctx context.Context, db *store.DB) ([]ChainStatus, error) {
	rows, err := db.QueryContext(ctx, `SELECT c.chain_key, c.blockchain_id, COALESCE(k.height, -1), COALESCE(k.node_height, 0),
		COALESCE(k.rate, 0), COALESCE(k.block_time, 0), COALESCE(k.updated_at, 0),
		COALESCE(c.stall_error, ''), COALESCE(c.stalled_since, 0), COALESCE(c.notice, '')
		FROM chains c LEFT JOIN checkpoints k ON k.chain_key = c.chain_key ORDER BY c.chain_key`)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	defer rows.Close()
	deferred, err := db.DeferredIndexes(ctx)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	var names []string
	for _, d := range deferred {
		names = append(names, d.Name)
	}
	var out []ChainStatus
	for rows.Next() {
		var s ChainStatus
		if err := rows.Scan(&s.Chain, &s.BlockchainID, &s.IndexedHeight, &s.NodeHeight, &s.BlocksPerSec, &s.LastBlockTime, &s.UpdatedAt,
			&s.Error, &s.StalledSince, &s.Notice); err != nil {
			return nil, fmt.Errorf("status: %w", err)
		}
		s.Lag = max(s.NodeHeight-s.IndexedHeight, 0)
		s.DeferredIndexes = names
		switch {
		case s.Error != "":
			s.State = "stalled"
		case s.IndexedHeight < 0:
			s.State = "not started"
		default:
			s.State = "indexing"
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func status(ctx context.Context, cfg *config.Config, asJSON bool, w io.Writer) error {
	// Opening a SQLite path creates a database: say there is none instead.
	if path, ok := strings.CutPrefix(cfg.DB, "sqlite:"); ok {
		path, _, _ = strings.Cut(path, "?")
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("status: no database at %s (nothing indexed there yet; check --db)", path)
		}
	}
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
	fmt.Fprintln(tw, "CHAIN\tBLOCKCHAIN ID\tSTATE\tINDEXED\tNODE TIP\tLAG\tBLOCKS/S\tUPDATED")
	var notes []string
	for _, s := range st {
		updated := "never"
		if s.UpdatedAt > 0 {
			updated = time.Unix(s.UpdatedAt, 0).UTC().Format(time.RFC3339)
		}
		indexed, lag := strconv.FormatInt(s.IndexedHeight, 10), strconv.FormatInt(s.Lag, 10)
		if s.IndexedHeight < 0 {
			indexed, lag = "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%.1f\t%s\n", s.Chain, s.BlockchainID, s.State, indexed, s.NodeHeight, lag, s.BlocksPerSec, updated)
		if s.Error != "" {
			notes = append(notes, fmt.Sprintf("%s: stalled since %s: %s", s.Chain, time.Unix(s.StalledSince, 0).UTC().Format(time.RFC3339), s.Error))
		}
		if s.Notice != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", s.Chain, s.Notice))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st) > 0 && len(st[0].DeferredIndexes) > 0 {
		notes = append(notes, fmt.Sprintf("bulk catch-up: %d indexes deferred until every chain is caught up (their routes answer, more slowly): %s",
			len(st[0].DeferredIndexes), strings.Join(st[0].DeferredIndexes, ", ")))
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	return nil
}
