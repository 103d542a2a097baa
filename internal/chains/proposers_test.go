package chains_test

import (
	"bytes"
	"context"
	"crypto"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/indexer"
	"github.com/ava-labs/avalanchego/staking"
	"github.com/ava-labs/avalanchego/utils/formatting"
	"github.com/ava-labs/avalanchego/utils/hashing"
	avajson "github.com/ava-labs/avalanchego/utils/json"
	"github.com/ava-labs/avalanchego/vms/proposervm/block"

	"github.com/permafrost-dev/permafrost/internal/api/platform"
	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/replay"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// blockIndex is a node's index API (/ext/index/{chain}/block) over a list of
// accepted containers, in avalanchego's JSON-RPC shapes.
type blockIndex struct{ containers [][]byte }

func (x blockIndex) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	formatted := func(i int) indexer.FormattedContainer {
		s, _ := formatting.Encode(formatting.Hex, x.containers[i])
		// The node's ID of a container: a proposervm block's own (which
		// leaves out a signature), else the pre-fork block's hash.
		id := ids.ID(hashing.ComputeHash256Array(x.containers[i]))
		if b, err := block.ParseWithoutVerification(x.containers[i]); err == nil {
			id = b.ID()
		}
		return indexer.FormattedContainer{ID: id, Bytes: s,
			Timestamp: time.Unix(1_700_000_000+int64(i), 0).UTC(), Encoding: formatting.Hex, Index: avajson.Uint64(i)}
	}
	var result any
	switch req.Method {
	case "index.getLastAccepted":
		result = formatted(len(x.containers) - 1)
	case "index.getContainerRange":
		var args indexer.GetContainerRangeArgs
		if err := json.Unmarshal(req.Params, &args); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if int(args.StartIndex) >= len(x.containers) {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"start index %d > last accepted index","data":null},"id":%s}`, args.StartIndex, req.ID)
			return
		}
		var out indexer.GetContainerRangeResponse
		for i := int(args.StartIndex); i < len(x.containers) && i < int(args.StartIndex+args.NumToFetch); i++ {
			out.Containers = append(out.Containers, formatted(i))
		}
		result = out
	default:
		fmt.Fprintf(w, `{"jsonrpc":"2.0","error":{"code":-32601,"message":"method not found"},"id":%s}`, req.ID)
		return
	}
	res, _ := json.Marshal(result)
	fmt.Fprintf(w, `{"jsonrpc":"2.0","result":%s,"id":%s}`, res, req.ID)
}

type wantProposer struct {
	id, parent, node string
	pHeight, time    int64
}

// wrapAll wraps blocks (inner bytes by height, 1..n) as a node's index holds
// them: heights below forkAt unwrapped (accepted before the proposervm),
// option blocks (isOption) as options, the rest signed by the proposer.
func wrapAll(t *testing.T, inner map[uint64][]byte, forkAt uint64, isOption func(h uint64) bool) ([][]byte, map[uint64]wantProposer) {
	tlsCert, err := staking.NewTLSCert()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := staking.ParseCertificate(tlsCert.Leaf.Raw)
	if err != nil {
		t.Fatal(err)
	}
	var (
		containers [][]byte
		want       = map[uint64]wantProposer{}
		parent     ids.ID
	)
	for h := uint64(1); h <= uint64(len(inner)); h++ {
		raw, ok := inner[h]
		if !ok {
			t.Fatalf("no block at height %d", h)
		}
		var b block.Block
		switch {
		case h < forkAt:
			containers = append(containers, raw)
			parent = ids.ID(hashing.ComputeHash256Array(raw))
			continue
		case isOption(h):
			b, err = block.BuildOption(parent, raw)
			want[h] = wantProposer{id: "", parent: parent.String()}
		default:
			at := time.Unix(1_750_000_000+int64(h), 0)
			b, err = block.Build(parent, at, h-1, block.Epoch{}, cert, raw, ids.GenerateTestID(), tlsCert.PrivateKey.(crypto.Signer))
			want[h] = wantProposer{parent: parent.String(), node: ids.NodeIDFromCert(cert).String(), pHeight: int64(h - 1), time: at.Unix()}
		}
		if err != nil {
			t.Fatal(err)
		}
		w := want[h]
		w.id = b.ID().String()
		want[h] = w
		containers = append(containers, b.Bytes())
		parent = b.ID()
	}
	return containers, want
}

// With the node's block index, P and X blocks are indexed with the
// proposervm wrapper's details; blocks accepted before the proposervm (no
// wrapper) and option blocks are indexed too.
func TestProposerDetailsFromBlockIndex(t *testing.T) {
	rec, err := replay.Load(devnet.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	pInner := map[uint64][]byte{}
	pOption := map[uint64]bool{}
	for h, b := range devnet.PBlocks(t, devnet.LoadRPC(t, devnet.P)) {
		if h > 0 {
			pInner[h] = b.Bytes()
			switch fmt.Sprintf("%T", b) {
			case "*block.BanffCommitBlock", "*block.BanffAbortBlock", "*block.ApricotCommitBlock", "*block.ApricotAbortBlock":
				pOption[h] = true
			}
		}
	}
	xInner := map[uint64][]byte{}
	for _, b := range devnet.XBlocks(t) {
		if b.Height > 0 {
			xInner[b.Height] = b.Bytes
		}
	}
	pContainers, pWant := wrapAll(t, pInner, 3, func(h uint64) bool { return pOption[h] })
	xContainers, xWant := wrapAll(t, xInner, 1, func(uint64) bool { return false })
	if len(pOption) == 0 {
		t.Fatal("no option blocks in the recording")
	}

	mux := http.NewServeMux()
	mux.Handle("/ext/index/P/block", blockIndex{pContainers})
	mux.Handle("/ext/index/X/block", blockIndex{xContainers})
	mux.Handle("/", replay.NewHandler(rec))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l) //nolint:errcheck // closed below
	defer srv.Close()

	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		set, err := chains.Build(ctx, chains.Options{NodeURL: "http://" + l.Addr().String(),
			GenesisPath: filepath.Join(devnet.Dir(t), "genesis.json"), Log: log, BatchSize: 7})
		if err != nil {
			t.Fatal(err)
		}
		var px []ingest.Chain
		for _, c := range set.Chains {
			if c.Key == "P" || c.Key == "X" {
				px = append(px, c)
			}
		}
		if err := ingest.New(db, px, ingest.Options{UntilTip: true}, log).Run(ctx); err != nil {
			t.Fatal(err)
		}
		// platform.getBlockByHeight still answers the inner block, not the
		// stored wrapper.
		rpc, err := platform.New(platform.Deps{DB: db, Genesis: set.Genesis, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range []uint64{1, 5, 20} {
			req := httptest.NewRequest(http.MethodPost, "/ext/bc/P", strings.NewReader(fmt.Sprintf(
				`{"jsonrpc":"2.0","id":1,"method":"platform.getBlockByHeight","params":{"height":"%d","encoding":"hex"}}`, h)))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			rpc.ServeHTTP(rec, req)
			var res struct {
				Result struct{ Block string } `json:"result"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
				t.Fatalf("height %d: %v: %s", h, err, rec.Body)
			}
			got, err := formatting.Decode(formatting.Hex, res.Result.Block)
			if err != nil || !bytes.Equal(got, pInner[h]) {
				t.Errorf("platform.getBlockByHeight(%d) is not the inner block (%v): %.200s", h, err, rec.Body)
			}
		}

		for chain, want := range map[string]map[uint64]wantProposer{"P": pWant, "X": xWant} {
			rows, err := db.QueryContext(ctx, `SELECT height, proposer_id, proposer_parent_id, proposer_node_id, proposer_p_height,
				proposer_timestamp FROM px_blocks WHERE chain_key = $1 ORDER BY height`, chain)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var (
					h   uint64
					got wantProposer
				)
				if err := rows.Scan(&h, &got.id, &got.parent, &got.node, &got.pHeight, &got.time); err != nil {
					t.Fatal(err)
				}
				if got != want[h] { // heights without a wrapper want the zero value
					t.Errorf("%s block %d: proposer %+v, want %+v", chain, h, got, want[h])
				}
				n++
			}
			rows.Close()
			if n != len(want)+1+boolInt(chain == "P")*2 { // genesis, and P's two blocks before the fork
				t.Errorf("%s: %d blocks, %d wrapped", chain, n, len(want))
			}
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
