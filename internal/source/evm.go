package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"

	"github.com/ava-labs/libevm/common"
	"github.com/ava-labs/libevm/common/hexutil"
	"github.com/ava-labs/libevm/rpc"
)

const (
	defaultBatchSize   = 20
	maxBatchSize       = 500 // two calls per height; nodes cap batches at 1000 items
	defaultConcurrency = 4
	maxConcurrency     = 64
	// MaxBlocksRange bounds one Blocks call, which holds its whole range in
	// memory.
	MaxBlocksRange = 1 << 16
)

// EVMOptions tunes an EVM client.
type EVMOptions struct {
	Retry Retry
	// BatchSize is the number of heights per JSON-RPC batch (each height is
	// two calls); default 20, at most 500.
	BatchSize int
	// Concurrency is the number of batches in flight; default 4, at most 64.
	Concurrency int
	// HTTPClient sends the requests (default: a new http.Client).
	HTTPClient *http.Client
	// Traces says whether Blocks also fetches each height's call traces
	// (debug_traceBlockByNumber with the callTracer): TracesAuto (the
	// default) asks and stops asking once the node says it has no such
	// method; TracesOff never asks.
	Traces TraceMode
}

// TraceMode selects whether call traces are fetched with the blocks.
type TraceMode int

const (
	TracesAuto TraceMode = iota
	TracesOff
)

// EVM reads an EVM JSON-RPC endpoint (the C-chain at base+PathCRPC, or an
// L1's URL) with libevm's rpc client. Blocks are kept as the node's raw JSON:
// coreth and subnet-evm headers carry fields go-ethereum's types drop.
type EVM struct {
	url         string
	c           *rpc.Client
	hc          *http.Client // Blocks' batches, sent and decoded without libevm's client
	answers     chan []byte  // answer buffers for reuse (putAnswer)
	retry       Retry
	batchSize   int
	concurrency int
	traces      traceState
}

// ParallelHeights is how many heights one Blocks call fetches with every
// batch in flight: the chunk size that keeps the node busy.
func (e *EVM) ParallelHeights() int { return e.batchSize * e.concurrency }

// NewEVM returns a client for the http(s) JSON-RPC endpoint rawURL. It does
// not contact the endpoint.
func NewEVM(ctx context.Context, rawURL string, opts EVMOptions) (*EVM, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("source: EVM URL %q: %w", rawURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("source: EVM URL %q: want http(s)://host[:port]/path", rawURL)
	}
	switch {
	case opts.BatchSize == 0:
		opts.BatchSize = defaultBatchSize
	case opts.BatchSize < 0 || opts.BatchSize > maxBatchSize:
		return nil, fmt.Errorf("source: EVM batch size %d: want 1..%d", opts.BatchSize, maxBatchSize)
	}
	switch {
	case opts.Concurrency == 0:
		opts.Concurrency = defaultConcurrency
	case opts.Concurrency < 0 || opts.Concurrency > maxConcurrency:
		return nil, fmt.Errorf("source: EVM concurrency %d: want 1..%d", opts.Concurrency, maxConcurrency)
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	c, err := rpc.DialOptions(ctx, rawURL, rpc.WithHTTPClient(hc))
	if err != nil {
		return nil, fmt.Errorf("source: EVM client for %s: %w", rawURL, err)
	}
	e := &EVM{url: rawURL, c: c, hc: hc, answers: make(chan []byte, opts.Concurrency), retry: opts.Retry, batchSize: opts.BatchSize, concurrency: opts.Concurrency}
	if opts.Traces == TracesOff {
		e.traces.state.Store(tracesOff)
		e.traces.configured = true
	}
	return e, nil
}

// Close releases the client.
func (e *EVM) Close() { e.c.Close() }

// URL is the endpoint's URL.
func (e *EVM) URL() string { return e.url }

// Call sends one call and decodes its result into result (nil: discard;
// *json.RawMessage: raw bytes, "null" for a null result).
func (e *EVM) Call(ctx context.Context, method string, params []any, result any) error {
	return e.retry.Do(ctx, method, func(ctx context.Context) error {
		var raw json.RawMessage
		if err := fromLibevm(e.c.CallContext(ctx, &raw, method, params...)); err != nil {
			return err
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(raw, result); err != nil {
			return Permanent(fmt.Errorf("decode result into %T: %w", result, err))
		}
		return nil
	})
}

// ChainID returns eth_chainId.
func (e *EVM) ChainID(ctx context.Context) (uint64, error) {
	var id hexutil.Big
	if err := e.Call(ctx, "eth_chainId", nil, &id); err != nil {
		return 0, err
	}
	b := id.ToInt()
	if b.Sign() < 0 || !b.IsUint64() {
		return 0, fmt.Errorf("eth_chainId: %w: %s does not fit uint64", ErrMalformed, b)
	}
	return b.Uint64(), nil
}

// BlockNumber returns eth_blockNumber.
func (e *EVM) BlockNumber(ctx context.Context) (uint64, error) {
	var n hexutil.Uint64
	if err := e.Call(ctx, "eth_blockNumber", nil, &n); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// BatchElem is one call of a BatchCall.
type BatchElem struct {
	Method string
	Params []any
	// Result receives the decoded result (nil: discard).
	Result any
	// Error is the call's own error: an *RPCError from the node, or a
	// failure to decode the result into Result.
	Error error
}

// BatchCall sends elems as one JSON-RPC batch. Transport failures and
// malformed answers (including a missing element) retry the whole batch;
// JSON-RPC errors of single calls are definitive and left in their Error.
// The returned error is only about the batch as a whole.
func (e *EVM) BatchCall(ctx context.Context, elems []BatchElem) error {
	if len(elems) == 0 {
		return nil
	}
	if len(elems) > 2*maxBatchSize {
		return fmt.Errorf("source: batch of %d calls: at most %d", len(elems), 2*maxBatchSize)
	}
	raws := make([]json.RawMessage, len(elems))
	errs := make([]error, len(elems))
	err := e.retry.Do(ctx, fmt.Sprintf("batch of %d (%s...)", len(elems), elems[0].Method), func(ctx context.Context) error {
		be := make([]rpc.BatchElem, len(elems))
		for i := range elems {
			raws[i] = nil
			be[i] = rpc.BatchElem{Method: elems[i].Method, Args: elems[i].Params, Result: &raws[i]}
		}
		if err := fromLibevm(e.c.BatchCallContext(ctx, be)); err != nil {
			return err
		}
		for i := range be {
			errs[i] = nil
			if be[i].Error == nil {
				continue
			}
			err := fromLibevm(be[i].Error)
			var re *RPCError
			if !errors.As(err, &re) {
				return fmt.Errorf("%w: %s: %w", ErrMalformed, elems[i].Method, err)
			}
			errs[i] = re
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range elems {
		elems[i].Error = errs[i]
		if errs[i] == nil && elems[i].Result != nil {
			if err := json.Unmarshal(raws[i], elems[i].Result); err != nil {
				elems[i].Error = fmt.Errorf("decode result into %T: %w", elems[i].Result, err)
			}
		}
	}
	return nil
}

// RawEVMBlock is one block as the node answered it.
type RawEVMBlock struct {
	Height     uint64
	Hash       string // 0x-lowercase
	ParentHash string // 0x-lowercase
	Timestamp  int64  // unix seconds
	TxCount    int
	// Block is the result of eth_getBlockByNumber(n, true), verbatim.
	Block json.RawMessage
	// Receipts is the result of eth_getBlockReceipts(n), verbatim.
	Receipts json.RawMessage
	// Traces is the result of debug_traceBlockByNumber(n, {tracer:
	// callTracer}) verbatim (one {txHash, result} per tx, in tx order), or
	// nil when the block was fetched without traces. The genesis block,
	// which nodes refuse to trace, has the empty list.
	Traces json.RawMessage
	// Decoded is what DecodeBlocks' decoder made of the block (nil: none,
	// or it failed on the block).
	Decoded any
	// doc is Bytes() when Block, Receipts and Traces are slices of it.
	doc []byte
}

// Bytes is the raw-block form the ingester stores:
// {"block":<Block>,"receipts":<Receipts>} and, with traces,
// {"block":...,"receipts":...,"traces":<Traces>}.
func (b *RawEVMBlock) Bytes() []byte {
	if b.doc != nil {
		return b.doc
	}
	return storedBlock(b.Height, b.Block, b.Receipts, b.Traces).doc
}

// storedBlock copies a height's block, receipts and traces (nil: none) into
// one document in Bytes()'s form, and returns the raw block whose Block,
// Receipts and Traces are slices of it.
func storedBlock(h uint64, block, receipts, traces []byte) RawEVMBlock {
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
		Height:   h,
		Block:    doc[bStart : bStart+len(block) : bStart+len(block)],
		Receipts: doc[rStart : rStart+len(receipts) : rStart+len(receipts)],
		Traces:   tr,
		doc:      doc,
	}
}

// Balance returns eth_getBalance(addr, block) in wei.
func (e *EVM) Balance(ctx context.Context, addr common.Address, block uint64) (*big.Int, error) {
	var v hexutil.Big
	if err := e.Call(ctx, "eth_getBalance", []any{addr, hexutil.EncodeUint64(block)}, &v); err != nil {
		return nil, err
	}
	return v.ToInt(), nil
}

// TokenBalance returns token's balanceOf(holder) at block (eth_call).
func (e *EVM) TokenBalance(ctx context.Context, token, holder common.Address, block uint64) (*big.Int, error) {
	data := make([]byte, 36)
	copy(data, []byte{0x70, 0xa0, 0x82, 0x31}) // balanceOf(address)
	copy(data[16:], holder[:])
	var out hexutil.Bytes
	call := map[string]any{"to": token, "data": hexutil.Bytes(data)}
	if err := e.Call(ctx, "eth_call", []any{call, hexutil.EncodeUint64(block)}, &out); err != nil {
		return nil, err
	}
	if len(out) != 32 {
		return nil, fmt.Errorf("balanceOf of %s at %s: %d bytes returned, want 32", holder.Hex(), token.Hex(), len(out))
	}
	return new(big.Int).SetBytes(out), nil
}

// fromLibevm maps libevm rpc errors to ours.
func fromLibevm(err error) error {
	if err == nil {
		return nil
	}
	var re rpc.Error
	if errors.As(err, &re) {
		out := &RPCError{Code: re.ErrorCode(), Message: re.Error()}
		var de rpc.DataError
		if errors.As(err, &de) && de.ErrorData() != nil {
			if b, mErr := json.Marshal(de.ErrorData()); mErr == nil {
				out.Data = b
			}
		}
		return out
	}
	var he rpc.HTTPError
	if errors.As(err, &he) {
		body := string(he.Body)
		if len(body) > 512 {
			body = body[:512]
		}
		return &HTTPError{StatusCode: he.StatusCode, Body: body}
	}
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	if errors.As(err, &syn) || errors.As(err, &typ) || errors.Is(err, rpc.ErrNoResult) ||
		errors.Is(err, rpc.ErrMissingBatchResponse) {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return err
}
