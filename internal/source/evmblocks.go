package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"

	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/jsonscan"
)

// maxBatchResponse bounds one batch answer held in memory (500 heights of
// blocks and receipts stay well below it).
const maxBatchResponse = 1 << 30

// maxPooledAnswer bounds the answer buffers kept for reuse.
const maxPooledAnswer = 64 << 20

// Blocks fetches heights from..to (inclusive) with eth_getBlockByNumber(n,
// true) and eth_getBlockReceipts(n), in batches of BatchSize heights with up
// to Concurrency batches in flight. Each block must have the asked number and
// as many receipts as transactions, all naming the block; otherwise the batch
// is retried. A height above the tip fails (IsNotFound is true), after
// retries when the node answers null rather than an error.
//
// Unlike Call and BatchCall this path does not go through libevm's rpc
// client: that client decodes an answer with encoding/json into one
// json.RawMessage per call, which Blocks then decoded again for its checks —
// four passes over every block, 39% of the ingest process's CPU in the
// ingestion benchmark (docs/benchmarks.md). Here the batch answer is read
// once into one buffer, validated and split with jsonscan in one pass, and
// each block's fields checked in a second; the raw blocks alias that buffer.
func (e *EVM) Blocks(ctx context.Context, from, to uint64) ([]RawEVMBlock, error) {
	if to < from {
		return nil, fmt.Errorf("source: blocks %d..%d: empty range", from, to)
	}
	if to-from >= MaxBlocksRange {
		return nil, fmt.Errorf("source: blocks %d..%d: more than %d heights", from, to, MaxBlocksRange)
	}
	out := make([]RawEVMBlock, to-from+1)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	sem := make(chan struct{}, e.concurrency)
	step := e.batchSize
	if e.traces.want() {
		step = min(step, maxTracedBatch)
	}
	for lo := from; ; {
		hi := to
		if to-lo >= uint64(step) {
			hi = lo + uint64(step) - 1
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(lo, hi uint64) {
			defer wg.Done()
			defer func() { <-sem }()
			err := e.retry.Do(ctx, fmt.Sprintf("eth_getBlockByNumber+eth_getBlockReceipts(%d..%d)", lo, hi), func(ctx context.Context) error {
				return e.fetchRange(ctx, lo, hi, out[lo-from:hi-from+1])
			})
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
					cancel()
				}
				mu.Unlock()
			}
		}(lo, hi)
		if hi == to {
			break
		}
		lo = hi + 1
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("source: blocks %d..%d: %w", from, to, err)
	}
	return out, nil
}

// fetchRange is one attempt at heights lo..hi into dst: per height the
// block, its receipts and, unless tracing is off, its call traces.
func (e *EVM) fetchRange(ctx context.Context, lo, hi uint64, dst []RawEVMBlock) error {
	n := int(hi - lo + 1)
	per := 2
	traced := e.traces.want()
	if traced {
		per = 3
	}
	req := make([]byte, 0, n*per*80)
	req = append(req, '[')
	for i := 0; i < n; i++ {
		h := strconv.AppendUint([]byte(`"0x`), lo+uint64(i), 16)
		if i > 0 {
			req = append(req, ',')
		}
		req = fmt.Appendf(req, `{"jsonrpc":"2.0","id":%d,"method":"eth_getBlockByNumber","params":[%s",true]},`, per*i, h)
		req = fmt.Appendf(req, `{"jsonrpc":"2.0","id":%d,"method":"eth_getBlockReceipts","params":[%s"]}`, per*i+1, h)
		if traced {
			req = fmt.Appendf(req, `,{"jsonrpc":"2.0","id":%d,"method":"debug_traceBlockByNumber","params":[%s",%s]}`, per*i+2, h, traceRequest)
		}
	}
	req = append(req, ']')
	body, err := e.post(ctx, req)
	if err != nil {
		return err
	}
	defer e.putAnswer(body) // the blocks kept are copies
	results, err := splitBatch(body, per*n)
	if err != nil {
		return err
	}
	for i, r := range results {
		if r.err == nil {
			continue
		}
		h := lo + uint64(i/per)
		switch i % per {
		case 0:
			return fmt.Errorf("eth_getBlockByNumber(%d): %w", h, r.err)
		case 1:
			return fmt.Errorf("eth_getBlockReceipts(%d): %w", h, r.err)
		}
		switch {
		case IsMethodMissing(r.err):
			e.tracesMissing(r.err)
			traced = false
		case h == 0:
			// "genesis is not traceable": it has no transactions.
			results[i] = batchResult{result: []byte("[]"), seen: true}
		default:
			return fmt.Errorf("debug_traceBlockByNumber(%d): %w", h, r.err)
		}
	}
	for i := 0; i < n; i++ {
		var traces []byte
		if traced {
			traces = results[per*i+2].result
		}
		b, err := parseRawBlock(lo+uint64(i), results[per*i].result, results[per*i+1].result, traces)
		if err != nil {
			return err
		}
		dst[i] = b
	}
	if traced {
		e.traces.state.CompareAndSwap(tracesUnknown, tracesOn)
	}
	return nil
}

// post sends one JSON-RPC request body and returns the whole answer, in a
// buffer of the answer pool (see putAnswer).
func (e *EVM) post(ctx context.Context, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, Permanent(fmt.Errorf("source: request to %s: %w", e.url, err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := e.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		start, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, &HTTPError{StatusCode: resp.StatusCode, Body: string(start)}
	}
	var buf []byte
	select {
	case buf = <-e.answers:
	default:
	}
	if n := resp.ContentLength; n > 0 && n <= maxBatchResponse && int(n) > cap(buf) {
		buf = make([]byte, 0, n+1)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) > maxBatchResponse {
				return nil, fmt.Errorf("%w: answer larger than %d bytes", ErrMalformed, maxBatchResponse)
			}
			buf = append(buf, 0)[:len(buf)] // grows by append's factor
		}
		n, err := resp.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read answer: %w", err)
		}
	}
}

// putAnswer returns an answer's buffer for reuse. Answers come chunked,
// without a length: a fresh buffer per batch, grown by doubling, cleared and
// faulted in new pages several times per batch (15% of the ingest process's
// CPU), and sync.Pool drops its buffers at every collection.
func (e *EVM) putAnswer(b []byte) {
	if cap(b) > maxPooledAnswer {
		return
	}
	select {
	case e.answers <- b:
	default:
	}
}

// batchResult is one call's answer in a batch: its raw result or its error.
type batchResult struct {
	result []byte
	err    *RPCError
	seen   bool
}

// splitBatch validates a batch answer to calls with ids 0..n-1 and returns
// each call's answer by id (the answer may list them in any order). A
// missing, duplicated or unknown id, or an answer that is not a JSON array
// of JSON-RPC responses, is ErrMalformed (retried).
func splitBatch(body []byte, n int) ([]batchResult, error) {
	out := make([]batchResult, n)
	s := jsonscan.New(body)
	if c, err := s.Peek(); err != nil {
		return nil, fmt.Errorf("%w: batch answer: %w", ErrMalformed, err)
	} else if c != '[' {
		// A node refusing the whole batch answers one error object.
		var one batchResult
		if _, err := one.parseWithID(s); err == nil && one.err != nil {
			return nil, fmt.Errorf("%w: batch refused: %w", ErrMalformed, one.err)
		}
		return nil, fmt.Errorf("%w: batch answer is not an array", ErrMalformed)
	}
	err := s.Array(func(int) error {
		var r batchResult
		id, err := r.parseWithID(s)
		if err != nil {
			return err
		}
		if id < 0 || id >= n || out[id].seen {
			return fmt.Errorf("unexpected or repeated id %d", id)
		}
		r.seen = true
		out[id] = r
		return nil
	})
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: batch answer: %w", ErrMalformed, err)
	}
	for i := range out {
		if !out[i].seen {
			return nil, fmt.Errorf("%w: batch answer lacks call %d of %d", ErrMalformed, i, n)
		}
	}
	return out, nil
}

// parseWithID reads one response object; its id must be a non-negative
// integer (ours are).
func (r *batchResult) parseWithID(s *jsonscan.Scanner) (int, error) {
	id := -1
	hasResult := false
	err := s.Object(func(key []byte) error {
		switch string(key) {
		case "id":
			num, err := s.Number()
			if err != nil {
				return fmt.Errorf("id: %w", err)
			}
			v, err := strconv.Atoi(string(num))
			if err != nil || v < 0 {
				return fmt.Errorf("id %s is not ours", num)
			}
			id = v
			return nil
		case "result":
			raw, err := s.Raw()
			r.result, hasResult = raw, true
			return err
		case "error":
			if s.Null() {
				return nil
			}
			e, err := parseRPCError(s)
			r.err = e
			return err
		}
		return s.Skip()
	})
	if err != nil {
		return id, err
	}
	if !hasResult && r.err == nil {
		return id, fmt.Errorf("response %d has neither result nor error", id)
	}
	return id, nil
}

// parseRPCError reads a JSON-RPC error object.
func parseRPCError(s *jsonscan.Scanner) (*RPCError, error) {
	e := &RPCError{}
	err := s.Object(func(key []byte) error {
		switch string(key) {
		case "code":
			num, err := s.Number()
			if err != nil {
				return fmt.Errorf("error code: %w", err)
			}
			if e.Code, err = strconv.Atoi(string(num)); err != nil {
				return fmt.Errorf("error code %s: %w", num, err)
			}
			return nil
		case "message":
			m, err := s.Str()
			e.Message = string(m)
			return err
		case "data":
			if s.Null() {
				return nil
			}
			raw, err := s.Raw()
			e.Data = bytes.Clone(raw)
			return err
		}
		return s.Skip()
	})
	return e, err
}

var null = []byte("null")

// parseRawBlock checks one height's block, receipts and traces (nil: none;
// all already validated JSON) and keeps a copy of them verbatim, in
// Bytes()'s form.
func parseRawBlock(h uint64, block, receipts, traces []byte) (RawEVMBlock, error) {
	if len(block) == 0 || bytes.Equal(block, null) {
		return RawEVMBlock{}, fmt.Errorf("%w: block %d: %w", ErrInconsistent, h, ErrNotFound)
	}
	if len(receipts) == 0 || bytes.Equal(receipts, null) {
		return RawEVMBlock{}, fmt.Errorf("%w: receipts of block %d: %w", ErrInconsistent, h, ErrNotFound)
	}
	var (
		number, timestamp uint64
		hash, parent      common.Hash
		txHashes          []common.Hash
		seen              struct{ number, hash, parent, timestamp, txs bool }
	)
	s := jsonscan.New(block)
	err := s.Object(func(key []byte) error {
		var err error
		switch string(key) {
		case "number":
			seen.number = true
			number, err = quantity(s, "number")
		case "hash":
			seen.hash = true
			hash, err = hashValue(s, "hash")
		case "parentHash":
			seen.parent = true
			parent, err = hashValue(s, "parentHash")
		case "timestamp":
			seen.timestamp = true
			timestamp, err = quantity(s, "timestamp")
		case "transactions":
			seen.txs = true
			err = s.Array(func(i int) error {
				var (
					th  common.Hash
					has bool
				)
				err := s.Object(func(key []byte) error {
					if string(key) != "hash" {
						return s.Skip()
					}
					has = true
					var err error
					th, err = hashValue(s, "hash")
					return err
				})
				if err == nil && !has {
					err = fmt.Errorf("transaction %d lacks its hash", i)
				}
				txHashes = append(txHashes, th)
				return err
			})
		default:
			err = s.Skip()
		}
		return err
	})
	if err != nil {
		return RawEVMBlock{}, fmt.Errorf("%w: block %d: %w", ErrMalformed, h, err)
	}
	if !seen.number || !seen.hash || !seen.parent || !seen.timestamp || !seen.txs {
		return RawEVMBlock{}, fmt.Errorf("%w: block %d: missing number, hash, parentHash, timestamp or transactions", ErrMalformed, h)
	}
	if number != h {
		return RawEVMBlock{}, fmt.Errorf("%w: asked block %d, got block %d", ErrInconsistent, h, number)
	}
	if timestamp > math.MaxInt64 {
		return RawEVMBlock{}, fmt.Errorf("%w: block %d: timestamp %d", ErrMalformed, h, timestamp)
	}
	s = jsonscan.New(receipts)
	count := 0
	err = s.Array(func(i int) error {
		count++
		var (
			th, bh  common.Hash
			bn      uint64
			seenAll [3]bool
		)
		err := s.Object(func(key []byte) error {
			var err error
			switch string(key) {
			case "transactionHash":
				seenAll[0] = true
				th, err = hashValue(s, "transactionHash")
			case "blockHash":
				seenAll[1] = true
				bh, err = hashValue(s, "blockHash")
			case "blockNumber":
				seenAll[2] = true
				bn, err = quantity(s, "blockNumber")
			default:
				err = s.Skip()
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("receipt %d: %w", i, err)
		}
		if seenAll != [3]bool{true, true, true} {
			return fmt.Errorf("receipt %d lacks transactionHash, blockHash or blockNumber", i)
		}
		if i >= len(txHashes) {
			return nil // counted, reported below
		}
		if bh != hash || bn != h || th != txHashes[i] {
			return fmt.Errorf("%w: block %d (%s): receipt %d is of tx %s in block %d (%s)",
				ErrInconsistent, h, hash.Hex(), i, th.Hex(), bn, bh.Hex())
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrInconsistent) {
			return RawEVMBlock{}, err
		}
		return RawEVMBlock{}, fmt.Errorf("%w: receipts of block %d: %w", ErrMalformed, h, err)
	}
	if count != len(txHashes) {
		return RawEVMBlock{}, fmt.Errorf("%w: block %d has %d txs but %d receipts", ErrInconsistent, h, len(txHashes), count)
	}
	if traces != nil {
		if err := checkTraces(h, traces, txHashes); err != nil {
			return RawEVMBlock{}, err
		}
	}
	doc := make([]byte, 0, len(block)+len(receipts)+len(traces)+36)
	doc = append(doc, `{"block":`...)
	doc = append(doc, block...)
	doc = append(doc, `,"receipts":`...)
	doc = append(doc, receipts...)
	bStart := len(`{"block":`)
	rStart := bStart + len(block) + len(`,"receipts":`)
	var tr json.RawMessage
	if traces != nil {
		doc = append(doc, `,"traces":`...)
		tStart := len(doc)
		doc = append(doc, traces...)
		tr = doc[tStart:len(doc):len(doc)]
	}
	doc = append(doc, '}')
	return RawEVMBlock{
		Traces:     tr,
		Height:     h,
		Hash:       hash.Hex(),
		ParentHash: parent.Hex(),
		Timestamp:  int64(timestamp),
		TxCount:    len(txHashes),
		Block:      doc[bStart : bStart+len(block) : bStart+len(block)],
		Receipts:   doc[rStart : rStart+len(receipts) : rStart+len(receipts)],
		doc:        doc,
	}, nil
}

// quantity reads a 0x-hex quantity string.
func quantity(s *jsonscan.Scanner, field string) (uint64, error) {
	v, err := s.Str()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	return jsonscan.Uint64(field, v)
}

// hashValue reads a 0x-hex 32-byte hash string.
func hashValue(s *jsonscan.Scanner, field string) (common.Hash, error) {
	v, err := s.Str()
	if err != nil {
		return common.Hash{}, fmt.Errorf("%s: %w", field, err)
	}
	return jsonscan.Hash(field, v)
}
