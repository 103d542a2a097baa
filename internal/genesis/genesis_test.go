package genesis

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join("..", "..", "testdata", "devnet-a", name)
}

func TestDevnetGenesisMatchesRecording(t *testing.T) {
	g, err := Load(88888, fixture(t, "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	var net struct {
		AvaxAssetID   string            `json:"avaxAssetID"`
		BlockchainIDs map[string]string `json:"blockchainIDs"`
	}
	b, _ := os.ReadFile(fixture(t, "network.json"))
	if err := json.Unmarshal(b, &net); err != nil {
		t.Fatal(err)
	}
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
	if _, err := Load(1, fixture(t, "genesis.json")); err == nil {
		t.Error("network id mismatch: want error")
	}
	if _, err := Load(constants.MainnetID, ""); err != nil {
		t.Errorf("mainnet built in: %v", err)
	}
}
