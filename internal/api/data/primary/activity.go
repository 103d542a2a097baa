package primary

import (
	"database/sql"
	"errors"
	"fmt"
	"net/http"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// LastActivity is the OpenAPI LastActivityTimestamp: the latest tx of the
// chain that touched one of the addresses, and a UTXO of theirs it created
// (else consumed).
type LastActivity struct {
	Timestamp   int64  `json:"timestamp"`
	BlockNumber string `json:"blockNumber"`
	TxHash      string `json:"txHash"`
	UtxoID      string `json:"utxoId"`
	IsConsumed  bool   `json:"isConsumed"`
	ChainName   string `json:"chainName"`
	Network     string `json:"network"`
}

// addressesBody is PrimaryNetworkAddressesBodyDto.
type addressesBody struct {
	Addresses *string `json:"addresses"`
}

// withBodyAddresses answers a POST variant as its GET: the body's
// addresses become the query's (so page tokens bind to them as well).
func withBodyAddresses(r *http.Request) (*http.Request, error) {
	var b addressesBody
	if err := api.DecodeJSONBody(r, &b); err != nil {
		return nil, err
	}
	if b.Addresses == nil {
		return nil, api.BadRequest("addresses is required in the body: a comma-separated list of addresses")
	}
	q := r.URL.Query()
	if q.Has("addresses") {
		return nil, api.BadRequest("addresses: give them in the body of a POST, not in the query")
	}
	q.Set("addresses", *b.Addresses)
	r2 := r.Clone(r.Context())
	u := *r.URL
	u.RawQuery = q.Encode()
	r2.URL = &u
	return r2, nil
}

func (h *handlers) lastActivityPost(r *http.Request) (any, error) {
	r2, err := withBodyAddresses(r)
	if err != nil {
		return nil, err
	}
	return h.lastActivity(r2)
}

func (h *handlers) listUTXOsPost(r *http.Request) (any, error) {
	r2, err := withBodyAddresses(r)
	if err != nil {
		return nil, err
	}
	return h.listUTXOsOf(r2, maxPostUTXOPageSize)
}

// maxPostUTXOPageSize is getUtxosByAddressesV2's bound (the GET's is 100).
const maxPostUTXOPageSize = 1024

func (h *handlers) lastActivity(r *http.Request) (any, error) {
	q, err := h.begin(r, true)
	if err != nil {
		return nil, err
	}
	p := q.p
	addrs := h.requiredAddresses(p, "P-, X- or C-")
	if err := p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	if err := h.checkChain(ctx, q.chain.Key); err != nil {
		return nil, err
	}
	// The latest tx of each address (px_tx_addresses in key order), then
	// the latest of those.
	f := txFilter{chain: q.chain.Key, addrs: addrs, lo: 0, hi: 1<<63 - 1, desc: true, limit: 1}
	query, args := f.sql()
	var t txCursor
	err = h.d.DB.QueryRowContext(ctx, query, args...).Scan(&t.T, &t.ID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, api.NotFound("addresses: no activity on the %s of network %s", chainName(q.chain.Key), q.network)
	}
	if err != nil {
		return nil, fmt.Errorf("last activity: %w", err)
	}
	// The schema's PrimaryNetworkType has mainnet and fuji only: a test
	// network (fuji, or a local one served as testnet) is "fuji".
	nt := "fuji"
	if h.d.Network.Name == "mainnet" {
		nt = "mainnet"
	}
	out := LastActivity{Timestamp: t.T, TxHash: t.ID, ChainName: chainName(q.chain.Key), Network: nt}
	var height int64
	if err := h.d.DB.QueryRowContext(ctx, `SELECT height FROM px_txs WHERE tx_id = $1`, t.ID).Scan(&height); err != nil {
		return nil, fmt.Errorf("last activity: %w", err)
	}
	out.BlockNumber = fmt.Sprint(max(height, 0))
	mine := map[string]bool{}
	for _, a := range addrs {
		mine[a] = true
	}
	owned := func(rows []*utxoRow) string {
		for _, u := range rows {
			for _, a := range u.Addresses {
				if mine[a] {
					return u.ID
				}
			}
		}
		return ""
	}
	created, err := queryUTXOs(ctx, h.d.DB, `SELECT `+utxoColumns+` FROM utxos WHERE tx_id = $1 AND created_chain = $2
		AND reward_type = '' ORDER BY output_index`, t.ID, q.chain.Key)
	if err != nil {
		return nil, err
	}
	if out.UtxoID = owned(created); out.UtxoID == "" {
		consumed, err := queryUTXOs(ctx, h.d.DB, `SELECT `+utxoColumns+` FROM utxos WHERE consumed_tx = $1
			ORDER BY consumed_input_index`, t.ID)
		if err != nil {
			return nil, err
		}
		out.UtxoID, out.IsConsumed = owned(consumed), true
		if out.UtxoID == "" {
			// Touched as an owner of something else (a staking reward
			// owner, a subnet owner): no UTXO of theirs moved.
			out.IsConsumed = false
		}
	}
	return out, nil
}
