package metrics

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// RouteValidatorAddresses is getValidatorsByDateRange.
const RouteValidatorAddresses = "GET /v2/subnets/{subnetId}/validators:getAddresses"

// Page sizes of validators:getAddresses (the document's bounds).
const (
	addressesDefaultPageSize = 1000
	addressesMaxPageSize     = 5000
)

// PChainAddressDetails is the document's PChainAddressDetails.
type PChainAddressDetails struct {
	Addresses []string `json:"addresses"`
	SortKey   string   `json:"sortKey"`
}

// AddressesResponse is the document's PChainLookingGlassResponse.
type AddressesResponse struct {
	NextPageToken string                 `json:"nextPageToken,omitempty"`
	Addresses     []PChainAddressDetails `json:"addresses"`
}

// addressesCursor is a getAddresses page token's stored state: the query and
// the last validator tx served.
type addressesCursor struct {
	Subnet string `json:"s"`
	Start  int64  `json:"a"`
	End    int64  `json:"b"`
	Time   int64  `json:"t"`
	TxID   string `json:"x"`
}

// validatorAddresses answers GET /v2/subnets/{subnetId}/validators:getAddresses:
// one entry per validator tx of the subnet (AddValidatorTx,
// AddPermissionlessValidatorTx, genesis validators) whose validation period
// [start, end] overlaps [startTimestamp, endTimestamp]: addresses is the
// validation reward owner's P-chain addresses (who is set to receive the
// rewards) and sortKey the time of the tx's block, as decimal unix seconds;
// oldest first, then by tx id. Permissioned subnet validators and L1
// validators earn no rewards and are not listed.
func (h *handlers) validatorAddresses(r *http.Request) (any, error) {
	ctx := r.Context()
	p := api.NewParams(r)
	start, end := timeRange(p)
	size := p.PageSize(addressesDefaultPageSize, 1, addressesMaxPageSize)
	network := p.Enum("network", "", "mainnet", "fuji", "testnet")
	id, err := api.ParseCB58ID(r.PathValue("subnetId"))
	if err != nil {
		p.Fail("subnetId: %s", err.Error())
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	if network != "" {
		if err := h.d.Network.CheckNetwork(network); err != nil {
			return nil, err
		}
	}
	subnet := id.String()
	if err := h.knownSubnet(ctx, subnet); err != nil {
		return nil, err
	}
	cur := addressesCursor{Subnet: subnet, Start: start, End: end, Time: -1}
	var tok addressesCursor
	found, err := h.d.Tokens.Load(ctx, p.String("pageToken"), RouteValidatorAddresses, &tok)
	if err != nil {
		return nil, err
	}
	if found {
		switch {
		case tok.Subnet != subnet:
			return nil, errQueryChanged("subnetId")
		case p.Has("startTimestamp") && start != tok.Start:
			return nil, errQueryChanged("startTimestamp")
		case p.Has("endTimestamp") && end != tok.End:
			return nil, errQueryChanged("endTimestamp")
		}
		cur = tok
	}
	hi := cur.End
	if hi < 0 {
		hi = maxTimestamp
	}
	rows, err := h.d.DB.QueryContext(ctx, `SELECT tx_id, added_time, validation_reward_owner FROM p_stakers
		WHERE subnet_id = $1 AND kind = 'VALIDATOR' AND (added_time > $2 OR (added_time = $2 AND tx_id > $3))
		AND start_time <= $4 AND end_time >= $5 ORDER BY added_time, tx_id LIMIT $6`,
		subnet, cur.Time, cur.TxID, hi, max(cur.Start, 0), size+1)
	if err != nil {
		return nil, fmt.Errorf("read validators of %s: %w", subnet, err)
	}
	type row struct {
		txID, owner string
		added       int64
	}
	var got []row
	for rows.Next() {
		var x row
		if err := rows.Scan(&x.txID, &x.added, &x.owner); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read validators of %s: %w", subnet, err)
		}
		got = append(got, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read validators of %s: %w", subnet, err)
	}
	resp := &AddressesResponse{Addresses: []PChainAddressDetails{}}
	more := len(got) > size
	if more {
		got = got[:size]
	}
	for _, x := range got {
		var o struct {
			Addresses []string `json:"addresses"`
		}
		if err := json.Unmarshal([]byte(x.owner), &o); err != nil {
			return nil, fmt.Errorf("reward owner of %s: %w", x.txID, err)
		}
		addrs := make([]string, len(o.Addresses))
		for i, a := range o.Addresses {
			addrs[i] = "P-" + a
		}
		resp.Addresses = append(resp.Addresses, PChainAddressDetails{Addresses: addrs, SortKey: strconv.FormatInt(x.added, 10)})
	}
	if more {
		last := got[len(got)-1]
		if resp.NextPageToken, err = h.d.Tokens.Save(ctx, RouteValidatorAddresses,
			addressesCursor{Subnet: subnet, Start: cur.Start, End: cur.End, Time: last.added, TxID: last.txID}); err != nil {
			return nil, err
		}
	}
	return resp, nil
}
