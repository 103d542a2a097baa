package xdag_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/engine/avalanche/vertex"
	"github.com/ava-labs/avalanchego/utils/hashing"

	"github.com/permafrost-dev/permafrost/internal/decode/xchain"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// memIndex is a DAG index answering from memory (what a node would say,
// hostile or not).
type memIndex map[string][]xchain.DAGContainer

func (m memIndex) Last(_ context.Context, kind string) (uint64, error) {
	if len(m[kind]) == 0 {
		return 0, ingest.ErrIndexEmpty
	}
	return uint64(len(m[kind]) - 1), nil
}

func (m memIndex) Range(_ context.Context, kind string, start uint64, n int) ([]xchain.DAGContainer, error) {
	return m[kind][start:min(start+uint64(n), uint64(len(m[kind])))], nil
}

func container(pos uint64, b []byte) xchain.DAGContainer {
	return xchain.DAGContainer{Position: pos, ID: hashing.ComputeHash256Array(b), Time: 1, Bytes: b}
}

// TestDAGHostile: what a node's DAG index may answer wrongly. A tx that
// does not decode is kept as an UNKNOWN tx (as in blocks); a container whose
// bytes are not its id, a vertex that does not parse or belongs to another
// chain stops the history with an error naming it, and nothing of that
// batch is stored.
func TestDAGHostile(t *testing.T) {
	g, d, _ := network(t)
	garbage := []byte("not an X-chain tx")
	other, err := vertex.Build(ids.GenerateTestID(), 0, nil, [][]byte{d.Txs[0].Bytes()})
	if err != nil {
		t.Fatal(err)
	}
	renamed := container(0, d.Vertices[0].Bytes())
	renamed.ID = ids.GenerateTestID()
	for _, tc := range []struct {
		name    string
		index   memIndex
		wantErr string // "" : ingested
		unknown string // a tx id stored as UNKNOWN
	}{
		{"undecodable tx", memIndex{xchain.KindTx: {container(0, d.Txs[0].Bytes()), container(1, garbage)}},
			"", ids.ID(hashing.ComputeHash256Array(garbage)).String()},
		{"id not the bytes' hash", memIndex{xchain.KindVertex: {renamed}}, "bytes hash to", ""},
		{"vertex that does not parse", memIndex{xchain.KindVertex: {container(0, garbage)}}, "DAG vertex 0", ""},
		{"vertex of another chain", memIndex{xchain.KindVertex: {container(0, other.Bytes())}}, "not the X-chain", ""},
	} {
		for _, backend := range storetest.Backends {
			t.Run(tc.name+"/"+backend, func(t *testing.T) {
				db := storetest.Open(t, storetest.DSNFor(t, backend))
				log := slog.New(slog.NewTextHandler(io.Discard, nil))
				ix, err := xchain.NewIndexer(g, log)
				if err != nil {
					t.Fatal(err)
				}
				dag := xchain.NewDAG(ix, tc.index, "missing", log)
				err = dag.Ingest(context.Background(), db)
				if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
					t.Fatalf("ingest: %v, want %q", err, tc.wantErr)
				}
				var stored int
				if err := db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM x_dag_containers`).Scan(&stored); err != nil {
					t.Fatal(err)
				}
				if tc.wantErr != "" && stored != 0 {
					t.Errorf("%d containers stored from a failed batch", stored)
				}
				if tc.unknown != "" {
					var typ string
					if err := db.QueryRowContext(context.Background(), `SELECT tx_type FROM px_txs WHERE tx_id = $1`, tc.unknown).Scan(&typ); err != nil || typ != xchain.TypeUnknown {
						t.Errorf("undecodable tx: type %q (%v), want %s", typ, err, xchain.TypeUnknown)
					}
				}
				if n := dag.Notice(); n != "missing" {
					t.Errorf("notice = %q: the stop vertex was never indexed", n)
				}
			})
		}
	}
}
