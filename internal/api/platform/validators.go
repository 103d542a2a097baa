package platform

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/vms/platformvm/reward"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/types"

	avajson "github.com/ava-labs/avalanchego/utils/json"
	safemath "github.com/ava-labs/avalanchego/utils/math"
	platformapi "github.com/ava-labs/avalanchego/vms/platformvm/api"
)

// staker is a p_stakers row in the current set.
type staker struct {
	txID      ids.ID
	kind      string
	node      ids.NodeID
	weight    uint64
	start     int64
	end       int64
	potential uint64
	priority  txs.Priority // current-set priority
}

// less is state.Staker.Less for current stakers (NextTime = EndTime).
func (a *staker) less(b *staker) bool {
	if a.end != b.end {
		return a.end < b.end
	}
	if a.priority != b.priority {
		return a.priority < b.priority
	}
	return bytes.Compare(a.txID[:], b.txID[:]) < 0
}

// currentPriority maps the stored priority (the pending one for stakers
// that waited in the pending set) to the current set's.
func currentPriority(p int) (txs.Priority, error) {
	if p < 0 || p > 255 {
		return 0, fmt.Errorf("stored priority %d", p)
	}
	pr := txs.Priority(p)
	if pr.IsCurrent() {
		return pr, nil
	}
	if int(pr) < len(txs.PendingToCurrentPriorities) {
		if c := txs.PendingToCurrentPriorities[pr]; c != 0 {
			return c, nil
		}
	}
	return 0, fmt.Errorf("stored priority %d is neither current nor pending", p)
}

// stakersAt returns the current stakers of subnet after state height h in
// the node's iteration order.
func (s *Service) stakersAt(ctx context.Context, subnet ids.ID, h uint64) ([]*staker, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT tx_id, kind, node_id, weight, start_time, end_time, potential_reward, priority
		FROM p_stakers WHERE subnet_id = $1 AND current_height >= 0 AND current_height <= $2
		AND (removed_height < 0 OR removed_height > $2)`, subnet.String(), int64(h))
	if err != nil {
		return nil, fmt.Errorf("stakers of %s at %d: %w", subnet, h, err)
	}
	defer rows.Close()
	var out []*staker
	for rows.Next() {
		var (
			st                 staker
			txID, node, w, pot string
			priority           int
		)
		if err := rows.Scan(&txID, &st.kind, &node, &w, &st.start, &st.end, &pot, &priority); err != nil {
			return nil, fmt.Errorf("stakers of %s: %w", subnet, err)
		}
		if st.txID, err = ids.FromString(txID); err != nil {
			return nil, fmt.Errorf("stored staker id %q: %w", txID, err)
		}
		if st.node, err = ids.NodeIDFromString(node); err != nil {
			return nil, fmt.Errorf("stored node id %q: %w", node, err)
		}
		if st.weight, err = parseUint(w); err != nil {
			return nil, err
		}
		if st.potential, err = parseUint(pot); err != nil {
			return nil, err
		}
		if st.priority, err = currentPriority(priority); err != nil {
			return nil, fmt.Errorf("staker %s: %w", txID, err)
		}
		out = append(out, &st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("stakers of %s: %w", subnet, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].less(out[j]) })
	return out, nil
}

// delegateeRewardsAt returns, per current validator tx of subnet, the
// delegation fees accrued by state height h: the validator's cut of each
// delegator rewarded by then (avalanchego's staking info DelegateeReward,
// deferred since Cortina; before it the cut was paid at once).
func (s *Service) delegateeRewardsAt(ctx context.Context, subnet ids.ID, h uint64) (map[ids.ID]uint64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT d.validator_tx_id, v.start_time, d.potential_reward, d.reward_amount
		FROM p_stakers d JOIN p_stakers v ON v.tx_id = d.validator_tx_id
		WHERE v.subnet_id = $1 AND v.kind = $2 AND v.current_height >= 0 AND v.current_height <= $3
		AND (v.removed_height < 0 OR v.removed_height > $3)
		AND d.kind = $4 AND d.removal = $5 AND d.removed_height >= 0 AND d.removed_height <= $3`,
		subnet.String(), kindValidator, int64(h), kindDelegator, removalRewarded)
	if err != nil {
		return nil, fmt.Errorf("delegatee rewards of %s: %w", subnet, err)
	}
	defer rows.Close()
	out := map[ids.ID]uint64{}
	for rows.Next() {
		var (
			vtx, pot, paid string
			start          int64
		)
		if err := rows.Scan(&vtx, &start, &pot, &paid); err != nil {
			return nil, fmt.Errorf("delegatee rewards of %s: %w", subnet, err)
		}
		if !s.upgrades.IsCortinaActivated(time.Unix(start, 0)) {
			continue
		}
		id, err := ids.FromString(vtx)
		if err != nil {
			return nil, fmt.Errorf("stored validator id %q: %w", vtx, err)
		}
		p, err := parseUint(pot)
		if err != nil {
			return nil, err
		}
		d, err := parseUint(paid)
		if err != nil {
			return nil, err
		}
		// reward.Split: the delegator got paid, the validator the rest.
		if d > p {
			return nil, fmt.Errorf("delegator of %s paid %d above its potential %d", vtx, d, p)
		}
		if out[id], err = safemath.Add(out[id], p-d); err != nil {
			return nil, fmt.Errorf("delegatee reward of %s overflows", vtx)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("delegatee rewards of %s: %w", subnet, err)
	}
	return out, nil
}

// isL1At reports whether subnet was converted to an L1 by state height h.
func (s *Service) isL1At(ctx context.Context, subnet ids.ID, h uint64) (bool, error) {
	var converted int64
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(converted_height), -1) FROM p_subnets WHERE subnet_id = $1`,
		subnet.String()).Scan(&converted)
	if err != nil {
		return false, fmt.Errorf("subnet %s: %w", subnet, err)
	}
	return converted >= 0 && uint64(converted) <= h, nil
}

// validatorsAt is GetCurrentValidators after state height h. obs carries
// the upstream node's uptime/connected (primary network only; may be nil).
func (s *Service) validatorsAt(ctx context.Context, subnet ids.ID, nodeIDs set.Set[ids.NodeID], h uint64, obs map[ids.NodeID]observed) ([]any, error) {
	l1, err := s.isL1At(ctx, subnet, h)
	if err != nil {
		return nil, err
	}
	if l1 {
		return s.l1ValidatorsAt(ctx, subnet, nodeIDs, h)
	}
	return s.primaryOrSubnetValidatorsAt(ctx, subnet, nodeIDs, h, obs)
}

// l1ValidatorsAt mirrors getL1Validators: the subnet's remaining legacy
// validators, then its L1 validators (active or not) by node ID.
func (s *Service) l1ValidatorsAt(ctx context.Context, subnet ids.ID, nodeIDs set.Set[ids.NodeID], h uint64) ([]any, error) {
	validators := []any{}
	fetchAll := nodeIDs.Len() == 0
	stakers, err := s.stakersAt(ctx, subnet, h)
	if err != nil {
		return nil, err
	}
	for _, st := range stakers {
		if fetchAll || nodeIDs.Contains(st.node) {
			validators = append(validators, apiStaker(st))
		}
	}
	l1s, err := s.l1At(ctx, subnet, h)
	if err != nil {
		return nil, err
	}
	for _, v := range l1s {
		if !fetchAll && !nodeIDs.Contains(v.node) {
			continue
		}
		apiVdr, err := s.apiL1Validator(ctx, v)
		if err != nil {
			return nil, fmt.Errorf("converting L1 validator to API format: %w", err)
		}
		validators = append(validators, apiVdr)
	}
	return validators, nil
}

func apiStaker(st *staker) platformapi.Staker {
	return platformapi.Staker{
		TxID:      st.txID,
		StartTime: avajson.Uint64(st.start),
		EndTime:   avajson.Uint64(st.end),
		Weight:    avajson.Uint64(st.weight),
		NodeID:    st.node,
	}
}

// primaryOrSubnetValidatorsAt mirrors getPrimaryOrSubnetValidators.
func (s *Service) primaryOrSubnetValidatorsAt(ctx context.Context, subnet ids.ID, nodeIDs set.Set[ids.NodeID], h uint64, obs map[ids.NodeID]observed) ([]any, error) {
	numNodeIDs := nodeIDs.Len()
	all, err := s.stakersAt(ctx, subnet, h)
	if err != nil {
		return nil, err
	}
	var target []*staker
	for _, st := range all {
		if numNodeIDs == 0 || nodeIDs.Contains(st.node) {
			target = append(target, st)
		}
	}
	accrued, err := s.delegateeRewardsAt(ctx, subnet, h)
	if err != nil {
		return nil, err
	}

	validators := []any{}
	vdrToDelegators := map[ids.NodeID][]platformapi.PrimaryDelegator{}
	for _, st := range target {
		potentialReward := avajson.Uint64(st.potential)
		switch st.priority {
		case txs.PrimaryNetworkValidatorCurrentPriority, txs.SubnetPermissionlessValidatorCurrentPriority:
			attr, err := s.stakerAttributes(ctx, st.txID)
			if err != nil {
				return nil, err
			}
			delegateeReward := avajson.Uint64(accrued[st.txID])
			delegationFee := avajson.Float32(100 * float32(attr.shares) / float32(reward.PercentDenominator))
			vdr := platformapi.PermissionlessValidator{
				Staker:                 apiStaker(st),
				PotentialReward:        &potentialReward,
				AccruedDelegateeReward: &delegateeReward,
				DelegationFee:          delegationFee,
				Signer:                 attr.proofOfPossession,
			}
			if subnet == constants.PrimaryNetworkID {
				if o, ok := obs[st.node]; ok {
					vdr.Uptime, vdr.Connected = o.Uptime, o.Connected
				}
			}
			if attr.validationRewardsOwner != nil {
				if vdr.ValidationRewardOwner, err = s.apiOwner(attr.validationRewardsOwner); err != nil {
					return nil, err
				}
			}
			if attr.delegationRewardsOwner != nil {
				if vdr.DelegationRewardOwner, err = s.apiOwner(attr.delegationRewardsOwner); err != nil {
					return nil, err
				}
			}
			validators = append(validators, vdr)

		case txs.PrimaryNetworkDelegatorCurrentPriority, txs.SubnetPermissionlessDelegatorCurrentPriority:
			var rewardOwner *platformapi.Owner
			// Only a single-node query carries the delegators' owners.
			if numNodeIDs == 1 {
				attr, err := s.stakerAttributes(ctx, st.txID)
				if err != nil {
					return nil, err
				}
				if attr.rewardsOwner != nil {
					if rewardOwner, err = s.apiOwner(attr.rewardsOwner); err != nil {
						return nil, err
					}
				}
			}
			d := platformapi.PrimaryDelegator{
				Staker:          apiStaker(st),
				RewardOwner:     rewardOwner,
				PotentialReward: &potentialReward,
			}
			vdrToDelegators[st.node] = append(vdrToDelegators[st.node], d)

		case txs.SubnetPermissionedValidatorCurrentPriority:
			validators = append(validators, apiStaker(st))

		default:
			return nil, fmt.Errorf("unexpected staker priority %d", st.priority)
		}
	}

	for i, vdrIntf := range validators {
		vdr, ok := vdrIntf.(platformapi.PermissionlessValidator)
		if !ok {
			continue
		}
		delegators, ok := vdrToDelegators[vdr.NodeID]
		if !ok {
			delegators = []platformapi.PrimaryDelegator{}
		}
		delegatorCount := avajson.Uint64(len(delegators))
		delegatorWeight := avajson.Uint64(0)
		for _, d := range delegators {
			delegatorWeight += d.Weight
		}
		vdr.DelegatorCount = &delegatorCount
		vdr.DelegatorWeight = &delegatorWeight
		if numNodeIDs == 1 {
			vdr.Delegators = &delegators
		}
		validators[i] = vdr
	}
	return validators, nil
}

// l1Validator is an L1 validator's state after some height.
type l1Validator struct {
	validationID ids.ID
	node         ids.NodeID
	publicKey    []byte
	start        int64
	weight       uint64
	minNonce     uint64
	balance      uint64 // 0 when inactive
	active       bool
	createdTx    string
	convIndex    int
}

// l1At returns the L1 validators of subnet after state height h (the last
// history entry of each at or before h; removed ones are gone), by node ID
// as the node's subnetID+nodeID index orders them.
func (s *Service) l1At(ctx context.Context, subnet ids.ID, h uint64) ([]*l1Validator, error) {
	var accruedStr string
	if err := s.db.QueryRowContext(ctx, `SELECT l1_accrued_fees FROM p_block_state WHERE height = $1`, int64(h)).Scan(&accruedStr); err != nil {
		return nil, fmt.Errorf("accrued L1 fees at %d: %w", h, err)
	}
	accrued, err := parseUint(accruedStr)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT v.validation_id, v.node_id, v.public_key, v.start_time, v.created_tx_id,
		v.conversion_index, x.weight, x.end_accumulated_fee, x.min_nonce
		FROM p_l1_validators v JOIN p_l1_validator_history x ON x.validation_id = v.validation_id
		WHERE v.subnet_id = $1 AND x.height <= $2
		ORDER BY v.validation_id, x.height, x.seq`, subnet.String(), int64(h))
	if err != nil {
		return nil, fmt.Errorf("L1 validators of %s: %w", subnet, err)
	}
	defer rows.Close()
	latest := map[string]*l1Validator{}
	for rows.Next() {
		var (
			vid, node, key, created, w, eaf, nonce string
			v                                      l1Validator
		)
		if err := rows.Scan(&vid, &node, &key, &v.start, &created, &v.convIndex, &w, &eaf, &nonce); err != nil {
			return nil, fmt.Errorf("L1 validators of %s: %w", subnet, err)
		}
		if v.validationID, err = ids.FromString(vid); err != nil {
			return nil, fmt.Errorf("stored validation id %q: %w", vid, err)
		}
		if v.node, err = ids.NodeIDFromString(node); err != nil {
			return nil, fmt.Errorf("stored node id %q: %w", node, err)
		}
		if v.publicKey, err = decodeHex(key); err != nil {
			return nil, fmt.Errorf("stored key of %s: %w", vid, err)
		}
		if v.weight, err = parseUint(w); err != nil {
			return nil, err
		}
		if v.minNonce, err = parseUint(nonce); err != nil {
			return nil, err
		}
		e, err := parseUint(eaf)
		if err != nil {
			return nil, err
		}
		if e != 0 {
			// An active validator's balance is what its fee budget has left.
			if e < accrued {
				return nil, fmt.Errorf("L1 validator %s: end fee %d below accrued %d", vid, e, accrued)
			}
			v.balance, v.active = e-accrued, true
		}
		v.createdTx = created
		latest[vid] = &v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("L1 validators of %s: %w", subnet, err)
	}
	out := make([]*l1Validator, 0, len(latest))
	for _, v := range latest {
		if v.weight > 0 {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].node.Compare(out[j].node) < 0 })
	return out, nil
}

// apiL1Validator mirrors convertL1ValidatorToAPI.
func (s *Service) apiL1Validator(ctx context.Context, v *l1Validator) (platformapi.APIL1Validator, error) {
	owners, err := s.l1ValidatorOwners(ctx, v)
	if err != nil {
		return platformapi.APIL1Validator{}, err
	}
	remaining, err := s.apiOwner(owners.remaining)
	if err != nil {
		return platformapi.APIL1Validator{}, fmt.Errorf("failed formatting remaining balance owner: %w", err)
	}
	deactivation, err := s.apiOwner(owners.deactivation)
	if err != nil {
		return platformapi.APIL1Validator{}, fmt.Errorf("failed formatting deactivation owner: %w", err)
	}
	pubKey := types.JSONByteSlice(v.publicKey)
	validationID := v.validationID
	minNonce := avajson.Uint64(v.minNonce)
	balance := avajson.Uint64(v.balance)
	return platformapi.APIL1Validator{
		NodeID:    v.node,
		StartTime: avajson.Uint64(v.start),
		Weight:    avajson.Uint64(v.weight),
		BaseL1Validator: platformapi.BaseL1Validator{
			ValidationID:          &validationID,
			PublicKey:             &pubKey,
			RemainingBalanceOwner: remaining,
			DeactivationOwner:     deactivation,
			MinNonce:              &minNonce,
			Balance:               &balance,
		},
	}, nil
}
