package primary_test

import (
	"encoding/json"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/utils/constants"
)

type blockchainOut struct {
	CreateBlockTimestamp int64           `json:"createBlockTimestamp"`
	CreateBlockNumber    string          `json:"createBlockNumber"`
	BlockchainID         string          `json:"blockchainId"`
	VMID                 string          `json:"vmId"`
	SubnetID             string          `json:"subnetId"`
	BlockchainName       string          `json:"blockchainName"`
	EVMChainID           *int64          `json:"evmChainId"`
	GenesisData          json.RawMessage `json:"genesisData"`
}

// recordedChain is one chain of platform.getBlockchains.
type recordedChain struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	SubnetID string `json:"subnetID"`
	VMID     string `json:"vmID"`
}

func (e *env) recordedChains(t *testing.T) map[string]recordedChain {
	t.Helper()
	out := map[string]recordedChain{}
	e.rec.each("P", "platform.getBlockchains", func(_, result json.RawMessage) {
		var r struct{ Blockchains []recordedChain }
		if err := json.Unmarshal(result, &r); err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Blockchains {
			out[c.ID] = c
		}
	})
	if len(out) == 0 {
		t.Fatal("no recorded getBlockchains")
	}
	return out
}

// txBlock returns the P height holding tx id (from network.json's pBlocks),
// ok false for a tx in no block (genesis).
func (e *env) txBlock(id string) (uint64, bool) {
	for _, b := range e.net.PBlocks {
		for _, tx := range b.Txs {
			if tx.TxID == id {
				return b.Height, true
			}
		}
	}
	return 0, false
}

// pTimes are the recorded P block times by height.
func (e *env) pTimes(t *testing.T) map[uint64]int64 {
	t.Helper()
	out := map[uint64]int64{}
	for h, b := range e.recordedBlocks(t, "P") {
		if b.Time != nil {
			out[uint64(h)] = *b.Time
		}
	}
	return out
}

// Every chain platform.getBlockchains lists, and no other, with the block
// of its CreateChainTx; page by page in both orders; each one by its id.
func TestBlockchains(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		want := e.recordedChains(t)
		times := e.pTimes(t)
		for _, order := range []string{"asc", "desc"} {
			var got []blockchainOut
			pages := e.walk(t, "/v1/networks/testnet/blockchains?sortOrder="+order, 1, func(body []byte) {
				var p struct{ Blockchains []blockchainOut }
				if err := json.Unmarshal(body, &p); err != nil {
					t.Fatal(err)
				}
				got = append(got, p.Blockchains...)
			})
			if len(got) != len(want) || pages < len(want) {
				t.Fatalf("%s: %d chains in %d pages, the node lists %d", order, len(got), pages, len(want))
			}
			for i := 1; i < len(got); i++ {
				a, b := got[i-1], got[i]
				less := a.CreateBlockTimestamp < b.CreateBlockTimestamp || (a.CreateBlockTimestamp == b.CreateBlockTimestamp && a.BlockchainID < b.BlockchainID)
				if less != (order == "asc") {
					t.Errorf("%s: %s before %s", order, a.BlockchainID, b.BlockchainID)
				}
			}
			for _, b := range got {
				w, ok := want[b.BlockchainID]
				if !ok {
					t.Errorf("chain %s is not listed by the node", b.BlockchainID)
					continue
				}
				if b.BlockchainName != w.Name || b.SubnetID != w.SubnetID || b.VMID != w.VMID {
					t.Errorf("chain %s: %+v, node %+v", b.BlockchainID, b, w)
				}
				h, inBlock := e.txBlock(b.BlockchainID)
				wantTime := genesisStartTime(t)
				if inBlock {
					wantTime = times[h]
				}
				if b.CreateBlockNumber != strconv.FormatUint(h, 10) || b.CreateBlockTimestamp != wantTime {
					t.Errorf("chain %s created at %s/%d, want %d/%d", b.BlockchainID, b.CreateBlockNumber, b.CreateBlockTimestamp, h, wantTime)
				}
				if b.BlockchainID == e.net.BlockchainIDs["C"] && (b.EVMChainID == nil || uint64(*b.EVMChainID) != e.net.EVMChainID) {
					t.Errorf("C-chain evmChainId %v, want %d", b.EVMChainID, e.net.EVMChainID)
				}
				if b.BlockchainID == e.net.BlockchainIDs["X"] && (b.EVMChainID != nil || b.GenesisData != nil) {
					t.Errorf("X-chain has an EVM chain id or JSON genesis: %+v", b)
				}
				var one blockchainOut
				e.ok(t, "/v1/networks/fuji/blockchains/"+b.BlockchainID, &one)
				if one.BlockchainID != b.BlockchainID || one.CreateBlockNumber != b.CreateBlockNumber || one.VMID != b.VMID || one.BlockchainName != b.BlockchainName {
					t.Errorf("getBlockchainById %s: %+v, listed %+v", b.BlockchainID, one, b)
				}
			}
		}
		e.fails(t, "/v1/networks/testnet/blockchains/"+e.net.Subnets["A"].SubnetID, 404, "blockchainId")
		e.fails(t, "/v1/networks/testnet/blockchains/p-chainx", 400, "blockchainId")
		e.fails(t, "/v1/networks/mainnet/blockchains", 404, "mainnet")
	})
}

type subnetOut struct {
	CreateBlockTimestamp int64    `json:"createBlockTimestamp"`
	CreateBlockIndex     string   `json:"createBlockIndex"`
	SubnetID             string   `json:"subnetId"`
	OwnerAddresses       []string `json:"ownerAddresses"`
	Threshold            int64    `json:"threshold"`
	Locktime             int64    `json:"locktime"`
	SubnetOwnershipInfo  struct {
		Locktime  int64    `json:"locktime"`
		Threshold int64    `json:"threshold"`
		Addresses []string `json:"addresses"`
	} `json:"subnetOwnershipInfo"`
	IsL1                        bool   `json:"isL1"`
	L1ConversionTransactionHash string `json:"l1ConversionTransactionHash"`
	L1ValidatorManagerDetails   *struct {
		BlockchainID    string `json:"blockchainId"`
		ContractAddress string `json:"contractAddress"`
	} `json:"l1ValidatorManagerDetails"`
	Blockchains []blockchainOut `json:"blockchains"`
}

// Every subnet of platform.getSubnets with its owners; A and B as
// platform.getSubnet answers them (owners, locktime, L1 conversion); the
// chains of each as platform.getBlockchains groups them.
func TestSubnets(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		type recSubnet struct {
			ID          string   `json:"id"`
			ControlKeys []string `json:"controlKeys"`
			Threshold   string   `json:"threshold"`
		}
		want := map[string]recSubnet{}
		e.rec.each("P", "platform.getSubnets", func(params, result json.RawMessage) {
			if string(params) != "{}" {
				return
			}
			var r struct{ Subnets []recSubnet }
			if err := json.Unmarshal(result, &r); err != nil {
				t.Fatal(err)
			}
			for _, s := range r.Subnets {
				want[s.ID] = s
			}
		})
		type recDetail struct {
			IsPermissioned bool     `json:"isPermissioned"`
			ControlKeys    []string `json:"controlKeys"`
			Threshold      string   `json:"threshold"`
			Locktime       string   `json:"locktime"`
			ManagerChainID string   `json:"managerChainID"`
			ManagerAddress *string  `json:"managerAddress"`
		}
		details := map[string]recDetail{}
		e.rec.each("P", "platform.getSubnet", func(params, result json.RawMessage) {
			var p struct{ SubnetID string }
			var d recDetail
			if json.Unmarshal(params, &p) != nil || json.Unmarshal(result, &d) != nil {
				t.Fatal("bad getSubnet recording")
			}
			details[p.SubnetID] = d
		})
		chains := e.recordedChains(t)
		times := e.pTimes(t)
		if len(want) != 3 || len(details) != 2 {
			t.Fatalf("recording: %d subnets, %d details", len(want), len(details))
		}
		var got []subnetOut
		e.walk(t, "/v1/networks/testnet/subnets", 2, func(body []byte) {
			var p struct{ Subnets []subnetOut }
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatal(err)
			}
			got = append(got, p.Subnets...)
		})
		if len(got) != len(want) {
			t.Fatalf("%d subnets, the node lists %d", len(got), len(want))
		}
		for _, s := range got {
			w, ok := want[s.SubnetID]
			if !ok {
				t.Errorf("subnet %s is not listed by the node", s.SubnetID)
				continue
			}
			keys := make([]string, len(w.ControlKeys))
			for i, k := range w.ControlKeys {
				keys[i] = strings.TrimPrefix(k, "P-")
			}
			sort.Strings(keys)
			addrs := append([]string(nil), s.OwnerAddresses...)
			sort.Strings(addrs)
			if strings.Join(addrs, ",") != strings.Join(keys, ",") || strconv.FormatInt(s.Threshold, 10) != w.Threshold {
				t.Errorf("subnet %s owners %v/%d, node %v/%s", s.SubnetID, s.OwnerAddresses, s.Threshold, keys, w.Threshold)
			}
			if s.SubnetOwnershipInfo.Threshold != s.Threshold || s.SubnetOwnershipInfo.Locktime != s.Locktime ||
				strings.Join(s.SubnetOwnershipInfo.Addresses, ",") != strings.Join(s.OwnerAddresses, ",") {
				t.Errorf("subnet %s: subnetOwnershipInfo %+v differs from the deprecated fields", s.SubnetID, s.SubnetOwnershipInfo)
			}
			if d, ok := details[s.SubnetID]; ok {
				if strconv.FormatInt(s.Locktime, 10) != d.Locktime || s.IsL1 == d.IsPermissioned {
					t.Errorf("subnet %s: locktime %d isL1 %v, node %+v", s.SubnetID, s.Locktime, s.IsL1, d)
				}
				if s.IsL1 {
					m := s.L1ValidatorManagerDetails
					if m == nil || d.ManagerAddress == nil || m.BlockchainID != d.ManagerChainID || m.ContractAddress != *d.ManagerAddress {
						t.Errorf("subnet %s manager %+v, node %+v", s.SubnetID, m, d)
					}
				} else if s.L1ValidatorManagerDetails != nil || s.L1ConversionTransactionHash != "" {
					t.Errorf("subnet %s is no L1 but has %+v", s.SubnetID, s)
				}
			}
			for _, n := range e.net.Subnets {
				if n.SubnetID == s.SubnetID && n.ConversionTxID != s.L1ConversionTransactionHash {
					t.Errorf("subnet %s conversion tx %q, want %q", s.SubnetID, s.L1ConversionTransactionHash, n.ConversionTxID)
				}
			}
			h, inBlock := e.txBlock(s.SubnetID)
			wantTime := genesisStartTime(t)
			if inBlock {
				wantTime = times[h]
			}
			if s.CreateBlockIndex != strconv.FormatUint(h, 10) || s.CreateBlockTimestamp != wantTime {
				t.Errorf("subnet %s created at %s/%d, want %d/%d", s.SubnetID, s.CreateBlockIndex, s.CreateBlockTimestamp, h, wantTime)
			}
			var wantChains, gotChains []string
			for _, c := range chains {
				if c.SubnetID == s.SubnetID {
					wantChains = append(wantChains, c.ID)
				}
			}
			for _, c := range s.Blockchains {
				gotChains = append(gotChains, c.BlockchainID)
			}
			sort.Strings(wantChains)
			sort.Strings(gotChains)
			if strings.Join(gotChains, ",") != strings.Join(wantChains, ",") {
				t.Errorf("subnet %s chains %v, node %v", s.SubnetID, gotChains, wantChains)
			}
			var one subnetOut
			e.ok(t, "/v1/networks/testnet/subnets/"+s.SubnetID, &one)
			a, _ := json.Marshal(one)
			b, _ := json.Marshal(s)
			if string(a) != string(b) {
				t.Errorf("getSubnetById %s:\n%s\nlisted:\n%s", s.SubnetID, a, b)
			}
		}
		e.fails(t, "/v1/networks/testnet/subnets/"+e.net.BlockchainIDs["X"], 404, "subnetId")
		e.fails(t, "/v1/networks/testnet/subnets/abc", 400, "subnetId")
		e.fails(t, "/v1/networks/testnet/subnets?pageSize=10001", 400, "pageSize")
		e.fails(t, "/v1/networks/testnet/blockchains?sortOrder=up", 400, "sortOrder")
	})
}

// Every P and X block by height and by id: the node's recorded block, and
// the same record the listing serves.
func TestBlockByID(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		for chain, alias := range map[string]string{"P": "p-chain", "X": "x-chain"} {
			listed := map[string]blockOut{}
			for _, b := range e.allBlocks(t, "/v1/networks/testnet/blockchains/"+alias+"/blocks", 100) {
				listed[b.BlockNumber] = b
			}
			rec := e.recordedBlocks(t, chain)
			if len(rec) != len(listed) {
				t.Fatalf("%s: %d blocks listed, %d recorded", chain, len(listed), len(rec))
			}
			for h, w := range rec {
				for _, id := range []string{strconv.FormatInt(h, 10), w.ID, e.net.BlockchainIDs[chain]} {
					if id == e.net.BlockchainIDs[chain] {
						continue
					}
					var b blockOut
					e.ok(t, "/v1/networks/testnet/blockchains/"+alias+"/blocks/"+id, &b)
					if b.BlockHash != w.ID || b.ParentHash != w.ParentID || b.BlockNumber != strconv.FormatInt(h, 10) ||
						strings.Join(b.Transactions, ",") != strings.Join(w.TxIDs, ",") || b.BlockSizeBytes != w.Size ||
						(w.Time != nil && b.BlockTimestamp != *w.Time) {
						t.Errorf("%s block %s: %+v, node %+v", chain, id, b, *w)
					}
					l, _ := json.Marshal(listed[b.BlockNumber])
					g, _ := json.Marshal(b)
					if string(l) != string(g) {
						t.Errorf("%s block %s:\n%s\nlisted:\n%s", chain, id, g, l)
					}
				}
			}
			tip := strconv.Itoa(len(rec))
			e.fails(t, "/v1/networks/testnet/blockchains/"+alias+"/blocks/"+tip, 404, "blockId")
			// A block of the other chain is not one of this chain.
			other := e.recordedBlocks(t, map[string]string{"P": "X", "X": "P"}[chain])[1].ID
			e.fails(t, "/v1/networks/testnet/blockchains/"+e.net.BlockchainIDs[chain]+"/blocks/"+other, 404, "blockId")
		}
		e.fails(t, "/v1/networks/testnet/blockchains/p-chain/blocks/-1", 400, "blockId")
		e.fails(t, "/v1/networks/testnet/blockchains/p-chain/blocks/0x12", 400, "blockId")
		e.fails(t, "/v1/networks/testnet/blockchains/p-chain/blocks/99999999999999999999", 400, "blockId")
		e.fails(t, "/v1/networks/testnet/blockchains/c-chain/blocks/1", 400, "blockchainId")
		e.fails(t, "/v1/networks/testnet/blockchains/q-chain/blocks/1", 400, "blockchainId")
	})
}

// devnet-a's nodes ran without --index-enabled: no block has proposer
// details, so every node's list is empty (devnet-c, in internal/app, has
// them). The parameters are checked all the same.
func TestBlocksByNodeWithoutProposers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		for _, n := range e.net.Nodes {
			for _, alias := range []string{"p-chain", "x-chain"} {
				var p blocksPage
				e.ok(t, "/v1/networks/testnet/blockchains/"+alias+"/nodes/"+n.NodeID+"/blocks", &p)
				if len(p.Blocks) != 0 || p.NextPageToken != nil || p.ChainInfo.ChainName != alias {
					t.Errorf("%s %s: %+v", alias, n.NodeID, p)
				}
			}
		}
		node := e.net.Nodes[0].NodeID
		e.fails(t, "/v1/networks/testnet/blockchains/p-chain/nodes/NodeID-xyz/blocks", 400, "nodeId")
		e.fails(t, "/v1/networks/testnet/blockchains/c-chain/nodes/"+node+"/blocks", 400, "blockchainId")
		e.fails(t, "/v1/networks/testnet/blockchains/p-chain/nodes/"+node+"/blocks?pageSize=101", 400, "pageSize")
		e.fails(t, "/v1/networks/testnet/blockchains/p-chain/nodes/"+node+"/blocks?startTimestamp=5&endTimestamp=1", 400, "startTimestamp")
		e.fails(t, "/v1/networks/testnet/blockchains/p-chain/nodes/"+node+"/blocks?pageToken=abc", 400, "pageToken")
	})
}

// Every asset avm.getAssetDescription answers, with the type and cap of
// its CreateAssetTx and the time of the block holding it.
func TestAssetDetails(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		// The workload's CreateAssetTx steps: fixed-cap DFC, variable-cap DVC,
		// the NFT family DART; the genesis AVAX asset is fixed-cap.
		kinds := map[string][2]string{
			e.net.AvaxAssetID: {"secp256k1", "fixed"},
		}
		for key, id := range e.net.CreatedAssets {
			switch {
			case strings.HasPrefix(key, "nft"):
				kinds[id] = [2]string{"nft", "variable"}
			case strings.Contains(key, "DVC") || strings.Contains(key, "variable"):
				kinds[id] = [2]string{"secp256k1", "variable"}
			default:
				kinds[id] = [2]string{"secp256k1", "fixed"}
			}
		}
		xTimes := map[string]int64{}
		xBlocks := e.recordedBlocks(t, "X")
		for _, b := range xBlocks {
			for _, tx := range b.TxIDs {
				if b.Time != nil {
					xTimes[tx] = *b.Time
				}
			}
		}
		n := 0
		e.rec.each("X", "avm.getAssetDescription", func(params, result json.RawMessage) {
			var w struct {
				AssetID, Name, Symbol string
				Denomination          string
			}
			if err := json.Unmarshal(result, &w); err != nil {
				t.Fatal(err)
			}
			var got struct {
				AssetID            string `json:"assetId"`
				Name               string `json:"name"`
				Symbol             string `json:"symbol"`
				Denomination       int    `json:"denomination"`
				Type               string `json:"type"`
				CreatedAtTimestamp int64  `json:"createdAtTimestamp"`
				Cap                string `json:"cap"`
			}
			e.ok(t, "/v1/networks/testnet/blockchains/x-chain/assets/"+w.AssetID, &got)
			n++
			if got.AssetID != w.AssetID || got.Name != w.Name || got.Symbol != w.Symbol || strconv.Itoa(got.Denomination) != w.Denomination {
				t.Errorf("asset %s: %+v, node %+v", w.AssetID, got, w)
			}
			if k := kinds[w.AssetID]; got.Type != k[0] || got.Cap != k[1] {
				t.Errorf("asset %s: type %s cap %s, want %v", w.AssetID, got.Type, got.Cap, k)
			}
			wantTime, inBlock := xTimes[w.AssetID]
			if !inBlock {
				// The genesis asset: the X-chain's genesis block time.
				wantTime = *xBlocks[0].Time
			}
			if got.CreatedAtTimestamp != wantTime {
				t.Errorf("asset %s created at %d, want %d", w.AssetID, got.CreatedAtTimestamp, wantTime)
			}
		})
		if n < 4 {
			t.Fatalf("%d recorded assets", n)
		}
		// The recorded "not found" of avm.getAssetDescription.
		e.fails(t, "/v1/networks/testnet/blockchains/x-chain/assets/2h52eVzs934z3GB47UArpCwLZ8L4Q9ENmuAVit2Q18zyfceS5e", 404, "assetId")
		e.fails(t, "/v1/networks/testnet/blockchains/x-chain/assets/AVAX", 400, "assetId")
		e.fails(t, "/v1/networks/testnet/blockchains/p-chain/assets/"+e.net.AvaxAssetID, 400, "blockchainId", "X-chain")
		e.fails(t, "/v1/networks/testnet/blockchains/q-chain/assets/"+e.net.AvaxAssetID, 400, "blockchainId")
	})
}

// The X-chain indexed is linear: no vertex, ever; parameters are checked.
func TestVertices(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		for _, target := range []string{
			"/v1/networks/testnet/blockchains/x-chain/vertices",
			"/v1/networks/testnet/blockchains/" + e.net.BlockchainIDs["X"] + "/vertices?pageSize=100",
			"/v1/networks/testnet/blockchains/x-chain/vertices:listByHeight?vertexHeight=0",
			"/v1/networks/testnet/blockchains/x-chain/vertices:listByHeight?vertexHeight=5&sortOrder=asc",
		} {
			var p struct {
				Vertices      []json.RawMessage `json:"vertices"`
				NextPageToken *string           `json:"nextPageToken"`
				ChainInfo     struct{ ChainName string }
			}
			e.ok(t, target, &p)
			if p.Vertices == nil || len(p.Vertices) != 0 || p.NextPageToken != nil || p.ChainInfo.ChainName != "x-chain" {
				t.Errorf("%s: %+v", target, p)
			}
		}
		x := "/v1/networks/testnet/blockchains/x-chain"
		e.fails(t, x+"/vertices/"+e.net.Tips.X.BlockID, 404, "vertexHash")
		e.fails(t, x+"/vertices/0xabc", 400, "vertexHash")
		e.fails(t, x+"/vertices:listByHeight", 400, "vertexHeight", "required")
		e.fails(t, x+"/vertices:listByHeight?vertexHeight=-1", 400, "vertexHeight")
		e.fails(t, x+"/vertices:listByHeight?vertexHeight=1&sortOrder=new", 400, "sortOrder")
		e.fails(t, x+"/vertices?pageSize=0", 400, "pageSize")
		e.fails(t, x+"/vertices?pageToken=abc", 400, "pageToken")
		e.fails(t, "/v1/networks/testnet/blockchains/p-chain/vertices", 400, "blockchainId", "X-chain")
		e.fails(t, "/v1/networks/testnet/blockchains/c-chain/vertices/"+e.net.Tips.X.BlockID, 400, "blockchainId")
	})
}

// The validators and delegators platform.getCurrentValidators lists at the
// tip: counts, stake, potential rewards, and their stake over
// platform.getCurrentSupply.
func TestNetworkDetails(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		var (
			vCount, dCount                int64
			vStake, dStake, reward, total = new(big.Int), new(big.Int), new(big.Int), new(big.Int)
			supply                        = new(big.Int)
		)
		add := func(dst *big.Int, s string) {
			v, ok := new(big.Int).SetString(s, 10)
			if !ok {
				t.Fatalf("recorded amount %q", s)
			}
			dst.Add(dst, v)
		}
		e.rec.each("P", "platform.getCurrentValidators", func(params, result json.RawMessage) {
			if string(params) != "{}" {
				return
			}
			var r struct {
				Validators []struct {
					Weight          string `json:"weight"`
					PotentialReward string `json:"potentialReward"`
					Delegators      []struct {
						Weight          string `json:"weight"`
						PotentialReward string `json:"potentialReward"`
					} `json:"delegators"`
				} `json:"validators"`
			}
			if err := json.Unmarshal(result, &r); err != nil {
				t.Fatal(err)
			}
			for _, v := range r.Validators {
				vCount++
				add(vStake, v.Weight)
				add(reward, v.PotentialReward)
				for _, d := range v.Delegators {
					dCount++
					add(dStake, d.Weight)
					add(reward, d.PotentialReward)
				}
			}
		})
		e.rec.each("P", "platform.getCurrentSupply", func(params, result json.RawMessage) {
			if string(params) == "{}" {
				var r struct{ Supply string }
				if err := json.Unmarshal(result, &r); err != nil {
					t.Fatal(err)
				}
				add(supply, r.Supply)
			}
		})
		if vCount == 0 || supply.Sign() == 0 {
			t.Fatal("recording without validators or supply")
		}
		var got struct {
			ValidatorDetails struct {
				ValidatorCount               int64  `json:"validatorCount"`
				TotalAmountStaked            string `json:"totalAmountStaked"`
				EstimatedAnnualStakingReward string `json:"estimatedAnnualStakingReward"`
				StakingDistributionByVersion []struct {
					Version        string `json:"version"`
					AmountStaked   string `json:"amountStaked"`
					ValidatorCount int64  `json:"validatorCount"`
				} `json:"stakingDistributionByVersion"`
				StakingRatio string `json:"stakingRatio"`
			} `json:"validatorDetails"`
			DelegatorDetails struct {
				DelegatorCount    int64  `json:"delegatorCount"`
				TotalAmountStaked string `json:"totalAmountStaked"`
			} `json:"delegatorDetails"`
		}
		e.ok(t, "/v1/networks/testnet", &got)
		v, d := got.ValidatorDetails, got.DelegatorDetails
		if v.ValidatorCount != vCount || v.TotalAmountStaked != vStake.String() || d.DelegatorCount != dCount ||
			d.TotalAmountStaked != dStake.String() || v.EstimatedAnnualStakingReward != reward.String() {
			t.Errorf("network details %+v, node: %d validators staking %s, %d delegators staking %s, potential rewards %s",
				got, vCount, vStake, dCount, dStake, reward)
		}
		total.Add(vStake, dStake)
		ratio, ok := new(big.Rat).SetString(v.StakingRatio)
		if !ok || ratio.Cmp(new(big.Rat).SetFrac(total, supply)) != 0 && ratio.FloatString(12) != new(big.Rat).SetFrac(total, supply).FloatString(12) {
			t.Errorf("stakingRatio %s, want %s / %s", v.StakingRatio, total, supply)
		}
		// The recording node answers info.getNodeVersion; every validator
		// it reports is counted under its version.
		var n int64
		stake := new(big.Int)
		for _, s := range v.StakingDistributionByVersion {
			n += s.ValidatorCount
			add(stake, s.AmountStaked)
		}
		if len(v.StakingDistributionByVersion) > 0 && (n != vCount || stake.Cmp(vStake) != 0) {
			t.Errorf("distribution by version %+v does not add up to %d validators staking %s", v.StakingDistributionByVersion, vCount, vStake)
		}
		e.fails(t, "/v1/networks/mainnet", 404, "mainnet")
		e.fails(t, "/v1/networks/devnet", 400, "network")
	})
}

// For every workload address, the chains of the txs that touched it (the
// workload log and the recorded staking/reward owners); on this custom
// network only the P-chain id is in the document's BlockchainIds enum.
func TestChainIDsForAddresses(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		onP := map[string]bool{}
		all := map[string]bool{}
		for _, w := range loadWorkload(t) {
			for _, a := range w.Addresses {
				if len(a) < 2 || a[1] != '-' {
					continue
				}
				bare := a[2:]
				if a[0] == 'P' || a[0] == 'X' {
					all[bare] = true
				}
				if w.Chain == "P" && a[0] == 'P' {
					onP[bare] = true
				}
			}
		}
		if len(onP) == 0 {
			t.Fatal("no P addresses in the workload")
		}
		var list []string
		for a := range all {
			list = append(list, a)
		}
		sort.Strings(list)
		var got struct {
			Addresses []struct {
				Address       string   `json:"address"`
				BlockchainIDs []string `json:"blockchainIds"`
			} `json:"addresses"`
		}
		e.ok(t, "/v1/networks/testnet/addresses:listChainIds?addresses=P-"+strings.Join(list, ",X-"), &got)
		if len(got.Addresses) != len(list) {
			t.Fatalf("%d addresses answered, %d asked", len(got.Addresses), len(list))
		}
		for i, g := range got.Addresses {
			if g.Address != list[i] {
				t.Errorf("address %d: %s, asked %s", i, g.Address, list[i])
			}
			hasP := len(g.BlockchainIDs) == 1 && g.BlockchainIDs[0] == constants.PlatformChainID.String()
			if onP[g.Address] && !hasP || len(g.BlockchainIDs) > 1 {
				t.Errorf("%s: %v (P-chain activity in the workload: %v)", g.Address, g.BlockchainIDs, onP[g.Address])
			}
		}
		// victor's key is never used (devnet-a README): no chain.
		victor := "P-custom1lasmwzvd3hgx0v470hfsqnjccewysr6wptc0yw"
		e.ok(t, "/v1/networks/testnet/addresses:listChainIds?addresses="+victor, &got)
		if len(got.Addresses) != 1 || got.Addresses[0].Address != victor[2:] || len(got.Addresses[0].BlockchainIDs) != 0 {
			t.Errorf("victor: %+v", got.Addresses)
		}
		e.fails(t, "/v1/networks/testnet/addresses:listChainIds", 400, "addresses", "required")
		e.fails(t, "/v1/networks/testnet/addresses:listChainIds?addresses=foo", 400, "addresses", "foo")
	})
}
