package primary

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// ListPChainTxsResponse is ListPChainTransactionsResponse.
type ListPChainTxsResponse struct {
	NextPageToken string     `json:"nextPageToken,omitempty"`
	Transactions  []PChainTx `json:"transactions"`
	ChainInfo     ChainInfo  `json:"chainInfo"`
}

// ListCChainAtomicTxsResponse is ListCChainAtomicTransactionsResponse.
type ListCChainAtomicTxsResponse struct {
	NextPageToken string    `json:"nextPageToken,omitempty"`
	Transactions  []any     `json:"transactions"`
	ChainInfo     ChainInfo `json:"chainInfo"`
}

func (h *handlers) getTx(r *http.Request) (any, error) {
	q, err := h.begin(r, true)
	if err != nil {
		return nil, err
	}
	txHash := r.PathValue("txHash")
	if _, err := api.ParseCB58ID(txHash); err != nil {
		return nil, api.BadRequest(fmt.Sprintf("txHash: %v", err))
	}
	ctx := r.Context()
	if err := h.checkChain(ctx, q.chain.Key); err != nil {
		return nil, err
	}
	var chainKey string
	err = h.d.DB.QueryRowContext(ctx, `SELECT chain_key FROM px_txs WHERE tx_id = $1`, txHash).Scan(&chainKey)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && chainKey != q.chain.Key) {
		return nil, api.NotFound("txHash: %s is not a transaction of the %s of network %s", txHash, chainName(q.chain.Key), q.network)
	}
	if err != nil {
		return nil, fmt.Errorf("find tx: %w", err)
	}
	txs, err := h.renderTxs(ctx, q.chain.Key, []string{txHash})
	if err != nil {
		return nil, err
	}
	switch t := txs.(type) {
	case []PChainTx:
		if len(t) == 1 {
			return t[0], nil
		}
	case []XChainTx:
		if len(t) == 1 {
			return t[0], nil
		}
	case []any:
		if len(t) == 1 {
			return t[0], nil
		}
	}
	return nil, fmt.Errorf("tx %s vanished while rendered", txHash)
}

// renderTxs loads txs of one chain by id in order: []PChainTx, []XChainTx
// or (C) []any of CChainExportTx/CChainImportTx.
func (h *handlers) renderTxs(ctx context.Context, chainKey string, ids []string) (any, error) {
	as := newAssets(h.d.DB)
	switch chainKey {
	case "P":
		return h.pTxs(ctx, as, ids)
	case "X":
		return h.xTxs(ctx, as, ids)
	}
	return h.cTxs(ctx, as, ids)
}

// txFilter is one page of a chain's txs by (timestamp, tx id).
type txFilter struct {
	chain        string
	addrs        []string
	types        []string
	lo, hi       int64
	l1Validation string
	stakingOnly  bool // current or pending stakers (listStaking)
	desc         bool
	after        *txCursor
	limit        int
}

// sql selects the page's (k = timestamp, id) pairs. With addresses, one
// walk per address of px_tx_addresses in order (its primary key), merged
// as the UTXO listings merge theirs.
func (f txFilter) sql() (string, []any) {
	if f.stakingOnly {
		return f.stakingSQL()
	}
	if len(f.addrs) <= 1 {
		a := ""
		if len(f.addrs) == 1 {
			a = f.addrs[0]
		}
		return f.walk(a, nil)
	}
	var walks []string
	var args []any
	for _, a := range f.addrs {
		var q string
		q, args = f.walk(a, args)
		walks = append(walks, q)
	}
	return mergeWalks(walks, f.desc, f.limit), args
}

// stakingSQL pages the txs of the current and pending stakers by their
// acceptance time (p_stakers.added_time, the time of the block holding the
// tx: its timestamp), walking 0043's index; an address filter is a key
// lookup per staker tx.
func (f txFilter) stakingSQL() (string, []any) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	where := []string{`s.removed_height = -1`}
	if len(f.types) > 0 {
		var ph []string
		for _, t := range f.types {
			ph = append(ph, arg(t))
		}
		where = append(where, `s.tx_type IN (`+strings.Join(ph, ",")+`)`)
	}
	if len(f.addrs) > 0 {
		var ph []string
		for _, a := range f.addrs {
			ph = append(ph, arg(a))
		}
		where = append(where, `EXISTS (SELECT 1 FROM px_tx_addresses a WHERE a.address IN (`+strings.Join(ph, ",")+
			`) AND a.chain_key = 'P' AND a.timestamp = s.added_time AND a.tx_id = s.tx_id)`)
	}
	cmp, dir := ">", "ASC"
	if f.desc {
		cmp, dir = "<", "DESC"
	}
	where = append(where, `s.added_time >= `+arg(f.lo), `s.added_time <= `+arg(f.hi))
	if f.after != nil {
		where = append(where, fmt.Sprintf(`(s.added_time, s.tx_id) %s (%s, %s)`, cmp, arg(f.after.T), arg(f.after.ID)))
	}
	return `SELECT s.added_time AS k, s.tx_id AS id FROM p_stakers s WHERE ` + strings.Join(where, ` AND `) +
		` ORDER BY s.added_time ` + dir + `, s.tx_id ` + dir + ` LIMIT ` + strconv.Itoa(f.limit), args
}

func (f txFilter) walk(addr string, args []any) (string, []any) {
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	var from, key, id string
	var where []string
	if addr == "" {
		from, key, id = `px_txs t`, `t.timestamp`, `t.tx_id`
		where = append(where, `t.chain_key = `+arg(f.chain))
	} else {
		from, key, id = `px_tx_addresses a`, `a.timestamp`, `a.tx_id`
		where = append(where, `a.address = `+arg(addr), `a.chain_key = `+arg(f.chain))
		if len(f.types) > 0 {
			from += ` JOIN px_txs t ON t.tx_id = a.tx_id`
		}
	}
	if len(f.types) > 0 {
		var ph []string
		for _, t := range f.types {
			ph = append(ph, arg(t))
		}
		where = append(where, `t.tx_type IN (`+strings.Join(ph, ",")+`)`)
	}
	if f.l1Validation != "" {
		where = append(where, id+` IN (SELECT tx_id FROM p_l1_validator_history WHERE validation_id = `+arg(f.l1Validation)+`)`)
	}
	cmp, dir := ">", "ASC"
	if f.desc {
		cmp, dir = "<", "DESC"
	}
	where = append(where, key+` >= `+arg(f.lo), key+` <= `+arg(f.hi))
	if f.after != nil {
		where = append(where, fmt.Sprintf(`(%s, %s) %s (%s, %s)`, key, id, cmp, arg(f.after.T), arg(f.after.ID)))
	}
	return `SELECT ` + key + ` AS k, ` + id + ` AS id FROM ` + from + ` WHERE ` + strings.Join(where, ` AND `) +
		` ORDER BY ` + key + ` ` + dir + `, ` + id + ` ` + dir + ` LIMIT ` + strconv.Itoa(f.limit), args
}

func (h *handlers) listTxs(r *http.Request) (any, error) {
	return h.listTxsOf(r, false)
}

func (h *handlers) listStakingTxs(r *http.Request) (any, error) {
	return h.listTxsOf(r, true)
}

func (h *handlers) listTxsOf(r *http.Request, staking bool) (any, error) {
	q, err := h.begin(r, true)
	if err != nil {
		return nil, err
	}
	p := q.p
	if staking && q.chain.Key != "P" {
		return nil, api.BadRequest(fmt.Sprintf("blockchainId: staking transactions are on the P-chain (p-chain or %s), got %s",
			h.blockchainID("P"), short(r.PathValue("blockchainId"))))
	}
	route := routeTxs
	if staking {
		route = routeStakingTxs
	}
	f := txFilter{chain: q.chain.Key, stakingOnly: staking}
	f.addrs = h.addressesParam(p, "addresses")
	f.types = txTypesParam(p)
	if s := p.String("l1ValidationId"); s != "" && !staking {
		if q.chain.Key != "P" {
			p.Fail("l1ValidationId: L1 validations are on the P-chain")
		} else if id, err := api.ParseCB58ID(s); err != nil {
			p.Fail("l1ValidationId: %v", err)
		} else {
			f.l1Validation = id.String()
		}
	}
	size := p.PageSize(defaultPageSize, 1, maxPageSize)
	f.lo, f.hi = timeRange(p)
	f.desc = sortOrder(p, "desc") == "desc"
	f.limit = size + 1
	var cur txCursor
	has, err := h.decodeCursor(q, route, &cur)
	if err != nil {
		return nil, err
	}
	if has {
		f.after = &cur
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	if err := h.checkChain(ctx, q.chain.Key); err != nil {
		return nil, err
	}
	query, args := f.sql()
	rows, err := h.d.DB.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list txs: %w", err)
	}
	var page []txCursor
	for rows.Next() {
		var c txCursor
		if err := rows.Scan(&c.T, &c.ID); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list txs: %w", err)
		}
		page = append(page, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list txs: %w", err)
	}
	next := ""
	if len(page) > size {
		page = page[:size]
		next = h.encodeCursor(q, route, page[size-1])
	}
	ids := make([]string, len(page))
	for i, c := range page {
		ids[i] = c.ID
	}
	info := ChainInfo{ChainName: chainName(q.chain.Key), Network: q.network}
	txs, err := h.renderTxs(ctx, q.chain.Key, ids)
	if err != nil {
		return nil, err
	}
	switch t := txs.(type) {
	case []PChainTx:
		return ListPChainTxsResponse{NextPageToken: next, Transactions: t, ChainInfo: info}, nil
	case []XChainTx:
		return ListAssetTxsResponse{NextPageToken: next, Transactions: t, ChainInfo: info}, nil
	}
	return ListCChainAtomicTxsResponse{NextPageToken: next, Transactions: txs.([]any), ChainInfo: info}, nil
}
