-- The X-chain before its Cortina linearization (mainnet and Fuji): a DAG of
-- vertices whose transactions no block holds. The node's index API
-- (avalanchego --index-enabled: /ext/index/X/vtx and /ext/index/X/tx) serves
-- them in accepted order; internal/decode/xchain (dag.go) reads them.

-- The containers as the index served them (not derived: reindex keeps them
-- and replays them, as raw_blocks): kind 'vtx' or 'tx', position in that
-- index. Rows and the derived rows of a batch are one transaction, so the
-- highest position of a kind is its checkpoint.
CREATE TABLE IF NOT EXISTS x_dag_containers (
    kind          TEXT NOT NULL,
    position      BIGINT NOT NULL,
    container_id  TEXT NOT NULL,            -- cb58: sha256 of the bytes
    accepted_time BIGINT NOT NULL,          -- the index's acceptance time (unix s)
    body          BLOB NOT NULL,
    PRIMARY KEY (kind, position)
);

-- Vertices (derived): the data API's XChainVertex. timestamp is the index's
-- acceptance time, capped at the linearization (see docs/operations.md).
CREATE TABLE IF NOT EXISTS x_vertices (
    vertex_id    TEXT PRIMARY KEY,
    position     BIGINT NOT NULL,           -- vertexIndex: position in /ext/index/X/vtx
    height       BIGINT NOT NULL,           -- the vertex's own height
    timestamp    BIGINT NOT NULL,
    parent_ids   TEXT NOT NULL,             -- JSON array of cb58
    tx_ids       TEXT NOT NULL,             -- JSON array of cb58, in the vertex's order
    size_bytes   BIGINT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS x_vertices_position ON x_vertices (position);
CREATE INDEX IF NOT EXISTS x_vertices_height ON x_vertices (height, position);

-- Which vertices hold a tx (derived): a tx's `vertices` (spec 2.2).
CREATE TABLE IF NOT EXISTS x_vertex_txs (
    tx_id      TEXT NOT NULL,
    vertex_id  TEXT NOT NULL,
    PRIMARY KEY (tx_id, vertex_id)
);
