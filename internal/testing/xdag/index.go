// Package xdag is test-only support for the X-chain's DAG before its
// linearization: a node's index API of DAG txs and vertices built with
// avalanchego's own vertex builder and X-chain tx constructors.
package xdag

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	avajson "github.com/ava-labs/avalanchego/utils/json"

	"github.com/ava-labs/avalanchego/indexer"
	"github.com/ava-labs/avalanchego/utils/formatting"
	"github.com/ava-labs/avalanchego/utils/hashing"
)

// Container is one accepted container: its bytes and acceptance time.
type Container struct {
	Bytes []byte
	Time  time.Time
}

// Index serves Txs on /ext/index/X/tx and Vertices on /ext/index/X/vtx as
// avalanchego's indexer does (indexer/service.go: JSON-RPC 2.0,
// index.getLastAccepted and index.getContainerRange, hex containers, its
// error messages); any other request goes to Next (a replayed node).
type Index struct {
	Txs, Vertices []Container
	Next          http.Handler
}

func (ix *Index) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var cs []Container
	switch r.URL.Path {
	case "/ext/index/X/tx":
		cs = ix.Txs
	case "/ext/index/X/vtx":
		cs = ix.Vertices
	default:
		ix.Next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// Gorilla's JSON-RPC codec takes the arguments as an object or as a
	// one-element array.
	params := bytes.TrimSpace(req.Params)
	if len(params) > 0 && params[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(params, &arr) == nil && len(arr) > 0 {
			params = arr[0]
		}
	}
	result, msg := answer(cs, req.Method, params)
	resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	if msg != "" {
		resp["error"] = map[string]any{"code": -32000, "message": msg, "data": nil}
	} else {
		resp["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// answer is the indexer's answer to one call, or its error message.
func answer(cs []Container, method string, params json.RawMessage) (any, string) {
	switch method {
	case "index.getLastAccepted":
		if len(cs) == 0 {
			return nil, "no containers have been accepted"
		}
		return format(cs, uint64(len(cs)-1)), ""
	case "index.getContainerRange":
		var a indexer.GetContainerRangeArgs
		if err := json.Unmarshal(params, &a); err != nil {
			return nil, err.Error()
		}
		n, start := uint64(a.NumToFetch), uint64(a.StartIndex)
		switch {
		case n == 0 || n > indexer.MaxFetchedByRange:
			return nil, fmt.Sprintf("numToFetch must be in [1,%d] but is %d", indexer.MaxFetchedByRange, n)
		case len(cs) == 0:
			return nil, "no containers have been accepted"
		case start >= uint64(len(cs)):
			return nil, fmt.Sprintf("start index (%d) > last accepted index (%d)", start, len(cs)-1)
		}
		out := indexer.GetContainerRangeResponse{}
		for i := start; i < min(start+n, uint64(len(cs))); i++ {
			out.Containers = append(out.Containers, format(cs, i))
		}
		return out, ""
	}
	return nil, fmt.Sprintf("method %q not found", method)
}

func format(cs []Container, i uint64) indexer.FormattedContainer {
	s, err := formatting.Encode(formatting.Hex, cs[i].Bytes)
	if err != nil {
		panic(err) // hex encoding of bytes cannot fail
	}
	return indexer.FormattedContainer{
		ID: hashing.ComputeHash256Array(cs[i].Bytes), Bytes: s, Timestamp: cs[i].Time,
		Encoding: formatting.Hex, Index: avajson.Uint64(i),
	}
}
