package xchain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/engine/avalanche/vertex"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/vms/avm/txs"

	"github.com/permafrost-dev/permafrost/internal/decode/primary"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// DAGHeight is px_txs.height of a tx accepted in the X-chain's DAG before
// the linearization: it is in vertices, not in a block (genesis txs are -1).
const DAGHeight = -2

// Container kinds of the node's DAG indexes (x_dag_containers.kind). Txs
// come first: a bootstrapping node accepts every tx of the DAG before its
// vertices (avalanche bootstrapper: TxBlocked, then VtxBlocked).
const (
	KindTx     = "tx"
	KindVertex = "vtx"
)

// dagBatch is how many containers one transaction carries (the index API
// serves at most 1024 a call).
const dagBatch = 1024

// DAGContainer is one container of the node's tx or vertex index.
type DAGContainer struct {
	Position uint64
	ID       ids.ID
	Time     int64 // when the node accepted it (unix s)
	Bytes    []byte
}

// DAGIndex is the node's index API of the X-chain's DAG (/ext/index/X/tx,
// /ext/index/X/vtx). Errors wrap ingest.ErrNoIndex (no index API) and
// ingest.ErrIndexEmpty (nothing accepted).
type DAGIndex interface {
	Last(ctx context.Context, kind string) (uint64, error)
	Range(ctx context.Context, kind string, start uint64, n int) ([]DAGContainer, error)
}

var _ ingest.History = (*DAG)(nil)

// DAG ingests the X-chain's transactions and vertices from before the
// Cortina linearization, as ingest.History of the X-chain: txs in accepted
// order through the block indexer's per-tx code (positions before the first
// block), then the vertices. Every batch's containers are stored
// (x_dag_containers, which reindex replays) with the rows they make, in one
// transaction, so the stored containers are the checkpoint.
type DAG struct {
	ix      *Indexer
	index   DAGIndex
	missing string // the notice while the history is not indexed ("" : nothing is missing)
	log     *slog.Logger

	mu       sync.Mutex
	complete bool
}

// NewDAG builds the DAG history of ix's network. missing is the notice to
// show until the DAG up to the network's stop vertex is indexed ("" for a
// network linear from genesis, which has no stop vertex).
func NewDAG(ix *Indexer, index DAGIndex, missing string, log *slog.Logger) *DAG {
	if log == nil {
		log = slog.Default()
	}
	return &DAG{ix: ix, index: index, missing: missing, log: log}
}

// Notice is "" once the DAG up to the stop vertex is indexed, or when the
// network has none; else what is missing.
func (d *DAG) Notice() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.complete {
		return ""
	}
	return d.missing
}

// DerivedTables are the vertex tables (the txs' rows are the indexer's).
func (d *DAG) DerivedTables() []string { return []string{"x_vertices", "x_vertex_txs"} }

// Ingest fetches what the node's DAG indexes hold beyond what is stored:
// every tx, then every vertex.
func (d *DAG) Ingest(ctx context.Context, db *store.DB) error {
	for _, kind := range []string{KindTx, KindVertex} {
		if err := d.ingestKind(ctx, db, kind); err != nil {
			if errors.Is(err, ingest.ErrNoIndex) {
				d.log.Info("ingest: the node serves no X-chain DAG index (--index-enabled); DAG history not indexed", "kind", kind)
				break
			}
			return err
		}
	}
	return d.checkComplete(ctx, db)
}

func (d *DAG) ingestKind(ctx context.Context, db *store.DB, kind string) error {
	var stored int64
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(position), -1) FROM x_dag_containers WHERE kind = $1`, kind).Scan(&stored); err != nil {
		return fmt.Errorf("xchain: DAG %s checkpoint: %w", kind, err)
	}
	last, err := d.index.Last(ctx, kind)
	if errors.Is(err, ingest.ErrIndexEmpty) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("xchain: DAG %s index: %w", kind, err)
	}
	for next := uint64(stored + 1); next <= last; {
		n := int(min(uint64(dagBatch), last-next+1))
		cs, err := d.index.Range(ctx, kind, next, n)
		if err != nil {
			return fmt.Errorf("xchain: DAG %s %d..: %w", kind, next, err)
		}
		if len(cs) == 0 {
			return fmt.Errorf("xchain: DAG %s index: no container at %d, last accepted %d", kind, next, last)
		}
		for i, c := range cs {
			if c.Position != next+uint64(i) {
				return fmt.Errorf("xchain: DAG %s index: container %d has position %d, want %d", kind, i, c.Position, next+uint64(i))
			}
		}
		if err := d.write(ctx, db, kind, cs, true); err != nil {
			return err
		}
		next += uint64(len(cs))
		d.log.Info("ingest: X-chain DAG", "kind", kind, "position", next-1, "last", last)
	}
	return nil
}

// write indexes containers of one kind in one transaction; fetched ones
// are stored with their rows (the checkpoint), replayed ones are stored
// already.
func (d *DAG) write(ctx context.Context, db ingest.StoreDB, kind string, cs []DAGContainer, fetched bool) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	if fetched {
		err = d.store(ctx, tx, kind, cs)
	}
	if err == nil {
		err = d.apply(ctx, tx, kind, cs)
	}
	if err != nil {
		tx.Rollback() //nolint:errcheck // the apply error is the one to report
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("xchain: DAG %s commit: %w", kind, err)
	}
	return nil
}

var dagColumns = []string{"kind", "position", "container_id", "accepted_time", "body"}

func (d *DAG) store(ctx context.Context, tx *store.Tx, kind string, cs []DAGContainer) error {
	rows := make([][]any, len(cs))
	for i, c := range cs {
		if hashing.ComputeHash256Array(c.Bytes) != c.ID {
			return fmt.Errorf("xchain: DAG %s %d: bytes hash to %s, the node says %s", kind, c.Position, ids.ID(hashing.ComputeHash256Array(c.Bytes)), c.ID)
		}
		rows[i] = []any{kind, int64(c.Position), c.ID.String(), c.Time, c.Bytes}
	}
	if err := tx.CopyFrom(ctx, "x_dag_containers", dagColumns, rows); err != nil {
		return fmt.Errorf("xchain: store DAG %s %d..: %w", kind, cs[0].Position, err)
	}
	return nil
}

// time is a container's timestamp: the node's acceptance time, capped at the
// linearization. A node bootstrapped after it accepted the whole DAG at
// bootstrap; the cap keeps the DAG before the first block in time order.
func (d *DAG) time(accepted int64) int64 {
	if d.missing == "" {
		return accepted
	}
	return min(accepted, d.ix.g.Upgrades.CortinaTime.Unix())
}

// apply indexes containers of one kind, in position order, inside tx. The
// fees the DAG's txs burned count in the X-chain's AVAX totals (avax/supply)
// like a block's.
func (d *DAG) apply(ctx context.Context, tx *store.Tx, kind string, cs []DAGContainer) error {
	var burned uint64
	for _, c := range cs {
		var err error
		if kind == KindTx {
			var fee uint64
			fee, err = d.applyTx(ctx, tx, c)
			burned += fee
		} else {
			err = d.applyVertex(ctx, tx, c)
		}
		if err != nil {
			return err
		}
	}
	return d.ix.w.AddSupply(ctx, tx, "X", primary.Supply{Burned: int64(burned)})
}

// applyTx indexes one DAG tx and returns its fee.
func (d *DAG) applyTx(ctx context.Context, tx *store.Tx, c DAGContainer) (uint64, error) {
	if c.Position == 0 {
		// Txs of the DAG spend genesis outputs: the genesis assets are
		// loaded first (block 0 loads them again, idempotently, with its
		// own time).
		if err := d.ix.loadGenesis(ctx, tx, int64(d.ix.g.P.Timestamp)); err != nil {
			return 0, err
		}
	}
	pos := position{height: DAGHeight, index: int(c.Position), time: d.time(c.Time)}
	t, err := parseTx(d.ix.parser, c.Bytes)
	if err != nil {
		d.ix.log.Warn("undecodable X-chain DAG tx stored raw", "position", c.Position, "id", c.ID, "err", err)
		return 0, d.ix.putTx(ctx, tx, pos, c.ID, TypeUnknown, nil, "", "", "[]", c.Bytes)
	}
	return d.ix.applyTx(ctx, tx, pos, t)
}

func parseTx(p txs.Parser, b []byte) (t *txs.Tx, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("parser panicked: %v", r)
		}
	}()
	return p.ParseTx(b)
}

func (d *DAG) applyVertex(ctx context.Context, tx *store.Tx, c DAGContainer) error {
	vtx, err := vertex.Parse(c.Bytes)
	if err != nil {
		return fmt.Errorf("xchain: DAG vertex %d (%s): %w", c.Position, c.ID, err)
	}
	xTx, _, err := d.ix.g.Chain(constants.AVMID)
	if err != nil {
		return fmt.Errorf("xchain: DAG vertex: %w", err)
	}
	if vtx.ChainID() != xTx.ID() {
		return fmt.Errorf("xchain: DAG vertex %d (%s) is of chain %s, not the X-chain %s", c.Position, c.ID, vtx.ChainID(), xTx.ID())
	}
	parents := make([]string, len(vtx.ParentIDs()))
	for i, p := range vtx.ParentIDs() {
		parents[i] = p.String()
	}
	txIDs := make([]string, len(vtx.Txs()))
	for i, b := range vtx.Txs() {
		txIDs[i] = ids.ID(hashing.ComputeHash256Array(b)).String()
		if _, err := tx.Exec(ctx, `INSERT INTO x_vertex_txs (tx_id, vertex_id) VALUES ($1,$2) ON CONFLICT DO NOTHING`,
			txIDs[i], c.ID.String()); err != nil {
			return fmt.Errorf("xchain: DAG vertex %s tx: %w", c.ID, err)
		}
	}
	parentsJSON, _ := json.Marshal(parents)
	txIDsJSON, _ := json.Marshal(txIDs)
	if _, err := tx.Exec(ctx, `INSERT INTO x_vertices (vertex_id, position, height, timestamp, parent_ids, tx_ids, size_bytes)
		VALUES ($1,$2,$3,$4,$5,$6,$7) ON CONFLICT (vertex_id) DO UPDATE SET position=excluded.position, height=excluded.height,
		timestamp=excluded.timestamp, parent_ids=excluded.parent_ids, tx_ids=excluded.tx_ids, size_bytes=excluded.size_bytes`,
		c.ID.String(), int64(c.Position), int64(vtx.Height()), d.time(c.Time), string(parentsJSON), string(txIDsJSON), len(c.Bytes)); err != nil {
		return fmt.Errorf("xchain: put DAG vertex %s: %w", c.ID, err)
	}
	return nil
}

// checkComplete: the DAG is indexed when its stop vertex is stored (the
// node accepts every tx of the DAG before it).
func (d *DAG) checkComplete(ctx context.Context, db ingest.StoreDB) error {
	stop := d.ix.g.Upgrades.CortinaXChainStopVertexID
	if d.missing == "" || stop == ids.Empty {
		return nil
	}
	rows, err := db.QueryContext(ctx, `SELECT 1 FROM x_dag_containers WHERE kind = $1 AND container_id = $2`, KindVertex, stop.String())
	if err != nil {
		return fmt.Errorf("xchain: DAG stop vertex: %w", err)
	}
	defer rows.Close()
	found := rows.Next()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("xchain: DAG stop vertex: %w", err)
	}
	d.mu.Lock()
	d.complete = found
	d.mu.Unlock()
	return nil
}

// Replay indexes the stored containers again (reindex): txs, then vertices,
// one transaction per batch.
func (d *DAG) Replay(ctx context.Context, db ingest.StoreDB) error {
	for _, kind := range []string{KindTx, KindVertex} {
		for next := int64(0); ; {
			cs, err := readContainers(ctx, db, kind, next)
			if err != nil {
				return err
			}
			if len(cs) == 0 {
				break
			}
			if cs[0].Position != uint64(next) {
				return fmt.Errorf("xchain: stored DAG %s %d missing", kind, next)
			}
			if err := d.write(ctx, db, kind, cs, false); err != nil {
				return err
			}
			next += int64(len(cs))
		}
	}
	return d.checkComplete(ctx, db)
}

func readContainers(ctx context.Context, db ingest.StoreDB, kind string, from int64) ([]DAGContainer, error) {
	rows, err := db.QueryContext(ctx, `SELECT position, container_id, accepted_time, body FROM x_dag_containers
		WHERE kind = $1 AND position >= $2 ORDER BY position LIMIT $3`, kind, from, dagBatch)
	if err != nil {
		return nil, fmt.Errorf("xchain: read stored DAG %s: %w", kind, err)
	}
	defer rows.Close()
	var out []DAGContainer
	for rows.Next() {
		var (
			c   DAGContainer
			pos int64
			id  string
		)
		if err := rows.Scan(&pos, &id, &c.Time, &c.Bytes); err != nil {
			return nil, fmt.Errorf("xchain: read stored DAG %s: %w", kind, err)
		}
		if c.ID, err = ids.FromString(id); err != nil {
			return nil, fmt.Errorf("xchain: stored DAG %s %d: %w", kind, pos, err)
		}
		c.Position = uint64(pos)
		out = append(out, c)
	}
	return out, rows.Err()
}
