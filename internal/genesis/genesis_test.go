package genesis

import (
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"

	"github.com/permafrost-dev/permafrost/internal/devnet"
)

func TestDevnetGenesisMatchesRecording(t *testing.T) {
	g, err := Load(88888, devnet.Path(t, "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	net := devnet.LoadNetwork(t)
	if g.AvaxAssetID.String() != net.AvaxAssetID {
		t.Errorf("avax asset = %s, want %s", g.AvaxAssetID, net.AvaxAssetID)
	}
	for key, vm := range map[string]ids.ID{"X": constants.AVMID, "C": constants.EVMID} {
		tx, _, err := g.Chain(vm)
		if err != nil {
			t.Fatal(err)
		}
		if tx.ID().String() != net.BlockchainIDs[key] {
			t.Errorf("%s chain id = %s, want %s", key, tx.ID(), net.BlockchainIDs[key])
		}
	}
	c, err := g.CChain()
	if err != nil || c.Config.ChainID.String() != "88888" || len(c.Alloc) == 0 {
		t.Fatalf("C genesis: %+v %v", c, err)
	}
	if len(g.P.Validators) != 2 {
		t.Errorf("genesis validators = %d, want 2", len(g.P.Validators))
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(12345, ""); err == nil {
		t.Error("unknown network without file: want error")
	}
	if _, err := Load(1, devnet.Path(t, "genesis.json")); err == nil {
		t.Error("network id mismatch: want error")
	}
	if _, err := Load(constants.MainnetID, ""); err != nil {
		t.Errorf("mainnet built in: %v", err)
	}
}
