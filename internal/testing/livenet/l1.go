package livenet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/ava-labs/libevm/common"

	"github.com/ava-labs/avalanchego/config"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/tests/fixture/tmpnet"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/crypto/bls/signer/localsigner"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/utils/units"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/message"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/payload"
)

// Precompile addresses of subnet-evm.
var (
	DeployerAllowListAddr = common.HexToAddress("0x0200000000000000000000000000000000000000")
	NativeMinterAddr      = common.HexToAddress("0x0200000000000000000000000000000000000001")
	TxAllowListAddr       = common.HexToAddress("0x0200000000000000000000000000000000000002")
	FeeManagerAddr        = common.HexToAddress("0x0200000000000000000000000000000000000003")
	RewardManagerAddr     = common.HexToAddress("0x0200000000000000000000000000000000000004")
	WarpAddr              = common.HexToAddress("0x0200000000000000000000000000000000000005")
)

// l1GenesisTimestamp is avalanchego's upgrade.InitiallyActiveTime
// (2020-12-05T05:00:00Z), as subnet-evm's own test genesis uses.
const l1GenesisTimestamp = 1607144400

// L1 fee config; the fee manager precompile changes it during the workload.
var l1FeeConfig = map[string]any{
	"gasLimit":                 20_000_000,
	"minBaseFee":               1_000_000_000,
	"targetGas":                100_000_000,
	"baseFeeChangeDenominator": 48,
	"minBlockGasCost":          0,
	"maxBlockGasCost":          1_000_000,
	"targetBlockRate":          2,
	"blockGasCostStep":         200_000,
}

// SubnetEVMGenesis is the L1 chain's genesis: the admin and enabled keys
// funded (1,000,000 native tokens each), every precompile later work needs
// active from genesis with admin as their admin: native minter, fee
// manager, reward manager, tx allow list and deployer allow list (enabled
// keys allow-listed), and Warp.
func SubnetEVMGenesis(evmChainID *big.Int, admin *Key, enabled []*Key) ([]byte, error) {
	adminAddr := []string{admin.EthAddress().Hex()}
	var enabledAddrs []string
	alloc := map[string]any{}
	balance := "0xd3c21bcecceda1000000" // 10^24 wei
	alloc[strings.TrimPrefix(admin.EthAddress().Hex(), "0x")] = map[string]any{"balance": balance}
	for _, k := range enabled {
		enabledAddrs = append(enabledAddrs, k.EthAddress().Hex())
		alloc[strings.TrimPrefix(k.EthAddress().Hex(), "0x")] = map[string]any{"balance": balance}
	}
	allowList := func(withEnabled bool) map[string]any {
		m := map[string]any{"blockTimestamp": 0, "adminAddresses": adminAddr}
		if withEnabled {
			m["enabledAddresses"] = enabledAddrs
		}
		return m
	}
	g := map[string]any{
		"config": map[string]any{
			"chainId":                         evmChainID,
			"feeConfig":                       l1FeeConfig,
			"contractNativeMinterConfig":      allowList(false),
			"feeManagerConfig":                allowList(false),
			"rewardManagerConfig":             allowList(false),
			"txAllowListConfig":               allowList(true),
			"contractDeployerAllowListConfig": allowList(true),
			// Warp must not activate before Durango, which the upgrade
			// config activates at the genesis timestamp below.
			"warpConfig": map[string]any{"blockTimestamp": l1GenesisTimestamp},
		},
		"alloc":      alloc,
		"nonce":      "0x0",
		"timestamp":  fmt.Sprintf("0x%x", l1GenesisTimestamp),
		"extraData":  "0x00",
		"gasLimit":   "0x1312D00", // 20,000,000 = feeConfig.gasLimit
		"difficulty": "0x0",
		"mixHash":    "0x0000000000000000000000000000000000000000000000000000000000000000",
		"coinbase":   "0x0000000000000000000000000000000000000000",
		"number":     "0x0",
		"gasUsed":    "0x0",
		"parentHash": "0x0000000000000000000000000000000000000000000000000000000000000000",
	}
	return json.Marshal(g)
}

// createL1 creates the main L1: CreateSubnetTx, CreateChainTx (subnet-evm),
// a new node tracking the subnet, ConvertSubnetToL1Tx making that node the
// L1's only validator. As avalanchego's tests/e2e/p/l1.go does.
func (n *Network) createL1(ctx context.Context) error {
	owner := n.Keys.Get("owner")
	l1 := &L1{
		ChainName:      "permafrostl1",
		EVMChainID:     big.NewInt(int64(n.NetworkID) + 1),
		ManagerAddress: WarpAddr.Bytes(),
		Admin:          n.Keys.Get("trent"),
		Enabled:        []*Key{n.Keys.Get("olivia")},
	}
	genesis, err := SubnetEVMGenesis(l1.EVMChainID, l1.Admin, l1.Enabled)
	if err != nil {
		return err
	}
	l1.Genesis = genesis
	n.L1 = l1

	w, err := newWallet(ctx, n.URI(), owner)
	if err != nil {
		return err
	}
	pAddrs := []string{owner.Bech32("P", n.NetworkID)}

	rec := n.Log.Add(&TxRecord{Step: "setup-l1-create-subnet", Chain: ChainP, Type: "CreateSubnetTx", Purpose: "subnet of the main L1, owned by owner", Addresses: pAddrs})
	subnetTx, err := w.P().IssueCreateSubnetTx(owner.Owner())
	if err != nil {
		return fmt.Errorf("CreateSubnetTx: %w", err)
	}
	n.accepted(rec, subnetTx.ID())
	l1.SubnetID = subnetTx.ID()

	rec = n.Log.Add(&TxRecord{Step: "setup-l1-create-chain", Chain: ChainP, Type: "CreateChainTx", Purpose: "subnet-evm chain of the main L1", Addresses: pAddrs,
		Extra: map[string]any{"subnetID": l1.SubnetID.String(), "vmID": constants.SubnetEVMID.String(), "chainName": l1.ChainName}})
	chainTx, err := w.P().IssueCreateChainTx(l1.SubnetID, genesis, constants.SubnetEVMID, nil, l1.ChainName)
	if err != nil {
		return fmt.Errorf("CreateChainTx: %w", err)
	}
	n.accepted(rec, chainTx.ID())
	l1.BlockchainID = chainTx.ID()

	// tmpnet hands chain configs to nodes through --chain-config-content,
	// built from the network's subnets: register the L1 there before the
	// node starts so the L1 chain gets archive mode and the debug APIs.
	chainConfig, err := json.Marshal(EVMChainConfig())
	if err != nil {
		return err
	}
	subnet := &tmpnet.Subnet{
		Name:      "l1",
		SubnetID:  l1.SubnetID,
		OwningKey: owner.Key,
		Chains: []*tmpnet.Chain{{
			VMID:    constants.SubnetEVMID,
			Config:  string(chainConfig),
			Genesis: genesis,
			ChainID: l1.BlockchainID,
		}},
	}
	n.TmpNet.Subnets = append(n.TmpNet.Subnets, subnet)
	n.logf("livenet: starting the L1 validator node (tracks subnet %s)", l1.SubnetID)
	node, err := n.AddNode(ctx, tmpnet.FlagsMap{config.TrackSubnetsKey: l1.SubnetID.String()})
	if err != nil {
		return fmt.Errorf("starting the L1 node: %w", err)
	}
	n.L1Node = node
	l1.ValidatorNode = node.NodeID
	subnet.ValidatorIDs = []ids.NodeID{node.NodeID}
	if err := subnet.Write(n.TmpNet.GetSubnetDir()); err != nil {
		return err
	}

	pop, err := node.GetProofOfPossession()
	if err != nil {
		return err
	}
	ownerP := message.PChainOwner{Threshold: 1, Addresses: []ids.ShortID{owner.ShortID()}}
	rec = n.Log.Add(&TxRecord{Step: "setup-l1-convert", Chain: ChainP, Type: "ConvertSubnetToL1Tx",
		Purpose: "convert the main L1's subnet: the L1 node is its only validator (weight 100, balance 1 AVAX)", Addresses: pAddrs,
		Extra: map[string]any{"subnetID": l1.SubnetID.String(), "chainID": l1.BlockchainID.String(), "managerAddress": WarpAddr.Hex(), "nodeID": node.NodeID.String()}})
	convertTx, err := w.P().IssueConvertSubnetToL1Tx(l1.SubnetID, l1.BlockchainID, l1.ManagerAddress, []*txs.ConvertSubnetToL1Validator{{
		NodeID:                node.NodeID.Bytes(),
		Weight:                100,
		Balance:               units.Avax,
		Signer:                *pop,
		RemainingBalanceOwner: ownerP,
		DeactivationOwner:     ownerP,
	}})
	if err != nil {
		return fmt.Errorf("ConvertSubnetToL1Tx: %w", err)
	}
	n.accepted(rec, convertTx.ID())
	l1.ConvertTxID = convertTx.ID()
	l1.ValidationIDs = []ids.ID{l1.SubnetID.Append(0)}
	rec.Extra["validationIDs"] = []string{l1.ValidationIDs[0].String()}

	if err := n.WaitHealthy(ctx, node, 2*time.Minute); err != nil {
		return fmt.Errorf("L1 node not healthy: %w", err)
	}
	// The chain answers once the node runs it.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var id string
		err := rpcCall(ctx, n.L1RPCURL(), "eth_chainId", []any{}, &id)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("L1 chain RPC not answering: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// accepted marks a record of an Avalanche tx accepted (the wallet returns
// once the node reports acceptance).
func (n *Network) accepted(rec *TxRecord, txID ids.ID) {
	n.Log.update(func([]*TxRecord) {
		rec.TxID = txID.String()
		rec.BlockchainID = n.BlockchainID(rec.Chain).String()
		rec.Accepted = true
		rec.Time = time.Now().UTC()
	})
}

// WarpSigner is a validator signing Warp messages locally.
type WarpSigner struct {
	Signer *localsigner.LocalSigner
	Weight uint64
}

// SignWarp builds a Warp message from sourceChainID carrying an
// AddressedCall(sourceAddress, payload), signed by every given validator.
// The signers bit set follows the canonical validator order (public keys
// sorted by their uncompressed bytes), as the P-chain verifies it.
func SignWarp(networkID uint32, sourceChainID ids.ID, sourceAddress, payloadBytes []byte, signers []WarpSigner) ([]byte, error) {
	call, err := payload.NewAddressedCall(sourceAddress, payloadBytes)
	if err != nil {
		return nil, err
	}
	unsigned, err := warp.NewUnsignedMessage(networkID, sourceChainID, call.Bytes())
	if err != nil {
		return nil, err
	}
	sorted := append([]WarpSigner(nil), signers...)
	sort.Slice(sorted, func(i, j int) bool {
		return bytes.Compare(bls.PublicKeyToUncompressedBytes(sorted[i].Signer.PublicKey()), bls.PublicKeyToUncompressedBytes(sorted[j].Signer.PublicKey())) < 0
	})
	bits := set.NewBits()
	var sigs []*bls.Signature
	for i, s := range sorted {
		sig, err := s.Signer.Sign(unsigned.Bytes())
		if err != nil {
			return nil, err
		}
		sigs = append(sigs, sig)
		bits.Add(i)
	}
	agg, err := bls.AggregateSignatures(sigs)
	if err != nil {
		return nil, err
	}
	msg, err := warp.NewMessage(unsigned, &warp.BitSetSignature{
		Signers:   bits.Bytes(),
		Signature: [bls.SignatureLen]byte(bls.SignatureToBytes(agg)),
	})
	if err != nil {
		return nil, err
	}
	return msg.Bytes(), nil
}
