package pvmoracle_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/formatting"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/testing/pvmoracle"
)

// nodeLocal are members of the VM's validator records that describe the
// node (uptime as this node observed it), not the chain: Permafrost cannot
// know them (docs/operations.md).
var nodeLocal = map[string]bool{"uptime": true, "connected": true}

// differ compares the oracle's answers with a Permafrost's after a step.
type differ struct {
	o     *pvmoracle.Oracle
	g     *genesis.Genesis
	addrs []string
	// txs, stakers and subnets are what the chain built so far: every tx
	// is looked up, every staker's reward UTXOs and every subnet's
	// validators and supply compared.
	txs, stakers, subnets []ids.ID
	compared              map[string]int
	failures              int
}

func newDiffer(t *testing.T, o *pvmoracle.Oracle, keys []*secp256k1.PrivateKey) *differ {
	t.Helper()
	g, err := genesis.Load(o.Network.Config.NetworkID, o.Network.Path)
	if err != nil {
		t.Fatal(err)
	}
	g.Upgrades = o.Upgrades
	d := &differ{o: o, g: g, subnets: []ids.ID{constants.PrimaryNetworkID}, compared: map[string]int{}}
	for _, k := range keys {
		a, err := o.Address(k.Address())
		if err != nil {
			t.Fatal(err)
		}
		d.addrs = append(d.addrs, a)
	}
	return d
}

// fail reports one difference (the first 40; the count at the end).
func (d *differ) fail(t *testing.T, format string, args ...any) {
	t.Helper()
	d.failures++
	if d.failures <= 40 {
		t.Errorf(format, args...)
	}
}

func (d *differ) report(t *testing.T) {
	kinds := make([]string, 0, len(d.compared))
	for k := range d.compared {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, " %s=%d", k, d.compared[k])
	}
	t.Logf("compared with platformvm:%s; %d differences", b.String(), d.failures)
}

// compare checks, at the VM's last accepted height: the platform RPC
// (getBlockByHeight, getBlockchains, getBalance per address and of all of them,
// getCurrentValidators of every subnet, and of its validators by node ID
// with their delegators, and getCurrentSupply per subnet) answer for answer;
// and the data service against the VM's getUTXOs (unspent UTXOs per
// address), getStake (staked amount per address), getRewardUTXOs (reward
// UTXOs per staker) and getTx (every tx built is found by both or neither).
func (d *differ) compare(t *testing.T, step string, p *permafrost) {
	t.Helper()
	_, h, err := d.o.Tip()
	if err != nil {
		t.Fatal(err)
	}
	where := fmt.Sprintf("%s, height %d (%s)", p.backend, h, step)
	rpc := func(method string, params any, norm func(any) any) {
		t.Helper()
		want, wantErr, err := d.o.Call(method, params)
		if err != nil {
			t.Fatal(err)
		}
		got, gotErr, err := p.call(method, params)
		if err != nil {
			t.Fatal(err)
		}
		d.compared[method]++
		if wantErr != gotErr {
			d.fail(t, "%s: %s %v: error %q, platformvm %q", where, method, params, gotErr, wantErr)
			return
		}
		if w, g := canonical(t, want, norm), canonical(t, got, norm); w != g {
			d.fail(t, "%s: %s %v:\n permafrost %s\n platformvm %s", where, method, params, g, w)
		}
	}
	rpc("platform.getBlockByHeight", map[string]any{"height": fmt.Sprint(h), "encoding": "hex"}, nil)
	for _, a := range d.addrs {
		rpc("platform.getBalance", map[string]any{"addresses": []string{a}}, sortUTXOIDs)
	}
	rpc("platform.getBalance", map[string]any{"addresses": d.addrs}, sortUTXOIDs)
	rpc("platform.getBlockchains", struct{}{}, sortBlockchains)
	for _, s := range d.subnets {
		rpc("platform.getCurrentValidators", map[string]any{"subnetID": s.String()}, normValidators)
		// Asked by node, the answer lists each validator's delegators.
		if nodes := d.vmNodes(t, s); len(nodes) > 0 {
			rpc("platform.getCurrentValidators", map[string]any{"subnetID": s.String(), "nodeIDs": nodes}, normValidators)
		}
		rpc("platform.getCurrentSupply", map[string]any{"subnetID": s.String()}, nil)
	}
	for _, a := range d.addrs {
		d.compareUTXOs(t, where, p, a)
		d.compareStake(t, where, p, a)
	}
	d.compareRewards(t, where, p)
	for _, id := range d.txs {
		d.compareTx(t, where, p, id)
	}
}

// compareUTXOs: the unspent, unstaked UTXOs of a (id and amount) the data
// service lists are the VM's getUTXOs.
func (d *differ) compareUTXOs(t *testing.T, where string, p *permafrost, a string) {
	t.Helper()
	want := map[string]uint64{}
	for _, u := range d.vmUTXOs(t, "platform.getUTXOs", map[string]any{"addresses": []string{a}, "limit": 1024, "encoding": "hex"}) {
		want[u.InputID().String()] = amountOf(u)
	}
	var page struct {
		Utxos []struct {
			UtxoID string `json:"utxoId"`
			Amount string `json:"amount"`
			Staked bool   `json:"staked"`
		} `json:"utxos"`
	}
	if code := p.get(t, "/v1/networks/testnet/blockchains/p-chain/utxos", url.Values{"addresses": {a}, "pageSize": {"100"}}, &page); code != 200 {
		d.fail(t, "%s: utxos of %s: status %d", where, a, code)
		return
	}
	got := map[string]uint64{}
	for _, u := range page.Utxos {
		if !u.Staked {
			got[u.UtxoID] = parseAmount(t, u.Amount)
		}
	}
	d.compared["data utxos"]++
	if diff := mapDiff(got, want); diff != "" {
		d.fail(t, "%s: unstaked utxos of %s (data service vs getUTXOs): %s", where, a, diff)
	}
}

// compareStake: the AVAX the data service's balances show staked (current
// and pending) for a is the VM's getStake.
func (d *differ) compareStake(t *testing.T, where string, p *permafrost, a string) {
	t.Helper()
	raw, msg, err := d.o.Call("platform.getStake", map[string]any{"addresses": []string{a}, "encoding": "hex"})
	if err != nil || msg != "" {
		t.Fatalf("getStake %s: %v %s", a, err, msg)
	}
	var reply struct {
		Staked json.Number `json:"staked"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		t.Fatal(err)
	}
	var bal struct {
		Balances map[string]json.RawMessage `json:"balances"`
	}
	if code := p.get(t, "/v1/networks/testnet/blockchains/p-chain/balances", url.Values{"addresses": {a}}, &bal); code != 200 {
		d.fail(t, "%s: balances of %s: status %d", where, a, code)
		return
	}
	var got uint64
	for _, k := range []string{"unlockedStaked", "lockedStaked", "pendingStaked"} {
		var amounts []struct {
			AssetID string `json:"assetId"`
			Amount  string `json:"amount"`
		}
		if err := json.Unmarshal(bal.Balances[k], &amounts); err != nil {
			t.Fatalf("balances.%s: %v", k, err)
		}
		for _, x := range amounts {
			if x.AssetID == d.g.AvaxAssetID.String() {
				got += parseAmount(t, x.Amount)
			}
		}
	}
	d.compared["data staked balance"]++
	if want := parseAmount(t, reply.Staked.String()); got != want {
		d.fail(t, "%s: staked AVAX of %s: data service %d, getStake %d", where, a, got, want)
	}
}

// compareRewards: the reward UTXOs the data service lists for the reward
// owners are, per staking tx, the VM's getRewardUTXOs.
func (d *differ) compareRewards(t *testing.T, where string, p *permafrost) {
	t.Helper()
	want := map[string]uint64{}
	for _, id := range d.stakers {
		for _, u := range d.vmUTXOs(t, "platform.getRewardUTXOs", map[string]any{"txID": id.String(), "encoding": "hex"}) {
			want[id.String()+"/"+u.InputID().String()] = amountOf(u)
		}
	}
	var page struct {
		HistoricalRewards []struct {
			TxHash string `json:"txHash"`
			UtxoID string `json:"utxoId"`
			Reward struct {
				Amount string `json:"amount"`
			} `json:"reward"`
		} `json:"historicalRewards"`
	}
	if code := p.get(t, "/v1/networks/testnet/rewards", url.Values{"addresses": {strings.Join(d.addrs, ",")}, "pageSize": {"100"}}, &page); code != 200 {
		d.fail(t, "%s: rewards: status %d", where, code)
		return
	}
	got := map[string]uint64{}
	for _, r := range page.HistoricalRewards {
		got[r.TxHash+"/"+r.UtxoID] = parseAmount(t, r.Reward.Amount)
	}
	d.compared["data rewards"]++
	if diff := mapDiff(got, want); diff != "" {
		d.fail(t, "%s: reward utxos (data service vs getRewardUTXOs): %s", where, diff)
	}
}

// compareTx: a tx the VM's getTx finds is the data service's, and one it
// does not know is not.
func (d *differ) compareTx(t *testing.T, where string, p *permafrost, id ids.ID) {
	t.Helper()
	_, msg, err := d.o.Call("platform.getTx", map[string]any{"txID": id.String(), "encoding": "hex"})
	if err != nil {
		t.Fatal(err)
	}
	var tx struct {
		TxHash string `json:"txHash"`
	}
	code := p.get(t, "/v1/networks/testnet/blockchains/p-chain/transactions/"+id.String(), nil, &tx)
	d.compared["data tx"]++
	switch {
	case msg == "" && (code != 200 || tx.TxHash != id.String()):
		d.fail(t, "%s: tx %s: data service status %d, platformvm has it", where, id, code)
	case msg != "" && code != 404:
		d.fail(t, "%s: tx %s: data service status %d, platformvm: %s", where, id, code, msg)
	}
}

// vmNodes are the nodes of the VM's current validators of subnet.
func (d *differ) vmNodes(t *testing.T, subnet ids.ID) []string {
	t.Helper()
	raw, msg, err := d.o.Call("platform.getCurrentValidators", map[string]any{"subnetID": subnet.String()})
	if err != nil || msg != "" {
		t.Fatalf("getCurrentValidators: %v %s", err, msg)
	}
	var reply struct {
		Validators []struct {
			NodeID string `json:"nodeID"`
		} `json:"validators"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range reply.Validators {
		out = append(out, v.NodeID)
	}
	return out
}

// vmUTXOs decodes the UTXOs of a VM answer.
func (d *differ) vmUTXOs(t *testing.T, method string, params any) []*avax.UTXO {
	t.Helper()
	raw, msg, err := d.o.Call(method, params)
	if err != nil || msg != "" {
		t.Fatalf("%s: %v %s", method, err, msg)
	}
	var reply struct {
		UTXOs []string `json:"utxos"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		t.Fatal(err)
	}
	var out []*avax.UTXO
	for _, s := range reply.UTXOs {
		b, err := formatting.Decode(formatting.Hex, s)
		if err != nil {
			t.Fatal(err)
		}
		u := &avax.UTXO{}
		if _, err := txs.Codec.Unmarshal(b, u); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// amountOf is a UTXO's amount (locked outputs included).
func amountOf(u *avax.UTXO) uint64 {
	if o, ok := u.Out.(avax.Amounter); ok {
		return o.Amount()
	}
	return 0
}

var _ avax.Amounter = (*secp256k1fx.TransferOutput)(nil)

func parseAmount(t *testing.T, s string) uint64 {
	t.Helper()
	var v uint64
	if _, err := fmt.Sscan(s, &v); err != nil {
		t.Fatalf("amount %q: %v", s, err)
	}
	return v
}

func mapDiff(got, want map[string]uint64) string {
	var d []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			d = append(d, fmt.Sprintf("missing %s (%d)", k, w))
		} else if g != w {
			d = append(d, fmt.Sprintf("%s: %d, want %d", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("extra %s (%d)", k, g))
		}
	}
	sort.Strings(d)
	return strings.Join(d, "; ")
}

// canonical is raw JSON normalised by norm, re-encoded with sorted keys.
func canonical(t *testing.T, raw json.RawMessage, norm func(any) any) string {
	t.Helper()
	if len(raw) == 0 {
		return "(no result)"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	if norm != nil {
		v = norm(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sortUTXOIDs orders getBalance's utxoIDs (the node lists them in its
// database's order, which no client may rely on).
func sortUTXOIDs(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if l, ok := m["utxoIDs"].([]any); ok {
		sort.Slice(l, func(i, j int) bool { return fmt.Sprint(l[i]) < fmt.Sprint(l[j]) })
	}
	return v
}

// sortBlockchains orders getBlockchains' chains by ID.
func sortBlockchains(v any) any {
	if m, ok := v.(map[string]any); ok {
		if l, ok := m["blockchains"].([]any); ok {
			sort.Slice(l, func(i, j int) bool {
				return fmt.Sprint(l[i].(map[string]any)["id"]) < fmt.Sprint(l[j].(map[string]any)["id"])
			})
		}
	}
	return v
}

// normValidators drops node-local members and orders validators and their
// delegators by tx ID.
func normValidators(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	vals, _ := m["validators"].([]any)
	for _, x := range vals {
		if val, ok := x.(map[string]any); ok {
			for k := range nodeLocal {
				delete(val, k)
			}
			if dels, ok := val["delegators"].([]any); ok {
				sortByTxID(dels)
			}
		}
	}
	sortByTxID(vals)
	return v
}

func sortByTxID(l []any) {
	id := func(x any) string {
		if m, ok := x.(map[string]any); ok {
			return fmt.Sprint(m["txID"])
		}
		return ""
	}
	sort.Slice(l, func(i, j int) bool { return id(l[i]) < id(l[j]) })
}
