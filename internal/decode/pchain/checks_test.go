package pchain

import (
	"bytes"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/platformvm/block"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"

	avagenesis "github.com/ava-labs/avalanchego/genesis"
	txfee "github.com/ava-labs/avalanchego/vms/platformvm/txs/fee"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/ingest"
)

// blocksAndTxs: every block row and every tx of network.json, with its type.
func (c *checker) blocksAndTxs(t *testing.T) {
	for _, b := range c.net.PBlocks {
		var id, typ, txIDs string
		if err := c.db.QueryRowContext(c.ctx, `SELECT block_id, block_type, tx_ids FROM px_blocks WHERE chain_key = 'P' AND height = $1`,
			int64(b.Height)).Scan(&id, &typ, &txIDs); err != nil {
			t.Fatalf("block %d: %v", b.Height, err)
		}
		if id != b.BlockID || typ != b.BlockType {
			t.Errorf("block %d = %s %s, want %s %s", b.Height, id, typ, b.BlockID, b.BlockType)
		}
		var got []string
		if err := json.Unmarshal([]byte(txIDs), &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(b.Txs) {
			t.Errorf("block %d tx ids %v, want %d txs", b.Height, got, len(b.Txs))
		}
		for i, x := range b.Txs {
			if i < len(got) && got[i] != x.TxID {
				t.Errorf("block %d tx %d = %s, want %s", b.Height, i, got[i], x.TxID)
			}
			var typ string
			var height int64
			if err := c.db.QueryRowContext(c.ctx, `SELECT tx_type, height FROM px_txs WHERE tx_id = $1`, x.TxID).Scan(&typ, &height); err != nil {
				t.Errorf("tx %s: %v", x.TxID, err)
				continue
			}
			if typ != x.Type || typ != c.net.PTxTypesByID[x.TxID] || height != int64(b.Height) {
				t.Errorf("tx %s = %s at %d, want %s at %d", x.TxID, typ, height, x.Type, b.Height)
			}
		}
	}
}

// txBytesAndStatus: every recorded platform.getTx (hex) is stored byte for
// byte (block txs and the genesis validators' and chains' txs), and every
// recorded getTxStatus matches.
func (c *checker) txBytesAndStatus(t *testing.T) {
	n := 0
	for _, x := range c.rec.Method("platform.getTx") {
		var p struct {
			TxID     string `json:"txID"`
			Encoding string `json:"encoding"`
		}
		devnet.Params(t, x, &p)
		if p.Encoding != "hex" || x.Response.Error != nil {
			continue
		}
		var res struct {
			Tx string `json:"tx"`
		}
		devnet.Result(t, x, &res)
		var got []byte
		if err := c.db.QueryRowContext(c.ctx, `SELECT tx_bytes FROM px_txs WHERE tx_id = $1`, p.TxID).Scan(&got); err != nil {
			t.Errorf("tx %s: %v", p.TxID, err)
			continue
		}
		if want := devnet.HexBytes(t, res.Tx); !bytes.Equal(got, want) {
			t.Errorf("tx %s bytes differ", p.TxID)
		}
		n++
	}
	if n < 40 {
		t.Errorf("only %d recorded txs compared", n)
	}
	for _, x := range c.rec.Method("platform.getTxStatus") {
		var p struct {
			TxID string `json:"txID"`
		}
		devnet.Params(t, x, &p)
		var res struct {
			Status string `json:"status"`
		}
		devnet.Result(t, x, &res)
		var got string
		err := c.db.QueryRowContext(c.ctx, `SELECT status FROM p_txs WHERE tx_id = $1`, p.TxID).Scan(&got)
		if errors.Is(err, sql.ErrNoRows) {
			got = "Unknown"
		} else if err != nil {
			t.Fatal(err)
		}
		if got != res.Status {
			t.Errorf("status of %s = %s, want %s", p.TxID, got, res.Status)
		}
	}
}

// blockTimes: block timestamps equal the recorded JSON "time" (options carry
// their parent's), the genesis block has the genesis time.
func (c *checker) blockTimes(t *testing.T) {
	for _, x := range c.rec.Method("platform.getBlockByHeight") {
		var p struct {
			Height   json.Number `json:"height"`
			Encoding string      `json:"encoding"`
		}
		if x.Response.Error != nil || bytes.HasPrefix(bytes.TrimSpace(x.Params), []byte("[")) {
			continue
		}
		devnet.Params(t, x, &p)
		if p.Encoding != "json" {
			continue
		}
		var res struct {
			Block struct {
				Time   *json.Number `json:"time"`
				Height json.Number  `json:"height"`
				ID     string       `json:"id"`
			} `json:"block"`
		}
		devnet.Result(t, x, &res)
		var ts int64
		var id string
		if err := c.db.QueryRowContext(c.ctx, `SELECT timestamp, block_id FROM px_blocks WHERE chain_key = 'P' AND height = $1`,
			res.Block.Height.String()).Scan(&ts, &id); err != nil {
			t.Fatal(err)
		}
		if id != res.Block.ID {
			t.Errorf("block %s id %s, want %s", res.Block.Height, id, res.Block.ID)
		}
		if res.Block.Time != nil && res.Block.Time.String() != sp(ts) {
			t.Errorf("block %s time %d, want %s", res.Block.Height, ts, res.Block.Time)
		}
	}
}

type utxoRow struct {
	bytes             []byte
	amount            uint64
	stakeableLocktime int64
	locktime          int64
}

// spendable is the node's UTXO set of an address (bech32 with P- prefix).
func (c *checker) spendable(t *testing.T, addr string) map[string]utxoRow {
	rows, err := c.db.QueryContext(c.ctx, `SELECT u.utxo_id, u.utxo_bytes, u.amount, u.stakeable_locktime, u.locktime
		FROM utxo_addresses a JOIN utxos u ON u.utxo_id = a.utxo_id
		WHERE a.address = $1 AND a.chain_key = 'P' AND a.spent = $2 AND u.stake_locked = $2`,
		strings.TrimPrefix(addr, "P-"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]utxoRow{}
	for rows.Next() {
		var id, amount string
		var r utxoRow
		if err := rows.Scan(&id, &r.bytes, &amount, &r.stakeableLocktime, &r.locktime); err != nil {
			t.Fatal(err)
		}
		r.amount = mustUint(t, amount)
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustUint(t testing.TB, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("number %q: %v", s, err)
	}
	return v
}

// utxoSets: the spendable set of every workload address equals the recorded
// platform.getUTXOs answer, UTXO bytes included.
func (c *checker) utxoSets(t *testing.T) {
	n := 0
	for _, x := range c.rec.Method("platform.getUTXOs") {
		var p struct {
			Addresses   []string        `json:"addresses"`
			Limit       json.Number     `json:"limit"`
			StartIndex  json.RawMessage `json:"startIndex"`
			SourceChain string          `json:"sourceChain"`
		}
		devnet.Params(t, x, &p)
		if p.StartIndex != nil || p.SourceChain != "" || p.Limit.String() != "1024" || len(p.Addresses) != 1 {
			continue
		}
		var res struct {
			UTXOs []string `json:"utxos"`
		}
		devnet.Result(t, x, &res)
		want := map[string][]byte{}
		for _, h := range res.UTXOs {
			b := devnet.HexBytes(t, h)
			var u avax.UTXO
			if _, err := txs.Codec.Unmarshal(b, &u); err != nil {
				t.Fatal(err)
			}
			want[u.InputID().String()] = b
		}
		got := c.spendable(t, p.Addresses[0])
		if len(got) != len(want) {
			t.Errorf("%s: %d utxos, want %d", p.Addresses[0], len(got), len(want))
		}
		for id, b := range want {
			r, ok := got[id]
			if !ok {
				t.Errorf("%s: missing utxo %s", p.Addresses[0], id)
				continue
			}
			if !bytes.Equal(r.bytes, b) {
				t.Errorf("%s: utxo %s bytes differ", p.Addresses[0], id)
			}
		}
		for id := range got {
			if _, ok := want[id]; !ok {
				t.Errorf("%s: extra utxo %s", p.Addresses[0], id)
			}
		}
		n++
	}
	if n < 15 {
		t.Errorf("only %d getUTXOs answers compared", n)
	}
}

// balances: recorded platform.getBalance totals from the spendable sets,
// split like the node (stakeable lock / plain lock vs the tip time).
func (c *checker) balances(t *testing.T, tipTime int64) {
	for _, x := range c.rec.Method("platform.getBalance") {
		if x.Response.Error != nil {
			continue
		}
		var p struct {
			Addresses []string `json:"addresses"`
		}
		devnet.Params(t, x, &p)
		var res struct {
			Balance            string `json:"balance"`
			Unlocked           string `json:"unlocked"`
			LockedStakeable    string `json:"lockedStakeable"`
			LockedNotStakeable string `json:"lockedNotStakeable"`
			UTXOIDs            []struct {
				TxID        string      `json:"txID"`
				OutputIndex json.Number `json:"outputIndex"`
			} `json:"utxoIDs"`
		}
		devnet.Result(t, x, &res)
		all := map[string]utxoRow{}
		for _, a := range p.Addresses {
			for id, r := range c.spendable(t, a) {
				all[id] = r
			}
		}
		var total, unlocked, stakeable, notStakeable uint64
		for _, r := range all {
			total += r.amount
			switch {
			case r.stakeableLocktime > tipTime:
				stakeable += r.amount
			case r.locktime > tipTime:
				notStakeable += r.amount
			default:
				unlocked += r.amount
			}
		}
		got := sp(total, unlocked, stakeable, notStakeable)
		want := sp(res.Balance, res.Unlocked, res.LockedStakeable, res.LockedNotStakeable)
		if got != want {
			t.Errorf("balance of %v = %s, want %s", p.Addresses, got, want)
		}
		if len(res.UTXOIDs) != len(all) {
			t.Errorf("balance of %v: %d utxos, want %d", p.Addresses, len(all), len(res.UTXOIDs))
		}
		for _, u := range res.UTXOIDs {
			txID, err := ids.FromString(u.TxID)
			if err != nil {
				t.Fatal(err)
			}
			idx := mustUint(t, u.OutputIndex.String())
			id := (&avax.UTXOID{TxID: txID, OutputIndex: uint32(idx)}).InputID().String()
			if _, ok := all[id]; !ok {
				t.Errorf("balance of %v: missing %s:%d", p.Addresses, u.TxID, idx)
			}
		}
	}
}

// rewardUTXOs: platform.getRewardUTXOs of each staker tx, byte for byte.
func (c *checker) rewardUTXOs(t *testing.T) {
	for _, x := range c.rec.Method("platform.getRewardUTXOs") {
		var p struct {
			TxID string `json:"txID"`
		}
		devnet.Params(t, x, &p)
		var res struct {
			UTXOs []string `json:"utxos"`
		}
		devnet.Result(t, x, &res)
		rows, err := c.db.QueryContext(c.ctx, `SELECT utxo_bytes, reward_type FROM utxos WHERE tx_id = $1 AND reward_type <> ''
			ORDER BY output_index`, p.TxID)
		if err != nil {
			t.Fatal(err)
		}
		var got [][]byte
		var types []string
		for rows.Next() {
			var b []byte
			var typ string
			if err := rows.Scan(&b, &typ); err != nil {
				t.Fatal(err)
			}
			got, types = append(got, b), append(types, typ)
		}
		rows.Close()
		if len(got) != len(res.UTXOs) {
			t.Errorf("reward utxos of %s: %d (%v), want %d", p.TxID, len(got), types, len(res.UTXOs))
			continue
		}
		for i, h := range res.UTXOs {
			if !bytes.Equal(got[i], devnet.HexBytes(t, h)) {
				t.Errorf("reward utxo %d of %s differs", i, p.TxID)
			}
		}
	}
	// The two alpha UTXOs are its validation reward and its delegation fee.
	var types []string
	rows, err := c.db.QueryContext(c.ctx, `SELECT reward_type FROM utxos WHERE reward_type <> '' ORDER BY tx_id, output_index`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		types = append(types, s)
	}
	rows.Close()
	sort.Strings(types)
	if got := strings.Join(types, ","); got != "DELEGATOR,VALIDATOR,VALIDATOR_FEE" {
		t.Errorf("reward types = %s", got)
	}
}

// supply: platform.getCurrentSupply at the tip.
func (c *checker) supply(t *testing.T) {
	for _, x := range c.rec.Method("platform.getCurrentSupply") {
		if x.Response.Error != nil {
			continue
		}
		var res struct {
			Supply string `json:"supply"`
			Height string `json:"height"`
		}
		devnet.Result(t, x, &res)
		var got string
		if err := c.db.QueryRowContext(c.ctx, `SELECT current_supply FROM px_blocks WHERE chain_key = 'P' AND height = $1`,
			res.Height).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != res.Supply {
			t.Errorf("supply at %s = %s, want %s", res.Height, got, res.Supply)
		}
		st, err := StateAt(c.ctx, c.db, mustUint(t, res.Height))
		if err != nil || sp(st.CurrentSupply) != res.Supply {
			t.Errorf("StateAt supply = %d (%v), want %s", st.CurrentSupply, err, res.Supply)
		}
	}
}

// validatorsAt: ValidatorSetAt against every recorded numeric getValidatorsAt
// (primary, subnet A, L1 B) and getAllValidatorsAt.
func (c *checker) validatorsAt(t *testing.T) {
	n := 0
	for _, x := range c.rec.Method("platform.getValidatorsAt") {
		var p struct {
			Height   json.RawMessage `json:"height"`
			SubnetID string          `json:"subnetID"`
		}
		devnet.Params(t, x, &p)
		h, err := strconv.ParseUint(string(p.Height), 10, 64)
		if err != nil {
			continue // "proposed"
		}
		subnet := constants.PrimaryNetworkID
		if p.SubnetID != "" {
			if subnet, err = ids.FromString(p.SubnetID); err != nil {
				t.Fatal(err)
			}
		}
		var res map[string]struct {
			PublicKey string `json:"publicKey"`
			Weight    string `json:"weight"`
		}
		devnet.Result(t, x, &res)
		got, err := ValidatorSetAt(c.ctx, c.db, subnet, h)
		if err != nil {
			t.Fatal(err)
		}
		gotMap := map[string]string{}
		for _, v := range got {
			gotMap[v.NodeID.String()] = fmt.Sprintf("%s/%d", hexOrEmpty(v.PublicKey), v.Weight)
		}
		wantMap := map[string]string{}
		for node, v := range res {
			wantMap[node] = fmt.Sprintf("%s/%s", v.PublicKey, v.Weight)
		}
		if sp(gotMap) != sp(wantMap) {
			t.Errorf("validators of %s at %d:\n got %v\nwant %v", subnet, h, gotMap, wantMap)
		}
		n++
	}
	if n != 24 {
		t.Errorf("compared %d getValidatorsAt answers, want 24", n)
	}
	// Heights the recording has no answer for, by avalanchego's rules: the
	// disabled L1 validator (26-27) counts under the empty node ID without a
	// key until its removal (28); a staker leaves the set at the option block
	// after its RewardValidatorTx (alpha's delegator: proposal 30, commit 31).
	l1B, err := ids.FromString(c.net.Subnets["B"].SubnetID)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		subnet ids.ID
		height uint64
		want   string
	}{
		{l1B, 25, "NodeID-4itKch76Cf9dEXoxqj9uySgx2ViJ9Scd3/1000000 NodeID-9yFasPCjysZZwCD1a4cRjDEQ7k8Ap6hfS/150000 NodeID-EaMbg8yVmh47Fmg6kdadKmt7GPu66Hg7o/1000000"},
		{l1B, 26, "NodeID-111111111111111111116DBWJs/150000/nokey NodeID-4itKch76Cf9dEXoxqj9uySgx2ViJ9Scd3/1000000 NodeID-EaMbg8yVmh47Fmg6kdadKmt7GPu66Hg7o/1000000"},
		{l1B, 27, "NodeID-111111111111111111116DBWJs/150000/nokey NodeID-4itKch76Cf9dEXoxqj9uySgx2ViJ9Scd3/1000000 NodeID-EaMbg8yVmh47Fmg6kdadKmt7GPu66Hg7o/1000000"},
		{l1B, 28, "NodeID-4itKch76Cf9dEXoxqj9uySgx2ViJ9Scd3/1000000 NodeID-EaMbg8yVmh47Fmg6kdadKmt7GPu66Hg7o/1000000"},
		{constants.PrimaryNetworkID, 30, "NodeID-CrBQdH8TmrExZoD5KT2ZSaE1J3PzvrjKV/2300000000000 NodeID-G7oukoeZdnw9yNpwJBgso24HiJntdGXZP/1000000000000000 NodeID-J8u5V9afjBJZah9aYANnYTsdQZSoADEDC/2500000000000 NodeID-PhPSRYpAVkb24819fsf9xQw66dPn13tu8/1000000000000000"},
		{constants.PrimaryNetworkID, 31, "NodeID-CrBQdH8TmrExZoD5KT2ZSaE1J3PzvrjKV/2300000000000 NodeID-G7oukoeZdnw9yNpwJBgso24HiJntdGXZP/1000000000000000 NodeID-J8u5V9afjBJZah9aYANnYTsdQZSoADEDC/2000000000000 NodeID-PhPSRYpAVkb24819fsf9xQw66dPn13tu8/1000000000000000"},
		{constants.PrimaryNetworkID, 37, "NodeID-G7oukoeZdnw9yNpwJBgso24HiJntdGXZP/1000000000000000 NodeID-PhPSRYpAVkb24819fsf9xQw66dPn13tu8/1000000000000000"},
	} {
		set, err := ValidatorSetAt(c.ctx, c.db, tc.subnet, tc.height)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range set {
			s := fmt.Sprintf("%s/%d", v.NodeID, v.Weight)
			if v.PublicKey == nil {
				s += "/nokey"
			}
			got = append(got, s)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("set of %s at %d:\n got %s\nwant %s", tc.subnet, tc.height, strings.Join(got, " "), tc.want)
		}
	}
	for _, x := range c.rec.Method("platform.getAllValidatorsAt") {
		var p struct {
			Height json.Number `json:"height"`
		}
		devnet.Params(t, x, &p)
		var res struct {
			ValidatorSets map[string]struct {
				Validators []struct {
					PublicKey string   `json:"publicKey"`
					Weight    string   `json:"weight"`
					NodeIDs   []string `json:"nodeIDs"`
				} `json:"validators"`
				TotalWeight string `json:"totalWeight"`
			} `json:"validatorSets"`
		}
		devnet.Result(t, x, &res)
		for s, set := range res.ValidatorSets {
			subnet, err := ids.FromString(s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ValidatorSetAt(c.ctx, c.db, subnet, mustUint(t, p.Height.String()))
			if err != nil {
				t.Fatal(err)
			}
			var total uint64
			var gotList, wantList []string
			for _, v := range got {
				total += v.Weight
				gotList = append(gotList, fmt.Sprintf("%s/%s/%d", v.NodeID, hexOrEmpty(v.PublicKey), v.Weight))
			}
			for _, v := range set.Validators {
				wantList = append(wantList, fmt.Sprintf("%s/%s/%s", strings.Join(v.NodeIDs, "+"), v.PublicKey, v.Weight))
			}
			sort.Strings(gotList)
			sort.Strings(wantList)
			if sp(gotList) != sp(wantList) || sp(total) != set.TotalWeight {
				t.Errorf("all validators of %s:\n got %v (%d)\nwant %v (%s)", s, gotList, total, wantList, set.TotalWeight)
			}
		}
	}
}

type ownerAnswer struct {
	Locktime  string   `json:"locktime"`
	Threshold string   `json:"threshold"`
	Addresses []string `json:"addresses"`
}

// sameOwner compares a stored owner JSON with a node answer (P- addresses).
func sameOwner(t *testing.T, what, stored string, want *ownerAnswer) {
	t.Helper()
	if want == nil {
		return
	}
	var o Owner
	if err := json.Unmarshal([]byte(stored), &o); err != nil {
		t.Errorf("%s: stored owner %q: %v", what, stored, err)
		return
	}
	addrs := make([]string, len(o.Addresses))
	for i, a := range o.Addresses {
		addrs[i] = "P-" + a
	}
	w := append([]string(nil), want.Addresses...)
	sort.Strings(w)
	if sp(o.Locktime, o.Threshold, addrs) != sp(want.Locktime, want.Threshold, w) {
		t.Errorf("%s owner = %v, want %+v", what, o, *want)
	}
}

// currentValidators: stakers and L1 validators against the recorded
// platform.getCurrentValidators (primary, subnet A, L1 B).
func (c *checker) currentValidators(t *testing.T, tipTime int64, accrued uint64) {
	for _, x := range c.rec.Method("platform.getCurrentValidators") {
		var p struct {
			SubnetID string   `json:"subnetID"`
			NodeIDs  []string `json:"nodeIDs"`
		}
		devnet.Params(t, x, &p)
		if len(p.NodeIDs) > 0 {
			continue
		}
		subnet := p.SubnetID
		if subnet == "" {
			subnet = constants.PrimaryNetworkID.String()
		}
		var res struct {
			Validators []struct {
				TxID                   string       `json:"txID"`
				StartTime              string       `json:"startTime"`
				EndTime                string       `json:"endTime"`
				Weight                 string       `json:"weight"`
				NodeID                 string       `json:"nodeID"`
				ValidationID           string       `json:"validationID"`
				PublicKey              string       `json:"publicKey"`
				MinNonce               string       `json:"minNonce"`
				Balance                string       `json:"balance"`
				PotentialReward        string       `json:"potentialReward"`
				AccruedDelegateeReward string       `json:"accruedDelegateeReward"`
				DelegationFee          string       `json:"delegationFee"`
				DelegatorCount         string       `json:"delegatorCount"`
				DelegatorWeight        string       `json:"delegatorWeight"`
				ValidationRewardOwner  *ownerAnswer `json:"validationRewardOwner"`
				DelegationRewardOwner  *ownerAnswer `json:"delegationRewardOwner"`
				RemainingBalanceOwner  *ownerAnswer `json:"remainingBalanceOwner"`
				DeactivationOwner      *ownerAnswer `json:"deactivationOwner"`
				Signer                 *struct {
					PublicKey         string `json:"publicKey"`
					ProofOfPossession string `json:"proofOfPossession"`
				} `json:"signer"`
			} `json:"validators"`
		}
		devnet.Result(t, x, &res)

		// The current set from the index.
		want := map[string]bool{}
		for _, v := range res.Validators {
			if v.ValidationID != "" {
				want[v.ValidationID] = true
			} else {
				want[v.TxID] = true
			}
		}
		got := map[string]bool{}
		rows, err := c.db.QueryContext(c.ctx, `SELECT tx_id FROM p_stakers WHERE subnet_id = $1 AND kind <> $2
			AND current_height >= 0 AND removed_height = -1 AND start_time <= $3
			UNION SELECT validation_id FROM p_l1_validators WHERE subnet_id = $1 AND removed_height = -1`,
			subnet, KindDelegator, tipTime)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			got[id] = true
		}
		rows.Close()
		if sp(got) != sp(want) {
			t.Errorf("current validators of %s = %v, want %v", subnet, got, want)
		}

		for _, v := range res.Validators {
			if v.ValidationID != "" {
				var node, weight, key, nonce, eaf, rb, do string
				var start int64
				if err := c.db.QueryRowContext(c.ctx, `SELECT node_id, weight, public_key, min_nonce, end_accumulated_fee,
					start_time, remaining_balance_owner, deactivation_owner FROM p_l1_validators WHERE validation_id = $1`,
					v.ValidationID).Scan(&node, &weight, &key, &nonce, &eaf, &start, &rb, &do); err != nil {
					t.Errorf("L1 validator %s: %v", v.ValidationID, err)
					continue
				}
				balance := uint64(0)
				if e := mustUint(t, eaf); e > accrued {
					balance = e - accrued
				}
				got := sp(node, mustUint(t, weight), key, mustUint(t, nonce), balance, start)
				want := sp(v.NodeID, v.Weight, v.PublicKey, v.MinNonce, v.Balance, v.StartTime)
				if got != want {
					t.Errorf("L1 validator %s = %s, want %s", v.ValidationID, got, want)
				}
				sameOwner(t, v.ValidationID, rb, v.RemainingBalanceOwner)
				sameOwner(t, v.ValidationID, do, v.DeactivationOwner)
				continue
			}
			var node, weight, pot, acc, key, pop, vo, do string
			var start, end, shares int64
			if err := c.db.QueryRowContext(c.ctx, `SELECT node_id, weight, start_time, end_time, potential_reward,
				accrued_delegatee_reward, delegation_shares, bls_public_key, bls_pop, validation_reward_owner,
				delegation_reward_owner FROM p_stakers WHERE tx_id = $1`, v.TxID).
				Scan(&node, &weight, &start, &end, &pot, &acc, &shares, &key, &pop, &vo, &do); err != nil {
				t.Errorf("staker %s: %v", v.TxID, err)
				continue
			}
			got := sp(node, mustUint(t, weight), start, end)
			want := sp(v.NodeID, v.Weight, v.StartTime, v.EndTime)
			if v.PotentialReward != "" {
				got += fmt.Sprintf(" %d %d %.4f", mustUint(t, pot), mustUint(t, acc), float64(shares)/10000)
				want += fmt.Sprintf(" %s %s %s", v.PotentialReward, v.AccruedDelegateeReward, v.DelegationFee)
			}
			if v.Signer != nil {
				got += " " + key + " " + pop
				want += " " + v.Signer.PublicKey + " " + v.Signer.ProofOfPossession
			}
			if v.DelegatorCount != "" {
				var n int
				var w uint64
				rows, err := c.db.QueryContext(c.ctx, `SELECT weight FROM p_stakers WHERE validator_tx_id = $1
					AND current_height >= 0 AND removed_height = -1`, v.TxID)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var s string
					if err := rows.Scan(&s); err != nil {
						t.Fatal(err)
					}
					n, w = n+1, w+mustUint(t, s)
				}
				rows.Close()
				got += " " + sp(n, w)
				want += " " + v.DelegatorCount + " " + v.DelegatorWeight
			}
			if got != want {
				t.Errorf("staker %s =\n %s, want\n %s", v.TxID, got, want)
			}
			if vo != "" || v.ValidationRewardOwner != nil {
				sameOwner(t, v.TxID, vo, v.ValidationRewardOwner)
				sameOwner(t, v.TxID, do, v.DelegationRewardOwner)
			}
		}
	}
}

// l1Validators: platform.getL1Validator, the removed one is gone.
func (c *checker) l1Validators(t *testing.T, accrued uint64) {
	for _, x := range c.rec.Method("platform.getL1Validator") {
		var p struct {
			ValidationID string `json:"validationID"`
		}
		devnet.Params(t, x, &p)
		var removed int64
		var weight, nonce, eaf, subnet string
		if err := c.db.QueryRowContext(c.ctx, `SELECT removed_height, weight, min_nonce, end_accumulated_fee, subnet_id
			FROM p_l1_validators WHERE validation_id = $1`, p.ValidationID).Scan(&removed, &weight, &nonce, &eaf, &subnet); err != nil {
			t.Fatalf("L1 validator %s: %v", p.ValidationID, err)
		}
		if x.Response.Error != nil {
			if removed < 0 {
				t.Errorf("L1 validator %s: node says %q, index has it", p.ValidationID, x.Response.Error.Message)
			}
			continue
		}
		var res struct {
			Weight   string `json:"weight"`
			MinNonce string `json:"minNonce"`
			Balance  string `json:"balance"`
			SubnetID string `json:"subnetID"`
		}
		devnet.Result(t, x, &res)
		got := sp(removed, mustUint(t, weight), mustUint(t, nonce), mustUint(t, eaf)-accrued, subnet)
		want := sp(-1, res.Weight, res.MinNonce, res.Balance, res.SubnetID)
		if got != want {
			t.Errorf("L1 validator %s = %s, want %s", p.ValidationID, got, want)
		}
	}
	// The removed validator's history: register, weight change, balance,
	// disable, removal.
	var events []string
	rows, err := c.db.QueryContext(c.ctx, `SELECT h.event, h.weight, h.active FROM p_l1_validator_history h
		JOIN p_l1_validators v ON v.validation_id = h.validation_id WHERE v.removed_height >= 0 ORDER BY h.height, h.seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var ev, w string
		var active bool
		if err := rows.Scan(&ev, &w, &active); err != nil {
			t.Fatal(err)
		}
		events = append(events, fmt.Sprintf("%s/%d/%v", ev, mustUint(t, w), active))
	}
	rows.Close()
	want := "REGISTER/100000/true SET_WEIGHT/150000/true INCREASE_BALANCE/150000/true DISABLE/150000/false REMOVE/0/false"
	if got := strings.Join(events, " "); got != want {
		t.Errorf("removed L1 validator history = %s, want %s", got, want)
	}
}

// subnetsAndChains: platform.getSubnet, getSubnets and getBlockchains.
func (c *checker) subnetsAndChains(t *testing.T) {
	for _, x := range c.rec.Method("platform.getSubnet") {
		var p struct {
			SubnetID string `json:"subnetID"`
		}
		devnet.Params(t, x, &p)
		var threshold, locktime int64
		var addrs, conversion, manager, managerAddr, transform string
		err := c.db.QueryRowContext(c.ctx, `SELECT owner_threshold, owner_locktime, owner_addresses, conversion_id,
			manager_chain_id, manager_address, transform_tx_id FROM p_subnets WHERE subnet_id = $1 AND created_tx_id <> ''`,
			p.SubnetID).Scan(&threshold, &locktime, &addrs, &conversion, &manager, &managerAddr, &transform)
		if x.Response.Error != nil {
			if !errors.Is(err, sql.ErrNoRows) {
				t.Errorf("subnet %s: node says %q, index has it (%v)", p.SubnetID, x.Response.Error.Message, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("subnet %s: %v", p.SubnetID, err)
		}
		var res struct {
			IsPermissioned bool     `json:"isPermissioned"`
			ControlKeys    []string `json:"controlKeys"`
			Threshold      string   `json:"threshold"`
			Locktime       string   `json:"locktime"`
			ConversionID   string   `json:"conversionID"`
			ManagerChainID string   `json:"managerChainID"`
			ManagerAddress *string  `json:"managerAddress"`
		}
		devnet.Result(t, x, &res)
		sameOwner(t, p.SubnetID, fmt.Sprintf(`{"locktime":%d,"threshold":%d,"addresses":%s}`, locktime, threshold, addrs),
			&ownerAnswer{Locktime: res.Locktime, Threshold: res.Threshold, Addresses: res.ControlKeys})
		empty := ids.Empty.String()
		orEmpty := func(s string) string {
			if s == "" {
				return empty
			}
			return s
		}
		wantAddr := ""
		if res.ManagerAddress != nil {
			wantAddr = *res.ManagerAddress
		}
		got := sp(conversion == "" && transform == "", orEmpty(conversion), orEmpty(manager), managerAddr)
		want := sp(res.IsPermissioned, res.ConversionID, res.ManagerChainID, wantAddr)
		if got != want {
			t.Errorf("subnet %s = %s, want %s", p.SubnetID, got, want)
		}
	}
	for _, x := range c.rec.Method("platform.getBlockchains") {
		var res struct {
			Blockchains []struct {
				ID       string `json:"id"`
				Name     string `json:"name"`
				SubnetID string `json:"subnetID"`
				VMID     string `json:"vmID"`
			} `json:"blockchains"`
		}
		devnet.Result(t, x, &res)
		var want []string
		for _, b := range res.Blockchains {
			want = append(want, strings.Join([]string{b.ID, b.Name, b.SubnetID, b.VMID}, "/"))
		}
		rows, err := c.db.QueryContext(c.ctx, `SELECT blockchain_id, name, subnet_id, vm_id FROM p_blockchains`)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var a, b, c2, d string
			if err := rows.Scan(&a, &b, &c2, &d); err != nil {
				t.Fatal(err)
			}
			got = append(got, strings.Join([]string{a, b, c2, d}, "/"))
		}
		rows.Close()
		sort.Strings(got)
		sort.Strings(want)
		if sp(got) != sp(want) {
			t.Errorf("blockchains = %v, want %v", got, want)
		}
	}
	var keys []string
	rows, err := c.db.QueryContext(c.ctx, `SELECT chain_key FROM p_blockchains WHERE chain_key <> '' ORDER BY chain_key`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	rows.Close()
	if sp(keys) != "[C X]" {
		t.Errorf("chain keys = %v", keys)
	}
}

// feeStates: platform.getFeeState and getValidatorFeeState at the tip.
func (c *checker) feeStates(t *testing.T, st State) {
	for _, x := range c.rec.Method("platform.getFeeState") {
		var res struct {
			Capacity json.Number `json:"capacity"`
			Excess   json.Number `json:"excess"`
		}
		devnet.Result(t, x, &res)
		if got, want := sp(st.FeeCapacity, st.FeeExcess), sp(res.Capacity, res.Excess); got != want {
			t.Errorf("fee state = %s, want %s", got, want)
		}
	}
	for _, x := range c.rec.Method("platform.getValidatorFeeState") {
		var res struct {
			Excess json.Number `json:"excess"`
		}
		devnet.Result(t, x, &res)
		if got := sp(st.L1Excess); got != res.Excess.String() {
			t.Errorf("validator fee excess = %s, want %s", got, res.Excess)
		}
	}
	if st.ActiveL1Validators != 2 {
		t.Errorf("active L1 validators = %d, want 2", st.ActiveL1Validators)
	}
}

// stakes: platform.getStake (locked stake outputs) and getTotalStake.
func (c *checker) stakes(t *testing.T) {
	for _, x := range c.rec.Method("platform.getStake") {
		var p struct {
			Addresses []string `json:"addresses"`
		}
		devnet.Params(t, x, &p)
		var res struct {
			Staked string `json:"staked"`
		}
		devnet.Result(t, x, &res)
		var total uint64
		for _, a := range p.Addresses {
			rows, err := c.db.QueryContext(c.ctx, `SELECT u.amount FROM utxo_addresses a JOIN utxos u ON u.utxo_id = a.utxo_id
				WHERE a.address = $1 AND a.chain_key = 'P' AND a.spent = $2 AND u.stake_locked = $3`,
				strings.TrimPrefix(a, "P-"), false, true)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					t.Fatal(err)
				}
				total += mustUint(t, s)
			}
			rows.Close()
		}
		if sp(total) != res.Staked {
			t.Errorf("stake of %v = %d, want %s", p.Addresses, total, res.Staked)
		}
	}
	// The genesis validators' stake is still locked.
	var locked int
	if err := c.db.QueryRowContext(c.ctx, `SELECT COUNT(*) FROM utxos WHERE stake_locked = $1`, true).Scan(&locked); err != nil {
		t.Fatal(err)
	}
	if locked != 2 {
		t.Errorf("locked stake outputs = %d, want 2 (genesis validators)", locked)
	}
	for _, x := range c.rec.Method("platform.getTotalStake") {
		var p struct {
			SubnetID string `json:"subnetID"`
		}
		devnet.Params(t, x, &p)
		var res struct {
			Weight string `json:"weight"`
		}
		devnet.Result(t, x, &res)
		subnet, err := ids.FromString(p.SubnetID)
		if err != nil {
			t.Fatal(err)
		}
		set, err := ValidatorSetAt(c.ctx, c.db, subnet, 41)
		if err != nil {
			t.Fatal(err)
		}
		var total uint64
		for _, v := range set {
			total += v.Weight
		}
		if sp(total) != res.Weight {
			t.Errorf("total stake of %s = %d, want %s", p.SubnetID, total, res.Weight)
		}
	}
}

// stakerLifecycle: how each staker ended, against network.json and the workload.
func (c *checker) stakerLifecycle(t *testing.T) {
	for _, r := range c.net.RewardValidatorTxs {
		var removal, byTx string
		var removed int64
		if err := c.db.QueryRowContext(c.ctx, `SELECT removal, removal_tx_id, removed_height FROM p_stakers WHERE tx_id = $1`,
			r.StakerTxID).Scan(&removal, &byTx, &removed); err != nil {
			t.Fatal(err)
		}
		want := RemovalNotRewarded
		if r.OutcomeBlockType == "BanffCommitBlock" {
			want = RemovalRewarded
		}
		if removal != want || byTx != r.RewardTxID || removed != int64(r.Height)+1 {
			t.Errorf("staker %s ended %s by %s at %d, want %s by %s at %d", r.StakerTxID, removal, byTx, removed, want,
				r.RewardTxID, r.Height+1)
		}
		var rewarded bool
		var staker string
		if err := c.db.QueryRowContext(c.ctx, `SELECT rewarded, reward_staker_tx FROM px_txs WHERE tx_id = $1`,
			r.RewardTxID).Scan(&rewarded, &staker); err != nil {
			t.Fatal(err)
		}
		if rewarded != (want == RemovalRewarded) || staker != r.StakerTxID {
			t.Errorf("reward tx %s: rewarded=%v staker=%s", r.RewardTxID, rewarded, staker)
		}
	}
	// Subnet A: one validator expired at height 29, one removed at 17.
	for tx, want := range map[string]string{
		"297jiLWBD8gqRaTYNu6mmhZnTbptHTm4zwLccsvWXzw4qpEd92": "EXPIRED/29",
		"Kz5NruDg77x4whDQ2xR9c5h45oK5XvSG6ki7KYak7uVeWneDe":  "REMOVED/17",
		"NZiyHyoU84KQD1kBYUCKBTdxVYZviUncWyn5gqrJXei2UnJtp":  "/-1",
	} {
		var removal string
		var removed int64
		if err := c.db.QueryRowContext(c.ctx, `SELECT removal, removed_height FROM p_stakers WHERE tx_id = $1`, tx).
			Scan(&removal, &removed); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%s/%d", removal, removed); got != want {
			t.Errorf("subnet validator %s = %s, want %s", tx, got, want)
		}
	}
	// Delegators link to their validators.
	for d, v := range map[string]string{
		"DYn8QEFbWm9caXxWL9BGPoapjHjgUvEJCzTXqMKMi2YjRhizJ":  "24qib88mSN5rtxpXe5jgQpXfXsZbUeqieo3Fc6AstWy5ZdWvke",
		"2otATuvbvsubfNqEhatmgM42pHM3ixtne5gz9uV3MQPZ46y1XY": "stWNFNbBXdGAfqyFuEAa3L4wvR3NRxmVBDQjiRg1MhCxQ1PGd",
	} {
		var got string
		if err := c.db.QueryRowContext(c.ctx, `SELECT validator_tx_id FROM p_stakers WHERE tx_id = $1`, d).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != v {
			t.Errorf("delegator %s -> %s, want %s", d, got, v)
		}
	}
}

// credentialsAndLinks: every recovered signer is an owner the tx touches
// (inputs' owners) or a subnet/L1 authority, and every tx has address links.
func (c *checker) credentialsAndLinks(t *testing.T) {
	authorities := map[string]bool{}
	for _, q := range []string{`SELECT addresses FROM p_subnet_owners`, `SELECT deactivation_owner FROM p_l1_validators`} {
		rows, err := c.db.QueryContext(c.ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			var list []string
			var o Owner
			if json.Unmarshal([]byte(s), &list) != nil {
				if err := json.Unmarshal([]byte(s), &o); err != nil {
					t.Fatal(err)
				}
				list = o.Addresses
			}
			for _, a := range list {
				authorities[a] = true
			}
		}
		rows.Close()
	}
	rows, err := c.db.QueryContext(c.ctx, `SELECT tx_id, tx_type, credentials FROM px_txs WHERE chain_key = 'P' AND height > 0`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ id, typ, creds string }
	var list []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.typ, &r.creds); err != nil {
			t.Fatal(err)
		}
		list = append(list, r)
	}
	rows.Close()
	signatures := 0
	for _, r := range list {
		linked := map[string]bool{}
		lr, err := c.db.QueryContext(c.ctx, `SELECT address FROM px_tx_addresses WHERE tx_id = $1`, r.id)
		if err != nil {
			t.Fatal(err)
		}
		for lr.Next() {
			var a string
			if err := lr.Scan(&a); err != nil {
				t.Fatal(err)
			}
			linked[a] = true
		}
		lr.Close()
		if len(linked) == 0 {
			t.Errorf("tx %s (%s) has no address links", r.id, r.typ)
		}
		var creds [][]Credential
		if err := json.Unmarshal([]byte(r.creds), &creds); err != nil {
			t.Fatalf("tx %s credentials: %v", r.id, err)
		}
		for _, cred := range creds {
			for _, s := range cred {
				pkBytes, err := base64.StdEncoding.DecodeString(s.PublicKey)
				if err != nil {
					t.Fatal(err)
				}
				pk, err := secp256k1.ToPublicKey(pkBytes)
				if err != nil {
					t.Errorf("tx %s: recovered key: %v", r.id, err)
					continue
				}
				addr, err := address.FormatBech32("custom", pk.Address().Bytes())
				if err != nil {
					t.Fatal(err)
				}
				if !linked[addr] && !authorities[addr] {
					t.Errorf("tx %s (%s): signer %s is neither an input owner nor an authority", r.id, r.typ, addr)
				}
				signatures++
			}
		}
	}
	if signatures < 33 {
		t.Errorf("only %d signatures checked", signatures)
	}
}

// sp joins values with spaces (fmt.Sprint omits them between strings).
func sp(v ...any) string { return strings.TrimSuffix(fmt.Sprintln(v...), "\n") }

// fees: the burned amount (inputs - outputs - stake - L1 balances) of each
// fee-paying tx is twice its ACP-103 gas: the price stayed at the 1 nAVAX
// minimum and the workload's wallet pays twice the current price. Block gas
// sums match.
func (c *checker) fees(t *testing.T) {
	weights := avagenesis.GetTxFeeConfig(88888).DynamicFeeConfig.Weights
	rows, err := c.db.QueryContext(c.ctx, `SELECT x.tx_id, x.height, x.tx_type, x.tx_bytes, p.burned FROM px_txs x
		JOIN p_txs p ON p.tx_id = x.tx_id WHERE x.chain_key = 'P' AND x.height > 0`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		id, typ, burned string
		height          int64
		raw             []byte
	}
	var list []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.height, &r.typ, &r.raw, &r.burned); err != nil {
			t.Fatal(err)
		}
		list = append(list, r)
	}
	rows.Close()
	perBlock := map[int64]uint64{}
	for _, r := range list {
		stx, err := txs.Parse(txs.Codec, r.raw)
		if err != nil {
			t.Fatal(err)
		}
		want := uint64(0)
		if r.typ != "RewardValidatorTx" {
			cx, err := txfee.TxComplexity(stx.Unsigned)
			if err != nil {
				t.Fatal(err)
			}
			g, err := cx.ToGas(weights)
			if err != nil {
				t.Fatal(err)
			}
			want = 2 * uint64(g)
			perBlock[r.height] += uint64(g)
		}
		if got := mustUint(t, r.burned); got != want {
			t.Errorf("tx %s (%s) burned %d, want %d", r.id, r.typ, got, want)
		}
	}
	for h := int64(1); h <= 41; h++ {
		st, err := StateAt(c.ctx, c.db, uint64(h))
		if err != nil {
			t.Fatal(err)
		}
		if st.GasConsumed != perBlock[h] || st.Burned != 2*perBlock[h] {
			t.Errorf("block %d gas %d burned %d, want %d", h, st.GasConsumed, st.Burned, perBlock[h])
		}
	}
}

// atomics: exported outputs are keyed to their destination chain, imported
// inputs are consumed by the import (their creation is the X/C indexer's).
func (c *checker) atomics(t *testing.T) {
	rows, err := c.db.QueryContext(c.ctx, `SELECT x.tx_id, x.tx_type, x.source_chain, x.destination_chain FROM px_txs x
		WHERE x.chain_key = 'P' AND x.tx_type IN ('ImportTx', 'ExportTx')`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ id, typ, src, dst string }
	var list []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.typ, &r.src, &r.dst); err != nil {
			t.Fatal(err)
		}
		list = append(list, r)
	}
	rows.Close()
	if len(list) != 5 {
		t.Fatalf("%d atomic txs, want 5", len(list))
	}
	keys := map[string]string{"NhDDVSn1E1se1v39FfQVwpd74ivs3gPmvhaUX6x78uide8Z3m": "X", "RiAQoU1j1pwbZcr8jhc646GwJeFCaBUjbWK2oVvzfrHtjJRUi": "C"}
	for _, r := range list {
		var n int
		if r.typ == "ExportTx" {
			if err := c.db.QueryRowContext(c.ctx, `SELECT COUNT(*) FROM utxos WHERE tx_id = $1 AND created_chain = 'P' AND chain_key = $2`,
				r.id, keys[r.dst]).Scan(&n); err != nil {
				t.Fatal(err)
			}
		} else {
			if err := c.db.QueryRowContext(c.ctx, `SELECT COUNT(*) FROM utxos WHERE consumed_tx = $1 AND chain_key = 'P'
				AND consumed_chain = 'P' AND tx_id <> $1`, r.id).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if keys[r.src] == "" {
				t.Errorf("import %s from unknown chain %s", r.id, r.src)
			}
		}
		if n == 0 {
			t.Errorf("%s %s: no atomic utxo rows", r.typ, r.id)
		}
	}
}

// extension appends synthetic blocks to the indexed chain: a standard block
// whose RegisterL1ValidatorTx carries an unparseable Warp message (stored as
// UNKNOWN, the block's other tx still indexed), then bytes the codec rejects
// (an UNKNOWN block). Nothing is dropped; the chain keeps going.
func (c *checker) extension(t *testing.T, ix *Indexer) {
	tip, err := StateAt(c.ctx, c.db, 41)
	if err != nil {
		t.Fatal(err)
	}
	bad := &txs.Tx{Unsigned: &txs.RegisterL1ValidatorTx{
		BaseTx:  txs.BaseTx{BaseTx: avax.BaseTx{NetworkID: 88888, BlockchainID: constants.PlatformChainID}},
		Message: []byte{0xde, 0xad, 0xbe, 0xef},
	}}
	good := &txs.Tx{Unsigned: &txs.BaseTx{BaseTx: avax.BaseTx{NetworkID: 88888, BlockchainID: constants.PlatformChainID,
		Memo: []byte("hi")}}}
	for _, stx := range []*txs.Tx{bad, good} {
		if err := stx.Initialize(txs.Codec); err != nil {
			t.Fatal(err)
		}
	}
	blk, err := block.NewBanffStandardBlock(time.Unix(tip.Time+2, 0), tip.BlockID, 42, []*txs.Tx{bad, good})
	if err != nil {
		t.Fatal(err)
	}
	junk := append([]byte{0, 0, 0xff, 0xff}, blk.Bytes()[4:]...)

	// Out of order and wrong parent are refused.
	apply := func(b ingest.RawBlock) error {
		tx, err := c.db.Begin(c.ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := ix.Apply(c.ctx, tx, b); err != nil {
			return err
		}
		return tx.Commit()
	}
	if err := apply(ingest.RawBlock{Height: 43, Bytes: blk.Bytes()}); err == nil {
		t.Error("block with a height other than its own: want error")
	}
	other, err := block.NewBanffStandardBlock(time.Unix(tip.Time+2, 0), ids.GenerateTestID(), 42, []*txs.Tx{good})
	if err != nil {
		t.Fatal(err)
	}
	if err := apply(ingest.RawBlock{Height: 42, Bytes: other.Bytes()}); err == nil {
		t.Error("block with an unknown parent: want error")
	}
	if err := apply(ingest.RawBlock{Height: 42, Hash: ids.GenerateTestID().String(), Bytes: blk.Bytes()}); err == nil {
		t.Error("block whose hash differs from the source's: want error")
	}

	if err := apply(ingest.RawBlock{Height: 42, Hash: blk.ID().String(), Bytes: blk.Bytes()}); err != nil {
		t.Fatal(err)
	}
	if err := apply(ingest.RawBlock{Height: 43, Bytes: junk}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{
		bad.ID().String():              "UNKNOWN/42/",
		good.ID().String():             "BaseTx/42/0x6869",
		ids.ID(hash256(junk)).String(): "UNKNOWN/43/",
	} {
		var typ, memo string
		var h int64
		var raw []byte
		if err := c.db.QueryRowContext(c.ctx, `SELECT tx_type, height, memo, tx_bytes FROM px_txs WHERE tx_id = $1`, id).
			Scan(&typ, &h, &memo, &raw); err != nil {
			t.Fatalf("tx %s: %v", id, err)
		}
		if got := fmt.Sprintf("%s/%d/%s", typ, h, memo); got != want || len(raw) == 0 {
			t.Errorf("tx %s = %s (%d bytes), want %s", id, got, len(raw), want)
		}
	}
	var typ string
	if err := c.db.QueryRowContext(c.ctx, `SELECT block_type FROM px_blocks WHERE chain_key = 'P' AND height = 43`).Scan(&typ); err != nil || typ != "UNKNOWN" {
		t.Errorf("block 43 type %q (%v), want UNKNOWN", typ, err)
	}
	// State carries over the unknown block.
	st, err := StateAt(c.ctx, c.db, 43)
	if err != nil || st.CurrentSupply != tip.CurrentSupply || st.Time != tip.Time+2 {
		t.Errorf("state after unknown block = %+v (%v)", st, err)
	}
}

// derivedTables: every table DerivedTables names exists.
func (c *checker) derivedTables(t *testing.T, ix *Indexer) {
	for _, table := range ix.DerivedTables() {
		var n int
		if err := c.db.QueryRowContext(c.ctx, `SELECT COUNT(*) FROM `+table).Scan(&n); err != nil {
			t.Errorf("table %s: %v", table, err)
		}
	}
}
