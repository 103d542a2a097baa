package primary

import (
	"context"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// DelegationStatuses is the DelegationStatusType enumeration.
var DelegationStatuses = []string{"completed", "active", "pending"}

// Delegator is Completed/Active/PendingDelegatorDetails: the reward fields
// are grossReward/netReward once completed, estimated* before.
type Delegator struct {
	TxHash               string   `json:"txHash"`
	NodeID               string   `json:"nodeId"`
	RewardAddresses      []string `json:"rewardAddresses"`
	AmountDelegated      string   `json:"amountDelegated"`
	DelegationFee        string   `json:"delegationFee"`
	StartTimestamp       int64    `json:"startTimestamp"`
	EndTimestamp         int64    `json:"endTimestamp"`
	GrossReward          string   `json:"grossReward,omitempty"`
	NetReward            string   `json:"netReward,omitempty"`
	EstimatedGrossReward string   `json:"estimatedGrossReward,omitempty"`
	EstimatedNetReward   string   `json:"estimatedNetReward,omitempty"`
	DelegationStatus     string   `json:"delegationStatus"`
}

// ListDelegatorsResponse is ListDelegatorDetailsResponse.
type ListDelegatorsResponse struct {
	NextPageToken string      `json:"nextPageToken,omitempty"`
	Delegators    []Delegator `json:"delegators"`
}

// PendingReward is the OpenAPI PendingReward: the reward a current (or
// pending) primary-network staker gets if it is rewarded at its end: the
// potentialReward the node reports.
type PendingReward struct {
	Addresses       []string    `json:"addresses"`
	TxHash          string      `json:"txHash"`
	AmountStaked    string      `json:"amountStaked"`
	NodeID          string      `json:"nodeId"`
	StartTimestamp  int64       `json:"startTimestamp"`
	EndTimestamp    int64       `json:"endTimestamp"`
	RewardType      string      `json:"rewardType"`
	Progress        float64     `json:"progress"`
	EstimatedReward AssetAmount `json:"estimatedReward"`
}

// ListPendingRewardsResponse is ListPendingRewardsResponse.
type ListPendingRewardsResponse struct {
	NextPageToken  string          `json:"nextPageToken,omitempty"`
	PendingRewards []PendingReward `json:"pendingRewards"`
}

// delegatorRow is a delegator of p_stakers with its validator's fee.
type delegatorRow struct {
	TxID, NodeID, Owner, Asset string
	Amount, Potential, Reward  string
	Start, End, RemovedHeight  int64
	Removal                    string
	Kind                       string
	Shares                     int64
}

// stakerPage is one keyset page of stakers by (start time, tx id): those
// meeting where (conditions on p_stakers s) and, with owners, whose reward
// owner names one of them.
type stakerPage struct {
	where  []string
	args   []any
	owners []string
}

func (sp *stakerPage) arg(v any) string {
	sp.args = append(sp.args, v)
	return fmt.Sprintf("$%d", len(sp.args))
}

// sql is the page's query. Without owners, a walk of the stakers in order
// (p_stakers_start, or the node's index with nodeIds). With owners, one walk
// per address of p_staker_reward_owners in key order (0180), each limited to
// the page and merged as the UTXO listings merge theirs: the cost is the
// owner's stakes up to the page, not every staker's JSON matched with LIKE
// (docs/benchmarks.md "Reward owners").
func (sp *stakerPage) sql(has bool, cur validatorCursor, desc bool, limit int) string {
	cmp, dir := ">", "ASC"
	if desc {
		cmp, dir = "<", "DESC"
	}
	// page walks from in order of (k.start_time, k.tx_id). Parameters are
	// numbered in order of first use, as SQLite binds them: where's (the
	// walk's address last), then the cursor's, reused by later walks.
	var t, id string
	page := func(sel, from, k string, where []string) string {
		if has && t == "" {
			t, id = sp.arg(cur.T), sp.arg(cur.ID)
		}
		if has {
			where = append(where, fmt.Sprintf(`(%s.start_time, %s.tx_id) %s (%s, %s)`, k, k, cmp, t, id))
		}
		return `SELECT ` + sel + ` FROM ` + from + ` WHERE ` + strings.Join(where, ` AND `) +
			` ORDER BY ` + k + `.start_time ` + dir + `, ` + k + `.tx_id ` + dir + ` LIMIT ` + strconv.Itoa(limit)
	}
	const cols = `s.tx_id, s.node_id, s.kind, s.reward_owner, s.validation_reward_owner,
		s.stake_asset, s.stake_amount, s.potential_reward, s.reward_amount, s.start_time, s.end_time, s.removed_height,
		s.removal, COALESCE(v.delegation_shares, 0)`
	const validator = ` LEFT JOIN p_stakers v ON v.tx_id = s.validator_tx_id`
	if len(sp.owners) == 0 {
		return page(cols, `p_stakers s`+validator, `s`, sp.where)
	}
	var walks []string
	for _, a := range sp.owners {
		where := append(append([]string(nil), sp.where...), `o.address = `+sp.arg(a))
		walks = append(walks, page(`o.start_time AS k, o.tx_id AS id`,
			`p_staker_reward_owners o JOIN p_stakers s ON s.tx_id = o.tx_id`, `o`, where))
	}
	ids := walks[0]
	if len(walks) > 1 {
		ids = mergeWalks(walks, desc, limit)
	}
	return `SELECT ` + cols + ` FROM (` + ids + `) AS m JOIN p_stakers s ON s.tx_id = m.id` + validator +
		` ORDER BY m.k ` + dir + `, m.id ` + dir
}

// delegatorsPage is listDelegators' page: delegations with one of the
// reward owners and nodes (if any), of one status (if any).
func delegatorsPage(d store.Dialect, addrs, nodes []string, status string, tipTime int64) *stakerPage {
	// On SQLite kind and removed_height are written as expressions so that
	// no index is chosen for them: without statistics it read every
	// delegation through p_delegations_current and sorted them (28 ms p99 at
	// 22,586 delegations); the page is then a walk of the start-time index,
	// of the node's with nodeIds, or of the owners' (p_staker_reward_owners).
	// PostgreSQL plans these well from its statistics, and worse with the
	// expressions (15 → 54 ms p99).
	kind, removed := `s.kind`, `s.removed_height`
	if d == store.SQLite {
		kind, removed = `s.kind || ''`, `s.removed_height + 0`
	}
	sp := &stakerPage{where: []string{kind + ` = 'DELEGATOR'`}, owners: addrs}
	sp.nodes(nodes)
	switch status {
	case "completed":
		sp.where = append(sp.where, removed+` >= 0`)
	case "pending":
		sp.where = append(sp.where, removed+` < 0 AND s.start_time > `+sp.arg(tipTime))
	case "active":
		sp.where = append(sp.where, removed+` < 0 AND s.start_time <= `+sp.arg(tipTime))
	}
	return sp
}

// pendingRewardsPage is listPendingRewards' page: primary-network stakers
// not yet rewarded (permissioned subnet validators earn nothing), with one
// of the reward owners and nodes (if any).
func pendingRewardsPage(d store.Dialect, addrs, nodes []string) *stakerPage {
	kind, removed := `s.kind`, `s.removed_height`
	if d == store.SQLite && len(addrs) > 0 {
		// As in delegatorsPage: SQLite, without statistics, would walk
		// p_stakers_subnet_active instead of the owners' stakes.
		kind, removed = `s.kind || ''`, `s.removed_height + 0`
	}
	sp := &stakerPage{where: []string{kind + ` IN ('VALIDATOR', 'DELEGATOR') AND ` + removed + ` < 0`}, owners: addrs}
	sp.nodes(nodes)
	return sp
}

// nodes adds the condition "one of nodes" if there are any.
func (sp *stakerPage) nodes(nodes []string) {
	if len(nodes) == 0 {
		return
	}
	var ph []string
	for _, n := range nodes {
		ph = append(ph, sp.arg(n))
	}
	sp.where = append(sp.where, `s.node_id IN (`+strings.Join(ph, ",")+`)`)
}

func (h *handlers) delegatorRows(ctx context.Context, sp *stakerPage, has bool, cur validatorCursor, desc bool, limit int) ([]*delegatorRow, error) {
	rows, err := h.d.DB.QueryContext(ctx, sp.sql(has, cur, desc, limit), sp.args...)
	if err != nil {
		return nil, fmt.Errorf("list stakers: %w", err)
	}
	defer rows.Close()
	var out []*delegatorRow
	for rows.Next() {
		var d delegatorRow
		var valOwner string
		if err := rows.Scan(&d.TxID, &d.NodeID, &d.Kind, &d.Owner, &valOwner, &d.Asset, &d.Amount, &d.Potential,
			&d.Reward, &d.Start, &d.End, &d.RemovedHeight, &d.Removal, &d.Shares); err != nil {
			return nil, fmt.Errorf("list stakers: %w", err)
		}
		if d.Kind == "VALIDATOR" {
			d.Owner = valOwner
		}
		d.Amount, d.Potential, d.Reward = unpad(d.Amount), unpad(d.Potential), unpad(d.Reward)
		out = append(out, &d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list stakers: %w", err)
	}
	return out, nil
}

// feeText is a delegation fee in the node's format (shares are millionths:
// a percentage with four decimals).
func feeText(shares int64) string { return fmt.Sprintf("%d.%04d", shares/10000, shares%10000) }

func (h *handlers) listDelegators(r *http.Request) (any, error) {
	q, err := h.begin(r, false)
	if err != nil {
		return nil, err
	}
	p := q.p
	addrs := h.addressesParam(p, "rewardAddresses")
	nodes := nodeIDsParam(p, "nodeIds")
	size := p.PageSize(defaultPageSize, 1, maxPageSize)
	status := p.Enum("delegationStatus", "", DelegationStatuses...)
	desc := sortOrder(p, "desc") == "desc"
	var cur validatorCursor
	has, tipTime, err := h.openStakingPage(q, routeDelegators, &cur)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	sp := delegatorsPage(h.d.DB.Dialect(), addrs, nodes, status, tipTime)
	rows, err := h.delegatorRows(ctx, sp, has, cur, desc, size+1)
	if err != nil {
		return nil, err
	}
	out := ListDelegatorsResponse{Delegators: []Delegator{}}
	if len(rows) > size {
		rows = rows[:size]
		last := rows[size-1]
		out.NextPageToken = h.encodeCursor(q, routeDelegators, validatorCursor{T: last.Start, ID: last.TxID})
	}
	for _, d := range rows {
		x := Delegator{TxHash: d.TxID, NodeID: d.NodeID, AmountDelegated: d.Amount, DelegationFee: feeText(d.Shares),
			StartTimestamp: d.Start, EndTimestamp: d.End}
		if x.RewardAddresses, err = ownerAddresses(d.Owner); err != nil {
			return nil, err
		}
		if x.RewardAddresses == nil {
			x.RewardAddresses = []string{}
		}
		gross := decimal(d.Potential)
		net := new(big.Int).Sub(gross, delegateeShare(gross, d.Shares))
		switch {
		case d.RemovedHeight >= 0:
			x.DelegationStatus = "completed"
			// Paid only when its RewardValidatorTx committed: the
			// delegator got its part, the validator the rest.
			x.GrossReward, x.NetReward = "0", "0"
			if d.Removal == "REWARDED" {
				x.GrossReward, x.NetReward = gross.String(), d.Reward
			}
		case d.Start > tipTime:
			x.DelegationStatus = "pending"
			x.EstimatedGrossReward, x.EstimatedNetReward = gross.String(), net.String()
		default:
			x.DelegationStatus = "active"
			x.EstimatedGrossReward, x.EstimatedNetReward = gross.String(), net.String()
		}
		out.Delegators = append(out.Delegators, x)
	}
	return out, nil
}

func (h *handlers) listPendingRewards(r *http.Request) (any, error) {
	q, err := h.begin(r, false)
	if err != nil {
		return nil, err
	}
	p := q.p
	addrs, nodes := h.rewardFilters(p)
	size := p.PageSize(defaultPageSize, 1, maxPageSize)
	desc := sortOrder(p, "desc") == "desc"
	var cur validatorCursor
	has, tipTime, err := h.openStakingPage(q, routePendingRew, &cur)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	sp := pendingRewardsPage(h.d.DB.Dialect(), addrs, nodes)
	rows, err := h.delegatorRows(ctx, sp, has, cur, desc, size+1)
	if err != nil {
		return nil, err
	}
	out := ListPendingRewardsResponse{PendingRewards: []PendingReward{}}
	if len(rows) > size {
		rows = rows[:size]
		last := rows[size-1]
		out.NextPageToken = h.encodeCursor(q, routePendingRew, validatorCursor{T: last.Start, ID: last.TxID})
	}
	as := newAssets(h.d.DB)
	var assetIDs []string
	for _, d := range rows {
		assetIDs = append(assetIDs, d.Asset)
	}
	if err := as.load(ctx, assetIDs...); err != nil {
		return nil, err
	}
	for _, d := range rows {
		x := PendingReward{TxHash: d.TxID, NodeID: d.NodeID, AmountStaked: d.Amount, StartTimestamp: d.Start,
			EndTimestamp: d.End, RewardType: d.Kind, EstimatedReward: as.amount(d.Asset, d.Potential)}
		if x.Addresses, err = ownerAddresses(d.Owner); err != nil {
			return nil, err
		}
		if x.Addresses == nil {
			x.Addresses = []string{}
		}
		// Progress: the part of the staking period elapsed at the tip, in percent.
		if d.End > d.Start && tipTime > d.Start {
			x.Progress = float64(min(tipTime, d.End)-d.Start) * 100 / float64(d.End-d.Start)
		}
		out.PendingRewards = append(out.PendingRewards, x)
	}
	return out, nil
}
