// Package evmsim is a local EVM JSON-RPC node that serves pre-built blocks
// (e.g. from the evm package's generator): eth_chainId, eth_blockNumber,
// eth_getBlockByNumber, eth_getBlockReceipts and, for blocks that carry
// "traces", debug_traceBlockByNumber (the callTracer answer stored with the
// block; a node without traced blocks has no such method), single or batched. The ingest
// benchmark fetches from it over loopback exactly as from a real node.
package evmsim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/ingest"
)

// Node serves the blocks it was given: heights first..first+len-1 (a node
// whose history below first is pruned, or was indexed before: the ingest
// benchmark's sustained mode).
type Node struct {
	chainID  uint64
	first    uint64
	blocks   []json.RawMessage
	receipts []json.RawMessage
	traces   []json.RawMessage
	traced   bool
}

// New splits raw blocks ({"block":..,"receipts":..}), consecutive heights
// from raw[0]'s, for serving.
func New(chainID uint64, raw []ingest.RawBlock) (*Node, error) {
	n := &Node{chainID: chainID}
	if len(raw) > 0 {
		n.first = raw[0].Height
	}
	for i, rb := range raw {
		if rb.Height != n.first+uint64(i) {
			return nil, fmt.Errorf("evmsim: block %d after %d: heights must be consecutive", rb.Height, n.first+uint64(i)-1)
		}
		var v struct {
			Block    json.RawMessage `json:"block"`
			Receipts json.RawMessage `json:"receipts"`
			Traces   json.RawMessage `json:"traces"`
		}
		if err := json.Unmarshal(rb.Bytes, &v); err != nil {
			return nil, fmt.Errorf("evmsim: block %d: %w", rb.Height, err)
		}
		n.blocks = append(n.blocks, v.Block)
		n.receipts = append(n.receipts, v.Receipts)
		n.traces = append(n.traces, v.Traces)
		n.traced = n.traced || v.Traces != nil
	}
	return n, nil
}

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params []any           `json:"params"`
}

func (n *Node) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// Answers are streamed: a batch answer is megabytes of stored JSON, and
	// building it in a growing buffer first cost this node more CPU (copies
	// and fresh pages) than the serving.
	body = bytes.TrimSpace(body)
	var reqs []request
	batch := len(body) > 0 && body[0] == '['
	if batch {
		err = json.Unmarshal(body, &reqs)
	} else {
		reqs = make([]request, 1)
		err = json.Unmarshal(body, &reqs[0])
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	out := bufio.NewWriterSize(w, 64<<10)
	if batch {
		out.WriteByte('[') //nolint:errcheck // a failed write fails the client's read
	}
	for i, req := range reqs {
		if i > 0 {
			out.WriteByte(',') //nolint:errcheck
		}
		n.answer(out, req)
	}
	if batch {
		out.WriteByte(']') //nolint:errcheck
	}
	out.Flush() //nolint:errcheck
}

func (n *Node) answer(out *bufio.Writer, req request) {
	fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,`, req.ID)
	height := func() (int, bool) {
		if len(req.Params) == 0 {
			return 0, false
		}
		s, _ := req.Params[0].(string)
		if s == "latest" {
			return len(n.blocks) - 1, true
		}
		h, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
		if err != nil || h < n.first || h-n.first >= uint64(len(n.blocks)) {
			return 0, false
		}
		return int(h - n.first), true
	}
	switch req.Method {
	case "eth_chainId":
		fmt.Fprintf(out, `"result":"0x%x"}`, n.chainID)
	case "eth_blockNumber":
		fmt.Fprintf(out, `"result":"0x%x"}`, n.first+uint64(len(n.blocks))-1)
	case "eth_getBlockByNumber":
		if h, ok := height(); ok {
			out.WriteString(`"result":`)
			out.Write(n.blocks[h])
			out.WriteByte('}')
		} else {
			out.WriteString(`"error":{"code":-32000,"message":"cannot query unfinalized data"}}`)
		}
	case "eth_getBlockReceipts":
		if h, ok := height(); ok {
			out.WriteString(`"result":`)
			out.Write(n.receipts[h])
			out.WriteByte('}')
		} else {
			out.WriteString(`"result":null}`)
		}
	case "debug_traceBlockByNumber":
		if !n.traced {
			fmt.Fprintf(out, `"error":{"code":-32601,"message":"the method %s does not exist/is not available"}}`, req.Method)
			break
		}
		h, ok := height()
		switch {
		case !ok:
			out.WriteString(`"error":{"code":-32000,"message":"block not found"}}`)
		case n.traces[h] == nil:
			out.WriteString(`"error":{"code":-32000,"message":"genesis is not traceable"}}`)
		default:
			out.WriteString(`"result":`)
			out.Write(n.traces[h])
			out.WriteByte('}')
		}
	default:
		fmt.Fprintf(out, `"error":{"code":-32601,"message":"the method %s does not exist/is not available"}}`, req.Method)
	}
}
