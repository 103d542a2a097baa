package primary

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/decode/xchain"
)

// TxTypes is the complete PrimaryNetworkTxType enumeration (txTypes filter).
var TxTypes = []string{
	"AddValidatorTx", "AddSubnetValidatorTx", "AddDelegatorTx", "CreateChainTx", "CreateSubnetTx", "ImportTx",
	"ExportTx", "AdvanceTimeTx", "RewardValidatorTx", "RemoveSubnetValidatorTx", "TransformSubnetTx",
	"AddPermissionlessValidatorTx", "AddPermissionlessDelegatorTx", "BaseTx", "TransferSubnetOwnershipTx",
	"ConvertSubnetToL1Tx", "RegisterL1ValidatorTx", "SetL1ValidatorWeightTx", "DisableL1ValidatorTx",
	"IncreaseL1ValidatorBalanceTx", "UNKNOWN", "CreateAssetTx", "OperationTx",
}

// XChainTx is the OpenAPI XChainLinearTransaction (a tx of a block, since
// the Cortina linearization) or XChainNonLinearTransaction (a tx of the DAG
// before it: in vertices, no block; chainFormat "non-linear").
type XChainTx struct {
	TxHash           string             `json:"txHash"`
	ChainFormat      string             `json:"chainFormat"`
	Timestamp        int64              `json:"timestamp"`
	TxType           string             `json:"txType"`
	Memo             string             `json:"memo"`
	ConsumedUtxos    []Utxo             `json:"consumedUtxos"`
	EmittedUtxos     []Utxo             `json:"emittedUtxos"`
	AmountUnlocked   []AssetAmount      `json:"amountUnlocked"`
	AmountCreated    []AssetAmount      `json:"amountCreated"`
	SourceChain      string             `json:"sourceChain,omitempty"`
	DestinationChain string             `json:"destinationChain,omitempty"`
	AssetCreated     *XChainAssetDetail `json:"assetCreated,omitempty"`
	// BlockHeight and BlockHash are left out of a DAG tx (nil).
	BlockHeight *int64  `json:"blockHeight,omitempty"`
	BlockHash   *string `json:"blockHash,omitempty"`
	// Vertices are the vertices holding a DAG tx (nil for a block's tx).
	Vertices []TxVertex `json:"vertices,omitempty"`
}

// TxVertex is TransactionVertexDetail: a vertex holding a DAG tx (spec 2.2
// `vertices`).
type TxVertex struct {
	Hash      string `json:"hash"`
	Height    int64  `json:"height"`
	Timestamp int64  `json:"timestamp"`
}

// XChainAssetDetail is XChainAssetDetails: the asset a CreateAssetTx made.
type XChainAssetDetail struct {
	AssetID            string `json:"assetId"`
	Name               string `json:"name"`
	Symbol             string `json:"symbol"`
	Denomination       int    `json:"denomination"`
	Type               string `json:"type"`
	CreatedAtTimestamp int64  `json:"createdAtTimestamp"`
	Cap                string `json:"cap"`
}

// ListAssetTxsResponse is ListXChainTransactionsResponse.
type ListAssetTxsResponse struct {
	NextPageToken string     `json:"nextPageToken,omitempty"`
	Transactions  []XChainTx `json:"transactions"`
	ChainInfo     ChainInfo  `json:"chainInfo"`
}

// txCursor is the last tx of a page: newest first by (timestamp, tx id).
type txCursor struct {
	T  int64  `json:"t"`
	ID string `json:"id"`
}

// txTypesParam reads txTypes (comma list or repeated), each in the enum.
func txTypesParam(p *api.Params) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range p.List("txTypes") {
		ok := false
		for _, v := range TxTypes {
			if t == v {
				ok = true
				break
			}
		}
		if !ok {
			p.Fail("txTypes: %q is not a PrimaryNetworkTxType (one of %s)", short(t), strings.Join(TxTypes, ", "))
			continue
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

func (h *handlers) listAssetTransactions(r *http.Request) (any, error) {
	q, err := h.begin(r, true)
	if err != nil {
		return nil, err
	}
	if q.chain.Key != "X" {
		return nil, api.BadRequest(fmt.Sprintf("blockchainId: asset transactions are listed for the X-chain (x-chain or %s), got %s",
			h.blockchainID("X"), short(r.PathValue("blockchainId"))))
	}
	assetID := r.PathValue("assetId")
	if _, err := api.ParseCB58ID(assetID); err != nil {
		q.p.Fail("assetId: %v", err)
	}
	types := txTypesParam(q.p)
	size := q.p.PageSize(defaultPageSize, 1, maxPageSize)
	lo, hi := timeRange(q.p)
	var cur txCursor
	has, err := h.decodeCursor(q, routeAssetTxs, &cur)
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
	as := newAssets(h.d.DB)
	var exists int
	err = h.d.DB.QueryRowContext(ctx, `SELECT 1 FROM assets WHERE asset_id = $1`, assetID).Scan(&exists)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, api.NotFound("assetId: %s is not an asset of the X-chain of network %s", assetID, q.network)
	}
	if err != nil {
		return nil, fmt.Errorf("find asset: %w", err)
	}

	args := []any{assetID, lo}
	from := `px_tx_assets a`
	where := `a.asset_id = $1 AND a.chain_key = 'X' AND a.timestamp >= $2`
	if has {
		// On later pages the cursor (at most hi: it comes from this query)
		// is the upper bound; with "timestamp <= hi" beside it SQLite
		// walked the index from hi down to the cursor.
		where += ` AND (a.timestamp, a.tx_id) < ($3, $4)`
		args = append(args, cur.T, cur.ID)
	} else {
		where += ` AND a.timestamp <= $3`
		args = append(args, hi)
	}
	if len(types) > 0 {
		from += ` JOIN px_txs t ON t.tx_id = a.tx_id`
		where += ` AND t.tx_type IN (` + placeholders(len(args)+1, len(types)) + `)`
		for _, t := range types {
			args = append(args, t)
		}
	}
	rows, err := h.d.DB.QueryContext(ctx, `SELECT a.timestamp, a.tx_id FROM `+from+` WHERE `+where+
		` ORDER BY a.timestamp DESC, a.tx_id DESC LIMIT `+strconv.Itoa(size+1), args...)
	if err != nil {
		return nil, fmt.Errorf("list asset txs: %w", err)
	}
	var page []txCursor
	for rows.Next() {
		var c txCursor
		if err := rows.Scan(&c.T, &c.ID); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list asset txs: %w", err)
		}
		page = append(page, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list asset txs: %w", err)
	}
	out := ListAssetTxsResponse{Transactions: []XChainTx{}, ChainInfo: ChainInfo{ChainName: "x-chain", Network: q.network}}
	if len(page) > size {
		page = page[:size]
		out.NextPageToken = h.encodeCursor(q, routeAssetTxs, page[size-1])
	}
	ids := make([]string, len(page))
	for i, c := range page {
		ids[i] = c.ID
	}
	txs, err := h.xTxs(ctx, as, ids)
	if err != nil {
		return nil, err
	}
	out.Transactions = txs
	return out, nil
}

// xTxs loads X-chain txs by id, in the order of ids, with their UTXOs.
func (h *handlers) xTxs(ctx context.Context, as *assets, ids []string) ([]XChainTx, error) {
	if len(ids) == 0 {
		return []XChainTx{}, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	in := placeholders(1, len(ids))
	rows, err := h.d.DB.QueryContext(ctx, `SELECT tx_id, height, block_id, timestamp, tx_type, memo, source_chain,
		destination_chain FROM px_txs WHERE tx_id IN (`+in+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("load txs: %w", err)
	}
	byID := map[string]*XChainTx{}
	genesis := false
	var dag []any
	for rows.Next() {
		var (
			t      XChainTx
			height int64
			block  string
		)
		if err := rows.Scan(&t.TxHash, &height, &block, &t.Timestamp, &t.TxType, &t.Memo, &t.SourceChain,
			&t.DestinationChain); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load txs: %w", err)
		}
		t.ChainFormat = "linear"
		switch {
		case height == xchain.DAGHeight:
			t.ChainFormat, t.Vertices = "non-linear", []TxVertex{}
			dag = append(dag, t.TxHash)
		case height < 0:
			genesis = true
		}
		if height != xchain.DAGHeight {
			t.BlockHeight, t.BlockHash = &height, &block
		}
		byID[t.TxHash] = &t
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load txs: %w", err)
	}
	if genesis {
		// Genesis txs are in no block: they are the state of the genesis
		// block (height 0).
		var gid string
		if err := h.d.DB.QueryRowContext(ctx, `SELECT block_id FROM px_blocks WHERE chain_key = 'X' AND height = 0`).Scan(&gid); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("genesis block: %w", err)
		}
		for _, t := range byID {
			if t.BlockHeight != nil && *t.BlockHeight < 0 {
				*t.BlockHeight, *t.BlockHash = 0, gid
			}
		}
	}
	if err := h.txVertices(ctx, byID, dag); err != nil {
		return nil, err
	}

	emitted, err := queryUTXOs(ctx, h.d.DB, `SELECT `+utxoColumns+` FROM utxos WHERE tx_id IN (`+in+`)
		AND created_chain = 'X' ORDER BY tx_id, output_index`, args...)
	if err != nil {
		return nil, err
	}
	consumed, err := queryUTXOs(ctx, h.d.DB, `SELECT `+utxoColumns+` FROM utxos WHERE consumed_tx IN (`+in+`)
		ORDER BY consumed_tx, consumed_input_index, utxo_id`, args...)
	if err != nil {
		return nil, err
	}
	created, err := assetsCreated(ctx, h, ids)
	if err != nil {
		return nil, err
	}
	all := append(append([]*utxoRow{}, emitted...), consumed...)
	var createdIDs []string
	for id := range created {
		createdIDs = append(createdIDs, id)
	}
	if err := as.load(ctx, createdIDs...); err != nil {
		return nil, err
	}
	s, err := h.prepare(ctx, as, all)
	if err != nil {
		return nil, err
	}
	for _, u := range emitted {
		if t := byID[u.TxID]; t != nil {
			t.EmittedUtxos = append(t.EmittedUtxos, s.utxo(u))
		}
	}
	for _, u := range consumed {
		if t := byID[u.ConsumedTx]; t != nil {
			t.ConsumedUtxos = append(t.ConsumedUtxos, s.utxo(u))
		}
	}
	out := make([]XChainTx, 0, len(ids))
	for _, id := range ids {
		t := byID[id]
		if t == nil {
			continue
		}
		if t.EmittedUtxos == nil {
			t.EmittedUtxos = []Utxo{}
		}
		if t.ConsumedUtxos == nil {
			t.ConsumedUtxos = []Utxo{}
		}
		t.AmountUnlocked = sumAmounts(t.ConsumedUtxos)
		t.AmountCreated = sumAmounts(t.EmittedUtxos)
		if a, ok := created[id]; ok {
			t.AssetCreated = a
		}
		out = append(out, *t)
	}
	return out, nil
}

// txVertices fills the vertices of the DAG txs ids (x_vertex_txs, written
// with each vertex), oldest vertex first.
func (h *handlers) txVertices(ctx context.Context, byID map[string]*XChainTx, ids []any) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := h.d.DB.QueryContext(ctx, `SELECT vt.tx_id, v.vertex_id, v.height, v.timestamp FROM x_vertex_txs vt
		JOIN x_vertices v ON v.vertex_id = vt.vertex_id WHERE vt.tx_id IN (`+placeholders(1, len(ids))+`)
		ORDER BY v.position`, ids...)
	if err != nil {
		return fmt.Errorf("load tx vertices: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			txID string
			v    TxVertex
		)
		if err := rows.Scan(&txID, &v.Hash, &v.Height, &v.Timestamp); err != nil {
			return fmt.Errorf("load tx vertices: %w", err)
		}
		if t := byID[txID]; t != nil {
			t.Vertices = append(t.Vertices, v)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load tx vertices: %w", err)
	}
	return nil
}

// assetsCreated returns the assets created by the given txs (CreateAssetTx:
// the asset id is the tx id).
func assetsCreated(ctx context.Context, h *handlers, ids []string) (map[string]*XChainAssetDetail, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := h.d.DB.QueryContext(ctx, `SELECT asset_id, name, symbol, denomination, asset_type, cap, created_time
		FROM assets WHERE created_tx IN (`+placeholders(1, len(ids))+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("load created assets: %w", err)
	}
	defer rows.Close()
	out := map[string]*XChainAssetDetail{}
	for rows.Next() {
		var a XChainAssetDetail
		if err := rows.Scan(&a.AssetID, &a.Name, &a.Symbol, &a.Denomination, &a.Type, &a.Cap, &a.CreatedAtTimestamp); err != nil {
			return nil, fmt.Errorf("load created assets: %w", err)
		}
		out[a.AssetID] = &a
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load created assets: %w", err)
	}
	return out, nil
}

// sumAmounts totals UTXO amounts per asset, in order of first appearance.
func sumAmounts(us []Utxo) []AssetAmount {
	out := []AssetAmount{}
	idx := map[string]int{}
	sums := []*big.Int{}
	for _, u := range us {
		v, ok := new(big.Int).SetString(u.Asset.Amount, 10)
		if !ok {
			v = new(big.Int)
		}
		i, seen := idx[u.Asset.AssetID]
		if !seen {
			i = len(out)
			idx[u.Asset.AssetID] = i
			out = append(out, u.Asset)
			sums = append(sums, new(big.Int))
		}
		sums[i].Add(sums[i], v)
	}
	for i := range out {
		out[i].Amount = sums[i].String()
	}
	return out
}
