package primary

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	avagenesis "github.com/ava-labs/avalanchego/genesis"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// SortByOptions is the SortByOption enumeration of listValidators.
var SortByOptions = []string{"blockIndex", "delegationCapacity", "timeRemaining", "delegationFee", "uptimePerformance"}

// capacitySQL is a current primary validator's delegation capacity at the
// tip, max(0, min(max stake, 5 x own stake) - own stake - current
// delegations), as avalanchego bounds a new delegation: the expression of
// the index p_validators_capacity (0186_validator_capacity.sql), with
// avalanchego's MaxValidatorStake of every network (3,000,000 AVAX) and its
// default --stake-max-validator-weight-factor (5). The current delegations are kept on the row by
// the P indexer (0113): the capacity does not depend on the time.
const capacitySQL = `(CASE WHEN (CASE WHEN CAST(weight AS BIGINT) > 600000000000000 THEN 3000000000000000 - CAST(weight AS BIGINT) ` +
	`ELSE 4 * CAST(weight AS BIGINT) END) - (cur_delegated_hi * 10000000000 + cur_delegated_lo) > 0 THEN ` +
	`(CASE WHEN CAST(weight AS BIGINT) > 600000000000000 THEN 3000000000000000 - CAST(weight AS BIGINT) ` +
	`ELSE 4 * CAST(weight AS BIGINT) END) - (cur_delegated_hi * 10000000000 + cur_delegated_lo) ELSE 0 END)`

// capacityStake is the maximum validator stake capacitySQL assumes.
const capacityStake = 3_000_000_000_000_000

// capacityWhere selects what takes delegations: current (and pending)
// primary-network validators. Literals: the index is partial.
const capacityWhere = `kind = 'VALIDATOR' AND removed_height < 0 AND subnet_id = '11111111111111111111111111111111LpoYY'`

// maxDelegationCapacity is the document's bound of min/maxDelegationCapacity
// (720,000,000 AVAX in nAVAX, the supply cap).
const maxDelegationCapacity = 720_000_000_000_000_000

// nodeIDPartRE is what a nodeIds item may be: a node id or a substring of
// one (the document: "Supports substring matching").
var nodeIDPartRE = regexp.MustCompile(`^(NodeID-)?[1-9A-HJ-NP-Za-km-z]{1,40}$|^NodeID-?$`)

// sortCursor is the last record of a page under a sort key: K is the key's
// value (a decimal for numbers, so big and float keys round-trip), ID the
// tx id breaking ties.
type sortCursor struct {
	K  string `json:"k"`
	ID string `json:"id"`
}

// validatorQuery is listValidators' filters after parsing.
type validatorQuery struct {
	nodeParts          []string
	subnet             string
	status             string
	minCap, maxCap     *big.Int
	minLeft, maxLeft   *float64
	minFee, maxFee     *float64
	minUp, maxUp       *float64
	sortBy             string
	desc               bool
	tipTime            int64
	needCapacity, byUp bool
}

// optFloat reads a number parameter within [min, max] (nil when absent).
func optFloat(p *api.Params, name string, min, max float64) *float64 {
	s := p.String(name)
	if s == "" {
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < min || v > max {
		p.Fail("%s must be a number between %g and %g, got %q", name, min, max, short(s))
		return nil
	}
	return &v
}

// optCapacity reads a delegation capacity (nAVAX, 0 to 720,000,000 AVAX).
func optCapacity(p *api.Params, name string) *big.Int {
	s := p.String(name)
	if s == "" {
		return nil
	}
	v, ok := new(big.Int).SetString(s, 10)
	if !ok || v.Sign() < 0 || v.Cmp(big.NewInt(maxDelegationCapacity)) > 0 {
		p.Fail("%s must be an integer (nAVAX) between 0 and 720000000000000000, got %q", name, short(s))
		return nil
	}
	return v
}

func (h *handlers) listValidators(r *http.Request) (any, error) {
	q, err := h.begin(r, false)
	if err != nil {
		return nil, err
	}
	p := q.p
	var vq validatorQuery
	for _, s := range p.List("nodeIds") {
		if !nodeIDPartRE.MatchString(s) {
			p.Fail("nodeIds: %q is not a node id or part of one (NodeID- and base58 characters)", short(s))
			continue
		}
		vq.nodeParts = append(vq.nodeParts, s)
	}
	if s := p.String("subnetId"); s != "" {
		if _, err := api.ParseCB58ID(s); err != nil {
			p.Fail("subnetId: %v", err)
		}
		vq.subnet = s
	}
	size := p.PageSize(defaultPageSize, 1, maxPageSize)
	vq.status = p.Enum("validationStatus", "", ValidationStatuses...)
	vq.sortBy = p.Enum("sortBy", "blockIndex", SortByOptions...)
	vq.desc = sortOrder(p, "desc") == "desc"
	vq.minCap, vq.maxCap = optCapacity(p, "minDelegationCapacity"), optCapacity(p, "maxDelegationCapacity")
	vq.minLeft, vq.maxLeft = optFloat(p, "minTimeRemaining", 0, math.MaxInt32), optFloat(p, "maxTimeRemaining", 0, math.MaxInt32)
	vq.minFee, vq.maxFee = optFloat(p, "minFeePercentage", 2, 100), optFloat(p, "maxFeePercentage", 2, 100)
	vq.minUp, vq.maxUp = optFloat(p, "minUptimePerformance", 0, 100), optFloat(p, "maxUptimePerformance", 0, 100)
	var cur sortCursor
	has, tipTime, err := h.openStakingPage(q, routeValidatorList, &cur)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	vq.tipTime = tipTime
	vq.needCapacity = vq.minCap != nil || vq.maxCap != nil || vq.sortBy == "delegationCapacity"
	if m := avagenesis.GetStakingConfig(h.d.Network.ID).MaxValidatorStake; vq.needCapacity && m != capacityStake {
		return nil, fmt.Errorf("list validators: network %d's maximum validator stake %d is not capacitySQL's", h.d.Network.ID, m)
	}
	vq.byUp = vq.minUp != nil || vq.maxUp != nil || vq.sortBy == "uptimePerformance"

	if !vq.byUp {
		// Every key is a column or capacitySQL: the page is cut by the
		// database.
		return h.validatorPage(r, q, &vq, size, has, cur)
	}
	where, args := vq.sql()
	rows, err := h.stakerKeys(ctx, where, args...)
	if err != nil {
		return nil, err
	}
	// The candidates are validation records (thousands on mainnet, not
	// millions): keys that need the delegations or our node's view are
	// computed for each from the columns they need, then the page is cut by
	// keyset in memory and only its rows are read whole.
	var observed map[string]Observed
	if vq.byUp {
		observed = h.observed(r)
	}
	type keyed struct {
		s *stakerRow
		k *big.Rat
	}
	var all []keyed
	for _, s := range rows {
		var up *float64
		if vq.byUp {
			// Only an active validator our node measures has an uptime.
			if o, ok := observed[s.NodeID]; ok && statusOf(s, tipTime) == "active" {
				up = o.Uptime
			}
			if (vq.minUp != nil || vq.maxUp != nil) && (up == nil || (vq.minUp != nil && *up < *vq.minUp) || (vq.maxUp != nil && *up > *vq.maxUp)) {
				continue
			}
		}
		k := new(big.Rat)
		switch vq.sortBy {
		case "blockIndex":
			k.SetInt64(s.Start)
		case "timeRemaining":
			k.SetInt64(s.End) // the order of end - tip, fixed while the tip moves
		case "delegationFee":
			k.SetInt64(s.Shares)
		case "delegationCapacity":
			k.SetInt64(s.Capacity)
		case "uptimePerformance":
			if up != nil {
				k.SetFloat64(*up)
			} else {
				k.SetInt64(-1) // unmeasured: below every uptime
			}
		}
		all = append(all, keyed{s, k})
	}
	less := func(a, b keyed) bool {
		if c := a.k.Cmp(b.k); c != 0 {
			return c < 0
		}
		return a.s.TxID < b.s.TxID
	}
	sort.Slice(all, func(i, j int) bool {
		if vq.desc {
			return less(all[j], all[i])
		}
		return less(all[i], all[j])
	})
	if has {
		ck, ok := new(big.Rat).SetString(cur.K)
		if !ok {
			return nil, api.BadRequest("pageToken: malformed cursor")
		}
		c := keyed{&stakerRow{TxID: cur.ID}, ck}
		i := sort.Search(len(all), func(i int) bool {
			if vq.desc {
				return less(all[i], c)
			}
			return less(c, all[i])
		})
		all = all[i:]
	}
	out := ListValidatorsResponse{Validators: []any{}}
	if len(all) > size {
		all = all[:size]
		last := all[size-1]
		out.NextPageToken = h.encodeCursor(q, routeValidatorList, sortCursor{K: last.k.RatString(), ID: last.s.TxID})
	}
	ids := make([]string, len(all))
	for i, k := range all {
		ids[i] = k.s.TxID
	}
	page, err := h.stakersByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	if out.Validators, err = h.validatorRecords(r, page, tipTime); err != nil {
		return nil, err
	}
	return out, nil
}

// stakerKeys reads the candidate records of an in-memory sort: only what
// the status, capacity, uptime and sort keys need (a capacity sort reads
// every current primary-network validator).
func (h *handlers) stakerKeys(ctx context.Context, where string, args ...any) ([]*stakerRow, error) {
	rows, err := h.d.DB.QueryContext(ctx, `SELECT tx_id, kind, subnet_id, node_id, weight, start_time, end_time,
		delegation_shares, removed_height, removal, cur_delegated_hi, cur_delegated_lo, `+capacitySQL+`
		FROM p_stakers WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("list validators: %w", err)
	}
	defer rows.Close()
	var out []*stakerRow
	for rows.Next() {
		var s stakerRow
		var hi, lo int64
		if err := rows.Scan(&s.TxID, &s.Kind, &s.SubnetID, &s.NodeID, &s.Weight, &s.Start, &s.End, &s.Shares,
			&s.RemovedHeight, &s.Removal, &hi, &lo, &s.Capacity); err != nil {
			return nil, fmt.Errorf("list validators: %w", err)
		}
		s.Weight, s.CurDelegated = unpad(s.Weight), splitSum(hi, lo)
		out = append(out, &s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list validators: %w", err)
	}
	return out, nil
}

// stakersByID reads whole records of a page, in the order of ids.
func (h *handlers) stakersByID(ctx context.Context, ids []string) ([]*stakerRow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := h.stakers(ctx, `SELECT `+stakerColumns+` FROM p_stakers WHERE tx_id IN (`+placeholders(1, len(ids))+`)`, args...)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*stakerRow, len(rows))
	for _, s := range rows {
		byID[s.TxID] = s
	}
	out := make([]*stakerRow, 0, len(ids))
	for _, id := range ids {
		if s := byID[id]; s != nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// sql is the condition on p_stakers of the filters SQL can apply.
func (vq *validatorQuery) sql() (string, []any) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	where := []string{`kind <> 'DELEGATOR'`}
	if len(vq.nodeParts) > 0 {
		var ors []string
		for _, n := range vq.nodeParts {
			ors = append(ors, `node_id LIKE `+arg("%"+n+"%"))
		}
		where = append(where, `(`+strings.Join(ors, ` OR `)+`)`)
	}
	if vq.subnet != "" {
		where = append(where, `subnet_id = `+arg(vq.subnet))
	}
	switch vq.status {
	case "pending", "active":
		arg(vq.tipTime)
		where = append(where, statusSQL(vq.status, len(args)))
	case "completed", "removed":
		where = append(where, statusSQL(vq.status, 0))
	}
	if vq.minFee != nil || vq.maxFee != nil {
		// Subnet validations take no delegations and have no fee: they
		// never match a fee filter (the document's rule).
		where = append(where, `kind = 'VALIDATOR'`)
		if vq.minFee != nil {
			where = append(where, `delegation_shares >= `+arg(int64(math.Ceil(*vq.minFee*10000))))
		}
		if vq.maxFee != nil {
			where = append(where, `delegation_shares <= `+arg(int64(math.Floor(*vq.maxFee*10000))))
		}
	}
	if vq.needCapacity {
		// Only current and pending primary-network validators take
		// delegations: they are what capacity filters and sorts list.
		where = append(where, capacityWhere)
		if vq.minCap != nil {
			where = append(where, capacitySQL+` >= `+arg(vq.minCap.Int64()))
		}
		if vq.maxCap != nil {
			where = append(where, capacitySQL+` <= `+arg(vq.maxCap.Int64()))
		}
	}
	if vq.minLeft != nil || vq.maxLeft != nil {
		// Time remains only for a validation not yet ended.
		where = append(where, `removed_height < 0`)
		if vq.minLeft != nil {
			where = append(where, `end_time >= `+arg(vq.tipTime+int64(math.Ceil(*vq.minLeft))))
		}
		if vq.maxLeft != nil {
			where = append(where, `end_time <= `+arg(vq.tipTime+int64(math.Floor(*vq.maxLeft))))
		}
	}
	return strings.Join(where, ` AND `), args
}

// sortColumn is the p_stakers column of a sort key SQL can order by.
var sortColumn = map[string]string{"blockIndex": "start_time", "timeRemaining": "end_time", "delegationFee": "delegation_shares",
	"delegationCapacity": capacitySQL}

// validatorPageSQL selects size+1 validators matching where in col's
// order, after the cursor ($nargs-1: key, $nargs: tx id) when has; hint
// pins SQLite to the capacity expression's index (store.IndexedBy), which
// it does not choose without statistics.
func validatorPageSQL(d store.Dialect, where, col, hint string, desc, has bool, nargs, size int) string {
	cmp, dir := ">", "ASC"
	if desc {
		cmp, dir = "<", "DESC"
	}
	if has {
		where += fmt.Sprintf(` AND (%s, tx_id) %s ($%d, $%d)`, col, cmp, nargs-1, nargs)
	}
	order := ` ORDER BY ` + col + ` ` + dir + `, tx_id ` + dir
	walk := ` FROM p_stakers` + hint + ` WHERE ` + where + order + ` LIMIT ` + strconv.Itoa(size+1)
	if d == store.Postgres && col != capacitySQL {
		// The page's keys first, then its rows by id. p_validators_start,
		// _end and _fee hold the columns the filters test (node_id, which a
		// nodeIds part matches by LIKE '%part%', kind, status, fee), so an
		// index-only scan tests them on index entries. A plain index scan
		// tests its filter on each table row: a page of one node read
		// 15,000 rows, 43-73 ms at x5px, where this reads 500 index pages
		// (docs/benchmarks.md, "PostgreSQL at five million UTXOs"). SQLite
		// tests index columns before it reads the row: one walk, as the
		// capacity index (the expression, not the filters' columns) needs.
		return `SELECT ` + stakerColumns + ` FROM p_stakers WHERE tx_id IN (SELECT tx_id` + walk + `)` + order
	}
	return `SELECT ` + stakerColumns + walk
}

// validatorPage is listValidators when every filter and the sort key are
// columns: one keyset query of the page.
func (h *handlers) validatorPage(r *http.Request, q *request, vq *validatorQuery, size int, has bool, cur sortCursor) (any, error) {
	where, args := vq.sql()
	col := sortColumn[vq.sortBy]
	if has {
		k, err := strconv.ParseInt(cur.K, 10, 64)
		if err != nil {
			return nil, api.BadRequest("pageToken: malformed cursor")
		}
		// timeRemaining's key is end_time - tip (the tip moves between
		// pages; the end time does not).
		args = append(args, k, cur.ID)
	}
	hint := ""
	if col == capacitySQL {
		hint = h.d.DB.IndexedBy(r.Context(), "p_validators_capacity")
	}
	stakers, err := h.stakers(r.Context(), validatorPageSQL(h.d.DB.Dialect(), where, col, hint, vq.desc, has, len(args), size), args...)
	if err != nil {
		return nil, err
	}
	out := ListValidatorsResponse{Validators: []any{}}
	if len(stakers) > size {
		stakers = stakers[:size]
		last := stakers[size-1]
		k := map[string]int64{"start_time": last.Start, "end_time": last.End, "delegation_shares": last.Shares}[col]
		if col == capacitySQL {
			// The last row's key, by the index's own expression.
			if err := h.d.DB.QueryRowContext(r.Context(), `SELECT `+capacitySQL+` FROM p_stakers WHERE tx_id = $1`,
				last.TxID).Scan(&k); err != nil {
				return nil, fmt.Errorf("list validators: %w", err)
			}
		}
		out.NextPageToken = h.encodeCursor(q, routeValidatorList, sortCursor{K: strconv.FormatInt(k, 10), ID: last.TxID})
	}
	if out.Validators, err = h.validatorRecords(r, stakers, vq.tipTime); err != nil {
		return nil, err
	}
	return out, nil
}
