package chains

import (
	"github.com/ava-labs/avalanchego/ids"

	"github.com/permafrost-dev/permafrost/internal/genesis"
)

// XHistoryNotice says, for a network whose X-chain was a DAG before the
// Cortina linearization (mainnet and Fuji: their upgrade schedule names the
// stop vertex), that the transactions of that era are not indexed: they are
// in vertices, not in the blocks the X source reads, so X-chain UTXOs,
// balances and history of addresses with older outputs are incomplete. ""
// for networks linear from genesis (the stop vertex is empty).
func XHistoryNotice(g *genesis.Genesis) string {
	stop := g.Upgrades.CortinaXChainStopVertexID
	if stop == ids.Empty {
		return ""
	}
	return "X-chain history before the Cortina linearization (the DAG up to stop vertex " + stop.String() +
		") is not indexed: X-chain UTXOs, balances and transactions older than " +
		g.Upgrades.CortinaTime.UTC().Format("2006-01-02") + " are missing (docs/operations.md, mainnet and Fuji)"
}
