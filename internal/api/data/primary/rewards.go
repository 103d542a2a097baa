package primary

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// Currencies is the CurrencyCode enumeration.
var Currencies = []string{"usd", "eur", "aud", "cad", "chf", "clp", "cny", "czk", "dkk", "gbp", "hkd", "huf", "jpy", "nzd"}

// HistoricalReward is the OpenAPI HistoricalReward: one reward UTXO paid
// to a staker. reward.historicalPrice is the asset's price on the day the
// reward was paid (Deps.Prices), left out when unknown (it is optional).
type HistoricalReward struct {
	Addresses      []string     `json:"addresses"`
	TxHash         string       `json:"txHash"`
	AmountStaked   string       `json:"amountStaked"`
	NodeID         string       `json:"nodeId"`
	StartTimestamp int64        `json:"startTimestamp"`
	EndTimestamp   int64        `json:"endTimestamp"`
	RewardType     string       `json:"rewardType"`
	UtxoID         string       `json:"utxoId"`
	OutputIndex    int64        `json:"outputIndex"`
	Reward         RewardAmount `json:"reward"`
	RewardTxHash   string       `json:"rewardTxHash"`
}

// RewardAmount is the OpenAPI AssetWithPriceInfo.
type RewardAmount struct {
	AssetAmount
	HistoricalPrice *Money `json:"historicalPrice,omitempty"`
}

// Money is the shared Money object (spec 2.1): a lowercase currency code
// and a decimal string value.
type Money struct {
	CurrencyCode string `json:"currencyCode"`
	Value        string `json:"value"`
}

// ListRewardsResponse is ListHistoricalRewardsResponse.
type ListRewardsResponse struct {
	NextPageToken     string             `json:"nextPageToken,omitempty"`
	HistoricalRewards []HistoricalReward `json:"historicalRewards"`
}

// rewardCursor is the last reward of a page, by (reward time, utxo id).
type rewardCursor struct {
	T  int64  `json:"t"`
	ID string `json:"id"`
}

// nodeIDsParam reads a comma list of node ids (NodeID-...), normalised.
func nodeIDsParam(p *api.Params, name string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range p.List(name) {
		id, err := api.ParseNodeID(s)
		if err != nil {
			p.Fail("%s: %v", name, err)
			continue
		}
		if v := id.String(); !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// rewardFilters reads the reward listings' addresses and nodeIds, at least
// one of which is required.
func (h *handlers) rewardFilters(p *api.Params) (addrs, nodes []string) {
	addrs = h.addressesParam(p, "addresses")
	nodes = nodeIDsParam(p, "nodeIds")
	if strings.Trim(p.String("addresses"), ", ") == "" && strings.Trim(p.String("nodeIds"), ", ") == "" {
		p.Fail("at least one of addresses or nodeIds is required")
	}
	return addrs, nodes
}

func (h *handlers) listRewards(r *http.Request) (any, error) {
	q, err := h.begin(r, false)
	if err != nil {
		return nil, err
	}
	p := q.p
	addrs, nodes := h.rewardFilters(p)
	size := p.PageSize(defaultPageSize, 1, maxPageSize)
	order := sortOrder(p, "desc")
	currency := p.Enum("currency", "usd", Currencies...)
	var cur rewardCursor
	has, err := h.decodeCursor(q, routeRewards, &cur)
	if err != nil {
		return nil, err
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	if err := h.checkChain(ctx, "P"); err != nil {
		return nil, err
	}
	out := ListRewardsResponse{HistoricalRewards: []HistoricalReward{}}

	f := rewardFilter{addrs: addrs, nodes: nodes, desc: order == "desc", limit: size + 1}
	if has {
		f.after = &cur
	}
	keys, args := f.sql()
	dir := "ASC"
	if f.desc {
		dir = "DESC"
	}
	// The page's keys first, then the rows of just those rewards.
	rows, err := h.d.DB.QueryContext(ctx, `SELECT u.utxo_id, u.created_time, u.output_index, u.asset_id, u.amount,
		u.addresses, u.reward_type, s.tx_id, s.stake_amount, s.node_id, s.start_time, s.end_time, s.removal_tx_id
		FROM (`+keys+`) AS p JOIN utxos u ON u.utxo_id = p.id JOIN p_stakers s ON s.tx_id = u.tx_id
		ORDER BY p.k `+dir+`, p.id `+dir, args...)
	if err != nil {
		return nil, fmt.Errorf("list rewards: %w", err)
	}
	defer rows.Close()
	var last rewardCursor
	var paidAt []int64 // reward times, for prices
	as := newAssets(h.d.DB)
	for rows.Next() {
		var (
			x             HistoricalReward
			t             int64
			asset, amount string
			addrJSON      string
			staked        string
		)
		if err := rows.Scan(&x.UtxoID, &t, &x.OutputIndex, &asset, &amount, &addrJSON, &x.RewardType, &x.TxHash, &staked,
			&x.NodeID, &x.StartTimestamp, &x.EndTimestamp, &x.RewardTxHash); err != nil {
			return nil, fmt.Errorf("list rewards: %w", err)
		}
		if len(out.HistoricalRewards) == size {
			out.NextPageToken = h.encodeCursor(q, routeRewards, last)
			break
		}
		if err := jsonStrings(addrJSON, &x.Addresses); err != nil {
			return nil, fmt.Errorf("reward %s: %w", x.UtxoID, err)
		}
		x.AmountStaked = unpad(staked)
		x.Reward = RewardAmount{AssetAmount: AssetAmount{AssetID: asset, Amount: unpad(amount)}}
		out.HistoricalRewards = append(out.HistoricalRewards, x)
		paidAt = append(paidAt, t)
		last = rewardCursor{T: t, ID: x.UtxoID}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list rewards: %w", err)
	}
	rows.Close()
	var ids []string
	for _, x := range out.HistoricalRewards {
		ids = append(ids, x.Reward.AssetID)
	}
	if err := as.load(ctx, ids...); err != nil {
		return nil, err
	}
	for i := range out.HistoricalRewards {
		x := &out.HistoricalRewards[i]
		x.Reward.AssetAmount = as.amount(x.Reward.AssetID, x.Reward.Amount)
		if h.d.Prices != nil {
			if v, ok := h.d.Prices.HistoricalPrice(ctx, x.Reward.AssetID, currency, time.Unix(paidAt[i], 0)); ok {
				x.Reward.HistoricalPrice = &Money{CurrencyCode: currency, Value: v}
			}
		}
	}
	return out, nil
}

// rewardFilter is one page of historical rewards: reward UTXOs paid on the
// P-chain for a staker tx in p_stakers, owned by one of addrs (if any) and
// for one of nodes (if any), by (reward time, utxo id).
type rewardFilter struct {
	addrs []string
	nodes []string
	desc  bool
	after *rewardCursor
	limit int
}

// sql selects the page's (reward time k, utxo id) pairs. With addresses it
// is, per address, one walk of its reward UTXOs in order in the partial
// index utxo_addresses_rewards (0015), limited to the page and merged as
// utxoFilter's walks are: a busy address's other UTXOs (100,000s) are never
// read. Without, the reward UTXOs in order (0006's utxos_rewards), filtered
// by node.
func (f rewardFilter) sql() (string, []any) {
	if len(f.addrs) == 0 {
		return f.walk("", nil)
	}
	if len(f.addrs) == 1 {
		return f.walk(f.addrs[0], nil)
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

// walk is the page of one address (or, with addr "", of all rewards),
// numbering its parameters after args. The conditions on reward_type and
// chain_key are literals: they imply the partial indexes' own, which the
// planners need to see in the query itself.
func (f rewardFilter) walk(addr string, args []any) (string, []any) {
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	var from, where, key, id string
	if addr == "" {
		from = `utxos u`
		where = `u.reward_type <> '' AND u.created_chain = 'P'`
		key, id = "u.created_time", "u.utxo_id"
	} else {
		from = `utxo_addresses ua JOIN utxos u ON u.utxo_id = ua.utxo_id`
		where = `ua.address = ` + arg(addr) + ` AND ua.chain_key = 'P' AND ua.reward_type <> '' AND u.created_chain = 'P'`
		key, id = "ua.created_time", "ua.utxo_id"
	}
	if len(f.nodes) > 0 {
		var ph []string
		for _, n := range f.nodes {
			ph = append(ph, arg(n))
		}
		where += ` AND s.node_id IN (` + strings.Join(ph, ",") + `)`
	}
	cmp, dir := ">", "ASC"
	if f.desc {
		cmp, dir = "<", "DESC"
	}
	if f.after != nil {
		where += fmt.Sprintf(` AND (%s, %s) %s (%s, %s)`, key, id, cmp, arg(f.after.T), arg(f.after.ID))
	}
	return `SELECT ` + key + ` AS k, ` + id + ` AS id FROM ` + from + ` JOIN p_stakers s ON s.tx_id = u.tx_id WHERE ` + where +
		` ORDER BY ` + key + ` ` + dir + `, ` + id + ` ` + dir + ` LIMIT ` + strconv.Itoa(f.limit), args
}
