package livenet

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestLiveNetwork builds avalanchego v1.14.2 and the subnet-evm plugin,
// starts two validators and an L1, runs the workload and checks the basic
// facts: every tx accepted where expected, the L1 produced blocks, stakers
// were rewarded (or not) as expected, some blocks carry several txs. A
// `permafrost serve` follows the network meanwhile (killed once); then its
// answers are compared with the nodes' and its database with one indexed
// from scratch (permafrost_test.go).
func TestLiveNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED: -short; the live-network test runs a real avalanchego network for minutes")
	}
	total := time.Now()
	n, tm := Setup(t)
	// Permafrost follows the network from genesis while the workload runs
	// and is killed (SIGKILL) once, in the middle of the main phase.
	pf := followNetwork(t, n, 12*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	wstart := time.Now()
	res, err := Run(ctx, n, WorkloadConfig{Logf: t.Logf, WhileStaking: pf.whileStaking})
	workload := time.Since(wstart)
	logPath := writeLog(t, n)
	if err != nil {
		t.Fatalf("workload: %v (tx log: %s)", err, logPath)
	}

	recs := n.Log.Records()
	for _, r := range recs {
		if !r.Accepted || r.TxID == "" || r.Height == 0 {
			t.Errorf("tx %d %s (%s %s %s): accepted=%v height=%d", r.Seq, r.Step, r.Chain, r.Type, r.TxID, r.Accepted, r.Height)
		}
	}
	for _, chain := range []string{ChainP, ChainX, ChainC, ChainL1} {
		if res.Tips[chain] == 0 {
			t.Errorf("chain %s: tip 0", chain)
		}
	}
	if l1 := n.Log.Chain(ChainL1); res.Tips[ChainL1] < maxHeight(l1) || len(l1) == 0 {
		t.Errorf("L1: tip %d, %d txs", res.Tips[ChainL1], len(l1))
	}

	// Every tx kind the workload is meant to cover is in the log.
	counts := n.Log.CountsByChainAndType()
	want := map[string][]string{
		ChainX:  {"BaseTx", "CreateAssetTx", "OperationTx", "ImportTx", "ExportTx"},
		ChainP:  {"BaseTx", "ImportTx", "ExportTx", "CreateSubnetTx", "CreateChainTx", "AddPermissionlessValidatorTx", "AddPermissionlessDelegatorTx", "AddSubnetValidatorTx", "RemoveSubnetValidatorTx", "TransferSubnetOwnershipTx", "ConvertSubnetToL1Tx", "RegisterL1ValidatorTx", "SetL1ValidatorWeightTx", "IncreaseL1ValidatorBalanceTx", "DisableL1ValidatorTx", "RewardValidatorTx"},
		ChainC:  {"ImportTx", "ExportTx", "Transfer", "ContractCreation", "ContractCall:withdraw", "ContractCall:create"},
		ChainL1: {"Transfer", "ContractCreation", "ContractCall:mintNativeCoin", "ContractCall:setFeeConfig"},
	}
	for chain, types := range want {
		for _, typ := range types {
			if counts[chain][typ] == 0 {
				t.Errorf("chain %s: no %s in the log", chain, typ)
			}
		}
	}

	// Stakers: the running node's are rewarded, the offline node's are not.
	for _, s := range res.Stakers {
		var option string
		for _, r := range recs {
			if r.Type == "RewardValidatorTx" && r.Extra["stakerTxID"] == s.TxID.String() {
				option, _ = r.Extra["optionBlock"].(string)
			}
		}
		wantOption := "BanffAbortBlock"
		if s.Running {
			wantOption = "BanffCommitBlock"
		}
		if option != wantOption {
			t.Errorf("staker %s (%s): reward decision %q, want %q", s.Name, s.TxID, option, wantOption)
		}
	}

	multi := n.Log.BlocksWithSeveralTxs()
	for _, chain := range []string{ChainC, ChainL1} {
		if len(multi[chain]) == 0 {
			t.Errorf("chain %s: no block with several logged txs", chain)
		}
	}

	// Report.
	t.Logf("network: ID %d, nodes %s; L1 %s (subnet %s, EVM chain ID %s) at %s", n.NetworkID, strings.Join(n.URIs(), " "), n.L1.BlockchainID, n.L1.SubnetID, n.L1.EVMChainID, n.L1RPCURL())
	t.Logf("tips: P %d, X %d, C %d, L1 %d", res.Tips[ChainP], res.Tips[ChainX], res.Tips[ChainC], res.Tips[ChainL1])
	t.Logf("txs: %d logged; blocks with several logged txs: %v", len(recs), multi)
	chains := make([]string, 0, len(counts))
	for c := range counts {
		chains = append(chains, c)
	}
	sort.Strings(chains)
	for _, c := range chains {
		b, _ := json.Marshal(counts[c])
		t.Logf("  %s: %s", c, b)
	}
	phases := make([]string, 0, len(res.Phases))
	for p, d := range res.Phases {
		phases = append(phases, p+" "+d.Round(100*time.Millisecond).String())
	}
	sort.Strings(phases)
	t.Logf("timings: build %s (node %s, plugin %s; 0 = cached), network start %s, workload %s [%s], total %s",
		tm.Build.Round(time.Second), tm.NodeBuild.Round(time.Second), tm.PluginBuild.Round(time.Second),
		tm.NetworkStart.Round(100*time.Millisecond), workload.Round(100*time.Millisecond), strings.Join(phases, ", "), time.Since(total).Round(time.Second))
	pf.verify(t, res)
	t.Logf("suite total %s", time.Since(total).Round(time.Second))
	if os.Getenv(DirEnv) == "" {
		t.Logf("tx log: %s (removed with the test's temp dir; set %s to keep it)", logPath, DirEnv)
	} else {
		t.Logf("tx log: %s", logPath)
	}
}

func maxHeight(recs []TxRecord) uint64 {
	var h uint64
	for _, r := range recs {
		h = max(h, r.Height)
	}
	return h
}

// writeLog writes the tx log as JSON lines next to the network's data.
func writeLog(t *testing.T, n *Network) string {
	path := filepath.Join(filepath.Dir(n.TmpNet.Dir), "workload.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Errorf("writing the tx log: %v", err)
		return ""
	}
	defer f.Close()
	if err := n.Log.WriteJSONL(f); err != nil {
		t.Errorf("writing the tx log: %v", err)
	}
	return path
}
