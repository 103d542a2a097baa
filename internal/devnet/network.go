package devnet

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Network is network.json: facts of the recorded network and indexes
// derived from the recorded answers (README.md, "network.json").
type Network struct {
	NetworkID     uint32            `json:"networkID"`
	HRP           string            `json:"hrp"`
	BlockchainIDs map[string]string `json:"blockchainIDs"` // by alias P, X, C
	EVMChainID    uint64            `json:"evmChainID"`
	AvaxAssetID   string            `json:"avaxAssetID"`
	// CreatedAssets are the workload's X-chain assets, by name
	// (fixedCap_DFC, variableCap_DVC, nft_DART).
	CreatedAssets map[string]string `json:"createdAssets"`
	// CChainContracts are the workload's contracts by name (erc20, erc721,
	// erc1155, factory, factoryChild), EIP-55 checksummed as recorded.
	CChainContracts map[string]string `json:"cChainContracts"`
	Subnets         map[string]Subnet `json:"subnets"` // A, B
	Stakers         map[string]Staker `json:"stakers"` // alpha, beta
	// RewardValidatorTxs are the reward proposal blocks, in height order.
	RewardValidatorTxs   []RewardValidatorTx `json:"rewardValidatorTxs"`
	Nodes                []Node              `json:"nodes"`
	OfflineValidatorKeys []Node              `json:"offlineValidatorKeys"`
	RecordingNode        string              `json:"recordingNode"`
	Tips                 struct {
		P Tip `json:"P"`
		X Tip `json:"X"`
		C Tip `json:"C"`
	} `json:"tips"`
	PBlockTypeCounts map[string]int `json:"pBlockTypeCounts"`
	// PBlocks lists every P-chain block, indexed by height.
	PBlocks      []PBlock          `json:"pBlocks"`
	PTxTypesByID map[string]string `json:"pTxTypesByID"` // tx ID -> Go type
	// NodeVersion, Upgrades and StakingConfig are the raw recorded answers.
	NodeVersion      json.RawMessage `json:"nodeVersion"`
	Upgrades         json.RawMessage `json:"upgrades"`
	StakingConfig    json.RawMessage `json:"stakingConfig"`
	RecordedAt       time.Time       `json:"recordedAt"`
	NetworkStartedAt time.Time       `json:"networkStartedAt"`
	// WorkloadTxCountsByChainAndType counts workload.jsonl by chain and type.
	WorkloadTxCountsByChainAndType map[string]map[string]int `json:"workloadTxCountsByChainAndType"`
}

// Subnet is one of the workload's subnets.
type Subnet struct {
	SubnetID       string            `json:"subnetID"`
	ChainID        string            `json:"chainID"`
	ChainName      string            `json:"chainName"`
	VMID           string            `json:"vmID"`
	ConversionTxID string            `json:"conversionTxID"` // the L1 only
	ValidationIDs  map[string]string `json:"validationIDs"`  // the L1 only, by validator name
	Kind           string            `json:"kind"`
}

// Staker is one of the workload's primary-network validators and its delegator.
type Staker struct {
	NodeID        string `json:"nodeID"`
	ValidatorTxID string `json:"validatorTxID"`
	DelegatorTxID string `json:"delegatorTxID"`
	// Expected is the expected outcome in words ("rewarded (...)").
	Expected string `json:"expected"`
}

// RewardValidatorTx is one reward proposal block and the option that followed.
type RewardValidatorTx struct {
	Height       uint64 `json:"height"`
	BlockID      string `json:"blockID"`
	RewardTxID   string `json:"rewardTxID"`
	StakerTxID   string `json:"stakerTxID"`
	StakerTxType string `json:"stakerTxType"`
	// OutcomeBlockType is BanffCommitBlock (rewarded) or BanffAbortBlock.
	OutcomeBlockType   string `json:"outcomeBlockType"`
	OutcomeBlockHeight uint64 `json:"outcomeBlockHeight"`
	OutcomeBlockID     string `json:"outcomeBlockID"`
}

// Node is a node of the network or an offline validator key.
type Node struct {
	Name                 string `json:"name"` // offline keys only
	NodeID               string `json:"nodeID"`
	BLSPublicKey         string `json:"blsPublicKey"`
	BLSProofOfPossession string `json:"blsProofOfPossession"`
	APIURI               string `json:"apiURI"` // at recording time
	Role                 string `json:"role"`
	Running              bool   `json:"running"`
}

// Tip is a chain's last block: BlockID on P and X, BlockHash on C.
type Tip struct {
	Height    uint64 `json:"height"`
	BlockID   string `json:"blockID"`
	BlockHash string `json:"blockHash"`
}

// PBlock is one P-chain block with its txs.
type PBlock struct {
	Height    uint64 `json:"height"`
	BlockID   string `json:"blockID"`
	BlockType string `json:"blockType"` // Go type, e.g. BanffStandardBlock
	Txs       []struct {
		TxID string `json:"txID"`
		Type string `json:"type"` // Go type, e.g. ImportTx
	} `json:"txs"`
}

// LoadNetwork reads network.json.
func LoadNetwork(t testing.TB) *Network {
	t.Helper()
	var n Network
	readJSON(t, "network.json", &n)
	return &n
}

// ContractsLower returns CChainContracts with 0x-lowercase addresses, the
// form the index stores.
func (n *Network) ContractsLower() map[string]string {
	out := make(map[string]string, len(n.CChainContracts))
	for k, v := range n.CChainContracts {
		out[k] = strings.ToLower(v)
	}
	return out
}
