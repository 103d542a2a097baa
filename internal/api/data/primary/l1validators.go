package primary

import (
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// L1Validator is L1ValidatorDetailsFull: an L1 validator at the indexed tip
// (the fields platform.getL1Validator answers).
type L1Validator struct {
	ValidationID          string         `json:"validationId"`
	ValidationIDHex       string         `json:"validationIdHex"`
	NodeID                string         `json:"nodeId"`
	SubnetID              string         `json:"subnetId"`
	Weight                uint64         `json:"weight"`
	RemainingBalance      uint64         `json:"remainingBalance"`
	CreationTimestamp     int64          `json:"creationTimestamp"`
	BlsCredentials        map[string]any `json:"blsCredentials"`
	RemainingBalanceOwner BalanceOwner   `json:"remainingBalanceOwner"`
	DeactivationOwner     BalanceOwner   `json:"deactivationOwner"`
}

// BalanceOwner is the OpenAPI BalanceOwner.
type BalanceOwner struct {
	Addresses []string `json:"addresses"`
	Threshold uint32   `json:"threshold"`
}

// ListL1ValidatorsResponse is ListL1ValidatorsResponse; blockHeight is the
// P-chain height the answer is the state of.
type ListL1ValidatorsResponse struct {
	NextPageToken string        `json:"nextPageToken,omitempty"`
	Validators    []L1Validator `json:"validators"`
	BlockHeight   string        `json:"blockHeight"`
}

func (h *handlers) listL1Validators(r *http.Request) (any, error) {
	q, err := h.begin(r, false)
	if err != nil {
		return nil, err
	}
	p := q.p
	var validationID, nodeID, subnetID string
	if s := p.String("l1ValidationId"); s != "" {
		if id, err := api.ParseCB58ID(s); err == nil {
			validationID = id.String()
		} else if b, herr := hex.DecodeString(strings.TrimPrefix(s, "0x")); herr == nil && len(b) == 32 {
			// The document also shows validation ids in hex.
			validationID = ids.ID(b).String()
		} else {
			p.Fail("l1ValidationId: %v", err)
		}
	}
	if s := p.String("nodeId"); s != "" {
		if id, err := api.ParseNodeID(s); err != nil {
			p.Fail("nodeId: %v", err)
		} else {
			nodeID = id.String()
		}
	}
	if s := p.String("subnetId"); s != "" {
		if id, err := api.ParseCB58ID(s); err != nil {
			p.Fail("subnetId: %v", err)
		} else {
			subnetID = id.String()
		}
	}
	inactive := p.Bool("includeInactiveL1Validators", false)
	size := p.PageSize(defaultPageSize, 1, maxPageSize)
	var cur validatorCursor
	has, err := h.decodeCursor(q, routeL1Validators, &cur)
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
	height, _, ok, err := tip(ctx, h.d.DB, "P")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, api.Unavailable("the P-chain has not been indexed yet; try again later")
	}
	// A validator's balance is its fee budget left: end_accumulated_fee
	// minus the fees accrued by the tip (as the node computes it).
	var accruedText string
	err = h.d.DB.QueryRowContext(ctx, `SELECT l1_accrued_fees FROM p_block_state WHERE height = $1`, height).Scan(&accruedText)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("accrued L1 fees at %d: %w", height, err)
	}
	accrued := decimal(unpad(accruedText))

	sp := &stakerPage{where: []string{`removed_height < 0`}}
	if !inactive {
		sp.where = append(sp.where, `end_accumulated_fee <> `+sp.arg(pad(0)))
	}
	if validationID != "" {
		sp.where = append(sp.where, `validation_id = `+sp.arg(validationID))
	}
	if nodeID != "" {
		sp.where = append(sp.where, `node_id = `+sp.arg(nodeID))
	}
	if subnetID != "" {
		sp.where = append(sp.where, `subnet_id = `+sp.arg(subnetID))
	}
	if has {
		sp.where = append(sp.where, fmt.Sprintf(`(start_time, validation_id) > (%s, %s)`, sp.arg(cur.T), sp.arg(cur.ID)))
	}
	rows, err := h.d.DB.QueryContext(ctx, `SELECT validation_id, subnet_id, node_id, public_key, weight, end_accumulated_fee,
		remaining_balance_owner, deactivation_owner, start_time FROM p_l1_validators WHERE `+strings.Join(sp.where, ` AND `)+
		` ORDER BY start_time, validation_id LIMIT `+strconv.Itoa(size+1), sp.args...)
	if err != nil {
		return nil, fmt.Errorf("list L1 validators: %w", err)
	}
	defer rows.Close()
	out := ListL1ValidatorsResponse{Validators: []L1Validator{}, BlockHeight: strconv.FormatInt(height, 10)}
	for rows.Next() {
		var (
			v                      L1Validator
			key, weight, eaf       string
			remaining, deactivator string
		)
		if err := rows.Scan(&v.ValidationID, &v.SubnetID, &v.NodeID, &key, &weight, &eaf, &remaining, &deactivator,
			&v.CreationTimestamp); err != nil {
			return nil, fmt.Errorf("list L1 validators: %w", err)
		}
		if len(out.Validators) == size {
			last := out.Validators[size-1]
			out.NextPageToken = h.encodeCursor(q, routeL1Validators, validatorCursor{T: last.CreationTimestamp, ID: last.ValidationID})
			break
		}
		id, err := ids.FromString(v.ValidationID)
		if err != nil {
			return nil, fmt.Errorf("stored validation id %q: %w", v.ValidationID, err)
		}
		v.ValidationIDHex = "0x" + hex.EncodeToString(id[:])
		v.Weight = decimal(unpad(weight)).Uint64()
		if e := decimal(unpad(eaf)); e.Sign() > 0 && e.Cmp(accrued) > 0 {
			v.RemainingBalance = e.Sub(e, accrued).Uint64()
		}
		v.BlsCredentials = map[string]any{"publicKey": key}
		if v.RemainingBalanceOwner, err = balanceOwner(remaining); err != nil {
			return nil, err
		}
		if v.DeactivationOwner, err = balanceOwner(deactivator); err != nil {
			return nil, err
		}
		out.Validators = append(out.Validators, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list L1 validators: %w", err)
	}
	return out, nil
}

// balanceOwner reads a stored owner JSON (addresses without chain prefix).
func balanceOwner(js string) (BalanceOwner, error) {
	o := BalanceOwner{Addresses: []string{}}
	if js == "" {
		return o, nil
	}
	var s struct {
		Threshold uint32   `json:"threshold"`
		Addresses []string `json:"addresses"`
	}
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		return o, fmt.Errorf("stored owner: %w", err)
	}
	o.Threshold = s.Threshold
	if s.Addresses != nil {
		o.Addresses = s.Addresses
	}
	return o, nil
}
