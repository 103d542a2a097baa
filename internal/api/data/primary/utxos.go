package primary

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/ava-labs/avalanchego/utils/formatting/address"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// ListPChainUtxosResponse is the P-chain branch of getUtxosByAddresses.
type ListPChainUtxosResponse struct {
	NextPageToken string       `json:"nextPageToken,omitempty"`
	Utxos         []PChainUtxo `json:"utxos"`
	ChainInfo     ChainInfo    `json:"chainInfo"`
}

// ListUtxosResponse is the X-chain (and C-chain atomic) branch.
type ListUtxosResponse struct {
	NextPageToken string    `json:"nextPageToken,omitempty"`
	Utxos         []Utxo    `json:"utxos"`
	ChainInfo     ChainInfo `json:"chainInfo"`
}

// utxoCursor is the last UTXO of a page: by (created time or padded
// amount, utxo id) in the requested direction.
type utxoCursor struct {
	T  int64  `json:"t,omitempty"`
	A  string `json:"a,omitempty"`
	ID string `json:"id"`
}

// requiredAddresses reads the required addresses parameter; prefixes names
// the chain prefixes the route accepts, for the error.
func (h *handlers) requiredAddresses(p *api.Params, prefixes string) []string {
	addrs := h.addressesParam(p, "addresses")
	if strings.Trim(p.String("addresses"), ", ") == "" {
		p.Fail("addresses is required: a comma-separated list of %s addresses (optionally prefixed with %s)", h.d.Network.HRP, prefixes)
	}
	return addrs
}

// addressesParam reads a comma list of primary-network addresses of this
// network, each optionally with a chain prefix (P-, X-, C-), and returns
// them in their stored form: bech32 without prefix, lower case, deduplicated.
func (h *handlers) addressesParam(p *api.Params, name string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range p.List(name) {
		_, short, err := api.ParseBech32Address(h.d.Network.HRP, s)
		if err != nil {
			p.Fail("%s: %v", name, err)
			continue
		}
		a, err := address.FormatBech32(h.d.Network.HRP, short.Bytes())
		if err != nil {
			p.Fail("%s: %q is not an address", name, s)
			continue
		}
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

var decimalRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]{1,2})?$`)

// minAmountParam reads minUtxoAmount: a number >= 0 in the smallest unit,
// inclusive. A fraction rounds up (amounts are integers). over is true
// when it exceeds every possible amount.
func minAmountParam(p *api.Params) (min uint64, over bool) {
	s := p.String("minUtxoAmount")
	if s == "" {
		return 0, false
	}
	if len(s) > 0 && s[0] == '-' {
		p.Fail("minUtxoAmount must be >= 0, got %q", short(s))
		return 0, false
	}
	if len(s) > 64 || !decimalRE.MatchString(s) {
		p.Fail("minUtxoAmount must be a number >= 0 (in the smallest unit), got %q", short(s))
		return 0, false
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		p.Fail("minUtxoAmount must be a number >= 0 (in the smallest unit), got %q", short(s))
		return 0, false
	}
	// ceil(r)
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if new(big.Rat).SetInt(n).Cmp(r) < 0 {
		n.Add(n, big.NewInt(1))
	}
	if !n.IsUint64() {
		return math.MaxUint64, true
	}
	return n.Uint64(), false
}

func (h *handlers) listUTXOs(r *http.Request) (any, error) {
	return h.listUTXOsOf(r, maxPageSize)
}

// listUTXOsOf answers getUtxosByAddresses (and, with the body's addresses
// in the query, its POST variant, whose pages go up to 1024).
func (h *handlers) listUTXOsOf(r *http.Request, maxSize int) (any, error) {
	q, err := h.begin(r, true)
	if err != nil {
		return nil, err
	}
	p := q.p
	addrs := h.requiredAddresses(p, "P- or X-")
	size := p.PageSize(defaultPageSize, 1, maxSize)
	assetID := p.String("assetId")
	if assetID != "" {
		if q.chain.Key != "X" {
			p.Fail("assetId applies to the X-chain only (this is the %s)", chainName(q.chain.Key))
		} else if _, err := api.ParseCB58ID(assetID); err != nil {
			p.Fail("assetId: %v", err)
		}
	}
	minAmt, over := minAmountParam(p)
	includeSpent := p.Bool("includeSpent", false)
	sortBy := p.Enum("sortBy", "timestamp", "timestamp", "amount")
	order := sortOrder(p, "asc")
	var cur utxoCursor
	has, err := h.decodeCursor(q, routeUTXOs, &cur)
	if err != nil {
		return nil, err
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	if err := h.checkChain(ctx, q.chain.Key); err != nil {
		return nil, err
	}
	info := ChainInfo{ChainName: chainName(q.chain.Key), Network: q.network}

	var rows []*utxoRow
	var next string
	if !over && len(addrs) > 0 {
		f := utxoFilter{chain: q.chain.Key, addrs: addrs, includeSpent: includeSpent, minAmount: minAmt, assetID: assetID,
			byAmount: sortBy == "amount", desc: order == "desc", limit: size + 1}
		if has {
			f.after = &cur
		}
		var keys []utxoCursor
		if rows, keys, err = f.page(ctx, h.d.DB); err != nil {
			return nil, err
		}
		if len(rows) > size {
			rows, next = rows[:size], h.encodeCursor(q, routeUTXOs, keys[size-1])
		}
	}
	s, err := h.prepare(ctx, newAssets(h.d.DB), rows)
	if err != nil {
		return nil, err
	}
	if q.chain.Key == "P" {
		out := ListPChainUtxosResponse{NextPageToken: next, Utxos: make([]PChainUtxo, 0, len(rows)), ChainInfo: info}
		for _, u := range rows {
			out.Utxos = append(out.Utxos, s.pUTXO(u))
		}
		return out, nil
	}
	out := ListUtxosResponse{NextPageToken: next, Utxos: make([]Utxo, 0, len(rows)), ChainInfo: info}
	for _, u := range rows {
		out.Utxos = append(out.Utxos, s.utxo(u))
	}
	return out, nil
}

// utxoFilter is one page of a UTXO listing.
type utxoFilter struct {
	chain        string
	addrs        []string
	includeSpent bool
	minAmount    uint64
	assetID      string
	byAmount     bool
	desc         bool
	after        *utxoCursor
	limit        int
}

// page reads the page's UTXOs and their cursors in one statement: the keys
// of sql(), then the utxos row of each (one round trip and one plan instead
// of a key query and an IN list of up to 101 ids).
func (f utxoFilter) page(ctx context.Context, db *store.DB) ([]*utxoRow, []utxoCursor, error) {
	keys, args := f.sql()
	dir := "ASC"
	if f.desc {
		dir = "DESC"
	}
	rs, err := db.QueryContext(ctx, `SELECT p.k, p.id, `+utxoColumns+` FROM (`+keys+`) AS p
		JOIN utxos u ON u.utxo_id = p.id ORDER BY p.k `+dir+`, p.id `+dir, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("list utxos: %w", err)
	}
	defer rs.Close()
	var (
		rows []*utxoRow
		curs []utxoCursor
	)
	for rs.Next() {
		var c utxoCursor
		var k any = &c.T
		if f.byAmount {
			k = &c.A
		}
		u, err := scanUTXO(prefixed{rs, []any{k, &c.ID}})
		if err != nil {
			return nil, nil, fmt.Errorf("list utxos: %w", err)
		}
		rows, curs = append(rows, u), append(curs, c)
	}
	if err := rs.Err(); err != nil {
		return nil, nil, fmt.Errorf("list utxos: %w", err)
	}
	return rows, curs, nil
}

// prefixed scans leading columns into its own destinations, then the rest
// into the caller's.
type prefixed struct {
	rows  scanner
	first []any
}

func (p prefixed) Scan(dest ...any) error { return p.rows.Scan(append(p.first, dest...)...) }

// sql selects the page's (sort key, utxo id) pairs. Per address it walks
// one index of utxo_addresses in order (0002: unspent by time or amount;
// 0006: all by time or amount; 0015: the same within one X-chain asset),
// and the keyset condition is a row-value comparison, which both backends
// run as an index range. Several addresses are one such walk each, limited
// to the page, merged: a single walk over "address IN (...)" would sort
// every UTXO of every address first.
func (f utxoFilter) sql() (string, []any) {
	if len(f.addrs) == 1 {
		return f.walk(f.addrs[0], nil, f.limit)
	}
	var walks []string
	var args []any
	for _, a := range f.addrs {
		var q string
		q, args = f.walk(a, args, f.limit)
		walks = append(walks, q)
	}
	return mergeWalks(walks, f.desc, f.limit), args
}

// mergeWalks merges per-address pages of (k, id) rows, each already in the
// page's order and cut at limit, into the page: the first limit distinct
// rows of their union. One address owns a UTXO once; several may share one
// (multisig), hence DISTINCT.
func mergeWalks(walks []string, desc bool, limit int) string {
	parts := make([]string, len(walks))
	for i, w := range walks {
		parts[i] = `SELECT * FROM (` + w + `) AS a` + strconv.Itoa(i)
	}
	dir := "ASC"
	if desc {
		dir = "DESC"
	}
	return `SELECT DISTINCT k, id FROM (` + strings.Join(parts, ` UNION ALL `) + `) AS m ORDER BY k ` + dir +
		`, id ` + dir + ` LIMIT ` + strconv.Itoa(limit)
}

// walk is the page of one address, numbering its parameters after args.
func (f utxoFilter) walk(addr string, args []any, limit int) (string, []any) {
	key := "ua.created_time"
	if f.byAmount {
		key = "ua.amount"
	}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	var where string
	if f.assetID != "" && f.chain == "X" {
		// 0015's indexes are partial (chain_key = 'X'): SQLite and
		// PostgreSQL's generic plans use them only when the query itself
		// says so, not through a parameter.
		where = `ua.chain_key = 'X' AND ua.address = ` + arg(addr) + ` AND ua.asset_id = ` + arg(f.assetID)
	} else {
		where = `ua.chain_key = ` + arg(f.chain) + ` AND ua.address = ` + arg(addr)
		if f.assetID != "" {
			where += ` AND ua.asset_id = ` + arg(f.assetID)
		}
	}
	if !f.includeSpent {
		// A literal: the unspent orders are partial (0175), which the
		// planners use only when the query itself implies their WHERE.
		where += ` AND ua.spent = FALSE`
	}
	if f.minAmount > 0 {
		where += ` AND ua.amount >= ` + arg(pad(f.minAmount))
	}
	cmp, dir := ">", "ASC"
	if f.desc {
		cmp, dir = "<", "DESC"
	}
	if f.after != nil {
		var k any = f.after.T
		if f.byAmount {
			k = f.after.A
		}
		where += fmt.Sprintf(` AND (%s, ua.utxo_id) %s (%s, %s)`, key, cmp, arg(k), arg(f.after.ID))
	}
	return `SELECT ` + key + ` AS k, ua.utxo_id AS id FROM utxo_addresses ua WHERE ` + where +
		` ORDER BY ` + key + ` ` + dir + `, ua.utxo_id ` + dir + ` LIMIT ` + strconv.Itoa(limit), args
}
