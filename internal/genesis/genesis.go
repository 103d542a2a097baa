// Package genesis loads a network's genesis: built in for mainnet and fuji
// (avalanchego's genesis package), or from a genesis config file for any other
// network (avalanchego's UnparsedConfig JSON, as tmpnet writes it). Genesis
// state is in no block, so each chain's indexer loads it at height 0 from here.
package genesis

import (
	"encoding/json"
	"fmt"
	"os"

	avagenesis "github.com/ava-labs/avalanchego/genesis"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/upgrade"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"

	pgenesis "github.com/ava-labs/avalanchego/vms/platformvm/genesis"
)

// Genesis is the parsed genesis of one network.
type Genesis struct {
	NetworkID   uint32
	HRP         string
	AvaxAssetID ids.ID
	// Bytes are the P-chain genesis bytes; their hash is the P genesis block's parent.
	Bytes  []byte
	Config *avagenesis.Config
	// P is the parsed P-chain genesis: UTXOs, validators (stakers), chains, timestamp, supply.
	P *pgenesis.Genesis
	// Upgrades is the network's upgrade schedule (avalanchego's for the
	// network ID). Every rule that depends on an upgrade reads it from here,
	// so a network with other upgrade times (the legacy-format oracle tests
	// set them; a node's --upgrade-file is not read yet) is replayed with one
	// schedule everywhere.
	Upgrades upgrade.Config
}

// Load returns the genesis of networkID: from path when given, else the built-in
// one for mainnet and fuji.
func Load(networkID uint32, path string) (*Genesis, error) {
	var (
		cfg *avagenesis.Config
		err error
	)
	switch {
	case path != "":
		cfg, err = avagenesis.GetConfigFile(path)
		if err != nil {
			return nil, fmt.Errorf("genesis: %w", err)
		}
		if cfg.NetworkID != networkID {
			return nil, fmt.Errorf("genesis: file %s is for network %d, node reports %d", path, cfg.NetworkID, networkID)
		}
	case networkID == constants.MainnetID || networkID == constants.FujiID:
		cfg = avagenesis.GetConfig(networkID)
	default:
		return nil, fmt.Errorf("genesis: network %d is not built in; pass --genesis FILE", networkID)
	}
	bytes, avax, err := avagenesis.FromConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("genesis: build network %d: %w", networkID, err)
	}
	p, err := pgenesis.Parse(bytes)
	if err != nil {
		return nil, fmt.Errorf("genesis: parse platform genesis: %w", err)
	}
	return &Genesis{
		NetworkID:   networkID,
		HRP:         constants.GetHRP(networkID),
		AvaxAssetID: avax,
		Bytes:       bytes,
		Config:      cfg,
		P:           p,
		Upgrades:    upgrade.GetConfig(networkID),
	}, nil
}

// ID is the P-chain genesis ID (the parent ID of P block 0).
func (g *Genesis) ID() ids.ID { return hashing256(g.Bytes) }

// Chain returns the genesis CreateChainTx of the chain running vmID
// (constants.AVMID for X, constants.EVMID for C). Its ID is the blockchain ID.
func (g *Genesis) Chain(vmID ids.ID) (*txs.Tx, *txs.CreateChainTx, error) {
	tx, err := avagenesis.VMGenesis(g.Bytes, vmID)
	if err != nil {
		return nil, nil, fmt.Errorf("genesis: chain of vm %s: %w", vmID, err)
	}
	cc, ok := tx.Unsigned.(*txs.CreateChainTx)
	if !ok {
		return nil, nil, fmt.Errorf("genesis: chain of vm %s is a %T", vmID, tx.Unsigned)
	}
	return tx, cc, nil
}

// CChainAlloc is the C-chain genesis allocation: address -> balance in wei (hex or decimal string as given).
type CChainAlloc map[string]struct {
	Balance string `json:"balance"`
}

// CChain parses the C-chain genesis JSON: its alloc, chain id and timestamp.
func (g *Genesis) CChain() (*CChainGenesis, error) {
	var c CChainGenesis
	if err := json.Unmarshal([]byte(g.Config.CChainGenesis), &c); err != nil {
		return nil, fmt.Errorf("genesis: C-chain genesis JSON: %w", err)
	}
	return &c, nil
}

// CChainGenesis holds the parts of the C-chain genesis the indexer needs.
type CChainGenesis struct {
	Config struct {
		ChainID json.Number `json:"chainId"`
	} `json:"config"`
	Timestamp string      `json:"timestamp"`
	Alloc     CChainAlloc `json:"alloc"`
}

// ReadFileNetworkID reads only the networkID of a genesis file, so the CLI can
// check it against the node before loading.
func ReadFileNetworkID(path string) (uint32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("genesis: %w", err)
	}
	var v struct {
		NetworkID uint32 `json:"networkID"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return 0, fmt.Errorf("genesis: %s: %w", path, err)
	}
	return v.NetworkID, nil
}
