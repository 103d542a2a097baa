package primary

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
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

func (h *handlers) listRewards(r *http.Request) (any, error) {
	q, err := h.begin(r, false)
	if err != nil {
		return nil, err
	}
	p := q.p
	addrs := h.addressesParam(p, "addresses")
	nodes := nodeIDsParam(p, "nodeIds")
	if strings.Trim(p.String("addresses"), ", ") == "" && strings.Trim(p.String("nodeIds"), ", ") == "" {
		p.Fail("at least one of addresses or nodeIds is required")
	}
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

	var args []any
	from := `utxos u`
	where := `u.reward_type <> '' AND u.created_chain = 'P'`
	// Rows per reward: one per listed address owning it (adjacent, skipped below).
	fanout := 1
	if len(addrs) > 0 {
		// From the addresses' UTXOs to the small partial index of reward
		// UTXOs (0014): probing utxos itself for each UTXO of a busy address
		// took seconds.
		from = `utxo_addresses ua JOIN utxos u`
		if h.d.DB.Dialect() == store.SQLite {
			from += ` INDEXED BY utxos_rewards_id` // SQLite would pick the primary key
		}
		from += ` ON u.utxo_id = ua.utxo_id`
		where += ` AND ua.chain_key = 'P' AND ua.address IN (` + placeholders(len(args)+1, len(addrs)) + `)`
		for _, a := range addrs {
			args = append(args, a)
		}
		fanout = len(addrs)
	}
	if len(nodes) > 0 {
		where += ` AND s.node_id IN (` + placeholders(len(args)+1, len(nodes)) + `)`
		for _, n := range nodes {
			args = append(args, n)
		}
	}
	cmp, dir := ">", "ASC"
	if order == "desc" {
		cmp, dir = "<", "DESC"
	}
	if has {
		args = append(args, cur.T, cur.ID)
		n := len(args)
		where += fmt.Sprintf(` AND (u.created_time, u.utxo_id) %s ($%d, $%d)`, cmp, n-1, n)
	}
	rows, err := h.d.DB.QueryContext(ctx, `SELECT u.utxo_id, u.created_time, u.output_index, u.asset_id, u.amount,
		u.addresses, u.reward_type, s.tx_id, s.stake_amount, s.node_id, s.start_time, s.end_time, s.removal_tx_id
		FROM `+from+` JOIN p_stakers s ON s.tx_id = u.tx_id WHERE `+where+`
		ORDER BY u.created_time `+dir+`, u.utxo_id `+dir+` LIMIT `+strconv.Itoa((size+1)*fanout), args...)
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
		if len(out.HistoricalRewards) > 0 && x.UtxoID == last.ID {
			continue // the same reward, owned by another listed address
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
