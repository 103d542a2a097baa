package webhooks_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/message"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/payload"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/webhooks"
)

// The primary-network and validator events the recorded blocks imply,
// derived from the node's answers alone: P and X blocks in JSON
// (platform.getBlockByHeight, avm.getBlockByHeight), the C-chain's atomic
// txs (avax.getAtomicTx, parsed by hand), getRewardUTXOs (parsed with
// avalanchego's codec), the Warp messages of SetL1ValidatorWeightTx
// (avalanchego's parsers) and network.json's reward outcomes.

// rUTXO is a fungible output the recording shows.
type rUTXO struct {
	owners            []string // bech32 without chain prefix
	threshold         int
	asset             string
	amount            *big.Int
	locktime          int64
	stakeableLocktime int64
	chain             string // spendable on
	createdChain      string
	stake             bool // a staker's stake output (locked until its staker leaves)
}

// rTx is one tx (or reward decision) of a recorded block, in block order.
type rTx struct {
	id, kind  string // kind: the JSON shape's tx type, or RewardValidatorTx
	chain     string
	height    uint64
	time      int64
	consumed  []string // utxo keys (txID:index)
	produced  []string // outputs spendable on chain
	unstaked  []string // stake outputs released (reward decisions)
	rewards   []string // reward outputs paid
	stakerTx  string
	rewarded  bool
	unsigned  map[string]json.RawMessage
	validator struct {
		NodeID   string `json:"nodeID"`
		End      int64  `json:"end"`
		SubnetID string `json:"subnetID"`
	}
}

type recording struct {
	utxos map[string]*rUTXO
	txs   map[string][]*rTx // by chain, in order
	times map[uint64]int64  // P block times
	net   *devnet.Network
	keys  map[string]keyInfo
}

type keyInfo struct {
	addr      string // bech32 without prefix
	prefunded bool
}

func stripChain(a string) string {
	if i := strings.IndexByte(a, '-'); i >= 0 {
		return a[i+1:]
	}
	return a
}

type jsonOutput struct {
	TxID        string `json:"txID"`
	OutputIndex int    `json:"outputIndex"`
	AssetID     string `json:"assetID"`
	Output      struct {
		Addresses []string    `json:"addresses"`
		Amount    json.Number `json:"amount"`
		Locktime  int64       `json:"locktime"`
		Threshold int         `json:"threshold"`
		Output    *struct {   // stakeable.LockOut
			Addresses []string    `json:"addresses"`
			Amount    json.Number `json:"amount"`
			Locktime  int64       `json:"locktime"`
			Threshold int         `json:"threshold"`
		} `json:"output"`
	} `json:"output"`
}

// add records out as utxo key of chain.
func (r *recording) add(key, createdChain, chain string, o jsonOutput, stake bool) {
	u := &rUTXO{asset: o.AssetID, chain: chain, createdChain: createdChain, stake: stake}
	inner := o.Output
	if inner.Output != nil {
		u.stakeableLocktime = inner.Locktime
		inner.Addresses, inner.Amount, inner.Locktime, inner.Threshold = inner.Output.Addresses, inner.Output.Amount, inner.Output.Locktime, inner.Output.Threshold
	}
	if inner.Amount == "" {
		return // not fungible
	}
	u.amount, _ = new(big.Int).SetString(string(inner.Amount), 10)
	u.locktime, u.threshold = inner.Locktime, inner.Threshold
	for _, a := range inner.Addresses {
		u.owners = append(u.owners, stripChain(a))
	}
	r.utxos[key] = u
}

func utxoKey(tx string, i int) string { return tx + ":" + strconv.Itoa(i) }

// loadRecording reads the recorded P, X and C-atomic history.
func loadRecording(t *testing.T) *recording {
	t.Helper()
	r := &recording{utxos: map[string]*rUTXO{}, txs: map[string][]*rTx{}, times: map[uint64]int64{}, net: devnet.LoadNetwork(t), keys: map[string]keyInfo{}}
	for _, k := range devnet.LoadKeys(t).Keys {
		r.keys[k.Name] = keyInfo{stripChain(k.PAddress), k.PrefundedInGenesis}
	}
	chainKey := map[string]string{}
	for k, id := range r.net.BlockchainIDs {
		chainKey[id] = k
	}
	outcome := map[uint64]devnet.RewardValidatorTx{}
	for _, x := range r.net.RewardValidatorTxs {
		outcome[x.Height] = x
	}
	// Reward UTXOs by staker tx.
	rewardUTXOs := map[string][]string{}
	for _, c := range devnet.LoadRPC(t, devnet.P) {
		if c.Method != "platform.getRewardUTXOs" || c.Response.Result == nil {
			continue
		}
		var p struct{ TxID string }
		var res struct{ UTXOs []string }
		_ = json.Unmarshal(c.Params, &p)
		if err := json.Unmarshal(c.Response.Result, &res); err != nil {
			t.Fatal(err)
		}
		for _, h := range res.UTXOs {
			b, err := hex.DecodeString(strings.TrimPrefix(h, "0x"))
			if err != nil {
				t.Fatal(err)
			}
			var u avax.UTXO
			if _, err := txs.Codec.Unmarshal(b[:len(b)-4], &u); err != nil {
				t.Fatalf("reward utxo: %v", err)
			}
			out := u.Out.(*secp256k1fx.TransferOutput)
			ru := &rUTXO{asset: u.AssetID().String(), amount: new(big.Int).SetUint64(out.Amt), chain: "P", createdChain: "P",
				locktime: int64(out.Locktime), threshold: int(out.Threshold)}
			for _, a := range out.Addrs {
				s, _ := address.FormatBech32(r.net.HRP, a[:])
				ru.owners = append(ru.owners, s)
			}
			key := utxoKey(u.TxID.String(), int(u.OutputIndex))
			r.utxos[key] = ru
			rewardUTXOs[p.TxID] = append(rewardUTXOs[p.TxID], key)
		}
	}
	stakes := map[string][]string{} // staker tx -> stake output keys
	for _, chain := range []string{"P", "X"} {
		file, method := devnet.P, "platform.getBlockByHeight"
		if chain == "X" {
			file, method = devnet.X, "avm.getBlockByHeight"
		}
		blocks := map[uint64]json.RawMessage{}
		for _, c := range devnet.LoadRPC(t, file) {
			var p struct{ Encoding string }
			_ = json.Unmarshal(c.Params, &p)
			if c.Method != method || p.Encoding != "json" || c.Response.Result == nil {
				continue
			}
			var res struct{ Block json.RawMessage }
			if err := json.Unmarshal(c.Response.Result, &res); err != nil {
				t.Fatal(err)
			}
			var h struct{ Height uint64 }
			_ = json.Unmarshal(res.Block, &h)
			blocks[h.Height] = res.Block
		}
		for h := uint64(1); blocks[h] != nil; h++ {
			var b struct {
				Time int64             `json:"time"`
				Txs  []json.RawMessage `json:"txs"`
				Tx   json.RawMessage   `json:"tx"`
			}
			dec := json.NewDecoder(strings.NewReader(string(blocks[h])))
			dec.UseNumber()
			if err := dec.Decode(&b); err != nil {
				t.Fatal(err)
			}
			if chain == "P" {
				r.times[h] = b.Time
			}
			for _, raw := range b.Txs {
				r.txs[chain] = append(r.txs[chain], r.parseTx(t, chain, h, b.Time, raw, chainKey, stakes))
			}
			if o, ok := outcome[h-1]; ok && chain == "P" {
				// The option block decides the reward proposal of its parent.
				d := &rTx{id: o.RewardTxID, kind: "RewardValidatorTx", chain: "P", height: h, time: b.Time, stakerTx: o.StakerTxID,
					rewarded: o.OutcomeBlockType == "BanffCommitBlock", unstaked: stakes[o.StakerTxID]}
				if d.rewarded {
					d.rewards = rewardUTXOs[o.StakerTxID]
				}
				r.txs["P"] = append(r.txs["P"], d)
			}
		}
		if len(r.txs[chain]) < 15 {
			t.Fatalf("recording: %d %s txs", len(r.txs[chain]), chain)
		}
	}
	r.txs["C"] = r.atomicTxs(t)
	return r
}

// parseTx reads one P or X tx in JSON: what it consumed and produced.
func (r *recording) parseTx(t *testing.T, chain string, h uint64, time int64, raw json.RawMessage, chainKey map[string]string, stakes map[string][]string) *rTx {
	var tx struct {
		ID         string                     `json:"id"`
		UnsignedTx map[string]json.RawMessage `json:"unsignedTx"`
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&tx); err != nil {
		t.Fatal(err)
	}
	x := &rTx{id: tx.ID, chain: chain, height: h, time: time, unsigned: tx.UnsignedTx}
	list := func(field string) []jsonOutput {
		var out []jsonOutput
		if raw := tx.UnsignedTx[field]; raw != nil {
			d := json.NewDecoder(strings.NewReader(string(raw)))
			d.UseNumber()
			if err := d.Decode(&out); err != nil {
				t.Fatalf("tx %s %s: %v", tx.ID, field, err)
			}
		}
		return out
	}
	outs := list("outputs")
	for i, o := range outs {
		r.add(utxoKey(tx.ID, i), chain, chain, o, false)
		x.produced = append(x.produced, utxoKey(tx.ID, i))
	}
	next := len(outs)
	var dest string
	_ = json.Unmarshal(tx.UnsignedTx["destinationChain"], &dest)
	for _, o := range list("exportedOutputs") {
		r.add(utxoKey(tx.ID, next), chain, chainKey[dest], o, false)
		next++
	}
	for _, o := range list("stake") {
		key := utxoKey(tx.ID, next)
		r.add(key, chain, chain, o, true)
		x.produced = append(x.produced, key)
		stakes[tx.ID] = append(stakes[tx.ID], key)
		next++
	}
	if raw := tx.UnsignedTx["initialStates"]; raw != nil {
		var states []struct{ Outputs []json.RawMessage }
		_ = json.Unmarshal(raw, &states)
		var asset string = tx.ID
		for _, s := range states {
			for _, o := range s.Outputs {
				var jo jsonOutput
				d := json.NewDecoder(strings.NewReader(`{"assetID":"` + asset + `","output":` + string(o) + `}`))
				d.UseNumber()
				_ = d.Decode(&jo)
				r.add(utxoKey(tx.ID, next), chain, chain, jo, false)
				x.produced = append(x.produced, utxoKey(tx.ID, next))
				next++
			}
		}
	}
	if raw := tx.UnsignedTx["operations"]; raw != nil {
		var ops []struct {
			AssetID   string                     `json:"assetID"`
			Operation map[string]json.RawMessage `json:"operation"`
		}
		_ = json.Unmarshal(raw, &ops)
		for _, op := range ops {
			// avm's UTXO order: secp256k1fx mint (mint output, transfer
			// output), nftfx mint (its outputs), nftfx transfer (its output).
			for _, f := range []string{"mintOutput", "transferOutput", "outputs", "output"} {
				o := op.Operation[f]
				if o == nil {
					continue
				}
				items := []json.RawMessage{o}
				if f == "outputs" {
					_ = json.Unmarshal(o, &items)
				}
				for _, it := range items {
					var jo jsonOutput
					d := json.NewDecoder(strings.NewReader(`{"assetID":"` + op.AssetID + `","output":` + string(it) + `}`))
					d.UseNumber()
					_ = d.Decode(&jo)
					r.add(utxoKey(tx.ID, next), chain, chain, jo, false)
					x.produced = append(x.produced, utxoKey(tx.ID, next))
					next++
				}
			}
		}
	}
	for _, in := range append(list("inputs"), list("importedInputs")...) {
		x.consumed = append(x.consumed, utxoKey(in.TxID, in.OutputIndex))
	}
	_ = json.Unmarshal(tx.UnsignedTx["validator"], &x.validator)
	if x.validator.SubnetID == "" {
		_ = json.Unmarshal(tx.UnsignedTx["subnetID"], &x.validator.SubnetID)
	}
	switch {
	case tx.UnsignedTx["rewardsOwner"] != nil:
		x.kind = "delegator"
	case tx.UnsignedTx["validationRewardsOwner"] != nil, tx.UnsignedTx["validator"] != nil:
		x.kind = "validator"
	case tx.UnsignedTx["nodeID"] != nil && tx.UnsignedTx["subnetAuthorization"] != nil:
		x.kind = "removeSubnetValidator"
		_ = json.Unmarshal(tx.UnsignedTx["nodeID"], &x.validator.NodeID)
	case tx.UnsignedTx["validationID"] != nil && tx.UnsignedTx["balance"] != nil:
		x.kind = "increaseL1Balance"
	case tx.UnsignedTx["disableAuthorization"] != nil:
		x.kind = "disableL1"
	case tx.UnsignedTx["message"] != nil && tx.UnsignedTx["balance"] == nil:
		x.kind = "setL1Weight"
	}
	return x
}

// atomicTxs are the C-chain's atomic txs (avax.getAtomicTx, hex): an
// import consumes its imported inputs, parsed from the codec bytes
// (version, type 0 = import, network, blockchain, source chain, inputs).
func (r *recording) atomicTxs(t *testing.T) []*rTx {
	var out []*rTx
	seen := map[string]bool{}
	for _, c := range devnet.LoadRPC(t, devnet.CAvax) {
		var p struct{ TxID string }
		_ = json.Unmarshal(c.Params, &p)
		if c.Method != "avax.getAtomicTx" || c.Response.Result == nil || seen[p.TxID] {
			continue
		}
		var res struct {
			Tx          string
			BlockHeight string
		}
		if err := json.Unmarshal(c.Response.Result, &res); err != nil || !strings.HasPrefix(res.Tx, "0x") {
			continue
		}
		seen[p.TxID] = true
		b, err := hex.DecodeString(res.Tx[2:])
		if err != nil {
			t.Fatal(err)
		}
		h, _ := strconv.ParseUint(res.BlockHeight, 10, 64)
		x := &rTx{id: p.TxID, chain: "C", height: h, kind: "export"}
		if binary.BigEndian.Uint32(b[2:6]) == 0 {
			x.kind = "import"
			o := 2 + 4 + 4 + 32 + 32
			n := int(binary.BigEndian.Uint32(b[o:]))
			o += 4
			for range n {
				id, _ := ids.ToID(b[o : o+32])
				idx := int(binary.BigEndian.Uint32(b[o+32:]))
				x.consumed = append(x.consumed, utxoKey(id.String(), idx))
				o += 32 + 4 + 32 + 4 + 8
				sigs := int(binary.BigEndian.Uint32(b[o:]))
				o += 4 + 4*sigs
			}
		}
		out = append(out, x)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].height < out[j].height })
	if len(out) != 5 {
		t.Fatalf("recording: %d atomic txs", len(out))
	}
	return out
}

// concerned are the watched owners of the UTXOs tx consumed, produced on its
// chain or released from stake, and of the reward outputs it paid.
func (r *recording) concerned(tx *rTx, watched map[string]bool) []string {
	set := map[string]bool{}
	for _, list := range [][]string{tx.consumed, tx.produced, tx.unstaked, tx.rewards} {
		for _, k := range list {
			u := r.utxos[k]
			if u == nil || u.chain != tx.chain {
				continue
			}
			for _, a := range u.owners {
				if watched[a] {
					set[a] = true
				}
			}
		}
	}
	return slices.Sorted(mapKeys(set))
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// balanceAfter is, after each tx of chain (by index), the AVAX of addrs
// the balance type counts: P unlockedUnstaked, X unlocked (multisig
// outputs the addresses can spend alone).
func (r *recording) balances(chain string, addrs map[string]bool) []*big.Int {
	live, staked := map[string]bool{}, map[string]bool{}
	var out []*big.Int
	for _, tx := range r.txs[chain] {
		for _, k := range tx.consumed {
			delete(live, k)
		}
		for _, k := range append(slices.Clone(tx.produced), tx.rewards...) {
			live[k] = true
			if r.utxos[k] != nil && r.utxos[k].stake {
				staked[k] = true
			}
		}
		for _, k := range tx.unstaked {
			delete(staked, k)
		}
		sum := new(big.Int)
		for k := range live {
			u := r.utxos[k]
			if u == nil || u.chain != chain || u.asset != r.net.AvaxAssetID || staked[k] || u.locktime > tx.time || u.stakeableLocktime > tx.time {
				continue
			}
			n := 0
			for _, a := range u.owners {
				if addrs[a] {
					n++
				}
			}
			if n == 0 || (chain == "X" && n < u.threshold) {
				continue
			}
			sum.Add(sum, u.amount)
		}
		out = append(out, sum)
	}
	return out
}

// platformHook is a test webhook: its registration and a name.
type platformHook struct {
	name  string
	hook  *webhooks.Webhook
	names []string // watched key names
}

// platformHooks are the primary-network and validator webhooks of the
// tests, on workload addresses no genesis allocation funds (every UTXO
// they owned is in the recording) and on the workload's validators.
func (r *recording) platformHooks(t *testing.T) []platformHook {
	t.Helper()
	addrs := func(names ...string) []string {
		var out []string
		for _, n := range names {
			k, ok := r.keys[n]
			if !ok || k.prefunded {
				t.Fatalf("key %s: not a workload key unfunded in genesis", n)
			}
			out = append(out, k.addr)
		}
		return out
	}
	primary := func(name, chain, network string, subs []string, filter string, names ...string) platformHook {
		md := `{"keyType":"addresses","subEvents":{"addressActivitySubEvents":` + jsonList(subs) + `}` + filter + `}`
		return platformHook{name: name, names: names, hook: &webhooks.Webhook{EventType: webhooks.EventPrimaryAddressActivity,
			ChainID: r.net.BlockchainIDs[chain], ChainKey: chain, Network: network, Metadata: []byte(md), Keys: addrs(names...)}}
	}
	validator := func(name, keyType, key string, subs []string, extra string) platformHook {
		md := `{"keyType":"` + keyType + `","subEvents":{"validatorActivitySubEvents":` + jsonList(subs) + `}` + extra + `}`
		return platformHook{name: name, hook: &webhooks.Webhook{EventType: webhooks.EventValidatorActivity, ChainKey: "P",
			Network: "fuji", Metadata: []byte(md), Keys: []string{key}}}
	}
	// The threshold: carol's P balance before the first tx that lowers it.
	carol := map[string]bool{r.keys["carol"].addr: true}
	bs := r.balances("P", carol)
	threshold := ""
	for i := 1; i < len(bs); i++ {
		if bs[i].Cmp(bs[i-1]) < 0 {
			threshold = bs[i-1].String()
			break
		}
	}
	if threshold == "" {
		t.Fatal("recording: carol's P balance never falls")
	}
	alpha, beta := r.net.Stakers["alpha"].NodeID, r.net.Stakers["beta"].NodeID
	genesisNode := r.net.RecordingNode
	return []platformHook{
		primary("p-activity", "P", "fuji", []string{"balance_change", "reward_distribution"}, "", "carol", "erin", "frank", "grace"),
		primary("p-threshold", "P", "fuji", []string{"balance_threshold"},
			`,"balanceThresholdFilter":{"balanceType":"unlockedUnstaked","balanceThreshold":"`+threshold+`"}`, "carol"),
		primary("x-activity", "X", "fuji", []string{"balance_change"}, "", "carol", "dave", "erin"),
		primary("c-activity", "C", "fuji", []string{"balance_change"}, "", "carol", "dave"),
		validator("alpha", "nodeId", alpha, []string{"validator_stake", "delegator_stake", "reward_distribution"}, ""),
		validator("beta", "nodeId", beta, []string{"validator_stake", "delegator_stake", "reward_distribution"}, ""),
		validator("subnet-a", "subnetId", r.net.Subnets["A"].SubnetID, []string{"validator_stake"}, ""),
		validator("genesis-node-on-a", "nodeId", genesisNode, []string{"validator_stake"}, `,"subnetIds":["`+r.net.Subnets["A"].SubnetID+`"]`),
		validator("l1", "subnetId", r.net.Subnets["B"].SubnetID, []string{"l1_validator_balance_increased", "l1_validator_disabled", "l1_validator_removed"}, ""),
	}
}

func jsonList(s []string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// registerPlatformHooks stores the hooks (URL urlBase+name) for owner.
func registerPlatformHooks(t *testing.T, ctx context.Context, db *store.DB, hs []platformHook, urlBase string) map[string]string {
	t.Helper()
	reg := webhooks.NewRegistry(db, nil)
	names := map[string]string{}
	for _, h := range hs {
		w := *h.hook
		w.URL, w.Status = urlBase+h.name, webhooks.StatusActive
		if err := reg.Create(ctx, "owner", &w); err != nil {
			t.Fatal(err)
		}
		names[w.ID] = h.name
	}
	return names
}

// wantPlatform are the events the recording implies, as eventKey strings,
// with the AVAX balance each P/X balance_change must report (by key).
func (r *recording) wantPlatform(t *testing.T, hs []platformHook, ids map[string]string) (map[string]bool, map[string]string) {
	t.Helper()
	byName := map[string]string{}
	for id, n := range ids {
		byName[n] = id
	}
	want, amounts := map[string]bool{}, map[string]string{}
	for _, h := range hs {
		id := byName[h.name]
		var meta struct {
			KeyType   string
			SubEvents struct {
				AddressActivitySubEvents   []string
				ValidatorActivitySubEvents []string
			}
			BalanceThresholdFilter *struct{ BalanceThreshold string }
			SubnetIDs              []string
		}
		if err := json.Unmarshal(h.hook.Metadata, &meta); err != nil {
			t.Fatal(err)
		}
		if h.hook.EventType == webhooks.EventPrimaryAddressActivity {
			watched := map[string]bool{}
			for _, a := range h.hook.Keys {
				watched[a] = true
			}
			txs := r.txs[h.hook.ChainKey]
			for i, tx := range txs {
				addrs := r.concerned(tx, watched)
				if len(addrs) == 0 {
					continue
				}
				set := map[string]bool{}
				for _, a := range addrs {
					set[a] = true
				}
				for _, sub := range meta.SubEvents.AddressActivitySubEvents {
					key := eventKey(id, tx.height, sub, tx.id, strings.Join(addrs, ","))
					switch sub {
					case "balance_change":
						want[key] = true
						if tx.chain != "C" {
							amounts[key] = r.balances(tx.chain, set)[i].String()
						}
					case "reward_distribution":
						for _, k := range tx.rewards {
							if slices.ContainsFunc(r.utxos[k].owners, func(a string) bool { return watched[a] }) {
								want[key] = true
							}
						}
					case "balance_threshold":
						bs := r.balances(tx.chain, set)
						limit, _ := new(big.Int).SetString(meta.BalanceThresholdFilter.BalanceThreshold, 10)
						before := new(big.Int)
						if i > 0 {
							before = bs[i-1]
						}
						if before.Cmp(limit) >= 0 && bs[i].Cmp(limit) < 0 {
							want[key] = true
						}
					}
				}
			}
			continue
		}
		subs := meta.SubEvents.ValidatorActivitySubEvents
		key := h.hook.Keys[0]
		matches := func(node, subnet string) bool {
			return (node == key || subnet == key) && (len(meta.SubnetIDs) == 0 || slices.Contains(meta.SubnetIDs, subnet))
		}
		for _, ev := range r.validatorEvents(t) {
			if slices.Contains(subs, ev.sub) && matches(ev.node, ev.subnet) {
				want[eventKey(id, ev.height, ev.sub, ev.ref, ev.detail)] = true
			}
		}
	}
	return want, amounts
}

type vEvent struct {
	sub, node, subnet, ref, detail string
	height                         uint64
}

// validatorEvents are the validator changes of the recorded P blocks.
func (r *recording) validatorEvents(t *testing.T) []vEvent {
	t.Helper()
	var out []vEvent
	stakers := map[string]*rTx{}
	l1Node := map[string]string{}
	primaryNet := ids.Empty.String()
	removedByTx := map[string]bool{}
	for _, tx := range r.txs["P"] {
		switch tx.kind {
		case "validator", "delegator":
			if tx.validator.NodeID == "" {
				continue
			}
			subnet := tx.validator.SubnetID
			if subnet == "" {
				subnet = primaryNet
			}
			tx.validator.SubnetID = subnet
			stakers[tx.id] = tx
			out = append(out, vEvent{tx.kind + "_stake", tx.validator.NodeID, subnet, tx.id, "added", tx.height})
		case "removeSubnetValidator":
			var subnet string
			_ = json.Unmarshal(tx.unsigned["subnetID"], &subnet)
			for id, s := range stakers {
				if s.validator.NodeID == tx.validator.NodeID && s.validator.SubnetID == subnet && !removedByTx[id] {
					removedByTx[id] = true
					out = append(out, vEvent{"validator_stake", s.validator.NodeID, subnet, id, "ended", tx.height})
				}
			}
		case "RewardValidatorTx":
			s := stakers[tx.stakerTx]
			if s == nil {
				t.Fatalf("reward of unknown staker %s", tx.stakerTx)
			}
			removedByTx[tx.stakerTx] = true
			out = append(out, vEvent{s.kind + "_stake", s.validator.NodeID, s.validator.SubnetID, s.id, "ended", tx.height})
			if len(tx.rewards) > 0 {
				out = append(out, vEvent{"reward_distribution", s.validator.NodeID, s.validator.SubnetID, s.id, "", tx.height})
			}
		case "increaseL1Balance", "disableL1":
			var vid string
			_ = json.Unmarshal(tx.unsigned["validationID"], &vid)
			sub := map[string]string{"increaseL1Balance": "l1_validator_balance_increased", "disableL1": "l1_validator_disabled"}[tx.kind]
			out = append(out, vEvent{sub, l1Node[vid], r.net.Subnets["B"].SubnetID, vid, "", tx.height})
		case "setL1Weight":
			var hexMsg string
			_ = json.Unmarshal(tx.unsigned["message"], &hexMsg)
			b, _ := hex.DecodeString(strings.TrimPrefix(hexMsg, "0x"))
			msg, err := warp.ParseMessage(b)
			if err != nil {
				t.Fatal(err)
			}
			call, err := payload.ParseAddressedCall(msg.Payload)
			if err != nil {
				t.Fatal(err)
			}
			w, err := message.ParseL1ValidatorWeight(call.Payload)
			if err != nil {
				t.Fatal(err)
			}
			if w.Weight == 0 {
				out = append(out, vEvent{"l1_validator_removed", "", r.net.Subnets["B"].SubnetID, w.ValidationID.String(), "", tx.height})
			}
		}
	}
	// Permissioned subnet validators not removed by a tx expire at the
	// first block at or after their end time.
	for id, s := range stakers {
		if removedByTx[id] || s.validator.SubnetID == primaryNet || s.validator.End == 0 {
			continue
		}
		for h := s.height + 1; r.times[h] != 0; h++ {
			if r.times[h] >= s.validator.End {
				out = append(out, vEvent{"validator_stake", s.validator.NodeID, s.validator.SubnetID, id, "ended", h})
				break
			}
		}
	}
	return out
}

func eventKey(hook string, height uint64, sub, ref, detail string) string {
	return fmt.Sprintf("%s|%d|%s|%s|%s", hook, height, sub, ref, detail)
}

// platformEvent is the part of a primary-network or validator payload the
// tests compare.
type platformEvent struct {
	WebhookID, EventType, MessageID string
	Event                           struct {
		EventType     string
		ChainID       string
		BlockHeight   uint64
		TxHash        string
		Addresses     []string
		StakingTxHash string
		ValidationID  string
		Action        string
		Balances      map[string]json.RawMessage
		Rewards       []json.RawMessage
	}
}

// key is the event's eventKey and, for balance changes on P and X, the
// AVAX amount its balances report under the chain's type.
func (p *platformEvent) key(avax string) (string, string) {
	e := p.Event
	switch {
	case p.EventType == webhooks.EventPrimaryAddressActivity:
		amount := ""
		for _, t := range []string{"unlockedUnstaked", "unlocked"} {
			if raw, ok := e.Balances[t]; ok && e.EventType == "balance_change" {
				var items []struct{ AssetID, Amount string }
				_ = json.Unmarshal(raw, &items)
				amount = "0"
				for _, it := range items {
					if it.AssetID == avax {
						amount = it.Amount
					}
				}
			}
		}
		return eventKey(p.WebhookID, e.BlockHeight, e.EventType, e.TxHash, strings.Join(e.Addresses, ",")), amount
	case e.ValidationID != "":
		return eventKey(p.WebhookID, e.BlockHeight, e.EventType, e.ValidationID, ""), ""
	}
	return eventKey(p.WebhookID, e.BlockHeight, e.EventType, e.StakingTxHash, e.Action), ""
}

// checkPlatformPayload validates a primary-network or validator payload:
// the envelope's fields, and its parts against the document's schemas
// (balances, rewards, assets).
func checkPlatformPayload(oapi *apitest.Spec, body []byte) error {
	var p struct {
		WebhookID, EventType, MessageID string
		Event                           map[string]json.RawMessage
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return err
	}
	if p.WebhookID == "" || p.MessageID == "" || p.Event == nil {
		return fmt.Errorf("envelope without webhookId, messageId or event: %s", body)
	}
	var sub string
	_ = json.Unmarshal(p.Event["eventType"], &sub)
	enum := webhooks.PrimarySubEvents
	if p.EventType == webhooks.EventValidatorActivity {
		enum = webhooks.ValidatorSubEvents
	} else if p.EventType != webhooks.EventPrimaryAddressActivity {
		return fmt.Errorf("eventType %q", p.EventType)
	}
	if !slices.Contains(enum, sub) {
		return fmt.Errorf("event.eventType %q", sub)
	}
	if raw := p.Event["balances"]; raw != nil {
		var keys map[string]json.RawMessage
		_ = json.Unmarshal(raw, &keys)
		schema := "CChainAtomicBalances"
		if _, ok := keys["unlockedUnstaked"]; ok {
			schema = "PChainBalance"
		} else if _, ok := keys["unlocked"]; ok {
			schema = "XChainBalances"
		}
		if err := oapi.CheckSchema(schema, raw); err != nil {
			return fmt.Errorf("balances: %w", err)
		}
	}
	var rewards []json.RawMessage
	_ = json.Unmarshal(p.Event["rewards"], &rewards)
	for _, r := range rewards {
		if err := oapi.CheckSchema("HistoricalReward", r); err != nil {
			return fmt.Errorf("rewards: %w", err)
		}
	}
	var changes []struct{ Asset json.RawMessage }
	_ = json.Unmarshal(p.Event["balanceChanges"], &changes)
	for _, c := range changes {
		if err := oapi.CheckSchema("AssetAmount", c.Asset); err != nil {
			return fmt.Errorf("balanceChanges: %w", err)
		}
	}
	return nil
}

// comparePlatform checks received bodies against the recording: every
// implied event received (at least once), none other, P/X balances to the
// nAVAX, message ids unique per event.
func comparePlatform(t *testing.T, r *recording, bodies [][]byte, want map[string]bool, amounts map[string]string, names map[string]string) {
	t.Helper()
	seen := map[string]string{} // key -> message id
	for _, b := range bodies {
		var p platformEvent
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		k, amount := p.key(r.net.AvaxAssetID)
		if !want[k] {
			t.Errorf("received an event the blocks do not imply: %s (%s) %s", k, names[p.WebhookID], b)
			continue
		}
		if a, ok := amounts[k]; ok && a != amount {
			t.Errorf("%s (%s): AVAX balance %s, the recording implies %s", k, names[p.WebhookID], amount, a)
		}
		if id, ok := seen[k]; ok && id != p.MessageID {
			t.Errorf("%s: two message ids %s and %s", k, id, p.MessageID)
		}
		seen[k] = p.MessageID
	}
	ids := map[string]bool{}
	for k, id := range seen {
		if ids[id] {
			t.Errorf("message id %s names two events (%s)", id, k)
		}
		ids[id] = true
	}
	perHook := map[string]int{}
	for k := range want {
		if _, ok := seen[k]; !ok {
			t.Errorf("never received: %s (%s)", k, names[strings.Split(k, "|")[0]])
		}
		perHook[names[strings.Split(k, "|")[0]]]++
	}
	for id, n := range names {
		if perHook[n] == 0 {
			t.Errorf("webhook %s (%s): the recording implies no event, so it tests nothing", n, id)
		}
	}
}

// TestPlatformActivity ingests devnet-a with primary-network and validator
// webhooks registered first and delivers their events to a real receiver
// on 127.0.0.1: the received set equals the set the recorded blocks imply
// (every balance change, reward and validator change of the watched
// addresses, nodes and subnets; none missing, none extra), P and X
// balances equal the recording's to the nAVAX, signatures verify and the
// payloads' parts validate against the document's schemas.
func TestPlatformActivity(t *testing.T) {
	rec := loadRecording(t)
	oapi := apitest.Load(t)
	hs := rec.platformHooks(t)
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			rcv := newReceiver(t, oapi)
			var names map[string]string
			db, set := ingestDevnet(t, ctx, backend, func(db *store.DB) {
				names = registerPlatformHooks(t, ctx, db, hs, rcv.srv.URL+"/")
			})
			secret, err := webhooks.NewRegistry(db, nil).Secret(ctx, "owner")
			if err != nil {
				t.Fatal(err)
			}
			rcv.mu.Lock()
			rcv.secret = secret
			rcv.mu.Unlock()
			want, amounts := rec.wantPlatform(t, hs, names)
			deliverAll(t, ctx, db, webhooks.DeliveryConfig{Workers: 3, Poll: 10 * time.Millisecond,
				Policy: webhooks.URLPolicy{AllowLoopback: true}})
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			if rcv.badSig > 0 || len(rcv.invalids) > 0 || len(rcv.got) > 0 {
				t.Errorf("%d bad signatures, %d address_activity events; invalid payloads: %v", rcv.badSig, len(rcv.got), rcv.invalids)
			}
			comparePlatform(t, rec, rcv.platform, want, amounts, names)
			t.Logf("%d events implied, %d received", len(want), len(rcv.platform))

			checkReindex(t, ctx, db, set)
		})
	}
}
