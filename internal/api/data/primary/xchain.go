package primary

import (
	"database/sql"
	"errors"
	"fmt"
	"net/http"

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

// Vertex is XChainVertex. The X-chain indexed here is linear (blocks since
// the Cortina linearization); vertices of the DAG before it are not
// indexed, so the vertex routes answer empty lists and 404s.
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

// vertexCursor would continue a vertex listing; none is ever issued, so a
// pageToken is always refused (bound to its route like every token).
type vertexCursor struct {
	H int64 `json:"h"`
}

// listVertices answers listLatestXChainVertices and, with byHeight,
// getVertexByHeight: the parameters are checked as the document says, and
// the list is empty.
func (h *handlers) listVertices(byHeight bool) api.Handler {
	return func(r *http.Request) (any, error) {
		q, err := h.xChain(r, "vertices")
		if err != nil {
			return nil, err
		}
		q.p.PageSize(defaultPageSize, 1, maxPageSize)
		if byHeight {
			if !q.p.Has("vertexHeight") {
				q.p.Fail("vertexHeight is required")
			} else {
				q.p.OptInt("vertexHeight", 0)
			}
			sortOrder(q.p, "desc")
		}
		var cur vertexCursor
		if _, err := h.decodeCursor(q, routeVertices, &cur); err != nil {
			return nil, err
		}
		if err := q.p.Err(); err != nil {
			return nil, err
		}
		if err := h.checkChain(r.Context(), "X"); err != nil {
			return nil, err
		}
		return ListVerticesResponse{Vertices: []Vertex{}, ChainInfo: ChainInfo{ChainName: "x-chain", Network: q.network}}, nil
	}
}

// getVertexByHash answers getVertexByHash: no vertex is indexed, so a
// well-formed hash is a 404.
func (h *handlers) getVertexByHash(r *http.Request) (any, error) {
	q, err := h.xChain(r, "vertices")
	if err != nil {
		return nil, err
	}
	hash := r.PathValue("vertexHash")
	if _, err := api.ParseCB58ID(hash); err != nil {
		return nil, api.BadRequest("vertexHash: " + err.Error())
	}
	if err := h.checkChain(r.Context(), "X"); err != nil {
		return nil, err
	}
	return nil, api.NotFound("vertexHash: %s is not a vertex of the X-chain of network %s (the X-chain is linear: its history since the linearization is in blocks)", hash, q.network)
}
