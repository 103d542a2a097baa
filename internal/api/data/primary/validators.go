package primary

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strconv"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// ValidationStatuses is the ValidationStatusType enumeration.
var ValidationStatuses = []string{"completed", "active", "pending", "removed"}

// validatorBase holds the fields every validation record has.
type validatorBase struct {
	TxHash         string          `json:"txHash"`
	NodeID         string          `json:"nodeId"`
	SubnetID       string          `json:"subnetId"`
	AmountStaked   string          `json:"amountStaked"`
	DelegationFee  string          `json:"delegationFee,omitempty"`
	StartTimestamp int64           `json:"startTimestamp"`
	EndTimestamp   int64           `json:"endTimestamp"`
	BlsCredentials *BlsCredentials `json:"blsCredentials,omitempty"`
}

// BlsCredentials are the BLS key and proof of possession of a validator
// added by AddPermissionlessValidatorTx (0x-hex).
type BlsCredentials struct {
	PublicKey         string `json:"publicKey"`
	ProofOfPossession string `json:"proofOfPossession"`
}

// Rewards are a validation's rewards (paid, or potential while active).
type Rewards struct {
	ValidationRewardAmount string   `json:"validationRewardAmount"`
	DelegationRewardAmount string   `json:"delegationRewardAmount"`
	RewardAddresses        []string `json:"rewardAddresses,omitempty"`
	RewardTxHash           string   `json:"rewardTxHash,omitempty"`
}

// CompletedValidator is CompletedValidatorDetails: ended at its end time
// (by a RewardValidatorTx, or by time for a permissioned subnet validator).
type CompletedValidator struct {
	validatorBase
	DelegatorCount   int64   `json:"delegatorCount"`
	AmountDelegated  string  `json:"amountDelegated,omitempty"`
	Rewards          Rewards `json:"rewards"`
	ValidationStatus string  `json:"validationStatus"`
}

// ActiveValidator is ActiveValidatorDetails: started, not yet removed, at
// the indexed tip. uptimePerformance, avalancheGoVersion and
// validatorHealth are what our node observes (Deps.Node); geolocation is
// not known to this service (null, as the schema allows).
type ActiveValidator struct {
	validatorBase
	StakePercentage    float64          `json:"stakePercentage"`
	DelegatorCount     int64            `json:"delegatorCount"`
	AmountDelegated    string           `json:"amountDelegated,omitempty"`
	UptimePerformance  *float64         `json:"uptimePerformance,omitempty"`
	AvalancheGoVersion string           `json:"avalancheGoVersion,omitempty"`
	PotentialRewards   Rewards          `json:"potentialRewards"`
	ValidationStatus   string           `json:"validationStatus"`
	ValidatorHealth    *ValidatorHealth `json:"validatorHealth,omitempty"`
	Geolocation        *struct{}        `json:"geolocation"`
}

// ValidatorHealth is ValidatorHealthDetails, from one poll of our node.
type ValidatorHealth struct {
	ReachabilityPercent          float64 `json:"reachabilityPercent"`
	BenchedPChainRequestsPercent float64 `json:"benchedPChainRequestsPercent"`
	BenchedXChainRequestsPercent float64 `json:"benchedXChainRequestsPercent"`
	BenchedCChainRequestsPercent float64 `json:"benchedCChainRequestsPercent"`
}

// PendingValidator is PendingValidatorDetails: starts after the tip's time.
type PendingValidator struct {
	validatorBase
	ValidationStatus string `json:"validationStatus"`
}

// RemovedValidator is RemovedValidatorDetails: removed before its end
// (RemoveSubnetValidatorTx).
type RemovedValidator struct {
	validatorBase
	RemoveTxHash     string `json:"removeTxHash"`
	RemoveTimestamp  int64  `json:"removeTimestamp"`
	ValidationStatus string `json:"validationStatus"`
}

// ListValidatorsResponse is ListValidatorDetailsResponse; each item is one
// of the four record types above.
type ListValidatorsResponse struct {
	NextPageToken string `json:"nextPageToken,omitempty"`
	Validators    []any  `json:"validators"`
}

// validatorCursor is the last record of a page, by (start time, tx id).
type validatorCursor struct {
	T  int64  `json:"t"`
	ID string `json:"id"`
}

// stakerRow is a validator row of p_stakers.
type stakerRow struct {
	TxID, Kind, SubnetID, NodeID string
	Weight, StakeAmount          string // unpadded
	Start, End                   int64
	Shares                       int64
	BLSKey, BLSPoP               string
	ValidationOwner              string
	Potential, Accrued           string
	RemovedHeight, RemovedTime   int64
	Removal, RemovalTx           string
	Reward, Fee                  string
}

// statusOf is a staker's validationStatus at the tip time.
func statusOf(s *stakerRow, tipTime int64) string {
	switch {
	case s.RemovedHeight >= 0 && s.Removal == "REMOVED":
		return "removed"
	case s.RemovedHeight >= 0:
		return "completed"
	case s.Start > tipTime:
		return "pending"
	}
	return "active"
}

// statusSQL is the SQL condition of each status ($tip is the tip time).
func statusSQL(status string, tipArg int) string {
	switch status {
	case "completed":
		return `removed_height >= 0 AND removal <> 'REMOVED'`
	case "removed":
		return `removed_height >= 0 AND removal = 'REMOVED'`
	case "pending":
		return fmt.Sprintf(`removed_height < 0 AND start_time > $%d`, tipArg)
	}
	return fmt.Sprintf(`removed_height < 0 AND start_time <= $%d`, tipArg)
}

func (h *handlers) listValidatorDetails(r *http.Request) (any, error) {
	q, err := h.begin(r, false)
	if err != nil {
		return nil, err
	}
	p := q.p
	nodeID := r.PathValue("nodeId")
	if id, err := api.ParseNodeID(nodeID); err != nil {
		p.Fail("nodeId: %v", err)
	} else {
		nodeID = id.String()
	}
	size := p.PageSize(defaultPageSize, 1, maxPageSize)
	status := p.Enum("validationStatus", "", ValidationStatuses...)
	order := sortOrder(p, "desc")
	var cur validatorCursor
	has, err := h.decodeCursor(q, routeValidators, &cur)
	if err != nil {
		return nil, err
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	tipTime, err := h.pChainTipTime(ctx)
	if err != nil {
		return nil, err
	}

	args := []any{nodeID}
	where := `node_id = $1 AND kind <> 'DELEGATOR'`
	switch status {
	case "pending", "active":
		args = append(args, tipTime)
		where += ` AND ` + statusSQL(status, len(args))
	case "completed", "removed":
		where += ` AND ` + statusSQL(status, 0)
	}
	cmp, dir := ">", "ASC"
	if order == "desc" {
		cmp, dir = "<", "DESC"
	}
	if has {
		args = append(args, cur.T, cur.ID)
		n := len(args)
		where += fmt.Sprintf(` AND (start_time, tx_id) %s ($%d, $%d)`, cmp, n-1, n)
	}
	stakers, err := h.stakers(ctx, `SELECT `+stakerColumns+` FROM p_stakers WHERE `+where+`
		ORDER BY start_time `+dir+`, tx_id `+dir+` LIMIT `+strconv.Itoa(size+1), args...)
	if err != nil {
		return nil, err
	}
	out := ListValidatorsResponse{Validators: []any{}}
	if len(stakers) > size {
		stakers = stakers[:size]
		last := stakers[size-1]
		out.NextPageToken = h.encodeCursor(q, routeValidators, validatorCursor{T: last.Start, ID: last.TxID})
	}
	if len(stakers) == 0 && !has && status == "" {
		return nil, api.NotFound("nodeId: %s has no validation on network %s", nodeID, q.network)
	}
	if out.Validators, err = h.validatorRecords(r, stakers, tipTime); err != nil {
		return nil, err
	}
	return out, nil
}

// validatorRecords renders validator rows as the record of their status at
// the tip (one of the four ValidationStatusType schemas).
func (h *handlers) validatorRecords(r *http.Request, stakers []*stakerRow, tipTime int64) ([]any, error) {
	ctx := r.Context()
	out := []any{}
	var observed map[string]Observed
	totals := map[string]*big.Int{} // subnet stake, read once per request
	for _, s := range stakers {
		switch statusOf(s, tipTime) {
		case "removed":
			out = append(out, RemovedValidator{validatorBase: base(s), RemoveTxHash: s.RemovalTx,
				RemoveTimestamp: s.RemovedTime, ValidationStatus: "removed"})
		case "pending":
			out = append(out, PendingValidator{validatorBase: base(s), ValidationStatus: "pending"})
		case "completed":
			v, err := h.completed(ctx, s)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		default:
			if observed == nil {
				observed = h.observed(r)
			}
			v, err := h.active(ctx, s, tipTime, observed, totals)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// observed is our node's view of the current validators (empty without
// a node or when it does not answer: an observation, not chain state).
func (h *handlers) observed(r *http.Request) map[string]Observed {
	if h.d.Node == nil {
		return map[string]Observed{}
	}
	m, err := h.d.Node.Validators(r.Context())
	if err != nil {
		h.d.Log.Warn("node view of validators unavailable", "request_id", api.RequestID(r), "err", err)
		return map[string]Observed{}
	}
	return m
}

const stakerColumns = `tx_id, kind, subnet_id, node_id, weight, stake_amount, start_time, end_time, delegation_shares,
	bls_public_key, bls_pop, validation_reward_owner, potential_reward, accrued_delegatee_reward, removed_height,
	removed_time, removal, removal_tx_id, reward_amount, delegation_fee_amount`

func (h *handlers) stakers(ctx context.Context, query string, args ...any) ([]*stakerRow, error) {
	rows, err := h.d.DB.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list stakers: %w", err)
	}
	defer rows.Close()
	var out []*stakerRow
	for rows.Next() {
		var s stakerRow
		if err := rows.Scan(&s.TxID, &s.Kind, &s.SubnetID, &s.NodeID, &s.Weight, &s.StakeAmount, &s.Start, &s.End,
			&s.Shares, &s.BLSKey, &s.BLSPoP, &s.ValidationOwner, &s.Potential, &s.Accrued, &s.RemovedHeight,
			&s.RemovedTime, &s.Removal, &s.RemovalTx, &s.Reward, &s.Fee); err != nil {
			return nil, fmt.Errorf("list stakers: %w", err)
		}
		for _, p := range []*string{&s.Weight, &s.StakeAmount, &s.Potential, &s.Accrued, &s.Reward, &s.Fee} {
			*p = unpad(*p)
		}
		out = append(out, &s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list stakers: %w", err)
	}
	return out, nil
}

// base fills the fields shared by every record.
func base(s *stakerRow) validatorBase {
	b := validatorBase{TxHash: s.TxID, NodeID: s.NodeID, SubnetID: s.SubnetID, AmountStaked: s.StakeAmount,
		StartTimestamp: s.Start, EndTimestamp: s.End}
	if s.Kind != "VALIDATOR" {
		// A permissioned subnet validator stakes nothing: its weight is its stake.
		b.AmountStaked = s.Weight
	} else {
		// The node's format: a percentage with four decimals (shares are millionths).
		b.DelegationFee = fmt.Sprintf("%d.%04d", s.Shares/10000, s.Shares%10000)
	}
	if s.BLSKey != "" {
		b.BlsCredentials = &BlsCredentials{PublicKey: s.BLSKey, ProofOfPossession: s.BLSPoP}
	}
	return b
}

// ownerAddresses reads the addresses of a stored owner JSON.
func ownerAddresses(js string) ([]string, error) {
	if js == "" {
		return nil, nil
	}
	var o struct {
		Addresses []string `json:"addresses"`
	}
	if err := json.Unmarshal([]byte(js), &o); err != nil {
		return nil, fmt.Errorf("reward owner: %w", err)
	}
	return o.Addresses, nil
}

// delegation sums the delegators of validator tx txID: all of them, or
// those current at tipTime; with the validator's share (shares) of their
// potential rewards.
func (h *handlers) delegation(ctx context.Context, txID string, current bool, tipTime, shares int64) (count int64, amount, fee *big.Int, err error) {
	q := `SELECT stake_amount, potential_reward FROM p_stakers WHERE validator_tx_id = $1 AND kind = 'DELEGATOR'`
	args := []any{txID}
	if current {
		q += ` AND removed_height < 0 AND start_time <= $2`
		args = append(args, tipTime)
	}
	rows, err := h.d.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("delegators of %s: %w", txID, err)
	}
	defer rows.Close()
	amount, fee = new(big.Int), new(big.Int)
	for rows.Next() {
		var a, p string
		if err := rows.Scan(&a, &p); err != nil {
			return 0, nil, nil, fmt.Errorf("delegators of %s: %w", txID, err)
		}
		count++
		amount.Add(amount, decimal(a))
		fee.Add(fee, delegateeShare(decimal(p), shares))
	}
	if err := rows.Err(); err != nil {
		return 0, nil, nil, fmt.Errorf("delegators of %s: %w", txID, err)
	}
	return count, amount, fee, nil
}

// delegateeShare is the validator's part of a delegator's reward, as
// avalanchego's reward.Split computes it (shares in millionths).
func delegateeShare(total *big.Int, shares int64) *big.Int {
	const maxShares = 1_000_000
	rest := new(big.Int).Mul(total, big.NewInt(maxShares-shares))
	rest.Quo(rest, big.NewInt(maxShares))
	return new(big.Int).Sub(total, rest)
}

func decimal(s string) *big.Int {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return new(big.Int)
	}
	return v
}

func (h *handlers) completed(ctx context.Context, s *stakerRow) (CompletedValidator, error) {
	v := CompletedValidator{validatorBase: base(s), ValidationStatus: "completed",
		Rewards: Rewards{ValidationRewardAmount: s.Reward, DelegationRewardAmount: s.Fee, RewardTxHash: s.RemovalTx}}
	if s.Kind != "VALIDATOR" {
		v.Rewards.ValidationRewardAmount, v.Rewards.DelegationRewardAmount = "0", "0"
		return v, nil
	}
	n, amt, _, err := h.delegation(ctx, s.TxID, false, 0, s.Shares)
	if err != nil {
		return v, err
	}
	v.DelegatorCount, v.AmountDelegated = n, amt.String()
	if v.Rewards.RewardAddresses, err = ownerAddresses(s.ValidationOwner); err != nil {
		return v, err
	}
	return v, nil
}

func (h *handlers) active(ctx context.Context, s *stakerRow, tipTime int64, observed map[string]Observed, totals map[string]*big.Int) (ActiveValidator, error) {
	v := ActiveValidator{validatorBase: base(s), ValidationStatus: "active",
		PotentialRewards: Rewards{ValidationRewardAmount: s.Potential, DelegationRewardAmount: "0"}}
	weight := decimal(s.Weight)
	if s.Kind == "VALIDATOR" {
		n, amt, fee, err := h.delegation(ctx, s.TxID, true, tipTime, s.Shares)
		if err != nil {
			return v, err
		}
		v.DelegatorCount, v.AmountDelegated = n, amt.String()
		weight.Add(weight, amt)
		v.PotentialRewards.DelegationRewardAmount = fee.Add(fee, decimal(s.Accrued)).String()
		if v.PotentialRewards.RewardAddresses, err = ownerAddresses(s.ValidationOwner); err != nil {
			return v, err
		}
	}
	total := totals[s.SubnetID]
	if total == nil {
		var err error
		if total, err = h.totalStake(ctx, s.SubnetID); err != nil {
			return v, err
		}
		totals[s.SubnetID] = total
	}
	if total.Sign() > 0 {
		f, _ := new(big.Rat).SetFrac(new(big.Int).Mul(weight, big.NewInt(100)), total).Float64()
		v.StakePercentage = f
	}
	// Observations are of the node (a permissioned subnet validator is
	// also a primary-network validator, the set our node measures).
	if o, ok := observed[s.NodeID]; ok {
		v.UptimePerformance = o.Uptime
		v.AvalancheGoVersion = o.Version
		health := ValidatorHealth{}
		if o.Connected {
			health.ReachabilityPercent = 100
		}
		for _, c := range o.Benched {
			switch c {
			case h.blockchainID("P"):
				health.BenchedPChainRequestsPercent = 100
			case h.blockchainID("X"):
				health.BenchedXChainRequestsPercent = 100
			case h.blockchainID("C"):
				health.BenchedCChainRequestsPercent = 100
			}
		}
		v.ValidatorHealth = &health
	}
	return v, nil
}

// totalStake is the current weight of a subnet's validator set (validators
// and their delegators) at the tip.
func (h *handlers) totalStake(ctx context.Context, subnetID string) (*big.Int, error) {
	rows, err := h.d.DB.QueryContext(ctx, `SELECT weight FROM p_validator_set WHERE subnet_id = $1 AND to_height = $2`,
		subnetID, int64(maxHeight))
	if err != nil {
		return nil, fmt.Errorf("total stake of %s: %w", subnetID, err)
	}
	defer rows.Close()
	total := new(big.Int)
	for rows.Next() {
		var w string
		if err := rows.Scan(&w); err != nil {
			return nil, fmt.Errorf("total stake of %s: %w", subnetID, err)
		}
		total.Add(total, decimal(unpad(w)))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("total stake of %s: %w", subnetID, err)
	}
	return total, nil
}

// maxHeight marks an open interval in p_validator_set.
const maxHeight = 1<<63 - 1

// jsonStrings decodes a JSON array of strings (never nil).
func jsonStrings(js string, out *[]string) error {
	if err := json.Unmarshal([]byte(js), out); err != nil {
		return err
	}
	if *out == nil {
		*out = []string{}
	}
	return nil
}
