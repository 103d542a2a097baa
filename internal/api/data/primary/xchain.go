package primary

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// xChain resolves the request's chain and requires the X-chain: the
// document types blockchainId of the asset and vertex routes as XChainId.
func (h *handlers) xChain(r *http.Request, what string) (*request, error) {
	q, err := h.begin(r, true)
	if err != nil {
		return nil, err
	}
	if q.chain.Key != "X" {
		return nil, api.BadRequest(fmt.Sprintf("blockchainId: %s are served for the X-chain (x-chain or %s), got %s",
			what, h.blockchainID("X"), short(r.PathValue("blockchainId"))))
	}
	return q, nil
}

// getAssetDetails answers getAssetDetails from the asset its CreateAssetTx
// made (the genesis AVAX asset included).
func (h *handlers) getAssetDetails(r *http.Request) (any, error) {
	q, err := h.xChain(r, "assets")
	if err != nil {
		return nil, err
	}
	assetID := r.PathValue("assetId")
	if _, err := api.ParseCB58ID(assetID); err != nil {
		return nil, api.BadRequest("assetId: " + err.Error())
	}
	ctx := r.Context()
	if err := h.checkChain(ctx, "X"); err != nil {
		return nil, err
	}
	var a XChainAssetDetail
	err = h.d.DB.QueryRowContext(ctx, `SELECT asset_id, name, symbol, denomination, asset_type, cap, created_time
		FROM assets WHERE asset_id = $1`, assetID).Scan(&a.AssetID, &a.Name, &a.Symbol, &a.Denomination, &a.Type, &a.Cap, &a.CreatedAtTimestamp)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, api.NotFound("assetId: %s is not an asset of the X-chain of network %s", assetID, q.network)
	}
	if err != nil {
		return nil, fmt.Errorf("read asset %s: %w", assetID, err)
	}
	return a, nil
}

// Vertex is XChainVertex: a vertex of the X-chain's DAG before the Cortina
// linearization, as the node's index API served it (x_vertices, written by
// xchain.DAG). vertexIndex is its position in the node's vertex index;
// vertexTimestamp the node's acceptance time (capped at the linearization).
// A network linear from genesis, or a node without the index, has none.
type Vertex struct {
	VertexHash      string   `json:"vertexHash"`
	ParentHashes    []string `json:"parentHashes"`
	VertexHeight    int64    `json:"vertexHeight"`
	VertexIndex     int64    `json:"vertexIndex"`
	VertexTimestamp int64    `json:"vertexTimestamp"`
	TxCount         int64    `json:"txCount"`
	Transactions    []string `json:"transactions"`
	VertexSizeBytes int64    `json:"vertexSizeBytes"`
}

// ListVerticesResponse is ListXChainVerticesResponse.
type ListVerticesResponse struct {
	NextPageToken string    `json:"nextPageToken,omitempty"`
	Vertices      []Vertex  `json:"vertices"`
	ChainInfo     ChainInfo `json:"chainInfo"`
}

// vertexCursor continues a vertex listing after the vertex at position P.
type vertexCursor struct {
	P int64 `json:"p"`
}

// vertexColumns are the x_vertices columns scanVertex reads, in its order.
const vertexColumns = `vertex_id, parent_ids, height, position, timestamp, tx_ids, size_bytes`

func scanVertex(rows interface{ Scan(...any) error }) (Vertex, error) {
	var (
		v              Vertex
		parents, txIDs string
	)
	if err := rows.Scan(&v.VertexHash, &parents, &v.VertexHeight, &v.VertexIndex, &v.VertexTimestamp, &txIDs, &v.VertexSizeBytes); err != nil {
		return v, fmt.Errorf("read vertex: %w", err)
	}
	if err := json.Unmarshal([]byte(parents), &v.ParentHashes); err != nil {
		return v, fmt.Errorf("vertex %s parents: %w", v.VertexHash, err)
	}
	if err := json.Unmarshal([]byte(txIDs), &v.Transactions); err != nil {
		return v, fmt.Errorf("vertex %s txs: %w", v.VertexHash, err)
	}
	v.TxCount = int64(len(v.Transactions))
	return v, nil
}

// listVertices answers listLatestXChainVertices (every vertex, newest
// first: by position in the node's vertex index) and, with byHeight,
// getVertexByHeight (the vertices of one vertexHeight, sortOrder by
// position; the document's default for sortOrder is not given: desc, as the
// other listing).
func (h *handlers) listVertices(byHeight bool) api.Handler {
	return func(r *http.Request) (any, error) {
		q, err := h.xChain(r, "vertices")
		if err != nil {
			return nil, err
		}
		size := q.p.PageSize(defaultPageSize, 1, maxPageSize)
		var height int64
		order := "desc"
		if byHeight {
			if !q.p.Has("vertexHeight") {
				q.p.Fail("vertexHeight is required")
			} else {
				height, _ = q.p.OptInt("vertexHeight", 0)
			}
			order = sortOrder(q.p, "desc")
		}
		var cur vertexCursor
		has, err := h.decodeCursor(q, routeVertices, &cur)
		if err != nil {
			return nil, err
		}
		if err := q.p.Err(); err != nil {
			return nil, err
		}
		ctx := r.Context()
		if err := h.checkChain(ctx, "X"); err != nil {
			return nil, err
		}
		where, args := "1 = 1", []any{}
		if byHeight {
			args = append(args, height)
			where = "height = $1"
		}
		cmp, dir := "<", "DESC"
		if order == "asc" {
			cmp, dir = ">", "ASC"
		}
		if has {
			args = append(args, cur.P)
			where += " AND position " + cmp + " $" + strconv.Itoa(len(args))
		}
		rows, err := h.d.DB.QueryContext(ctx, `SELECT `+vertexColumns+` FROM x_vertices WHERE `+where+
			` ORDER BY position `+dir+` LIMIT `+strconv.Itoa(size+1), args...)
		if err != nil {
			return nil, fmt.Errorf("list vertices: %w", err)
		}
		defer rows.Close()
		out := ListVerticesResponse{Vertices: []Vertex{}, ChainInfo: ChainInfo{ChainName: "x-chain", Network: q.network}}
		for rows.Next() {
			v, err := scanVertex(rows)
			if err != nil {
				return nil, err
			}
			if len(out.Vertices) == size {
				out.NextPageToken = h.encodeCursor(q, routeVertices, vertexCursor{P: out.Vertices[size-1].VertexIndex})
				break
			}
			out.Vertices = append(out.Vertices, v)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("list vertices: %w", err)
		}
		return out, nil
	}
}

// getVertexByHash answers getVertexByHash: a vertex of the DAG, or 404 for
// a well-formed hash that is not one (every id on a network linear from
// genesis).
func (h *handlers) getVertexByHash(r *http.Request) (any, error) {
	q, err := h.xChain(r, "vertices")
	if err != nil {
		return nil, err
	}
	hash := r.PathValue("vertexHash")
	if _, err := api.ParseCB58ID(hash); err != nil {
		return nil, api.BadRequest("vertexHash: " + err.Error())
	}
	ctx := r.Context()
	if err := h.checkChain(ctx, "X"); err != nil {
		return nil, err
	}
	v, err := scanVertex(h.d.DB.QueryRowContext(ctx, `SELECT `+vertexColumns+` FROM x_vertices WHERE vertex_id = $1`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, api.NotFound("vertexHash: %s is not a vertex of the X-chain of network %s (vertices are the DAG before the linearization, read from the node's index API)", hash, q.network)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}
