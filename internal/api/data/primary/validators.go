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
	// The validator's delegations, kept on its row by the P indexer
	// (migration 0113): every delegator it had, and those current at the
	// tip with the validator's share of their potential rewards.
	AllDelegators, CurDelegators int64
	AllDelegated, CurDelegated   *big.Int
	CurDelegateeFee              *big.Int
	Capacity                     int64 // capacitySQL, read by stakerKeys only
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
	has, tipTime, err := h.openStakingPage(q, routeValidators, &cur)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()

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
	var subnets []string
	for _, s := range stakers {
		if statusOf(s, tipTime) == "active" {
			subnets = append(subnets, s.SubnetID)
		}
	}
	totals, err := h.subnetStakes(ctx, subnets)
	if err != nil {
		return nil, err
	}
	for _, s := range stakers {
		switch statusOf(s, tipTime) {
		case "removed":
			out = append(out, RemovedValidator{validatorBase: base(s), RemoveTxHash: s.RemovalTx,
				RemoveTimestamp: s.RemovedTime, ValidationStatus: "removed"})
		case "pending":
			out = append(out, PendingValidator{validatorBase: base(s), ValidationStatus: "pending"})
		case "completed":
			v, err := h.completed(s)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		default:
			if observed == nil {
				observed = h.observed(r)
			}
			v, err := h.active(s, observed, totals)
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
	removed_time, removal, removal_tx_id, reward_amount, delegation_fee_amount, all_delegators, all_delegated_hi,
	all_delegated_lo, cur_delegators, cur_delegated_hi, cur_delegated_lo, cur_delegatee_hi, cur_delegatee_lo`

func (h *handlers) stakers(ctx context.Context, query string, args ...any) ([]*stakerRow, error) {
	rows, err := h.d.DB.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list stakers: %w", err)
	}
	defer rows.Close()
	var out []*stakerRow
	for rows.Next() {
		var s stakerRow
		var allHi, allLo, curHi, curLo, feeHi, feeLo int64
		if err := rows.Scan(&s.TxID, &s.Kind, &s.SubnetID, &s.NodeID, &s.Weight, &s.StakeAmount, &s.Start, &s.End,
			&s.Shares, &s.BLSKey, &s.BLSPoP, &s.ValidationOwner, &s.Potential, &s.Accrued, &s.RemovedHeight,
			&s.RemovedTime, &s.Removal, &s.RemovalTx, &s.Reward, &s.Fee, &s.AllDelegators, &allHi, &allLo,
			&s.CurDelegators, &curHi, &curLo, &feeHi, &feeLo); err != nil {
			return nil, fmt.Errorf("list stakers: %w", err)
		}
		s.AllDelegated, s.CurDelegated, s.CurDelegateeFee = splitSum(allHi, allLo), splitSum(curHi, curLo), splitSum(feeHi, feeLo)
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

func (h *handlers) completed(s *stakerRow) (CompletedValidator, error) {
	v := CompletedValidator{validatorBase: base(s), ValidationStatus: "completed",
		Rewards: Rewards{ValidationRewardAmount: s.Reward, DelegationRewardAmount: s.Fee, RewardTxHash: s.RemovalTx}}
	if s.Kind != "VALIDATOR" {
		v.Rewards.ValidationRewardAmount, v.Rewards.DelegationRewardAmount = "0", "0"
		return v, nil
	}
	v.DelegatorCount, v.AmountDelegated = s.AllDelegators, s.AllDelegated.String()
	var err error
	if v.Rewards.RewardAddresses, err = ownerAddresses(s.ValidationOwner); err != nil {
		return v, err
	}
	return v, nil
}

func (h *handlers) active(s *stakerRow, observed map[string]Observed, totals map[string]*big.Int) (ActiveValidator, error) {
	v := ActiveValidator{validatorBase: base(s), ValidationStatus: "active",
		PotentialRewards: Rewards{ValidationRewardAmount: s.Potential, DelegationRewardAmount: "0"}}
	weight := decimal(s.Weight)
	if s.Kind == "VALIDATOR" {
		v.DelegatorCount, v.AmountDelegated = s.CurDelegators, s.CurDelegated.String()
		weight.Add(weight, s.CurDelegated)
		v.PotentialRewards.DelegationRewardAmount = new(big.Int).Add(s.CurDelegateeFee, decimal(s.Accrued)).String()
		var err error
		if v.PotentialRewards.RewardAddresses, err = ownerAddresses(s.ValidationOwner); err != nil {
			return v, err
		}
	}
	if total := totals[s.SubnetID]; total != nil && total.Sign() > 0 {
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

// subnetStakes is the current weight of each subnet's validator set
// (validators and their delegators) at the tip, for the subnets of a page
// in one query.
func (h *handlers) subnetStakes(ctx context.Context, subnets []string) (map[string]*big.Int, error) {
	args := []any{int64(maxHeight)}
	seen := map[string]bool{}
	for _, id := range subnets {
		if !seen[id] {
			seen[id] = true
			args = append(args, id)
		}
	}
	if len(args) == 1 {
		return map[string]*big.Int{}, nil
	}
	out, err := h.sumsBy(ctx, `SELECT subnet_id, `+splitSumSQL("weight")+` FROM p_validator_set
		WHERE to_height = $1 AND subnet_id IN (`+placeholders(2, len(args)-1)+`) GROUP BY subnet_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("subnet stakes: %w", err)
	}
	return out, nil
}

// splitSumSQL sums a column of padded amounts (20 digits, uint64) in the
// database as two BIGINT sums, of the leading and of the trailing 10 digits,
// exact for up to 900 million rows (splitSum joins them).
func splitSumSQL(col string) string {
	return `COALESCE(SUM(CAST(SUBSTR(` + col + `, 1, 10) AS BIGINT)), 0), COALESCE(SUM(CAST(SUBSTR(` + col + `, 11, 10) AS BIGINT)), 0)`
}

// sumsBy reads (key, splitSumSQL) rows into sums by key.
func (h *handlers) sumsBy(ctx context.Context, query string, args ...any) (map[string]*big.Int, error) {
	rows, err := h.d.DB.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]*big.Int{}
	for rows.Next() {
		var k string
		var hi, lo int64
		if err := rows.Scan(&k, &hi, &lo); err != nil {
			return nil, err
		}
		out[k] = splitSum(hi, lo)
	}
	return out, rows.Err()
}

// sumPadded sums a column of padded amounts over the rows of from (a table
// and its condition) in the database, and counts them.
func (h *handlers) sumPadded(ctx context.Context, col, from string, args ...any) (*big.Int, int64, error) {
	var hi, lo, n int64
	if err := h.d.DB.QueryRowContext(ctx, `SELECT `+splitSumSQL(col)+`, COUNT(*) FROM `+from, args...).Scan(&hi, &lo, &n); err != nil {
		return nil, 0, err
	}
	return splitSum(hi, lo), n, nil
}

// splitSum is hi * 10^10 + lo: the two halves' sums of splitSumSQL.
func splitSum(hi, lo int64) *big.Int {
	v := new(big.Int).Mul(big.NewInt(hi), big.NewInt(1e10))
	return v.Add(v, big.NewInt(lo))
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
