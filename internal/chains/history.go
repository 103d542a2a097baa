package chains

import (
	"context"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/permafrost-dev/permafrost/internal/decode/xchain"
	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/source"
)

// XHistoryNotice says, for a network whose X-chain was a DAG before the
// Cortina linearization (mainnet and Fuji: their upgrade schedule names the
// stop vertex), that the transactions of that era are not indexed: they are
// in vertices, not in the blocks the X source reads, so X-chain UTXOs,
// balances and history of addresses with older outputs are incomplete until
// the DAG is read from the node's index (xchain.DAG). "" for networks linear
// from genesis (the stop vertex is empty).
func XHistoryNotice(g *genesis.Genesis) string {
	stop := g.Upgrades.CortinaXChainStopVertexID
	if stop == ids.Empty {
		return ""
	}
	return "X-chain history before the Cortina linearization (the DAG up to stop vertex " + stop.String() +
		") is not indexed: X-chain UTXOs, balances and transactions older than " +
		g.Upgrades.CortinaTime.UTC().Format("2006-01-02") + " are missing; it needs a node bootstrapped with --index-enabled" +
		" (docs/operations.md, mainnet and Fuji)"
}

// dagIndex is the node's index of the X-chain's DAG, as xchain.DAGIndex.
type dagIndex struct {
	node *source.Avalanche
}

// dagChains names the DAG indexes as the source's index calls do.
var dagChains = map[string]string{xchain.KindTx: source.XDAGTxs, xchain.KindVertex: source.XVertices}

func (d dagIndex) Last(ctx context.Context, kind string) (uint64, error) {
	c, err := d.node.IndexLastAccepted(ctx, dagChains[kind])
	if err != nil {
		return 0, indexError(err)
	}
	return c.Index, nil
}

func (d dagIndex) Range(ctx context.Context, kind string, start uint64, n int) ([]xchain.DAGContainer, error) {
	cs, err := d.node.IndexContainers(ctx, dagChains[kind], start, n)
	if err != nil {
		return nil, indexError(err)
	}
	out := make([]xchain.DAGContainer, len(cs))
	for i, c := range cs {
		out[i] = xchain.DAGContainer{Position: c.Index, ID: c.ID, Time: c.Timestamp, Bytes: c.Bytes}
	}
	return out, nil
}

// NodeDAGIndex is node's index of the X-chain's DAG (for tests that build
// the X-chain's pipeline themselves).
func NodeDAGIndex(node *source.Avalanche) xchain.DAGIndex { return dagIndex{node: node} }
