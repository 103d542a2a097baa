package chains

import (
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/utils/constants"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/genesis"
)

// TestXHistoryNotice: mainnet and Fuji had an X-chain DAG before Cortina
// (avalanchego's schedule names their stop vertices), so status must say its
// history is missing; a network linear from genesis (devnet-a) has nothing
// missing.
func TestXHistoryNotice(t *testing.T) {
	for _, tc := range []struct {
		name      string
		networkID uint32
		path      string
		want      string // "" : no notice
	}{
		{"mainnet", constants.MainnetID, "", "jrGWDh5Po9FMj54depyunNixpia5PN4aAYxfmNzU8n752Rjga) is not indexed: X-chain UTXOs, balances and transactions older than 2023-04-25"},
		{"fuji", constants.FujiID, "", "2D1cmbiG36BqQMRyHt4kFhWarmatA1ighSpND3FeFgz3vFVtCZ) is not indexed"},
		{"devnet-a", devnet.LoadNetwork(t).NetworkID, devnet.Path(t, "genesis.json"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := genesis.Load(tc.networkID, tc.path)
			if err != nil {
				t.Fatal(err)
			}
			got := XHistoryNotice(g)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("notice = %q, want one containing %q", got, tc.want)
			}
		})
	}
}
