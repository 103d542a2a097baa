package source

import (
	"bytes"
	"context"
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
// each block's fields checked in a second.
func (e *EVM) Blocks(ctx context.Context, from, to uint64) ([]RawEVMBlock, error) {
	return e.DecodeBlocks(ctx, from, to, nil)
}

// DecodeBlocks is Blocks with each block's second pass made by dec, the
// chain's indexer: it parses the block for itself and hands the source the
// facts Blocks checks (EVMBlockFacts), so each block's JSON is read once
// after the split instead of twice (by the checks, then by the indexer).
// What dec made of a block is its Decoded. A block dec fails on is checked
// by the source's own scan and left undecoded (its indexer parses it again
// and reports the error). dec may be nil.
func (e *EVM) DecodeBlocks(ctx context.Context, from, to uint64, dec BlockDecoder) ([]RawEVMBlock, error) {
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
				return e.fetchRange(ctx, lo, hi, out[lo-from:hi-from+1], dec)
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
func (e *EVM) fetchRange(ctx context.Context, lo, hi uint64, dst []RawEVMBlock, dec BlockDecoder) error {
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
	var facts EVMBlockFacts // reused from height to height
	for i := 0; i < n; i++ {
		var traces []byte
		if traced {
			traces = results[per*i+2].result
		}
		b, err := parseRawBlock(lo+uint64(i), results[per*i].result, results[per*i+1].result, traces, dec, &facts)
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

// BlockDecoder parses a block's stored form for an indexer in the fetch
// (DecodeBlocks). It must be safe for concurrent use: the batches in flight
// decode their blocks at once.
type BlockDecoder interface {
	// DecodeBlock parses doc, a block's Bytes() (it stays valid and
	// unchanged for as long as the result is kept). It fails unless the
	// block has its number, hash, parentHash, timestamp and transactions
	// (each with its hash), and as many receipts as transactions; it
	// appends to facts' TxHashes and Receipts (given empty) what the block
	// and its receipts say, and returns what the indexer keeps.
	DecodeBlock(doc []byte, facts *EVMBlockFacts) (any, error)
}

// EVMBlockFacts is what Blocks checks of one height's answers: the block's
// header, its transactions' hashes, and what each receipt says it belongs
// to.
type EVMBlockFacts struct {
	Number, Timestamp uint64
	Hash, ParentHash  common.Hash
	TxHashes          []common.Hash
	Receipts          []EVMReceiptFacts
}

// EVMReceiptFacts is what a receipt says it belongs to; Complete is false
// when it lacks transactionHash, blockHash or blockNumber.
type EVMReceiptFacts struct {
	TxHash, BlockHash common.Hash
	BlockNumber       uint64
	Complete          bool
}

// parseRawBlock checks one height's block, receipts and traces (nil: none;
// all already validated JSON) and keeps a copy of them verbatim, in
// Bytes()'s form; dec (when not nil) decodes the copy, which gives the facts
// checked. f is scratch space.
func parseRawBlock(h uint64, block, receipts, traces []byte, dec BlockDecoder, f *EVMBlockFacts) (RawEVMBlock, error) {
	if len(block) == 0 || bytes.Equal(block, null) {
		return RawEVMBlock{}, fmt.Errorf("%w: block %d: %w", ErrInconsistent, h, ErrNotFound)
	}
	if len(receipts) == 0 || bytes.Equal(receipts, null) {
		return RawEVMBlock{}, fmt.Errorf("%w: receipts of block %d: %w", ErrInconsistent, h, ErrNotFound)
	}
	b := storedBlock(h, block, receipts, traces)
	if dec != nil {
		f.reset()
		// Its error is the indexer's to report, when Apply parses the
		// block again; the scan below says whether the source keeps it.
		if d, err := dec.DecodeBlock(b.doc, f); err == nil {
			b.Decoded = d
		}
	}
	if b.Decoded == nil {
		f.reset()
		if err := scanFacts(h, b.Block, b.Receipts, f); err != nil {
			return RawEVMBlock{}, err
		}
	}
	if err := f.check(h); err != nil {
		return RawEVMBlock{}, err
	}
	if traces != nil {
		// A scan of their own: the decoder's facts leave the traces out
		// (the EVM parse reads them, but not their errors).
		if err := checkTraces(h, traces, f.TxHashes); err != nil {
			return RawEVMBlock{}, err
		}
	}
	b.Hash, b.ParentHash = f.Hash.Hex(), f.ParentHash.Hex()
	b.Timestamp, b.TxCount = int64(f.Timestamp), len(f.TxHashes)
	return b, nil
}

// reset empties f, keeping its slices' memory.
func (f *EVMBlockFacts) reset() {
	*f = EVMBlockFacts{TxHashes: f.TxHashes[:0], Receipts: f.Receipts[:0]}
}

// check is what a height's block and receipts must be for Blocks to keep
// them.
func (f *EVMBlockFacts) check(h uint64) error {
	if f.Number != h {
		return fmt.Errorf("%w: asked block %d, got block %d", ErrInconsistent, h, f.Number)
	}
	if f.Timestamp > math.MaxInt64 {
		return fmt.Errorf("%w: block %d: timestamp %d", ErrMalformed, h, f.Timestamp)
	}
	for i, r := range f.Receipts {
		if !r.Complete {
			return fmt.Errorf("%w: receipts of block %d: receipt %d lacks transactionHash, blockHash or blockNumber", ErrMalformed, h, i)
		}
		if i >= len(f.TxHashes) {
			break // counted below
		}
		if r.BlockHash != f.Hash || r.BlockNumber != h || r.TxHash != f.TxHashes[i] {
			return fmt.Errorf("%w: block %d (%s): receipt %d is of tx %s in block %d (%s)",
				ErrInconsistent, h, f.Hash.Hex(), i, r.TxHash.Hex(), r.BlockNumber, r.BlockHash.Hex())
		}
	}
	if len(f.Receipts) != len(f.TxHashes) {
		return fmt.Errorf("%w: block %d has %d txs but %d receipts", ErrInconsistent, h, len(f.TxHashes), len(f.Receipts))
	}
	return nil
}

// scanFacts reads f from a height's block and receipts when no decoder did
// (or one failed): the fields checked, every other value validated and
// skipped.
func scanFacts(h uint64, block, receipts []byte, f *EVMBlockFacts) error {
	var seen struct{ number, hash, parent, timestamp, txs bool }
	s := jsonscan.New(block)
	err := s.Object(func(key []byte) error {
		var err error
		switch string(key) {
		case "number":
			seen.number = true
			f.Number, err = quantity(s, "number")
		case "hash":
			seen.hash = true
			f.Hash, err = hashValue(s, "hash")
		case "parentHash":
			seen.parent = true
			f.ParentHash, err = hashValue(s, "parentHash")
		case "timestamp":
			seen.timestamp = true
			f.Timestamp, err = quantity(s, "timestamp")
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
				f.TxHashes = append(f.TxHashes, th)
				return err
			})
		default:
			err = s.Skip()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: block %d: %w", ErrMalformed, h, err)
	}
	if !seen.number || !seen.hash || !seen.parent || !seen.timestamp || !seen.txs {
		return fmt.Errorf("%w: block %d: missing number, hash, parentHash, timestamp or transactions", ErrMalformed, h)
	}
	s = jsonscan.New(receipts)
	err = s.Array(func(i int) error {
		var (
			r       EVMReceiptFacts
			seenAll [3]bool
		)
		err := s.Object(func(key []byte) error {
			var err error
			switch string(key) {
			case "transactionHash":
				seenAll[0] = true
				r.TxHash, err = hashValue(s, "transactionHash")
			case "blockHash":
				seenAll[1] = true
				r.BlockHash, err = hashValue(s, "blockHash")
			case "blockNumber":
				seenAll[2] = true
				r.BlockNumber, err = quantity(s, "blockNumber")
			default:
				err = s.Skip()
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("receipt %d: %w", i, err)
		}
		r.Complete = seenAll == [3]bool{true, true, true}
		f.Receipts = append(f.Receipts, r)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: receipts of block %d: %w", ErrMalformed, h, err)
	}
	return nil
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
