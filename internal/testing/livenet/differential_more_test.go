package livenet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/libevm/common/hexutil"
)

// getJSON GETs a data-service URL and decodes its 200 answer into out.
func getJSON(ctx context.Context, u string, out any) error {
	code, body, err := httpGet(ctx, u)
	if err != nil {
		return err
	}
	if code != 200 {
		return fmt.Errorf("GET %s: HTTP %d: %s", u, code, truncate(string(body), 300))
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	return d.Decode(out)
}

// diffFields lists the members of want that got does not equal, in key order.
func diffFields(got, want map[string]string) []string {
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var d []string
	for _, k := range keys {
		if got[k] != want[k] {
			d = append(d, fmt.Sprintf("%s: permafrost %q, node %q", k, got[k], want[k]))
		}
	}
	return d
}

// evmBlocks compares every block of C and the L1 as the data service
// serves it by number and by hash (/v1/chains/{chainId}/blocks/{blockId})
// with the node's eth_getBlockByNumber and its receipts (fees).
func (c *comparer) evmBlocks(ctx context.Context) {
	for _, chain := range []string{ChainC, ChainL1} {
		rpcURL, chainID := c.evmChain(chain)
		kind := chain + " EVM block (blocks/{number|hash} vs eth_getBlockByNumber + receipts)"
		cumulative := uint64(0)
		for h := uint64(0); h <= c.tips[chain]; h++ {
			where := fmt.Sprintf("height %d", h)
			var nb struct {
				Hash          string          `json:"hash"`
				ParentHash    string          `json:"parentHash"`
				Timestamp     hexutil.Uint64  `json:"timestamp"`
				GasUsed       hexutil.Uint64  `json:"gasUsed"`
				GasLimit      hexutil.Uint64  `json:"gasLimit"`
				BaseFee       *hexutil.Big    `json:"baseFeePerGas"`
				BlockGasCost  *hexutil.Big    `json:"blockGasCost"`
				Transactions  []string        `json:"transactions"`
				TimestampMs   *hexutil.Uint64 `json:"timestampMilliseconds"`
				MinDelayExcss *hexutil.Uint64 `json:"minDelayExcess"`
			}
			if err := rpcCall(ctx, rpcURL, "eth_getBlockByNumber", []any{hexutil.EncodeUint64(h), false}, &nb); err != nil {
				c.rep.check(kind, where, []string{"node: " + err.Error()})
				continue
			}
			var receipts []struct {
				GasUsed           hexutil.Uint64 `json:"gasUsed"`
				EffectiveGasPrice hexutil.Big    `json:"effectiveGasPrice"`
			}
			if err := rpcCall(ctx, rpcURL, "eth_getBlockReceipts", []any{hexutil.EncodeUint64(h)}, &receipts); err != nil {
				c.rep.check(kind, where, []string{"node receipts: " + err.Error()})
				continue
			}
			fees := new(big.Int)
			for _, r := range receipts {
				fees.Add(fees, new(big.Int).Mul(new(big.Int).SetUint64(uint64(r.GasUsed)), (*big.Int)(&r.EffectiveGasPrice)))
			}
			cumulative += uint64(len(nb.Transactions))
			bigOr0 := func(v *hexutil.Big) string {
				if v == nil {
					return "0"
				}
				return (*big.Int)(v).String()
			}
			want := map[string]string{
				"blockNumber": strconv.FormatUint(h, 10), "blockHash": strings.ToLower(nb.Hash),
				"parentHash": strings.ToLower(nb.ParentHash), "blockTimestamp": strconv.FormatUint(uint64(nb.Timestamp), 10),
				"gasUsed": strconv.FormatUint(uint64(nb.GasUsed), 10), "gasLimit": strconv.FormatUint(uint64(nb.GasLimit), 10),
				"baseFee": bigOr0(nb.BaseFee), "gasCost": bigOr0(nb.BlockGasCost), "txCount": strconv.Itoa(len(nb.Transactions)),
				"feesSpent": fees.String(), "cumulativeTransactions": strconv.FormatUint(cumulative, 10), "chainId": chainID,
			}
			if nb.TimestampMs != nil {
				want["blockTimestampMilliseconds"] = strconv.FormatUint(uint64(*nb.TimestampMs), 10)
			}
			if nb.MinDelayExcss != nil {
				want["blockMinDelayExcess"] = strconv.FormatUint(uint64(*nb.MinDelayExcss), 10)
			}
			for _, id := range []string{strconv.FormatUint(h, 10), strings.ToLower(nb.Hash)} {
				var g map[string]any
				if err := getJSON(ctx, fmt.Sprintf("%s/v1/chains/%s/blocks/%s", c.pf, chainID, id), &g); err != nil {
					c.rep.check(kind, where+" by "+id, []string{err.Error()})
					continue
				}
				got := map[string]string{}
				for k := range want {
					if v, ok := g[k]; ok {
						got[k] = strings.ToLower(jsonScalar(v))
					}
				}
				c.rep.check(kind, where+" by "+id, diffFields(got, want))
			}
		}
	}
}

// jsonScalar renders a decoded JSON scalar as its text (numbers without an
// exponent).
func jsonScalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		return x.String()
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// nodeValidator is a primary-network validator as getCurrentValidators
// shows it.
type nodeValidator struct {
	TxID            string `json:"txID"`
	NodeID          string `json:"nodeID"`
	StartTime       string `json:"startTime"`
	EndTime         string `json:"endTime"`
	Weight          string `json:"weight"`
	PotentialReward string `json:"potentialReward"`
	DelegationFee   string `json:"delegationFee"`
	// The node lists the delegators themselves only when asked about one
	// node ID; their count and weight always.
	DelegatorCount  string `json:"delegatorCount"`
	DelegatorWeight string `json:"delegatorWeight"`
}

// servedValidator is the part of the data service's ActiveValidatorDetails
// the node can vouch for (uptime and connection are node-local).
type servedValidator struct {
	TxHash           string  `json:"txHash"`
	NodeID           string  `json:"nodeId"`
	AmountStaked     string  `json:"amountStaked"`
	DelegationFee    string  `json:"delegationFee"`
	StartTimestamp   int64   `json:"startTimestamp"`
	EndTimestamp     int64   `json:"endTimestamp"`
	DelegatorCount   int64   `json:"delegatorCount"`
	AmountDelegated  string  `json:"amountDelegated"`
	ValidationStatus string  `json:"validationStatus"`
	PotentialRewards rewards `json:"potentialRewards"`
}

type rewards struct {
	ValidationRewardAmount string `json:"validationRewardAmount"`
}

// validatorFields are a validator's compared members, from the node's
// answer (want) or the data service's (got).
func (v nodeValidator) fields() map[string]string {
	return map[string]string{"txHash": v.TxID, "nodeId": v.NodeID, "amountStaked": v.Weight,
		"delegationFee": decimalText(v.DelegationFee), "startTimestamp": v.StartTime, "endTimestamp": v.EndTime,
		"delegatorCount": v.DelegatorCount, "amountDelegated": v.DelegatorWeight,
		"validationRewardAmount": v.PotentialReward, "validationStatus": "active"}
}

func (s servedValidator) fields() map[string]string {
	delegated := s.AmountDelegated
	if delegated == "" {
		delegated = "0"
	}
	return map[string]string{"txHash": s.TxHash, "nodeId": s.NodeID, "amountStaked": s.AmountStaked,
		"delegationFee": decimalText(s.DelegationFee), "startTimestamp": strconv.FormatInt(s.StartTimestamp, 10),
		"endTimestamp": strconv.FormatInt(s.EndTimestamp, 10), "delegatorCount": strconv.FormatInt(s.DelegatorCount, 10),
		"amountDelegated": delegated, "validationRewardAmount": s.PotentialRewards.ValidationRewardAmount,
		"validationStatus": s.ValidationStatus}
}

// decimalText normalises a decimal ("2.0000" and "2" compare equal).
func decimalText(s string) string {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return s
	}
	return r.RatString()
}

// validators compares the data service's active primary-network
// validators (the listing and /validators/{nodeId}) with the node's
// platform.getCurrentValidators: stake, times, delegation fee, delegators
// and the potential reward; uptime and connection are node-local. when
// names the moment in the report.
func (c *comparer) validators(ctx context.Context, when string) {
	kind := "P validators " + when + " (data /validators[/{nodeId}] vs platform.getCurrentValidators)"
	var nv struct {
		Validators []nodeValidator `json:"validators"`
	}
	if err := rpcCall(ctx, c.node+"/ext/bc/P", "platform.getCurrentValidators", map[string]any{}, &nv); err != nil {
		c.rep.check(kind, "node", []string{err.Error()})
		return
	}
	// Without subnetId the data service lists every subnet's validators
	// (the document says so); the node's answer is the primary network's.
	base := c.pf + "/v1/networks/testnet/validators?validationStatus=active&pageSize=100&subnetId=" + constants.PrimaryNetworkID.String()
	listed := map[string]servedValidator{}
	for next := base; next != ""; {
		var page struct {
			Validators    []servedValidator `json:"validators"`
			NextPageToken string            `json:"nextPageToken"`
		}
		if err := getJSON(ctx, next, &page); err != nil {
			c.rep.check(kind, "listing", []string{err.Error()})
			return
		}
		for _, v := range page.Validators {
			listed[v.TxHash] = v
		}
		next = ""
		if page.NextPageToken != "" {
			next = base + "&pageToken=" + url.QueryEscape(page.NextPageToken)
		}
	}
	if len(listed) != len(nv.Validators) {
		c.rep.check(kind, "listing", []string{fmt.Sprintf("%d active validators served, node has %d", len(listed), len(nv.Validators))})
	}
	for _, v := range nv.Validators {
		want := v.fields()
		g, ok := listed[v.TxID]
		if !ok {
			c.rep.check(kind, "listing "+v.NodeID, []string{"not listed"})
		} else {
			c.rep.check(kind, "listing "+v.NodeID, diffFields(g.fields(), want))
		}
		var page struct {
			Validators []servedValidator `json:"validators"`
		}
		if err := getJSON(ctx, c.pf+"/v1/networks/testnet/validators/"+v.NodeID+"?validationStatus=active", &page); err != nil {
			c.rep.check(kind, "by node "+v.NodeID, []string{err.Error()})
			continue
		}
		var d []string
		found := false
		for _, s := range page.Validators {
			if s.TxHash == v.TxID {
				found = true
				d = diffFields(s.fields(), want)
			}
		}
		if !found {
			d = append(d, "validation not served")
		}
		c.rep.check(kind, "by node "+v.NodeID, d)
	}
}

// utxoRef is one consumed or emitted UTXO, as the node's tx JSON or the
// data service shows it: creating tx, index, asset and amount ("" for
// outputs without one, such as NFTs).
type utxoRef struct{ tx, index, asset, amount string }

// nodeTxUTXOs reads the inputs (imported ones included) and the outputs of
// a platform.getTx / avm.getTx JSON answer. Outputs are the tx's own
// outputs (indexes 0..n-1); exported, staked and created-asset outputs
// follow them and are left out.
func nodeTxUTXOs(unsigned map[string]any) (consumed []utxoRef, outputs []utxoRef, memo string) {
	amountOf := func(m map[string]any) string {
		for m != nil {
			if a, ok := m["amount"]; ok {
				return jsonScalar(a)
			}
			// Stakeable-locked wrappers nest the real input/output.
			next, _ := m["input"].(map[string]any)
			if next == nil {
				next, _ = m["output"].(map[string]any)
			}
			m = next
		}
		return ""
	}
	for _, key := range []string{"inputs", "importedInputs"} {
		list, _ := unsigned[key].([]any)
		for _, x := range list {
			in, _ := x.(map[string]any)
			inner, _ := in["input"].(map[string]any)
			consumed = append(consumed, utxoRef{tx: jsonScalar(in["txID"]), index: jsonScalar(in["outputIndex"]),
				asset: jsonScalar(in["assetID"]), amount: amountOf(inner)})
		}
	}
	// OperationTx: the UTXOs its operations spend (mint rights, NFTs),
	// which carry no amount.
	ops, _ := unsigned["operations"].([]any)
	for _, x := range ops {
		op, _ := x.(map[string]any)
		refs, _ := op["inputIDs"].([]any)
		for _, y := range refs {
			in, _ := y.(map[string]any)
			consumed = append(consumed, utxoRef{tx: jsonScalar(in["txID"]), index: jsonScalar(in["outputIndex"]),
				asset: jsonScalar(op["assetID"])})
		}
	}
	list, _ := unsigned["outputs"].([]any)
	for i, x := range list {
		out, _ := x.(map[string]any)
		inner, _ := out["output"].(map[string]any)
		outputs = append(outputs, utxoRef{index: strconv.Itoa(i), asset: jsonScalar(out["assetID"]), amount: amountOf(inner)})
	}
	memo = jsonScalar(unsigned["memo"])
	if memo == "0x" {
		memo = ""
	}
	return consumed, outputs, memo
}

// servedUTXOs reads consumedUtxos or emittedUtxos of a served P or X tx.
func servedUTXOs(tx map[string]any, key string) []utxoRef {
	var out []utxoRef
	for _, u := range servedUTXOList(tx, key) {
		out = append(out, utxoRef{tx: u.tx, index: u.index, asset: u.asset, amount: u.amount})
	}
	return out
}

// pxTxs compares every P and X tx of the log as the data service serves it
// by ID (/blockchains/{p-chain|x-chain}/transactions/{txHash}) with the
// node's platform.getTx / avm.getTx (JSON): type (as issued and accepted),
// block, memo, every consumed UTXO (imports included) with its amount, and
// every output of the tx with its amount.
func (c *comparer) pxTxs(ctx context.Context) {
	for _, r := range c.n.Log.Records() {
		if r.Chain != ChainP && r.Chain != ChainX {
			continue
		}
		kind := r.Chain + " tx by ID (data /transactions/{txHash} vs getTx)"
		path, method, alias := "/ext/bc/P", "platform.getTx", "p-chain"
		if r.Chain == ChainX {
			path, method, alias = "/ext/bc/X", "avm.getTx", "x-chain"
		}
		var nt struct {
			Tx struct {
				Unsigned json.RawMessage `json:"unsignedTx"`
			} `json:"tx"`
		}
		if err := rpcCall(ctx, c.node+path, method, map[string]any{"txID": r.TxID, "encoding": "json"}, &nt); err != nil {
			c.rep.check(kind, r.TxID, []string{"node: " + err.Error()})
			continue
		}
		// Amounts are uint64 JSON numbers: decoded as written, not as float64.
		var unsigned map[string]any
		d := json.NewDecoder(bytes.NewReader(nt.Tx.Unsigned))
		d.UseNumber()
		if err := d.Decode(&unsigned); err != nil {
			c.rep.check(kind, r.TxID, []string{"node: " + err.Error()})
			continue
		}
		var g map[string]any
		if err := getJSON(ctx, fmt.Sprintf("%s/v1/networks/testnet/blockchains/%s/transactions/%s", c.pf, alias, r.TxID), &g); err != nil {
			c.rep.check(kind, r.TxID, []string{err.Error()})
			continue
		}
		consumed, outputs, memo := nodeTxUTXOs(unsigned)
		noAmount := map[string]bool{}
		for _, u := range consumed {
			if u.amount == "" {
				noAmount[u.tx+":"+u.index] = true
			}
		}
		served := servedUTXOs(g, "consumedUtxos")
		for i, u := range served {
			if noAmount[u.tx+":"+u.index] {
				served[i].amount = ""
			}
		}
		want := map[string]string{"txType": r.Type, "memo": memo, "blockHash": r.BlockID,
			"block": strconv.FormatUint(r.Height, 10), "consumed": fmt.Sprint(sortedRefs(consumed))}
		got := map[string]string{"txType": jsonScalar(g["txType"]), "memo": jsonScalar(g["memo"]), "blockHash": jsonScalar(g["blockHash"]),
			"block": jsonScalar(g["blockNumber"]), "consumed": fmt.Sprint(sortedRefs(served))}
		if r.Chain == ChainX {
			got["block"] = jsonScalar(g["blockHeight"])
		}
		emitted := map[string]utxoRef{}
		for _, u := range servedUTXOs(g, "emittedUtxos") {
			if u.tx == r.TxID {
				emitted[u.index] = utxoRef{index: u.index, asset: u.asset, amount: u.amount}
			}
		}
		for _, o := range outputs {
			k := "output " + o.index
			want[k] = fmt.Sprint(o)
			got[k] = fmt.Sprint(emitted[o.index])
			if o.amount == "" { // no amount (an NFT): present is all
				got[k] = fmt.Sprint(utxoRef{index: o.index, asset: emitted[o.index].asset})
			}
		}
		c.rep.check(kind, r.TxID, diffFields(got, want))
	}
}

func sortedRefs(rs []utxoRef) []utxoRef {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].tx != rs[j].tx {
			return rs[i].tx < rs[j].tx
		}
		return rs[i].index < rs[j].index
	})
	return rs
}

// l1Validators compares every L1 validator the workload registered (the
// main L1's and L1 B's, active or not) as the data service lists it
// (/l1Validators?l1ValidationId=..., inactive included) with the node's
// platform.getL1Validator: subnet, node, weight, balance left, start time
// and the owners' thresholds and addresses.
func (c *comparer) l1Validators(ctx context.Context) {
	const kind = "P L1 validators (data /l1Validators vs platform.getL1Validator)"
	var vids []string
	for _, id := range c.n.L1.ValidationIDs {
		vids = append(vids, id.String())
	}
	for _, v := range c.res.L1Validators {
		vids = append(vids, v.ValidationID.String())
	}
	type owner struct {
		Threshold json.Number `json:"threshold"`
		Addresses []string    `json:"addresses"`
	}
	// The node names P-chain addresses with the chain alias (P-custom1...),
	// the data service without it, as the document's examples do.
	ownerText := func(o owner) string {
		a := make([]string, len(o.Addresses))
		for i, x := range o.Addresses {
			a[i] = strings.TrimPrefix(x, "P-")
		}
		sort.Strings(a)
		return o.Threshold.String() + " " + strings.Join(a, ",")
	}
	for _, vid := range vids {
		var nv struct {
			SubnetID              string      `json:"subnetID"`
			NodeID                string      `json:"nodeID"`
			Weight                json.Number `json:"weight"`
			Balance               json.Number `json:"balance"`
			StartTime             json.Number `json:"startTime"`
			RemainingBalanceOwner owner       `json:"remainingBalanceOwner"`
			DeactivationOwner     owner       `json:"deactivationOwner"`
		}
		nodeErr := rpcCall(ctx, c.node+"/ext/bc/P", "platform.getL1Validator", map[string]any{"validationID": vid}, &nv)
		var page struct {
			Validators []struct {
				ValidationID          string      `json:"validationId"`
				NodeID                string      `json:"nodeId"`
				SubnetID              string      `json:"subnetId"`
				Weight                json.Number `json:"weight"`
				RemainingBalance      json.Number `json:"remainingBalance"`
				CreationTimestamp     json.Number `json:"creationTimestamp"`
				RemainingBalanceOwner owner       `json:"remainingBalanceOwner"`
				DeactivationOwner     owner       `json:"deactivationOwner"`
			} `json:"validators"`
		}
		if err := getJSON(ctx, c.pf+"/v1/networks/testnet/l1Validators?includeInactiveL1Validators=true&l1ValidationId="+vid, &page); err != nil {
			c.rep.check(kind, vid, []string{err.Error()})
			continue
		}
		if nodeErr != nil {
			// Removed (weight set to 0): the node no longer knows it, and
			// neither may the listing.
			var d []string
			if len(page.Validators) != 0 {
				d = append(d, fmt.Sprintf("node: %v; served %+v", nodeErr, page.Validators))
			}
			c.rep.check(kind, vid+" (removed)", d)
			continue
		}
		if len(page.Validators) != 1 {
			c.rep.check(kind, vid, []string{fmt.Sprintf("%d validators served, want 1", len(page.Validators))})
			continue
		}
		s := page.Validators[0]
		want := map[string]string{"subnetId": nv.SubnetID, "nodeId": nv.NodeID, "weight": nv.Weight.String(),
			"remainingBalance": nv.Balance.String(), "creationTimestamp": nv.StartTime.String(),
			"remainingBalanceOwner": ownerText(nv.RemainingBalanceOwner), "deactivationOwner": ownerText(nv.DeactivationOwner)}
		got := map[string]string{"subnetId": s.SubnetID, "nodeId": s.NodeID, "weight": s.Weight.String(),
			"remainingBalance": s.RemainingBalance.String(), "creationTimestamp": s.CreationTimestamp.String(),
			"remainingBalanceOwner": ownerText(s.RemainingBalanceOwner), "deactivationOwner": ownerText(s.DeactivationOwner)}
		c.rep.check(kind, vid, diffFields(got, want))
	}
}
