package primary

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// Block is the OpenAPI PrimaryNetworkBlock.
type Block struct {
	BlockNumber             string           `json:"blockNumber"`
	BlockHash               string           `json:"blockHash"`
	ParentHash              string           `json:"parentHash"`
	BlockTimestamp          int64            `json:"blockTimestamp"`
	BlockType               string           `json:"blockType"`
	TxCount                 int64            `json:"txCount"`
	Transactions            []string         `json:"transactions"`
	BlockSizeBytes          int64            `json:"blockSizeBytes"`
	L1ValidatorsAccruedFees *int64           `json:"l1ValidatorsAccruedFees,omitempty"`
	ActiveL1Validators      *int64           `json:"activeL1Validators,omitempty"`
	CurrentSupply           string           `json:"currentSupply,omitempty"`
	ProposerDetails         *ProposerDetails `json:"proposerDetails,omitempty"`
}

// ProposerDetails is the proposervm wrapper of a block, when the index has it.
type ProposerDetails struct {
	ProposerID           string `json:"proposerId,omitempty"`
	ProposerParentID     string `json:"proposerParentId,omitempty"`
	ProposerNodeID       string `json:"proposerNodeId,omitempty"`
	ProposerPChainHeight int64  `json:"proposerPChainHeight"`
	ProposerTimestamp    int64  `json:"proposerTimestamp"`
}

// ListBlocksResponse is ListPrimaryNetworkBlocksResponse.
type ListBlocksResponse struct {
	NextPageToken string    `json:"nextPageToken,omitempty"`
	Blocks        []Block   `json:"blocks"`
	ChainInfo     ChainInfo `json:"chainInfo"`
}

// blockCursor is the last block of a page: newest first by (timestamp, height).
type blockCursor struct {
	T int64 `json:"t"`
	H int64 `json:"h"`
}

// timeRange reads startTimestamp and endTimestamp (inclusive, >= 0; start
// not after end). Absent ends are open.
func timeRange(p *api.Params) (lo, hi int64) {
	lo, hi = 0, math.MaxInt64
	s, okS := p.OptInt("startTimestamp", 0)
	e, okE := p.OptInt("endTimestamp", 0)
	if okS {
		lo = s
	}
	if okE {
		hi = e
	}
	if okS && okE && s > e {
		p.Fail("startTimestamp (%d) must not be after endTimestamp (%d)", s, e)
	}
	return lo, hi
}

func (h *handlers) listBlocks(r *http.Request) (any, error) {
	return h.blocks(r, routeBlocks, "")
}

// listBlocksByNodeID answers listPrimaryNetworkBlocksByNodeId: the blocks
// the node proposed (proposerDetails, from the node's index API), newest
// first. A node that proposed none, or blocks indexed without proposer
// details, give an empty list.
func (h *handlers) listBlocksByNodeID(r *http.Request) (any, error) {
	nodeID := r.PathValue("nodeId")
	if _, err := api.ParseNodeID(nodeID); err != nil {
		return nil, api.BadRequest("nodeId: " + err.Error())
	}
	return h.blocks(r, routeNodeBlocks, nodeID)
}

// blocks lists the P or X blocks of the request, newest first; when nodeID
// is set only those it proposed.
func (h *handlers) blocks(r *http.Request, route, nodeID string) (any, error) {
	q, err := h.pxChain(r)
	if err != nil {
		return nil, err
	}
	size := q.p.PageSize(defaultPageSize, 1, maxPageSize)
	lo, hi := timeRange(q.p)
	var cur blockCursor
	has, err := h.decodeCursor(q, route, &cur)
	if err != nil {
		return nil, err
	}
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	if err := h.checkChain(ctx, q.chain.Key); err != nil {
		return nil, err
	}
	args := []any{q.chain.Key, lo}
	where := `chain_key = $1 AND timestamp >= $2`
	if has {
		// The cursor (at most hi) bounds later pages: see listAssetTransactions.
		where += ` AND (timestamp, height) < ($3, $4)`
		args = append(args, cur.T, cur.H)
	} else {
		where += ` AND timestamp <= $3`
		args = append(args, hi)
	}
	if nodeID != "" {
		args = append(args, nodeID)
		where += ` AND proposer_node_id = $` + strconv.Itoa(len(args))
	}
	rows, err := h.d.DB.QueryContext(ctx, `SELECT `+blockColumns+`
		FROM px_blocks WHERE `+where+` ORDER BY timestamp DESC, height DESC LIMIT `+strconv.Itoa(size+1), args...)
	if err != nil {
		return nil, fmt.Errorf("list blocks: %w", err)
	}
	defer rows.Close()
	out := ListBlocksResponse{Blocks: []Block{}, ChainInfo: ChainInfo{ChainName: chainName(q.chain.Key), Network: q.network}}
	for rows.Next() {
		b, err := scanBlock(rows, q.chain.Key)
		if err != nil {
			return nil, err
		}
		if len(out.Blocks) == size {
			last := out.Blocks[size-1]
			out.NextPageToken = h.encodeCursor(q, route, blockCursor{T: last.BlockTimestamp, H: mustInt(last.BlockNumber)})
			break
		}
		out.Blocks = append(out.Blocks, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list blocks: %w", err)
	}
	return out, nil
}

// blockColumns are the px_blocks columns scanBlock reads, in its order.
const blockColumns = `height, block_id, parent_id, timestamp, block_type, tx_count, tx_ids,
		size_bytes, proposer_id, proposer_parent_id, proposer_node_id, proposer_p_height, proposer_timestamp,
		current_supply, l1_validators_accrued_fees, active_l1_validators`

// scanBlock reads one px_blocks row (blockColumns) of chain P or X.
func scanBlock(rows interface{ Scan(...any) error }, chainKey string) (Block, error) {
	var (
		b                      Block
		height                 int64
		txIDs, supply          string
		pid, ppid, pnode       string
		pheight, ptime, accrue int64
		active                 int64
	)
	if err := rows.Scan(&height, &b.BlockHash, &b.ParentHash, &b.BlockTimestamp, &b.BlockType, &b.TxCount, &txIDs,
		&b.BlockSizeBytes, &pid, &ppid, &pnode, &pheight, &ptime, &supply, &accrue, &active); err != nil {
		return Block{}, fmt.Errorf("read block: %w", err)
	}
	b.BlockNumber = strconv.FormatInt(height, 10)
	if err := json.Unmarshal([]byte(txIDs), &b.Transactions); err != nil {
		return Block{}, fmt.Errorf("block %d tx ids: %w", height, err)
	}
	if b.Transactions == nil {
		b.Transactions = []string{}
	}
	if chainKey == "P" {
		b.L1ValidatorsAccruedFees, b.ActiveL1Validators = &accrue, &active
		if supply != "" {
			b.CurrentSupply = unpad(supply)
		}
	}
	if pid != "" {
		b.ProposerDetails = &ProposerDetails{ProposerID: pid, ProposerParentID: ppid, ProposerNodeID: pnode,
			ProposerPChainHeight: pheight, ProposerTimestamp: ptime}
	}
	return b, nil
}

// pxChain resolves the request's chain and requires the P- or X-chain
// (blocks of the C-chain are EVM blocks).
func (h *handlers) pxChain(r *http.Request) (*request, error) {
	q, err := h.begin(r, true)
	if err != nil {
		return nil, err
	}
	if q.chain.Key != "P" && q.chain.Key != "X" {
		return nil, api.BadRequest(fmt.Sprintf("blockchainId: blocks are listed for the P-chain and the X-chain; %s is the C-chain, an EVM chain (its blocks are EVM blocks)", short(r.PathValue("blockchainId"))))
	}
	return q, nil
}

// getBlockByID answers getBlockById: a P or X block by height or by ID.
func (h *handlers) getBlockByID(r *http.Request) (any, error) {
	q, err := h.pxChain(r)
	if err != nil {
		return nil, err
	}
	id := r.PathValue("blockId")
	where, arg := "", any(nil)
	if n, err := strconv.ParseUint(id, 10, 63); err == nil {
		where, arg = "height = $2", int64(n)
	} else if _, err := api.ParseCB58ID(id); err == nil {
		where, arg = "block_id = $2", id
	} else {
		return nil, api.BadRequest(fmt.Sprintf("blockId must be a block height (a decimal integer) or a block id (cb58), got %q", short(id)))
	}
	ctx := r.Context()
	if err := h.checkChain(ctx, q.chain.Key); err != nil {
		return nil, err
	}
	b, err := scanBlock(h.d.DB.QueryRowContext(ctx, `SELECT `+blockColumns+` FROM px_blocks WHERE chain_key = $1 AND `+where,
		q.chain.Key, arg), q.chain.Key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, api.NotFound("blockId: %s is not a block of the %s of network %s", short(id), chainTitle(q.chain.Key), q.network)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// chainTitle names a primary-network chain in messages.
func chainTitle(key string) string {
	return key + "-chain"
}

// mustInt reads a decimal this package formatted.
func mustInt(s string) int64 {
	v, _ := strconv.ParseInt(s, 10, 64)
	return v
}
